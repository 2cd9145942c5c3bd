//! A run's checks of itself on runs built to pass or fail them, and in compare.

use vload_analyze::selfcheck::run_checks;
use vload_schema::*;

use super::util::*;

fn check<'a>(checks: &'a [RunCheck], name: &str) -> Option<&'a RunCheck> {
    checks.iter().find(|c| c.name == name)
}

/// A steady run whose p50 is multiplied by `1 + growth * t / seconds` at second t.
fn drifting(label: &str, growth: f64, seed: u64) -> RunFile {
    let seconds = 30;
    let mut run = synthetic(label, seconds, 2_000, 1e6, seed);
    let steady = synthetic(label, 1, 2_000, 1e6, seed);
    for (t, interval) in run.intervals.iter_mut().enumerate() {
        let scale = 1.0 + growth * t as f64 / f64::from(seconds);
        let h = steady.intervals[0].latency.histogram.decode().unwrap();
        let mut scaled = new_histogram(&HistogramSettings::default());
        let mut m = Moments::new();
        for v in h.iter_recorded() {
            let value = (v.value_iterated_to() as f64 * scale) as u64;
            scaled.record_n(value, v.count_at_value()).unwrap();
            for _ in 0..v.count_at_value() {
                m.record(value);
            }
        }
        interval.latency = LatencyRecord {
            histogram: EncodedHistogram::encode(&scaled).unwrap(),
            moments: m,
        };
    }
    run
}

#[test]
fn a_climbing_p50_is_not_stationary_and_a_steady_one_is() {
    let checks = run_checks(&drifting("climbing", 0.5, 3)).unwrap();
    let p50 = check(&checks, "stationarity:p50").unwrap();
    assert_eq!(p50.verdict, CheckVerdict::Fail, "{}", p50.message);
    // Thirds of the window: means of 1.08x and 1.42x of the first p50: about +31%.
    let change = p50.statistic.unwrap();
    assert!((0.25..0.37).contains(&change), "change {change}");
    assert!(p50.message.contains("p50 rose"), "{}", p50.message);
    assert!(p50.message.contains("extend --warmup"), "{}", p50.message);
    // #48: p-values in one format everywhere ("slope p 3.9e-1" stood beside "p 0.23").
    let exponent = regex::Regex::new(r"p [0-9.]+e-?[0-9]").unwrap();
    for c in &checks {
        assert!(!exponent.is_match(&c.message), "{}", c.message);
    }
    assert!(
        p50.message.contains("slope p <0.001") || p50.message.contains("slope p 0."),
        "{}",
        p50.message
    );
    // The same drift on a machine other processes took: the machine is named, not the server.
    let mut busy = drifting("climbing", 0.5, 3);
    busy.client_health.verdict = HealthVerdict::MachineBusy;
    let checks = run_checks(&busy).unwrap();
    let p50 = check(&checks, "stationarity:p50").unwrap();
    assert_eq!(p50.verdict, CheckVerdict::Fail, "{}", p50.message);
    assert!(
        p50.message.contains("the machine was busy"),
        "{}",
        p50.message
    );
    assert!(!p50.message.contains("check the server"), "{}", p50.message);
    for seed in 1..=5 {
        let checks = run_checks(&drifting("steady", 0.0, seed)).unwrap();
        let p50 = check(&checks, "stationarity:p50").unwrap();
        assert_eq!(p50.verdict, CheckVerdict::Pass, "{}", p50.message);
    }
}

#[test]
fn an_error_rate_or_hit_ratio_that_moves_is_flagged() {
    let mut run = synthetic("errors", 30, 1_000, 1e6, 7);
    // No errors for 15 s, then 5% a second; the hit ratio climbs from 50% to 95%.
    for (t, interval) in run.intervals.iter_mut().enumerate() {
        let errors = if t < 15 { 0 } else { 50 + (t as u64 % 3) };
        if errors > 0 {
            interval.errors.insert(ErrorKind::Reset, errors);
        }
        interval.hits = 500 + 15 * t as u64 + (t as u64 % 4);
        interval.misses = interval.completed - interval.hits;
    }
    run.totals.errors.insert(
        ErrorKind::Reset,
        ErrorCount {
            count: 765,
            sample: "reset".into(),
        },
    );
    run.cache.hit = run.intervals.iter().map(|i| i.hits).sum();
    run.cache.miss = run.intervals.iter().map(|i| i.misses).sum();
    let checks = run_checks(&run).unwrap();
    let errors = check(&checks, "stationarity:errors").unwrap();
    assert_eq!(errors.verdict, CheckVerdict::Fail, "{}", errors.message);
    assert!(
        errors.message.contains("error rate rose from 0.00%"),
        "{}",
        errors.message
    );
    let hits = check(&checks, "stationarity:hit_ratio").unwrap();
    assert_eq!(hits.verdict, CheckVerdict::Fail, "{}", hits.message);
    assert!(
        hits.message.contains("cache still filling"),
        "{}",
        hits.message
    );

    // A steady hit ratio with noise, and no errors at all: no error check, a passing ratio.
    let mut steady = synthetic("steady", 30, 1_000, 1e6, 7);
    let mut rng = Rng(11);
    for interval in &mut steady.intervals {
        interval.hits = 900 + (rng.next() * 20.0) as u64;
        interval.misses = interval.completed - interval.hits;
    }
    steady.cache.hit = steady.intervals.iter().map(|i| i.hits).sum();
    steady.cache.miss = steady.intervals.iter().map(|i| i.misses).sum();
    let checks = run_checks(&steady).unwrap();
    assert!(check(&checks, "stationarity:errors").is_none());
    let hits = check(&checks, "stationarity:hit_ratio").unwrap();
    assert_eq!(hits.verdict, CheckVerdict::Pass, "{}", hits.message);
}

#[test]
fn until_stable_says_whether_it_converged_and_sets_the_convergence_target() {
    let mut run = synthetic("stable", 30, 2_000, 1e6, 5);
    run.until_stable = Some(UntilStable {
        target: 0.5,
        max_duration_s: 60.0,
        converged_after_s: Some(30.0),
        half_width: Some(0.031),
    });
    let checks = run_checks(&run).unwrap();
    let until = check(&checks, "until_stable").unwrap();
    assert_eq!(until.verdict, CheckVerdict::Pass);
    assert!(
        until
            .message
            .contains("converged, p99 ±3.1% (target ±50.0%) after 30 s of at most 60 s"),
        "{}",
        until.message
    );
    // Every convergence check judges by the target given: ±50% passes them all.
    for name in [
        "convergence:p50",
        "convergence:p99",
        "convergence:throughput",
    ] {
        assert_eq!(
            check(&checks, name).unwrap().verdict,
            CheckVerdict::Pass,
            "{name}"
        );
    }
    run.until_stable = Some(UntilStable {
        target: 0.01,
        max_duration_s: 30.0,
        converged_after_s: None,
        half_width: Some(0.08),
    });
    let checks = run_checks(&run).unwrap();
    let until = check(&checks, "until_stable").unwrap();
    assert_eq!(until.verdict, CheckVerdict::Fail);
    assert!(
        until
            .message
            .contains("did not converge in 30 s, p99 ±8.0% (target ±1.0%)"),
        "{}",
        until.message
    );
    // Cut short by Ctrl-C: not a failure to converge, an unknown.
    run.interrupted = true;
    let checks = run_checks(&run).unwrap();
    let until = check(&checks, "until_stable").unwrap();
    assert_eq!(until.verdict, CheckVerdict::Unknown, "{}", until.message);
    assert!(
        until.message.contains("interrupted after 30 s"),
        "{}",
        until.message
    );
}

#[test]
fn compare_flags_runs_that_failed_their_own_checks() {
    let climbing: Vec<RunFile> = (1..=3).map(|s| drifting("climbing", 0.5, s)).collect();
    let steady: Vec<RunFile> = (4..=6).map(|s| drifting("steady", 0.0, s)).collect();
    let comparison = vload_analyze::compare(("steady", &steady), ("climbing", &climbing)).unwrap();
    let flagged: Vec<&str> = comparison
        .checks
        .iter()
        .map(|c| c.message.as_str())
        .filter(|m| m.contains("steady state"))
        .collect();
    assert_eq!(flagged.len(), 1, "{:?}", comparison.checks);
    assert!(
        flagged[0].starts_with("B: 3 of 3 runs were not in a steady state: climbing-1 (p50 rose"),
        "{}",
        flagged[0]
    );
}

/// #58: an interval wider than the figure bounds nothing: "p50 641 µs ±410859.9%" read as a
/// figure. The check says "not converged" and why, with no ± at all.
#[test]
fn an_interval_wider_than_the_figure_is_named_not_given() {
    // Fifteen seconds around 100 µs, then fifteen around 100 ms: each batch's p50 is one
    // or the other, so the bootstrap interval spans both, far wider than the 100 µs p50.
    let mut run = synthetic("step", 30, 2_000, 1e5, 11);
    let slow = synthetic("step", 30, 2_000, 1e8, 12);
    for (t, interval) in run.intervals.iter_mut().enumerate().skip(15) {
        interval.latency = slow.intervals[t].latency.clone();
    }
    let checks = run_checks(&run).unwrap();
    let p50 = check(&checks, "convergence:p50").unwrap();
    assert_eq!(p50.verdict, CheckVerdict::Fail, "{}", p50.message);
    assert!(p50.statistic.unwrap() > 1.0, "{}", p50.message);
    let width = format!("±{:.1}%", p50.statistic.unwrap() * 100.0);
    assert!(
        p50.message.contains("not converged")
            && p50.message.contains("wider than the figure itself")
            && !p50.message.contains(&width),
        "{}",
        p50.message
    );
}

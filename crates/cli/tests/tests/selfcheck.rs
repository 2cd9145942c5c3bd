//! A run checks itself (#14), end to end: arrival fidelity, stationarity against an origin
//! that slows down, and `--until-stable`.

use std::time::Duration;

use vload_schema::{Cause, CheckVerdict, HealthVerdict, RunCheck};

use super::util::*;

fn check<'a>(run: &'a RunFile, name: &str) -> &'a RunCheck {
    run.checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check in {:?}", run.checks))
}

/// Poisson arrivals at 2,000/s for 5 s on one thread, the run file to `out`.
fn poisson_attack(out: &std::path::Path, url: &str) -> std::process::Command {
    let mut cmd = vload();
    cmd.args([
        "attack",
        "-r",
        "2000",
        "--arrival",
        "poisson",
        "-d",
        "5s",
        "-t",
        "1",
    ])
    .args(["--no-progress", "-o"])
    .arg(out)
    .arg(url);
    cmd
}

fn origin_with(config: impl FnOnce(&mut OriginConfig)) -> OriginHandle {
    let mut c = OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    };
    config(&mut c);
    spawn(c).unwrap()
}

/// Poisson at 2,000/s for 5 s: the achieved gaps pass the test against the planned
/// exponential (p > 0.01) in at least 2 of 3 seeds. (How often the check is wrong is
/// measured over many seeds by benches/verdicts/selfcheck.sh, not here.)
#[test]
fn poisson_arrivals_are_faithful_in_two_of_three_seeds() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("poisson-fit");
    let mut faithful = Vec::new();
    for seed in 1..=3 {
        let out = dir.path(&format!("run-{seed}.json"));
        run(
            poisson_attack(&out, &origin.url()).args(["--seed", &seed.to_string()]),
            0,
        );
        let run = read_run(&out);
        let arrivals = check(&run, "arrivals");
        let p = arrivals
            .p_value
            .unwrap_or_else(|| panic!("{}", arrivals.message));
        // On a busy machine a run may also fail for sends over 1 ms late, and its gaps may
        // not fit, rightly: other processes held vload's thread and it sent in bursts. Such
        // a run must then say so, naming the machine (or vload) from its client health; a
        // run on a quiet machine has no such excuse.
        let paused = run
            .client_health
            .signals
            .iter()
            .any(|s| matches!(s.cause, Cause::Machine | Cause::Client));
        if arrivals.verdict == CheckVerdict::Fail && paused {
            assert!(
                ["late", "paused vload", "fell behind"]
                    .iter()
                    .any(|why| arrivals.message.contains(why)),
                "{}",
                arrivals.message
            );
        }
        faithful.push((seed, p, p > 0.01 || paused));
    }
    let passed = faithful.iter().filter(|(_, _, ok)| *ok).count();
    assert!(
        passed >= 2,
        "gaps fit (or the machine was named) in {passed} of 3: {faithful:?}"
    );
}

/// The same run with the client frozen for a second: the due requests leave in a burst
/// (or never), and the run says its arrivals were not faithful.
#[test]
fn a_client_frozen_for_a_second_is_not_faithful() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("poisson-frozen");
    let out = dir.path("run.json");
    let (status, report) = run_frozen(
        &mut poisson_attack(&out, &origin.url()),
        Duration::from_millis(2000),
        Duration::from_millis(1000),
    );
    assert!(status.success(), "{status:?}");
    let run = read_run(&out);
    let arrivals = check(&run, "arrivals");
    assert_eq!(arrivals.verdict, CheckVerdict::Fail, "{}", arrivals.message);
    assert!(report.contains("arrivals not faithful"), "{report}");
}

/// An origin whose delay ramps from 1 ms to 20 ms over the run is flagged not stationary;
/// one with a constant delay is not, in at least 2 of 3 runs.
#[test]
fn a_slowing_origin_is_not_stationary_and_a_constant_one_is() {
    let _turn = serial();
    let dir = Scratch::new("stationarity");
    let attack = |url: &str, out: &std::path::Path| {
        run(
            vload()
                .args([
                    "attack",
                    "-c",
                    "10",
                    "-d",
                    "6s",
                    "-t",
                    "1",
                    "--no-progress",
                    "-o",
                ])
                .arg(out)
                .arg(url),
            0,
        )
    };
    let slowing = origin_with(|c| {
        c.delay = Some(Duration::from_millis(1));
        c.delay_ramp = Some(vload_origin::DelayRamp {
            to: Duration::from_millis(20),
            over: Duration::from_secs(6),
        });
    });
    let out = dir.path("slowing.json");
    let report = stdout(&attack(&slowing.url(), &out));
    let p50 = check(&read_run(&out), "stationarity:p50").clone();
    assert_eq!(p50.verdict, CheckVerdict::Fail, "{}", p50.message);
    assert!(report.contains("not stationary: p50 rose"), "{report}");
    drop(slowing);

    let constant = origin_with(|c| c.delay = Some(Duration::from_millis(2)));
    let mut flagged = Vec::new();
    // Three runs, one flag tolerated: the false-alarm rate itself is measured over many runs
    // by benches/verdicts/selfcheck.sh.
    for i in 0..3 {
        let out = dir.path(&format!("constant-{i}.json"));
        attack(&constant.url(), &out);
        let run = read_run(&out);
        // Counted by run, as the claim is: one run flagged on both p50 and throughput is one
        // (seen beside stress-ng at load 16: throughput +51% and p50 -18% in the same run).
        let messages: Vec<String> = ["stationarity:p50", "stationarity:throughput"]
            .iter()
            .map(|name| check(&run, name))
            .filter(|c| c.verdict == CheckVerdict::Fail)
            .map(|c| c.message.clone())
            .collect();
        // A busy machine moves a constant origin's figures too; such a flag must say the
        // machine, and it is not the check's false alarm (#48: beside stress-ng, 2 of 3).
        let busy = run.client_health.verdict == HealthVerdict::MachineBusy;
        if busy {
            for m in &messages {
                assert!(m.contains("the machine was busy"), "{m}");
            }
        } else if !messages.is_empty() {
            flagged.push(messages);
        }
    }
    assert!(flagged.len() <= 1, "a constant origin flagged: {flagged:?}");
}

/// `--until-stable 10 --max-duration 30s` stops before 30 s against a steady origin and
/// says so; against a stalling one, `--until-stable 5` runs the 30 s and says it did not
/// converge. (The steady case asks ±10%: beside stress-ng at load 14 a steady origin's p99
/// was still ±6.4% after 30 s, so ±5% there would be the machine's verdict, not vload's.)
#[test]
fn until_stable_stops_when_the_p99_has_converged_and_not_before() {
    let _turn = serial();
    let dir = Scratch::new("until-stable");
    // The two attacks run side by side (a few hundred requests a second each): the steady
    // one's ±10% holds beside stress-ng, and the stalling one's verdict is its stalls'.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // A stall of 1 s every 10 s: in 30 s, three stalled seconds hold the open loop's p99,
            // and whether a resample of the seconds has none, one or five of them moves it from 50
            // ms to most of a second. (Frequent stalls would not do: a stall every 4 s is a steady
            // pattern, and its p99 converges, rightly. Nor would a first stall after the tenth
            // second: nothing before it says one will come.) The stalls are counted from the
            // origin's start: 4 s before the attack's, they fall at its 5th, 15th and 25th seconds.
            let stalling = origin_with(|c| {
                c.delay = Some(Duration::from_millis(50));
                c.stall = Some(vload_origin::Stall {
                    every: Duration::from_secs(10),
                    length: Duration::from_secs(1),
                });
            });
            std::thread::sleep(Duration::from_secs(4));
            let out = dir.path("stalling.json");
            let o = run(
                vload()
                    .args(["attack", "-r", "500", "-t", "1", "--until-stable", "5"])
                    .args(["--max-duration", "30s", "--no-progress", "-o"])
                    .arg(&out)
                    .arg(stalling.url()),
                0,
            );
            let run_file = read_run(&out);
            let until = run_file.until_stable.unwrap();
            assert!(
                run_file.window.measured_s >= 29.9 && until.converged_after_s.is_none(),
                "{:?} {until:?}",
                run_file.window
            );
            assert_eq!(check(&run_file, "until_stable").verdict, CheckVerdict::Fail);
            assert!(
                stdout(&o).contains("until stable: did not converge in 30 s"),
                "{}",
                stdout(&o)
            );
        });
        let steady = origin_with(|c| c.delay = Some(Duration::from_millis(50)));
        let out = dir.path("steady.json");
        let o = run(
            vload()
                .args(["attack", "-c", "50", "-t", "1", "--until-stable", "10"])
                .args(["--max-duration", "30s", "--no-progress", "-o"])
                .arg(&out)
                .arg(steady.url()),
            0,
        );
        let run_file = read_run(&out);
        let until = run_file.until_stable.unwrap();
        assert!(
            run_file.window.measured_s < 29.0 && until.converged_after_s.is_some(),
            "{:?} {until:?}",
            run_file.window
        );
        assert!(!run_file.interrupted);
        assert!(until.half_width.is_some_and(|w| w <= 0.10), "{until:?}");
        assert_eq!(check(&run_file, "until_stable").verdict, CheckVerdict::Pass);
        assert!(
            stdout(&o).contains("until stable: converged, p99 ±"),
            "{}",
            stdout(&o)
        );
        drop(steady);
    });
}

#[test]
fn until_stable_refuses_what_it_cannot_do() {
    for (args, needle) in [
        (&["--until-stable", "5"][..], "--max-duration"),
        (
            &["--until-stable", "5", "--max-duration", "5s"],
            "at least 10s",
        ),
        (
            &["--until-stable", "0", "--max-duration", "30s"],
            "percentage",
        ),
        (
            &["--until-stable", "5", "--max-duration", "30s", "-d", "10s"],
            "--duration",
        ),
        (
            &[
                "--until-stable",
                "5",
                "--max-duration",
                "30s",
                "-r",
                "0->1k:30s",
            ],
            "rate plan",
        ),
    ] {
        let o = run(
            vload().arg("attack").args(args).arg("http://127.0.0.1:9/"),
            2,
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

use vload_analyze::compare::sweep::compare_sweeps;
use vload_analyze::sweep::{
    Search, assemble, judge, repeatable, step_record, step_starts, verdict,
};
use vload_schema::{RunFile, SloMetric, SloTerm, StageRecord, SweepRecord};

use super::util::*;

/// A sweep over `rates` against a server whose median latency is `base_ns` below
/// `capacity` and ten times that above it; 6 s steps (long enough to tell a steady one),
/// one after another.
fn sweep(label: &str, rates: &[u64], capacity: u64, base_ns: f64) -> RunFile {
    let slo = vec![SloTerm {
        metric: SloMetric::P99,
        limit: 50.0 * base_ns,
    }];
    let mut search = Search::new(rates.iter().map(|r| *r as f64).collect(), false, 0.0);
    let mut steps: Vec<(String, RunFile)> = Vec::new();
    let mut judged = Vec::new();
    while let Some(rate) = search.next() {
        let i = steps.len();
        let median = if (rate as u64) < capacity {
            base_ns
        } else {
            10.0 * base_ns
        };
        let mut run = synthetic(label, 6, rate as u64, median, i as u64 + 7);
        run.started_at = format!("2026-11-22T01:36:{:02}.000Z", 10 + 7 * i);
        let record = step_record(&run, i as u32, 0.0, &slo);
        let outcome = judge(&slo, &record, false, &run.plan).unwrap();
        search.record(rate, &outcome, true);
        steps.push((format!("step {i}"), run));
        judged.push((rate, record, outcome));
    }
    let answer = verdict(&search, &slo, &judged);
    let runs: Vec<RunFile> = steps.iter().map(|(_, r)| r.clone()).collect();
    let stages: Vec<StageRecord> = judged
        .into_iter()
        .zip(step_starts(&runs))
        .map(|((_, record, _), start_s)| StageRecord { start_s, ..record })
        .collect();
    let record = SweepRecord {
        rates_per_s: rates.iter().map(|r| *r as f64).collect(),
        stage_s: 6.0,
        warmup_s: 0.0,
        slo,
        find_max: false,
        verdict: answer,
    };
    assemble(&steps, stages, record).unwrap()
}

#[test]
fn a_sweep_file_holds_its_steps_and_answer_and_survives_a_round_trip() {
    let file = sweep("x86_64", &[1_000, 2_000, 3_000, 4_000], 2_500, 200_000.0);
    let s = file.sweep.as_ref().unwrap();
    assert_eq!(s.verdict.max_rate_per_s, Some(2_000.0));
    assert_eq!(s.verdict.first_failing_per_s, Some(3_000.0));
    assert_eq!(s.verdict.stopped_by, "slo");
    assert_eq!(file.stages.len(), 3, "the sweep stopped at the first miss");
    // Steps follow one another on the sweep's clock, intervals too.
    let starts: Vec<f64> = file.stages.iter().map(|s| s.start_s).collect();
    assert_eq!(starts, [0.0, 7.0, 14.0]);
    let interval_starts: Vec<f64> = file.intervals.iter().map(|i| i.start_s).collect();
    assert_eq!(interval_starts[..7], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0]);
    // Counts add up over the steps; the file is valid and round-trips.
    assert_eq!(file.totals.completed, 6 * (1_000 + 2_000 + 3_000));
    let text = file.to_json();
    let back = RunFile::from_json(&text).expect("valid");
    assert_eq!(back.to_json(), text);
}

#[test]
fn the_report_shows_each_step_and_the_answer() {
    let file = sweep("x86_64", &[1_000, 2_000, 3_000], 2_500, 200_000.0);
    let summary = vload_analyze::Summary::of(&file).unwrap();
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(text.contains("Steps"), "{text}");
    assert!(
        text.contains("capacity at the SLO (p99<10.00 ms): 2,000.0/s; 3,000.0/s missed it"),
        "{text}"
    );
    let rows = text
        .lines()
        .filter(|l| l.ends_with("met     ok") || l.ends_with("missed  ok"))
        .count();
    assert_eq!(rows, 3, "{text}");
    let json = vload_analyze::render::report::json::render(&summary);
    assert!(json.contains("\"stages\"") && json.contains("\"sweep\""));
    let markdown = vload_analyze::render::report::markdown::render(&summary);
    assert!(markdown.contains("capacity at the SLO"), "{markdown}");
}

/// The knee of a sweep: one point a rate at the rate asked (a retried rate keeps its last
/// try, so the line never zig-zags), each step marked by its outcome, the SLO as its own
/// line, and the capacity bracket shaded (#35).
#[test]
fn the_plot_draws_the_knee_with_the_slo_each_outcome_and_the_bracket() {
    let mut run = sweep("x86_64", &[1_000, 2_000, 3_000], 2_500, 200_000.0);
    // A retry of the 2,000/s step, run last and slower: its dot is drawn, the line goes
    // through it, not through both.
    let mut retry = run
        .stages
        .iter()
        .find(|s| s.to_rate_per_s == 2_000.0)
        .unwrap()
        .clone();
    retry.index = 99;
    retry.start_s += 100.0;
    run.stages.push(retry);
    let runs = vec![("x86_64".to_owned(), run)];
    let page = vload_analyze::render::plot::html(&runs).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("well-formed");
    let series: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    for name in ["x86_64 p50", "x86_64 SLO p99<10.00 ms"] {
        assert!(series.contains(&name), "{name}: {series:?}");
    }
    assert!(
        doc.descendants()
            .filter(|n| n.has_tag_name("h2"))
            .filter_map(|n| n.text())
            .any(|t| t.starts_with("Latency against the rate asked"))
    );
    // The p50 line: three points, left to right.
    let knee = doc
        .descendants()
        .find(|n| {
            n.attribute("data-series") == Some("x86_64 p50")
                && n.parent()
                    .and_then(|g| g.parent())
                    .and_then(|svg| svg.attribute("aria-label"))
                    .is_some_and(|t| t.starts_with("Latency against the rate asked"))
        })
        .expect("the knee's p50 line");
    let xs: Vec<f64> = knee
        .attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(xs.len(), 3, "{xs:?}");
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "no zig-zag: {xs:?}");
    // Every step marked by its outcome, the retry too.
    let marks: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("class"))
        .filter(|c| c.starts_with("mark "))
        .collect();
    assert_eq!(
        marks.iter().filter(|c| **c == "mark met").count(),
        3,
        "{marks:?}"
    );
    assert_eq!(
        marks.iter().filter(|c| **c == "mark missed").count(),
        1,
        "{marks:?}"
    );
    // The bracket: shaded, and named.
    let band = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("band"))
        .expect("the capacity bracket");
    let label = band.children().find(|c| c.has_tag_name("title")).unwrap();
    assert_eq!(label.text(), Some("capacity 2,000..3,000/s"));
    // No legend entry for a quantile with no points, and the SLO not dotted like p99.9.
    let slo = doc
        .descendants()
        .find(|n| n.attribute("data-series") == Some("x86_64 SLO p99<10.00 ms"))
        .unwrap();
    assert_ne!(slo.attribute("stroke-dasharray"), Some("1 3"));
}

#[test]
fn two_sweeps_that_part_name_the_higher_and_the_margin() {
    let a = sweep("x86_64", &[1_000, 2_000, 3_000, 4_000], 2_500, 200_000.0);
    let b = sweep(
        "aarch64",
        &[1_000, 2_000, 3_000, 4_000, 5_000],
        4_500,
        200_000.0,
    );
    let one = std::slice::from_ref;
    let c = compare_sweeps(("x86_64", one(&a)), ("aarch64", one(&b))).unwrap();
    assert_eq!(c.higher, Some('B'));
    let (least, most) = c.margin_pct.unwrap();
    // A in [2,000, 3,000), B in [4,000, 5,000): B holds 33% to 150% more.
    assert!(
        (least - 100.0 * (4_000.0 / 3_000.0 - 1.0)).abs() < 1e-6,
        "{least}"
    );
    assert!((most.unwrap() - 150.0).abs() < 1e-6);
    assert!(
        c.verdict
            .starts_with("aarch64 holds more at the SLO than x86_64"),
        "{}",
        c.verdict
    );
    let text = vload_analyze::render::sweeps::text(&c);
    assert!(text.contains("not run"), "B ran a step A did not:\n{text}");
    // The same sweep twice cannot be told apart.
    let same = compare_sweeps(("a", one(&a)), ("b", one(&a))).unwrap();
    assert_eq!(same.higher, None);
    assert!(same.verdict.starts_with("cannot tell apart"));
    // A run that is not a sweep is named.
    let run = synthetic("plain", 2, 100, 1e5, 1);
    let err = compare_sweeps(("a.json", one(&a)), ("run.json", one(&run))).unwrap_err();
    assert!(
        err.to_string()
            .contains("run.json's run plain-1 is not a sweep"),
        "{err}"
    );
}

#[test]
fn sweeps_with_different_objectives_are_flagged() {
    let a = sweep("x86_64", &[1_000, 2_000, 3_000], 2_500, 200_000.0);
    let mut b = a.clone();
    b.sweep.as_mut().unwrap().slo[0].limit *= 2.0;
    b.sweep.as_mut().unwrap().stage_s = 10.0;
    let c = compare_sweeps(
        ("a", std::slice::from_ref(&a)),
        ("b", std::slice::from_ref(&b)),
    )
    .unwrap();
    let warnings: Vec<&str> = c.checks.iter().map(|c| c.message.as_str()).collect();
    assert!(
        warnings.iter().any(|w| w.starts_with("the SLOs differ")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("steps differ in length")),
        "{warnings:?}"
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("planned different steps")),
        "{warnings:?}"
    );
    // The same objective over other steps: flagged too.
    let d = sweep("x86_64", &[1_000, 1_500, 2_000, 3_000], 2_500, 200_000.0);
    let c = compare_sweeps(
        ("a", std::slice::from_ref(&a)),
        ("d", std::slice::from_ref(&d)),
    )
    .unwrap();
    assert!(
        c.checks.iter().any(|c| c.message.starts_with(
            "the sweeps planned different steps (1,000.0/s, 2,000.0/s, 3,000.0/s and"
        )),
        "{:?}",
        c.checks
    );
}

#[test]
fn groups_of_sweeps_compare_capacity_with_the_method_their_sizes_allow() {
    let rates: Vec<u64> = (0..17).map(|i| 1_000 + 250 * i).collect();
    let group = |label: &str, capacities: [u64; 3]| -> Vec<RunFile> {
        capacities
            .iter()
            .map(|c| sweep(label, &rates, *c, 200_000.0))
            .collect()
    };
    let a = group("x86_64", [2_300, 2_600, 2_900]);
    let b = group("aarch64", [4_300, 4_600, 4_900]);
    let c = compare_sweeps(("x86_64", &a), ("aarch64", &b)).unwrap();
    assert_eq!(c.brackets_a.len(), 3);
    assert_eq!(c.capacity.a.median, Some(2_500.0));
    assert_eq!(c.capacity.b.median, Some(4_500.0));
    assert_eq!(c.capacity.method, vload_analyze::compare::Method::WelchLowN);
    assert_eq!(c.higher, Some('B'), "{}", c.verdict);
    assert!(c.verdict.contains("B better"), "{}", c.verdict);
    assert!(c.steps.is_empty(), "no side-by-side table for groups");
    // p99 compared at each rate every sweep ran.
    let common: Vec<f64> = c.p99_at.iter().map(|(r, _)| *r).collect();
    assert_eq!(common[0], 1_000.0);
    assert!(common.iter().all(|r| *r <= 2_500.0), "{common:?}");
    let text = vload_analyze::render::sweeps::text(&c);
    assert!(text.contains("capacity at SLO *"), "{text}");
    assert!(text.contains("p99 at 1,000.0/s"), "{text}");
}

/// See #30: a retry turned a real miss into "met". A miss is run again only when the step's
/// health shows the machine may have caused it, and the server kept pace.
#[test]
fn a_miss_is_run_again_only_with_evidence_of_the_machine() {
    let mut run = synthetic("x", 6, 1_000, 200_000.0, 3);
    let quiet = step_record(&run, 0, 0.0, &[]);
    assert!(
        !repeatable(1_000.0, &quiet),
        "no sign of the machine: the miss is the server's"
    );
    run.client_health.signals.push(vload_schema::HealthSignal {
        signal: "hiccups".into(),
        level: vload_schema::HealthVerdict::Ok,
        cause: vload_schema::Cause::Machine,
        message: "the machine paused".into(),
    });
    let kept_pace = step_record(&run, 0, 0.0, &[]);
    assert!(
        repeatable(1_000.0, &kept_pace),
        "throughput {}",
        kept_pace.throughput_per_s
    );
    // The same step asked for 2,000/s: it carried 1,000/s, far behind; not worth repeating.
    assert!(!repeatable(2_000.0, &kept_pace));
    // The search honours it: a miss that is not repeatable counts at once.
    let mut search = Search::new(vec![1_000.0, 2_000.0], false, 0.0).with_retries(2);
    search.record(
        1_000.0,
        &judge(&[], &kept_pace, false, &run.plan).unwrap(),
        true,
    );
    let missed = vload_analyze::sweep::StepOutcome::Missed(Vec::new());
    search.record(2_000.0, &missed, false);
    assert_eq!(search.next(), None);
    assert_eq!(search.first_failing(), Some(2_000.0));
}

/// See #30: a step meets a latency term only when its whole 95% within-run interval lies
/// below the limit: one lucky step (an M/M/1 queue's p99 from a few thousand correlated
/// responses) put a sweep's answer 9.5% above the analytic capacity.
#[test]
fn a_step_meets_a_quantile_only_with_its_interval_below_the_limit() {
    let run = synthetic("x", 8, 2_000, 200_000.0, 5);
    let slo = [SloTerm {
        metric: SloMetric::P99,
        limit: 1e12,
    }];
    let record = step_record(&run, 0, 0.0, &slo);
    let bound = record.upper_bounds[0];
    assert_eq!(bound.metric, SloMetric::P99);
    let p99 = vload_analyze::LatencySummary::of(&record.response)
        .unwrap()
        .quantile("p99")
        .unwrap() as f64;
    assert!(bound.upper_ns >= p99, "{bound:?} against {p99}");
    let judged = |limit: f64| {
        let slo = [SloTerm {
            metric: SloMetric::P99,
            limit,
        }];
        judge(&slo, &record, false, &run.plan).unwrap()
    };
    // Between the point estimate and the interval's top: not met.
    if bound.upper_ns > p99 * 1.0001 {
        let between = (p99 + bound.upper_ns) / 2.0;
        let outcome = judged(between);
        assert!(
            matches!(outcome, vload_analyze::sweep::StepOutcome::Missed(_)),
            "{outcome:?}"
        );
    }
    assert!(matches!(
        judged(bound.upper_ns * 1.01),
        vload_analyze::sweep::StepOutcome::Met(_)
    ));
}

/// See #30: a confirmation that overturns the answer after the bisections are spent reopens
/// the interval with bisections left for it, so the answer ends narrow. Seen under load:
/// the answer 400/s was overturned by its confirmation once the bisections were spent above
/// it, and the sweep stopped at 350..400/s.
#[test]
fn an_overturned_answer_is_bisected_again() {
    use vload_analyze::sweep::StepOutcome;
    let mut search = Search::new(vec![300.0, 500.0], true, 0.0).with_retries(1);
    // The server holds 402/s until 400/s is asked a second time (the confirmation); from
    // then on the machine is slower and it holds 380/s.
    let mut runs_of_400 = 0;
    let mut steps = 0;
    while let Some(rate) = search.next() {
        steps += 1;
        assert!(steps < 40, "the search ends");
        if rate == 400.0 {
            runs_of_400 += 1;
        }
        let truth = if runs_of_400 >= 2 { 380.0 } else { 402.0 };
        let outcome = if rate <= truth {
            StepOutcome::Met(Vec::new())
        } else {
            StepOutcome::Missed(Vec::new())
        };
        search.record(rate, &outcome, false);
    }
    assert_eq!(
        runs_of_400, 2,
        "400/s was the answer, and its confirmation missed"
    );
    let (max, fail) = (search.max_rate().unwrap(), search.first_failing().unwrap());
    assert!(max <= 380.0, "{max} .. {fail}");
    assert!(fail - max <= 0.1 * fail, "{max} .. {fail}");
}

/// #45: on a 2-core VM a step at 1,000/s stopped a sweep as MACHINE-BUSY (5.49% of sends
/// over 1 ms late, dispatch lag p99 4.1 ms, hiccup p99 3.1 ms) against `p99<30ms`. The
/// latency is measured from the intended send, so that lateness is in it already: a busy
/// machine stops a step only when it changed what was offered (requests never sent, or
/// sends late by a quarter of the SLO's bound or more); otherwise the SLO decides.
#[test]
fn a_busy_machine_stops_a_step_only_when_it_changed_the_offer() {
    use vload_analyze::sweep::StepOutcome;
    let mut run = synthetic("x", 8, 1_000, 200_000.0, 5);
    let h = &mut run.client_health;
    h.verdict = vload_schema::HealthVerdict::MachineBusy;
    h.late_sends = 440;
    h.dispatch_lag_p99_ns = Some(4_100_000);
    h.hiccup_p99_ns = Some(3_100_000);
    let slo = [SloTerm {
        metric: SloMetric::P99,
        limit: 30e6,
    }];
    let outcome = |run: &RunFile| {
        let record = step_record(run, 0, 0.0, &slo);
        judge(&slo, &record, false, &run.plan).unwrap()
    };
    assert!(
        matches!(outcome(&run), StepOutcome::Met(_)),
        "{:?}",
        outcome(&run)
    );
    // Sends 9 ms late against a 30 ms bound: bursts the SLO feels.
    run.client_health.dispatch_lag_p99_ns = Some(9_000_000);
    let late = outcome(&run);
    assert!(
        matches!(&late, StepOutcome::MachineBusy(why) if why.contains("a quarter or more")),
        "{late:?}"
    );
    // Requests never sent: the step offered less than its rate.
    run.client_health.dispatch_lag_p99_ns = Some(1_000_000);
    run.totals.unsent = run.totals.intended / 20;
    run.totals.sent = run.totals.intended - run.totals.unsent;
    let short = outcome(&run);
    assert!(
        matches!(&short, StepOutcome::MachineBusy(why) if why.contains("never sent")),
        "{short:?}"
    );
}

/// #48: a sweep of one rate drew its SLO and its p50 as lines of zero length: nothing.
#[test]
fn a_sweep_of_one_rate_draws_its_point_and_its_slo() {
    let runs = vec![("one".to_owned(), sweep("one", &[1_000], 2_500, 200_000.0))];
    let page = vload_analyze::render::plot::html(&runs).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("well-formed");
    let slo = doc
        .descendants()
        .find(|n| n.attribute("data-series") == Some("one SLO p99<10.00 ms"))
        .expect("the SLO line");
    let xs: Vec<f64> = slo
        .attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(xs.len() == 2 && xs[1] - xs[0] > 10.0, "{xs:?}");
    // The p50's one point is drawn as a dot (the hover ring is transparent).
    let line = doc
        .descendants()
        .find(|n| {
            n.attribute("data-series") == Some("one p50")
                && n.parent()
                    .and_then(|g| g.parent())
                    .and_then(|svg| svg.attribute("aria-label"))
                    .is_some_and(|t| t.starts_with("Latency against the rate asked"))
        })
        .expect("the knee's p50 line");
    let dots = line
        .next_siblings()
        .skip(1)
        .filter(|n| n.is_element())
        .take_while(|n| n.has_tag_name("circle"))
        .filter(|n| n.attribute("r") == Some("2.5"))
        .count();
    assert!(dots >= 1, "no dot for the one point of p50");
}

/// #58: a sweep stopped by the machine names no failing rate of the server. Seen at load 20:
/// a miss at 413/s, then a step the machine stopped; the file said `first_failing_per_s:
/// 413`, a server failure the machine caused.
#[test]
fn a_sweep_stopped_by_the_machine_names_no_failing_rate() {
    use vload_analyze::sweep::StepOutcome;
    let run = synthetic("x", 6, 1_000, 200_000.0, 3);
    let record = step_record(&run, 0, 0.0, &[]);
    let mut search = Search::new(vec![300.0, 500.0], true, 0.0);
    let mut steps = Vec::new();
    let outcomes = [
        StepOutcome::Met(Vec::new()),
        StepOutcome::Missed(Vec::new()),
        StepOutcome::Met(Vec::new()),
        StepOutcome::MachineBusy("requests due were never sent".into()),
    ];
    for outcome in outcomes {
        let rate = search.next().expect("a step to run");
        search.record(rate, &outcome, false);
        steps.push((rate, record.clone(), outcome));
    }
    assert_eq!(search.next(), None, "the machine stopped it");
    assert!(search.first_failing().is_some(), "the search saw a miss");
    let v = verdict(&search, &[], &steps);
    assert_eq!(v.stopped_by, "machine");
    assert_eq!(v.first_failing_per_s, None, "{v:?}");
    assert_eq!(v.max_rate_per_s, Some(400.0), "{v:?}");
    assert!(
        v.summary.contains("without a verdict on the server"),
        "{}",
        v.summary
    );
}

/// #58: the answer's confirmation is known before it runs, so the sweep can hold it longer
/// (`CONFIRM_HOLD` times its stage): exactly one step is it, at the answer, and none before
/// a miss.
#[test]
fn the_confirmation_is_named_before_it_runs() {
    use vload_analyze::sweep::StepOutcome;
    let mut search = Search::new(vec![300.0, 500.0], true, 0.0).with_retries(1);
    let mut confirmations = Vec::new();
    let mut steps = 0;
    while let Some(rate) = search.next() {
        steps += 1;
        assert!(steps < 40, "the search ends");
        if search.confirming() {
            confirmations.push((rate, search.max_rate()));
        }
        let outcome = if rate <= 402.0 {
            StepOutcome::Met(Vec::new())
        } else {
            StepOutcome::Missed(Vec::new())
        };
        search.record(rate, &outcome, false);
    }
    let answer = search.max_rate().unwrap();
    assert_eq!(confirmations, [(answer, Some(answer))]);
    const { assert!(vload_analyze::sweep::CONFIRM_HOLD >= 2) };
}

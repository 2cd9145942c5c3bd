use std::time::Duration;

use vload_analyze::sweep::{StepOutcome, judge};

use super::util::*;

/// A server of known capacity: `slots` requests at once, `delay` each.
fn bounded_origin(slots: usize, delay_ms: u64) -> OriginHandle {
    spawn(OriginConfig {
        threads: Some(1),
        concurrency: Some(slots),
        delay: Some(Duration::from_millis(delay_ms)),
        ..OriginConfig::loopback()
    })
    .unwrap()
}

/// On a machine loaded by other processes a step's load is not applied as planned, and the
/// sweep rightly stops by "machine" without a verdict on the server. What is then certain:
/// it claims no capacity above the truth, no failing rate, and says why. Returns true when
/// the sweep stopped so (the caller's server-side assertions cannot apply).
#[allow(clippy::print_stderr, reason = "an inconclusive test says why")]
fn stopped_by_the_machine(v: &vload_schema::SweepVerdict, truth: f64) -> bool {
    if v.stopped_by != "machine" {
        return false;
    }
    assert!(v.max_rate_per_s.is_none_or(|m| m <= truth), "{v:?}");
    assert_eq!(v.first_failing_per_s, None, "{v:?}");
    assert!(
        v.summary.contains("the machine was busy") && v.summary.contains("without a verdict"),
        "{}",
        v.summary
    );
    eprintln!(
        "the machine was busy: no verdict on the server to check ({})",
        v.summary
    );
    true
}

#[test]
fn find_max_never_lands_above_a_known_capacity() {
    // 4 requests at a time, 10 ms each: 400/s.
    let origin = bounded_origin(4, 10);
    let dir = Scratch::new("sweep-capacity");
    let file = dir.path("sweep.json");
    let _turn = serial();
    let out = run(
        vload()
            .args([
                "sweep",
                &origin.url(),
                "--rates",
                "300,500",
                "--stage",
                "5s",
            ])
            .args([
                "--warmup",
                "1s",
                "--slo",
                "p90<40ms,errors<1%",
                "--find-max",
            ])
            .args(["-t", "1", "--no-progress", "-o"])
            .arg(&file),
        0,
    );
    let sweep_file = read_run(&file);
    let sweep = sweep_file.sweep.as_ref().expect("a sweep record");
    let v = &sweep.verdict;
    if stopped_by_the_machine(v, 400.0) {
        return;
    }
    assert_eq!(v.stopped_by, "slo", "{v:?}\n{}", stderr(&out));
    let max = v.max_rate_per_s.expect("a rate met the SLO");
    // See #30: never above the truth (the slots run on a virtual clock: exactly 400/s). How
    // close below it depends on the machine: the origin's one thread shares it, and a loaded
    // machine slows it (344/s beside stress-ng; within 360-400/s quiet). Accuracy on a quiet machine
    // is measured by benches/verdicts/sweep.sh, not here.
    assert!(
        (200.0..=400.0).contains(&max),
        "capacity 400/s, found {max}: {}",
        v.summary
    );
    // The step just above it missed the SLO, judged again from the file.
    let fail = v.first_failing_per_s.expect("a rate missed the SLO");
    assert!(
        fail > max && fail - max <= 0.1 * fail,
        "{max} .. {fail}: {}\n{}",
        v.summary,
        stderr(&out)
    );
    // The last step at that rate decided it: a confirmation that overturned an answer runs a
    // rate that first met the SLO again (seen on a busy machine: the first run's "Met").
    let failing = sweep_file
        .stages
        .iter()
        .rev()
        .find(|s| s.from_rate_per_s == fail)
        .expect("the failing step is recorded");
    let outcome = judge(&sweep.slo, failing, false, &sweep_file.plan).unwrap();
    assert!(
        matches!(outcome, StepOutcome::Missed(_) | StepOutcome::Unsteady(..)),
        "{outcome:?}"
    );
    // Each step is a stage with its own health; the report says the answer.
    assert!(sweep_file.stages.iter().all(|s| s.client_health.is_some()));
    assert!(sweep_file.stages.len() >= 3, "bisection ran");
    let report = stdout(&out);
    assert!(report.contains("capacity at the SLO"), "{report}");
    assert!(report.contains("missed"), "{report}");
}

#[test]
fn a_client_bound_sweep_says_the_client_was_the_limit() {
    let origin = origin();
    let dir = Scratch::new("sweep-client");
    let file = dir.path("sweep.json");
    let _turn = serial();
    let out = run(
        vload()
            .args([
                "sweep",
                &origin.url(),
                "--rates",
                "1k,300k",
                "--stage",
                "1s",
            ])
            .args(["--warmup", "0s", "--slo", "p90<1s", "-t", "1"])
            // A 300,000/s step's queue drains for --timeout after the step: 2 s, not 30.
            .args([
                "--timeout",
                "2s",
                "--max-connections",
                "100",
                "--no-progress",
                "-o",
            ])
            .arg(&file),
        0,
    );
    let v = read_run(&file).sweep.unwrap().verdict;
    // vload's thread saturated, starved on a loaded machine, or its 100 connections all
    // busy: whichever the step's health proves, the load was not applied, and the sweep
    // says so instead of a verdict on the server.
    let word = match v.stopped_by.as_str() {
        "client" => "client-bound",
        "machine" => "machine-busy",
        "connection_cap" => "connection-capped",
        other => panic!("stopped by {other}: {v:?}"),
    };
    assert_eq!(v.first_failing_per_s, None, "no verdict on the server");
    // On a loaded machine the first step may already say so.
    assert!(
        (v.summary.contains("at 300,000.0/s") || word == "machine-busy")
            && v.summary.contains("without a verdict"),
        "{}",
        v.summary
    );
    assert!(stdout(&out).contains(word), "{}", stdout(&out));
}

#[test]
fn an_interrupted_sweep_still_writes_its_file() {
    let origin = origin();
    let dir = Scratch::new("sweep-interrupt");
    let file = dir.path("sweep.json");
    let _turn = serial();
    let child = vload()
        .args([
            "sweep",
            &origin.url(),
            "--rates",
            "1k,2k,3k",
            "--stage",
            "5s",
        ])
        .args(["--warmup", "0s", "--slo", "p90<1s", "--no-progress", "-o"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // In the second step: the first is 5 s long.
    std::thread::sleep(Duration::from_millis(7_500));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let swept = read_run(&file);
    assert!(swept.interrupted);
    let v = swept.sweep.unwrap().verdict;
    assert_eq!(v.stopped_by, "interrupted", "{v:?}");
    assert_eq!(swept.stages.len(), 2);
    // The first step met its loose SLO, unless a loaded machine kept its load from being
    // applied (then it is no verdict, and no rate is claimed).
    let first = &swept.stages[0];
    let machine = first
        .client_health
        .as_ref()
        .is_some_and(|h| h.verdict == vload_schema::HealthVerdict::MachineBusy);
    if machine {
        // Judged by the SLO only when the machine's lateness left the offer as planned.
        assert!(matches!(v.max_rate_per_s, None | Some(1_000.0)), "{v:?}");
    } else {
        assert_eq!(v.max_rate_per_s, Some(1_000.0), "{v:?}");
    }
}

#[test]
fn bad_sweeps_are_refused_in_one_line() {
    for (args, says) in [
        (
            vec!["--rates", "5k..1k/1k", "--slo", "p99<1ms"],
            "runs downwards",
        ),
        (vec!["--rates", "1k", "--slo", "p99>1ms"], "write p99<1ms"),
        (
            vec!["--rates", "1k", "--slo", "p99<1ms", "--hlog", "x.hlog"],
            "drop it",
        ),
        (
            vec!["--rates", "10,20", "--slo", "p99.9<1ms", "--stage", "5s"],
            "p99.9 needs 10000 responses a step",
        ),
        (
            vec!["--rates", "1k", "--slo", "p99<1ms", "--stage", "0s"],
            "--stage",
        ),
    ] {
        let out = run(vload().arg("sweep").args(&args), 2);
        let err = stderr(&out);
        // One line naming the input (clap adds a pointer to --help after its own).
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(says), "{args:?}: {err}");
        assert!(
            err.lines().filter(|l| l.contains("error")).count() == 1,
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
}

#[test]
fn compare_of_two_sweeps_names_the_server_that_holds_more() {
    // 400/s against 800/s.
    let (small, large) = (bounded_origin(4, 10), bounded_origin(8, 10));
    let dir = Scratch::new("sweep-compare");
    let _turn = serial();
    // The two sweeps run side by side (under 1,000 requests a second each): a side the
    // machine held back says so, and gets no decisive comparison (below).
    std::thread::scope(|scope| {
        for (name, origin) in [("small", &small), ("large", &large)] {
            let dir = &dir;
            scope.spawn(move || {
                run(
                    vload()
                        .args(["sweep", &origin.url(), "--rates", "300,500,700,900"])
                        .args(["--stage", "5s", "--warmup", "1s", "--slo", "p90<40ms"])
                        .args(["-t", "1", "--no-progress", "--label", name, "-o"])
                        .arg(dir.path(&format!("{name}.json"))),
                    0,
                );
            });
        }
    });
    let (a, b) = (dir.path("small.json"), dir.path("large.json"));
    let out = run(vload().arg("compare").arg(&a).arg(&b), 0);
    let text = stdout(&out);
    let truths = [(&a, 400.0), (&b, 800.0)];
    let busy = truths
        .iter()
        .filter(|(file, truth)| {
            stopped_by_the_machine(&read_run(file).sweep.unwrap().verdict, *truth)
        })
        .count();
    if busy > 0 {
        // A side stopped by a busy machine has no verdict on its server, only the bound it
        // met: the comparison is decisive only when that bound decides it (large at least
        // 700/s against small below 500/s), says so, and is never the wrong way round.
        assert!(!text.contains("small holds more at the SLO than"), "{text}");
        if text.contains("holds more at the SLO than") {
            assert!(
                text.contains("large holds more at the SLO than small")
                    && text.contains("stopped on a busy machine"),
                "{text}"
            );
        }
        return;
    }
    assert!(text.contains("vload compare (sweeps)"), "{text}");
    assert!(
        text.contains("large holds more at the SLO than small"),
        "{text}"
    );
    assert!(text.contains("B [700.0/s, 900.0/s)"), "{text}");
    // B regressed against A by more than 5%: exit 1; the other way round, no regression.
    run(
        vload()
            .args(["compare", "--fail-if-regressed", "5"])
            .arg(&b)
            .arg(&a),
        1,
    );
    run(
        vload()
            .args(["compare", "--fail-if-regressed", "5"])
            .arg(&a)
            .arg(&b),
        0,
    );
    // A sweep against a plain run is refused, naming the run.
    let plain = dir.path("plain.json");
    run(
        vload()
            .args(["attack", &small.url(), "-n", "10", "--no-progress", "-o"])
            .arg(&plain),
        0,
    );
    let out = run(vload().arg("compare").arg(&a).arg(&plain), 2);
    assert!(stderr(&out).contains("is not a sweep"), "{}", stderr(&out));
}

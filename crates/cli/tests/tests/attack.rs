use super::util::*;

#[test]
fn without_a_url_attacks_the_builtin_origin() {
    let _turn = serial();
    let dir = Scratch::new("builtin");
    let out = dir.path("run.json");
    let o = run(vload().args(["attack", "-d", "1s", "-o"]).arg(&out), 0);
    assert!(stderr(&o).contains("built-in origin"), "{}", stderr(&o));
    let report = stdout(&o);
    for needle in [
        "Requests",
        "service time, closed loop: subject to coordinated omission",
        "200:",
        "Client health",
    ] {
        assert!(report.contains(needle), "missing {needle}:\n{report}");
    }
    let run = read_run(&out);
    assert!(run.totals.completed > 100);
    assert!(run.totals.errors.is_empty());
    assert!(!run.interrupted);
}

#[test]
fn open_loop_reports_response_time_and_writes_labelled_runs() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("open");
    let (out, hlog) = (dir.path("open.json"), dir.path("open.hlog"));
    let o = run(
        vload()
            .args([
                "attack",
                "-r",
                "500",
                "-d",
                "1s",
                "--label",
                "x86_64",
                "-H",
                "X-Test: 1",
                "-o",
            ])
            .arg(&out)
            .arg("--hlog")
            .arg(&hlog)
            .arg(origin.url()),
        0,
    );
    assert!(
        stdout(&o).contains("response time from the intended send"),
        "{}",
        stdout(&o)
    );
    let run = read_run(&out);
    assert_eq!(run.label.as_deref(), Some("x86_64"));
    assert!(
        (run.totals.intended as i64 - 500).abs() <= 5,
        "{}",
        run.totals.intended
    );
    assert!(run.plan.headers.iter().any(|h| h.name == "x-test"));
    assert!(
        std::fs::read_to_string(&hlog)
            .unwrap()
            .contains("Tag=resp,")
    );
    assert_eq!(origin.stats().requests_total, run.totals.completed);
}

/// See #17, cases 12 and 13: SIGHUP killed the run, and an interrupted run exited 0.
#[test]
fn ctrl_c_still_writes_the_run_file() {
    for (signal_no, name) in [
        (libc::SIGINT, "sigint"),
        (libc::SIGTERM, "sigterm"),
        (libc::SIGHUP, "sighup"),
    ] {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new(name);
        let out = dir.path("run.json");
        let mut child = vload()
            .args(["attack", "-c", "4", "-d", "60s", "--no-progress", "-o"])
            .arg(&out)
            .arg(origin.url())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        signal(&child, signal_no);
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > std::time::Duration::from_secs(10) {
                child.kill().unwrap();
                panic!("{name}: vload did not stop");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(128 + signal_no), "{name}");
        let run = read_run(&out);
        assert!(run.interrupted, "{name}");
        assert!(run.totals.completed > 0, "{name}");
        assert!(run.window.measured_s < 10.0, "{name}: {:?}", run.window);
    }
}

#[test]
fn ctrl_c_while_waiting_for_start_at_ends_the_wait_and_writes_the_run_file() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("start-at-sigint");
    let out = dir.path("run.json");
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    let mut child = vload()
        .args([
            "attack",
            "-c",
            "2",
            "-d",
            "5s",
            "--no-progress",
            "--start-at",
        ])
        .arg(humantime::format_rfc3339_millis(at).to_string())
        .arg("-o")
        .arg(&out)
        .arg(origin.url())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("vload kept waiting for --start-at after Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130), "{status:?}");
    let run = read_run(&out);
    assert!(run.interrupted);
    assert_eq!(
        run.totals.completed, 0,
        "nothing was sent before the start time"
    );
    assert_eq!(origin.stats().requests_total, 0);
    assert!(run.plan.start_at.is_some());
}

#[test]
fn a_rate_plan_reports_each_stage() {
    let origin = origin();
    let dir = Scratch::new("rate-plan");
    let file = dir.path("run.json");
    let _turn = serial();
    let out = run(
        vload()
            .args(["attack", &origin.url(), "--rate", "0->1k:1s,1k:1s"])
            .args(["--no-progress", "-o"])
            .arg(&file),
        0,
    );
    let report = stdout(&out);
    assert!(
        report.contains("rate plan 0.0/s → 1,000.0/s for 1.000 s, then 1,000.0/s for 1.000 s"),
        "{report}"
    );
    // #48: its spacing after it, never "constant rate plan 0.0/s → ..." for a ramp.
    assert!(
        !report.contains("constant rate plan") && report.contains("for 1.000 s, evenly spaced"),
        "{report}"
    );
    assert!(report.contains("Stages"), "{report}");
    let run_file = read_run(&file);
    assert_eq!(
        run_file.plan.duration_s,
        Some(2.0),
        "the plan sets the duration"
    );
    let intended: Vec<u64> = run_file.stages.iter().map(|s| s.intended).collect();
    assert_eq!(intended, [500, 1_000]);
}

/// `--quiet`: no report and no progress, the run file still written and the exit code
/// still the run's.
#[test]
fn quiet_prints_no_report_and_still_writes_the_run_file() {
    let origin = origin();
    let dir = Scratch::new("quiet");
    let file = dir.path("run.json");
    let o = run(
        vload()
            .args(["attack", "-n", "5", "-c", "1", "--quiet", "-o"])
            .arg(&file)
            .arg(origin.url()),
        0,
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(!stderr(&o).contains("Requests"), "{}", stderr(&o));
    assert_eq!(read_run(&file).totals.completed, 5);
}

/// #48: `--brief` prints vegeta's length (eight lines) and `vload report --format brief`
/// prints the same lines from the run file.
#[test]
fn brief_is_eight_lines_and_the_report_gives_the_same() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("brief");
    let file = dir.path("run.json");
    let o = run(
        vload()
            .args([
                "attack",
                "-n",
                "500",
                "-c",
                "2",
                "--brief",
                "--no-progress",
                "-o",
            ])
            .arg(&file)
            .arg(origin.url()),
        0,
    );
    let brief = stdout(&o);
    assert_eq!(brief.lines().count(), 8, "{brief}");
    for needle in [
        "Requests",
        "Latencies",
        "Status Codes  [code:count]",
        "200:500",
        "Client health",
    ] {
        assert!(brief.contains(needle), "{needle}: {brief}");
    }
    let again = run(vload().args(["report", "--format", "brief"]).arg(&file), 0);
    assert_eq!(stdout(&again), brief);
    refused_together(&["attack", "-n", "1", "--brief", "--quiet"]);
}

fn refused_together(args: &[&str]) {
    let o = run(vload().args(args), 2);
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

use super::util::*;

/// Two short open-loop runs against one origin: `fast` with 1 ms delay, `slow` with 3 ms.
fn two_runs(dir: &Scratch) -> (std::path::PathBuf, std::path::PathBuf) {
    let _turn = shared();
    let origin = origin();
    let fast = dir.path("fast.json");
    let slow = dir.path("slow.json");
    // 1 ms against 30 ms: a loaded machine adds milliseconds to both (the fast run's p50 was
    // 4.8 ms beside stress-ng at load 16, above a 3 ms origin's), never 29.
    for (path, delay, label) in [(&fast, "1ms", "fast"), (&slow, "30ms", "slow")] {
        run(
            vload()
                .args([
                    "attack",
                    "-r",
                    "200",
                    "-d",
                    "1s",
                    "--no-progress",
                    "--label",
                    label,
                    "-o",
                ])
                .arg(path)
                .arg(format!("{}?delay={delay}", origin.url())),
            0,
        );
    }
    (fast, slow)
}

#[test]
fn report_compare_and_plot_work_on_attack_output() {
    let dir = Scratch::new("analysis");
    let (fast, slow) = two_runs(&dir);
    let o = run(vload().arg("report").arg(&fast), 0);
    assert!(
        stdout(&o).contains("response time from the intended send"),
        "{}",
        stdout(&o)
    );
    for (format, needle) in [
        ("json", "\"schema_version\""),
        ("markdown", "| metric |"),
        ("hgrm", "1/(1-Percentile)"),
        ("wrk", "Requests/sec:"),
    ] {
        let o = run(vload().args(["report", "--format", format]).arg(&fast), 0);
        assert!(stdout(&o).contains(needle), "{format}: {}", stdout(&o));
    }
    // Runs that are not shards of one attack get a report each, as `cat` would show them
    // (JSON: an array of reports).
    let o = run(vload().arg("report").arg(&fast).arg(&slow), 0);
    let text = stdout(&o);
    assert_eq!(text.matches("==> ").count(), 2, "{text}");
    assert_eq!(text.matches("\nRequests ").count(), 2, "{text}");
    let o = run(
        vload()
            .args(["report", "--format", "json"])
            .arg(&fast)
            .arg(&slow),
        0,
    );
    let reports: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(reports.as_array().map(Vec::len), Some(2));
    // Merged on request, different URLs make different plans: refused unless --force.
    let o = run(vload().args(["report", "--merge"]).arg(&fast).arg(&slow), 2);
    assert!(
        stderr(&o).contains("plans differ: workload_hash"),
        "{}",
        stderr(&o)
    );
    let o = run(vload().args(["report", "--force"]).arg(&fast).arg(&slow), 0);
    assert!(stderr(&o).contains("merged 2 runs"), "{}", stderr(&o));
    let o = run(vload().arg("compare").arg(&fast).arg(&slow), 0);
    let text = stdout(&o);
    assert!(
        text.contains("A = fast (1 run)")
            && text.contains("1 against 1 cannot decide")
            && text.contains("[none]"),
        "{text}"
    );
    assert!(text.contains("WARNING: workload differs"), "{text}");
    let o = run(
        vload()
            .args(["compare", "--format", "json"])
            .arg(&fast)
            .arg(&slow),
        0,
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json["kind"], "compare");
    let plot = dir.path("plot.html");
    run(
        vload()
            .arg("plot")
            .arg(&fast)
            .arg(&slow)
            .arg("-o")
            .arg(&plot),
        0,
    );
    let page = std::fs::read_to_string(&plot).unwrap();
    assert!(
        page.contains("<svg")
            && page.contains("data-series=\"fast p50\"")
            && page.contains("data-series=\"slow\"")
    );
    // Headings per run: each run's heatmap is named by its own label.
    for name in ["fast", "slow"] {
        assert!(
            page.contains(&format!("<h2>Latency heatmap of {name}: response time")),
            "{name}"
        );
    }
}

#[test]
fn fail_if_regressed_exits_1_only_on_regression() {
    let dir = Scratch::new("regress");
    let (fast, slow) = two_runs(&dir);
    let o = run(
        vload()
            .args(["compare", "--fail-if-regressed", "5"])
            .arg(&fast)
            .arg(&slow),
        1,
    );
    assert!(
        stderr(&o).contains("regression beyond 5% in B: p50"),
        "{}",
        stderr(&o)
    );
    run(
        vload()
            .args(["compare", "--fail-if-regressed", "5"])
            .arg(&slow)
            .arg(&fast),
        0,
    );
    // #45: the Markdown a CI job writes to its summary says why the job failed, though every
    // verdict of one run a side is "inconclusive".
    let o = run(
        vload()
            .args([
                "compare",
                "--format",
                "markdown",
                "--fail-if-regressed",
                "5",
            ])
            .arg(&fast)
            .arg(&slow),
        1,
    );
    let summary = stdout(&o);
    assert!(
        summary.contains("**Gate: FAILED (exit 1): --fail-if-regressed 5%: p50 +")
            && summary.contains("the gate acts on the shift of the medians alone"),
        "{summary}"
    );
    let o = run(
        vload()
            .args([
                "compare",
                "--format",
                "markdown",
                "--fail-if-regressed",
                "5",
            ])
            .arg(&slow)
            .arg(&fast),
        0,
    );
    assert!(stdout(&o).contains("**Gate: passed"), "{}", stdout(&o));
}

#[test]
fn group_by_label_and_explicit_groups() {
    let dir = Scratch::new("groups");
    let (fast, slow) = two_runs(&dir);
    let o = run(
        vload()
            .args(["compare", "--group-by", "label"])
            .arg(&slow)
            .arg(&fast),
        0,
    );
    assert!(
        stdout(&o).contains("A = slow (1 run)   B = fast (1 run)"),
        "{}",
        stdout(&o)
    );
    let o = run(vload().arg("compare").arg(&fast).arg("--").arg(&slow), 0);
    assert!(stdout(&o).contains("B = slow"), "{}", stdout(&o));
    let o = run(
        vload().args(["compare", "--group-by", "label"]).arg(&fast),
        2,
    );
    assert!(stderr(&o).contains("exactly two labels"), "{}", stderr(&o));
}

#[test]
fn bad_run_files_are_one_clear_error() {
    let dir = Scratch::new("badfiles");
    let golden = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/tests/data/golden-run.json"
    ))
    .unwrap();
    let cases = [
        ("missing.json", None, "cannot read run file"),
        (
            "notrun.json",
            Some(r#"{"hello": "world"}"#.to_owned()),
            "not a vload run file",
        ),
        (
            "newer.json",
            Some(golden.replacen("\"schema_version\": 1", "\"schema_version\": 9", 1)),
            "upgrade vload",
        ),
        (
            "truncated.json",
            Some(golden[..golden.len() / 3].to_owned()),
            "not valid run-file JSON",
        ),
        (
            "garbage.json",
            Some("\u{0}\u{1}binary".to_owned()),
            "is not a run file: it starts with byte 0x00",
        ),
    ];
    for (name, content, needle) in cases {
        let path = dir.path(name);
        if let Some(content) = content {
            std::fs::write(&path, content).unwrap();
        }
        for args in [vec!["report"], vec!["plot", "-o", "/dev/null"]] {
            let o = run(vload().args(&args).arg(&path), 2);
            let err = stderr(&o);
            assert!(
                err.contains(needle) && err.contains(name),
                "{args:?} {name}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
            assert!(stdout(&o).is_empty(), "{name}: nothing printed as if valid");
        }
        let o = run(vload().arg("compare").arg(&path).arg(&path), 2);
        assert!(stderr(&o).contains(name), "{}", stderr(&o));
    }
    let o = run(vload().arg("compare").arg(dir.path("x.json")), 2);
    assert!(
        stderr(&o).contains("compare needs two runs"),
        "{}",
        stderr(&o)
    );
}

/// See #30: `vload report a.json a.json` doubled every figure silently, and two runs against
/// two servers merged into a report naming only the first.
#[test]
fn report_refuses_a_run_twice_and_two_servers_silently() {
    let dir = Scratch::new("merge-refusals");
    let (a, b) = (dir.path("a.json"), dir.path("b.json"));
    {
        let _turn = shared();
        let (one, two) = (origin(), origin());
        for (path, origin) in [(&a, &one), (&b, &two)] {
            run(
                vload()
                    .args(["attack", "-n", "20", "-c", "1", "--no-progress", "-o"])
                    .arg(path)
                    .arg(origin.url()),
                0,
            );
        }
    }
    let copy = dir.path("copy.json");
    std::fs::copy(&a, &copy).unwrap();
    for second in [&a, &copy] {
        let o = run(vload().args(["report", "--merge"]).arg(&a).arg(second), 2);
        assert!(stderr(&o).contains("are the same run"), "{}", stderr(&o));
    }
    let run_a = read_run(&a);
    let run_b = read_run(&b);
    let (sa, sb) = (
        run_a.plan.server_address.unwrap(),
        run_b.plan.server_address.unwrap(),
    );
    let o = run(vload().args(["report", "--merge"]).arg(&a).arg(&b), 2);
    let err = stderr(&o);
    assert!(
        err.contains("server_address") && err.contains(&sa) && err.contains(&sb),
        "{err}"
    );
    // Merged on purpose, the report names both servers.
    let o = run(vload().args(["report", "--force"]).arg(&a).arg(&b), 0);
    let text = stdout(&o);
    assert!(text.contains(&sa) && text.contains(&sb), "{text}");
}

/// See #30: a sweep whose first step got no response exited 2 without a run file; an
/// attack writes one.
#[test]
fn a_sweep_that_finds_nothing_still_writes_its_file() {
    let dir = Scratch::new("sweep-nothing");
    let file = dir.path("sweep.json");
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let _turn = shared();
    let o = run(
        vload()
            .args([
                "sweep",
                &format!("http://{refused}/"),
                "--rates",
                "1000,2000",
            ])
            .args(["--stage", "1s", "--warmup", "0s", "--slo", "p99<1s"])
            .args(["--no-progress", "-o"])
            .arg(&file),
        2,
    );
    assert!(
        stderr(&o).contains("no request got a response"),
        "{}",
        stderr(&o)
    );
    let swept = read_run(&file);
    assert_eq!(swept.stages.len(), 1, "the one step that ran");
    assert!(
        swept
            .totals
            .errors
            .contains_key(&vload_schema::ErrorKind::ConnectRefused)
    );
}

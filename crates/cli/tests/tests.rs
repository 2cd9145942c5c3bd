//! End-to-end tests of the `vload` binary.

mod util {
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Output, Stdio};

    pub(crate) use vload_origin::{OriginConfig, OriginHandle, spawn};
    pub(crate) use vload_schema::RunFile;

    pub(crate) fn vload() -> Command {
        Command::new(env!("CARGO_BIN_EXE_vload"))
    }

    /// A scratch directory removed on drop.
    pub(crate) struct Scratch(pub(crate) PathBuf);

    impl Scratch {
        pub(crate) fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("vload-cli-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
        pub(crate) fn path(&self, file: &str) -> PathBuf {
            self.0.join(file)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Runs the command; on an unexpected exit code prints everything and fails.
    pub(crate) fn run(cmd: &mut Command, expect_code: i32) -> Output {
        let output = cmd.stdin(Stdio::null()).output().expect("vload runs");
        if output.status.code() != Some(expect_code) {
            panic!(
                "{cmd:?}\nexpected exit {expect_code}, got {:?}\n--- stdout\n{}\n--- stderr\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        output
    }

    pub(crate) fn stdout(o: &Output) -> String {
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub(crate) fn stderr(o: &Output) -> String {
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    pub(crate) fn read_run(path: &Path) -> RunFile {
        RunFile::from_json(&std::fs::read_to_string(path).expect("run file exists"))
            .expect("valid run file")
    }

    pub(crate) fn origin() -> OriginHandle {
        spawn(OriginConfig {
            threads: Some(1),
            ..OriginConfig::loopback()
        })
        .unwrap()
    }

    pub(crate) fn signal(child: &Child, signal: i32) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    }

    /// Load tests take turns: on two cores, parallel attacks would measure each other.
    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }
}

mod attack {
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
}

mod bad_input {
    use super::util::*;

    /// Exit 2 with exactly one line on stderr that contains `needle`.
    fn refused(args: &[&str], needle: &str) {
        let o = run(vload().args(args), 2);
        let err = stderr(&o);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("vload: attacking"))
            .collect();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            lines.len() == 1 || args.contains(&"--rate") || err.starts_with("error:"),
            "{args:?}: one line, got:\n{err}"
        );
        assert!(
            stdout(&o).is_empty(),
            "{args:?}: nothing printed as if valid"
        );
    }

    #[test]
    fn unreadable_servers_are_refused_before_the_attack() {
        let origin = origin();
        let url = origin.url();
        refused(
            &["attack", "-n", "5", "--server-stats", "nginx", &url],
            "expected varnish or varnish:NAME",
        );
        refused(
            &["attack", "-n", "5", "--watch-pid", "4000000000", &url],
            "--watch-pid 4000000000: no such process",
        );
        // Either varnishstat is missing or it finds no such instance: one line either way.
        refused(
            &[
                "attack",
                "-n",
                "5",
                "--server-stats",
                "varnish:/nonexistent/vload",
                &url,
            ],
            "--server-stats varnish:/nonexistent/vload",
        );
        assert_eq!(origin.stats().requests_total, 0, "nothing was sent");
    }

    #[test]
    fn malformed_urls_and_flags_are_one_clear_line() {
        refused(
            &["attack", "-d", "1s", "not a url"],
            "invalid URL 'not a url'",
        );
        refused(
            &["attack", "-d", "1s", "127.0.0.1:8080/"],
            "expected http://127.0.0.1:8080/",
        );
        refused(
            &["attack", "-d", "1s", "--insecure", "http://127.0.0.1:1/"],
            "apply to https:// URLs",
        );
        refused(
            &["attack", "-d", "1s", "http://no-such-host.invalid/"],
            "cannot resolve host",
        );
        refused(
            &["attack", "-c", "5", "-r", "100", "http://127.0.0.1:1/"],
            "--max-connections",
        );
        refused(
            &["attack", "--rate", "10kk", "http://127.0.0.1:1/"],
            "invalid rate '10kk'",
        );
        refused(
            &["attack", "-d", "soon", "http://127.0.0.1:1/"],
            "invalid duration 'soon'",
        );
        refused(
            &[
                "attack",
                "-o",
                "/nonexistent-dir/run.json",
                "http://127.0.0.1:1/",
            ],
            "cannot write run file",
        );
    }

    #[test]
    fn an_unreachable_server_is_an_error_but_the_run_is_kept() {
        let _turn = serial();
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let dir = Scratch::new("refused");
        let out = dir.path("run.json");
        let o = run(
            vload()
                .args(["attack", "-d", "500ms", "-c", "2", "-o"])
                .arg(&out)
                .arg(format!("http://{addr}/")),
            2,
        );
        let err = stderr(&o);
        assert!(
            err.contains("connect_refused") && err.contains("is up and reachable"),
            "{err}"
        );
        assert!(
            stdout(&o).contains("Error set"),
            "the report still shows what happened"
        );
        let run = read_run(&out);
        assert!(run.totals.error_count() > 0);
    }

    #[test]
    fn help_lists_the_exit_codes() {
        let o = run(vload().arg("--help"), 0);
        assert!(stdout(&o).contains("Exit codes:"), "{}", stdout(&o));
    }
}

mod origin_command {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;

    use super::util::*;

    #[test]
    fn vload_origin_serves_until_sigterm() {
        let mut child = vload()
            .args(["origin", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read as _, Write as _};
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.ends_with("Hello World"), "{response}");
        signal(&child, libc::SIGTERM);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn bad_origin_flags_are_refused() {
        let o = run(
            vload().args(["origin", "--stall-every", "1s", "--stall-for", "2s"]),
            2,
        );
        assert!(stderr(&o).contains("shorter than"), "{}", stderr(&o));
    }
}

mod analysis {
    use super::util::*;

    /// Two short open-loop runs against one origin: `fast` with 1 ms delay, `slow` with 3 ms.
    fn two_runs(dir: &Scratch) -> (std::path::PathBuf, std::path::PathBuf) {
        let _turn = serial();
        let origin = origin();
        let fast = dir.path("fast.json");
        let slow = dir.path("slow.json");
        for (path, delay, label) in [(&fast, "1ms", "fast"), (&slow, "3ms", "slow")] {
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
        // Different URLs make different plans: refused unless --force.
        let o = run(vload().arg("report").arg(&fast).arg(&slow), 2);
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
            text.contains("A = fast (1 run)") && text.contains("run-to-run variation"),
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
                "not valid run-file JSON",
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
}

mod edges {
    //! #17: numbers that stay true at the edges.
    use std::os::unix::fs::FileTypeExt as _;
    use std::os::unix::process::CommandExt as _;
    use std::time::{Duration, Instant};

    use super::util::*;

    fn wait(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > limit {
                child.kill().unwrap();
                panic!("vload did not stop within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// See #17, case 1: a vegeta user's `--targets FILE` without a URL attacked the built-in
    /// origin, and the real server got nothing while the report said 100% success.
    #[test]
    fn targets_with_absolute_urls_go_where_they_say() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("aim");
        let targets = dir.path("targets.http");
        std::fs::write(
            &targets,
            format!("GET {0}a\n\nGET {0}b\nX-Test: 1\n", origin.url()),
        )
        .unwrap();
        let o = run(
            vload()
                .args([
                    "attack",
                    "-n",
                    "10",
                    "-c",
                    "1",
                    "--no-progress",
                    "--targets",
                ])
                .arg(&targets),
            0,
        );
        assert!(!stderr(&o).contains("built-in origin"), "{}", stderr(&o));
        let stats = origin.stats();
        assert_eq!(stats.requests_total, 10, "the named server got the load");
        assert_eq!(stats.requests_by_path["/a"], 5);
        // Paths and absolute URLs with no URL: ambiguous, refused with what to add.
        let mixed = dir.path("mixed.txt");
        std::fs::write(&mixed, format!("/x\n{}y\n", origin.url())).unwrap();
        let o = run(vload().args(["attack", "-n", "2", "--urls"]).arg(&mixed), 2);
        assert!(
            stderr(&o).contains("give the URL they resolve against"),
            "{}",
            stderr(&o)
        );
        assert_eq!(origin.stats().requests_total, 10, "nothing sent");
    }

    /// See #17, case 23: --replay-log with --connect-to and no URL started the built-in
    /// origin anyway (idle) and wrote its random URL into the plan.
    #[test]
    fn a_replayed_log_with_connect_to_goes_to_that_address() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("replay");
        let log = dir.path("access.log");
        std::fs::write(
            &log,
            "127.0.0.1 - - [22/Nov/2026:10:00:00 +0000] \"GET /r1 HTTP/1.1\" 200 11 \"-\" \"ua\"\n\
             127.0.0.1 - - [22/Nov/2026:10:00:01 +0000] \"GET /r2 HTTP/1.1\" 200 11 \"-\" \"ua\"\n",
        )
        .unwrap();
        let out = dir.path("run.json");
        let addr = origin.addr().to_string();
        let o = run(
            vload()
                .args([
                    "attack",
                    "-n",
                    "6",
                    "-c",
                    "1",
                    "--no-progress",
                    "--connect-to",
                    &addr,
                ])
                .arg("--replay-log")
                .arg(&log)
                .arg("-o")
                .arg(&out),
            0,
        );
        assert!(!stderr(&o).contains("built-in origin"), "{}", stderr(&o));
        assert_eq!(origin.stats().requests_total, 6);
        let run = read_run(&out);
        assert_eq!(run.plan.target, format!("http://{addr}/"));
        assert_eq!(run.plan.server_address.as_deref(), Some(addr.as_str()));
    }

    /// See #17, case 2: frozen from 1.2 s to 4.2 s of a 3 s run at 500/s, the run file said
    /// intended 589 and success 100%.
    #[test]
    fn a_client_frozen_past_the_end_counts_every_due_request() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("frozen");
        let out = dir.path("run.json");
        let mut child = vload()
            .args(["attack", "-r", "500", "-d", "3s", "--no-progress", "-o"])
            .arg(&out)
            .arg(origin.url())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        signal(&child, libc::SIGSTOP);
        std::thread::sleep(Duration::from_millis(3000));
        signal(&child, libc::SIGCONT);
        let status = wait(&mut child, Duration::from_secs(30));
        assert!(status.success(), "{status:?}");
        let mut report = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut report).unwrap();
        let run = read_run(&out);
        let t = &run.totals;
        assert!(
            (1_485..=1_515).contains(&t.intended),
            "every request due in 3 s at 500/s is intended: {}",
            t.intended
        );
        assert!(
            t.unsent >= 400,
            "the frozen part was never sent: {}",
            t.unsent
        );
        assert!(t.sent + t.unsent <= t.intended, "{t:?}");
        assert_eq!(
            run.client_health.verdict,
            vload_schema::Verdict::ClientBound,
            "{:?}",
            run.client_health.reasons
        );
        assert!(report.contains("Unsent"), "{report}");
        assert!(report.contains("CLIENT-BOUND"), "{report}");
    }

    /// See #17, case 4: the http crate reads :99999 as no port, which attacked port 80.
    #[test]
    fn a_port_above_65535_is_refused() {
        let o = run(
            vload().args(["attack", "-n", "1", "http://127.0.0.1:99999/"]),
            2,
        );
        assert!(
            stderr(&o).contains("invalid URL 'http://127.0.0.1:99999/': port 99999"),
            "{}",
            stderr(&o)
        );
        let dir = Scratch::new("port");
        let list = dir.path("urls.txt");
        std::fs::write(&list, "http://127.0.0.1:70000/x\n").unwrap();
        let o = run(vload().args(["attack", "-n", "1", "--urls"]).arg(&list), 2);
        assert!(stderr(&o).contains("port 70000"), "{}", stderr(&o));
    }

    /// See #17, case 10: on a full disk the whole attack was lost and a temporary file left.
    #[test]
    fn a_run_file_that_cannot_be_written_is_saved_elsewhere_after_the_report() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("full");
        // /dev/full fails every write with "No space left on device".
        let o = run(
            vload()
                .current_dir(&dir.0)
                .args([
                    "attack",
                    "-n",
                    "20",
                    "-c",
                    "1",
                    "--no-progress",
                    "-o",
                    "/dev/full",
                ])
                .arg(origin.url()),
            2,
        );
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(out.contains("Requests"), "the report comes first: {out}");
        assert!(err.contains("cannot write run file '/dev/full'"), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        let saved: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert!(err.contains("saved to ./vload-run-"), "{err}");
        assert_eq!(read_run(&saved[0]).totals.completed, 20);
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    /// A regular file that cannot grow (RLIMIT_FSIZE: writes fail with EFBIG) leaves no
    /// temporary file behind, and when no copy can be saved either, says so.
    #[test]
    fn a_failed_write_removes_its_temporary_file() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("fsize");
        let out = dir.path("run.json");
        let mut cmd = vload();
        cmd.current_dir(&dir.0)
            .args(["attack", "-n", "20", "-c", "1", "--no-progress", "-o"])
            .arg(&out)
            .arg(origin.url())
            .env("TMPDIR", &dir.0);
        // SAFETY: between fork and exec only async-signal-safe calls: signal and setrlimit.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                // Smaller than any run file.
                let limit = libc::rlimit {
                    rlim_cur: 512,
                    rlim_max: 512,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
                Ok(())
            });
        }
        let o = run(&mut cmd, 2);
        let err = stderr(&o);
        assert!(stdout(&o).contains("Requests"), "{}", stdout(&o));
        assert!(err.contains("no copy could be saved either"), "{err}");
        let left: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "nothing left behind: {left:?}");
    }

    /// See #17, case 11: `-o /dev/full` as root replaced the device with a regular file.
    #[test]
    fn links_fifos_and_devices_are_written_through_not_replaced() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("special");
        let target = dir.path("archive.json");
        let link = dir.path("latest.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        run(
            vload()
                .args(["attack", "-n", "5", "-c", "1", "--no-progress", "-o"])
                .arg(&link)
                .arg(origin.url()),
            0,
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(read_run(&target).totals.completed, 5);
        // A FIFO is written in place, for whoever reads it.
        let fifo = dir.path("run.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        run(
            vload()
                .args(["attack", "-n", "5", "-c", "1", "--no-progress", "-o"])
                .arg(&fifo)
                .arg(origin.url()),
            0,
        );
        let text = reader.join().unwrap();
        assert_eq!(
            vload_schema::RunFile::from_json(&text)
                .unwrap()
                .totals
                .completed,
            5
        );
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        // A directory is refused before anything is sent.
        let o = run(
            vload()
                .args(["attack", "-n", "5", "-o"])
                .arg(&dir.0)
                .arg(origin.url()),
            2,
        );
        assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
        assert_eq!(origin.stats().requests_total, 10);
    }

    /// See #17, cases 14 and 15: values the machine cannot hold are refused before the
    /// attack, naming the limit, instead of growing to gigabytes or panicking.
    #[test]
    fn impossible_sizes_are_refused_naming_the_limit() {
        let url = "http://127.0.0.1:1/";
        let o = run(
            vload().args([
                "attack",
                "--http2",
                "--streams",
                "4294967295",
                "-c",
                "1",
                url,
            ]),
            2,
        );
        assert!(
            stderr(&o).contains("--streams 4294967295"),
            "{}",
            stderr(&o)
        );
        let o = run(vload().args(["attack", "-c", "1000000", url]), 2);
        let err = stderr(&o);
        assert!(
            err.contains("file descriptors") || err.contains("local ports"),
            "{err}"
        );
        let o = run(vload().args(["attack", "-d", "213503982334601d", url]), 2);
        assert!(stderr(&o).contains("longer than a year"), "{}", stderr(&o));
        let o = run(vload().args(["attack", "-r", "1e-19", url]), 2);
        assert!(
            stderr(&o).contains("below one request an hour"),
            "{}",
            stderr(&o)
        );
        let o = run(vload().args(["attack", "-t", "100000", url]), 2);
        assert!(stderr(&o).contains("--threads 100000"), "{}", stderr(&o));
        // A file descriptor limit that -c exceeds is named, with the fix.
        let mut cmd = vload();
        cmd.args(["attack", "-c", "500", "-n", "1", url]);
        // SAFETY: only setrlimit between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 256,
                    rlim_max: 256,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
                Ok(())
            });
        }
        let o = run(&mut cmd, 2);
        assert!(
            stderr(&o).contains("500 connections need about 564 file descriptors")
                && stderr(&o).contains("may open 256"),
            "{}",
            stderr(&o)
        );
    }

    /// See #17, case 16: every command handles a run with no success, no request, one.
    #[test]
    fn report_compare_and_plot_handle_empty_and_tiny_runs() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("tiny");
        let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (failed, one, nothing) = (
            dir.path("failed.json"),
            dir.path("one.json"),
            dir.path("nothing.json"),
        );
        run(
            vload()
                .args(["attack", "-n", "3", "-c", "1", "--no-progress", "-o"])
                .arg(&failed)
                .arg(format!("http://{closed_port}/")),
            2,
        );
        run(
            vload()
                .args(["attack", "-n", "1", "-c", "1", "--no-progress", "-o"])
                .arg(&one)
                .arg(origin.url()),
            0,
        );
        // Interrupted while waiting to start: no request at all.
        let at = std::time::SystemTime::now() + Duration::from_secs(60);
        let mut child = vload()
            .args([
                "attack",
                "-c",
                "1",
                "-d",
                "1s",
                "--no-progress",
                "--start-at",
            ])
            .arg(humantime::format_rfc3339_millis(at).to_string())
            .arg("-o")
            .arg(&nothing)
            .arg(origin.url())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        signal(&child, libc::SIGINT);
        assert_eq!(wait(&mut child, Duration::from_secs(10)).code(), Some(130));
        assert_eq!(read_run(&nothing).totals.completed, 0);
        for file in [&failed, &one, &nothing] {
            for format in ["text", "json", "markdown", "hgrm", "wrk"] {
                run(vload().args(["report", "--format", format]).arg(file), 0);
            }
            let html = dir.path("plot.html");
            run(vload().arg("plot").arg(file).arg("-o").arg(&html), 0);
            assert!(std::fs::metadata(&html).unwrap().len() < 1_000_000);
        }
        run(vload().arg("compare").arg(&failed).arg(&one), 0);
        run(vload().arg("compare").arg(&nothing).arg(&one), 0);
    }

    /// See #17, case 17: a hostile run file made report allocate 4 GB; contradictory ones
    /// were reported as if valid.
    #[test]
    fn hostile_and_contradictory_run_files_are_refused_naming_the_field() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("hostile");
        let good = dir.path("good.json");
        run(
            vload()
                .args(["attack", "-n", "20", "-c", "1", "--no-progress", "-o"])
                .arg(&good)
                .arg(origin.url()),
            0,
        );
        let text = std::fs::read_to_string(&good).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        // 56 bytes claiming a 4 GiB payload.
        let mut blob = vec![0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 0];
        let inner = [
            &0x1c84_9313u32.to_be_bytes()[..],
            &u32::MAX.to_be_bytes(),
            &0u32.to_be_bytes(),
            &3u32.to_be_bytes(),
            &1u64.to_be_bytes(),
            &60_000_000_000u64.to_be_bytes(),
            &1f64.to_be_bytes(),
        ]
        .concat();
        let mut z = flate2_compress(&inner);
        blob[4..8].copy_from_slice(&(z.len() as u32).to_be_bytes());
        blob.append(&mut z);
        use base64::Engine as _;
        value["latency"]["service"]["histogram"] = base64::engine::general_purpose::STANDARD
            .encode(&blob)
            .into();
        let cases: Vec<(&str, String, &str)> = vec![
            ("bomb", value.to_string(), "latency.service.histogram"),
            (
                "errors",
                text.replacen(
                    "\"errors\": {}",
                    "\"errors\": {\"reset\": {\"count\": 999, \"sample\": \"x\"}}",
                    1,
                ),
                "totals.errors",
            ),
            (
                "moments",
                {
                    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    v["latency"]["service"]["moments"]["n"] = 7.into();
                    v.to_string()
                },
                "latency.service.moments.n",
            ),
            (
                "layout",
                {
                    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    v["plan"]["histogram"]["sigfig"] = 5.into();
                    v.to_string()
                },
                "plan.histogram",
            ),
            (
                "duplicate",
                text.replacen("\"completed\": ", "\"completed\": 1, \"completed\": ", 1),
                "appears twice",
            ),
        ];
        for (name, body, field) in cases {
            let path = dir.path(&format!("{name}.json"));
            std::fs::write(&path, body).unwrap();
            for cmd in [vec!["report"], vec!["plot", "-o", "/dev/null"]] {
                let o = run(vload().args(&cmd).arg(&path), 2);
                let err = stderr(&o);
                assert!(
                    err.contains(&format!("'{}'", path.display())),
                    "{name}: {err}"
                );
                assert!(err.contains(field), "{name}: {err}");
                assert!(
                    !err.contains("Error {") && !err.contains("IoError"),
                    "{name}: {err}"
                );
                assert_eq!(err.lines().count(), 1, "{name}: {err}");
            }
        }
    }

    fn flate2_compress(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(bytes).unwrap();
        z.finish().unwrap()
    }

    /// See #17, case 18: a label or a server's bytes could retitle the terminal.
    #[test]
    fn control_characters_never_reach_the_terminal() {
        let _turn = serial();
        let origin = origin();
        let o = run(
            vload()
                .args(["attack", "-n", "3", "-c", "1", "--no-progress", "--label"])
                .arg("\u{1b}]0;pwned\u{7}")
                .arg(origin.url()),
            0,
        );
        assert!(!stdout(&o).contains('\u{1b}'), "{:?}", stdout(&o));
        assert!(!stderr(&o).contains('\u{1b}'), "{:?}", stderr(&o));
        assert!(stdout(&o).contains("\\u{1b}]0;pwned"), "{}", stdout(&o));
    }

    /// See #17, case 19: `vload origin --listen ADDR` on a port in use bound anyway.
    #[test]
    fn the_origin_refuses_a_port_in_use() {
        let first = origin();
        let o = run(
            vload().args(["origin", "--listen", &first.addr().to_string()]),
            2,
        );
        assert!(stderr(&o).contains("already in use"), "{}", stderr(&o));
        assert!(stderr(&o).contains("--reuse-port"), "{}", stderr(&o));
    }
}

mod workloads {
    use super::util::*;

    #[test]
    fn a_url_list_without_a_url_goes_to_the_builtin_origin() {
        let _turn = serial();
        let dir = Scratch::new("urls");
        let list = dir.path("paths.txt");
        // Only paths: nothing names a server, so the built-in origin serves them.
        std::fs::write(&list, "/a\n/b\n/c\n").unwrap();
        let out = dir.path("run.json");
        let o = run(
            vload()
                .args([
                    "attack",
                    "-c",
                    "3",
                    "--passes",
                    "4",
                    "--no-progress",
                    "--urls",
                ])
                .arg(&list)
                .arg("-o")
                .arg(&out),
            0,
        );
        let report = stdout(&o);
        assert!(
            report.contains("Targets") && report.contains("3 urls") && report.contains("4 passes"),
            "{report}"
        );
        assert!(report.contains("Connections"), "{report}");
        let run = read_run(&out);
        assert_eq!(run.totals.completed, 12);
        assert_eq!(run.plan.targets.unwrap().passes, Some(4));
    }

    #[test]
    fn connect_to_and_requests_per_connection_reach_the_origin() {
        let _turn = serial();
        let origin = origin();
        let dir = Scratch::new("connect");
        let out = dir.path("run.json");
        let addr = origin.addr().to_string();
        run(
            vload()
                .args([
                    "attack",
                    "-c",
                    "2",
                    "-n",
                    "40",
                    "--requests-per-connection",
                    "4",
                    "--no-progress",
                ])
                .args(["--connect-to", &addr, "-o"])
                .arg(&out)
                .arg("http://www.example.test/page"),
            0,
        );
        let stats = origin.stats();
        assert_eq!(stats.requests_by_host["www.example.test"], 40);
        // 40 requests, 4 a connection: 10 connections, one more when the two tasks split the
        // requests unevenly (21 + 19 needs 6 + 5).
        assert!(
            (10..=11).contains(&stats.connections_accepted),
            "{}",
            stats.connections_accepted
        );
        assert_eq!(
            read_run(&out).plan.connect_to.as_deref(),
            Some(addr.as_str())
        );
        // --resolve maps the URL's host:port to an address, as curl does.
        let port = origin.addr().port();
        run(
            vload()
                .args(["attack", "-n", "5", "-c", "1", "--no-progress", "--resolve"])
                .arg(format!("cache.test:{port}:127.0.0.1"))
                .arg(format!("http://cache.test:{port}/")),
            0,
        );
        assert_eq!(
            origin.stats().requests_by_host[&format!("cache.test:{port}")],
            5
        );
    }

    #[test]
    fn bad_workload_input_is_one_clear_line() {
        let dir = Scratch::new("badworkload");
        let broken = dir.path("broken.txt");
        std::fs::write(&broken, "/ok\nnot a url at all\n").unwrap();
        for (args, needle) in [
            (
                vec![
                    "attack",
                    "--urls",
                    broken.to_str().unwrap(),
                    "http://127.0.0.1:1/",
                ],
                "broken.txt:2:",
            ),
            (
                vec![
                    "attack",
                    "--urls",
                    "/nonexistent/list.txt",
                    "http://127.0.0.1:1/",
                ],
                "cannot open",
            ),
            (
                vec!["attack", "--mix", "a.txt:ten", "http://127.0.0.1:1/"],
                "invalid weight 'ten'",
            ),
            (
                vec!["attack", "--passes", "2", "http://127.0.0.1:1/"],
                "need target files",
            ),
            (
                vec!["attack", "--resolve", "nonsense", "http://127.0.0.1:1/"],
                "invalid --resolve 'nonsense'",
            ),
            (
                vec![
                    "attack",
                    "--requests-per-connection",
                    "0",
                    "http://127.0.0.1:1/",
                ],
                "at least 1",
            ),
        ] {
            let o = run(vload().args(&args), 2);
            let err: Vec<String> = stderr(&o)
                .lines()
                .filter(|l| !l.starts_with("vload: attacking"))
                .map(str::to_owned)
                .collect();
            assert!(
                err.len() == 1 && err[0].contains(needle),
                "{args:?}: {err:?}"
            );
        }
        let o = run(
            vload().args([
                "attack",
                "--passes",
                "1",
                "-n",
                "5",
                "--urls",
                "x",
                "http://127.0.0.1:1/",
            ]),
            2,
        );
        assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    }
}

mod shards {
    use std::process::Stdio;

    use super::util::*;

    /// Starts shard `i` of `n` with `args`, writing `shard-i.json` in `dir`.
    fn start(dir: &Scratch, i: u32, n: u32, args: &[String]) -> std::process::Child {
        vload()
            .arg("attack")
            .arg("--shard")
            .arg(format!("{i}/{n}"))
            .args(args)
            .arg("-o")
            .arg(dir.path(&format!("shard-{i}.json")))
            .arg("--no-progress")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn start_at(seconds_ahead: u64) -> String {
        let at = std::time::SystemTime::now() + std::time::Duration::from_secs(seconds_ahead);
        humantime::format_rfc3339_millis(at).to_string()
    }

    #[test]
    fn four_shard_processes_merge_exactly() {
        let _serial = serial();
        let origin = origin();
        let dir = Scratch::new("shards");
        let list: String = (0..400).map(|i| format!("/obj/{i}\n")).collect();
        std::fs::write(dir.path("urls.txt"), list).unwrap();
        let args: Vec<String> = [
            "-c",
            "8",
            "--urls",
            dir.path("urls.txt").to_str().unwrap(),
            "--passes",
            "1",
            "--start-at",
            &start_at(2),
            &origin.url(),
        ]
        .map(String::from)
        .to_vec();
        let children: Vec<_> = (0..4).map(|i| start(&dir, i, 4, &args)).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let shards: Vec<RunFile> = (0..4)
            .map(|i| read_run(&dir.path(&format!("shard-{i}.json"))))
            .collect();
        for (i, run) in shards.iter().enumerate() {
            let shard = run.plan.shard.unwrap();
            assert_eq!((shard.index, shard.count), (i as u32, 4));
            assert_eq!(shard.connections, 2, "8 connections over 4 shards");
            assert_eq!(run.totals.completed, 100, "every 4th URL of 400");
            assert!(run.window.start_offset_s.unwrap() < 1.0, "{:?}", run.window);
            assert_eq!(run.workload_hash, shards[0].workload_hash, "one plan");
        }
        // Disjoint and complete: every URL fetched exactly once by the four together.
        let stats = origin.stats();
        assert_eq!(stats.requests_by_path.len(), 400);
        assert!(stats.requests_by_path.values().all(|n| *n == 1));

        let files: Vec<String> = (0..4)
            .map(|i| dir.path(&format!("shard-{i}.json")).display().to_string())
            .collect();
        let merged_file = dir.path("merged.json");
        let out = run(
            vload()
                .arg("report")
                .args(["--format", "json", "-o", merged_file.to_str().unwrap()])
                .args(&files),
            0,
        );
        let merged_run = read_run(&merged_file);
        assert_eq!(merged_run.totals.completed, 400);
        assert!(
            merged_run.plan.shard.is_none(),
            "the merge is the whole attack"
        );
        assert!(
            stderr(&out).contains("merged 4 shards of 4 from 1 machine"),
            "{}",
            stderr(&out)
        );
        let merged: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let merged = &merged["report"];
        assert_eq!(merged["requests"], 400);
        assert_eq!(
            stats.requests_total, 400,
            "the origin counted what the merge says"
        );
        // Merged percentiles are those of the union of the shards' histograms.
        let mut union: Option<hdrhistogram::Histogram<u64>> = None;
        for run in &shards {
            let h = run.latency.service.histogram.decode().unwrap();
            match &mut union {
                Some(u) => u.add(&h).unwrap(),
                None => union = Some(h),
            }
        }
        let union = union.unwrap();
        let quantiles = merged["latency"]["quantiles"].as_array().unwrap();
        for (q, name) in [(0.5, "p50"), (0.9, "p90")] {
            let shown = quantiles
                .iter()
                .find(|v| v[0] == name)
                .and_then(|v| v[1].as_u64())
                .unwrap();
            assert_eq!(shown, union.value_at_quantile(q), "{name}");
        }
        assert_eq!(merged["latency"]["n"], 400);

        // A missing shard and a duplicated one are named.
        let out = run(vload().arg("report").args(&files[..3]), 2);
        assert!(
            stderr(&out).contains("shard 3/4 missing"),
            "{}",
            stderr(&out)
        );
        let mut twice = files.clone();
        twice[3] = files[2].clone();
        let out = run(vload().arg("report").args(&twice), 2);
        assert!(
            stderr(&out).contains("shard 2/4 appears twice"),
            "{}",
            stderr(&out)
        );
        let out = run(vload().arg("report").arg("--force").args(&files[..3]), 0);
        assert!(
            stderr(&out).contains("warning: shard 3/4 missing"),
            "{}",
            stderr(&out)
        );
    }

    #[test]
    fn open_loop_shards_split_the_rate() {
        let _serial = serial();
        let origin = origin();
        let dir = Scratch::new("shards-open");
        let args: Vec<String> = [
            "-r",
            "1000",
            "-d",
            "2s",
            "--start-at",
            &start_at(1),
            &origin.url(),
        ]
        .map(String::from)
        .to_vec();
        let children: Vec<_> = (0..4).map(|i| start(&dir, i, 4, &args)).collect();
        for child in children {
            assert!(child.wait_with_output().unwrap().status.success());
        }
        let runs: Vec<_> = (0..4)
            .map(|i| read_run(&dir.path(&format!("shard-{i}.json"))))
            .collect();
        let intended: Vec<u64> = runs.iter().map(|r| r.totals.intended).collect();
        // 250/s each for 2 s.
        assert!(
            intended.iter().all(|n| (495..=505).contains(n)),
            "{intended:?}"
        );
        let total: u64 = intended.iter().sum();
        assert!((1_980..=2_020).contains(&total), "{total}");
        // The origin saw every response the shards got. (On a loaded machine a shard may
        // notice the end late: a request due in its last millisecond is then intended but
        // never sent, and says so.)
        let answered: u64 = runs
            .iter()
            .map(|r| r.totals.status_codes.values().sum::<u64>())
            .sum();
        let unsent: u64 = runs.iter().map(|r| r.totals.unsent).sum();
        assert!(unsent <= 10, "{unsent}");
        assert_eq!(origin.stats().requests_total, answered);
    }

    #[test]
    fn impossible_shards_are_refused() {
        let origin = origin();
        for (shard, needle) in [
            ("4/4", "count from 0"),
            ("1/0", "at least 1"),
            ("x", "not I/N"),
        ] {
            let out = run(
                vload().args(["attack", "-n", "5", "--shard", shard, &origin.url()]),
                2,
            );
            assert!(stderr(&out).contains(needle), "{shard}: {}", stderr(&out));
        }
        let out = run(
            vload().args([
                "attack",
                "-c",
                "2",
                "-n",
                "50",
                "--shard",
                "3/4",
                &origin.url(),
            ]),
            2,
        );
        assert!(
            stderr(&out).contains("shard 3/4 gets no connection"),
            "{}",
            stderr(&out)
        );
        let out = run(
            vload().args(["attack", "-n", "5", "--start-at", "tomorrow", &origin.url()]),
            2,
        );
        assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
        assert_eq!(origin.stats().requests_total, 0);
    }
}

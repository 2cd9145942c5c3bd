use super::util::*;

#[test]
fn a_url_list_without_a_url_goes_to_the_builtin_origin() {
    let _turn = shared();
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
    // See #32 (item 6): ab's "Connect" row.
    assert!(
        report.contains("TCP connect   [min, mean, p99, max]"),
        "{report}"
    );
    let run = read_run(&out);
    assert_eq!(run.totals.completed, 12);
    assert_eq!(run.plan.targets.unwrap().passes, Some(4));
}

#[test]
fn connect_to_and_requests_per_connection_reach_the_origin() {
    let _turn = shared();
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
    assert!(
        stderr(&o).contains("--passes and -n/--requests both count requests"),
        "{}",
        stderr(&o)
    );
}

/// `--targets -` reads the targets from stdin, and a pipe named as a file (`/dev/stdin`)
/// works too: targets are read once to check them and again by the workers, which a pipe
/// allows once (it read as "no targets in this file"). The run file names them as given.
#[test]
fn targets_come_from_stdin_or_a_pipe() {
    use std::io::Write as _;
    let _turn = shared();
    let origin = origin();
    let mut pids = Vec::new();
    let dir = Scratch::new("stdin-targets");
    for (flag, name) in [("--targets", "-"), ("--urls", "/dev/stdin")] {
        let file = dir.path(&format!("run-{}.json", flag.trim_start_matches('-')));
        let mut child = vload()
            .args(["attack", flag, name, "-n", "6", "--no-progress", "-o"])
            .arg(&file)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("vload starts");
        pids.push(child.id());
        let line = if flag == "--targets" {
            format!("GET {}a\n\nGET {}b\n", origin.url(), origin.url())
        } else {
            format!("{}a\n{}b\n", origin.url(), origin.url())
        };
        child
            .stdin
            .take()
            .expect("a pipe")
            .write_all(line.as_bytes())
            .expect("written");
        let o = child.wait_with_output().expect("vload ends");
        assert_eq!(o.status.code(), Some(0), "{flag} {name}: {}", stderr(&o));
        let run = read_run(&file);
        assert_eq!(run.totals.completed, 6, "{flag} {name}");
        let targets = run.plan.targets.expect("targets recorded");
        assert_eq!(targets.sets[0].file, name, "named as given");
        assert_eq!(targets.sets[0].targets, 2);
    }
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            pids.iter()
                .any(|pid| name.starts_with(&format!("vload-targets-{pid}-")))
        })
        .collect();
    assert!(left.is_empty(), "copies removed at exit: {left:?}");
}

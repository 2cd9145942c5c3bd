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

#[test]
fn rate_plans_refuse_what_contradicts_them() {
    refused(
        &["attack", "--rate", "1k:1s,2k:1s", "-d", "5s"],
        "drop -d/--duration",
    );
    refused(
        &["attack", "--rate", "0->1k:1s", "--warmup", "1s"],
        "start the plan with a warm-up stage",
    );
    refused(
        &["attack", "--rate", "1k:1s,2k"],
        "stage 2: '2k' has no duration",
    );
}

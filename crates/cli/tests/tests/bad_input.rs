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
        &["attack", "-n", "5", "--server-stats", "lighttpd", &url],
        "unknown server 'lighttpd': expected one of varnish, nginx, haproxy, squid",
    );
    refused(
        &["attack", "-n", "5", "--server-stats", "nginx", &url],
        "nginx needs the URL of its stub_status page",
    );
    refused(
        &[
            "attack",
            "-n",
            "5",
            "--server-stats",
            "squid:https://127.0.0.1:3128",
            &url,
        ],
        "is not an http:// URL",
    );
    // A source that does not answer: one line naming it, before any request is sent.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/status", closed.local_addr().unwrap());
    drop(closed);
    refused(
        &[
            "attack",
            "-n",
            "5",
            "--server-stats",
            &format!("nginx:{closed_url}"),
            &url,
        ],
        &format!("--server-stats nginx:{closed_url}: cannot connect"),
    );
    refused(
        &[
            "attack",
            "-n",
            "5",
            "--server-stats",
            "haproxy:/nonexistent/admin.sock",
            &url,
        ],
        "--server-stats haproxy:/nonexistent/admin.sock: cannot connect to the socket",
    );
    // The page answers, but it is not stub_status: the origin's Hello World.
    refused(
        &[
            "attack",
            "-n",
            "5",
            "--server-stats",
            &format!("nginx:{url}"),
            &url,
        ],
        "the page is not nginx's stub_status",
    );
    // #58: credentials in a side URL are sent as Basic auth, and no message shows them: not
    // clap's wrapper, not the source's own error.
    for (stats, needle) in [
        (
            "squid:https://admin:s3cret@127.0.0.1:3128",
            "is not an http:// URL",
        ),
        (
            &*format!("nginx:http://admin:s3cret@{}/status", &closed_url[7..]),
            "cannot connect",
        ),
    ] {
        let o = run(
            vload().args(["attack", "-n", "5", "--server-stats", stats, &url]),
            2,
        );
        let err = stderr(&o);
        assert!(
            err.contains(needle) && err.contains("admin:(hidden)@"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "{err}");
    }
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
    assert_eq!(
        origin.stats().requests_total,
        1,
        "nothing was sent but the one read of a page that was not stub_status"
    );
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
        &[
            "attack",
            "-c",
            "5",
            "-r",
            "100",
            "--max-connections",
            "9",
            "http://127.0.0.1:1/",
        ],
        "give --max-connections alone",
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
    // A catalogue's variants and ranges: a bad setting, or a combination the model lacks.
    let catalogue = |flag: &str, value: &str, needle: &str| {
        refused(
            &[
                "attack",
                "--catalogue",
                "10",
                flag,
                value,
                "http://127.0.0.1:1/",
            ],
            needle,
        );
    };
    catalogue(
        "--variants",
        "0",
        "--variants '0' is not a variants setting",
    );
    catalogue("--variants", "4:header", "expected N[:query|:vary]");
    catalogue("--ranges", "30", "--ranges '30' is not a range setting");
    catalogue("--ranges", "30%:middle", "expected SHARE%[:first");
    refused(
        &[
            "attack",
            "--catalogue",
            "10",
            "--variants",
            "4",
            "--crawler",
            "10%",
            "http://127.0.0.1:1/",
        ],
        "--variants and --crawler together",
    );
}

#[test]
fn an_unreachable_server_is_an_error_but_the_run_is_kept() {
    let _turn = shared();
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

/// See #30: input other tools' users type that was silently misread.
#[test]
fn other_tools_spellings_are_never_silently_misread() {
    let dir = Scratch::new("misread");
    for (args, says) in [
        // h2load's -m is streams per connection: it was sent as the method "10".
        (
            vec!["attack", "-m", "10", "http://127.0.0.1:9/"],
            "--http2 --streams 10",
        ),
        // vegeta's single-dash long flags: -output=x.bin wrote a run file named utput=x.bin.
        (
            vec!["attack", "-output=x.bin", "http://127.0.0.1:9/"],
            "-o/--output",
        ),
        (
            vec!["attack", "-header=X-A:1", "http://127.0.0.1:9/"],
            "-H/--header",
        ),
        (
            vec!["attack", "-targets=t.http", "http://127.0.0.1:9/"],
            "--targets",
        ),
        (
            vec!["attack", "-max-workers=4", "http://127.0.0.1:9/"],
            "--max-connections",
        ),
        (
            vec!["attack", "-foo=1", "http://127.0.0.1:9/"],
            "two dashes",
        ),
        // k6's and oha's spellings name vload's, never clap's nearest guess (--vus was
        // "did you mean --urls").
        (
            vec!["attack", "--vus", "10", "http://127.0.0.1:9/"],
            "-c/--connections",
        ),
        (
            vec!["attack", "--rps", "10", "http://127.0.0.1:9/"],
            "-r/--rate",
        ),
        (
            vec!["attack", "--iterations", "10", "http://127.0.0.1:9/"],
            "-n/--requests",
        ),
        (vec!["attack", "-L", "http://127.0.0.1:9/"], "intended send"),
        // An HTTP/1.1 client for an HTTP/2 attack was accepted and ignored.
        (
            vec![
                "attack",
                "--http2",
                "--http1-client",
                "hyper",
                "http://127.0.0.1:9/",
            ],
            "--http2-client",
        ),
    ] {
        let o = run(vload().current_dir(&dir.0).args(&args), 2);
        let err = stderr(&o);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(
        std::fs::read_dir(&dir.0).unwrap().next().is_none(),
        "nothing was written"
    );
}

/// What is harmless in another tool's spelling runs, with a note: wrk2's `-R` is `-r`,
/// wrk's `--latency` changes nothing, and `-c` beside a rate caps the connections.
#[test]
fn harmless_spellings_of_other_tools_run_with_a_note() {
    let origin = origin();
    let dir = Scratch::new("spellings");
    let file = dir.0.join("run.json");
    let o = run(
        vload().args([
            "attack",
            "-R",
            "200",
            "-c",
            "3",
            "--latency",
            "-d",
            "1s",
            "--no-progress",
            "-o",
            file.to_str().unwrap(),
            &origin.url(),
        ]),
        0,
    );
    let err = stderr(&o);
    assert!(
        err.contains("-c 3 caps the connections (--max-connections 3)"),
        "{err}"
    );
    assert!(err.contains("--latency is wrk's"), "{err}");
    let run = read_run(&file);
    assert_eq!(run.plan.mode, vload_schema::Mode::Open);
    assert_eq!(run.plan.rate_per_s, Some(200.0));
    assert_eq!(run.plan.connections, 3);
}

/// See #30: `http://user:secret@host/` sent `host: user:secret@host` on every request and
/// stored the password twice in the run file; a non-ASCII path went on the wire raw.
#[test]
fn credentials_in_a_url_become_basic_auth_and_never_reach_the_run_file() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("userinfo");
    let out = dir.path("run.json");
    let port = origin.addr().port();
    let url = format!("http://user:s%40cret@127.0.0.1:{port}/café");
    let o = run(
        vload()
            .args(["attack", "-n", "3", "-c", "1", "--no-progress", "-o"])
            .arg(&out)
            .arg(&url),
        0,
    );
    let stats = origin.stats();
    assert_eq!(
        stats.requests_by_path.get("/caf%C3%A9"),
        Some(&3),
        "{stats:?}"
    );
    let host = format!("127.0.0.1:{port}");
    assert_eq!(stats.requests_by_host.get(&host), Some(&3), "{stats:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("cret") && !text.contains("user:"), "{text}");
    assert!(
        text.contains("Basic (redacted)"),
        "the header is named, its value not"
    );
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!said.contains("cret"), "{said}");
}

/// #48: other tools' spellings that vload once misread with exit 0 (hey's `-h2` printed the
/// help, `-o csv` wrote a run file named csv, `--body @FILE` sent the literal text) and hints
/// that named one tool where two use the letter: each refused in one line naming vload's flag.
#[test]
fn other_tools_spellings_are_named_not_misread() {
    let url = "http://127.0.0.1:1/";
    for (args, needle) in [
        (vec!["attack", "-h2", url], "--http2"),
        (vec!["attack", "--h2", url], "--http2"),
        (vec!["attack", "--h1", url], "HTTP/1.1 by default"),
        (vec!["attack", "-o", "csv", url], "not a format"),
        (vec!["attack", "--output", "json", url], "give ./json"),
        (
            vec!["attack", "--body", "@payload.json", url],
            "--body-file payload.json",
        ),
        (vec!["attack", "-p", "5", url], "--streams"),
        (vec!["attack", "-s", "5", url], "--timeout"),
        (vec!["attack", "-D", "exp", url], "--arrival poisson"),
        (vec!["attack", "--rps", "100", url], "h2load's --rps"),
        // #46: oha's spelling of HTTP/3, and a guess at vload's.
        (vec!["attack", "--http-version", "3", url], "--http3"),
        (vec!["attack", "--h3", url], "--http3"),
        (vec!["attack", "--http3", url], "give an https:// URL"),
        (
            vec![
                "attack",
                "--http3",
                "--http2-client",
                "lean",
                "https://127.0.0.1:1/",
            ],
            "--http3 speaks HTTP/3",
        ),
        (vec!["attack", "--streams", "4", url], "--http2 or --http3"),
    ] {
        refused(&args, needle);
    }
    assert!(!std::path::Path::new("csv").exists() && !std::path::Path::new("json").exists());
}

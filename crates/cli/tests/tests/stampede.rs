//! #59: `--stampede` against an origin with no cache in front: every request of an event is
//! a fetch the origin counts, with no cache word on any answer; and bad flags are one line.

use super::util::*;

#[test]
fn without_a_cache_every_request_of_a_stampede_reaches_the_origin() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("stampede");
    let file = dir.path("run.json");
    let o = run(
        vload()
            .args(["attack", "-r", "10", "-d", "5s", "--stampede", "40"])
            .args(["--stampede-every", "1s"])
            .arg("--stampede-origin")
            .arg(format!("{}stats", origin.url()))
            .args(["--no-progress", "-o"])
            .arg(&file)
            .arg(origin.url()),
        0,
    );
    let s = read_run(&file).stampede.expect("a stampede record");
    assert!((2..=3).contains(&s.events.len()), "{:?}", s.events);
    for e in &s.events {
        assert!(e.balances(), "{e:?}");
        assert_eq!((e.sent, e.unclassified), (40, 40), "no cache word: {e:?}");
        assert_eq!(e.origin_fetches, Some(40), "{e:?}");
        assert!(e.spread_ns < 1_000_000_000, "{e:?}");
    }
    // And the one request that stored the object before the first expiry.
    let counted = origin.stats().requests_by_path["/stampede?cache=max-age=1"];
    assert_eq!(counted, 40 * s.events.len() as u64 + 1);
    let report = stdout(&o);
    assert!(
        report.contains("Stampede") && report.contains("40.00 by the origin's count"),
        "{report}"
    );
}

#[test]
fn bad_stampede_flags_are_one_line() {
    for (args, needle) in [
        (&["--stampede", "0"][..], "--stampede 0: give 1 to 10000"),
        (
            &["--stampede", "5", "--stampede-every", "1500ms"],
            "give whole seconds",
        ),
        (
            &["--stampede", "5", "--stampede-target", "hot"],
            "is not a request target",
        ),
        (&["--stampede-every", "2s"], "--stampede"),
    ] {
        let o = run(
            vload()
                .args(["attack", "-n", "1"])
                .args(args)
                .arg("http://127.0.0.1:9/"),
            2,
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let o = run(
        vload()
            .args(["attack", "-n", "1", "--stampede", "5", "--insecure"])
            .arg("https://127.0.0.1:9/"),
        2,
    );
    assert!(stderr(&o).contains("plain HTTP/1.1"), "{}", stderr(&o));
}

/// A server that accepts and never answers holds no stampede past the run: each event's
/// requests end unfinished when the run ends or their bound passes, and the file is written.
#[test]
fn a_silent_server_holds_no_stampede_past_the_run() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let dir = Scratch::new("stampede-silent");
    let file = dir.path("run.json");
    let began = std::time::Instant::now();
    let o = run(
        vload()
            .args(["attack", "-c", "1", "-d", "2500ms", "--timeout", "1s"])
            .args([
                "--stampede",
                "20",
                "--stampede-every",
                "2s",
                "--stampede-on",
                "purge",
            ])
            .args(["--no-progress", "-o"])
            .arg(&file)
            .arg(&url),
        2,
    );
    assert!(
        began.elapsed() < std::time::Duration::from_secs(20),
        "{}",
        stderr(&o)
    );
    let s = read_run(&file).stampede.expect("a stampede record");
    assert_eq!(s.events.len(), 1, "{:?}", s.events);
    let e = &s.events[0];
    assert!(e.balances(), "{e:?}");
    assert_eq!(e.unfinished + e.errors, 20, "{e:?}");
    drop(listener);
}

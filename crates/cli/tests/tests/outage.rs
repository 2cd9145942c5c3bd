//! #59: `--outage` and `--slowdown` against `vload origin` with no cache in front: each phase
//! is a stage of the run with the origin's state and its own count of requests; and bad
//! flags, or an origin that does not take the plan, are one line before anything is sent.

use super::util::*;

#[test]
fn each_phase_of_the_origins_plan_is_a_stage_of_the_run() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("outage");
    let file = dir.path("run.json");
    let o = run(
        vload()
            .args(["attack", "-r", "50", "-d", "5s", "--outage", "0s-1s:503"])
            .args(["--slowdown", "3s-4s:100ms", "--origin"])
            .arg(origin.url())
            .args(["--no-progress", "-o"])
            .arg(&file)
            .arg(origin.url()),
        0,
    );
    let run = read_run(&file);
    let states: Vec<_> = run
        .stages
        .iter()
        .map(|s| s.origin_state.as_deref())
        .collect();
    assert_eq!(
        states,
        [Some("503"), Some("up"), Some("slow:100ms"), Some("up")],
        "{:?}",
        run.stages
    );
    // An outage from the start: the origin's first phase is the outage itself (no instant
    // of up before it). A request sent late (a busy machine) may cross an edge: the bounds
    // leave it room, and a stage matched to the wrong phase would be 50 requests off.
    let down = &run.stages[0];
    assert!(
        down.status_codes.get(&503).is_some_and(|n| *n >= 35),
        "{down:?}"
    );
    let slow = &run.stages[2];
    assert!(slow.response.moments.mean_ns >= 50e6, "{slow:?}");
    // With no cache, the origin received every request: its count of each phase is the
    // stage's, but for requests its clock puts on the other side of an edge.
    let mut counted = 0;
    for s in &run.stages {
        let theirs = s.origin_requests.expect("the origin's count");
        assert!(theirs.abs_diff(s.completed) <= 2 + s.completed / 5, "{s:?}");
        counted += theirs;
    }
    assert_eq!(counted, run.totals.completed);
    let report = stdout(&o);
    assert!(
        report.contains("origin req") && report.contains("slow:100ms"),
        "{report}"
    );
}

#[test]
fn bad_outage_flags_are_one_line() {
    for (args, needle) in [
        (&["--outage", "1s-2s"][..], "--origin"),
        (
            &["--origin", "http://127.0.0.1:9/", "-r", "10", "-d", "3s"],
            "give one of them",
        ),
        (
            &[
                "--outage",
                "1s-2s",
                "--origin",
                "http://127.0.0.1:9/",
                "-c",
                "1",
                "-d",
                "3s",
            ],
            "open loop",
        ),
        (
            &[
                "--outage",
                "2s-4s",
                "--origin",
                "http://127.0.0.1:9/",
                "-r",
                "10",
                "-d",
                "3s",
            ],
            "past the measured window",
        ),
        (
            &[
                "--outage",
                "1s-2s:down",
                "--origin",
                "http://127.0.0.1:9/",
                "-r",
                "10",
                "-d",
                "3s",
            ],
            "no origin state",
        ),
    ] {
        let o = run(
            vload().arg("attack").args(args).arg("http://127.0.0.1:9/"),
            2,
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        // clap's own message for a missing flag has a usage line; vload's are one line.
        if args[0] != "--outage" || args.len() > 2 {
            assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        }
    }
}

/// An origin that never answers the plan's post stops the attack within the post's bound,
/// before anything is sent: a plan it never heard of would make every phase a lie.
#[test]
fn an_origin_that_does_not_take_the_plan_stops_the_attack_before_it_starts() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}/", silent.local_addr().unwrap());
    let target = super::util::origin();
    let dir = Scratch::new("outage-silent");
    let file = dir.path("run.json");
    let began = std::time::Instant::now();
    let o = run(
        vload()
            .args([
                "attack", "-r", "10", "-d", "3s", "--outage", "1s-2s", "--origin",
            ])
            .arg(&origin)
            .args(["--no-progress", "-o"])
            .arg(&file)
            .arg(target.url()),
        2,
    );
    assert!(began.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        stderr(&o).contains("did not take the plan"),
        "{}",
        stderr(&o)
    );
    assert_eq!(target.stats().requests_total, 0, "nothing was sent");
    assert!(!file.exists());
    drop(silent);
}

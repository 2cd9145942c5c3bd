//! #59: stampedes through a real varnishd. With its default request coalescing (the waiting
//! list, no grace: `vcl/catalogue.vcl`), 200 requests at each expiry of one object, or
//! right after a purge of it, cost the origin exactly one fetch an event; with coalescing
//! defeated (`vcl/stampede-pass.vcl`), 200. vload's counts equal the origin's own.

use std::time::Duration;

use vload_origin::OriginConfig;

use super::stack::{Stack, have_varnish, read_run, shared, vload};

/// A stampede of `n` through `vcl` after `on`, `events` of them: the run's record. On expiry
/// the object's max-age is 1 s and an event comes that plus a second's margin after the last
/// fetch (`PAST_EXPIRY`): about 2.1 s apart, each event's reads bounded by 1 s. After a purge
/// the period is 2 s: each event's reads get 1 s, which a machine beside stress-ng needs
/// (at 1 s, a bound of 500 ms left 57 of 200 passes unfinished).
fn stampede(stack: &Stack, n: u64, on: &str, events: u32) -> vload_schema::StampedeRecord {
    let (every, spacing) = if on == "expiry" {
        ("1s", 2.1)
    } else {
        ("2s", 2.0)
    };
    // After a purge the events come on the period: half of one to spare, so the last gets
    // its full second of reads. On expiry they come later on a busy machine, so a fifth more:
    // the tests read the first `events`, and an event cut short by the run's end is counted
    // but not judged.
    let spare = if on == "expiry" { 1.2 } else { 1.0 };
    let duration = format!("{:.1}s", (f64::from(events) * spare + 0.5) * spacing);
    let out = stack.dir.join(format!("stampede-{on}.json"));
    let stats = format!("{}stats", stack.origin.url());
    vload(&[
        "attack",
        "-r",
        "20",
        "-d",
        &duration,
        "--stampede",
        &n.to_string(),
        "--stampede-every",
        every,
        "--stampede-on",
        on,
        "--stampede-origin",
        &stats,
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    read_run(&out).stampede.expect("a stampede record")
}

fn slow_origin() -> OriginConfig {
    OriginConfig {
        threads: Some(1),
        // Long enough that every request of an event arrives while the fetch is under way.
        delay: Some(Duration::from_millis(50)),
        ..OriginConfig::loopback()
    }
}

#[test]
fn a_coalescing_cache_fetches_once_an_event_after_expiry_or_purge() {
    if !have_varnish("a_coalescing_cache_fetches_once_an_event_after_expiry_or_purge") {
        return;
    }
    let _turn = shared();
    let stack = Stack::with_origin("catalogue.vcl", "64m", slow_origin());
    let mut fetched = 0;
    // Ten events at expiry, as #59 asks; three after a purge (no clock to wait for).
    for (on, events) in [("expiry", 10), ("purge", 3)] {
        let s = stampede(&stack, 200, on, events);
        assert!(s.events.len() >= events as usize, "{on}: {:?}", s.events);
        for e in &s.events[..events as usize] {
            assert!(e.balances(), "{e:?}");
            assert_eq!(e.sent, 200, "{e:?}");
            assert_eq!(e.origin_fetches, Some(1), "{on}: one fetch an event: {e:?}");
            assert_eq!((e.leaders, e.waiters), (1, 199), "{on}: {e:?}");
            assert_eq!(e.errors + e.unfinished + e.unclassified, 0, "{e:?}");
        }
        fetched += s.events.len() as u64;
        let leaders: u64 = s.events.iter().map(|e| e.leaders).sum();
        assert_eq!(s.leaders.as_ref().unwrap().moments.n, leaders);
        // The waiters waited for the leader's fetch: none is faster than the origin's 50 ms
        // delay less the event's spread (a waiter written later waits that much less: 39.98
        // ms once beside stress-ng), a few ms allowed for the clocks.
        let waiters = s.waiters.as_ref().unwrap();
        let spread = s.events.iter().map(|e| e.spread_ns).max().unwrap_or(0);
        assert!(
            waiters.moments.min_ns + spread >= 45_000_000,
            "spread {spread} ns: {:?}",
            waiters.moments
        );
    }
    // The origin's own count over both modes' objects (max-age 1 s on expiry, 2 s after a
    // purge): the expiry mode's first fetch stored its object, then one fetch an event.
    let origin = stack.origin.stats();
    assert_eq!(
        origin.requests_by_path["/stampede?cache=max-age=1"]
            + origin.requests_by_path["/stampede?cache=max-age=2"],
        fetched + 1
    );
}

#[test]
fn a_cache_that_passes_the_object_sends_every_request_to_the_origin() {
    if !have_varnish("a_cache_that_passes_the_object_sends_every_request_to_the_origin") {
        return;
    }
    let _turn = shared();
    let stack = Stack::with_origin("stampede-pass.vcl", "64m", slow_origin());
    let s = stampede(&stack, 200, "purge", 3);
    assert!(s.events.len() >= 3, "{:?}", s.events);
    for e in &s.events {
        assert_eq!(e.origin_fetches, Some(200), "{e:?}");
        assert_eq!((e.leaders, e.waiters), (200, 0), "{e:?}");
    }
    let events = s.events.len() as u64;
    let origin = stack.origin.stats();
    assert_eq!(
        origin.requests_by_path["/stampede?cache=max-age=2"],
        200 * events
    );
}

//! #59: stampedes through a real varnishd. With its default request coalescing (the waiting
//! list, no grace: `vcl/catalogue.vcl`), 200 requests at each expiry of one object, or
//! right after a purge of it, cost the origin exactly one fetch an event; with coalescing
//! defeated (`vcl/stampede-pass.vcl`), 200. vload's counts equal the origin's own.

use std::time::Duration;

use vload_origin::OriginConfig;

use super::stack::{Stack, have_varnish, read_run, shared, vload};

/// A stampede of `n` every 2 s through `vcl`, after `on`: the run's record.
fn stampede(stack: &Stack, n: u64, on: &str) -> vload_schema::StampedeRecord {
    let out = stack.dir.join(format!("stampede-{on}.json"));
    let stats = format!("{}stats", stack.origin.url());
    vload(&[
        "attack",
        "-r",
        "20",
        "-d",
        "7s",
        "--stampede",
        &n.to_string(),
        "--stampede-every",
        "2s",
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
    for on in ["expiry", "purge"] {
        let s = stampede(&stack, 200, on);
        assert!(s.events.len() >= 2, "{on}: {:?}", s.events);
        for e in &s.events {
            assert!(e.balances(), "{e:?}");
            assert_eq!(e.sent, 200, "{e:?}");
            assert_eq!(e.origin_fetches, Some(1), "{on}: one fetch an event: {e:?}");
            assert_eq!((e.leaders, e.waiters), (1, 199), "{on}: {e:?}");
            assert_eq!(e.errors + e.unfinished + e.unclassified, 0, "{e:?}");
        }
        fetched += s.events.len() as u64;
        assert_eq!(s.leaders.as_ref().unwrap().moments.n, s.events.len() as u64);
        // The waiters waited for the leader's fetch: none is faster than the origin's delay.
        let waiters = s.waiters.as_ref().unwrap();
        assert!(
            waiters.moments.min_ns >= 40_000_000,
            "{:?}",
            waiters.moments
        );
    }
    // The origin's own count: the expiry mode's first fetch stored the object, then one
    // fetch an event.
    let origin = stack.origin.stats();
    assert_eq!(
        origin.requests_by_path["/stampede?cache=max-age=2"],
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
    let s = stampede(&stack, 200, "purge");
    assert!(s.events.len() >= 2, "{:?}", s.events);
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

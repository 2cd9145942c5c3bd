//! #59: stampedes through nginx. `proxy_cache_lock` lets one request populate a *new* element
//! and the others poll for it every 500 ms; an expired one is refetched by every request
//! that finds it expired (measured: 50 of 50, lock on or off). vload's leaders equal the
//! origin's own count of the object, event by event.

use std::path::Path;
use std::time::Duration;

use vload_origin::OriginConfig;
use vload_schema::StampedeRecord;

use super::stack::{Cache, have, read_run, vload};

/// A 5 s attack with a stampede of 50 every 2 s, `on` expiry or new, through `cache`.
fn stampede(cache: &Cache, on: &str, out: &Path) -> StampedeRecord {
    let stats = format!("{}stats", cache.origin.url());
    vload(&[
        "attack",
        "-r",
        "20",
        "-d",
        "5s",
        "--stampede",
        "50",
        "--stampede-every",
        "2s",
        "--stampede-on",
        on,
        "--stampede-origin",
        &stats,
        "-o",
        out.to_str().unwrap(),
        &cache.url(),
    ]);
    let s = read_run(out).stampede.expect("a stampede record");
    assert!(!s.events.is_empty(), "{on}: {:?}", s.events);
    assert!(s.events.iter().all(|e| e.balances()), "{:?}", s.events);
    s
}

fn origin() -> OriginConfig {
    OriginConfig {
        threads: Some(1),
        delay: Some(Duration::from_millis(50)),
        ..OriginConfig::loopback()
    }
}

#[test]
fn nginx_coalesces_a_new_object_by_polling_and_refetches_an_expired_one() {
    if !have(
        "nginx",
        "nginx_coalesces_a_new_object_by_polling_and_refetches_an_expired_one",
    ) {
        return;
    }
    let cache = Cache::start_with("nginx", 64, origin(), &[("CACHE_LOCK", "on")]);
    // An expired object: every request that finds it expired goes to the origin.
    let s = stampede(&cache, "expiry", &cache.dir.join("expiry-on.json"));
    for e in &s.events {
        assert_eq!(e.origin_fetches, Some(50), "expiry, lock on: {e:?}");
        assert_eq!(e.leaders, 50, "expiry, lock on: {e:?}");
    }
    // A new one: one fetch, and the 49 others wait for the lock's next poll (500 ms).
    let s = stampede(&cache, "new", &cache.dir.join("new-on.json"));
    for e in &s.events {
        assert_eq!(e.origin_fetches, Some(1), "new, lock on: {e:?}");
        assert_eq!((e.leaders, e.waiters), (1, 49), "new, lock on: {e:?}");
    }
    let waiters = s.waiters.expect("the waiters' latencies");
    // A lower bound only: a busy machine can make a waiter miss a poll, never beat one.
    assert!(
        waiters.moments.min_ns >= 400_000_000,
        "new, lock on: the waiters wait for the 500 ms poll: {:?}",
        waiters.moments
    );
    drop(cache);
    let cache = Cache::start_with("nginx", 64, origin(), &[]);
    let s = stampede(&cache, "new", &cache.dir.join("new-off.json"));
    for e in &s.events {
        assert_eq!(e.origin_fetches, Some(50), "new, lock off: {e:?}");
        assert_eq!(e.leaders, 50, "new, lock off: {e:?}");
    }
}

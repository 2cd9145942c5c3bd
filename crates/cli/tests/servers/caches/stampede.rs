//! #59: a stampede at each expiry through nginx, `proxy_cache_lock` on and off: nginx's lock
//! lets one request populate a *new* element, and an expired one is refetched by every
//! request that finds it expired (measured: 50 of 50 either way). vload's leaders equal the
//! origin's own count of the object, event by event.

use std::time::Duration;

use vload_origin::OriginConfig;

use super::stack::{Cache, have, read_run, vload};

#[test]
fn nginx_refetches_an_expired_object_for_every_request_lock_or_not() {
    if !have(
        "nginx",
        "nginx_refetches_an_expired_object_for_every_request_lock_or_not",
    ) {
        return;
    }
    for lock in ["on", "off"] {
        let origin = OriginConfig {
            threads: Some(1),
            delay: Some(Duration::from_millis(50)),
            ..OriginConfig::loopback()
        };
        let cache = Cache::start_with("nginx", 64, origin, lock);
        let out = cache.dir.join(format!("stampede-{lock}.json"));
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
            "--stampede-origin",
            &stats,
            "-o",
            out.to_str().unwrap(),
            &cache.url(),
        ]);
        let s = read_run(&out).stampede.expect("a stampede record");
        assert!(!s.events.is_empty(), "lock {lock}: {:?}", s.events);
        for e in &s.events {
            assert!(e.balances(), "{e:?}");
            assert_eq!(e.origin_fetches, Some(50), "lock {lock}: {e:?}");
            assert_eq!(e.leaders, 50, "lock {lock}: {e:?}");
        }
    }
}

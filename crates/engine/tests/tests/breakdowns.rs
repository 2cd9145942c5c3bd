//! Breakdowns partition the measured window: every request in exactly one group of each
//! dimension, whatever the dimension, failures included.

use std::io::Write as _;
use std::path::PathBuf;

use vload_engine::{Pick, TargetFormat, TargetPlan, TargetSet, UrlClass};
use vload_schema::{Breakdown, RunFile};

use super::util::*;

fn write(name: &str, text: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("vload-breakdowns-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

fn by<'a>(run: &'a RunFile, name: &str) -> &'a Breakdown {
    run.breakdowns
        .iter()
        .find(|b| b.by == name)
        .unwrap_or_else(|| panic!("no breakdown by {name}"))
}

/// Each group's name and requests.
fn groups(b: &Breakdown) -> Vec<(&str, u64)> {
    b.groups
        .iter()
        .map(|g| (g.name.as_str(), g.requests))
        .collect()
}

fn class(name: &str, pattern: &str) -> UrlClass {
    UrlClass {
        name: name.into(),
        pattern: regex::Regex::new(pattern).unwrap(),
    }
}

on_both_drivers! {
    #[test]
    fn a_plain_run_is_partitioned_by_status_class_and_cache_state() {
        let origin = origin();
        let mut p = plan(origin.addr(), "/x?header=Cache-Status:Edge;hit", closed(2), count(100));
        p.threads = 2;
        let run = attack(p);
        assert_eq!(groups(by(&run, "status")), [("2xx", 100)]);
        assert_eq!(groups(by(&run, "cache")), [("hit", 100)]);
        assert_eq!(run.cache.by_source.cache_status, 100);
        assert_eq!(groups(by(&run, "size")), [("< 1 KiB", 100)]);
        assert_eq!(run.breakdowns.len(), 3, "no target, no breakdown by target");
        let all = &by(&run, "status").groups[0];
        assert_eq!(all.latency.moments.n, run.latency.primary().moments.n);
    }
}

#[test]
fn a_mix_is_partitioned_by_host_class_set_status_and_cache_state() {
    let origin = origin();
    // Virtual hosts by Host header (the targets all go to the origin's address).
    let base = format!("http://{}", origin.addr());
    let hot = write(
        "hot.txt",
        &format!(
            "GET {base}/img/1?header=X-Cache:HIT\nHost: a.test\n\nGET {base}/img/2?header=X-Cache:STALE&size=2000\nHost: b.test\n"
        ),
    );
    let cold = write(
        "cold.txt",
        &format!("GET {base}/api/1?header=X-Cache:PASS&status=503\nHost: a.test\n"),
    );
    let mut p = plan(origin.addr(), "/", closed(2), count(400));
    p.targets = Some(TargetPlan {
        sets: vec![
            TargetSet {
                path: hot.clone(),
                format: TargetFormat::Vegeta,
                weight: 3,
            },
            TargetSet {
                path: cold.clone(),
                format: TargetFormat::Vegeta,
                weight: 1,
            },
        ],
        pick: Pick::RoundRobin,
        passes: None,
        skip_bad_lines: false,
    });
    p.classes = vec![class("images", "^/img/"), class("api", "^/api/")];
    let run = attack(p);
    assert_eq!(run.totals.completed, 400);
    // Round robin 3:1 and each worker walks the hot file in order: 150 of each hot URL.
    assert_eq!(groups(by(&run, "host")), [("a.test", 250), ("b.test", 150)]);
    assert_eq!(groups(by(&run, "class")), [("images", 300), ("api", 100)]);
    let (hot, cold) = (hot.display().to_string(), cold.display().to_string());
    assert_eq!(
        groups(by(&run, "set")),
        [(hot.as_str(), 300), (cold.as_str(), 100)]
    );
    assert_eq!(groups(by(&run, "status")), [("2xx", 300), ("5xx", 100)]);
    assert_eq!(
        groups(by(&run, "cache")),
        [("hit", 150), ("stale", 150), ("pass", 100)]
    );
    // Stale counts as a hit, pass as a miss, in the run's own counts.
    assert_eq!((run.cache.hit, run.cache.miss), (300, 100));
    let api = &by(&run, "class").groups[1];
    assert_eq!((api.status_classes.s5xx, api.cache.pass), (100, 100));
    assert_eq!(api.latency.moments.n, 100);
    assert_eq!(by(&run, "cache").groups[0].cache.hit_ratio(), Some(1.0));
    // Size is a margin of the same cells as status and cache: each size class holds the
    // responses of its bytes whatever their status and cache state, with their phases.
    let size = by(&run, "size");
    assert_eq!(groups(size), [("< 1 KiB", 250), ("1-10 KiB", 150)]);
    assert_eq!(size.groups[1].cache.stale, 150);
    assert_eq!(
        (size.groups[0].status_classes.s5xx, size.groups[0].cache.hit),
        (100, 150)
    );
    for g in &size.groups {
        let phases = g.first_byte.as_ref().map(|p| p.moments.n);
        assert_eq!(phases, Some(g.requests), "{}", g.name);
        assert_eq!(g.latency.moments.n, g.requests, "{}", g.name);
    }
}

#[test]
fn passes_each_get_a_group() {
    let origin = origin();
    let list: String = (0..10).map(|i| format!("/p/{i}\n")).collect();
    let mut p = plan(origin.addr(), "/", closed(2), count(1));
    p.stop.requests = None;
    p.targets = Some(TargetPlan {
        sets: vec![TargetSet {
            path: write("list.txt", &list),
            format: TargetFormat::Urls,
            weight: 1,
        }],
        pick: Pick::Sequential,
        passes: Some(3),
        skip_bad_lines: false,
    });
    let run = attack(p);
    assert_eq!(groups(by(&run, "pass")), [("1", 10), ("2", 10), ("3", 10)]);
    assert!(
        run.breakdowns.iter().all(|b| b.by != "host"),
        "one host: no breakdown by host"
    );
}

#[test]
fn requests_that_never_had_a_target_have_a_group_of_their_own() {
    // Nothing listens: every request fails at its connect, before a target is drawn.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut p = plan(port, "/", closed(1), count(20));
    p.targets = Some(TargetPlan {
        sets: vec![TargetSet {
            path: write("few.txt", "/img/1\n"),
            format: TargetFormat::Urls,
            weight: 1,
        }],
        pick: Pick::Sequential,
        passes: None,
        skip_bad_lines: false,
    });
    p.classes = vec![class("images", "^/img/")];
    let run = attack(p);
    assert_eq!(run.totals.completed, 20);
    assert_eq!(groups(by(&run, "class")), [("(no target)", 20)]);
    assert_eq!(groups(by(&run, "status")), [("(failed)", 20)]);
    assert_eq!(by(&run, "cache").groups[0].errors, 20);
}

//! #48: a request's phases and the proxy's own share, through a real varnishd in front of a
//! 10 ms origin, checked against varnishlog's timestamps.

use std::process::Command;
use std::time::Duration;

use vload_origin::OriginConfig;

use super::stack::{Stack, have_varnish, read_run, shared, vload};

/// Varnish's own time for each miss, from its log: from the request's start until its
/// response was ready to deliver (`Process`), less the backend's time (`Bereq` to `Beresp`).
fn varnish_added_per_miss(stack: &Stack) -> Vec<f64> {
    let out = Command::new("varnishlog")
        .arg("-n")
        .arg(stack.name())
        .args(["-d", "-g", "request", "-i", "Timestamp,VCL_call"])
        .output()
        .expect("varnishlog runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut added = Vec::new();
    for group in text.split("*   << Request").skip(1) {
        let stamp = |prefix: &str, name: &str| {
            group.lines().find_map(|line| {
                let rest = line.strip_prefix(prefix)?.trim_start();
                let rest = rest.strip_prefix("Timestamp")?.trim_start();
                let rest = rest.strip_prefix(name)?.strip_prefix(':')?;
                let fields: Vec<f64> = rest
                    .split_whitespace()
                    .map(|f| f.parse().unwrap())
                    .collect();
                Some(fields)
            })
        };
        let missed = group
            .lines()
            .any(|l| l.starts_with("- ") && l.trim_end().ends_with("MISS"));
        if !missed {
            continue;
        }
        let process = stamp("- ", "Process").expect("a Process timestamp");
        let bereq = stamp("-- ", "Bereq").expect("a Bereq timestamp");
        let beresp = stamp("-- ", "Beresp").expect("a Beresp timestamp");
        added.push(process[1] - (beresp[0] - bereq[0]));
    }
    added
}

/// A figure for whoever runs the test with --nocapture.
#[allow(clippy::print_stderr, reason = "the measured figures, for the record")]
fn say(text: &str) {
    eprintln!("{text}");
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
fn misses_split_into_the_origins_time_and_the_proxys_as_varnishlog_says() {
    if !have_varnish("misses_split_into_the_origins_time_and_the_proxys_as_varnishlog_says") {
        return;
    }
    let _turn = shared();
    let origin = OriginConfig {
        threads: Some(1),
        delay: Some(Duration::from_millis(10)),
        ..OriginConfig::loopback()
    };
    let stack = Stack::with_origin("hello.vcl", "256m", origin);
    let urls = stack.dir.join("urls.txt");
    // 100 objects of 40 KB, each asked three times: 100 misses, then 200 hits.
    let list: String = (0..100).map(|i| format!("/obj/{i}?size=40000\n")).collect();
    std::fs::write(&urls, list).unwrap();
    let out = stack.dir.join("phases.json");
    let report = vload(&[
        "attack",
        "-c",
        "2",
        "--urls",
        urls.to_str().unwrap(),
        "--passes",
        "3",
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    assert_eq!((run.cache.hit, run.cache.miss), (200, 100));
    let l = &run.latency;
    // Every response has its phases, adding up to its service time.
    let (first_byte, transfer) = (l.first_byte.as_ref().unwrap(), l.transfer.as_ref().unwrap());
    assert_eq!((first_byte.moments.n, transfer.moments.n), (300, 300));
    let sum = first_byte.moments.sum_ns + transfer.moments.sum_ns;
    assert_eq!(sum, l.service.moments.sum_ns);
    // The origin's time on the misses only: a hit carries the Server-Timing stored with the
    // object, and the origin did nothing for it.
    let origin = l.origin.as_ref().expect("the origin's time");
    let added = l.proxy_added.as_ref().expect("the proxy's share");
    assert_eq!((origin.moments.n, added.moments.n), (100, 100));
    assert_eq!(run.plan.server_timing.as_deref(), Some("app"));
    assert!(origin.moments.min_ns >= 10_000_000, "{:?}", origin.moments);
    let cache = run.breakdowns.iter().find(|b| b.by == "cache").unwrap();
    let hit = cache.groups.iter().find(|g| g.name == "hit").unwrap();
    assert_eq!(hit.first_byte.as_ref().unwrap().moments.n, 200);
    // Varnish's own share of each miss, from its log, is what vload's measure contains:
    // vload's is Varnish's plus the loopback both ways and the origin's time outside its
    // handler, so it is never less (per request, hence at the median).
    let varnish = varnish_added_per_miss(&stack);
    assert_eq!(varnish.len(), 100, "varnishlog's misses");
    let varnish_p50 = median(varnish) * 1e9;
    let h = added.histogram.decode().unwrap();
    let vload_p50 = added.moments.clamp(h.value_at_quantile(0.5)) as f64;
    say(&format!(
        "proxy share of a miss, p50: vload {vload_p50:.0} ns, Varnish's own {varnish_p50:.0} ns"
    ));
    assert!(
        vload_p50 >= varnish_p50 * 0.995,
        "vload's proxy share p50 {vload_p50} ns below Varnish's own {varnish_p50} ns"
    );
    // And the origin's time was taken off each miss, no more: the proxy's share lies at
    // least the origin's 10 ms below the misses' wait for the first byte (exact whatever the
    // machine does; how far above Varnish's own it lies is the loopback and the client's
    // wake-ups: 1.7 ms beside a browser test on two cores, 7.3 ms beside stress-ng).
    let miss = cache.groups.iter().find(|g| g.name == "miss").unwrap();
    let waits = miss.first_byte.as_ref().unwrap();
    let h = waits.histogram.decode().unwrap();
    let miss_p50 = waits.moments.clamp(h.value_at_quantile(0.5)) as f64;
    assert!(
        vload_p50 <= miss_p50 - 10e6 + miss_p50 * 0.002,
        "vload's proxy share p50 {vload_p50} ns, the misses' wait {miss_p50} ns"
    );
    let text = String::from_utf8_lossy(&report.stdout);
    for row in ["Phases", "Origin time", "Proxy added", "Hits alone"] {
        assert!(text.contains(row), "{row}: {text}");
    }
}

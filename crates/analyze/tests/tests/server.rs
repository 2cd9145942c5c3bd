use vload_analyze::compare::{Metric, Verdict};
use vload_schema::{CommonCounters, ProcessRecord, RunFile, ServerRecord, StatsRecord};

use super::util::*;

/// A run whose Varnish counted `hits` of `requests` and whose server used `cpu_s`.
fn with_server(mut run: RunFile, requests: u64, hits: u64, cpu_s: f64) -> RunFile {
    let counters = [
        ("client_req", requests),
        ("cache_hit", hits),
        ("cache_miss", requests - hits),
        ("threads_limited", 0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let per_interval = cpu_s / run.intervals.len() as f64;
    for interval in &mut run.intervals {
        interval.server_cpu_s = Some(per_interval * (0.98 + 0.04 * interval.start_s.sin().abs()));
    }
    run.server = Some(ServerRecord {
        stats: Some(StatsRecord {
            source: "varnish".into(),
            address: "v".into(),
            covers: "measured".into(),
            common: vload_schema::varnish_common(&counters),
            counters,
            gauges: Default::default(),
            layout: "counters".into(),
            version: None,
            troubles: Vec::new(),
        }),
        process: Some(ProcessRecord {
            pid: 1,
            name: "varnishd".into(),
            processes: 2,
            user_s: cpu_s * 0.7,
            system_s: cpu_s * 0.3,
        }),
    });
    run
}

/// Sets one of Varnish's counters in a run from [`with_server`], as vload would have
/// recorded it: the common counters and troubles follow.
fn set_counter(run: &mut RunFile, name: &str, value: u64) {
    let stats = run.server.as_mut().unwrap().stats.as_mut().unwrap();
    stats.counters.insert(name.into(), value);
    stats.common = vload_schema::varnish_common(&stats.counters);
    stats.troubles = vload_schema::troubles(&stats.counters, vload_schema::VARNISH_TROUBLES);
}

#[test]
fn agreeing_counts_are_quiet_and_disagreements_are_named() {
    let mut run = synthetic("x", 6, 2_000, 200_000.0, 3);
    run.plan.connections = 50;
    let n = run.totals.completed;
    let summary = vload_analyze::Summary::of(&with_server(run.clone(), n, n, 1.2)).unwrap();
    let server = summary.server.as_ref().unwrap();
    assert!(server.findings.is_empty(), "{:?}", server.findings);
    assert_eq!(server.cpu_per_request_ns, Some(1.2e9 / n as f64));
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(
        text.contains("Server CPU") && text.contains("100 µs"),
        "{text}"
    );

    // Varnish saw twice the requests and called a tenth of them misses.
    let mut other = with_server(run, 2 * n, 2 * n * 9 / 10, 1.2);
    set_counter(&mut other, "threads_limited", 7);
    let summary = vload_analyze::Summary::of(&other).unwrap();
    let findings = &summary.server.as_ref().unwrap().findings;
    assert_eq!(findings.len(), 3, "{findings:?}");
    assert!(findings[0].contains("another client"), "{findings:?}");
    assert!(findings[1].contains("hit ratio disagrees"), "{findings:?}");
    assert!(findings[2].contains("threads_limited 7"), "{findings:?}");
    assert!(
        vload_analyze::render::report::text::render(&summary).contains("! hit ratio disagrees")
    );
    let markdown = vload_analyze::render::report::markdown::render(&summary);
    assert!(markdown.contains("Varnish hits (measured)"), "{markdown}");
    assert!(markdown.contains("server CPU per request"), "{markdown}");
}

#[test]
fn server_cpu_per_request_is_compared_when_watched() {
    let runs = |label: &str, cpu: f64, seed: u64| -> Vec<RunFile> {
        (0..5)
            .map(|i| {
                let run = synthetic(label, 6, 2_000, 200_000.0, seed + i);
                let n = run.totals.completed;
                with_server(run, n, n, cpu * (1.0 + 0.01 * i as f64))
            })
            .collect()
    };
    let (naive, split) = (runs("naive", 2.0, 10), runs("split", 1.0, 20));
    let c = vload_analyze::compare::compare(("naive", &naive), ("split", &split)).unwrap();
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == Metric::ServerCpu)
        .unwrap();
    assert_eq!(row.verdict, Verdict::BBetter, "{row:?}");
    assert!((row.delta.unwrap() + 50.0).abs() < 2.0, "{row:?}");
    // Without --watch-pid on any run, no row at all.
    let plain = |label: &str| vec![synthetic(label, 6, 2_000, 200_000.0, 1)];
    let c = vload_analyze::compare::compare(("a", &plain("a")), ("b", &plain("b"))).unwrap();
    assert!(c.rows.iter().all(|r| r.metric != Metric::ServerCpu));
}

#[test]
fn the_servers_own_hit_ratio_offload_and_evictions_are_compared() {
    // A small cache against a large one, five runs a side: the small one hits 60% by its own
    // count, sends 40% of requests to the origin and evicts 0.3 objects a request.
    let runs = |label: &str, hit: f64, nuked: f64, seed: u64| -> Vec<RunFile> {
        (0..5)
            .map(|i| {
                let run = synthetic(label, 6, 2_000, 200_000.0, seed + i);
                let n = run.totals.completed;
                let jitter = 1.0 + 0.005 * i as f64;
                let hits = (n as f64 * hit * jitter).min(n as f64) as u64;
                let mut run = with_server(run, n, hits, 1.0);
                set_counter(&mut run, "vbe_req", n - hits);
                set_counter(&mut run, "n_lru_nuked", (n as f64 * nuked * jitter) as u64);
                run
            })
            .collect()
    };
    let (small, large) = (runs("small", 0.6, 0.3, 10), runs("large", 0.9, 0.0, 20));
    let c = vload_analyze::compare::compare(("small", &small), ("large", &large)).unwrap();
    let row = |m: Metric| c.rows.iter().find(|r| r.metric == m).unwrap();
    for metric in [
        Metric::ServerHitRatio,
        Metric::OriginShare,
        Metric::Evictions,
    ] {
        assert_eq!(row(metric).verdict, Verdict::BBetter, "{:?}", row(metric));
    }
    // In percentage points: 60% to 90% by the server's count, 40% to 10% of requests sent on.
    assert!((row(Metric::ServerHitRatio).delta.unwrap() - 30.0).abs() < 1.5);
    assert!((row(Metric::OriginShare).delta.unwrap() + 30.0).abs() < 1.5);
    let text = vload_analyze::render::compare::text(&c);
    for name in ["server hit ratio", "origin req/req", "evictions/req"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    // Without --server-stats on any run, none of these rows.
    let plain = |label: &str| vec![synthetic(label, 6, 2_000, 200_000.0, 1)];
    let c = vload_analyze::compare::compare(("a", &plain("a")), ("b", &plain("b"))).unwrap();
    assert!(c.rows.iter().all(|r| !r.metric.is_server_side()));
}

#[test]
fn a_source_without_cache_counts_is_checked_on_what_it_has() {
    // nginx's stub_status: requests and connections, no hits; agreeing requests are quiet,
    // the hit ratio is not compared, and the report says n/a for what it lacks.
    let mut run = synthetic("nginx", 6, 2_000, 200_000.0, 3);
    run.plan.connections = 50;
    let n = run.totals.completed;
    let nginx = |requests: u64| ServerRecord {
        stats: Some(StatsRecord {
            source: "nginx".into(),
            address: "http://127.0.0.1:8080/status".into(),
            covers: "measured".into(),
            common: CommonCounters {
                requests: Some(requests),
                connections: Some(50),
                dropped: Some(0),
                ..CommonCounters::default()
            },
            counters: [("requests".to_owned(), requests)].into_iter().collect(),
            gauges: Default::default(),
            layout: String::new(),
            version: None,
            troubles: Vec::new(),
        }),
        process: None,
    };
    run.server = Some(nginx(n));
    let summary = vload_analyze::Summary::of(&run).unwrap();
    assert!(summary.server.as_ref().unwrap().findings.is_empty());
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(text.contains("nginx         measured window"), "{text}");
    assert!(text.contains("n/a, n/a"), "{text}");
    run.server = Some(nginx(n + 1_000));
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let findings = &summary.server.as_ref().unwrap().findings;
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].starts_with("nginx counted"), "{findings:?}");
    // No hit counts on either side: no server hit ratio row in compare.
    let c = vload_analyze::compare::compare(("a", &[run.clone()]), ("b", &[run])).unwrap();
    assert!(c.rows.iter().all(|r| r.metric != Metric::ServerHitRatio));
}

/// One hit ratio everywhere: hits over hits and misses, Varnish's own
/// `cache_hit / (cache_hit + cache_miss)`. `client_req` also counts vload's PURGE requests
/// and Varnish's waiting-list wake-ups; neither moves the ratio the report prints, the one
/// compare compares, nor raises a disagreement with vload's own count.
#[test]
fn the_hit_ratio_is_hits_over_lookups_in_report_and_compare_alike() {
    let mut run = synthetic("x", 6, 2_000, 200_000.0, 3);
    run.plan.connections = 50;
    let n = run.totals.completed;
    // vload classified 94.9% of its responses as hits.
    let vload_hits = n * 949 / 1000;
    run.cache.hit = vload_hits;
    run.cache.miss = n - vload_hits;
    run.cache.unknown = 0;
    // Varnish: the same lookups, and client_req 2.5% higher (purges and wake-ups).
    let mut run = with_server(run, n, vload_hits, 1.0);
    set_counter(&mut run, "client_req", n + n / 40);
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let server = summary.server.as_ref().unwrap();
    assert!(server.findings.is_empty(), "{:?}", server.findings);
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(
        text.contains("hit ratio = hits / (hits + misses): Varnish 94.90%, vload 94.90%"),
        "{text}"
    );
    let c = vload_analyze::compare::compare(("a", &[run.clone()]), ("b", &[run])).unwrap();
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == Metric::ServerHitRatio)
        .expect("a server hit ratio row");
    assert!((row.a.median.unwrap() - 0.949).abs() < 1e-9, "{:?}", row.a);
}

/// #45: HAProxy counts a connection closed before its first request as a request error
/// (`ereq`); as many as vload closed unused are vload's doing, said in a note; beyond them
/// the rest is the server's trouble.
#[test]
fn haproxy_request_errors_from_vloads_unused_connections_are_a_note() {
    let mut run = synthetic("x", 6, 2_000, 200_000.0, 3);
    let n = run.totals.completed;
    run.totals.connections_unused = 4;
    let haproxy = |ereq: u64| ServerRecord {
        stats: Some(StatsRecord {
            source: "haproxy".into(),
            address: "/tmp/admin.sock".into(),
            covers: "measured".into(),
            common: CommonCounters {
                requests: Some(n),
                ..CommonCounters::default()
            },
            counters: [("frontend.ereq".to_owned(), ereq)].into_iter().collect(),
            gauges: Default::default(),
            layout: String::new(),
            version: None,
            troubles: vec![vload_schema::Trouble {
                counter: "frontend.ereq".into(),
                value: ereq,
                meaning: "HAProxy got client requests it could not read (bad or timed out)".into(),
            }],
        }),
        process: None,
    };
    run.server = Some(haproxy(4));
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let server = summary.server.as_ref().unwrap();
    assert!(server.findings.is_empty(), "{:?}", server.findings);
    assert!(
        server.notes[0].contains("frontend.ereq 4 are vload's"),
        "{:?}",
        server.notes
    );
    run.server = Some(haproxy(10));
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let server = summary.server.as_ref().unwrap();
    assert!(
        server.findings[0].contains("of which up to 4 are vload's"),
        "{:?}",
        server.findings
    );
}

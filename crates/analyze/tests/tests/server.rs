use vload_analyze::compare::{Metric, Verdict};
use vload_schema::{ProcessRecord, RunFile, ServerRecord, VarnishRecord};

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
        varnish: Some(VarnishRecord {
            instance: "v".into(),
            covers: "measured".into(),
            counters,
            gauges: Default::default(),
            layout: "counters".into(),
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
    other
        .server
        .as_mut()
        .unwrap()
        .varnish
        .as_mut()
        .unwrap()
        .counters
        .insert("threads_limited".into(), 7);
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
    assert!(
        markdown.contains("varnish cache_hit (measured)"),
        "{markdown}"
    );
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

//! The store at scale (#47): 10,000 copies of one run file (a one-minute run, given) added
//! one by one, timed, then `check` timed on a series of 500 commits (1,500 runs), and the
//! database's size. Each copy gets its own run id, commit and start; its drain wait (so its
//! throughput) varies by a few percent, so that the detector has a series to work on.
//!
//! cargo run --release -p vload-history --example scale -- RUN.json DB [RUNS]

use std::time::Instant;

use vload_history::{Selection, Store, StoredRun, gate, histories, judge, key};

#[allow(clippy::print_stdout, reason = "the example's table")]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (template, db) = (&args[0], std::path::Path::new(&args[1]));
    let total: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let text = std::fs::read_to_string(template).expect("a run file");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let _ = std::fs::remove_file(db);
    let mut store = Store::open(db).expect("a new database");
    let base_wait = value["window"]["wait_s"].as_f64().unwrap_or(0.0);
    let mut times = Vec::with_capacity(total);
    let mut state = 47u64;
    // 1,500 runs (500 commits x 3) in series "b", the rest in series "a".
    let in_b = 1_500.min(total);
    for i in 0..total {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let noise = (state >> 11) as f64 / (1u64 << 53) as f64;
        let (label, commit) = if i < in_b {
            ("b", i / 3)
        } else {
            ("a", (i - in_b) / 3)
        };
        value["label"] = label.into();
        value["run_id"] = format!("scale-{i:06}").into();
        value["started_at"] = format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + i / 86_400 % 28,
            i / 3600 % 24,
            i / 60 % 60,
            i % 60
        )
        .into();
        value["provenance"] =
            serde_json::json!({"commit": format!("{label}{commit:05}"), "branch": "main"});
        let step = if i < in_b && commit >= 400 { 0.6 } else { 0.0 };
        value["window"]["wait_s"] = (base_wait + noise * 0.3 + step).into();
        let text = serde_json::to_string_pretty(&value).expect("serializes");
        let t = Instant::now();
        store.add(&text, "scale").expect("added");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let q = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
    let (runs, bytes) = store.size().expect("size");
    println!(
        "add: {total} runs of {} KB each: mean {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        text.len() / 1024,
        times.iter().sum::<f64>() / times.len() as f64,
        q(0.5),
        q(0.99),
        q(1.0)
    );
    println!(
        "database: {runs} runs, {:.1} MB ({:.1} KB a run)",
        bytes as f64 / 1e6,
        bytes as f64 / 1024.0 / runs as f64
    );
    drop(store);
    for _ in 0..3 {
        let t = Instant::now();
        let store = Store::open(db).expect("reopened");
        let selection = Selection {
            series: Some("b".into()),
            ..Selection::default()
        };
        let h = histories(&store, &selection).expect("read");
        let g = gate(&h, Some(5.0), false);
        let changes: usize = h
            .iter()
            .flat_map(|h| &h.metrics)
            .map(|m| m.changes.len())
            .sum();
        println!(
            "check on series b ({} commits, {} runs, every metric): {:.0} ms ({changes} change points, {} regressions)",
            h[0].metrics[0].commits.len(),
            h[0].runs.len(),
            t.elapsed().as_secs_f64() * 1e3,
            g.regressions.len()
        );
    }
    // The detector's own cost on a 500-commit series where every metric is noisy (the copies
    // above vary only in throughput): 1,500 runs, nine metrics, a step at commit 400.
    let runs: Vec<StoredRun> = (0..1_500)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let noise = 1.0 + 0.02 * ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
            let level = if i / 3 >= 400 { 1.1 } else { 1.0 };
            StoredRun {
                run_id: format!("{i}"),
                series: "s".into(),
                started_at: format!("{i:06}"),
                commit: format!("c{:03}", i / 3),
                branch: None,
                excluded: None,
                mode: vload_schema::Mode::Open,
                metrics: key::TRACKED
                    .iter()
                    .map(|m| (*m, level * noise * 1e6))
                    .collect(),
            }
        })
        .collect();
    let t = Instant::now();
    let found: usize = key::TRACKED
        .iter()
        .map(|m| judge::judge(&runs, *m).changes.len())
        .sum();
    println!(
        "detector on 500 noisy commits x 9 metrics: {:.0} ms ({found} change points)",
        t.elapsed().as_secs_f64() * 1e3
    );
}

//! The model against Varnish, one row per run file of a `--catalogue` attack made with
//! `--server-stats varnish`: the hit ratio vload and Varnish measured, what an LRU of the
//! `--cache-size` bytes would hit, and what an LRU of as many objects as Varnish held
//! (its n_object at the end) would hit. `benches/verdicts/cache-model.sh` makes the runs.
//!
//!     cargo run -q -p vload-benches --example cache_table -- run-4m.json run-8m.json

#![allow(clippy::print_stdout, reason = "a table for docs/caching.md")]

use vload_cache::model::{Load, predict};
use vload_cache::{Capacity, Catalogue};
use vload_schema::RunFile;

fn main() {
    println!(
        "| cache size | vload hit | Varnish hit | LRU of the bytes | n_object | LRU of n_object |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let run = RunFile::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let model = run.cache_model.as_ref().expect("a --catalogue run");
        let varnish = run
            .server
            .as_ref()
            .and_then(|s| s.stats.as_ref())
            .expect("a run with --server-stats varnish");
        let c = |n: &str| varnish.counters.get(n).copied().unwrap_or(0) as f64;
        let held = varnish.gauges.get("n_object").copied().unwrap_or(0);
        let catalogue = Catalogue::from_record(run.plan.catalogue.as_ref().unwrap()).unwrap();
        let by_objects = predict(
            Load {
                catalogue: &catalogue,
                rate_per_s: model.rate_per_s,
                before: model.requests_before,
                window: model.requests_window,
            },
            Some(Capacity::Objects(held)),
        )
        .lru
        .map_or(f64::NAN, |(h, _)| h);
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        println!(
            "| {} | {} | {} | {} | {held} | {} |",
            model.capacity.as_deref().unwrap_or("?"),
            pct(run.cache.hit as f64 / (run.cache.hit + run.cache.miss) as f64),
            pct(c("cache_hit") / (c("cache_hit") + c("cache_miss"))),
            pct(model.lru_hit_ratio.unwrap_or(f64::NAN)),
            pct(by_objects),
        );
    }
}

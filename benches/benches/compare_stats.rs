//! What `vload compare` costs: the exact Mann-Whitney test and the Hodges-Lehmann interval
//! on 5+5 and 30+30 runs, and a whole comparison of 5+5 run files.
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vload_analyze::stats::{hodges_lehmann, mann_whitney};
use vload_schema::RunFile;

fn sample(n: usize, shift: f64) -> Vec<f64> {
    (0..n)
        .map(|i| 100.0 + shift + ((i * 7919) % 97) as f64 / 10.0)
        .collect()
}

fn tests(c: &mut Criterion) {
    let mut group = c.benchmark_group("compare");
    for n in [5, 30] {
        let (a, b) = (sample(n, 0.0), sample(n, 3.0));
        group.bench_function(format!("mann_whitney/exact/{n}+{n}"), |bench| {
            bench.iter(|| black_box(mann_whitney(black_box(&a), black_box(&b))))
        });
        group.bench_function(format!("hodges_lehmann/95pct/{n}+{n}"), |bench| {
            bench.iter(|| black_box(hodges_lehmann(black_box(&a), black_box(&b), 0.95)))
        });
    }
    let golden = RunFile::from_json(include_str!(
        "../../crates/schema/tests/data/golden-run.json"
    ))
    .expect("the golden run parses");
    let runs = |shift: f64| -> Vec<RunFile> {
        (0..5)
            .map(|i| {
                let mut r = golden.clone();
                r.run_id = format!("{shift}-{i}");
                r.window.measured_s *= 1.0 + shift + 0.01 * f64::from(i);
                r
            })
            .collect()
    };
    let (a, b) = (runs(0.0), runs(0.05));
    group.bench_function("run_files/5+5/all_metrics", |bench| {
        bench.iter(|| {
            black_box(
                vload_analyze::compare::compare(("a", black_box(&a)), ("b", black_box(&b)))
                    .expect("histograms decode"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, tests);
criterion_main!(benches);

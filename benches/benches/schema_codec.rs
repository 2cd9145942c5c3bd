//! Encoding and decoding run files and their histograms.
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vload_schema::{EncodedHistogram, HistogramSettings, RunFile, new_histogram};

fn codec(c: &mut Criterion) {
    let mut h = new_histogram(&HistogramSettings::default());
    for i in 0..100_000u64 {
        h.record(100_000 + (i * 7_919) % 50_000_000)
            .expect("in range");
    }
    let encoded = EncodedHistogram::encode(&h).expect("encodes");
    let golden = include_str!("../../crates/schema/tests/data/golden-run.json");
    let run = RunFile::from_json(golden).expect("golden parses");
    let mut group = c.benchmark_group("codec");
    group.bench_function("histogram_encode/v2deflate/100k_values", |b| {
        b.iter(|| EncodedHistogram::encode(black_box(&h)))
    });
    group.bench_function("histogram_decode/v2deflate/100k_values", |b| {
        b.iter(|| black_box(&encoded).decode())
    });
    group.bench_function("run_file_decode/golden", |b| {
        b.iter(|| RunFile::from_json(black_box(golden)))
    });
    group.bench_function("run_file_encode/golden", |b| {
        b.iter(|| black_box(&run).to_json())
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);

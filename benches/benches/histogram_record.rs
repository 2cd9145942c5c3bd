//! Recording one latency: the per-request cost of the histogram and exact moments.
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use vload_benches::latencies;
use vload_schema::{HistogramSettings, Moments, new_histogram};

fn record(c: &mut Criterion) {
    let values = latencies(1_000_000);
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("histogram/sigfig3/1M", |b| {
        b.iter_batched_ref(
            || new_histogram(&HistogramSettings::default()),
            |h| {
                values
                    .iter()
                    .for_each(|&v| h.record(black_box(v)).expect("in range"))
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("moments/welford/1M", |b| {
        b.iter_batched_ref(
            Moments::new,
            |m| values.iter().for_each(|&v| m.record(black_box(v))),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn merge(c: &mut Criterion) {
    let settings = HistogramSettings::default();
    let mut a = new_histogram(&settings);
    latencies(100_000)
        .iter()
        .for_each(|&v| a.record(v).expect("in range"));
    let mut group = c.benchmark_group("merge");
    group.bench_function("histogram_add/sigfig3/100k_values", |b| {
        b.iter_batched_ref(
            || new_histogram(&settings),
            |h| h.add(black_box(&a)).expect("same layout"),
            BatchSize::LargeInput,
        )
    });
    let mut m = Moments::new();
    latencies(1_000).iter().for_each(|&v| m.record(v));
    group.bench_function("moments_chan", |b| {
        b.iter(|| black_box(Moments::new()).merge(black_box(&m)))
    });
    group.finish();
}

criterion_group!(benches, record, merge);
criterion_main!(benches);

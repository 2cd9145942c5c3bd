//! The engine's per-request work: recording into an interval, the once-a-second swap and
//! merge, preparing a request, parsing and classifying a response.
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use vload_benches::latencies;
use vload_engine::bench::{Interval, Requests, classify_map, parse_response};
use vload_engine::{AttackPlan, Client, Load, Protocol, RequestTemplate, Stop};

/// A Varnish hit as it comes over the wire: 9 headers, 11-byte body.
const VARNISH_HIT: &[u8] = b"HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 04:50:00 GMT\r\n\
Server: Varnish\r\nContent-Type: text/plain\r\nX-Varnish: 32773 32771\r\nAge: 12\r\n\
Via: 1.1 varnish (Varnish/7.1)\r\nAccept-Ranges: bytes\r\nContent-Length: 11\r\n\
Connection: keep-alive\r\n\r\nHello World";

fn plan(client: Client) -> AttackPlan {
    let mut request = RequestTemplate::get("http://127.0.0.1:6081/index.html".parse().unwrap());
    request
        .headers
        .insert(http::header::USER_AGENT, "vload/0.1".parse().unwrap());
    let mut plan = AttackPlan::new(
        request,
        "127.0.0.1:6081".parse().unwrap(),
        Load::Closed { connections: 50 },
        Stop {
            duration: Some(Duration::from_secs(10)),
            requests: None,
        },
    );
    plan.protocol = Protocol::Http1 { client };
    plan
}

fn interval(c: &mut Criterion) {
    let values = latencies(10_000);
    let mut group = c.benchmark_group("interval");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("record_request/open_loop/10k", |b| {
        b.iter_batched_ref(
            Interval::default,
            |i| {
                for &v in &values {
                    i.record_request(black_box(v + 5_000), black_box(v), 200);
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
    let mut full = Interval::default();
    for &v in &values {
        full.record_request(v + 5_000, v, 200);
    }
    let mut group = c.benchmark_group("interval");
    group.bench_function("swap/10k_recorded", |b| {
        b.iter_batched_ref(
            || {
                let mut i = Interval::default();
                i.merge(&full);
                i
            },
            |i| black_box(i.take()),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("merge/10k_recorded", |b| {
        b.iter_batched_ref(
            Interval::default,
            |i| i.merge(black_box(&full)),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn request(c: &mut Criterion) {
    let mut group = c.benchmark_group("request");
    group.throughput(Throughput::Elements(1));
    for (name, client) in [("lean", Client::Lean), ("hyper", Client::Hyper)] {
        let requests = Requests::new(&plan(client));
        group.bench_function(format!("prepare/{name}/2_headers"), |b| {
            b.iter(|| black_box(requests.next()))
        });
    }
    group.finish();
}

fn response(c: &mut Criterion) {
    let mut group = c.benchmark_group("response");
    group.throughput(Throughput::Elements(1));
    // The same head again (a server repeating itself): the parser's memo answers.
    group.bench_function(
        "parse_and_classify/lean/varnish_hit_10_headers/repeated",
        |b| b.iter(|| black_box(parse_response(black_box(VARNISH_HIT)))),
    );
    // Every head different (Varnish numbers each response): parsed every time.
    let heads: Vec<Vec<u8>> = (0..1024)
        .map(|i| {
            let text = std::str::from_utf8(VARNISH_HIT).unwrap();
            text.replace("X-Varnish: 32773", &format!("X-Varnish: {:05}", 10_000 + i))
                .into_bytes()
        })
        .collect();
    let mut next = heads.iter().cycle();
    group.bench_function(
        "parse_and_classify/lean/varnish_hit_10_headers/changing",
        |b| b.iter(|| black_box(parse_response(black_box(next.next().unwrap())))),
    );
    let mut map = http::HeaderMap::new();
    for line in std::str::from_utf8(VARNISH_HIT).unwrap().lines().skip(1) {
        if let Some((k, v)) = line.split_once(": ") {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
    }
    group.bench_function("classify/header_map/varnish_hit_10_headers", |b| {
        b.iter(|| black_box(classify_map(black_box(&map))))
    });
    group.finish();
}

criterion_group!(benches, interval, request, response);
criterion_main!(benches);

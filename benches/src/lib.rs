//! Criterion microbenches of vload's hot paths live in `benches/`; run them with
//! `cargo bench -p vload-benches`. The peer comparison harness is `peers/`.

/// `n` latencies in ns, a long-tailed spread of 100 µs .. 100 ms, the same every run.
pub fn latencies(n: usize) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            100_000 + (x % 1_000) * (x % 1_000) * 100
        })
        .collect()
}

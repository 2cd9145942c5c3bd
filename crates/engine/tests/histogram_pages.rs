//! A histogram costs the pages its values land on, not its whole counts array (221 KB at
//! the run file's layout): the patched hdrhistogram allocates counts zeroed and merges into
//! an empty histogram chunk by chunk, and `map_large_allocations` keeps glibc from carving
//! the next histograms out of freed heap, which calloc would write with zeros whole.
//!
//! One test in a binary of its own: it reads the process's resident size, which another
//! test running beside it would move.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use hdrhistogram::Histogram;
use vload_schema::{HistogramSettings, new_histogram};

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm's second field is the resident page count");
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * usize::try_from(page).expect("a positive page size")
}

/// Eight histograms with a value each (100 µs, 200 µs, ...) and their merges into empty
/// ones, as an interval and the run's totals would hold them.
fn histograms(layout: &HistogramSettings) -> Vec<Histogram<u64>> {
    let mut all = Vec::new();
    for i in 1..=8u64 {
        let mut interval = new_histogram(layout);
        interval
            .record(i * 100_000)
            .expect("within the layout's range");
        let mut total = new_histogram(layout);
        total.add(&interval).expect("one layout");
        assert_eq!(total.len(), 1);
        all.push(interval);
        all.push(total);
    }
    all
}

#[test]
fn a_histogram_costs_the_pages_its_values_land_on() {
    vload_engine::map_large_allocations();
    let layout = HistogramSettings::default();
    let whole = new_histogram(&layout).distinct_values() * size_of::<u64>();
    assert!(whole > 200_000, "the layout's counts are {whole} bytes");

    // A large block freed: glibc's default would raise its mapping threshold above a
    // histogram's size from here on.
    drop(std::hint::black_box(vec![1u8; 1 << 20]));

    let before = resident_bytes();
    let first = histograms(&layout);
    let grown_first = resident_bytes().saturating_sub(before);
    // Freed and made again: without a fixed threshold they come from the freed heap.
    drop(first);
    let second = histograms(&layout);
    let grown = resident_bytes().saturating_sub(before);
    assert_eq!(second.len(), 16);
    // Written whole, 16 histograms would be 16 x 221 KB = 3.5 MB.
    let bound = 16 * whole / 8;
    assert!(
        grown_first < bound && grown < bound,
        "16 histograms of {whole} bytes grew the resident size by {grown_first} bytes, \
         then by {grown} made again (bound {bound})"
    );
}

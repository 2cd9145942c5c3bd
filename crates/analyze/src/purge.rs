//! What each burst of purges did to the cache: the hit ratio before it and at its lowest
//! after, the misses on the objects purged (their refetches, counted on them), the misses it
//! added over the rate before it, and how long the hit ratio took to come back, all from the
//! run's one-second intervals.

use serde::Serialize;
use vload_schema::{Interval, PurgeBurst, RunFile};

/// Seconds before a burst whose hit ratio and miss rate are its baseline.
const BASELINE_S: usize = 3;
/// Seconds after a burst looked at, at most (or until the next burst).
const AFTER_S: usize = 10;
/// A hit ratio this close to the baseline counts as refilled.
const REFILLED: f64 = 0.01;

/// One burst's effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PurgeEffect {
    /// When the burst began, seconds from the attack's start.
    pub at_s: f64,
    /// Purges sent in it.
    pub sent: u64,
    /// Of those, answered 2xx.
    pub ok: u64,
    /// The hit ratio of the seconds before the burst.
    pub hit_ratio_before: Option<f64>,
    /// The lowest hit ratio of a second from the burst's on.
    pub hit_ratio_low: Option<f64>,
    /// Misses from the burst's second until the next burst (at most 10 s), over the miss
    /// rate before it: what the purges cost the origin.
    pub extra_misses: Option<f64>,
    /// Misses on the objects purged themselves over the same seconds: each purged object
    /// refetched (the cache coalescing the requests that wait for it counts it once).
    /// `None` in files that did not count them apart.
    pub refetched: Option<u64>,
    /// Seconds from the burst until the end of the first second whose hit ratio was back
    /// within a point of the baseline; `None` when it did not come back in the seconds seen.
    pub refill_s: Option<f64>,
}

fn ratio(intervals: &[Interval]) -> Option<f64> {
    let hits: u64 = intervals.iter().map(|i| i.hits).sum();
    let classified = hits + intervals.iter().map(|i| i.misses).sum::<u64>();
    (classified > 0).then(|| hits as f64 / classified as f64)
}

/// The effect of every burst of `run`'s purges.
pub fn effects(run: &RunFile) -> Vec<PurgeEffect> {
    let Some(purges) = &run.purges else {
        return Vec::new();
    };
    let iv = &run.intervals;
    let index = |at: f64| {
        iv.iter()
            .position(|i| at < i.start_s + i.duration_s)
            .unwrap_or(iv.len())
    };
    // The baseline of a burst leaves out the seconds the burst before it still disturbed
    // (until its refill, or all of them when it never refilled).
    let mut clean_from = 0;
    let mut out = Vec::new();
    for (n, burst) in purges.bursts.iter().enumerate() {
        let k = index(burst.at_s);
        let next = purges.bursts.get(n + 1).map_or(iv.len(), |b| index(b.at_s));
        let end = next.min(k + AFTER_S).min(iv.len()).max(k);
        let from = k.saturating_sub(BASELINE_S).max(clean_from).min(k);
        let e = effect(burst, &iv[from..k], &iv[k..end]);
        clean_from = match e.refill_s {
            // The second that ended the refill is back to normal: it may be a baseline.
            Some(refill) => (k + refill.ceil() as usize).saturating_sub(1).max(k + 1),
            None => end,
        };
        out.push(e);
    }
    out
}

fn effect(burst: &PurgeBurst, before: &[Interval], after: &[Interval]) -> PurgeEffect {
    let base = ratio(before);
    let seconds: f64 = before.iter().map(|i| i.duration_s).sum();
    let miss_rate =
        (seconds > 0.0).then(|| before.iter().map(|i| i.misses).sum::<u64>() as f64 / seconds);
    let low = after
        .iter()
        .filter_map(|i| ratio(std::slice::from_ref(i)))
        .reduce(f64::min);
    let extra = miss_rate.filter(|_| !after.is_empty()).map(|rate| {
        let misses: u64 = after.iter().map(|i| i.misses).sum();
        let span: f64 = after.iter().map(|i| i.duration_s).sum();
        (misses as f64 - rate * span).max(0.0)
    });
    let watched = before
        .iter()
        .chain(after)
        .any(|i| i.purged_hits + i.purged_misses > 0);
    let refetched = watched.then(|| after.iter().map(|i| i.purged_misses).sum());
    let refill = base.and_then(|base| {
        after
            .iter()
            .find(|i| ratio(std::slice::from_ref(i)).is_some_and(|r| r >= base - REFILLED))
            .map(|i| (i.start_s + i.duration_s - burst.at_s).max(0.0))
    });
    PurgeEffect {
        at_s: burst.at_s,
        sent: burst.sent,
        ok: burst
            .status_codes
            .iter()
            .filter(|(code, _)| (200..300).contains(*code))
            .map(|(_, n)| n)
            .sum(),
        hit_ratio_before: base,
        hit_ratio_low: low,
        extra_misses: extra,
        refetched,
        refill_s: refill,
    }
}

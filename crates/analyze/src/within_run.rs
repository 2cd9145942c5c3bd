//! Within-run uncertainty from batch means: what one run can say about itself.

use vload_schema::{Interval, Moments, RunFile, SchemaError};

use crate::metric::Metric;
use crate::stats::{lag1_autocorrelation, t_interval};

/// Batches a run is cut into at first (one a second if the run is shorter, at least 5);
/// they then grow while neighbours are correlated.
const BATCHES: usize = 40;
const MIN_BATCHES: usize = 5;
/// Bootstrap resamples for percentile intervals.
const RESAMPLES: usize = 1_000;

/// The 95% within-run interval of a metric from batch means, `None` when the run has fewer
/// than 5 measured seconds. Throughput, mean, error rate and hit ratio use a t-interval over
/// batch values; percentiles a bootstrap over batch histograms. Adjacent batches are merged
/// while their lag-1 autocorrelation exceeds 0.2 (and 10 or more batches are left).
///
/// # Errors
/// An interval histogram does not decode.
pub fn within_run(metric: Metric, run: &RunFile) -> Result<Option<(f64, f64)>, SchemaError> {
    Ok(batched(metric, run)?.map(|b| b.interval))
}

/// A within-run interval and the batches behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Batched {
    /// The 95% interval.
    pub interval: (f64, f64),
    /// How many batches.
    pub batches: usize,
    /// Measured seconds per batch (on average).
    pub batch_s: f64,
    /// The lag-1 autocorrelation of the batch values at that size; `None` for percentiles,
    /// whose batches are resampled whole rather than reduced to values.
    pub lag1: Option<f64>,
}

/// [`within_run`], with the batch size it settled on.
///
/// # Errors
/// An interval histogram does not decode.
pub fn batched(metric: Metric, run: &RunFile) -> Result<Option<Batched>, SchemaError> {
    batched_of(metric, &measured(run))
}

/// [`batched`] over measured intervals given one by one (a run still going: `--until-stable`).
///
/// # Errors
/// An interval histogram does not decode.
pub fn batched_of(metric: Metric, measured: &[&Interval]) -> Result<Option<Batched>, SchemaError> {
    if measured.len() < MIN_BATCHES {
        return Ok(None);
    }
    let mut batches: Vec<Vec<&Interval>> = split(measured, BATCHES.min(measured.len()));
    let values = |batches: &[Vec<&Interval>]| {
        batches
            .iter()
            .map(|b| batch_value(metric, b))
            .collect::<Option<Vec<f64>>>()
    };
    let Some(mut series) = values(&batches) else {
        return Ok(None);
    };
    // Batches grow until neighbours are nearly independent (Lancet's rule), as long as
    // enough of them are left for an interval.
    while lag1_autocorrelation(&series) > 0.2 && batches.len() >= 2 * MIN_BATCHES {
        batches = batches.chunks(2).map(<[_]>::concat).collect();
        series = values(&batches).unwrap_or(series);
    }
    let seconds: f64 = measured.iter().map(|i| i.duration_s).sum();
    let shape = |interval| Batched {
        interval,
        batches: batches.len(),
        batch_s: seconds / batches.len() as f64,
        lag1: quantile_of(metric)
            .is_none()
            .then(|| lag1_autocorrelation(&series)),
    };
    if let Some(q) = quantile_of(metric) {
        return Ok(bootstrap_quantile(&batches, q)?.map(shape));
    }
    Ok(t_interval(&series, 0.95).map(|(mean, half)| shape((mean - half, mean + half))))
}

/// Why a run has no within-run interval: too short, or too few samples in some second.
pub fn missing(run: &RunFile) -> String {
    let seconds = measured(run).len();
    if seconds < MIN_BATCHES {
        format!("{seconds} s measured, {MIN_BATCHES} needed")
    } else {
        "too few samples a second".to_owned()
    }
}

/// The measured whole seconds of a run (warm-up and short tails left out).
pub fn measured(run: &RunFile) -> Vec<&Interval> {
    run.intervals
        .iter()
        .filter(|i| !i.warmup && i.duration_s >= 0.5)
        .collect()
}

fn quantile_of(metric: Metric) -> Option<f64> {
    match metric {
        Metric::P50 => Some(0.5),
        Metric::P90 => Some(0.9),
        Metric::P99 => Some(0.99),
        Metric::P999 => Some(0.999),
        _ => None,
    }
}

fn split<'a>(items: &[&'a Interval], parts: usize) -> Vec<Vec<&'a Interval>> {
    let (size, extra) = (items.len() / parts, items.len() % parts);
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for i in 0..parts {
        let len = size + usize::from(i < extra);
        out.push(items[start..start + len].to_vec());
        start += len;
    }
    out
}

fn batch_value(metric: Metric, batch: &[&Interval]) -> Option<f64> {
    let sum = |f: fn(&Interval) -> u64| batch.iter().map(|i| f(i)).sum::<u64>() as f64;
    match metric {
        Metric::Throughput => {
            let seconds: f64 = batch.iter().map(|i| i.duration_s).sum();
            Some(sum(|i| i.status_classes.s2xx + i.status_classes.s3xx) / seconds)
        }
        Metric::Mean => {
            let mut m = Moments::new();
            batch.iter().for_each(|i| m.merge(&i.latency.moments));
            m.mean()
        }
        Metric::ErrorRate => {
            let completed = sum(|i| i.completed);
            (completed > 0.0).then(|| sum(|i| i.errors.values().sum()) / completed)
        }
        Metric::HitRatio => {
            let classified = sum(|i| i.hits + i.misses);
            (classified > 0.0).then(|| sum(|i| i.hits) / classified)
        }
        Metric::ServerCpu => {
            let cpu = batch.iter().map(|i| i.server_cpu_s).sum::<Option<f64>>()?;
            let completed = sum(|i| i.completed);
            (completed > 0.0).then(|| cpu * 1e9 / completed)
        }
        // The server's counters and the phases are kept for the whole window, not each second.
        Metric::ServerHitRatio | Metric::OriginShare | Metric::Evictions => None,
        Metric::StaleShare => {
            let classified = sum(|i| i.hits + i.misses);
            (classified > 0.0).then(|| sum(|i| i.stale) / classified)
        }
        Metric::TierOriginShare => {
            let (mut first, mut last) = (0u64, 0u64);
            for i in batch {
                if let [f, .., l] = &i.layers[..] {
                    first += f.reached;
                    last += l.misses;
                }
            }
            (first > 0).then(|| last as f64 / first as f64)
        }
        // A stampede's events are not the window's seconds.
        Metric::StampedeOriginShare | Metric::StampedeWaitP50 => None,
        // Ages are kept for the window and each stage, not each second.
        Metric::StaleAgeMean | Metric::HumanHitRatio | Metric::HumanP50 => None,
        m if m.is_phase() => None,
        _ => Some(0.0), // Percentiles are bootstrapped from the histograms instead.
    }
}

/// Percentile interval of quantile `q` over resampled batches.
fn bootstrap_quantile(
    batches: &[Vec<&Interval>],
    q: f64,
) -> Result<Option<(f64, f64)>, SchemaError> {
    // Each batch as (value index, count) pairs over the values any batch holds: a resample
    // then adds counts into one dense array and walks it, instead of merging histograms.
    let mut compact: Vec<Vec<(u64, u64)>> = Vec::with_capacity(batches.len());
    for batch in batches {
        let mut pairs = Vec::new();
        for interval in batch {
            let h = interval.latency.histogram.decode()?;
            pairs.extend(h.iter_recorded().map(|v| {
                (
                    h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            }));
        }
        compact.push(pairs);
    }
    if compact.iter().all(Vec::is_empty) {
        return Ok(None);
    }
    let mut values: Vec<u64> = compact.iter().flatten().map(|(v, _)| *v).collect();
    values.sort_unstable();
    values.dedup();
    let indexed: Vec<Vec<(usize, u64)>> = compact
        .iter()
        .map(|pairs| {
            pairs
                .iter()
                .map(|(v, c)| (values.binary_search(v).unwrap_or(0), *c))
                .collect()
        })
        .collect();
    let mut rng = 0x853c_49e6_748f_ea9bu64;
    let mut estimates = Vec::with_capacity(RESAMPLES);
    let mut counts = vec![0u64; values.len()];
    for _ in 0..RESAMPLES {
        counts.fill(0);
        let mut total = 0u64;
        for _ in 0..indexed.len() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            for (i, c) in &indexed[(rng % indexed.len() as u64) as usize] {
                counts[*i] += c;
                total += c;
            }
        }
        if total == 0 {
            continue;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        if let Some(i) = counts.iter().position(|c| {
            seen += c;
            seen >= rank
        }) {
            estimates.push(values[i] as f64);
        }
    }
    if estimates.len() < RESAMPLES / 2 {
        return Ok(None);
    }
    estimates.sort_by(f64::total_cmp);
    let at = |p: f64| {
        estimates[((p * (estimates.len() - 1) as f64).round() as usize).min(estimates.len() - 1)]
    };
    Ok(Some((at(0.025), at(0.975))))
}

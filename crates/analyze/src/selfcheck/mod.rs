//! A run's checks of itself: did the generator produce the arrivals it claimed, have the
//! headline figures converged, and was the system in a steady state?
//!
//! - **Arrivals** (open loop): the send lag (p50, p99, max) and the share of sends more than
//!   1 ms late; for Poisson arrivals also a Kolmogorov-Smirnov test of the achieved
//!   inter-send gaps, rescaled by the plan's cumulative rate, against the unit exponential.
//!   A timer-driven sender cannot resolve gaps shorter than its wake-up latency: sends due
//!   within [`RESOLUTION_S`] of each other leave together, so the test compares the
//!   distributions from that resolution up (the gaps below it pooled), and says it cannot
//!   test when the plan's gaps are mostly shorter than that.
//! - **Convergence**: 95% intervals of p50, p99 and throughput from batch means of the
//!   per-second intervals, batches grown until neighbours are nearly independent
//!   (lag-1 autocorrelation at most 0.2).
//! - **Stationarity**: the least-squares slope of throughput and p50 over the batches; a
//!   run whose slope is significant (p < 0.01) and moves the figure by more than 10% across
//!   the window was not in a steady state. The error rate and the hit ratio (when the run
//!   had errors, or classified responses) compare the window's first third with its last,
//!   second by second: a rate that moved significantly (p < 0.01) by more than half a
//!   percentage point (errors) or 5 points (hit ratio) is flagged.
//! - **Until stable**: with `--until-stable`, whether the p99's interval reached its target
//!   before `--max-duration`; the convergence checks then judge by that target.

use vload_schema::{CheckVerdict, HealthVerdict, RunCheck, RunFile, SchemaError, UntilStable};

use crate::metric::Metric;
use crate::stats::{linear_trend, welch};
use crate::units::{duration_ns, percent};
use crate::within_run::{batched, measured};

mod arrivals;
mod limits;
mod steady;

use arrivals::arrivals;
pub use arrivals::censored_ks;
use limits::check;
pub use limits::{ALPHA, CONVERGED, DRIFT, RESOLUTION_S};
pub use steady::{STEADY_SECONDS, steady_state};

/// Every check that applies to `run`.
///
/// # Errors
/// A histogram does not decode.
pub fn run_checks(run: &RunFile) -> Result<Vec<RunCheck>, SchemaError> {
    let mut checks = Vec::new();
    if run.sweep.is_some() {
        // A sweep's steps are separate attacks at rising rates: each step is judged by its
        // SLO, and the whole is not meant to be stationary.
        return Ok(checks);
    }
    if run.plan.rate_per_s.is_some() || run.plan.rate_plan.is_some() {
        checks.push(arrivals(run));
    }
    for metric in [Metric::P50, Metric::P99, Metric::Throughput] {
        checks.push(convergence(run, metric)?);
    }
    for metric in [Metric::Throughput, Metric::P50] {
        checks.push(stationarity(run, metric)?);
    }
    if run.plan.rate_plan.is_none() {
        checks.extend(
            [Metric::ErrorRate, Metric::HitRatio]
                .map(|m| drift(run, m))
                .into_iter()
                .flatten(),
        );
    }
    if let Some(until) = &run.until_stable {
        checks.push(until_stable(until, run));
    }
    Ok(checks)
}

/// The target of the convergence checks: `--until-stable`'s, or ±5%.
fn target(run: &RunFile) -> f64 {
    run.until_stable.map_or(CONVERGED, |u| u.target)
}

/// Whether `--until-stable` got the p99 within its target before `--max-duration`.
fn until_stable(u: &UntilStable, run: &RunFile) -> RunCheck {
    let width = u.half_width.map_or_else(
        || "no interval yet".to_owned(),
        |w| {
            if w > 1.0 {
                "an interval wider than itself".to_owned()
            } else {
                format!("±{:.1}%", w * 100.0)
            }
        },
    );
    let target = format!("±{:.1}%", u.target * 100.0);
    let mut c = match u.converged_after_s {
        Some(after) => check(
            "until_stable",
            CheckVerdict::Pass,
            format!(
                "until stable: converged, p99 {width} (target {target}) after {after:.0} s of at most {:.0} s",
                u.max_duration_s
            ),
        ),
        // Cut short by Ctrl-C: it did not get the time to converge, which says nothing
        // about whether it would have.
        None if run.interrupted => check(
            "until_stable",
            CheckVerdict::Unknown,
            format!(
                "until stable: interrupted after {:.0} s of at most {:.0} s, p99 {width} (target {target}): not known whether it would have converged",
                run.window.measured_s, u.max_duration_s
            ),
        ),
        None => check(
            "until_stable",
            CheckVerdict::Fail,
            format!(
                "until stable: did not converge in {:.0} s, p99 {width} (target {target}); raise --max-duration, or see what makes the p99 swing (stalls, a trend)",
                u.max_duration_s
            ),
        ),
    };
    c.statistic = u.half_width;
    c
}

/// A change more than this between the first and last third of the window moves a rate.
fn drift_floor(metric: Metric) -> f64 {
    if metric == Metric::ErrorRate {
        0.005
    } else {
        0.05
    }
}

/// The error rate or hit ratio of the window's first third against its last, second by
/// second (Welch's test: seconds, not requests, are the independent units, since errors
/// and misses come in bursts); `None` when the run has no errors or no classified
/// responses.
fn drift(run: &RunFile, metric: Metric) -> Option<RunCheck> {
    let (key, label) = match metric {
        Metric::ErrorRate => ("errors", "error rate"),
        _ => ("hit_ratio", "hit ratio"),
    };
    let values: Vec<f64> = measured(run)
        .iter()
        .filter_map(|i| {
            let errors: u64 = i.errors.values().sum();
            match metric {
                Metric::ErrorRate => (i.completed > 0).then(|| errors as f64 / i.completed as f64),
                _ => (i.hits + i.misses > 0).then(|| i.hits as f64 / (i.hits + i.misses) as f64),
            }
        })
        .collect();
    let relevant = match metric {
        Metric::ErrorRate => run.totals.error_count() > 0,
        _ => run.cache.hit + run.cache.miss > 0,
    };
    if !relevant {
        return None;
    }
    let name = format!("stationarity:{key}");
    let third = values.len() / 3;
    let Some(w) = (third >= 3)
        .then(|| welch(&values[..third], &values[values.len() - third..], 0.95))
        .flatten()
    else {
        return Some(check(
            &name,
            CheckVerdict::Unknown,
            format!("{label}: too few measured seconds to compare thirds (9 needed)"),
        ));
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (first, last) = (
        mean(&values[..third]),
        mean(&values[values.len() - third..]),
    );
    let moved = w.p < ALPHA && w.difference.abs() >= drift_floor(metric);
    let mut c = check(
        &name,
        if moved {
            CheckVerdict::Fail
        } else {
            CheckVerdict::Pass
        },
        if moved {
            format!(
                "not stationary: {label} {} from {} to {} between the first and last third of the window (p {}); {}",
                if w.difference > 0.0 { "rose" } else { "fell" },
                percent(first),
                percent(last),
                crate::units::p_value(w.p),
                if metric == Metric::ErrorRate {
                    "the server's health changed during the run"
                } else {
                    "a cache still filling (extend --warmup) or being evicted"
                }
            )
        } else {
            format!(
                "{label} stationary: {} then {} (first and last third, p {})",
                percent(first),
                percent(last),
                crate::units::p_value(w.p)
            )
        },
    );
    c.statistic = Some(w.difference);
    c.p_value = Some(w.p);
    c.interval = Some(w.interval);
    Some(c)
}

fn metric_key(metric: Metric) -> &'static str {
    match metric {
        Metric::P50 => "p50",
        Metric::P99 => "p99",
        _ => "throughput",
    }
}

fn convergence(run: &RunFile, metric: Metric) -> Result<RunCheck, SchemaError> {
    let key = metric_key(metric);
    let name = format!("convergence:{key}");
    if run.plan.rate_plan.is_some() && metric == Metric::Throughput {
        // Its throughput follows the plan: the spread of its seconds is the plan's, not noise.
        return Ok(check(
            &name,
            CheckVerdict::Unknown,
            format!("{key}: a rate plan changes the load by design; no interval"),
        ));
    }
    let (Some(b), Some(value)) = (batched(metric, run)?, metric.of(run)?) else {
        return Ok(check(
            &name,
            CheckVerdict::Unknown,
            format!("{key}: too few measured seconds (or samples) for an interval"),
        ));
    };
    let half = (b.interval.1 - b.interval.0) / 2.0;
    let relative = if value > 0.0 { half / value } else { 0.0 };
    let shown = if metric == Metric::Throughput {
        crate::units::rate(value)
    } else {
        duration_ns(value)
    };
    let verdict = if relative <= target(run) {
        CheckVerdict::Pass
    } else {
        CheckVerdict::Fail
    };
    let word = if verdict == CheckVerdict::Pass {
        "converged"
    } else {
        "not converged"
    };
    let batches = format!(
        "95%, {} batches of {:.0} s{}",
        b.batches,
        b.batch_s,
        b.lag1
            .map(|r| format!(", lag-1 autocorrelation {r:.2}"))
            .unwrap_or_default()
    );
    let within = format!(" within ±{}%", (target(run) * 1000.0).round() / 10.0);
    // An interval wider than the figure itself bounds nothing: a ± of thousands of percent
    // would read as a figure, so the words say what it is instead.
    let message = if relative > 1.0 {
        format!(
            "{key} {shown}: not converged{within}: its interval ({batches}) is wider than the figure itself; run longer"
        )
    } else if verdict == CheckVerdict::Fail {
        format!(
            "{key} {shown} ±{:.1}% ({batches}): {word}{within}; run longer",
            relative * 100.0
        )
    } else {
        format!(
            "{key} {shown} ±{:.1}% ({batches}): {word}",
            relative * 100.0
        )
    };
    let mut c = check(&name, verdict, message);
    c.statistic = Some(relative);
    c.interval = Some(b.interval);
    c.batch_s = Some(b.batch_s);
    Ok(c)
}

fn stationarity(run: &RunFile, metric: Metric) -> Result<RunCheck, SchemaError> {
    let key = metric_key(metric);
    let name = format!("stationarity:{key}");
    if run.plan.rate_plan.is_some() {
        return Ok(check(
            &name,
            CheckVerdict::Unknown,
            format!("{key}: a rate plan changes the load by design; not tested"),
        ));
    }
    let seconds = measured(run);
    let Some((size, x, y, trend)) = trend_of(metric, &seconds)? else {
        return Ok(check(
            &name,
            CheckVerdict::Unknown,
            format!("{key}: too few measured seconds for a trend (5 batches needed)"),
        ));
    };
    // The change, first third of the window against the last: a figure a reader can take
    // in, bounded below by -100% whatever the shape of the trend.
    let third = (y.len() / 3).max(1);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (first, last) = (mean(&y[..third]), mean(&y[y.len() - third..]));
    let change = if first > 0.0 {
        (last - first) / first
    } else {
        0.0
    };
    let large = change.abs() > DRIFT;
    let verdict = match (large, trend.p < ALPHA) {
        (true, true) => CheckVerdict::Fail,
        (true, false) => CheckVerdict::Unknown,
        _ => CheckVerdict::Pass,
    };
    let moved = format!(
        "{key} {} {:.0}% from the first third of the window to the last (slope p {})",
        if change > 0.0 { "rose" } else { "fell" },
        change.abs() * 100.0,
        crate::units::p_value(trend.p)
    );
    let message = match verdict {
        // Other processes taking the cores move every figure through a window on their own:
        // the reader is told so rather than sent to the server (#48).
        CheckVerdict::Fail if run.client_health.verdict == HealthVerdict::MachineBusy => format!(
            "not stationary: {moved}; the machine was busy (MACHINE-BUSY), which moves figures by itself: rerun on a quiet machine"
        ),
        CheckVerdict::Fail => {
            format!("not stationary: {moved}; extend --warmup or check the server")
        }
        CheckVerdict::Unknown => format!(
            "stationarity unclear: {moved}, too few independent batches of {size} s to be sure; run longer"
        ),
        CheckVerdict::Pass => format!(
            "{key} stationary: {:+.1}% from the first third of the window to the last (slope p {})",
            change * 100.0,
            crate::units::p_value(trend.p)
        ),
    };
    let mut c = check(&name, verdict, message);
    c.statistic = Some(change);
    c.p_value = Some(trend.p);
    c.batch_s = Some(size as f64);
    // The slope's interval as a change across the window, relative to the mean.
    let span = x.last().unwrap_or(&0.0) - x.first().unwrap_or(&0.0) + size as f64;
    let across = |slope: f64| slope * span / trend.mean_y.max(f64::MIN_POSITIVE);
    c.interval = Some((
        across(trend.slope - trend.half_width),
        across(trend.slope + trend.half_width),
    ));
    Ok(c)
}

/// Batch size (seconds), batch midpoints, batch values and their least-squares trend.
type Fitted = (usize, Vec<f64>, Vec<f64>, crate::stats::Trend);

/// The trend of `metric` over the measured seconds, in batches grown (from one second, or
/// whatever makes 40 batches) until the residuals about the line are nearly independent
/// (lag-1 autocorrelation at most 0.2), as long as 10 or more batches are left: the slope's
/// p-value assumes independent residuals, and a trend's own drift is not counted against
/// them. `None` under 5 batches.
fn trend_of(
    metric: Metric,
    seconds: &[&vload_schema::Interval],
) -> Result<Option<Fitted>, SchemaError> {
    let mut size = seconds.len().div_ceil(40).max(1);
    loop {
        let (x, y) = series(metric, seconds, size)?;
        let Some(trend) = (y.len() >= 5).then(|| linear_trend(&x, &y, 0.95)).flatten() else {
            return Ok(None);
        };
        let mean_x = x.iter().sum::<f64>() / x.len() as f64;
        let residuals: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(x, y)| y - trend.mean_y - trend.slope * (x - mean_x))
            .collect();
        if crate::stats::lag1_autocorrelation(&residuals) <= 0.2 || y.len() < 10 {
            return Ok(Some((size, x, y, trend)));
        }
        size *= 2;
    }
}

/// Whole batches of `size` seconds: their midpoints and values (p50 of the merged
/// histograms, or successes per second).
fn series(
    metric: Metric,
    seconds: &[&vload_schema::Interval],
    size: usize,
) -> Result<(Vec<f64>, Vec<f64>), SchemaError> {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (i, batch) in seconds.chunks(size).enumerate() {
        if batch.len() < size {
            break;
        }
        let value = match metric {
            Metric::P50 => {
                let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
                for interval in batch {
                    let h = interval.latency.histogram.decode()?;
                    match &mut merged {
                        // Interval histograms share one layout; a failed add leaves m.
                        Some(m) => drop(m.add(&h)),
                        None => merged = Some(h),
                    }
                }
                merged
                    .filter(|h| !h.is_empty())
                    .map(|h| h.value_at_quantile(0.5) as f64)
            }
            _ => {
                let secs: f64 = batch.iter().map(|i| i.duration_s).sum();
                let ok: u64 = batch
                    .iter()
                    .map(|i| i.status_classes.s2xx + i.status_classes.s3xx)
                    .sum();
                Some(ok as f64 / secs)
            }
        };
        if let Some(v) = value {
            x.push((i * size) as f64 + size as f64 / 2.0);
            y.push(v);
        }
    }
    Ok((x, y))
}

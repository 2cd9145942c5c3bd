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

use vload_schema::{Arrival, Cause, CheckVerdict, RunCheck, RunFile, SchemaError, UntilStable};

use crate::metric::Metric;
use crate::stats::{linear_trend, welch};
use crate::units::{duration_ns, percent};
use crate::within_run::{batched, measured};

/// The time below which a sender's gaps are not resolved (its wake-up latency).
pub const RESOLUTION_S: f64 = 100e-6;
/// The p-value under which a test fails.
pub const ALPHA: f64 = 0.01;
/// A convergence interval wider than this (± share of the figure) has not converged.
pub const CONVERGED: f64 = 0.05;
/// A trend that moves a figure by more than this share across the window.
pub const DRIFT: f64 = 0.10;

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
        |w| format!("±{:.1}%", w * 100.0),
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
                "not stationary: {label} {} from {} to {} between the first and last third of the window (p {:.1e}); {}",
                if w.difference > 0.0 { "rose" } else { "fell" },
                percent(first),
                percent(last),
                w.p,
                if metric == Metric::ErrorRate {
                    "the server's health changed during the run"
                } else {
                    "a cache still filling (extend --warmup) or being evicted"
                }
            )
        } else {
            format!(
                "{label} stationary: {} then {} (first and last third, p {:.2})",
                percent(first),
                percent(last),
                w.p
            )
        },
    );
    c.statistic = Some(w.difference);
    c.p_value = Some(w.p);
    c.interval = Some(w.interval);
    Some(c)
}

fn check(name: &str, verdict: CheckVerdict, message: String) -> RunCheck {
    RunCheck {
        name: name.to_owned(),
        verdict,
        statistic: None,
        p_value: None,
        interval: None,
        batch_s: None,
        message,
    }
}

/// Send lag for every open loop; the gaps' fit for Poisson.
fn arrivals(run: &RunFile) -> RunCheck {
    let t = &run.totals;
    let late = if t.intended > 0 {
        (t.late_sends + t.unsent) as f64 / t.intended as f64
    } else {
        0.0
    };
    let lag = run.latency.dispatch_lag.as_ref().and_then(|l| {
        let h = l.histogram.decode().ok()?;
        let m = &l.moments;
        (m.n > 0).then(|| {
            let q = |q: f64| duration_ns(m.clamp(h.value_at_quantile(q)) as f64);
            format!(
                "lag p50 {}, p99 {}, max {}",
                q(0.5),
                q(0.99),
                duration_ns(m.max_ns as f64)
            )
        })
    });
    let lag = lag.unwrap_or_else(|| "no lag recorded".to_owned());
    let late_text = format!(
        "{} of sends more than 1 ms late or never sent",
        percent(late)
    );
    let mut c = check("arrivals", CheckVerdict::Pass, String::new());
    c.statistic = Some(late);
    let mut wrong = Vec::new();
    if late > 0.01 {
        wrong.push(late_text.clone());
    }
    let mut fit = String::new();
    if run.plan.arrival == Arrival::Poisson
        && let Some(sample) = &run.arrivals
    {
        let rate = run
            .plan
            .rate_per_s
            .unwrap_or(0.0)
            .max(peak(run))
            .max(f64::MIN_POSITIVE);
        // One thread's rate: the plan is the whole attack's, a shard runs 1/N of it. (A
        // merge of shards keeps one shard's threads: its resolution is then overstated,
        // which tests less, never wrongly.)
        let senders = f64::from(run.plan.threads.max(1))
            * run
                .plan
                .shard
                .as_ref()
                .map_or(1.0, |s| f64::from(s.count.max(1)));
        let resolution = RESOLUTION_S * rate / senders;
        match censored_ks(&sample.gaps, resolution) {
            _ if resolution > 0.5 => {
                fit = format!(
                    "; gaps not tested: at {}/s a thread's gaps are mostly under the sender's {} resolution",
                    rate.round(),
                    duration_ns(RESOLUTION_S * 1e9)
                );
            }
            Some((d, p)) => {
                c.statistic = Some(d);
                c.p_value = Some(p);
                fit = format!(
                    "; Poisson gaps against the plan's exponential: KS D {d:.3}, p {p:.3} ({} of {} gaps)",
                    sample.gaps.len(),
                    sample.sends
                );
                if p < ALPHA {
                    wrong.push(format!(
                        "the sends did not follow the planned Poisson process (KS D {d:.3}, p {p:.2e}): {}",
                        burst_cause(run)
                    ));
                }
            }
            None => fit = "; too few gaps to test".to_owned(),
        }
    }
    if wrong.is_empty() {
        c.message = format!("arrivals faithful: {lag}; {late_text}{fit}");
    } else {
        c.verdict = CheckVerdict::Fail;
        c.message = format!("arrivals not faithful: {}; {lag}", wrong.join("; "));
    }
    c
}

/// What made the sends bursty, as far as the client's health can tell.
fn burst_cause(run: &RunFile) -> String {
    let named = |cause: Cause| {
        run.client_health
            .signals
            .iter()
            .filter(|s| s.cause == cause)
            .map(|s| s.signal.as_str())
            .collect::<Vec<_>>()
    };
    let (machine, client) = (named(Cause::Machine), named(Cause::Client));
    if !client.is_empty() {
        format!(
            "bursts after vload itself fell behind or was paused (client health: {})",
            client.join(", ")
        )
    } else if !machine.is_empty() {
        format!(
            "bursts after the machine paused vload (client health: {}); run on a quieter machine",
            machine.join(", ")
        )
    } else {
        "bursts, as from a frozen or overloaded client".to_owned()
    }
}

fn peak(run: &RunFile) -> f64 {
    run.plan
        .rate_plan
        .iter()
        .flatten()
        .map(|s| s.from_rate_per_s.max(s.to_rate_per_s))
        .fold(0.0, f64::max)
}

/// KS distance of `gaps` from the unit exponential at and above `from`, the gaps below it
/// pooled at `from` (a left-censored test: nothing under `from` is compared), with the
/// asymptotic p-value; `None` under 50 gaps.
pub fn censored_ks(gaps: &[f64], from: f64) -> Option<(f64, f64)> {
    if gaps.len() < 50 {
        return None;
    }
    let mut sorted = gaps.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let pooled = sorted.partition_point(|g| *g <= from);
    // The step at `from`: the pool against F(from).
    let at_from = (pooled as f64 / n - (1.0 - (-from).exp())).abs();
    let d = sorted[pooled..]
        .iter()
        .enumerate()
        .map(|(j, x)| {
            let cdf = 1.0 - (-x).exp();
            let i = (pooled + j) as f64;
            ((i + 1.0) / n - cdf).max(cdf - i / n)
        })
        .fold(at_from, f64::max);
    Some((d, crate::stats::kolmogorov_sf(n.sqrt() * d)))
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
    let mut c = check(
        &name,
        verdict,
        format!(
            "{key} {shown} ±{:.1}% (95%, {} batches of {:.0} s{}): {word}{}",
            relative * 100.0,
            b.batches,
            b.batch_s,
            b.lag1
                .map(|r| format!(", lag-1 autocorrelation {r:.2}"))
                .unwrap_or_default(),
            if verdict == CheckVerdict::Fail {
                format!(
                    " within ±{}%; run longer",
                    (target(run) * 1000.0).round() / 10.0
                )
            } else {
                String::new()
            }
        ),
    );
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
        "{key} {} {:.0}% from the first third of the window to the last (slope p {:.1e})",
        if change > 0.0 { "rose" } else { "fell" },
        change.abs() * 100.0,
        trend.p
    );
    let message = match verdict {
        CheckVerdict::Fail => {
            format!("not stationary: {moved}; extend --warmup or check the server")
        }
        CheckVerdict::Unknown => format!(
            "stationarity unclear: {moved}, too few independent batches of {size} s to be sure; run longer"
        ),
        CheckVerdict::Pass => format!(
            "{key} stationary: {:+.1}% from the first third of the window to the last (slope p {:.2})",
            change * 100.0,
            trend.p
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

/// Seconds a step must be measured to tell whether it was steady: the trend's 5 batches.
pub const STEADY_SECONDS: usize = 5;

/// Whether a run (a sweep's step) reached a steady state: its median latency did not rise
/// from the first third of its measured seconds to the last by more than [`DRIFT`] and by
/// more than `floor_ns` (a rise too small to matter at the SLO: a 30 µs wobble of a 100 µs
/// median is the machine's noise, not a queue), and it left no backlog at its end (requests
/// in flight at the window's end not above twice the typical second's, and ten). A queue
/// that grows through a step has not met an SLO, it has not yet shown its miss; and a step
/// too short to tell is not taken as steady.
pub fn steady_state(run: &RunFile, floor_ns: f64) -> RunCheck {
    let seconds: Vec<&vload_schema::Interval> = measured(run)
        .into_iter()
        .filter(|i| i.duration_s >= 0.5)
        .collect();
    let name = "steady";
    if seconds.len() < STEADY_SECONDS {
        return check(
            name,
            CheckVerdict::Unknown,
            format!(
                "too few measured seconds to tell whether the step was steady ({} of {STEADY_SECONDS} needed)",
                seconds.len()
            ),
        );
    }
    let p50s: Vec<f64> = seconds
        .iter()
        .filter_map(|i| {
            let h = i.latency.histogram.decode().ok()?;
            (!h.is_empty()).then(|| h.value_at_quantile(0.5) as f64)
        })
        .collect();
    if p50s.len() < STEADY_SECONDS {
        return check(
            name,
            CheckVerdict::Unknown,
            format!(
                "too few measured seconds with responses to tell whether the step was steady ({} of {STEADY_SECONDS} needed)",
                p50s.len()
            ),
        );
    }
    let third = (p50s.len() / 3).max(1);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (first, last) = (mean(&p50s[..third]), mean(&p50s[p50s.len() - third..]));
    let change = if first > 0.0 {
        (last - first) / first
    } else {
        0.0
    };
    let mut flights: Vec<u64> = seconds.iter().map(|i| i.in_flight).collect();
    let end = *flights.last().expect("five seconds or more");
    flights.sort_unstable();
    let typical = flights[flights.len() / 2];
    let mut c = if change > DRIFT && last - first > floor_ns {
        check(
            name,
            CheckVerdict::Fail,
            format!(
                "not steady: p50 rose {:.0}% ({} to {}) from the first third of the step to the last: the queue was growing",
                change * 100.0,
                crate::units::duration_ns(first),
                crate::units::duration_ns(last)
            ),
        )
    } else if end > 2 * typical + 10 {
        check(
            name,
            CheckVerdict::Fail,
            format!(
                "not steady: {end} requests in flight at the step's end against {typical} in a typical second: a backlog was building"
            ),
        )
    } else {
        check(
            name,
            CheckVerdict::Pass,
            format!(
                "steady: p50 {:+.0}% from the first third of the step to the last, {end} requests in flight at its end ({typical} typical)",
                change * 100.0
            ),
        )
    };
    c.statistic = Some(change);
    c.interval = Some((first, last));
    c
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ks_unit_exponential;

    /// Unit exponentials from a fixed uniform sequence.
    fn exponentials(n: usize) -> Vec<f64> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                -(((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64).ln()
            })
            .collect()
    }

    #[test]
    fn faithful_gaps_pass_and_gaps_pooled_under_the_resolution_do_not_count() {
        let mut gaps = exponentials(2_000);
        let (_, p) = censored_ks(&gaps, 0.2).unwrap();
        assert!(p > ALPHA, "p {p}");
        // A sender that cannot resolve gaps under 0.2: they leave together, as zeros.
        for g in &mut gaps {
            if *g < 0.2 {
                *g = 0.0;
            }
        }
        let (_, p) = censored_ks(&gaps, 0.2).unwrap();
        assert!(p > ALPHA, "pooled under the resolution: p {p}");
        // Tested from 0 instead, the pooled gaps fail.
        assert!(ks_unit_exponential(&gaps).unwrap().p < ALPHA);
    }

    #[test]
    fn a_burst_after_a_freeze_fails() {
        // A second frozen at 2,000/s, then its 2,000 due requests sent at once: a fifth of
        // the gaps are zero.
        let mut gaps = exponentials(8_000);
        gaps.extend(std::iter::repeat_n(0.0, 2_000));
        let (d, p) = censored_ks(&gaps, 0.2).unwrap();
        assert!(p < 1e-6 && d > 0.1, "d {d} p {p}");
    }
}

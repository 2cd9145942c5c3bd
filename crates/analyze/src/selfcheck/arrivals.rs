//! The arrivals check: were the sends as late as the plan allows, and did Poisson gaps
//! follow the planned exponential?

use vload_schema::{Arrival, Cause, CheckVerdict, RunCheck, RunFile};

use super::limits::{ALPHA, RESOLUTION_S, check};
use crate::units::{duration_ns, percent};

/// Send lag for every open loop; the gaps' fit for Poisson.
pub(super) fn arrivals(run: &RunFile) -> RunCheck {
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
    let fit = poisson_fit(run, &mut c, &mut wrong);
    if wrong.is_empty() {
        c.message = format!("arrivals faithful: {lag}; {late_text}{fit}");
    } else {
        c.verdict = CheckVerdict::Fail;
        c.message = format!("arrivals not faithful: {}; {lag}", wrong.join("; "));
    }
    c
}

/// The KS test of a Poisson plan's gaps: its text for the message; a failure goes to
/// `wrong`, the statistic and p-value to `c`.
fn poisson_fit(run: &RunFile, c: &mut RunCheck, wrong: &mut Vec<String>) -> String {
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
                    "; Poisson gaps against the plan's exponential: KS D {d:.3}, p {} ({} of {} gaps)",
                    crate::units::p_value(p),
                    sample.gaps.len(),
                    sample.sends
                );
                if p < ALPHA {
                    wrong.push(format!(
                        "the sends did not follow the planned Poisson process (KS D {d:.3}, p {}): {}",
                        crate::units::p_value(p),
                        burst_cause(run)
                    ));
                }
            }
            None => fit = "; too few gaps to test".to_owned(),
        }
    }
    fit
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

//! `--until-stable`: ends the attack's window once the p99's interval is narrow enough.
//!
//! Once a second, from [`MIN_STABLE`] measured seconds on, the p99's 95% interval is
//! computed from the measured seconds so far exactly as the report's convergence check does
//! (batch means, batches grown until neighbours are nearly independent); once its half width
//! is within the target share of the p99, the window ends as if it had been planned to end
//! there. A run that never gets there runs to `--max-duration` and says so.

use std::time::Duration;

use hdrhistogram::Histogram;
use vload_analyze::Metric;
use vload_analyze::within_run::batched_of;
use vload_engine::Interrupt;
use vload_schema::{Interval, Moments, UntilStable};

use crate::attack::flags::MIN_STABLE;

/// Watches the measured seconds and ends the window once the p99 has converged.
pub(crate) struct StableWatch {
    target: f64,
    max_duration: Duration,
    interrupt: Interrupt,
    measured: Vec<Interval>,
    merged: Option<Histogram<u64>>,
    moments: Moments,
    half_width: Option<f64>,
    converged_after_s: Option<f64>,
}

impl StableWatch {
    /// A watch for a target half width (a share of the p99) that ends the window through
    /// `interrupt`.
    pub(crate) fn new(target: f64, max_duration: Duration, interrupt: Interrupt) -> Self {
        StableWatch {
            target,
            max_duration,
            interrupt,
            measured: Vec::new(),
            merged: None,
            moments: Moments::new(),
            half_width: None,
            converged_after_s: None,
        }
    }

    /// Takes in one more second; ends the window when the p99 has converged.
    pub(crate) fn on_record(&mut self, interval: &Interval) {
        if interval.warmup || self.converged_after_s.is_some() {
            return;
        }
        let Ok(histogram) = interval.latency.histogram.decode() else {
            return;
        };
        match &mut self.merged {
            // Interval histograms share one layout: adding one cannot fail.
            Some(merged) => drop(merged.add(&histogram)),
            None => self.merged = Some(histogram),
        }
        self.moments.merge(&interval.latency.moments);
        self.measured.push(interval.clone());
        self.half_width = self.p99_half_width();
        let seconds = self.measured.len() as u64;
        if seconds >= MIN_STABLE.as_secs() && self.half_width.is_some_and(|w| w <= self.target) {
            self.converged_after_s = Some(seconds as f64);
            self.interrupt.end_window();
        }
    }

    /// The p99 interval's half width as a share of the p99 over the measured seconds so far.
    fn p99_half_width(&self) -> Option<f64> {
        let merged = self.merged.as_ref().filter(|h| !h.is_empty())?;
        let p99 = self.moments.clamp(merged.value_at_quantile(0.99)) as f64;
        let seconds: Vec<&Interval> = self.measured.iter().collect();
        let batched = batched_of(Metric::P99, &seconds).ok()??;
        (p99 > 0.0).then(|| (batched.interval.1 - batched.interval.0) / 2.0 / p99)
    }

    /// The record for the run file.
    pub(crate) fn record(&self) -> UntilStable {
        UntilStable {
            target: self.target,
            max_duration_s: self.max_duration.as_secs_f64(),
            converged_after_s: self.converged_after_s,
            half_width: self.half_width,
        }
    }
}

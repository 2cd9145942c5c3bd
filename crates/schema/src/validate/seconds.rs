//! The seconds law, which a run vload has just made must keep (the ledger law sees only
//! totals): each request due is entered in the second it fell due in. A freeze across the
//! window's end once filed every request due in the frozen seconds in the second the freeze
//! began (at 400/s: that second 800, the next 0), which balanced in total.
//!
//! Timeouts are filed in the second the worker sees them, which its clock keeps the second
//! they happen in (the clock steps before events are entered, expiries wait for their
//! second's step, requests whose deadline passed before they could be sent are never sent).
//! A freeze in the middle of entering one batch of events can still file a few of them in
//! the second before (86 of 4 million at 1,000,000/s frozen 2 s): not a law this file can
//! be held to, so it is not checked here.

use crate::{Arrival, RunFile};

impl RunFile {
    /// Checks each second's due count against a constant schedule: the requests of a paced
    /// open loop at a constant rate fall `1 / rate` apart, so a second holds `rate` of them,
    /// one more or fewer for each thread's own share of the schedule.
    ///
    /// # Errors
    /// A sentence naming the first second that breaks the law, and how.
    pub fn check_seconds(&self) -> Result<(), String> {
        let plan = &self.plan;
        let rate = match &plan.shard {
            Some(shard) => shard.rate_per_s,
            None => plan.rate_per_s,
        };
        let constant =
            plan.arrival == Arrival::Constant && plan.rate_plan.is_none() && self.sweep.is_none();
        let slack = f64::from(plan.threads.max(1)) + 1.0;
        // Requests fall due until the window's end.
        let sending_ends = self.window.warmup_s + self.window.measured_s;
        for (i, interval) in self.intervals.iter().enumerate() {
            let ends = interval.start_s + interval.duration_s;
            let Some(rate) = rate.filter(|_| constant) else {
                continue;
            };
            let due = interval.intended as f64;
            let most = rate * interval.duration_s + slack;
            // A whole second inside the window of a run that was not stopped holds its
            // share; the last one may be cut by the window's end.
            let least = if ends <= sending_ends - 1e-3 && !self.interrupted {
                rate * interval.duration_s - slack
            } else {
                0.0
            };
            if due > most || due < least {
                return Err(format!(
                    "intervals[{i}] (from {:.3} s) holds {} requests due, but a schedule of {rate}/s puts {:.0} in it",
                    interval.start_s,
                    interval.intended,
                    rate * interval.duration_s
                ));
            }
        }
        Ok(())
    }
}

//! The seconds law, which a run vload has just made must keep (the ledger law sees only
//! totals): each request due is entered in the second it fell due in, and a request times
//! out no earlier than its deadline. A freeze across the window's end once filed every
//! request due in the frozen seconds in the second the freeze began (at 400/s: that second
//! 800, the next 0), and an overloaded worker filed 2-second timeouts in seconds 0 and 1;
//! both balanced in total.

use crate::{Arrival, ErrorKind, RunFile};

impl RunFile {
    /// Checks each second's due count against a constant schedule (the requests of a paced
    /// open loop at a constant rate fall `1 / rate` apart, so a second holds `rate` of them,
    /// one more or fewer for each thread's own share of the schedule) and that no second
    /// ending before `--timeout` holds a request timeout.
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
            let timeouts = interval
                .errors
                .get(&ErrorKind::RequestTimeout)
                .copied()
                .unwrap_or(0);
            // A millisecond of slack for the second's own rounding.
            if timeouts > 0 && ends + 1e-3 < plan.timeout_s {
                return Err(format!(
                    "intervals[{i}] (ending {ends:.3} s after the start) holds {timeouts} request timeouts, but none can happen before the timeout of {} s",
                    plan.timeout_s
                ));
            }
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

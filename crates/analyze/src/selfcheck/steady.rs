//! Whether a sweep's step reached a steady state.

use vload_schema::{CheckVerdict, RunCheck, RunFile};

use super::limits::{DRIFT, check};
use crate::within_run::measured;

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

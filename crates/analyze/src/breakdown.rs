//! The run's breakdowns, summarised: each group's share of the requests, its throughput,
//! errors, hit ratio and latency percentiles.

use serde::Serialize;
use vload_schema::{Breakdown, RunFile, SchemaError};

use crate::latency::LatencySummary;

/// One breakdown of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownSummary {
    /// What the groups are: `host`, `class`, `set`, `pass`, `status`, `cache` or `size`.
    pub by: String,
    /// Distinct names folded into the `(other)` group.
    pub folded: u64,
    /// The groups, in the run file's order.
    pub groups: Vec<GroupSummary>,
}

/// One group of a breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    /// Its name.
    pub name: String,
    /// Requests that ended.
    pub requests: u64,
    /// Its share of the window's requests, 0 to 1.
    pub share: f64,
    /// Requests a second of the measured window.
    pub per_second: f64,
    /// Failures (no response).
    pub errors: u64,
    /// Responses by status class, e.g. `2xx:300 5xx:100`.
    pub statuses: String,
    /// Hits over classified responses.
    pub hit_ratio: Option<f64>,
    /// Its latency (the run's primary kind).
    pub latency: LatencySummary,
    /// Its responses' wait for the first byte, where the breakdown keeps phases.
    pub first_byte: Option<LatencySummary>,
    /// Its responses' transfer, likewise.
    pub transfer: Option<LatencySummary>,
    /// Body bytes received.
    pub bytes_in: u64,
}

impl BreakdownSummary {
    /// Every breakdown of `run`.
    ///
    /// # Errors
    /// A group's histogram does not decode.
    pub fn of_run(run: &RunFile) -> Result<Vec<BreakdownSummary>, SchemaError> {
        run.breakdowns.iter().map(|b| Self::of(run, b)).collect()
    }

    fn of(run: &RunFile, b: &Breakdown) -> Result<BreakdownSummary, SchemaError> {
        let total = run.totals.completed.max(1) as f64;
        let seconds = run.window.measured_s + run.window.wait_s;
        let groups = b
            .groups
            .iter()
            .map(|g| {
                let c = &g.status_classes;
                let statuses = [c.s1xx, c.s2xx, c.s3xx, c.s4xx, c.s5xx]
                    .iter()
                    .zip(1..)
                    .filter(|(n, _)| **n > 0)
                    .map(|(n, class)| format!("{class}xx:{}", crate::units::count(*n)))
                    .collect::<Vec<_>>()
                    .join(" ");
                Ok(GroupSummary {
                    name: g.name.clone(),
                    requests: g.requests,
                    share: g.requests as f64 / total,
                    per_second: if seconds > 0.0 {
                        g.requests as f64 / seconds
                    } else {
                        0.0
                    },
                    errors: g.errors,
                    statuses,
                    hit_ratio: g.cache.hit_ratio(),
                    latency: LatencySummary::of(&g.latency)?,
                    first_byte: g.first_byte.as_ref().map(LatencySummary::of).transpose()?,
                    transfer: g.transfer.as_ref().map(LatencySummary::of).transpose()?,
                    bytes_in: g.bytes_in,
                })
            })
            .collect::<Result<_, SchemaError>>()?;
        Ok(BreakdownSummary {
            by: b.by.clone(),
            folded: b.folded,
            groups,
        })
    }

    /// True when the breakdown tells more than the totals: more than one group.
    pub fn is_telling(&self) -> bool {
        self.groups.len() > 1
    }
}

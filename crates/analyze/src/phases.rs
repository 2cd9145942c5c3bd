//! Where a request's time went: its wait for the first byte and its transfer, and, for the
//! misses whose response carried the origin's own time (`Server-Timing`), the origin's share
//! and the proxy's.

use serde::Serialize;
use vload_schema::{RunFile, SchemaError};

use crate::latency::LatencySummary;

/// A run's phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    /// From the request's write to its response's first byte.
    pub first_byte: LatencySummary,
    /// From the first byte to the last.
    pub transfer: LatencySummary,
    /// The origin's share and the proxy's, when misses carried the origin's time.
    pub proxy: Option<ProxyShare>,
    /// Misses whose `Server-Timing` claimed more than their own wait for the first byte (a
    /// clock skew or a lying origin), left out of the shares.
    pub timing_beyond_wait: u64,
}

/// The misses that carried the origin's own time, split between the origin and the proxy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProxyShare {
    /// The `Server-Timing` metric read.
    pub metric: String,
    /// The origin's own time.
    pub origin: LatencySummary,
    /// The first byte's wait beyond it: the proxy's, with the network to and from it.
    pub added: LatencySummary,
    /// The hits' wait for the first byte: the cache alone.
    pub hits: Option<LatencySummary>,
}

impl PhaseSummary {
    /// The phases `run` recorded; `None` in files that have none (before #48, or without a
    /// response).
    ///
    /// # Errors
    /// A histogram does not decode.
    pub fn of(run: &RunFile) -> Result<Option<PhaseSummary>, SchemaError> {
        let l = &run.latency;
        let (Some(first_byte), Some(transfer)) = (&l.first_byte, &l.transfer) else {
            return Ok(None);
        };
        let proxy = match (&l.origin, &l.proxy_added) {
            (Some(origin), Some(added)) => {
                let hits = run
                    .breakdowns
                    .iter()
                    .find(|b| b.by == "cache")
                    .and_then(|b| b.groups.iter().find(|g| g.name == "hit"))
                    .and_then(|g| g.first_byte.as_ref())
                    .map(LatencySummary::of)
                    .transpose()?;
                Some(ProxyShare {
                    metric: run.plan.server_timing.clone().unwrap_or_default(),
                    origin: LatencySummary::of(origin)?,
                    added: LatencySummary::of(added)?,
                    hits,
                })
            }
            _ => None,
        };
        Ok(Some(PhaseSummary {
            first_byte: LatencySummary::of(first_byte)?,
            transfer: LatencySummary::of(transfer)?,
            proxy,
            timing_beyond_wait: run.totals.server_timing_beyond_wait,
        }))
    }
}

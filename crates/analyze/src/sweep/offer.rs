//! What the machine did to a sweep step: whether a busy machine's lateness changed what the
//! step offered (the rule that lets it stop a step only then, #45), and whether a missed
//! step is worth running again.

use vload_schema::{Cause, ClientHealth, HealthVerdict, SloMetric, SloTerm, StageRecord};

/// A step whose throughput is more than this share below its rate fell behind.
pub const FELL_BEHIND: f64 = 0.05;

/// True when the step's own health points at the machine (a pause, requests sent late while
/// vload idled, a thread waiting for a CPU): evidence that a miss may not be the server's.
pub fn machine_evidence(step: &StageRecord) -> bool {
    step.client_health
        .as_ref()
        .is_some_and(|h| h.signals.iter().any(|s| s.cause == Cause::Machine))
}

/// Whether a missed step is worth running again: only with evidence that the machine, not
/// the server, caused the miss ([`machine_evidence`]), and only while the server kept pace
/// with the rate (throughput within [`FELL_BEHIND`] of it): a server past its capacity falls
/// behind and would miss again.
pub fn repeatable(step_rate: f64, step: &StageRecord) -> bool {
    step.throughput_per_s >= (1.0 - FELL_BEHIND) * step_rate && machine_evidence(step)
}

/// Unsent requests beyond this share of those due made the step offer less than planned.
const UNSENT_SHARE: f64 = 0.01;
/// Sends this late (p99 of the dispatch lag or of the hiccups) against the tightest latency
/// bound of the SLO made the offered load burstier than planned, by a margin the SLO feels.
const LATE_SHARE_OF_LIMIT: f64 = 0.25;

/// How a client the machine starved changed what a step offered, if it did: requests never
/// sent (the rate fell short), or sends bunched into bursts comparable to the SLO's latency
/// bound. `None` when the step offered its load as planned, lateness and all. A client that
/// was its own limit (client-bound) always changed it: its threads also read the responses
/// late, which the latency counts as the server's.
pub(super) fn offer_changed(
    terms: &[SloTerm],
    step: &StageRecord,
    h: &ClientHealth,
) -> Option<String> {
    match h.verdict {
        HealthVerdict::ClientBound => return Some("vload's own thread was the limit".into()),
        HealthVerdict::MachineBusy => {}
        _ => return None,
    }
    if step.throughput_per_s < (1.0 - FELL_BEHIND) * step.to_rate_per_s {
        return Some(format!(
            "its throughput fell behind the rate while the machine was busy ({}/s of {}/s): whose doing cannot be told",
            step.throughput_per_s.round(),
            step.to_rate_per_s.round()
        ));
    }
    if step.intended > 0 && step.unsent as f64 > UNSENT_SHARE * step.intended as f64 {
        return Some(format!(
            "{} of {} requests due were never sent: the step offered less than its rate",
            step.unsent, step.intended
        ));
    }
    let late = h.dispatch_lag_p99_ns.max(h.hiccup_p99_ns)?;
    let tightest = terms
        .iter()
        .filter(|t| t.metric != SloMetric::Errors)
        .map(|t| t.limit)
        .reduce(f64::min)?;
    (late as f64 >= LATE_SHARE_OF_LIMIT * tightest).then(|| {
        format!(
            "sends up to {} late (p99), a quarter or more of the SLO's {}: bursts the SLO feels",
            crate::units::duration_ns(late as f64),
            crate::units::duration_ns(tightest)
        )
    })
}

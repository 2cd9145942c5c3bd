//! The phases row (hey's "resp wait" and "resp read", in percentiles) and, when misses
//! carried the origin's own time, the proxy's share.

use crate::latency::LatencySummary;
use crate::summary::Summary;
use crate::units::{count, duration_ns};

use super::rows::{or_na, row};

/// p50 and p99 of `l`, "n/a" where too few values support one.
fn p50_p99(l: &LatencySummary) -> String {
    let q = |name: &str| or_na(l.quantile(name).map(|v| duration_ns(v as f64)));
    format!("{}, {}", q("p50"), q("p99"))
}

pub(super) fn render_phases(out: &mut String, s: &Summary) {
    let Some(phases) = &s.phases else { return };
    row(
        out,
        "Phases",
        "[first byte, transfer: p50, p99]",
        &format!(
            "{}; {}",
            p50_p99(&phases.first_byte),
            p50_p99(&phases.transfer)
        ),
    );
    let beyond = phases.timing_beyond_wait;
    if beyond > 0 {
        row(
            out,
            "Origin time",
            "[left out]",
            &format!(
                "{} misses claimed more origin time (Server-Timing) than their own wait for the first byte: a clock skew or a lying origin",
                count(beyond)
            ),
        );
    }
    let Some(proxy) = &phases.proxy else { return };
    row(
        out,
        "Origin time",
        &format!("[misses with {} dur, p50, p99]", proxy.metric),
        &format!("{}, {}", count(proxy.origin.n), p50_p99(&proxy.origin)),
    );
    row(
        out,
        "Proxy added",
        "[first byte - origin: p50, p99]",
        &p50_p99(&proxy.added),
    );
    if let Some(hits) = &proxy.hits {
        row(out, "Hits alone", "[first byte p50, p99]", &p50_p99(hits));
    }
}

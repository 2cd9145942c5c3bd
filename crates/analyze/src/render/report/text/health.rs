//! The client-health verdict and the checks in the text report.

use std::fmt::Write as _;

use vload_schema::HealthVerdict;

use crate::summary::Summary;
use crate::units::{count, duration_ns, percent};

/// The verdict in words: what limited the load, and what that makes of the numbers. One
/// word per cause, the signal that proves it named.
pub(crate) fn health_headline(h: &vload_schema::ClientHealth) -> String {
    use vload_schema::Cause;
    let top = h
        .signals
        .iter()
        .find(|s| s.level == h.verdict && s.level != HealthVerdict::Ok);
    let meaning = match (h.verdict, top.map(|s| s.cause)) {
        (HealthVerdict::Ok, _) => "the load was applied as planned",
        (HealthVerdict::ClientBound, _) => {
            "vload's own threads were the limit: these numbers measure vload, not the server"
        }
        (HealthVerdict::MachineBusy, _) => {
            "other processes or a pause of the machine kept vload from applying the planned load: the numbers include that"
        }
        (HealthVerdict::ConnectionCapped, _) => {
            "requests waited for one of the connections vload may open (--max-connections): their wait is in their response time"
        }
        (HealthVerdict::ServerLimited, _) => {
            "the server was too slow for the planned load (requests waited for connections it had not yet accepted or answered): the numbers are the server's"
        }
        // Files of schema v1 and v2.
        (HealthVerdict::Warn, Some(Cause::Machine)) => {
            "the machine, not vload, paused: results include those pauses"
        }
        (HealthVerdict::Warn, Some(Cause::ConnectionCap)) => {
            "requests waited for a free connection (--max-connections)"
        }
        (HealthVerdict::Warn, _) => "vload came close to its limits",
    };
    match top {
        Some(signal) => format!(
            "{}: {meaning} (signal: {})",
            h.verdict.word(),
            signal.signal
        ),
        None => format!("{}: {meaning}", h.verdict.word()),
    }
}

pub(super) fn render_checks(out: &mut String, s: &Summary) {
    if s.checks.is_empty() {
        return;
    }
    for (i, c) in s.checks.iter().enumerate() {
        let mark = match c.verdict {
            vload_schema::CheckVerdict::Pass => "ok",
            vload_schema::CheckVerdict::Fail => "FAIL",
            vload_schema::CheckVerdict::Unknown => "?",
        };
        let title = if i == 0 { "Checks" } else { "" };
        let _ = writeln!(out, "{title:<14}{mark:<5}{}", c.message);
    }
}

pub(super) fn render_health(out: &mut String, s: &Summary) {
    let h = &s.health;
    let verdict = health_headline(h);
    let mut facts = vec![
        format!("client CPU {} of all cores", percent(h.cpu_util)),
        format!("busiest thread on a CPU {}", percent(h.max_thread_busy)),
    ];
    if let Some(waiting) = h.max_thread_waiting {
        facts.push(format!("waiting for one {}", percent(waiting)));
    }
    if let Some(peak) = h.peak_connections {
        facts.push(format!("connections at most {}", count(peak)));
    }
    if let Some(hiccup) = h.hiccup_p99_ns {
        facts.push(format!("hiccup p99 {}", duration_ns(hiccup as f64)));
    }
    if let Some(lag) = h.dispatch_lag_p99_ns {
        facts.push(format!("dispatch lag p99 {}", duration_ns(lag as f64)));
        facts.push(format!("late sends {}", count(s.late_sends)));
    }
    let _ = writeln!(out, "Client health {verdict}");
    let _ = writeln!(out, "{:14}{}", "", facts.join(", "));
    if h.signals.is_empty() {
        // Files of schema v1: reasons without signals.
        for reason in &h.reasons {
            let _ = writeln!(out, "{:14}- {reason}", "");
        }
    }
    for signal in &h.signals {
        let note = if signal.level == HealthVerdict::Ok {
            "note: "
        } else {
            ""
        };
        let _ = writeln!(out, "{:14}- {note}{}", "", signal.message);
    }
}

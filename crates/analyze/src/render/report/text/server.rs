//! The server's own account in the text report: its counters beside vload's, and the
//! server's CPU.

use std::fmt::Write as _;

use super::rows::{or_na, row};
use crate::summary::Summary;
use crate::units::{count, duration_ns, percent, seconds};

pub(super) fn render_server(out: &mut String, s: &Summary) {
    let Some(server) = &s.server else {
        return;
    };
    if let Some(v) = &server.stats {
        render_stats(out, v, server);
    }
    if let Some(p) = &server.process {
        row(
            out,
            "Server CPU",
            "[total, per request, cores]",
            &format!(
                "{}, {}, {}  (pid {} {}, {} process{}; user {}, system {})",
                seconds(p.cpu_s()),
                or_na(server.cpu_per_request_ns.map(duration_ns)),
                or_na(server.cores.map(|c| format!("{c:.2}"))),
                p.pid,
                p.name,
                p.processes,
                if p.processes == 1 { "" } else { "es" },
                seconds(p.user_s),
                seconds(p.system_s)
            ),
        );
    }
    for finding in &server.findings {
        let _ = writeln!(out, "{:14}! {finding}", "");
    }
}

/// The server's counters beside vload's counts for the span they cover: the common ones
/// where the source has them, "n/a" where it has not.
fn render_stats(
    out: &mut String,
    v: &vload_schema::StatsRecord,
    server: &crate::summary::ServerSummary,
) {
    let name = v.display_name();
    let c = |value: Option<u64>| value.map_or_else(|| "n/a".to_owned(), count);
    let span = server.vload_span.unwrap_or(crate::summary::SpanCounts {
        completed: 0,
        hits: 0,
        connections: 0,
    });
    let over = if v.covers == "attack" {
        format!(
            "whole attack, warm-up included: {name} had not published the warm-up's counts at its end"
        )
    } else {
        "measured window".to_owned()
    };
    let where_ = if v.address.is_empty() {
        String::new()
    } else {
        format!(" ({})", v.address)
    };
    let _ = writeln!(out, "{:14}{over}{where_}", format!("{name} "));
    let ratio = |part: Option<u64>, whole: Option<u64>| match (part, whole) {
        (Some(part), Some(whole)) if whole > 0 => percent(part as f64 / whole as f64),
        _ => "n/a".to_owned(),
    };
    let common = &v.common;
    row(
        out,
        "",
        "[client requests, hits, misses]",
        &format!(
            "{}, {}, {}  (vload {}, {}; hit ratio {name} {}, vload {})",
            c(common.requests),
            c(common.hits),
            c(common.misses),
            count(span.completed),
            count(span.hits),
            ratio(common.hits, common.requests),
            ratio(Some(span.hits), Some(span.completed))
        ),
    );
    row(
        out,
        "",
        "[to origin, connections, evicted]",
        &format!(
            "{}, {}, {}  (origin requests per request {}; vload opened {} connections)",
            c(common.origin_requests),
            c(common.connections),
            c(common.evictions),
            ratio(common.origin_requests, common.requests),
            count(span.connections)
        ),
    );
}

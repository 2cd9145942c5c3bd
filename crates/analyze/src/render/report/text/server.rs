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
    for note in &server.notes {
        let _ = writeln!(out, "{:14}note: {note}", "");
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
    let span = server.vload_span.unwrap_or_default();
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
    let share = |value: Option<f64>| value.map_or_else(|| "n/a".to_owned(), percent);
    let common = &v.common;
    let classified = span.hits + span.misses;
    row(
        out,
        "",
        "[client requests, hits, misses]",
        &format!(
            "{}, {}, {}  (vload {}, {}; hit ratio = hits / (hits + misses): {name} {}, vload {})",
            c(common.requests),
            c(common.hits),
            c(common.misses),
            count(span.completed),
            count(span.hits),
            share(common.hit_ratio()),
            share((classified > 0).then(|| span.hits as f64 / classified as f64))
        ),
    );
    row(
        out,
        "",
        "[to origin, connections, evicted]",
        &format!(
            "{}, {}, {}  (origin requests per request served {}; vload opened {} connections)",
            c(common.origin_requests),
            c(common.connections),
            c(common.evictions),
            share(common.origin_per_request()),
            count(span.connections)
        ),
    );
}

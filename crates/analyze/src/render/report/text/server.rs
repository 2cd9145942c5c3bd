//! The server's own account in the text report: Varnish's counters beside vload's, and the
//! server's CPU.

use std::fmt::Write as _;

use super::{or_na, row};
use crate::summary::Summary;
use crate::units::{count, duration_ns, percent, seconds};

pub(super) fn render_server(out: &mut String, s: &Summary) {
    let Some(server) = &s.server else {
        return;
    };
    if let Some(v) = &server.varnish {
        render_varnish(out, v, server);
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

/// Varnish's counters beside vload's counts for the span they cover.
fn render_varnish(
    out: &mut String,
    v: &vload_schema::VarnishRecord,
    server: &crate::summary::ServerSummary,
) {
    let c = |name: &str| count(v.counters.get(name).copied().unwrap_or(0));
    let span = server.vload_span.unwrap_or(crate::summary::SpanCounts {
        completed: 0,
        hits: 0,
        connections: 0,
    });
    let over = if v.covers == "attack" {
        "whole attack, warm-up included: Varnish had not published the warm-up's counts at its end"
    } else {
        "measured window"
    };
    let _ = writeln!(out, "Varnish       {over}");
    let requests = v.counters.get("client_req").copied().unwrap_or(0);
    let hits = v.counters.get("cache_hit").copied().unwrap_or(0);
    let ratio = |hits: u64, n: u64| {
        if n > 0 {
            percent(hits as f64 / n as f64)
        } else {
            "n/a".to_owned()
        }
    };
    row(
        out,
        "",
        "[client_req, cache_hit, miss]",
        &format!(
            "{}, {}, {}  (vload {}, {}; hit ratio Varnish {}, vload {})",
            c("client_req"),
            c("cache_hit"),
            c("cache_miss"),
            count(span.completed),
            count(span.hits),
            ratio(hits, requests),
            ratio(span.hits, span.completed)
        ),
    );
    row(
        out,
        "",
        "[backend requests, sess_conn, lru_nuked]",
        &format!(
            "{}, {}, {}  (origin requests per request {}; vload opened {} connections)",
            count(v.backend_requests()),
            c("sess_conn"),
            c("n_lru_nuked"),
            ratio(v.backend_requests(), requests),
            count(span.connections)
        ),
    );
    row(
        out,
        "",
        "[threads_limited, sess_dropped]",
        &format!("{}, {}", c("threads_limited"), c("sess_dropped")),
    );
}

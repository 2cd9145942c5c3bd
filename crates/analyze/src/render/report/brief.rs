//! The short report, vegeta's length (`vload attack --brief`, `vload report --format
//! brief`): eight lines, the same figures and number formats as the full report. `total`
//! is the requests due, as the full report's ledger and vegeta's `total` count them (a
//! request that never ended is still one of them).

use std::fmt::Write as _;

use crate::Summary;
use crate::units::{bytes, count, duration_ns, percent, rate, seconds};

/// The run in eight lines.
pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Requests      [total, rate, throughput]         {}, {}, {}",
        count(s.intended),
        rate(s.rate_per_s),
        rate(s.throughput_per_s)
    );
    let _ = writeln!(
        out,
        "Duration      [measured, wait]                  {}, {}",
        seconds(s.measured_s),
        seconds(s.wait_s)
    );
    let l = &s.latency;
    let q = |name: &str| {
        l.quantiles
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
            .map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64))
    };
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    let _ = writeln!(
        out,
        "Latencies     [min, mean, 50, 90, 95, 99, max]  {}, {}, {}, {}, {}, {}, {}  ({})",
        ns(l.min_ns),
        l.mean_ns.map_or_else(|| "n/a".to_owned(), duration_ns),
        q("p50"),
        q("p90"),
        q("p95"),
        q("p99"),
        ns(l.max_ns),
        crate::summary::latency_words(s.latency_kind)
    );
    outcome(&mut out, s);
    out
}

/// Bytes, success, statuses and health.
fn outcome(out: &mut String, s: &Summary) {
    let per = |total: u64| total.checked_div(s.requests).unwrap_or(0);
    let _ = writeln!(
        out,
        "Bytes In      [total, mean]                     {}, {}",
        bytes(s.bytes_in),
        bytes(per(s.bytes_in))
    );
    let _ = writeln!(
        out,
        "Bytes Out     [total, mean]                     {}, {}",
        bytes(s.bytes_out),
        bytes(per(s.bytes_out))
    );
    let _ = writeln!(
        out,
        "Success       [ratio]                           {}  ({})",
        s.success_ratio.map_or_else(|| "n/a".to_owned(), percent),
        s.expected
    );
    let codes: Vec<String> = s
        .status_codes
        .iter()
        .map(|(code, n)| format!("{code}:{}", count(*n)))
        .chain(
            s.errors
                .iter()
                .map(|(kind, e)| format!("{}:{}", kind.as_str(), count(e.count))),
        )
        .collect();
    let _ = writeln!(
        out,
        "Status Codes  [code:count]                      {}",
        if codes.is_empty() {
            "none".to_owned()
        } else {
            codes.join("  ")
        }
    );
    let _ = writeln!(
        out,
        "Client health                                   {}{}",
        s.health.verdict.word(),
        if s.interrupted { "  (interrupted)" } else { "" }
    );
}

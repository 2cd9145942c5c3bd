//! The report as markdown tables, to paste into a pull request or an issue.

use crate::render::table;
use crate::summary::Summary;
use crate::units::{count, duration_ns, percent, rate, seconds};

/// The summary as markdown tables.
pub fn render(s: &Summary) -> String {
    let label = s
        .label
        .as_ref()
        .map(|l| format!(" [{l}]"))
        .unwrap_or_default();
    let mut out = format!("## vload report: {}{label}\n\n", s.plan);
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    let mut rows = vec![vec!["metric".to_owned(), "value".to_owned()]];
    rows.push(vec!["requests".into(), count(s.requests)]);
    rows.push(vec!["rate".into(), rate(s.rate_per_s)]);
    rows.push(vec!["throughput".into(), rate(s.throughput_per_s)]);
    rows.push(vec!["measured".into(), seconds(s.measured_s)]);
    rows.push(vec![
        "latency".into(),
        super::text::latency_title(s.latency_kind).to_owned(),
    ]);
    rows.push(vec!["min".into(), ns(s.latency.min_ns)]);
    rows.push(vec![
        "mean".into(),
        s.latency.mean_ns.map_or_else(|| "n/a".into(), duration_ns),
    ]);
    rows.push(vec![
        "stdev".into(),
        s.latency.stdev_ns.map_or_else(|| "n/a".into(), duration_ns),
    ]);
    for (name, value) in &s.latency.quantiles {
        rows.push(vec![name.clone(), ns(*value)]);
    }
    rows.push(vec!["max".into(), ns(s.latency.max_ns)]);
    rows.push(vec![
        "success".into(),
        s.success_ratio.map_or_else(|| "n/a".into(), percent),
    ]);
    let errors: u64 = s.errors.values().map(|e| e.count).sum();
    rows.push(vec!["errors".into(), count(errors)]);
    if s.unsent > 0 {
        rows.push(vec!["unsent (due, never sent)".into(), count(s.unsent)]);
    }
    if s.queued > 0 {
        rows.push(vec!["waited for a connection".into(), count(s.queued)]);
    }
    rows.push(vec![
        "client health".into(),
        super::text::health_headline(&s.health),
    ]);
    cache_rows(&mut rows, s);
    if let Some(server) = &s.server {
        if let Some(v) = &server.stats {
            let c = &v.common;
            for (what, value) in [
                ("client requests", c.requests),
                ("hits", c.hits),
                ("misses", c.misses),
                ("origin requests", c.origin_requests),
                ("connections", c.connections),
                ("evictions", c.evictions),
            ] {
                if let Some(value) = value {
                    rows.push(vec![
                        format!("{} {what} ({})", v.display_name(), v.covers),
                        count(value),
                    ]);
                }
            }
        }
        if let Some(cpu) = server.cpu_per_request_ns {
            rows.push(vec!["server CPU per request".into(), duration_ns(cpu)]);
        }
        said(&mut rows, server);
    }
    out.push_str(&table::markdown(&rows));
    stages(&mut out, s);
    checks(&mut out, s);
    out
}

/// The run's checks of itself, one line each.
fn checks(out: &mut String, s: &Summary) {
    if s.checks.is_empty() {
        return;
    }
    out.push_str("\n### Checks\n\n");
    for c in &s.checks {
        let mark = match c.verdict {
            vload_schema::CheckVerdict::Pass => "ok",
            vload_schema::CheckVerdict::Fail => "**FAIL**",
            vload_schema::CheckVerdict::Unknown => "?",
        };
        out.push_str(&format!("- {mark} {}\n", c.message.replace('|', "\\|")));
    }
}

/// A rate plan's stages or a sweep's steps, and a sweep's answer.
fn stages(out: &mut String, s: &Summary) {
    if s.stages.is_empty() {
        return;
    }
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    let sweep = s.sweep.is_some();
    out.push_str(if sweep {
        "\n### Steps\n\n"
    } else {
        "\n### Stages\n\n"
    });
    let mut rows = vec![
        [
            "stage",
            "start",
            "rate",
            "intended",
            "throughput",
            "failed",
            "p50",
            "p99",
            "p99.9",
            "SLO",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for st in &s.stages {
        rows.push(vec![
            if st.warmup {
                "warm-up".to_owned()
            } else {
                (st.index + 1).to_string()
            },
            format!("{:.1} s", st.start_s),
            st.rate_text(),
            count(st.intended),
            rate(st.throughput_per_s),
            count(st.failed),
            ns(st.latency.quantile("p50")),
            ns(st.latency.quantile("p99")),
            ns(st.latency.quantile("p99.9")),
            st.slo.unwrap_or("—").to_owned(),
        ]);
    }
    out.push_str(&table::markdown(&rows));
    if let Some(sweep) = &s.sweep {
        out.push_str(&format!("\n**Sweep:** {}\n", sweep.summary));
    }
}

/// The cache model's figures and each purge burst's effect.
fn cache_rows(rows: &mut Vec<Vec<String>>, s: &Summary) {
    if let Some(m) = &s.cache_model {
        if let (Some(capacity), Some(lru)) = (&m.capacity, m.lru_hit_ratio) {
            rows.push(vec![
                format!("model: LRU of {capacity}, warm"),
                percent(lru),
            ]);
        }
        if let Some((held, lru)) = s.lru_of_held {
            rows.push(vec![
                format!("model: LRU of the {} objects Varnish held", count(held)),
                percent(lru),
            ]);
        }
        rows.push(vec![
            "model: any cache from empty".into(),
            percent(m.cold_bound),
        ]);
    }
    for e in &s.purge_effects {
        rows.push(vec![
            format!("purge burst at {}", seconds(e.at_s)),
            format!(
                "{} sent, {} 2xx; {}{} extra misses",
                count(e.sent),
                count(e.ok),
                e.refetched
                    .map_or_else(String::new, |n| format!("{} misses on them, ", count(n))),
                e.extra_misses
                    .map_or_else(|| "n/a".to_owned(), |x| format!("{x:.0}"))
            ),
        ]);
    }
}

/// The server's findings and notes, a row each.
fn said(rows: &mut Vec<Vec<String>>, server: &crate::summary::ServerSummary) {
    for finding in &server.findings {
        rows.push(vec!["server finding".into(), finding.clone()]);
    }
    for note in &server.notes {
        rows.push(vec!["server note".into(), note.clone()]);
    }
}

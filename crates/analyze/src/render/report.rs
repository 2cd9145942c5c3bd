//! The single-run report in the other formats: markdown, JSON, hgrm, wrk.

use std::fmt::Write as _;

use vload_schema::{RunFile, SchemaError};

use crate::render::table;
use crate::summary::Summary;
use crate::units::{count, duration_ns, percent, rate, seconds};

/// The summary as JSON, with the schema version.
pub fn json(summary: &Summary) -> String {
    let value = serde_json::json!({ "schema_version": vload_schema::SCHEMA_VERSION, "kind": "report", "report": summary });
    let mut text = serde_json::to_string_pretty(&value).expect("summaries serialize");
    text.push('\n');
    text
}

/// The summary as markdown tables.
pub fn markdown(s: &Summary) -> String {
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
        crate::render::text::latency_title(s.latency_kind).to_owned(),
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
        crate::render::text::health_headline(&s.health),
    ]);
    if let Some(server) = &s.server {
        if let Some(v) = &server.varnish {
            for name in [
                "client_req",
                "cache_hit",
                "cache_miss",
                "backend_req",
                "sess_conn",
            ] {
                let value = v.counters.get(name).copied().unwrap_or(0);
                rows.push(vec![format!("varnish {name} ({})", v.covers), count(value)]);
            }
        }
        if let Some(cpu) = server.cpu_per_request_ns {
            rows.push(vec!["server CPU per request".into(), duration_ns(cpu)]);
        }
        for finding in &server.findings {
            rows.push(vec!["server finding".into(), finding.clone()]);
        }
    }
    out.push_str(&table::markdown(&rows));
    out
}

/// HdrHistogram's percentile distribution (`.hgrm`), values in milliseconds, as
/// `outputPercentileDistribution` writes it and HdrHistogram's plotter reads it.
///
/// # Errors
/// The histogram does not decode.
pub fn hgrm(run: &RunFile) -> Result<String, SchemaError> {
    let h = run.latency.primary().histogram.decode()?;
    let m = &run.latency.primary().moments;
    let scale = 1e6;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            let q = v.quantile_iterated_to();
            // Bucket tops, as HdrHistogram prints them, but never above the exact max.
            let value = m.clamp(h.highest_equivalent(v.value_iterated_to())) as f64 / scale;
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:12.3} {q:2.12} {:10} {:14.2}",
                    cumulative(&h, v.value_iterated_to()),
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(
                    out,
                    "{value:12.3} {q:2.12} {:10}",
                    cumulative(&h, v.value_iterated_to())
                );
            }
        }
    }
    let mean = m.mean().unwrap_or(0.0) / scale;
    let stdev = m.stdev().unwrap_or(0.0) / scale;
    let _ = writeln!(
        out,
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        m.clamp(h.max()) as f64 / scale,
        h.len()
    );
    let sub_buckets = (2.0 * 10f64.powi(i32::from(h.sigfig())))
        .log2()
        .ceil()
        .exp2();
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets
    );
    Ok(out)
}

fn cumulative(h: &hdrhistogram::Histogram<u64>, value: u64) -> u64 {
    h.count_between(0, value)
}

/// wrk's layout, for people comparing against old wrk numbers.
///
/// # Errors
/// The histogram does not decode.
pub fn wrk(run: &RunFile) -> Result<String, SchemaError> {
    let h = run.latency.primary().histogram.decode()?;
    let m = &run.latency.primary().moments;
    let us = |ns: f64| wrk_time(ns);
    let mean = m.mean().unwrap_or(0.0);
    let stdev = m.stdev().unwrap_or(0.0);
    let within = if h.is_empty() {
        0.0
    } else {
        let lo = (mean - stdev).max(0.0) as u64;
        let hi = (mean + stdev) as u64;
        h.count_between(lo, hi) as f64 / h.len() as f64
    };
    let rates: Vec<f64> = run
        .intervals
        .iter()
        .filter(|i| !i.warmup && i.duration_s > 0.0)
        .map(|i| i.completed as f64 / i.duration_s)
        .collect();
    let (rate_mean, rate_var) = if rates.is_empty() {
        (0.0, 0.0)
    } else {
        crate::stats::mean_var(&rates)
    };
    let rate_sd = rate_var.sqrt();
    let rate_max = rates.iter().copied().fold(0.0, f64::max);
    let rate_within = if rates.is_empty() {
        0.0
    } else {
        rates
            .iter()
            .filter(|r| (**r - rate_mean).abs() <= rate_sd)
            .count() as f64
            / rates.len() as f64
    };
    let seconds = run.window.measured_s + run.window.wait_s;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Running {} test @ {}",
        seconds_label(run.window.measured_s),
        run.plan.target
    );
    let _ = writeln!(
        out,
        "  {} threads and {} connections",
        run.plan.threads, run.plan.connections
    );
    let _ = writeln!(out, "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    let _ = writeln!(
        out,
        "    Latency {:>9} {:>9} {:>9} {:>8.2}%",
        us(mean),
        us(stdev),
        us(m.max_ns as f64),
        within * 100.0
    );
    let _ = writeln!(
        out,
        "    Req/Sec {:>9} {:>9} {:>9} {:>8.2}%",
        wrk_count(rate_mean),
        wrk_count(rate_sd),
        wrk_count(rate_max),
        rate_within * 100.0
    );
    let _ = writeln!(out, "  Latency Distribution");
    for (label, q) in [("50%", 0.5), ("75%", 0.75), ("90%", 0.9), ("99%", 0.99)] {
        let v = if h.is_empty() {
            0.0
        } else {
            m.clamp(h.value_at_quantile(q)) as f64
        };
        let _ = writeln!(out, "  {label:>5} {:>9}", us(v));
    }
    let _ = writeln!(
        out,
        "  {} requests in {:.2}s, {} read",
        run.totals.completed,
        seconds,
        wrk_bytes(run.totals.bytes_in as f64)
    );
    let errors = run.totals.error_count();
    if errors > 0 {
        let _ = writeln!(
            out,
            "  Socket errors: {errors} (vload counts them by kind; see vload report)"
        );
    }
    let non_2xx: u64 = run
        .totals
        .status_codes
        .iter()
        .filter(|(c, _)| !(200..300).contains(*c))
        .map(|(_, n)| n)
        .sum();
    if non_2xx > 0 {
        let _ = writeln!(out, "  Non-2xx or 3xx responses: {non_2xx}");
    }
    let per_s = if seconds > 0.0 {
        run.totals.completed as f64 / seconds
    } else {
        0.0
    };
    let _ = writeln!(out, "Requests/sec: {per_s:>10.2}");
    let transfer = if seconds > 0.0 {
        run.totals.bytes_in as f64 / seconds
    } else {
        0.0
    };
    let _ = writeln!(out, "Transfer/sec: {:>10}", wrk_bytes(transfer));
    Ok(out)
}

fn seconds_label(s: f64) -> String {
    if s >= 60.0 && (s % 60.0).abs() < 0.5 {
        format!("{}m", (s / 60.0).round())
    } else {
        format!("{}s", s.round())
    }
}

fn wrk_time(ns: f64) -> String {
    match ns {
        n if n < 1e6 => format!("{:.2}us", n / 1e3),
        n if n < 1e9 => format!("{:.2}ms", n / 1e6),
        n => format!("{:.2}s", n / 1e9),
    }
}

fn wrk_count(n: f64) -> String {
    match n {
        n if n < 1e3 => format!("{n:.2}"),
        n if n < 1e6 => format!("{:.2}k", n / 1e3),
        n => format!("{:.2}M", n / 1e6),
    }
}

fn wrk_bytes(n: f64) -> String {
    match n {
        n if n < 1024.0 => format!("{n:.2}B"),
        n if n < 1024.0 * 1024.0 => format!("{:.2}KB", n / 1024.0),
        n if n < 1024.0 * 1024.0 * 1024.0 => format!("{:.2}MB", n / 1024.0 / 1024.0),
        n => format!("{:.2}GB", n / 1024.0 / 1024.0 / 1024.0),
    }
}

//! wrk's layout, for people comparing against old wrk numbers.

use std::fmt::Write as _;

use vload_schema::{Moments, RunFile, SchemaError};

/// The run in wrk's layout.
///
/// # Errors
/// The histogram does not decode.
pub fn render(run: &RunFile) -> Result<String, SchemaError> {
    let h = run.latency.primary().histogram.decode()?;
    let m = &run.latency.primary().moments;
    let seconds = run.window.measured_s + run.window.wait_s;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Running {} test @ {}",
        seconds_label(run.window.measured_s),
        run.plan.target
    );
    // wrk's figure is the connections it held open; vload's plan gives a cap (open loop)
    // that the run may never have reached, so the count opened is shown, at most the cap.
    let opened = run.totals.connections_opened
        + run
            .intervals
            .iter()
            .filter(|i| i.warmup)
            .map(|i| i.connections_opened)
            .sum::<u64>();
    let connections = if opened == 0 {
        u64::from(run.plan.connections)
    } else {
        opened.min(u64::from(run.plan.connections))
    };
    let _ = writeln!(
        out,
        "  {} threads and {connections} connections",
        run.plan.threads
    );
    let _ = writeln!(
        out,
        "  Latency is {}",
        crate::summary::latency_words(run.latency.primary)
    );
    thread_stats(&mut out, run, &h, m);
    let _ = writeln!(out, "  Latency Distribution");
    for (label, q) in [("50%", 0.5), ("75%", 0.75), ("90%", 0.9), ("99%", 0.99)] {
        let v = if h.is_empty() {
            0.0
        } else {
            m.clamp(h.value_at_quantile(q)) as f64
        };
        let _ = writeln!(out, "  {label:>5} {:>9}", wrk_time(v));
    }
    totals(&mut out, run, seconds);
    Ok(out)
}

/// wrk's "Thread Stats": latency and per-second rates, with the share within one stdev.
fn thread_stats(out: &mut String, run: &RunFile, h: &hdrhistogram::Histogram<u64>, m: &Moments) {
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
        let near = rates
            .iter()
            .filter(|r| (**r - rate_mean).abs() <= rate_sd)
            .count();
        near as f64 / rates.len() as f64
    };
    let _ = writeln!(out, "  Thread Stats   Avg      Stdev     Max   +/- Stdev");
    let _ = writeln!(
        out,
        "    Latency {:>9} {:>9} {:>9} {:>8.2}%",
        wrk_time(mean),
        wrk_time(stdev),
        wrk_time(m.max_ns as f64),
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
}

/// The closing lines: requests, errors, non-2xx, rates.
fn totals(out: &mut String, run: &RunFile, seconds: f64) {
    let per_second = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    // What wrk counts as read: every byte off the socket, heads included. Files of hyper's
    // clients (and older ones) know the bodies only, and say so.
    let (read, bodies_only) = match run.totals.wire_bytes_in {
        Some(wire) => (wire, false),
        None => (run.totals.bytes_in, true),
    };
    let _ = writeln!(
        out,
        "  {} requests in {:.2}s, {} read",
        run.totals.completed,
        seconds,
        wrk_bytes(read as f64)
    );
    if bodies_only {
        let _ = writeln!(
            out,
            "  (bodies only: this run's client did not count the heads it read)"
        );
    }
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
    let _ = writeln!(
        out,
        "Requests/sec: {:>10.2}",
        per_second(run.totals.completed as f64)
    );
    let _ = writeln!(
        out,
        "Transfer/sec: {:>10}",
        wrk_bytes(per_second(read as f64))
    );
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

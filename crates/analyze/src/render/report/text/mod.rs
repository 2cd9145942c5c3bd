//! The plain-text report: vegeta's lines plus what they lack.

use std::fmt::Write as _;

use vload_schema::{HealthVerdict, LatencyKind};

use crate::summary::{LatencySummary, Summary};
use crate::units::{bytes, count, duration_ns, percent, rate, seconds};

mod breakdown;
mod cache;
mod health;
mod phases;
mod rows;
mod server;
mod stampede;

use breakdown::render_breakdowns;
use cache::render_cache;
pub use cache::warmed_line;
pub(crate) use health::health_headline;
use health::{render_checks, render_health};
use phases::render_phases;
use rows::{or_na, row};
use server::render_server;

fn latency_rows(out: &mut String, name: &str, l: &LatencySummary) {
    let ns = |v: Option<u64>| or_na(v.map(|v| duration_ns(v as f64)));
    let basic = [
        ns(l.min_ns),
        or_na(l.mean_ns.map(duration_ns)),
        or_na(l.stdev_ns.map(duration_ns)),
    ];
    row(out, name, "[min, mean, stdev]", &basic.join(", "));
    let mut names: Vec<&str> = l.quantiles.iter().map(|(n, _)| n.as_str()).collect();
    names.push("max");
    let mut values: Vec<String> = l.quantiles.iter().map(|(_, v)| ns(*v)).collect();
    values.push(ns(l.max_ns));
    row(
        out,
        "",
        &format!("[{}]", names.join(", ")),
        &values.join(", "),
    );
    let missing: Vec<&str> = l
        .quantiles
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    if !missing.is_empty() && l.n > 0 {
        let _ = writeln!(
            out,
            "{:14}n/a: too few samples ({}) for {}",
            "",
            count(l.n),
            missing.join(", ")
        );
    }
}

pub(crate) fn latency_title(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Response => {
            "response time from the intended send (open loop: free of coordinated omission)"
        }
        LatencyKind::Service => "service time, closed loop: subject to coordinated omission",
    }
}

/// Renders a summary as the text report.
pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    render_head(&mut out, s);
    render_latency(&mut out, s);
    render_phases(&mut out, s);
    render_stages(&mut out, s);
    row(
        &mut out,
        "Bytes",
        "[in, out]",
        &format!("{}, {}", bytes(s.bytes_in), bytes(s.bytes_out)),
    );
    row(
        &mut out,
        "Success",
        "[ratio, expected status]",
        &format!("{}, {}", or_na(s.success_ratio.map(percent)), s.expected),
    );
    render_connections(&mut out, s);
    let codes: Vec<String> = s
        .status_codes
        .iter()
        .map(|(c, n)| format!("{c}:{}", count(*n)))
        .collect();
    let codes = if codes.is_empty() {
        "none".to_owned()
    } else {
        codes.join(" ")
    };
    row(&mut out, "Status codes", "[code:count]", &codes);
    render_errors(&mut out, s);
    render_cache(&mut out, s);
    if let Some(stampede) = &s.stampede {
        stampede::render_stampede(&mut out, stampede);
    }
    render_breakdowns(&mut out, s);
    render_server(&mut out, s);
    render_health(&mut out, s);
    render_checks(&mut out, s);
    out
}

/// What ran, the ledger, how long, against what.
fn render_head(out: &mut String, s: &Summary) {
    let label = s
        .label
        .as_ref()
        .map(|l| format!("  [{l}]"))
        .unwrap_or_default();
    let interrupted = if s.interrupted {
        "  (interrupted: partial run)"
    } else {
        ""
    };
    let _ = writeln!(out, "vload: {}{label}{interrupted}", s.plan);
    let requests = [
        count(s.intended),
        rate(s.rate_per_s),
        rate(s.throughput_per_s),
    ];
    row(
        out,
        "Requests",
        "[total, rate, throughput]",
        &requests.join(", "),
    );
    let ledger = [
        count(s.intended),
        count(s.sent),
        count(s.requests),
        count(s.unsent),
        count(s.unfinished),
    ];
    row(
        out,
        "Ledger",
        "[due, sent, ended, unsent, open]",
        &ledger.join(", "),
    );
    let durations = [
        seconds(s.measured_s),
        seconds(s.wait_s),
        seconds(s.warmup_s),
    ];
    row(
        out,
        "Duration",
        "[measured, wait, warm-up]",
        &durations.join(", "),
    );
    if let Some(address) = &s.server_address {
        row(out, "Server", "[address]", address);
    }
}

/// The primary latency, with its kind and the long-tail note, then service time.
fn render_latency(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "Latency       {}", latency_title(s.latency_kind));
    latency_rows(out, "", &s.latency);
    if s.has_long_tail() {
        let _ = writeln!(
            out,
            "{:14}note: stdev exceeds the mean: normal for a long tail (a few slow requests), not an error",
            ""
        );
    }
    if let Some(service) = &s.service {
        let _ = writeln!(
            out,
            "Service time  from the actual write (what closed-loop tools report)"
        );
        latency_rows(out, "", service);
    }
}

/// A rate plan's stages or a sweep's steps, one row each, and a sweep's answer.
fn render_stages(out: &mut String, s: &Summary) {
    if s.stages.is_empty() {
        return;
    }
    let title = if s.sweep.is_some() { "Steps" } else { "Stages" };
    let _ = writeln!(
        out,
        "{title:<14}each request counted where its intended send fell; throughput = successes arriving during it"
    );
    let columns = StageColumns {
        sweep: s.sweep.is_some(),
        hits: s.stages.iter().any(|st| st.hit_ratio.is_some()),
        cpu: s
            .stages
            .iter()
            .any(|st| st.server_cpu_per_request_ns.is_some()),
        origin: s.stages.iter().any(|st| st.origin_state.is_some()),
    };
    let mut rows = vec![columns.header()];
    // Stages are numbered as the plan lists them; a warm-up before them is not one.
    let offset = u32::from(s.stages.first().is_some_and(|st| st.warmup));
    rows.extend(s.stages.iter().map(|st| columns.row(st, offset)));
    out.push_str(&crate::render::table::layout(&rows));
    if let Some(sweep) = &s.sweep {
        let _ = writeln!(out, "{:<14}{}", "Sweep", sweep.summary);
    }
}

/// Which optional columns the stage table has.
struct StageColumns {
    sweep: bool,
    hits: bool,
    cpu: bool,
    /// An origin plan's: the origin's state, 5xx, errors, stale share, origin requests.
    origin: bool,
}

impl StageColumns {
    fn header(&self) -> Vec<String> {
        let step = if self.sweep { "step" } else { "" };
        let mut header = vec![format!("{:14}{step}", "")];
        header.extend(
            [
                "start",
                "length",
                "rate",
                "intended",
                "throughput",
                "failed",
                "p50",
                "p99",
                "p99.9",
                "max",
            ]
            .map(str::to_owned),
        );
        if self.hits {
            header.push("hit".to_owned());
        }
        if self.sweep {
            header.extend(["SLO".to_owned(), "client".to_owned()]);
        }
        if self.cpu {
            header.push("server CPU/req".to_owned());
        }
        if self.origin {
            header.extend(["origin", "5xx", "errors", "stale", "origin req"].map(str::to_owned));
        }
        header
    }

    fn row(&self, st: &crate::staged::StageSummary, offset: u32) -> Vec<String> {
        let ns = |v: Option<u64>| or_na(v.map(|v| duration_ns(v as f64)));
        let name = if st.warmup {
            "warm-up".to_owned()
        } else {
            format!("{}", st.index + 1 - offset)
        };
        let failed = if st.intended > 0 {
            percent(st.failed as f64 / st.intended as f64)
        } else {
            "n/a".to_owned()
        };
        let mut cells = vec![
            format!("{:14}{name}", ""),
            format!("{:.1} s", st.start_s),
            format!("{:.1} s", st.duration_s),
            st.rate_text(),
            count(st.intended),
            rate(st.throughput_per_s),
            failed,
            ns(st.latency.quantile("p50")),
            ns(st.latency.quantile("p99")),
            ns(st.latency.quantile("p99.9")),
            ns(st.latency.max_ns),
        ];
        if self.hits {
            cells.push(or_na(st.hit_ratio.map(percent)));
        }
        if self.sweep {
            cells.push(st.slo.unwrap_or("n/a").to_owned());
            cells.push(st.health.map_or("n/a", HealthVerdict::name).to_owned());
        }
        if self.cpu {
            cells.push(or_na(st.server_cpu_per_request_ns.map(duration_ns)));
        }
        if self.origin {
            cells.push(or_na(st.origin_state.clone()));
            cells.push(count(st.server_errors));
            cells.push(count(st.errors));
            cells.push(or_na(st.stale_share.map(percent)));
            cells.push(or_na(st.origin_requests.map(count)));
        }
        cells
    }
}

fn render_connections(out: &mut String, s: &Summary) {
    let seconds = s.measured_s + s.wait_s;
    let per_second = if seconds > 0.0 {
        s.connections_opened as f64 / seconds
    } else {
        0.0
    };
    // Connections opened in the warm-up carry the window's requests too (kept alive).
    let serving = s.connections_opened + s.connections_opened_warmup;
    let each = if serving > 0 {
        crate::units::tenths(s.requests as f64 / serving as f64)
    } else {
        "n/a".to_owned()
    };
    // Connections opened in the warm-up serve the window too: a bare 0 beside Varnish's
    // sess_conn read as if vload had opened none.
    let warmup = if s.connections_opened_warmup > 0 {
        format!(" (+{} in the warm-up)", count(s.connections_opened_warmup))
    } else {
        String::new()
    };
    // Connections all opened in the first second (a closed loop's) have no rate to speak of.
    let pace = if s.connections_opened > 0 && s.connections_opened_first_s == s.connections_opened {
        "all in the first second".to_owned()
    } else {
        rate(per_second)
    };
    let values = format!("{}{warmup}, {pace}, {each}", count(s.connections_opened));
    row(
        out,
        "Connections",
        "[opened, per second, requests each]",
        &values,
    );
    render_connect_times(out, s);
    if let Some(t) = &s.targets {
        let files: Vec<String> = t
            .sets
            .iter()
            .map(|set| {
                let mut text = format!("{} ({} {}", set.file, count(set.targets), set.format);
                if set.lines_skipped > 0 {
                    text.push_str(&format!(
                        ", {} malformed lines skipped",
                        count(set.lines_skipped)
                    ));
                }
                if set.other_methods > 0 {
                    text.push_str(&format!(", {} not GET/HEAD", count(set.other_methods)));
                }
                if t.sets.len() > 1 {
                    text.push_str(&format!(", weight {}", set.weight));
                }
                text.push(')');
                text
            })
            .collect();
        let passes = t
            .passes
            .map(|p| format!(", {p} passes"))
            .unwrap_or_default();
        row(
            out,
            "Targets",
            &format!("[{} pick{passes}]", t.pick),
            &files.join("; "),
        );
    }
}

/// The TCP connect and TLS handshake rows: ab's "Connect" row (a full accept queue, a
/// server slow to accept, shows here) and the handshakes of https.
fn render_connect_times(out: &mut String, s: &Summary) {
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    let mean = |m: Option<f64>| m.map_or_else(|| "n/a".to_owned(), duration_ns);
    if let Some(connect) = &s.tcp_connect {
        let values = [
            ns(connect.min_ns),
            mean(connect.mean_ns),
            ns(connect.quantile("p99")),
            ns(connect.max_ns),
        ];
        // QUIC makes a connection in one handshake, TLS 1.3 inside it: one row.
        let name = if s.quic {
            "QUIC connect"
        } else {
            "TCP connect"
        };
        let what = if s.quic {
            "[handshake: min, mean, p99, max]"
        } else {
            "[min, mean, p99, max]"
        };
        row(out, name, what, &values.join(", "));
    }
    if let Some(tls) = &s.tls_handshake {
        let values = [ns(tls.min_ns), mean(tls.mean_ns), ns(tls.max_ns)];
        row(out, "TLS handshake", "[min, mean, max]", &values.join(", "));
    }
    if let Some(h) = &s.handshakes {
        render_handshakes(out, h);
    }
}

/// QUIC's handshake kinds, and what became of the requests sent as early data.
fn render_handshakes(out: &mut String, h: &vload_schema::Handshakes) {
    let kinds = [h.full, h.resumed, h.early_accepted, h.early_rejected].map(count);
    row(
        out,
        "Handshakes",
        "[full, resumed, 0-RTT ok, refused]",
        &kinds.join(", "),
    );
    if h.retried > 0 {
        row(out, "Retry round trips", "", &count(h.retried));
    }
    // Only the early requests' 425s (a 425 to a request sent after the handshake is the
    // server's word on something else).
    let too_early = h.early_too_early;
    if h.early_requests > 0 || too_early > 0 {
        row(
            out,
            "Early data",
            "[requests, sent again, 425]",
            &[h.early_requests, h.early_retried, too_early]
                .map(count)
                .join(", "),
        );
    }
}

fn render_errors(out: &mut String, s: &Summary) {
    if s.errors.is_empty() {
        row(out, "Error set", "", "none");
    } else {
        let _ = writeln!(out, "Error set");
        for (kind, e) in &s.errors {
            let _ = writeln!(
                out,
                "  {:<18}{:>12}  {}",
                kind.as_str(),
                count(e.count),
                e.sample
            );
        }
    }
    render_ledger_notes(out, s);
    if let Some(wait) = s.queue_wait.as_ref().filter(|_| s.queued > 0) {
        let q = |name: &str| or_na(wait.quantile(name).map(|v| duration_ns(v as f64)));
        row(
            out,
            "Queue wait",
            "[requests, p50, p99, max]",
            &format!(
                "{}, {}, {}, {}  (waited for a connection, every one busy or being made; the wait is in their response time)",
                count(s.queued),
                q("p50"),
                q("p99"),
                or_na(wait.max_ns.map(|v| duration_ns(v as f64)))
            ),
        );
    }
}

/// What the ledger's odd doors mean, each only when it holds requests.
fn render_ledger_notes(out: &mut String, s: &Summary) {
    let note = |out: &mut String, name: &str, text: String| {
        let _ = writeln!(out, "{name:<13} {text}");
    };
    if s.unsent > 0 {
        note(
            out,
            "Unsent",
            format!(
                "{} requests fell due but were never sent: vload was frozen or stopped before it could send them (due, not sent)",
                count(s.unsent)
            ),
        );
    }
    if s.unfinished > 0 {
        note(
            out,
            "Open at end",
            format!(
                "{} requests were sent but had neither a response nor an error when the run stopped waiting for them",
                count(s.unfinished)
            ),
        );
    }
    if s.queue_timeouts > 0 {
        note(
            out,
            "Queue timeout",
            format!(
                "{} of the request timeouts never left vload's queue: every connection was busy or still being made until their deadline",
                count(s.queue_timeouts)
            ),
        );
    }
    if s.timeouts_answered_late > 0 {
        note(
            out,
            "Read late",
            format!(
                "{} of the request timeouts had their whole answer waiting when vload looked after the deadline: the server answered, when is unknown; the time past it may be the client's (see Client health)",
                count(s.timeouts_answered_late)
            ),
        );
    }
    if s.stray_closes > 0 {
        note(
            out,
            "Stray bytes",
            format!(
                "{} connections closed: the server sent bytes after a complete response (a body on a 204 or 304, or a Content-Length shorter than its body); the responses stand",
                count(s.stray_closes)
            ),
        );
    }
    // Written before the ledger (schema v1, v2): requests in flight or waiting at the end.
    if s.backlog > 0 && s.unsent == 0 && s.unfinished == 0 {
        note(
            out,
            "Backlog",
            format!(
                "{} requests were due but not completed when the attack ended",
                count(s.backlog)
            ),
        );
    }
}

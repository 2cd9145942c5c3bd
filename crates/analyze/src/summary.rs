//! What a run amounts to: the numbers every report prints.

use std::collections::BTreeMap;

use serde::Serialize;
use vload_schema::{
    CacheCounts, ClientHealth, ErrorCount, ErrorKind, LatencyKind, LatencyRecord, Mode, RunFile,
    SchemaError,
};

/// Quantiles every report shows, with the fewest samples that support each: a percentile
/// of fewer than `10 / (1 - q)` samples rests on a handful of values and is not shown.
pub const QUANTILES: [(f64, &str); 5] = [
    (0.5, "p50"),
    (0.9, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (0.999, "p99.9"),
];

/// Samples needed before quantile `q` is reported.
pub fn samples_needed(q: f64) -> u64 {
    (10.0 / (1.0 - q)).round() as u64
}

/// One latency distribution, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub n: u64,
    /// Exact minimum in ns.
    pub min_ns: Option<u64>,
    /// Exact mean in ns.
    pub mean_ns: Option<f64>,
    /// Exact sample standard deviation in ns.
    pub stdev_ns: Option<f64>,
    /// Quantiles (name, value in ns); `None` where too few samples support it.
    pub quantiles: Vec<(String, Option<u64>)>,
    /// Exact maximum in ns.
    pub max_ns: Option<u64>,
}

impl LatencySummary {
    /// Summarises a recorded distribution.
    ///
    /// # Errors
    /// The histogram does not decode.
    pub fn of(record: &LatencyRecord) -> Result<Self, SchemaError> {
        let histogram = record.histogram.decode()?;
        let m = &record.moments;
        let n = m.n;
        let quantiles = QUANTILES
            .iter()
            .map(|&(q, name)| {
                let value = (n >= samples_needed(q) && !histogram.is_empty())
                    .then(|| histogram.value_at_quantile(q));
                (name.to_owned(), value)
            })
            .collect();
        Ok(LatencySummary {
            n,
            min_ns: (n > 0).then_some(m.min_ns),
            mean_ns: m.mean(),
            stdev_ns: m.stdev(),
            quantiles,
            max_ns: (n > 0).then_some(m.max_ns),
        })
    }

    /// The value of a named quantile (`"p99"`), if shown.
    pub fn quantile(&self, name: &str) -> Option<u64> {
        self.quantiles
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
    }
}

/// Everything a report prints about one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Label of the run, if any.
    pub label: Option<String>,
    /// Load model.
    pub mode: Mode,
    /// The plan in words, e.g. `closed loop, 50 connections, 10 s`.
    pub plan: String,
    /// Which latency the headline numbers are.
    pub latency_kind: LatencyKind,
    /// Requests that ended in the measured window.
    pub requests: u64,
    /// Requests sent per second of the measured window.
    pub rate_per_s: f64,
    /// Successful (2xx/3xx) responses per second, wait included.
    pub throughput_per_s: f64,
    /// Measured window in seconds.
    pub measured_s: f64,
    /// Wait for the last responses in seconds.
    pub wait_s: f64,
    /// Warm-up in seconds (excluded).
    pub warmup_s: f64,
    /// The primary latency.
    pub latency: LatencySummary,
    /// Service time, when the primary latency is response time.
    pub service: Option<LatencySummary>,
    /// Dispatch lag (open loop).
    pub dispatch_lag: Option<LatencySummary>,
    /// Response body bytes in.
    pub bytes_in: u64,
    /// Request body bytes out.
    pub bytes_out: u64,
    /// Share of completed requests with a 2xx or 3xx status.
    pub success_ratio: Option<f64>,
    /// Responses by status code.
    pub status_codes: BTreeMap<u16, u64>,
    /// Failures by kind.
    pub errors: BTreeMap<ErrorKind, ErrorCount>,
    /// Open loop: due requests never completed.
    pub backlog: u64,
    /// Open loop: requests dispatched over 1 ms late.
    pub late_sends: u64,
    /// Cache classification.
    pub cache: CacheCounts,
    /// Primary latency of cache hits, when responses were classified.
    pub hit: Option<LatencySummary>,
    /// Primary latency of classified non-hits.
    pub miss: Option<LatencySummary>,
    /// TCP connections opened.
    pub connections_opened: u64,
    /// TLS handshake times, for https.
    pub tls_handshake: Option<LatencySummary>,
    /// Target files the requests came from.
    pub targets: Option<vload_schema::TargetsRecord>,
    /// Client health and verdict.
    pub health: ClientHealth,
    /// The run was stopped early.
    pub interrupted: bool,
}

impl Summary {
    /// Summarises a run file.
    ///
    /// # Errors
    /// A histogram in the file does not decode.
    pub fn of(run: &RunFile) -> Result<Summary, SchemaError> {
        let t = &run.totals;
        let w = &run.window;
        let successes = t.successes();
        let open = run.latency.primary == LatencyKind::Response;
        let optional = |r: Option<&LatencyRecord>| r.map(LatencySummary::of).transpose();
        Ok(Summary {
            label: run.label.clone(),
            mode: run.plan.mode,
            plan: describe_plan(run),
            latency_kind: run.latency.primary,
            requests: t.completed,
            rate_per_s: per_second(t.sent, w.measured_s),
            throughput_per_s: per_second(successes, w.measured_s + w.wait_s),
            measured_s: w.measured_s,
            wait_s: w.wait_s,
            warmup_s: w.warmup_s,
            latency: LatencySummary::of(run.latency.primary())?,
            service: if open {
                optional(Some(&run.latency.service))?
            } else {
                None
            },
            dispatch_lag: optional(run.latency.dispatch_lag.as_ref())?,
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
            success_ratio: (t.completed > 0).then(|| successes as f64 / t.completed as f64),
            status_codes: t.status_codes.clone(),
            errors: t.errors.clone(),
            backlog: t.backlog,
            late_sends: t.late_sends,
            cache: run.cache,
            hit: optional(run.latency.hit.as_ref())?,
            miss: optional(run.latency.miss.as_ref())?,
            connections_opened: t.connections_opened,
            tls_handshake: optional(run.latency.tls_handshake.as_ref())?,
            targets: run.plan.targets.clone(),
            health: run.client_health.clone(),
            interrupted: run.interrupted,
        })
    }

    /// True when the stdev exceeds the mean, which readers often take for a bug.
    pub fn has_long_tail(&self) -> bool {
        matches!((self.latency.stdev_ns, self.latency.mean_ns), (Some(s), Some(m)) if s > m)
    }
}

fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

pub(crate) fn describe_plan(run: &RunFile) -> String {
    let p = &run.plan;
    let load = match p.mode {
        Mode::Closed => format!("closed loop, {} connections", p.connections),
        Mode::Open => {
            let arrival = match p.arrival {
                vload_schema::Arrival::Constant => "constant",
                vload_schema::Arrival::Poisson => "poisson",
            };
            let rate = p
                .rate_per_s
                .map_or_else(|| "?".to_owned(), crate::units::rate);
            format!(
                "open loop, {arrival} {rate}, up to {} connections",
                p.connections
            )
        }
    };
    let stop = match (p.duration_s, p.requests) {
        (Some(d), Some(n)) => format!(
            "{} or {} requests",
            crate::units::seconds(d),
            crate::units::count(n)
        ),
        (Some(d), None) => crate::units::seconds(d),
        (None, Some(n)) => format!("{} requests", crate::units::count(n)),
        (None, None) => "unbounded".to_owned(),
    };
    format!(
        "{load}, {stop}, {} thread{}",
        p.threads,
        if p.threads == 1 { "" } else { "s" }
    )
}

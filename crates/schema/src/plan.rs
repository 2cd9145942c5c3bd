//! The attack as planned: load model, request, targets, protocol, histogram layout.

use serde::{Deserialize, Serialize};

/// Closed loop (fixed connections, back to back) or open loop (fixed arrival rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Each connection sends its next request when the previous response ends.
    Closed,
    /// Requests are due on a schedule regardless of responses.
    Open,
}

/// How open-loop requests are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Request k is due at `t0 + k / rate`.
    Constant,
    /// Exponential gaps with mean `1 / rate`, from a seeded generator.
    Poisson,
}

/// One request header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Header name, e.g. `"accept"`.
    pub name: String,
    /// Header value, e.g. `"text/html"`.
    pub value: String,
}

/// The attack as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Load model.
    pub mode: Mode,
    /// Target URL, e.g. `"http://127.0.0.1:8081/"`.
    pub target: String,
    /// Request method, e.g. `"GET"`.
    pub method: String,
    /// Extra request headers, in the order given.
    pub headers: Vec<Header>,
    /// Request body length in bytes (0 for none).
    pub body_bytes: u64,
    /// Closed loop: the number of connections. Open loop: the most connections it may open.
    pub connections: u32,
    /// Open loop: requests per second across all connections (a rate plan's peak); `None` in
    /// closed loop.
    pub rate_per_s: Option<f64>,
    /// Open loop with a rate plan: its stages (`--rate '0->20k:30s,20k:60s'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_plan: Option<Vec<PlannedStage>>,
    /// Open loop: the arrival process.
    pub arrival: Arrival,
    /// Seed of the Poisson arrival generator, if any.
    pub seed: Option<u64>,
    /// Measured duration in seconds after warm-up, if the attack is bounded by time.
    pub duration_s: Option<f64>,
    /// Total number of requests, if the attack is bounded by count.
    pub requests: Option<u64>,
    /// Warm-up in seconds before the measured window (recorded in intervals, excluded from totals).
    pub warmup_s: f64,
    /// Request timeout in seconds; a timed-out request is recorded at this value.
    pub timeout_s: f64,
    /// Connect timeout in seconds.
    pub connect_timeout_s: f64,
    /// HTTP version used, e.g. `"1.1"`.
    pub http_version: String,
    /// Worker threads that generated load.
    pub threads: u32,
    /// Histogram layout shared by every latency histogram in this file.
    pub histogram: HistogramSettings,
    /// Target files, when requests come from lists, targets files or a log (absent for one URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<TargetsRecord>,
    /// The address every connection went to, when `--connect-to` or `--resolve` set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_to: Option<String>,
    /// The socket address connections went to, e.g. `"127.0.0.1:6081"`: where the
    /// workload was sent, which is not part of the workload hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_address: Option<String>,
    /// Connections were closed and reopened after this many requests (1 = no keep-alive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_connection: Option<u32>,
    /// HTTP/2: streams in flight per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// TLS, for `https://` targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsRecord>,
    /// This run is one shard of a larger attack (`--shard i/N`); the rest of the plan is the
    /// whole attack's (its rate, connections, requests), of which this shard took its share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// The wall-clock start asked for with `--start-at`, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The statuses that count as success (`--expect-status`), as inclusive ranges, e.g.
    /// `[{"from": 200, "to": 299}]`; absent means 2xx and 3xx (200-399). Every success
    /// ratio, error share, threshold, SLO and exit code of the run uses them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_status: Option<Vec<StatusRange>>,
    /// The synthetic cache workload requests were drawn from (`--catalogue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<crate::CatalogueRecord>,
    /// The URL classes of the breakdown by class (`--class NAME=REGEX`), in order: a
    /// request is in the first whose regex matches its path and query.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<UrlClassRecord>,
    /// The `Server-Timing` metric read as the origin's own time (`--server-timing`), when
    /// some response carried it (`latency.origin`, `latency.proxy_added`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<String>,
}

/// One `--class`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlClassRecord {
    /// Its name.
    pub name: String,
    /// Its regex (Rust's `regex` syntax).
    pub regex: String,
}

/// Statuses from `from` to `to`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusRange {
    /// The first status of the range.
    pub from: u16,
    /// The last status of the range.
    pub to: u16,
}

/// What success means when a plan does not say: 2xx and 3xx, as k6 and vegeta count it.
pub const DEFAULT_EXPECTED: [StatusRange; 1] = [StatusRange { from: 200, to: 399 }];

impl StatusRange {
    /// True when `status` lies in the range.
    pub fn contains(&self, status: u16) -> bool {
        (self.from..=self.to).contains(&status)
    }

    /// `2xx`, `2xx-3xx`, `204`, `200-204`.
    pub fn text(&self) -> String {
        let class = |s: u16| s.is_multiple_of(100) && s >= 100;
        match (self.from, self.to) {
            (a, b) if a == b => a.to_string(),
            (a, b) if class(a) && (b + 1).is_multiple_of(100) && b - a == 99 => {
                format!("{}xx", a / 100)
            }
            (a, b) if class(a) && (b + 1).is_multiple_of(100) => {
                format!("{}xx-{}xx", a / 100, b / 100)
            }
            (a, b) => format!("{a}-{b}"),
        }
    }
}

/// One stage of a rate plan as planned.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlannedStage {
    /// Requests per second at the stage's start.
    pub from_rate_per_s: f64,
    /// Requests per second at its end (the same for a hold).
    pub to_rate_per_s: f64,
    /// Its length in seconds.
    pub duration_s: f64,
}

impl Plan {
    /// The statuses that count as success.
    pub fn expected(&self) -> &[StatusRange] {
        self.expect_status.as_deref().unwrap_or(&DEFAULT_EXPECTED)
    }

    /// True when a response with `status` is a success.
    pub fn expects(&self, status: u16) -> bool {
        self.expected().iter().any(|r| r.contains(status))
    }

    /// The expected statuses as written: `2xx-3xx`, `200, 204`.
    pub fn expected_text(&self) -> String {
        self.expected()
            .iter()
            .map(StatusRange::text)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Which part of a sharded attack a run was.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// 0-based index.
    pub index: u32,
    /// Shards in the attack.
    pub count: u32,
    /// Connections (closed loop) or the connection cap (open loop) this shard used.
    pub connections: u32,
    /// Requests per second this shard was due to send (open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
}

/// How TLS was used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsRecord {
    /// SNI and certificate name, e.g. `"www.example.com"`.
    pub server_name: String,
    /// How the certificate was checked: `system roots`, `ca file PATH` or `insecure (not verified)`.
    pub verify: String,
}

/// Where requests came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetsRecord {
    /// How targets were chosen: `sequential`, `random` or `round_robin`.
    pub pick: String,
    /// Seed of a random pick.
    pub seed: Option<u64>,
    /// Walks over the list, if bounded.
    pub passes: Option<u64>,
    /// The files, in order (several for a `--mix`).
    pub sets: Vec<TargetSetRecord>,
}

/// One target file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSetRecord {
    /// Path as given.
    pub file: String,
    /// `urls`, `targets` (vegeta), `json` or `log`.
    pub format: String,
    /// Weight in a mix.
    pub weight: u32,
    /// Targets in the file.
    pub targets: u64,
    /// Malformed lines skipped with `--skip-bad-lines`.
    pub lines_skipped: u64,
    /// Log lines not replayed because of their method (only GET and HEAD are).
    pub other_methods: u64,
}

/// The layout of the latency histograms: runs compare exactly only when these agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramSettings {
    /// Unit of recorded values: always `"ns"` in schema v1.
    pub unit: TimeUnit,
    /// Lowest discernible value in ns (1).
    pub lowest_ns: u64,
    /// Highest trackable value in ns (60 s = 60,000,000,000); larger values count in `out_of_range`.
    pub highest_ns: u64,
    /// Significant decimal digits kept (3: quantisation at most 0.1%).
    pub sigfig: u8,
}

impl Default for HistogramSettings {
    fn default() -> Self {
        HistogramSettings {
            unit: TimeUnit::Ns,
            lowest_ns: 1,
            highest_ns: 60_000_000_000,
            sigfig: 3,
        }
    }
}

/// Unit of histogram values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
}

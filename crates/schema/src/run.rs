//! The run file's types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{EncodedHistogram, Moments, SCHEMA_VERSION, SchemaError};

/// One attack's results: the root of a run file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    /// Format version; readers refuse a newer one. Always [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// Version of the vload that wrote the file, e.g. `"0.1.0"`.
    pub vload_version: String,
    /// Unique id of this run, e.g. `"20261122T013612Z-5f3a9c21"`.
    pub run_id: String,
    /// Free-form label given with `--label` (e.g. `"x86_64"`), used by `compare --group-by label`.
    pub label: Option<String>,
    /// Wall-clock start of the attack in RFC 3339 UTC, e.g. `"2026-11-22T01:36:12.345Z"`.
    pub started_at: String,
    /// True when the attack was stopped early by Ctrl-C or SIGTERM; the counts cover what ran.
    pub interrupted: bool,
    /// The machine that generated the load.
    pub environment: Environment,
    /// The full plan of the attack, as resolved from the command line.
    pub plan: Plan,
    /// Hex SHA-256 of what was requested (method, targets, headers, body): equal hashes mean the
    /// same workload, so `compare` can refuse apples against oranges.
    pub workload_hash: String,
    /// How long each phase lasted.
    pub window: Window,
    /// Counts over the measured window (warm-up excluded).
    pub totals: Totals,
    /// Latency histograms and exact moments over the measured window.
    pub latency: Latency,
    /// Cache hit classification of responses over the measured window.
    pub cache: CacheCounts,
    /// Whether the client itself was the bottleneck.
    pub client_health: ClientHealth,
    /// One record per second of the attack, warm-up included (flagged).
    pub intervals: Vec<Interval>,
    /// The server's own account of the measured window (`--server-stats`, `--watch-pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerRecord>,
}

/// What the server under test said about the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Varnish's counters (`--server-stats varnish[:NAME]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub varnish: Option<VarnishRecord>,
    /// The server process's CPU time (`--watch-pid PID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
}

/// `varnishstat -j` at the edges of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VarnishRecord {
    /// The instance (`varnishstat -n`), empty for the default one.
    pub instance: String,
    /// The span the counters cover: `"measured"` (warm-up excluded) or `"attack"` (warm-up
    /// included), when Varnish had not yet published its busy workers' counts at the end of
    /// the warm-up, so a snapshot there would have been stale.
    pub covers: String,
    /// Counters' increase over `covers`, by name without `MAIN.`
    /// (`client_req`, `cache_hit`, `cache_miss`, `backend_req`, `sess_conn`, ...).
    pub counters: BTreeMap<String, u64>,
    /// Gauges at the end of the window (`n_object`, `threads`, ...).
    pub gauges: BTreeMap<String, u64>,
    /// Where varnishstat kept its counters: `"counters"` (Varnish 6.5 and later) or
    /// `"top level"` (before).
    pub layout: String,
}

/// CPU time of the server process and its descendants, from `/proc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// The process given with `--watch-pid`.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), e.g. `"varnishd"`.
    pub name: String,
    /// Processes counted at the end: the process and its descendants (Varnish's worker
    /// process is a child of the one started).
    pub processes: u32,
    /// User CPU seconds over the measured window.
    pub user_s: f64,
    /// System CPU seconds over the measured window.
    pub system_s: f64,
}

impl ProcessRecord {
    /// User plus system CPU seconds over the measured window.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

impl RunFile {
    /// Parses a run file, checking first that it is one and that this vload can read its
    /// version, then that it agrees with itself ([`RunFile::validate`]).
    ///
    /// # Errors
    /// [`SchemaError::Json`] for malformed or truncated JSON, [`SchemaError::Duplicate`] for a
    /// repeated key, [`SchemaError::NotARun`] for JSON without `schema_version`,
    /// [`SchemaError::NewerVersion`] for files from a newer vload, [`SchemaError::Invalid`]
    /// for a file whose parts contradict each other.
    pub fn from_json(text: &str) -> Result<RunFile, SchemaError> {
        crate::validate::reject_duplicate_keys(text)?;
        let value: serde_json::Value = serde_json::from_str(text).map_err(SchemaError::Json)?;
        let version = value
            .get("schema_version")
            .ok_or(SchemaError::NotARun)?
            .as_u64()
            .ok_or(SchemaError::NotARun)?;
        if version > u64::from(SCHEMA_VERSION) {
            return Err(SchemaError::NewerVersion {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        let run: RunFile = serde_json::from_value(value).map_err(SchemaError::Json)?;
        run.validate()?;
        Ok(run)
    }

    /// Serializes to pretty-printed JSON with a trailing newline (the on-disk form).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("run file types always serialize");
        text.push('\n');
        text
    }
}

/// The load-generating machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// CPU architecture, e.g. `"x86_64"` or `"aarch64"`.
    pub arch: String,
    /// Operating system, e.g. `"linux"`.
    pub os: String,
    /// CPU model name from `/proc/cpuinfo`, e.g. `"AMD EPYC 7R13 Processor"`.
    pub cpu_model: String,
    /// CPUs this process may run on (its affinity mask).
    pub cpus_available: u32,
    /// Kernel release, e.g. `"6.1.0-18-amd64"`.
    pub kernel: String,
    /// Host name of the client machine.
    pub hostname: String,
    /// The kernel's view of its clock synchronisation (`adjtimex`) when the attack started:
    /// what lines up the windows of shards on different machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockRecord>,
}

/// Clock synchronisation as the kernel reports it (NTP / chrony discipline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockRecord {
    /// False when the kernel marks the clock unsynchronised (`STA_UNSYNC`).
    pub synchronized: bool,
    /// Estimated offset from the reference, in microseconds, as last set by the NTP daemon.
    pub offset_us: i64,
    /// Maximum error bound, in microseconds.
    pub max_error_us: u64,
    /// Estimated error, in microseconds.
    pub est_error_us: u64,
}

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
    /// Open loop: requests per second across all connections; `None` in closed loop.
    pub rate_per_s: Option<f64>,
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

/// Durations of the attack's phases.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Warm-up actually run, in seconds.
    pub warmup_s: f64,
    /// Measured window in seconds: from the end of warm-up to the last dispatch.
    pub measured_s: f64,
    /// Seconds from the last dispatch until the last response arrived (vegeta's "wait").
    pub wait_s: f64,
    /// With `--start-at`: how much later than asked the attack began, on this machine's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset_s: Option<f64>,
}

/// Counts over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Open loop: requests that fell due. Closed loop: equal to `sent`.
    pub intended: u64,
    /// Requests written to a connection (or that failed trying to).
    pub sent: u64,
    /// Requests that ended, with a response or an error.
    pub completed: u64,
    /// Responses by status code, e.g. `{"200": 99841}`.
    pub status_codes: BTreeMap<u16, u64>,
    /// Failed requests by kind, each with a count and one sample message.
    pub errors: BTreeMap<ErrorKind, ErrorCount>,
    /// Response bytes received (headers and body as counted by the client: body bytes).
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// TCP connections opened (successful connects).
    pub connections_opened: u64,
    /// Open loop: requests whose dispatch lag exceeded 1 ms (the client fell behind its schedule).
    pub late_sends: u64,
    /// Open loop: requests due but not completed when the attack ended (the server fell behind).
    pub backlog: u64,
    /// Latency values above the histogram's highest trackable value (recorded at the maximum).
    pub out_of_range: u64,
    /// Open loop: requests that fell due inside the measured window but were never sent,
    /// because the client was frozen or stopped past the window's end (counted in `intended`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsent: u64,
    /// Open loop: requests that found every connection busy and waited for one (their wait
    /// is part of their response time; `latency.queue_wait` has its distribution).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queued: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Totals {
    /// Requests that ended with a 2xx or 3xx status.
    pub fn successes(&self) -> u64 {
        self.status_codes
            .iter()
            .filter(|(code, _)| (200..400).contains(*code))
            .map(|(_, n)| n)
            .sum()
    }

    /// All failed requests (transport errors; HTTP error statuses are not counted here).
    pub fn error_count(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }
}

/// Why a request failed. Counted by kind, never by message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server refused the TCP connection.
    ConnectRefused,
    /// Connecting took longer than the connect timeout.
    ConnectTimeout,
    /// Any other failure to connect (unreachable, DNS, out of file descriptors).
    Connect,
    /// No complete response within the request timeout.
    RequestTimeout,
    /// The server reset or closed the connection before the response was complete.
    Reset,
    /// TLS handshake or record failure.
    Tls,
    /// The server's bytes were not valid HTTP (or not HTTP/2 when HTTP/2 was asked for).
    Protocol,
    /// The response body failed after the headers arrived.
    Body,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    StreamReset,
    /// HTTP/2: the server sent GOAWAY and refused or abandoned the request's stream.
    Goaway,
    /// The client ran out of a resource of its own (file descriptors, local ports): not
    /// the server's failure.
    ClientLimit,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// The snake_case name used in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::RequestTimeout => "request_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Tls => "tls",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Body => "body",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::Goaway => "goaway",
            ErrorKind::ClientLimit => "client_limit",
            ErrorKind::Other => "other",
        }
    }
}

/// Failures of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// How many requests failed this way.
    pub count: u64,
    /// The first error message seen, for a human to read.
    pub sample: String,
}

/// Which latency a histogram measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyKind {
    /// From the intended send time to the end of the response (open loop; free of coordinated omission).
    Response,
    /// From the actual write to the end of the response (closed loop; subject to coordinated omission).
    Service,
}

/// The latency record of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Which histogram the headline numbers come from: `response` in open loop, `service` in closed loop.
    pub primary: LatencyKind,
    /// Open loop: time from the intended send to the end of the response.
    pub response: Option<LatencyRecord>,
    /// Time from the actual write of the request to the end of the response.
    pub service: LatencyRecord,
    /// Open loop: actual dispatch minus intended dispatch (the client's own lateness).
    pub dispatch_lag: Option<LatencyRecord>,
    /// Oversleep of a 1 ms probe on every worker (a hiccup meter, as jHiccup).
    pub hiccup: LatencyRecord,
    /// Primary latency of responses classified as cache hits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit: Option<LatencyRecord>,
    /// Primary latency of responses classified as not hits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss: Option<LatencyRecord>,
    /// TLS handshake time of each connection opened (recorded apart from request latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<LatencyRecord>,
    /// Open loop: how long the requests that found every connection busy waited for one
    /// (`totals.queued` of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait: Option<LatencyRecord>,
}

impl Latency {
    /// The primary latency record.
    pub fn primary(&self) -> &LatencyRecord {
        match (self.primary, &self.response) {
            (LatencyKind::Response, Some(response)) => response,
            _ => &self.service,
        }
    }
}

/// One latency distribution: the full histogram and exact moments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRecord {
    /// The histogram (ns, see [`HistogramSettings`]).
    pub histogram: EncodedHistogram,
    /// Exact moments of the same values.
    pub moments: Moments,
}

/// How responses were classified as cache hits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCounts {
    /// Responses classified as cache hits.
    pub hit: u64,
    /// Responses classified as not hits (miss, pass).
    pub miss: u64,
    /// Responses without evidence either way (never counted as misses).
    pub unknown: u64,
    /// How many classifications rested on each kind of evidence.
    pub by_source: CacheSources,
}

/// Counts of classifications by evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheSources {
    /// `X-Varnish`: two ids = hit, one id = not a hit.
    pub x_varnish: u64,
    /// `X-Cache: HIT|MISS` (the last layer's value).
    pub x_cache: u64,
    /// `Age` greater than zero = hit.
    pub age: u64,
}

/// The client's own health verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The client kept up.
    Ok,
    /// The client came close to its limits; numbers may be slightly pessimistic.
    Warn,
    /// The client was the bottleneck: the numbers describe vload, not the server.
    ClientBound,
}

/// Signals that say whether the client was the bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientHealth {
    /// CPU time used by the load-generating threads, in seconds (user + system).
    pub cpu_s: f64,
    /// `cpu_s / (wall time x cores available)`: 1.0 means every core was busy generating load.
    pub cpu_util: f64,
    /// The busiest worker thread's CPU time over wall time: 1.0 means it never idled.
    pub max_thread_busy: f64,
    /// Open loop: 99th percentile of dispatch lag in ns.
    pub dispatch_lag_p99_ns: Option<u64>,
    /// Open loop: requests dispatched more than 1 ms late.
    pub late_sends: u64,
    /// 99th percentile of the hiccup probe's oversleep in ns.
    pub hiccup_p99_ns: Option<u64>,
    /// Soft limit on open file descriptors during the run (after vload raised it).
    pub fd_limit: u64,
    /// File descriptors the plan needs (connections plus a margin).
    pub fd_needed: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// Why the verdict is not `ok`, one sentence each (the messages of `signals`).
    pub reasons: Vec<String>,
    /// The busiest worker thread's time waiting for a CPU (runnable, not running) over wall
    /// time, from `/proc/thread-self/schedstat`: other processes taking the cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_thread_waiting: Option<f64>,
    /// Each signal that moved the verdict, with its level and what it points at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<HealthSignal>,
}

/// One signal behind the client-health verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthSignal {
    /// Which measurement: `thread_busy`, `cpu`, `unsent`, `late_sends`, `dispatch_lag`,
    /// `hiccups`, `cpu_wait`, `queue_wait`, `fd_limit`.
    pub signal: String,
    /// The level it calls for.
    pub level: Verdict,
    /// What it points at.
    pub cause: Cause,
    /// One sentence for the report.
    pub message: String,
}

/// What a client-health signal points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// vload itself could not keep up: its numbers measure vload, not the server.
    Client,
    /// The machine paused everyone (other processes, a VM pause): the results include
    /// those pauses, which the server under test may not have suffered.
    Machine,
    /// Requests waited for one of the connections vload was allowed to open
    /// (`--max-connections`).
    ConnectionCap,
}

/// Responses by status class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusClasses {
    /// 1xx responses.
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    /// 2xx responses.
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    /// 3xx responses.
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    /// 4xx responses.
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    /// 5xx responses.
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

impl StatusClasses {
    /// Counts `n` responses with this status.
    pub fn count_n(&mut self, status: u16, n: u64) {
        let class = match status / 100 {
            1 => &mut self.s1xx,
            2 => &mut self.s2xx,
            3 => &mut self.s3xx,
            4 => &mut self.s4xx,
            _ => &mut self.s5xx,
        };
        *class += n;
    }

    /// Adds another set of counts.
    pub fn add(&mut self, other: &StatusClasses) {
        self.s1xx = self.s1xx.saturating_add(other.s1xx);
        self.s2xx = self.s2xx.saturating_add(other.s2xx);
        self.s3xx = self.s3xx.saturating_add(other.s3xx);
        self.s4xx = self.s4xx.saturating_add(other.s4xx);
        self.s5xx = self.s5xx.saturating_add(other.s5xx);
    }
}

/// One second of the attack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start in seconds from the attack's start (warm-up included).
    pub start_s: f64,
    /// Length in seconds (1.0 except for the last interval).
    pub duration_s: f64,
    /// True when the interval lies in the warm-up.
    pub warmup: bool,
    /// Requests that fell due (open loop) or were sent (closed loop).
    pub intended: u64,
    /// Requests written.
    pub sent: u64,
    /// Requests that ended, with a response or an error.
    pub completed: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Responses by status class.
    pub status_classes: StatusClasses,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Connections opened.
    pub connections_opened: u64,
    /// Requests in flight at the end of the interval.
    pub in_flight: u64,
    /// Open loop: requests due in this interval that were never sent (see `totals.unsent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsent: u64,
    /// Responses classified as cache hits.
    pub hits: u64,
    /// Responses classified as not hits.
    pub misses: u64,
    /// Primary latency of the requests completed in this interval.
    pub latency: LatencyRecord,
    /// CPU seconds the watched server process used in this interval (`--watch-pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
}

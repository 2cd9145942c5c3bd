//! The run file's types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    ArrivalSample, ClientHealth, EncodedHistogram, Moments, Plan, RunCheck, SCHEMA_VERSION,
    SchemaError, ServerRecord, StageRecord, SweepRecord, UntilStable,
};

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
    /// What a cache should have achieved for a `--catalogue` workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<crate::CacheModelRecord>,
    /// The warm-up run before this attack, until the cache was warm (`--warmup-until`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmed: Option<crate::WarmRecord>,
    /// Purges sent beside the load (`--purge-every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purges: Option<crate::PurgeRecord>,
    /// A rate plan's stages, or a sweep's steps, each with its own summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageRecord>,
    /// The measured window's requests grouped by host, class, set, pass, status class and
    /// cache state, each a partition of the totals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakdowns: Vec<crate::Breakdown>,
    /// A capacity sweep's SLO and answer (`vload sweep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepRecord>,
    /// Open loop with Poisson arrivals: a bounded sample of the achieved inter-send gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalSample>,
    /// `--until-stable`: its target and whether the run reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_stable: Option<UntilStable>,
    /// The run's checks of itself (arrival fidelity, convergence, stationarity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<RunCheck>,
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
        let mut run: RunFile = serde_json::from_value(value).map_err(SchemaError::Json)?;
        if let Some(stats) = run.server.as_mut().and_then(|s| s.stats.as_mut()) {
            stats.fill_from_varnish_counters();
        }
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

/// Counts over the measured window: the requests that fell due in it (open loop) or were
/// taken up in it (closed loop), wherever they ended.
///
/// The ledger, checked whenever a run file is written or read: every request due ends in
/// exactly one place. `intended = sent + unsent`; `sent = completed + unfinished`;
/// `completed` = the responses in `status_codes` + the failures in `errors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Open loop: requests that fell due. Closed loop: requests a connection took up.
    pub intended: u64,
    /// Requests vload tried to send: written to a connection, or failed trying (their
    /// connection could not be made, or none came free before their deadline).
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
    /// Requests that fell due but were never sent, because the client was frozen past the
    /// window's end or stopped (Ctrl-C) first (counted in `intended`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsent: u64,
    /// Requests sent (or whose connection was being made) that had neither a response nor
    /// an error when the run stopped waiting for them (counted in `sent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unfinished: u64,
    /// Of the `request_timeout` errors, requests that timed out still waiting for a
    /// connection: never written, because every connection was busy or still being made
    /// until their deadline.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue_timeouts: u64,
    /// Connections closed because the server sent bytes after a complete response that
    /// nobody asked for (a body on a 204 or 304, a Content-Length shorter than the body):
    /// the response stands, the connection cannot be used again. Not a request's outcome.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stray_closes: u64,
    /// Open loop: requests that found every connection busy and waited for one (their wait
    /// is part of their response time; `latency.queue_wait` has its distribution).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queued: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Totals {
    /// Requests that ended with a status `plan` expects (2xx and 3xx unless it says).
    pub fn successes(&self, plan: &Plan) -> u64 {
        self.status_codes
            .iter()
            .filter(|(code, _)| plan.expects(**code))
            .map(|(_, n)| n)
            .sum()
    }

    /// The share of the requests due that did not succeed: failed, answered with a status
    /// `plan` does not expect, never sent, or unfinished; `None` when none was due.
    pub fn failure_share(&self, plan: &Plan) -> Option<f64> {
        let due = self.intended.max(self.completed + self.unsent);
        (due > 0).then(|| due.saturating_sub(self.successes(plan)) as f64 / due as f64)
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
    /// Every kind, in the order declared (a live exporter shows each from zero).
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Connect,
        ErrorKind::RequestTimeout,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Protocol,
        ErrorKind::Body,
        ErrorKind::StreamReset,
        ErrorKind::Goaway,
        ErrorKind::ClientLimit,
        ErrorKind::Other,
    ];

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
    /// TCP connect time of each connection opened, from the connect call until the socket
    /// is connected (ab's "Connect" row, httperf's connection time): a full accept queue
    /// shows here, apart from request latency. Absent in files of vload before 0.1.0's #32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_connect: Option<LatencyRecord>,
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
    /// RFC 9211 `Cache-Status` (its last member): `hit`, or a `fwd` reason.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_status: u64,
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

/// One second of the attack: what the requests of its window (warm-up or measured) did in
/// it. The measured intervals sum to the totals.
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
    /// Requests counted as never sent in this interval (see `totals.unsent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsent: u64,
    /// Requests counted as unfinished in this interval: the last one (see
    /// `totals.unfinished`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unfinished: u64,
    /// Connections closed in this interval for stray bytes (see `totals.stray_closes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stray_closes: u64,
    /// Responses classified as cache hits.
    pub hits: u64,
    /// Responses classified as not hits.
    pub misses: u64,
    /// Primary latency of the requests completed in this interval.
    pub latency: LatencyRecord,
    /// CPU seconds the watched server process used in this interval (`--watch-pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    /// The server's common counters' increase over this interval (`--server-stats`, read
    /// once a second). A server that publishes late (Varnish's busy connections) shows its
    /// counts a second or more after vload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::CommonCounters>,
}

#[cfg(test)]
mod error_kinds {
    use super::ErrorKind;

    /// `ALL` holds every kind once: each name once, and each kind round-trips by name.
    #[test]
    fn all_holds_every_kind_once() {
        let mut names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        for kind in ErrorKind::ALL {
            // An exhaustive match: a new kind fails to compile here until ALL has it.
            let listed = match kind {
                ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::Connect
                | ErrorKind::RequestTimeout
                | ErrorKind::Reset
                | ErrorKind::Tls
                | ErrorKind::Protocol
                | ErrorKind::Body
                | ErrorKind::StreamReset
                | ErrorKind::Goaway
                | ErrorKind::ClientLimit
                | ErrorKind::Other => true,
            };
            assert!(listed);
        }
    }
}

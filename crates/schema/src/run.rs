//! The run file's types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    ArrivalSample, CacheCounts, ClientHealth, ErrorCount, ErrorKind, Latency, LatencyRecord, Plan,
    RunCheck, SCHEMA_VERSION, SchemaError, ServerRecord, StageRecord, StatusClasses, SweepRecord,
    UntilStable,
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
    /// Stampedes sent beside the load (`--stampede`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stampede: Option<crate::StampedeRecord>,
    /// The origin plan the attack drove (`--outage`, `--slowdown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_plan: Option<crate::OriginPlanRecord>,
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
    /// Where the run came from (commit, branch, configuration hashes, server version): what
    /// `vload history` keys its series by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::Provenance>,
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
        let run = RunFile::from_json_unchecked(text)?;
        run.validate()?;
        Ok(run)
    }

    /// Parses a run file as [`RunFile::from_json`] does, without asking whether it agrees
    /// with itself: for a store that keeps such a file, and says so, rather than lose it.
    ///
    /// # Errors
    /// As [`RunFile::from_json`], never [`SchemaError::Invalid`].
    pub fn from_json_unchecked(text: &str) -> Result<RunFile, SchemaError> {
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
    /// The CPU frequency governor (`scaling_governor` of cpu0), where the kernel has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
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
    /// With `--start-at`: how much later than asked the first request went out, on this
    /// machine's clock (a shard frozen or slow to start shows it here).
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
    /// Bytes read off the connections for the window's requests: heads, chunk framing and
    /// HTTP/2 frames included (what wrk counts as read, its Transfer/sec). Counted by vload's
    /// own clients; absent with hyper's, and in files before 0.1.0's #48.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_bytes_in: Option<u64>,
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
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unsent: u64,
    /// Requests sent (or whose connection was being made) that had neither a response nor
    /// an error when the run stopped waiting for them (counted in `sent`).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unfinished: u64,
    /// Of the `request_timeout` errors, requests that timed out still waiting for a
    /// connection: never written, because every connection was busy or still being made
    /// until their deadline.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub queue_timeouts: u64,
    /// Connections closed because the server sent bytes after a complete response that
    /// nobody asked for (a body on a 204 or 304, a Content-Length shorter than the body):
    /// the response stands, the connection cannot be used again. Not a request's outcome.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub stray_closes: u64,
    /// Misses whose `Server-Timing` claimed more time at the origin than the request's own
    /// wait for its first byte (a clock skew or a lying origin): left out of
    /// `latency.origin` and `latency.proxy_added`, counted here instead.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub server_timing_beyond_wait: u64,
    /// Of the `request_timeout` errors, requests whose whole response was waiting when vload
    /// looked after their deadline: the server answered, but when is unknown; the time past
    /// the deadline may be the client's (a thread off a CPU), not the server's.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub timeouts_answered_late: u64,
    /// Connections that were made and closed (by vload at the end, idle, or by the server)
    /// without carrying a request: a proxy may count each as a client's request error
    /// (HAProxy's `ereq`), which is vload's doing, not the server's trouble.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub connections_unused: u64,
    /// Open loop: requests that found every connection busy and waited for one (their wait
    /// is part of their response time; `latency.queue_wait` has its distribution).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub queued: u64,
    /// HTTP/3: how each connection's QUIC handshake went (they add up to the connections
    /// the run opened, warm-up included). Absent for TCP-based protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<Handshakes>,
}

/// The kinds of QUIC handshakes a run made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshakes {
    /// Full handshakes: the server's certificate sent and checked (one round trip).
    pub full: u64,
    /// Resumed from a session ticket of an earlier connection, no certificate (one round
    /// trip, no early data).
    pub resumed: u64,
    /// Resumed with early data (`--0rtt`) the server accepted: requests went out before
    /// the handshake's round trip.
    pub early_accepted: u64,
    /// Resumed with early data the server refused: the handshake went on as a resumed one
    /// and the early requests were sent again after it.
    pub early_rejected: u64,
    /// Requests sent as early data (safe methods only), whatever their fate.
    #[serde(default)]
    pub early_requests: u64,
    /// Of those, requests sent again after the server refused the early data.
    #[serde(default)]
    pub early_retried: u64,
    /// Of the requests sent as early data, those the server answered 425 Too Early (RFC
    /// 8470): the other 425s of `status_codes` answered requests sent after the handshake.
    #[serde(default)]
    pub early_too_early: u64,
    /// Handshakes that took a Retry round trip first (the server validating the client's
    /// address before it spends state on it), within the kinds above: the Retry packets
    /// the client received.
    #[serde(default)]
    pub retried: u64,
}

impl Handshakes {
    /// All connections whose handshake completed.
    pub fn total(&self) -> u64 {
        self.full + self.resumed + self.early_accepted + self.early_rejected
    }

    /// Adds `other`'s counts (workers, shards).
    pub fn add(&mut self, other: &Handshakes) {
        self.full += other.full;
        self.resumed += other.resumed;
        self.early_accepted += other.early_accepted;
        self.early_rejected += other.early_rejected;
        self.early_requests += other.early_requests;
        self.early_retried += other.early_retried;
        self.early_too_early += other.early_too_early;
        self.retried += other.retried;
    }
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
    /// Requests vload tried to send, as `totals.sent` counts them: written to a connection,
    /// or failed trying (a connection that could not be made, or none free before the
    /// deadline: a queue timeout, never written). The ledger's door, not bytes on the wire.
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
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unsent: u64,
    /// Requests counted as unfinished in this interval: the last one (see
    /// `totals.unfinished`).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unfinished: u64,
    /// Connections closed in this interval for stray bytes (see `totals.stray_closes`).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub stray_closes: u64,
    /// Responses classified as cache hits.
    pub hits: u64,
    /// Responses classified as not hits.
    pub misses: u64,
    /// Tiered caches: each layer's counts in this interval, as in `cache.layers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<crate::LayerCounts>,
    /// Of `hits`, those served stale: past their freshness, by the cache's word
    /// (`Cache-Status` with a negative `ttl`, nginx's `STALE` and `UPDATING`).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub stale: u64,
    /// The ages of this interval's stale answers, when any carried an `Age`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_ages: Option<crate::StaleAges>,
    /// Of `hits`, those for the objects `--purge-every` purges (the catalogue's most
    /// popular): a purge's refetches are the misses on the objects purged.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub purged_hits: u64,
    /// Of `misses`, those for the objects `--purge-every` purges.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub purged_misses: u64,
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

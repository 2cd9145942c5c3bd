//! What the run file measures in every record (the run's totals, each second, each stage,
//! each group of a breakdown): error kinds and counts, latency distributions, cache and
//! status counts.

use serde::{Deserialize, Serialize};

use crate::codec::EncodedHistogram;
use crate::moments::Moments;

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
    /// QUIC: an open connection heard nothing from the server for its idle timeout.
    QuicIdleTimeout,
    /// QUIC: the server answered with a stateless reset (it no longer knows the
    /// connection: restarted, or its state lost).
    StatelessReset,
    /// QUIC: the server speaks no QUIC version vload does (version negotiation failed).
    QuicVersion,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// Every kind, in the order declared (a live exporter shows each from zero).
    pub const ALL: [ErrorKind; 15] = [
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
        ErrorKind::QuicIdleTimeout,
        ErrorKind::StatelessReset,
        ErrorKind::QuicVersion,
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
            ErrorKind::QuicIdleTimeout => "quic_idle_timeout",
            ErrorKind::StatelessReset => "stateless_reset",
            ErrorKind::QuicVersion => "quic_version",
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
    /// Each response's wait for its first byte, from the request's write (hey's "resp
    /// wait", k6's `http_req_waiting`, h2load's time to first byte per request). With
    /// `transfer` it adds up to the service time. Absent in files before 0.1.0's #48.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<LatencyRecord>,
    /// Each response's transfer, from its first byte to its last (hey's "resp read", k6's
    /// `http_req_receiving`): 0 when the whole response came in one read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<LatencyRecord>,
    /// Of the misses and passes whose response carried the origin's own time
    /// (`Server-Timing`, the metric `plan.server_timing`): that time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<LatencyRecord>,
    /// Of the same responses: the wait for the first byte minus the origin's own time, the
    /// time the proxy (and the network to and from it) added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_added: Option<LatencyRecord>,
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCounts {
    /// Responses classified as cache hits.
    pub hit: u64,
    /// Responses classified as not hits (miss, pass).
    pub miss: u64,
    /// Responses without evidence either way (never counted as misses).
    pub unknown: u64,
    /// How many classifications rested on each kind of evidence.
    pub by_source: CacheSources,
    /// Tiered caches: each layer's counts, the nearest the client first, when the responses
    /// list two or more (`Cache-Status`'s members, `X-Cache`'s words). A layer counts the
    /// requests that reached it: every one for the first, and for each next one those the
    /// layer before forwarded (a miss or a pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerCounts>,
    /// The ages of the answers served stale, when any carried an `Age`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_ages: Option<StaleAges>,
}

/// The `Age` (seconds) of the answers a cache served stale: how long past their fetch it kept
/// serving them, the figure a grace or `stale-if-error` setting bounds. Exact: a sum and a
/// largest, so shards and stages add.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleAges {
    /// Stale answers that carried an `Age`.
    pub answers: u64,
    /// The sum of their ages (s): with `answers`, their mean.
    pub sum_s: u64,
    /// The oldest (s).
    pub max_s: u64,
}

impl StaleAges {
    /// Counts one stale answer of this age.
    pub fn add(&mut self, age_s: u64) {
        self.answers += 1;
        self.sum_s = self.sum_s.saturating_add(age_s);
        self.max_s = self.max_s.max(age_s);
    }

    /// Adds another's answers (a shard's, a stage's).
    pub fn merge(&mut self, other: &StaleAges) {
        self.answers += other.answers;
        self.sum_s = self.sum_s.saturating_add(other.sum_s);
        self.max_s = self.max_s.max(other.max_s);
    }

    /// Their mean age (s), when there are any.
    pub fn mean_s(&self) -> Option<f64> {
        (self.answers > 0).then(|| self.sum_s as f64 / self.answers as f64)
    }

    /// Itself when it counted any answer: what a run file keeps.
    pub fn counted(self) -> Option<StaleAges> {
        (self.answers > 0).then_some(self)
    }

    /// Adds an optional record into an optional total.
    pub fn merge_into(into: &mut Option<StaleAges>, other: Option<&StaleAges>) {
        if let Some(other) = other {
            into.get_or_insert_default().merge(other);
        }
    }
}

/// One cache layer's counts (`cache.layers`, `intervals[].layers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerCounts {
    /// Requests that reached this layer.
    pub reached: u64,
    /// Of those, the ones it answered itself (hits, stale included).
    pub hits: u64,
    /// Of those, the ones it forwarded (misses, passes): the next layer's `reached`, or the
    /// origin's requests for the last.
    pub misses: u64,
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
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
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
                | ErrorKind::QuicIdleTimeout
                | ErrorKind::StatelessReset
                | ErrorKind::QuicVersion
                | ErrorKind::Other => true,
            };
            assert!(listed);
        }
    }
}

//! What an attack does: the engine's validated input.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Uri};

/// A `--class NAME=REGEX`: requests whose path and query match it.
#[derive(Debug, Clone)]
pub struct UrlClass {
    /// Its name in the report.
    pub name: String,
    /// What a request's path and query must match (anywhere, unless anchored).
    pub pattern: regex::Regex,
}

/// The load model.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// `connections` connections, each sending its next request when the previous ends.
    Closed {
        /// Number of connections.
        connections: u32,
    },
    /// Requests fall due at the plan's rate regardless of responses.
    Open {
        /// Requests per second across all connections: a plain rate or stages.
        rate: crate::rate::RatePlan,
        /// How the due times are spaced.
        arrival: Arrival,
        /// The most connections the attack may open.
        max_connections: u32,
    },
}

/// Spacing of open-loop requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Request k is due at `t0 + k / rate`.
    Constant,
    /// Exponential gaps with mean `1 / rate`, from a generator seeded with `seed`.
    Poisson {
        /// Seed of the gap generator: the same seed gives the same schedule.
        seed: u64,
    },
}

/// When the attack ends: whichever bound comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// Measured duration after warm-up.
    pub duration: Option<Duration>,
    /// Total requests, warm-up included.
    pub requests: Option<u64>,
}

/// The request sent on every connection.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Absolute `http://` URL as the user gave it.
    pub url: Uri,
    /// Method.
    pub method: Method,
    /// Headers, `Host` included (from the URL unless the user set one).
    pub headers: HeaderMap,
    /// Request body (empty for none).
    pub body: Bytes,
}

impl RequestTemplate {
    /// `GET url` with the Host header taken from the URL and no body.
    pub fn get(url: Uri) -> Self {
        let mut headers = HeaderMap::new();
        if let Some(host) = url
            .authority()
            .and_then(|a| http::HeaderValue::from_str(a.as_str()).ok())
        {
            headers.insert(http::header::HOST, host);
        }
        RequestTemplate {
            url,
            method: Method::GET,
            headers,
            body: Bytes::new(),
        }
    }
}

/// A complete, validated attack.
#[derive(Debug, Clone)]
pub struct AttackPlan {
    /// The request.
    pub request: RequestTemplate,
    /// Where to connect (resolved from the URL's host).
    pub connect_to: SocketAddr,
    /// The load model.
    pub load: Load,
    /// The end.
    pub stop: Stop,
    /// Recorded in intervals but excluded from totals; whole seconds, since the totals are
    /// summed from per-second intervals (the cli refuses others).
    pub warmup: Duration,
    /// A request without a complete response by then fails and is recorded at this value.
    pub timeout: Duration,
    /// A connection attempt fails after this long.
    pub connect_timeout: Duration,
    /// Worker threads, each with its own single-threaded runtime.
    pub threads: u32,
    /// Free-form label stored in the run file.
    pub label: Option<String>,
    /// Also write an HdrHistogram interval log here.
    pub hlog: Option<PathBuf>,
    /// Target files; `request` then supplies the defaults (method, headers, body, base URL).
    pub targets: Option<crate::TargetPlan>,
    /// A synthetic cache workload to draw requests from, instead of target files.
    pub catalogue: Option<vload_cache::Catalogue>,
    /// The catalogue's objects below this id (its most popular, the ones `--purge-every`
    /// purges) are watched: their hits and misses are counted apart each second, so that a
    /// purge's refetches are counted on the objects purged (0: none).
    pub watched_objects: u64,
    /// URL classes a breakdown groups requests by (`--class NAME=REGEX`), first match wins.
    pub classes: Vec<UrlClass>,
    /// The cache capacity the run file's model is for (`--cache-size`).
    pub cache_capacity: Option<vload_cache::Capacity>,
    /// Close and reopen every connection after this many requests (1 = no keep-alive).
    pub requests_per_connection: Option<u32>,
    /// True when `connect_to` was set by hand (`--connect-to`, `--resolve`), not from the URL.
    pub connect_to_set: bool,
    /// The protocol and what it needs: HTTP/1.1 and its client, or HTTP/2 and its streams.
    pub protocol: Protocol,
    /// TLS for `https://` targets; `None` for plain HTTP.
    pub tls: Option<crate::TlsOptions>,
    /// This run is one shard of the attack the rest of the plan describes (`--shard i/N`).
    pub shard: Option<Shard>,
    /// Begin at this wall-clock time (`--start-at`), not at once.
    pub start_at: Option<std::time::SystemTime>,
    /// The statuses that count as success (`--expect-status`; 2xx and 3xx by default).
    pub expect_status: Vec<vload_schema::StatusRange>,
    /// The `Server-Timing` metric whose `dur` is the origin's own time (`--server-timing`;
    /// [`crate::SERVER_TIMING_METRIC`] by default).
    pub server_timing: String,
    /// Which driver runs the workers' connections (for the engine's own tests; not a
    /// user's setting and not in the run file).
    #[doc(hidden)]
    pub driver: Driver,
    /// An idle connection unused this long is closed ([`IDLE_CLOSE`], 5 s), so that
    /// connections opened for a burst do not stay for the rest of the run. Not a user's
    /// setting: the engine's tests shorten it to see a burst's connections go in seconds.
    #[doc(hidden)]
    pub idle_close: Duration,
}

/// How long an idle connection stays open by default ([`AttackPlan::idle_close`]).
pub(crate) const IDLE_CLOSE: Duration = Duration::from_secs(5);

/// Which driver a worker runs its connections on. Not a user's choice: the engine's tests
/// run plain HTTP/1.1 attacks on both, so that each stays tested.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Driver {
    /// The worker's own epoll loop where it serves the attack (plain HTTP/1.1 through the
    /// lean client on Linux), tokio otherwise.
    #[default]
    Auto,
    /// tokio, whatever the attack.
    Tokio,
}

/// What a connection speaks. One value, so no combination of flags can ask for HTTP/1.1
/// with streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request in flight per connection.
    Http1 {
        /// Which client speaks it.
        client: Client,
    },
    /// HTTP/2 (h2c by prior knowledge, or ALPN `h2` over TLS).
    Http2 {
        /// Streams in flight per connection, at least 1.
        streams: u32,
        /// Which client speaks it.
        client: Client,
    },
    /// HTTP/3 over QUIC v1 (ALPN `h3`, always TLS 1.3), through quinn and h3.
    Http3 {
        /// Streams in flight per connection, at least 1.
        streams: u32,
        /// Resume sessions with early data (0-RTT) when a ticket allows it; only safe
        /// methods go out early.
        early_data: bool,
    },
}

impl Default for Protocol {
    /// HTTP/1.1 through vload's lean client.
    fn default() -> Self {
        Protocol::Http1 {
            client: Client::Lean,
        }
    }
}

impl Protocol {
    /// Requests in flight on one connection: its streams, or 1.
    pub fn streams(self) -> u32 {
        match self {
            Protocol::Http1 { .. } => 1,
            Protocol::Http2 { streams, .. } | Protocol::Http3 { streams, .. } => streams.max(1),
        }
    }

    /// HTTP/2 with `streams` per connection through vload's lean client.
    pub fn http2(streams: u32) -> Self {
        Protocol::Http2 {
            streams,
            client: Client::Lean,
        }
    }

    /// True when its client writes each request from bytes prepared before it goes out
    /// (vload's lean HTTP/1.1 client), rather than from fields.
    pub(crate) fn sends_prepared_bytes(self) -> bool {
        self == Protocol::Http1 {
            client: Client::Lean,
        }
    }

    /// True when its client counts the bytes it reads (vload's own; hyper's do not say).
    pub(crate) fn counts_wire(self) -> bool {
        match self {
            Protocol::Http1 { client } | Protocol::Http2 { client, .. } => client == Client::Lean,
            Protocol::Http3 { .. } => true,
        }
    }

    /// True when a connection carries several requests at once, each failing on its own
    /// (HTTP/2's and HTTP/3's streams); the run file then records the streams.
    pub fn is_multiplexed(self) -> bool {
        !matches!(self, Protocol::Http1 { .. })
    }

    /// True when the request's host travels as the `:authority` pseudo-header (HTTP/2 and
    /// HTTP/3), not as a `Host` header (HTTP/1.1), and its target in absolute form.
    pub(crate) fn names_authority(self) -> bool {
        !matches!(self, Protocol::Http1 { .. })
    }

    /// True when it offers early data (HTTP/3's `--0rtt`).
    pub(crate) fn early_data(self) -> bool {
        matches!(
            self,
            Protocol::Http3 {
                early_data: true,
                ..
            }
        )
    }

    /// True when it runs over QUIC (HTTP/3): its own UDP sockets, TLS 1.3 always.
    pub fn is_quic(self) -> bool {
        matches!(self, Protocol::Http3 { .. })
    }

    /// The protocol TLS's ALPN offers for it.
    pub(crate) fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::Http1 { .. } => b"http/1.1",
            Protocol::Http2 { .. } => b"h2",
            Protocol::Http3 { .. } => b"h3",
        }
    }

    /// The version as the run file names it: `1.1`, `2` or `3`.
    pub fn version(self) -> &'static str {
        match self {
            Protocol::Http1 { .. } => "1.1",
            Protocol::Http2 { .. } => "2",
            Protocol::Http3 { .. } => "3",
        }
    }
}

/// Which client implementation speaks a protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    /// vload's own (the default): HTTP/1.1 requests prepared once and responses parsed in
    /// place; HTTP/2 frames and HPACK on one task per connection, no per-request channels.
    #[default]
    Lean,
    /// hyper's client connection, for comparison.
    Hyper,
}

/// One part of an attack split over several processes or machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based index, below `count`.
    pub index: u32,
    /// Shards in the attack.
    pub count: u32,
}

impl Shard {
    /// The whole attack as a single shard.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };
}

impl AttackPlan {
    /// A plan for `request` sent to `connect_to` under `load` until `stop`, with every other
    /// setting at its default: no warm-up, timeouts of 30 s (request) and 10 s (connect), one
    /// thread, HTTP/1.1 through the lean client, no targets, TLS, shard or label.
    pub fn new(request: RequestTemplate, connect_to: SocketAddr, load: Load, stop: Stop) -> Self {
        AttackPlan {
            request,
            connect_to,
            load,
            stop,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            threads: 1,
            label: None,
            hlog: None,
            targets: None,
            catalogue: None,
            watched_objects: 0,
            classes: Vec::new(),
            cache_capacity: None,
            requests_per_connection: None,
            connect_to_set: false,
            protocol: Protocol::default(),
            tls: None,
            shard: None,
            start_at: None,
            expect_status: vload_schema::DEFAULT_EXPECTED.to_vec(),
            server_timing: crate::timing::DEFAULT_METRIC.to_owned(),
            driver: Driver::Auto,
            idle_close: IDLE_CLOSE,
        }
    }

    /// True when a response with `status` is a success.
    pub fn expects(&self, status: u16) -> bool {
        self.expect_status.iter().any(|r| r.contains(status))
    }

    /// True for the open-loop model.
    pub fn is_open_loop(&self) -> bool {
        matches!(self.load, Load::Open { .. })
    }

    /// True for an open loop whose rate plan has stages, each recorded on its own.
    pub fn is_staged(&self) -> bool {
        matches!(&self.load, Load::Open { rate, .. } if rate.is_staged())
    }

    /// Connections (closed loop) or the connection cap (open loop).
    pub fn connections(&self) -> u32 {
        match self.load {
            Load::Closed { connections } => connections,
            Load::Open {
                max_connections, ..
            } => max_connections,
        }
    }

    /// The shard this run is, or the whole attack.
    pub fn own_shard(&self) -> Shard {
        self.shard.unwrap_or(Shard::WHOLE)
    }

    /// This shard's connections (closed loop) or connection cap (open loop, at least one).
    pub fn own_connections(&self) -> u32 {
        let s = self.own_shard();
        let mine = share(u64::from(self.connections()), s.count, s.index) as u32;
        if self.is_open_loop() {
            mine.max(1)
        } else {
            mine
        }
    }

    /// This shard's share of `--requests`.
    pub fn own_requests(&self) -> Option<u64> {
        let s = self.own_shard();
        self.stop.requests.map(|n| share(n, s.count, s.index))
    }

    /// The default thread count: every core for a remote target; for a loopback target,
    /// half of them, since the server needs the rest (wrk -t1 beats -t2 on two cores).
    pub fn default_threads(connect_to: SocketAddr, cores: u32) -> u32 {
        let threads = if connect_to.ip().is_loopback() {
            cores / 2
        } else {
            cores
        };
        threads.max(1)
    }
}

/// Splits `total` into `parts` near-equal shares, the first ones one larger.
pub(crate) fn share(total: u64, parts: u32, index: u32) -> u64 {
    let (parts, index) = (u64::from(parts), u64::from(index));
    total / parts + u64::from(index < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for (total, parts) in [(10, 3), (50, 1), (7, 7), (2, 4), (1_000_001, 2)] {
            let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
            assert_eq!(sum, total, "{total} / {parts}");
        }
    }

    #[test]
    fn loopback_targets_leave_cores_to_the_server() {
        let local: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let remote: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert_eq!(AttackPlan::default_threads(local, 2), 1);
        assert_eq!(AttackPlan::default_threads(local, 1), 1);
        assert_eq!(AttackPlan::default_threads(remote, 8), 8);
    }
}

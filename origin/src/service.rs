//! Request handling: routes, query parameters, fault injection.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT_RANGES, CACHE_CONTROL, CONNECTION, CONTENT_RANGE, CONTENT_TYPE, HeaderValue,
};
use http::{Method, Request, Response, StatusCode, Version};

use crate::range::Ranged;
use http_body_util::BodyExt as _;

use crate::body::{ResetOnPurpose, SynthBody};
use crate::config::OriginConfig;
use crate::stats::Stats;

/// State shared by all threads of one origin.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: OriginConfig,
    pub(crate) stats: Stats,
    pub(crate) started: tokio::time::Instant,
    requests: AtomicU64,
    /// `--concurrency`: the slots requests are served in, across the server's threads.
    slots: Option<crate::queue::Queue>,
    /// When the first request came: a ramping delay starts there.
    first_request: std::sync::OnceLock<std::time::Instant>,
    /// The plan under way (`POST /plan`).
    pub(crate) plan: Arc<crate::plan::Plans>,
}

impl Shared {
    pub(crate) fn new(config: OriginConfig) -> Self {
        Shared {
            stats: Stats::default(),
            started: tokio::time::Instant::now(),
            requests: AtomicU64::new(0),
            first_request: std::sync::OnceLock::new(),
            plan: Arc::default(),
            slots: config
                .concurrency
                .map(|n| crate::queue::Queue::new(n, config.service)),
            config,
        }
    }

    /// Counts since start, and the plan's phases.
    pub(crate) fn snapshot(&self) -> crate::StatsSnapshot {
        self.stats.snapshot(self.plan.snapshot())
    }

    /// The server-wide delay now: fixed, or along its ramp from the first request on.
    fn delay(&self) -> Option<Duration> {
        let from = self.config.delay;
        let Some(ramp) = self.config.delay_ramp else {
            return from;
        };
        let now = std::time::Instant::now();
        let first = *self.first_request.get_or_init(|| now);
        let share = if ramp.over.is_zero() {
            1.0
        } else {
            (now.duration_since(first).as_secs_f64() / ramp.over.as_secs_f64()).min(1.0)
        };
        let from = from.unwrap_or(Duration::ZERO).as_secs_f64();
        Some(Duration::from_secs_f64(
            from + (ramp.to.as_secs_f64() - from) * share,
        ))
    }
}

/// State of one connection.
#[derive(Debug)]
pub(crate) struct ConnState {
    pub(crate) fd: RawFd,
    requests: AtomicU64,
}

impl ConnState {
    pub(crate) fn new(fd: RawFd) -> Self {
        ConnState {
            fd,
            requests: AtomicU64::new(0),
        }
    }
}

/// Counts a connection as closed however its task ends, cancellation included.
pub(crate) struct OpenConnection(pub(crate) Arc<Shared>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.stats.connection_closed();
    }
}

/// How a response's body size is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Fixed(u64),
    /// A stable size in `min..=max` from a hash of the path.
    Range(u64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reset {
    BeforeResponse,
    MidBody,
}

/// Response-shaping query parameters.
#[derive(Debug, Default, PartialEq)]
struct Params<'a> {
    size: Option<Size>,
    delay: Option<Duration>,
    status: Option<StatusCode>,
    cache: Option<&'a str>,
    chunked: bool,
    close: bool,
    reset: Option<Reset>,
    slow_bytes_per_s: Option<u64>,
    /// An extra response header, `Name:Value` (cache-classification fixtures).
    header: Option<(&'a str, &'a str)>,
}

fn parse_params(query: &str) -> Result<Params<'_>, String> {
    let mut p = Params::default();
    for pair in query.split('&').filter(|s| !s.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = |what: &str| format!("bad value '{value}' for {key}: expected {what}");
        match key {
            "size" => {
                let size = match value.split_once('-') {
                    Some((lo, hi)) => match (lo.parse(), hi.parse()) {
                        (Ok(lo), Ok(hi)) if lo <= hi => Size::Range(lo, hi),
                        _ => return Err(bad("bytes N or a range MIN-MAX")),
                    },
                    None => Size::Fixed(
                        value
                            .parse()
                            .map_err(|_| bad("bytes N or a range MIN-MAX"))?,
                    ),
                };
                p.size = Some(size);
            }
            "delay" => {
                p.delay = Some(
                    humantime::parse_duration(value).map_err(|_| bad("a duration like 200ms"))?,
                )
            }
            "status" => {
                let code = value
                    .parse::<u16>()
                    .ok()
                    .and_then(|c| StatusCode::from_u16(c).ok());
                p.status = Some(code.ok_or_else(|| bad("a status code 100-999"))?);
            }
            "cache" => p.cache = Some(value),
            "chunked" => p.chunked = flag(value).ok_or_else(|| bad("1 or 0"))?,
            // HTTP/3 closes the connection with an error (see `h3`); over TCP, a reset.
            "close" if value == "error" => p.reset = Some(Reset::BeforeResponse),
            "close" => p.close = flag(value).ok_or_else(|| bad("1, 0 or error"))?,
            "reset" => {
                p.reset = match value {
                    "1" | "before" => Some(Reset::BeforeResponse),
                    "mid" => Some(Reset::MidBody),
                    "0" => None,
                    _ => return Err(bad("1 (before the response) or mid (mid-body)")),
                }
            }
            "slow" => {
                p.slow_bytes_per_s = Some(value.parse().map_err(|_| bad("bytes per second"))?)
            }
            "header" => p.header = Some(value.split_once(':').ok_or_else(|| bad("Name:Value"))?),
            _ => {} // Other parameters only make URLs distinct (cache busting).
        }
    }
    Ok(p)
}

fn flag(value: &str) -> Option<bool> {
    match value {
        "1" | "" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}

/// FNV-1a: a stable hash, the same on every platform and run.
fn stable_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn body_len(size: Size, path: &str) -> u64 {
    match size {
        Size::Fixed(n) => n,
        Size::Range(lo, hi) => lo + stable_hash(path) % (hi - lo + 1),
    }
}

/// Answers one request.
///
/// # Errors
/// Only to reset the connection on purpose.
pub(crate) async fn handle<B: http_body::Body + Unpin>(
    mut req: Request<B>,
    shared: Arc<Shared>,
    conn: Arc<ConnState>,
) -> Result<Response<SynthBody>, ResetOnPurpose> {
    let began = std::time::Instant::now();
    // Read the request body so that the connection can be reused.
    while let Some(frame) = req.body_mut().frame().await {
        if frame.is_err() {
            break;
        }
    }
    let path = req.uri().path();
    if path == "/stats" && req.method() == Method::GET {
        return Ok(stats_response(&shared));
    }
    if path == "/plan" && req.method() == Method::POST {
        return Ok(plan_response(&shared, req.uri().query().unwrap_or("")));
    }
    let target = req.uri().path_and_query().map_or(path, |pq| pq.as_str());
    shared.stats.count_request(target);
    shared.plan.count();
    let host = req
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok());
    shared.stats.count_host(
        host.or_else(|| req.uri().authority().map(|a| a.as_str()))
            .unwrap_or("(none)"),
    );
    let params = match parse_params(req.uri().query().unwrap_or("")) {
        Ok(params) => params,
        Err(message) => return Ok(text(StatusCode::BAD_REQUEST, message)),
    };
    let n_server = shared.requests.fetch_add(1, Relaxed) + 1;
    let n_conn = conn.requests.fetch_add(1, Relaxed) + 1;
    let config = &shared.config;
    if params.reset == Some(Reset::BeforeResponse)
        || config
            .reset_every
            .is_some_and(|n| n_server.is_multiple_of(n))
    {
        crate::reset::reset_on_close(conn.fd);
        return Err(ResetOnPurpose);
    }
    let added = match follow_plan(&shared).await {
        Planned::Answer(extra) => extra,
        Planned::Status(code) => return Ok(text(code, "the origin's plan: down".to_owned())),
        Planned::Reset => {
            crate::reset::reset_on_close(conn.fd);
            return Err(ResetOnPurpose);
        }
    };
    wait_out_stall(&shared).await;
    let delay = params.delay.or_else(|| shared.delay());
    let delay = match (delay, added) {
        (d, None) => d,
        (d, Some(extra)) => Some(d.unwrap_or_default() + extra),
    };
    match (&shared.slots, delay) {
        // In line for a slot (with --concurrency), served on the queue's virtual clock.
        (Some(slots), delay) => {
            let done = slots.admit(std::time::Instant::now(), delay.unwrap_or_default());
            precise_sleep_until(done).await;
        }
        (None, Some(delay)) => precise_sleep(delay).await,
        (None, None) => {}
    }
    let close = params.close || config.close_after.is_some_and(|n| n_conn >= n);
    let close = close && req.version() <= Version::HTTP_11;
    let range = range_of(&req);
    Ok(answer(
        &params,
        (path, config, &conn),
        (close, range),
        began,
    ))
}

/// The request's `Range` header, if it has one in ASCII.
fn range_of<B>(req: &Request<B>) -> Option<&str> {
    req.headers()
        .get(http::header::RANGE)
        .and_then(|v| v.to_str().ok())
}

/// The response a request's parameters shape, `close` saying the connection ends after it.
fn answer(
    params: &Params<'_>,
    (path, config, conn): (&str, &OriginConfig, &ConnState),
    (close, range): (bool, Option<&str>),
    began: std::time::Instant,
) -> Response<SynthBody> {
    // A range of a sized 200 body: 206 with the part, 416 past its end.
    let full = params.size.map(|size| body_len(size, path));
    let ranged = match (range, full, params.status) {
        (Some(range), Some(size), None) => crate::range::ranged(range, size),
        _ => Ranged::Whole,
    };
    let (status, len, content_range) = match (ranged, full) {
        (Ranged::Part { first, last }, Some(size)) => (
            StatusCode::PARTIAL_CONTENT,
            Some(last - first + 1),
            Some(format!("bytes {first}-{last}/{size}")),
        ),
        (Ranged::Unsatisfiable, Some(size)) => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            Some(0),
            Some(format!("bytes */{size}")),
        ),
        _ => (params.status.unwrap_or(StatusCode::OK), full, None),
    };
    let mut response = Response::new(body(params, len, config, conn));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if full.is_some() {
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    if let Some(value) = content_range.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(CONTENT_RANGE, value);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    if let Some(cache) = params.cache
        && let Ok(value) = HeaderValue::from_str(cache)
    {
        headers.insert(CACHE_CONTROL, value);
    }
    if let Some((name, value)) = params.header
        && let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        )
    {
        headers.insert(name, value);
    }
    if close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    headers.insert(SERVER_TIMING.clone(), server_timing(began.elapsed()));
    response
}

static SERVER_TIMING: http::HeaderName = http::HeaderName::from_static("server-timing");

/// `Server-Timing: app;dur=MS` for a response that took `took` from its request's arrival
/// until its head was ready (its delay, its wait for a slot): the origin's own time, which a
/// cache in front passes on for a miss and vload subtracts from the wait for the first byte.
fn server_timing(took: Duration) -> HeaderValue {
    let value = format!("app;dur={:.3}", took.as_secs_f64() * 1e3);
    HeaderValue::from_str(&value).expect("digits are a valid header value")
}

/// The response body a request's parameters ask for.
fn body(
    params: &Params<'_>,
    len: Option<u64>,
    config: &OriginConfig,
    conn: &ConnState,
) -> SynthBody {
    let mut body = match len {
        Some(len) => SynthBody::sized(len),
        None => SynthBody::hello(),
    };
    if params.chunked {
        body = body.chunked();
    }
    if let Some(bps) = params.slow_bytes_per_s.or(config.slow_body_bytes_per_s) {
        body = body.paced(bps);
    }
    if params.reset == Some(Reset::MidBody) {
        body = body.reset_midway(conn.fd);
    }
    body
}

/// Sleeps to within microseconds: tokio's own timer rounds up to whole milliseconds, which
/// would turn `delay=10ms` into 11-12 ms and spoil every latency test built on it.
async fn precise_sleep(delay: Duration) {
    let deadline = std::time::Instant::now() + delay;
    match vload_timer::PreciseTimer::new() {
        Ok(timer) => timer.sleep_until(deadline).await,
        Err(_) => tokio::time::sleep(delay).await,
    }
}

/// Sleeps until `deadline`, to within microseconds (see [`precise_sleep`]).
async fn precise_sleep_until(deadline: std::time::Instant) {
    precise_sleep(deadline.saturating_duration_since(std::time::Instant::now())).await;
}

/// Holds the response while the server-wide stall is on (the last `length` of every `period`).
async fn wait_out_stall(shared: &Shared) {
    let Some(stall) = shared.config.stall else {
        return;
    };
    let period = stall.every.as_nanos();
    let elapsed = shared.started.elapsed().as_nanos();
    let into_period = elapsed % period;
    if into_period >= period - stall.length.as_nanos() {
        let left = (period - into_period) as u64;
        tokio::time::sleep(Duration::from_nanos(left)).await;
    }
}

/// What the plan makes of a request.
enum Planned {
    /// Answer it, this much later than configured.
    Answer(Option<Duration>),
    /// Answer with this status.
    Status(StatusCode),
    /// Reset its connection.
    Reset,
}

/// The plan's word on a request: held while the origin hangs, then as the state says.
async fn follow_plan(shared: &Shared) -> Planned {
    use crate::plan::OriginState;
    let mut changes = None;
    loop {
        match shared.plan.now() {
            OriginState::Up => return Planned::Answer(None),
            OriginState::Slow(extra) => return Planned::Answer(Some(extra)),
            OriginState::Status(code) => {
                return Planned::Status(
                    StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                );
            }
            OriginState::Reset | OriginState::Refuse => return Planned::Reset,
            OriginState::Hang => {
                let rx = changes.get_or_insert_with(|| shared.plan.subscribe());
                // Held until the state changes (or the server stops: then the connection
                // goes with it).
                if shared.plan.now() == OriginState::Hang && rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// `POST /plan?steps=...`: starts the plan, or says why not.
fn plan_response(shared: &Arc<Shared>, query: &str) -> Response<SynthBody> {
    let steps = query
        .split('&')
        .find_map(|p| p.strip_prefix("steps="))
        .unwrap_or("");
    match crate::plan::parse_steps(steps) {
        Ok(steps) => {
            let n = steps.len();
            crate::plan::start(&shared.plan, steps);
            text(StatusCode::OK, format!("plan of {n} steps started\n"))
        }
        Err(why) => text(StatusCode::BAD_REQUEST, format!("plan: {why}\n")),
    }
}

fn stats_response(shared: &Shared) -> Response<SynthBody> {
    let json = serde_json::to_vec(&shared.snapshot()).expect("stats always serialize");
    let mut response = Response::new(SynthBody::from_bytes(Bytes::from(json)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn text(status: StatusCode, message: String) -> Response<SynthBody> {
    let mut response = Response::new(SynthBody::from_bytes(Bytes::from(message)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_parameter() {
        let p = parse_params(
            "size=100&delay=200ms&status=404&cache=max-age=60&chunked=1&close=1&reset=mid&slow=10",
        )
        .unwrap();
        assert_eq!(p.size, Some(Size::Fixed(100)));
        assert_eq!(p.delay, Some(Duration::from_millis(200)));
        assert_eq!(p.status, Some(StatusCode::NOT_FOUND));
        assert_eq!(p.cache, Some("max-age=60"));
        assert!(p.chunked && p.close);
        assert_eq!(p.reset, Some(Reset::MidBody));
        assert_eq!(p.slow_bytes_per_s, Some(10));
        let p = parse_params("close=error").unwrap();
        assert_eq!((p.close, p.reset), (false, Some(Reset::BeforeResponse)));
    }

    #[test]
    fn rejects_bad_values_naming_the_parameter() {
        for (query, needle) in [
            ("size=abc", "size"),
            ("size=50-10", "size"),
            ("delay=soon", "delay"),
            ("status=99999", "status"),
            ("reset=maybe", "reset"),
        ] {
            let err = parse_params(query).unwrap_err();
            assert!(err.contains(needle), "{query}: {err}");
        }
    }

    #[test]
    fn size_range_is_stable_per_path_and_within_bounds() {
        let size = Size::Range(10_000, 50_000);
        let a = body_len(size, "/obj/1");
        assert_eq!(a, body_len(size, "/obj/1"));
        let sizes: std::collections::HashSet<u64> = (0..100)
            .map(|i| body_len(size, &format!("/obj/{i}")))
            .collect();
        assert!(sizes.iter().all(|s| (10_000..=50_000).contains(s)));
        assert!(sizes.len() > 90, "sizes spread over the range");
    }
}

//! `--stampede N`: N requests for one object at one instant, beside the load, on connections
//! of their own and counted apart from it (#59). With `--stampede-on expiry` the object is
//! asked once first, and each event fires a second after its max-age runs out, counted from the
//! end of the fetch that stored it; with `purge`, a PURGE of it goes out just before each
//! event; with `new`, each event asks an object never asked before (`v=K` added to the
//! target's query), which is what nginx's `proxy_cache_lock` coalesces. Per event: how nearly
//! at once the requests went, which answers the cache forwarded to the origin (the leaders)
//! and which it served itself (the waiters), failures, and with `--stampede-origin` the
//! fetches `vload origin` counted.
//!
//! Bounded like every side channel: its connections are all made within 5 s or it does not
//! run, an event's reads end by its bound (its period less a second, at most 10 s) or at
//! once when the run ends (what has no answer then is unfinished), a purge or a read of the
//! origin's count by 2 s.

mod args;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vload_engine::burst::{Burst, BurstCache, BurstFate, Fired};
use vload_schema::{
    EncodedHistogram, HistogramSettings, LatencyRecord, Moments, StampedeEvent, StampedeRecord,
    new_histogram,
};

pub(crate) use args::{StampedeArgs, StampedeOn, StampedeSpec};

use crate::side::Deadline;

/// A purge, or a read of the origin's count, ends by then.
const SIDE_BOUND: Duration = Duration::from_secs(2);

/// After the object's max-age, this much more before an event: the cache's clock and ours
/// differ by the fetch's own time, and a cache may count whole seconds (nginx stores an
/// object's expiry as a second: fired 20 ms after, an event found it fresh), so an event a
/// hair early finds the object fresh.
const PAST_EXPIRY: Duration = Duration::from_millis(1_020);

/// All of an event's connections are made by then, or the stampede does not run.
const OPEN_BOUND: Duration = Duration::from_secs(5);

/// The connections are looked at and made again this long before an event.
const REFRESH_BEFORE: Duration = Duration::from_millis(300);

/// An event's reads end by this, or its period less a second if that is shorter.
const EVENT_BOUND: Duration = Duration::from_secs(10);

/// What the events' thread shares.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    record: Mutex<Option<Recorded>>,
    /// Why the stampede could not start (its connections), said once at the end.
    failed: Mutex<Option<String>>,
    /// Purges not answered 2xx (refused, or no answer): those events found the object
    /// cached, said at the end.
    purges_refused: std::sync::atomic::AtomicU64,
}

/// What the thread has recorded so far.
struct Recorded {
    events: Vec<StampedeEvent>,
    /// The origin's count of each event's object just before it, and just before the next
    /// event (or at the end).
    counts: Vec<(Option<u64>, Option<u64>)>,
    leaders: (hdrhistogram::Histogram<u64>, Moments),
    waiters: (hdrhistogram::Histogram<u64>, Moments),
}

impl Recorded {
    fn new() -> Recorded {
        let settings = HistogramSettings::default();
        Recorded {
            events: Vec::new(),
            counts: Vec::new(),
            leaders: (new_histogram(&settings), Moments::new()),
            waiters: (new_histogram(&settings), Moments::new()),
        }
    }
}

/// The events' thread.
pub(crate) struct Stampeder {
    spec: StampedeSpec,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Stampeder {
    /// Starts the events against `addr` (the attack's server), with `host` as the Host
    /// header, until `window` after now (the warm-up and the measured window) or until told.
    pub(crate) fn start(
        spec: Option<&StampedeSpec>,
        addr: SocketAddr,
        host: &str,
        window: Option<Duration>,
    ) -> anyhow::Result<Option<Stampeder>> {
        let Some(spec) = spec.cloned() else {
            return Ok(None);
        };
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("vload-stampede".into())
            .spawn({
                let (spec, shared, host) = (spec.clone(), shared.clone(), host.to_owned());
                let until = window.map(|w| Instant::now() + w);
                move || run(&spec, &shared, (addr, &host), until)
            })?;
        Ok(Some(Stampeder {
            spec,
            shared,
            thread: Some(thread),
        }))
    }

    /// The events so far, for `/metrics` and the live page: events, then requests sent,
    /// leaders, waiters, answers with no cache word, failed and unfinished.
    pub(crate) fn live(&self) -> [u64; 7] {
        let guard = lock(&self.shared.record);
        let mut out = [0; 7];
        for e in guard.iter().flat_map(|r| &r.events) {
            out[0] += 1;
            for (total, n) in out[1..].iter_mut().zip([
                e.sent,
                e.leaders,
                e.waiters,
                e.unclassified,
                e.errors,
                e.unfinished,
            ]) {
                *total += n;
            }
        }
        out
    }

    /// Stops the events (the one under way ends by its bound) and returns the record.
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the stampede did not run"
    )]
    pub(crate) fn finish(mut self) -> Option<StampedeRecord> {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(why) = lock(&self.shared.failed).take() {
            crate::paint::say!("vload: warning: --stampede: {why}");
        }
        let refused = self.shared.purges_refused.load(Ordering::Relaxed);
        if refused > 0 {
            crate::paint::say!(
                "vload: warning: --stampede-on purge: {refused} purges were not answered 2xx: those events found the object still cached (vcl/catalogue.vcl accepts PURGE from loopback)"
            );
        }
        let recorded = lock(&self.shared.record).take()?;
        Some(record(&self.spec, recorded))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request for `target` with `method`, on a connection that stays open after it.
fn request(method: &str, target: &str, host: &str) -> Vec<u8> {
    let version = if method == "GET" { "1.1" } else { "1.0" };
    format!("{method} {target} HTTP/{version}\r\nHost: {host}\r\nUser-Agent: vload\r\n\r\n")
        .into_bytes()
}

/// How long an event's reads may last: a second before the next event can come, which at
/// expiry is the max-age and the margin past it after the last fetch; half a second at least,
/// [`EVENT_BOUND`] at most.
fn read_bound(every: Duration, expiry: bool) -> Duration {
    let spacing = if expiry { every + PAST_EXPIRY } else { every };
    EVENT_BOUND.min(
        spacing
            .saturating_sub(Duration::from_secs(1))
            .max(Duration::from_millis(500)),
    )
}

/// The thread: connections, then an event at each expiry (or period, after a purge).
fn run(
    spec: &StampedeSpec,
    shared: &Shared,
    (addr, host): (SocketAddr, &str),
    until: Option<Instant>,
) {
    let start = Instant::now();
    let n = spec.requests as usize;
    let mut burst = match Burst::open(addr, n, SIDE_BOUND, Instant::now() + OPEN_BOUND) {
        Ok(burst) => burst,
        Err(e) => {
            *lock(&shared.failed) = Some(format!("cannot open {n} connections to {addr}: {e}"));
            return;
        }
    };
    *lock(&shared.record) = Some(Recorded::new());
    // The expiry mode stores the object first: its max-age runs from that fetch's end.
    let expiry = spec.on == StampedeOn::Expiry;
    let bound = read_bound(spec.every, expiry);
    let mut next = if expiry {
        let primed = burst_of_one(
            addr,
            &request("GET", &spec.target, host),
            bound,
            &shared.stop,
        );
        primed + spec.every + PAST_EXPIRY
    } else {
        start + spec.every
    };
    let count = |target: &str| spec.origin.as_ref().and_then(|o| origin_count(o, target));
    for k in 0.. {
        // The connections the server closed while idle are made again a little before.
        if !wait_until(
            next.checked_sub(REFRESH_BEFORE).unwrap_or(next),
            shared,
            until,
        ) {
            break;
        }
        burst.refresh(Instant::now() + SIDE_BOUND);
        if !wait_until(next, shared, until) {
            break;
        }
        let target = spec.target_of(k);
        let (before, after_previous) = before_event(spec, shared, (addr, host), k);
        let fired = burst.fire(&request("GET", &target, host), bound, &shared.stop);
        let stored = stored_at(&fired);
        let mut guard = lock(&shared.record);
        let Some(recorded) = guard.as_mut() else {
            break;
        };
        if let Some(last) = recorded.counts.last_mut() {
            last.1 = after_previous;
        }
        recorded.counts.push((before, None));
        let e = event(&fired, start, recorded);
        recorded.events.push(e);
        drop(guard);
        next = if expiry {
            stored + spec.every + PAST_EXPIRY
        } else {
            next + spec.every
        };
    }
    if let Some(recorded) = lock(&shared.record).as_mut() {
        let last = recorded.counts.len().checked_sub(1);
        if let Some(k) = last {
            recorded.counts[k].1 = count(&spec.target_of(k));
        }
    }
}

/// Just before event `k`: its purge, then the origin's count of the last event's object after
/// it and of this one's before it (one read when they share the object).
fn before_event(
    spec: &StampedeSpec,
    shared: &Shared,
    (addr, host): (SocketAddr, &str),
    k: usize,
) -> (Option<u64>, Option<u64>) {
    let target = spec.target_of(k);
    let purged = |request: &[u8]| {
        crate::purge::purge(addr, request, Deadline::after(SIDE_BOUND))
            .is_some_and(|code| (200..300).contains(&code))
    };
    if spec.on == StampedeOn::Purge && !purged(&request("PURGE", &target, host)) {
        shared.purges_refused.fetch_add(1, Ordering::Relaxed);
    }
    let count = |target: &str| spec.origin.as_ref().and_then(|o| origin_count(o, target));
    let before = count(&target);
    let after_previous = match k.checked_sub(1).map(|p| spec.target_of(p)) {
        Some(p) if p == target => before,
        Some(p) => count(&p),
        None => None,
    };
    (before, after_previous)
}

/// Sleeps until `at`; false when told to stop first, or when `at` lies past `until`.
fn wait_until(at: Instant, shared: &Shared, until: Option<Instant>) -> bool {
    if until.is_some_and(|u| at > u) {
        return false;
    }
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(50)));
    }
}

/// One request for the object on a connection of its own; returns when its answer ended
/// (the cache stored the object then).
fn burst_of_one(addr: SocketAddr, request: &[u8], bound: Duration, stop: &AtomicBool) -> Instant {
    let deadline = Instant::now() + SIDE_BOUND;
    let _ = Burst::open(addr, 1, SIDE_BOUND, deadline).map(|mut b| b.fire(request, bound, stop));
    Instant::now()
}

/// When the cache stored the object the event refetched: the end of its last leader's
/// answer (the fetch behind it), else of its last answer (a background refresh behind a
/// stale one).
fn stored_at(fired: &Fired) -> Instant {
    let ends = |origin: bool| {
        fired
            .fates
            .iter()
            .filter_map(|f| match f {
                BurstFate::Answered { cache, ns, .. }
                    if !origin || *cache == BurstCache::Origin =>
                {
                    Some(*ns)
                }
                _ => None,
            })
            .max()
    };
    let ns = ends(true).or_else(|| ends(false)).unwrap_or(0);
    fired.at + fired.spread + Duration::from_nanos(ns)
}

/// One event's record, its latencies added to the run's.
fn event(fired: &Fired, start: Instant, recorded: &mut Recorded) -> StampedeEvent {
    let mut e = StampedeEvent {
        at_s: fired.at.saturating_duration_since(start).as_secs_f64(),
        sent: fired.fates.len() as u64,
        spread_ns: fired.spread.as_nanos() as u64,
        leaders: 0,
        waiters: 0,
        unclassified: 0,
        server_errors: 0,
        errors: 0,
        unfinished: 0,
        origin_fetches: None,
    };
    for fate in &fired.fates {
        match *fate {
            BurstFate::Answered { status, cache, ns } => {
                e.server_errors += u64::from(status >= 500);
                let (count, (h, m)) = match cache {
                    BurstCache::Origin => (&mut e.leaders, &mut recorded.leaders),
                    BurstCache::Cache => (&mut e.waiters, &mut recorded.waiters),
                    BurstCache::Unknown => {
                        e.unclassified += 1;
                        continue;
                    }
                };
                *count += 1;
                let _ = h.record(ns.max(1));
                m.record(ns);
            }
            BurstFate::Failed => e.errors += 1,
            BurstFate::Unfinished => e.unfinished += 1,
        }
    }
    e
}

/// The run's record: each event's origin fetches from the counts around it.
fn record(spec: &StampedeSpec, recorded: Recorded) -> StampedeRecord {
    let mut events = recorded.events;
    for (e, counts) in events.iter_mut().zip(&recorded.counts) {
        if let (Some(before), Some(after)) = *counts {
            e.origin_fetches = Some(after.saturating_sub(before));
        }
    }
    let latency = |(h, m): (hdrhistogram::Histogram<u64>, Moments)| {
        (m.n > 0)
            .then(|| EncodedHistogram::encode(&h).ok())
            .flatten()
            .map(|histogram| LatencyRecord {
                histogram,
                moments: m,
            })
    };
    StampedeRecord {
        requests: spec.requests,
        every_s: spec.every.as_secs_f64(),
        on: spec.on.name().to_owned(),
        target: spec.target.clone(),
        events,
        leaders: latency(recorded.leaders),
        waiters: latency(recorded.waiters),
    }
}

/// `vload origin`'s count of `target` (its /stats page's `requests_by_path`), if it answers.
fn origin_count(stats: &crate::server::fetch::HttpUrl, target: &str) -> Option<u64> {
    let (page, _) = stats.get_page(Deadline::after(SIDE_BOUND)).ok()?;
    let json: serde_json::Value = serde_json::from_str(&page).ok()?;
    // A page that is not vload origin's counts nothing: unknown, never 0.
    let paths = json.get("requests_by_path")?.as_object()?;
    Some(
        paths
            .get(target)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event's reads end a second before the next event can come: after the max-age and
    /// its margin on expiry, after the period otherwise; half a second at least, ten at most.
    #[test]
    fn an_events_reads_are_bounded_by_the_next_event() {
        let s = Duration::from_secs;
        assert_eq!(read_bound(s(1), true), Duration::from_millis(1_020));
        assert_eq!(read_bound(s(1), false), Duration::from_millis(500));
        assert_eq!(read_bound(s(2), false), s(1));
        assert_eq!(read_bound(s(60), true), EVENT_BOUND);
    }
    use std::io::{Read as _, Write as _};

    /// The origin's count read from a page served once with `body`.
    fn count_from(body: &'static str) -> Option<u64> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0; 1024];
            let _ = s.read(&mut buf);
            let answer = format!("HTTP/1.1 200 OK\r\n\r\n{body}");
            s.write_all(answer.as_bytes()).unwrap();
        });
        let url = crate::server::fetch::HttpUrl::parse(&format!("http://127.0.0.1:{port}/stats"));
        let count = origin_count(&url.unwrap(), "/hot");
        server.join().unwrap();
        count
    }

    /// A page that is not vload origin's counts is unknown, never 0 fetches.
    #[test]
    fn only_the_origins_own_page_counts() {
        assert_eq!(count_from(r#"{"requests_by_path": {"/hot": 7}}"#), Some(7));
        assert_eq!(count_from(r#"{"requests_by_path": {}}"#), Some(0));
        assert_eq!(count_from(r#"{"hello": 1}"#), None);
        assert_eq!(count_from("<html>not stats</html>"), None);
    }

    /// `new` gives each event an object of its own; the other modes one object throughout.
    #[test]
    fn each_new_event_asks_an_object_never_asked_before() {
        let spec = |on, target: &str| StampedeSpec {
            requests: 2,
            every: Duration::from_secs(2),
            on,
            target: target.to_owned(),
            origin: None,
        };
        let new = spec(StampedeOn::New, "/hot");
        assert_eq!(
            (new.target_of(0), new.target_of(3)),
            ("/hot?v=0".into(), "/hot?v=3".into())
        );
        let query = spec(StampedeOn::New, "/hot?cache=max-age=2");
        assert_eq!(query.target_of(1), "/hot?cache=max-age=2&v=1");
        for on in [StampedeOn::Expiry, StampedeOn::Purge] {
            assert_eq!(spec(on, "/hot").target_of(5), "/hot");
        }
    }
}

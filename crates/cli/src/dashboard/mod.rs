//! `--dashboard ADDR`: the attack live in a browser, and `vload plot --serve ADDR`.
//!
//! The page ([`PAGE`], self-contained: no script or font from elsewhere) asks `/live.json`
//! every second and draws what it gets: each finished second's throughput, asked rate,
//! latency percentiles and hit ratio, the server's hit ratio and CPU as the watch reads each
//! second (the run file's seconds get theirs after the run), the phases' medians so far, the
//! ledger so far, the client's signals, and at the end the run file's
//! own figures with the health word and a link to the final plot (`/plot`). The figures are
//! the run file's intervals, as `--metrics-listen` serves them: at the end the page's totals
//! are the run file's.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde_json::{Value, json};
use vload_engine::{Observer, Progress};
use vload_schema::{Interval, RunFile};

/// The live page.
const PAGE: &str = include_str!("page.html");

/// What the page is told.
#[derive(Default)]
struct Live {
    /// One point a finished second.
    points: Vec<Value>,
    /// The server's newest second as it is read (`--server-stats`, `--watch-pid`): its hit
    /// ratio and the cores its process used, at the time since the start they were seen.
    server: Vec<Value>,
    /// The phases' medians so far, a point a second.
    phase_points: Vec<Value>,
    /// The measured window's counts so far.
    ledger: Ledger,
    /// The last second's client signals and the time since the start.
    elapsed_s: f64,
    planned_s: Option<f64>,
    warmup: bool,
    late_sends: u64,
    /// Medians so far of the wait for the first byte and of the transfer, in ns.
    phases: (Option<u64>, Option<u64>),
    /// Set once the run is over: its figures, as the run file has them.
    done: Option<Value>,
    /// The final plot, once the run is over.
    plot: Option<String>,
    /// A stampede's events so far ([`crate::stampede::Stampeder::live`]).
    stampede: Option<[u64; 7]>,
}

/// The ledger of the measured window so far.
#[derive(Default, Clone, Copy)]
struct Ledger {
    due: u64,
    sent: u64,
    ended: u64,
    unsent: u64,
    errors: u64,
    hits: u64,
    misses: u64,
    /// A path of caches, layer by layer (the nearest the client first): requests that
    /// reached it, its hits, its forwards.
    layers: [[u64; 3]; 4],
}

/// The dashboard of one attack.
pub(crate) struct Dashboard {
    live: Arc<Mutex<Live>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
}

impl Dashboard {
    /// Listens on `addr` and serves the page from now on.
    pub(crate) fn start(addr: SocketAddr) -> anyhow::Result<Dashboard> {
        let live = Arc::new(Mutex::new(Live::default()));
        let (stop, thread, addr) = listen(addr, "--dashboard", {
            let live = live.clone();
            move |head| answer(head, &live)
        })?;
        Ok(Dashboard {
            live,
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The run is over: the page shows `run`'s own figures and links to its plot (kept up
    /// for the linger the caller waits, then [`Dashboard::stop`]).
    pub(crate) fn show_final(&mut self, run: &RunFile) {
        let plot = vload_analyze::render::plot::html(&[("run".to_owned(), run.clone())]).ok();
        if let Ok(mut live) = self.live.lock() {
            live.done = Some(final_figures(run));
            live.plot = plot;
        }
    }

    /// A stampede's events so far.
    pub(crate) fn on_stampede(&mut self, live: Option<[u64; 7]>) {
        if let (Some(_), Ok(mut shown)) = (live, self.live.lock()) {
            shown.stampede = live;
        }
    }

    /// The server's newest second as the watch read it: its hit ratio and its cores, seen
    /// `t` seconds after the start (nothing kept when neither is known).
    pub(crate) fn on_server(&mut self, t: f64, (hit_ratio, cores): (Option<f64>, Option<f64>)) {
        if hit_ratio.is_none() && cores.is_none() {
            return;
        }
        if let Ok(mut live) = self.live.lock() {
            let point = json!({"t": t, "hit_ratio": hit_ratio, "cores": cores});
            live.server.push(point);
        }
    }

    /// Stops the server.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `vload plot --serve ADDR`: serves `page` at `/` until the process ends.
pub(crate) fn serve_page(addr: SocketAddr, page: String) -> anyhow::Result<SocketAddr> {
    let (_stop, thread, addr) = listen(
        addr,
        "--serve",
        move |head| match crate::http::request_line(head) {
            ("GET", "/" | "/plot") => {
                crate::http::response("200 OK", "text/html; charset=utf-8", page.as_bytes())
            }
            ("GET", "/favicon.ico") => no_icon(),
            _ => not_found(),
        },
    )?;
    // The server thread runs until the process ends (Ctrl-C).
    drop(thread);
    Ok(addr)
}

type Served = (Arc<AtomicBool>, std::thread::JoinHandle<()>, SocketAddr);

/// Binds `addr` (for the flag `flag`) and serves `answer` on a thread of its own.
fn listen(
    addr: SocketAddr,
    flag: &str,
    answer: impl Fn(&str) -> Vec<u8> + Send + 'static,
) -> anyhow::Result<Served> {
    let listener = TcpListener::bind(addr).with_context(|| {
        format!("{flag} {addr}: cannot listen there (in use, or not this machine's address)")
    })?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread = std::thread::Builder::new()
        .name("vload-dashboard".into())
        .spawn({
            let stop = stop.clone();
            move || crate::http::serve(&listener, &stop, &answer)
        })?;
    Ok((stop, thread, addr))
}

/// A browser's own request for an icon: none, and no error in its console.
fn no_icon() -> Vec<u8> {
    b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".to_vec()
}

fn not_found() -> Vec<u8> {
    crate::http::response(
        "404 Not Found",
        "text/plain",
        b"not found: the page is at /, its figures at /live.json\n",
    )
}

/// The answer to one request of the page.
fn answer(head: &str, live: &Mutex<Live>) -> Vec<u8> {
    let Ok(live) = live.lock() else {
        return not_found();
    };
    match crate::http::request_line(head) {
        ("GET", "/") => {
            crate::http::response("200 OK", "text/html; charset=utf-8", PAGE.as_bytes())
        }
        ("GET", "/live.json") => {
            let body = json!({
                "points": live.points,
                "server": live.server,
                "phase_points": live.phase_points,
                "ledger": {
                    "due": live.ledger.due,
                    "sent": live.ledger.sent,
                    "ended": live.ledger.ended,
                    "unsent": live.ledger.unsent,
                    "errors": live.ledger.errors,
                    "hits": live.ledger.hits,
                    "misses": live.ledger.misses,
                    "layers": layers(&live.ledger.layers),
                },
                "elapsed_s": live.elapsed_s,
                "planned_s": live.planned_s,
                "warmup": live.warmup,
                "late_sends": live.late_sends,
                "first_byte_p50_ns": live.phases.0,
                "transfer_p50_ns": live.phases.1,
                "done": live.done,
                "stampede": live.stampede.map(|s| json!({
                    "events": s[0], "sent": s[1], "leaders": s[2], "waiters": s[3],
                })),
            });
            crate::http::response("200 OK", "application/json", body.to_string().as_bytes())
        }
        ("GET", "/favicon.ico") => no_icon(),
        ("GET", "/plot") => match &live.plot {
            Some(plot) => {
                crate::http::response("200 OK", "text/html; charset=utf-8", plot.as_bytes())
            }
            None => crate::http::response(
                "404 Not Found",
                "text/plain",
                b"the plot is made when the run ends\n",
            ),
        },
        _ => not_found(),
    }
}

impl Observer for Dashboard {
    fn on_interval(&mut self, p: &Progress) {
        if let Ok(mut live) = self.live.lock() {
            live.elapsed_s = p.elapsed.as_secs_f64();
            live.planned_s = p.planned.map(|d| d.as_secs_f64());
            live.warmup = p.warmup;
            live.phases = (p.first_byte_p50_ns, p.transfer_p50_ns);
            if p.first_byte_p50_ns.is_some() || p.transfer_p50_ns.is_some() {
                let point = json!({
                    "t": live.elapsed_s,
                    "first_byte_ns": p.first_byte_p50_ns,
                    "transfer_ns": p.transfer_p50_ns,
                });
                live.phase_points.push(point);
            }
            if !p.warmup {
                live.late_sends += p.client.late_sends;
            }
        }
    }

    fn on_record(&mut self, interval: &Interval) {
        let Ok(mut live) = self.live.lock() else {
            return;
        };
        if !interval.warmup {
            let errors: u64 = interval.errors.values().sum();
            let l = &mut live.ledger;
            l.due += interval.intended;
            l.sent += interval.sent;
            l.ended += interval.completed;
            l.unsent += interval.unsent;
            l.errors += errors;
            l.hits += interval.hits;
            l.misses += interval.misses;
            for (total, layer) in l.layers.iter_mut().zip(&interval.layers) {
                total[0] += layer.reached;
                total[1] += layer.hits;
                total[2] += layer.misses;
            }
        }
        live.points.push(point(interval));
    }
}

/// A path of caches so far, each layer's requests reached, hits and forwards; `null` for one
/// cache or none.
fn layers(counts: &[[u64; 3]; 4]) -> Value {
    let used = counts.iter().rposition(|c| c[0] > 0).map_or(0, |i| i + 1);
    if used < 2 {
        return Value::Null;
    }
    json!(
        counts[..used]
            .iter()
            .map(|c| json!({"reached": c[0], "hits": c[1], "forwarded": c[2]}))
            .collect::<Vec<_>>()
    )
}

/// One second's point.
fn point(i: &Interval) -> Value {
    let seconds = i.duration_s.max(1e-9);
    let quantile = |q: f64| -> Option<u64> {
        let h = i.latency.histogram.decode().ok()?;
        (!h.is_empty()).then(|| i.latency.moments.clamp(h.value_at_quantile(q)))
    };
    let classified = i.hits + i.misses;
    json!({
        "t": i.start_s,
        "dur": i.duration_s,
        "warmup": i.warmup,
        "throughput": (i.status_classes.s2xx + i.status_classes.s3xx) as f64 / seconds,
        "completed": i.completed,
        "asked": i.intended as f64 / seconds,
        "errors": i.errors.values().sum::<u64>(),
        "p50_ns": quantile(0.5),
        "p90_ns": quantile(0.9),
        "p99_ns": quantile(0.99),
        "hit_ratio": (classified > 0).then(|| i.hits as f64 / classified as f64),
        "stale": (classified > 0).then(|| i.stale as f64 / classified as f64),
        "stale_aged": i.stale_ages.map_or(0, |a| a.answers),
        "stale_age_sum_s": i.stale_ages.map_or(0, |a| a.sum_s),
        "stale_age_max_s": i.stale_ages.map_or(0, |a| a.max_s),
        "server_hit_ratio": i.server.as_ref().and_then(vload_schema::CommonCounters::hit_ratio),
        "server_cores": i.server_cpu_s.map(|cpu| cpu / seconds),
    })
}

/// The run file's own figures, for the page's last look.
fn final_figures(run: &RunFile) -> Value {
    let t = &run.totals;
    let seconds = run.window.measured_s + run.window.wait_s;
    let primary = run.latency.primary();
    let quantile = |q: f64| -> Option<u64> {
        let h = primary.histogram.decode().ok()?;
        (!h.is_empty()).then(|| primary.moments.clamp(h.value_at_quantile(q)))
    };
    let phase = |r: &Option<vload_schema::LatencyRecord>| {
        r.as_ref().and_then(|r| {
            let h = r.histogram.decode().ok()?;
            (!h.is_empty()).then(|| r.moments.clamp(h.value_at_quantile(0.5)))
        })
    };
    let classified = run.cache.hit + run.cache.miss;
    json!({
        "requests": t.completed,
        "due": t.intended,
        "sent": t.sent,
        "errors": t.error_count(),
        "throughput": if seconds > 0.0 { t.successes(&run.plan) as f64 / seconds } else { 0.0 },
        "p50_ns": quantile(0.5),
        "p99_ns": quantile(0.99),
        "first_byte_p50_ns": phase(&run.latency.first_byte),
        "transfer_p50_ns": phase(&run.latency.transfer),
        "hit_ratio": (classified > 0).then(|| run.cache.hit as f64 / classified as f64),
        "health": run.client_health.verdict.word(),
        "interrupted": run.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, live: &Mutex<Live>) -> String {
        String::from_utf8(answer(&format!("GET {path} HTTP/1.1\r\n\r\n"), live)).unwrap()
    }

    #[test]
    fn the_page_its_figures_and_nothing_else_are_served() {
        let live = Mutex::new(Live::default());
        assert!(get("/", &live).contains("<title>vload live</title>"));
        let figures = get("/live.json", &live);
        let body = figures.split("\r\n\r\n").nth(1).unwrap();
        let json: Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["done"], Value::Null);
        assert!(
            get("/plot", &live).starts_with("HTTP/1.1 404"),
            "no plot before the end"
        );
        assert!(get("/favicon.ico", &live).starts_with("HTTP/1.1 204"));
        assert!(get("/etc/passwd", &live).starts_with("HTTP/1.1 404"));
        let post = String::from_utf8(answer("POST / HTTP/1.1\r\n\r\n", &live)).unwrap();
        assert!(post.starts_with("HTTP/1.1 404"), "{post}");
    }

    /// #59: each second's stale share, for the hit chart's stale line, and its ages.
    #[test]
    fn a_second_says_its_stale_share() {
        let mut i: Interval = serde_json::from_value(json!({
            "start_s": 3.0, "duration_s": 1.0, "warmup": false, "intended": 10, "sent": 10,
            "completed": 10, "errors": {}, "status_classes": {"1xx": 0, "2xx": 10, "3xx": 0, "4xx": 0, "5xx": 0},
            "bytes_in": 0, "bytes_out": 0, "connections_opened": 0, "in_flight": 0,
            "hits": 8, "misses": 2, "stale": 6,
            "stale_ages": {"answers": 6, "sum_s": 30, "max_s": 9},
            "latency": serde_json::to_value(vload_schema::LatencyRecord {
                histogram: vload_schema::EncodedHistogram::encode(&vload_schema::new_histogram(
                    &vload_schema::HistogramSettings::default(),
                ))
                .unwrap(),
                moments: vload_schema::Moments::new(),
            })
            .unwrap(),
        }))
        .unwrap();
        assert_eq!(point(&i)["stale"], json!(0.6));
        assert_eq!(
            [
                &point(&i)["stale_aged"],
                &point(&i)["stale_age_sum_s"],
                &point(&i)["stale_age_max_s"]
            ],
            [&json!(6), &json!(30), &json!(9)]
        );
        i.hits = 0;
        i.misses = 0;
        i.stale = 0;
        assert_eq!(point(&i)["stale"], Value::Null);
    }

    /// #59: a path of caches so far, layer by layer; nothing for one cache.
    #[test]
    fn the_path_of_caches_is_shown_only_when_there_is_one() {
        let mut counts = [[0; 3]; 4];
        counts[0] = [100, 60, 40];
        assert_eq!(layers(&counts), Value::Null);
        counts[1] = [40, 10, 30];
        assert_eq!(
            layers(&counts),
            json!([
                {"reached": 100, "hits": 60, "forwarded": 40},
                {"reached": 40, "hits": 10, "forwarded": 30},
            ])
        );
    }
}

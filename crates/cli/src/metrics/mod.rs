//! `--metrics-listen ADDR`: the attack's counters and latency, live, for Prometheus.
//!
//! A small HTTP server on its own thread answers `GET /metrics` with the Prometheus text
//! format (0.0.4), or OpenMetrics 1.0 when the scraper asks for it in `Accept`. The figures
//! are the run file's, taken from each finished second: counters of the measured window
//! only (so that at the end they equal the run file's totals, and `sum by` over shards gives
//! the merged run's), a gauge saying whether the warm-up is on, and the run's own latency as
//! a histogram with ten buckets a decade (p99 read from it lies within one bucket, about
//! 26%, of HdrHistogram's figure). `--metrics-linger` keeps it answering after the attack so
//! that the last scrape sees the final figures. `--metrics-remote-write URL` pushes the same
//! figures to a remote-write receiver ([`remote`]).

mod exposition;
mod remote;

use exposition::{Tally, bounds, render};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use vload_engine::{Observer, Progress};

/// The metrics endpoint of one attack.
pub(crate) struct Metrics {
    tally: Arc<Mutex<Tally>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Where the scrape is served (`--metrics-listen`).
    addr: Option<SocketAddr>,
    /// The pushes to a receiver (`--metrics-remote-write`).
    pusher: Option<remote::Pusher>,
}

impl Metrics {
    /// Listens on `listen` and serves from now on, and pushes to `remote`; `shard` labels
    /// every series.
    pub(crate) fn start(
        listen: Option<SocketAddr>,
        remote: Option<crate::server::fetch::HttpUrl>,
        shard: Option<vload_engine::Shard>,
    ) -> anyhow::Result<Self> {
        let listener = listen
            .map(|addr| {
                let listener = TcpListener::bind(addr).with_context(|| {
                    format!("--metrics-listen {addr}: cannot listen there (in use, or not this machine's address)")
                })?;
                listener.set_nonblocking(true)?;
                anyhow::Ok(listener)
            })
            .transpose()?;
        let addr = listener.as_ref().map(TcpListener::local_addr).transpose()?;
        let mut tally = Tally {
            buckets: vec![0; bounds().len() + 1],
            // Every kind from zero, so that a rate over errors has a series before the first.
            errors: vload_schema::ErrorKind::ALL
                .iter()
                .map(|k| (k.as_str().to_owned(), 0))
                .collect(),
            ..Tally::default()
        };
        if let Some(shard) = shard {
            tally
                .labels
                .push(("shard", format!("{}/{}", shard.index, shard.count)));
        }
        let tally = Arc::new(Mutex::new(tally));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = listener
            .map(|listener| {
                let (tally, stop) = (tally.clone(), stop.clone());
                std::thread::Builder::new()
                    .name("vload-metrics".into())
                    .spawn(move || {
                        crate::http::serve(&listener, &stop, &|head| answer(head, &tally));
                    })
            })
            .transpose()?;
        let pusher = remote
            .map(|url| remote::Pusher::start(url, tally.clone()))
            .transpose()?;
        Ok(Metrics {
            tally,
            stop,
            thread,
            addr,
            pusher,
        })
    }

    /// Where it listens, if it does.
    pub(crate) fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Pushes the final figures and the run's health `verdict`; the listener keeps
    /// answering them (the last scrape) until [`Metrics::stop`].
    pub(crate) fn show_final(&mut self, verdict: &'static str) {
        if let Ok(mut t) = self.tally.lock() {
            t.warmup = false;
            t.in_flight = 0;
            t.verdict = Some(verdict);
            t.client_cpu_s = own_cpu_s();
        }
        if let Some(pusher) = self.pusher.take() {
            pusher.finish();
        }
    }

    /// True when scrapers are served (`--metrics-listen`), so a linger has a purpose.
    pub(crate) fn serving(&self) -> bool {
        self.thread.is_some()
    }

    /// Stops the listener.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Metrics {
    /// A stampede's events so far ([`crate::stampede::Stampeder::live`]).
    pub(crate) fn on_stampede(&mut self, live: Option<[u64; 7]>) {
        if let (Some(live), Ok(mut t)) = (live, self.tally.lock()) {
            t.stampede = Some(live);
        }
    }
}

impl Observer for Metrics {
    fn on_interval(&mut self, p: &Progress) {
        if let Ok(mut t) = self.tally.lock() {
            t.warmup = p.warmup;
            let s = |ns: Option<u64>| ns.map_or(0.0, |ns| ns as f64 / 1e9);
            let c = &p.client;
            if !p.warmup {
                t.late_sends += c.late_sends;
            }
            t.dispatch_lag_p99_s = s(c.dispatch_lag_p99_ns);
            t.queue_wait_p99_s = s(c.queue_wait_p99_ns);
            t.hiccup_p99_s = s(c.hiccup_p99_ns);
            t.client_cpu_s = own_cpu_s();
        }
    }

    fn on_record(&mut self, interval: &vload_schema::Interval) {
        let Ok(mut t) = self.tally.lock() else {
            return;
        };
        t.in_flight = interval.in_flight;
        if interval.warmup {
            return;
        }
        t.intended += interval.intended;
        t.sent += interval.sent;
        t.completed += interval.completed;
        t.unsent += interval.unsent;
        let c = &interval.status_classes;
        for (total, n) in t
            .classes
            .iter_mut()
            .zip([c.s1xx, c.s2xx, c.s3xx, c.s4xx, c.s5xx])
        {
            *total += n;
        }
        for (kind, n) in &interval.errors {
            *t.errors.entry(kind.as_str().to_owned()).or_default() += n;
        }
        t.bytes_in += interval.bytes_in;
        t.bytes_out += interval.bytes_out;
        t.connections += interval.connections_opened;
        for (total, n) in t
            .cache
            .iter_mut()
            .zip([interval.hits, interval.misses, interval.stale])
        {
            *total += n;
        }
        if let Some(ages) = &interval.stale_ages {
            t.stale_ages.merge(ages);
        }
        if t.layers.len() < interval.layers.len() {
            t.layers.resize(interval.layers.len(), [0; 3]);
        }
        for (total, l) in t.layers.iter_mut().zip(&interval.layers) {
            total[0] += l.reached;
            total[1] += l.hits;
            total[2] += l.misses;
        }
        let moments = &interval.latency.moments;
        t.latency_sum_s += moments.sum_ns as f64 / 1e9;
        t.latency_count += moments.n;
        if let Ok(h) = interval.latency.histogram.decode() {
            let bounds = bounds();
            for v in h.iter_recorded() {
                let s = h.median_equivalent(v.value_iterated_to()) as f64 / 1e9;
                let at = bounds.partition_point(|b| *b < s);
                t.buckets[at] += v.count_at_value();
            }
        }
    }
}

/// CPU time this process has used, user and system, in seconds.
fn own_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The answer to one request: `GET /metrics` (or `/`, or `HEAD`) gets the figures, another
/// path a 404, another method a 405.
fn answer(head: &str, tally: &Mutex<Tally>) -> Vec<u8> {
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or_default();
    let path = words.next().unwrap_or("/");
    let plain = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    if !matches!(method, "GET" | "HEAD") {
        return plain(
            "405 Method Not Allowed",
            "Allow: GET, HEAD\r\n",
            "method not allowed: the metrics are read with GET /metrics\n",
        );
    }
    if !matches!(path, "/metrics" | "/") {
        return plain(
            "404 Not Found",
            "",
            "not found: the metrics are at /metrics\n",
        );
    }
    let openmetrics = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("accept:") && l.contains("application/openmetrics-text")
    });
    let body = match tally.lock() {
        Ok(t) => render(&t, openmetrics),
        Err(_) => String::new(),
    };
    let kind = if openmetrics {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    let length = body.len();
    let body = if method == "HEAD" { "" } else { body.as_str() };
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{body}"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ten_a_decade_from_ten_microseconds_to_a_hundred_seconds() {
        let b = bounds();
        assert_eq!(b.len(), 71);
        assert!((b[0] - 1e-5).abs() < 1e-12);
        assert!((b[10] - 1e-4).abs() < 1e-10);
        assert!((b[70] - 100.0).abs() < 1e-6);
    }

    /// The Grafana dashboard in deploy/grafana asks only for series this endpoint serves.
    #[test]
    fn the_dashboard_queries_only_series_that_exist() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../../../deploy/grafana/vload.json")).unwrap();
        let served = render(
            &Tally {
                buckets: vec![0; bounds().len() + 1],
                errors: [("reset".to_owned(), 0)].into(),
                ..Tally::default()
            },
            false,
        );
        let mut seen = 0;
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                for (at, _) in expr.match_indices("vload_") {
                    let name: String = expr[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        served.lines().any(|l| l.starts_with(&format!("{name}{{"))
                            || l.starts_with(&format!("{name} "))),
                        "{name} in {expr} is not served"
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen >= 15, "{seen}");
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let t = Tally {
            buckets: vec![0; bounds().len() + 1],
            labels: vec![("shard", "1/3".into())],
            ..Tally::default()
        };
        let text = render(&t, true);
        assert!(
            text.contains("# TYPE vload_requests_sent counter"),
            "{text}"
        );
        assert!(
            text.contains("vload_requests_sent_total{shard=\"1/3\"} 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
        let text = render(&t, false);
        assert!(
            text.contains("# TYPE vload_requests_sent_total counter"),
            "{text}"
        );
        assert!(
            text.contains("vload_latency_seconds_bucket{shard=\"1/3\",le=\"+Inf\"} 0"),
            "{text}"
        );
        assert!(!text.contains("# EOF"));
    }

    /// #59: a stampede's events and its requests by fate, a path's layers and the stale
    /// answers' ages, once there.
    #[test]
    fn a_stampede_and_a_path_of_caches_are_counted_when_there_are_some() {
        let mut t = Tally {
            buckets: vec![0; bounds().len() + 1],
            ..Tally::default()
        };
        let text = render(&t, false);
        assert!(!text.contains("vload_stampede") && !text.contains("vload_cache_layer"));
        assert!(!text.contains("vload_cache_stale_age"));
        t.stampede = Some([3, 600, 3, 590, 0, 7, 0]);
        t.layers = vec![[100, 60, 40], [40, 10, 30]];
        [4, 9, 2].into_iter().for_each(|age| t.stale_ages.add(age));
        let text = render(&t, false);
        for line in [
            "vload_stampede_events_total 3",
            "vload_stampede_requests_total{fate=\"leader\"} 3",
            "vload_stampede_requests_total{fate=\"waiter\"} 590",
            "vload_stampede_requests_total{fate=\"failed\"} 7",
            "vload_cache_layer_requests_total{layer=\"2\",outcome=\"forwarded\"} 30",
            "vload_cache_stale_aged_responses_total 3",
            "vload_cache_stale_age_seconds_total 15",
            "vload_cache_stale_age_max_seconds 9",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
    }
}

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
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
                    .spawn(move || serve(&listener, &tally, &stop))
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

    /// Pushes the final figures, keeps answering for `linger` (the last scrape), then stops.
    pub(crate) fn finish(mut self, linger: Duration) {
        if let Ok(mut t) = self.tally.lock() {
            t.warmup = false;
            t.in_flight = 0;
        }
        if let Some(pusher) = self.pusher.take() {
            pusher.finish();
        }
        if self.thread.is_some() {
            std::thread::sleep(linger);
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Observer for Metrics {
    fn on_interval(&mut self, p: &Progress) {
        if let Ok(mut t) = self.tally.lock() {
            t.warmup = p.warmup;
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

/// Answers scrapes until `stop`.
fn serve(listener: &TcpListener, tally: &Mutex<Tally>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = answer(stream, tally);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// One request: `GET /metrics` (or `/`) gets the figures, anything else a 404.
fn answer(mut stream: TcpStream, tally: &Mutex<Tally>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    if !matches!(path, "/metrics" | "/") {
        let body = "not found: the metrics are at /metrics\n";
        return write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
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
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
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
}

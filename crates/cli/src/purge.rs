//! `--purge-every`: bursts of purge requests (`PURGE`, `BAN`, or any method) beside the
//! load, for the catalogue's most popular objects, on a connection of their own and counted
//! apart from the load. A burst is sent when the collector records the interval that ends
//! at its time, so each burst begins on a second's boundary and its effect shows in the
//! seconds that follow it (the report's hit-ratio dip, extra misses and refill time).

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vload_engine::AttackPlan;
use vload_schema::{Interval, PurgeBurst, PurgeRecord};

/// How long one purge may take before it counts as an error.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What to purge and how.
#[derive(Debug, Clone)]
pub(crate) struct PurgeSpec {
    pub(crate) every: Duration,
    pub(crate) objects: u64,
    pub(crate) method: String,
    pub(crate) header: Option<String>,
}

/// The bursts' thread and when the next one is due.
pub(crate) struct Purger {
    spec: PurgeSpec,
    to_thread: Option<mpsc::Sender<(f64, Instant)>>,
    thread: Option<JoinHandle<Vec<PurgeBurst>>>,
    next_s: f64,
    end_s: f64,
}

impl Purger {
    /// A purger for `plan`'s catalogue and server, or `None` without `--purge-every`.
    pub(crate) fn start(spec: Option<&PurgeSpec>, plan: &AttackPlan) -> Option<Purger> {
        let spec = spec?.clone();
        let catalogue = plan.catalogue.clone()?;
        let host = plan
            .request
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| plan.request.url.authority().map(|a| a.to_string()))
            .unwrap_or_default();
        let requests: Vec<Vec<u8>> = (0..spec.objects.min(catalogue.objects))
            .map(|id| {
                let host = catalogue.host_of(id).unwrap_or_else(|| host.clone());
                let mut text = format!(
                    "{} {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n",
                    spec.method,
                    catalogue.path(id)
                );
                if let Some(header) = &spec.header {
                    text.push_str(&format!("{header}\r\n"));
                }
                text.push_str("\r\n");
                text.into_bytes()
            })
            .collect();
        let (tx, rx) = mpsc::channel::<(f64, Instant)>();
        let to = plan.connect_to;
        let thread = std::thread::Builder::new()
            .name("vload-purge".into())
            .spawn(move || {
                rx.iter()
                    .map(|(boundary, asked)| burst(to, &requests, boundary, asked))
                    .collect()
            })
            .ok()?;
        let warmup = plan.warmup.as_secs_f64();
        // The last burst a second before the window ends, so that its effect is measured.
        let end_s = plan
            .stop
            .duration
            .map_or(f64::INFINITY, |d| warmup + d.as_secs_f64() - 1.0);
        Some(Purger {
            next_s: warmup + spec.every.as_secs_f64(),
            spec,
            to_thread: Some(tx),
            thread: Some(thread),
            end_s,
        })
    }

    /// Sends a burst when `interval` ends at or past the next burst's time.
    pub(crate) fn on_record(&mut self, interval: &Interval) {
        let boundary = interval.start_s + interval.duration_s;
        if boundary + 1e-3 < self.next_s || boundary > self.end_s + 1e-3 {
            return;
        }
        if let Some(tx) = &self.to_thread {
            let _ = tx.send((boundary, Instant::now()));
        }
        while self.next_s <= boundary + 1e-3 {
            self.next_s += self.spec.every.as_secs_f64();
        }
    }

    /// Waits for the last burst and returns the record.
    pub(crate) fn finish(mut self) -> PurgeRecord {
        drop(self.to_thread.take());
        let bursts = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        PurgeRecord {
            method: self.spec.method.clone(),
            header: self.spec.header.clone(),
            every_s: self.spec.every.as_secs_f64(),
            objects: self.spec.objects,
            bursts,
        }
    }
}

/// One burst: each request on its own connection, read to its end.
fn burst(to: SocketAddr, requests: &[Vec<u8>], boundary: f64, asked: Instant) -> PurgeBurst {
    let began = Instant::now();
    let mut status_codes = BTreeMap::new();
    let mut errors = 0;
    for request in requests {
        match purge(to, request) {
            Some(code) => *status_codes.entry(code).or_insert(0) += 1,
            None => errors += 1,
        }
    }
    PurgeBurst {
        at_s: boundary + began.duration_since(asked).as_secs_f64(),
        took_s: began.elapsed().as_secs_f64(),
        sent: requests.len() as u64,
        status_codes,
        errors,
    }
}

/// The status code of one purge, or `None` when it got no response.
fn purge(to: SocketAddr, request: &[u8]) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&to, TIMEOUT).ok()?;
    stream.set_read_timeout(Some(TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(TIMEOUT)).ok()?;
    stream.write_all(request).ok()?;
    let mut response = Vec::new();
    // Read to the end (Connection: close), at most 64 KiB of a purge's answer.
    let _ = stream.take(64 << 10).read_to_end(&mut response);
    let line = response.split(|&b| b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

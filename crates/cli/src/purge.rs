//! `--purge-every`: bursts of purge requests (`PURGE`, `BAN`, or any method) beside the
//! load, for the catalogue's most popular objects, on a connection of their own and counted
//! apart from the load. A burst is sent when the collector records the interval that ends
//! at its time, so each burst begins on a second's boundary and its effect shows in the
//! seconds that follow it (the report's hit-ratio dip, extra misses and refill time).
//!
//! A purge target that is slow, silent or trickles costs its bursts, never the run: a purge
//! ends by [`PURGE_BOUND`], a burst by its period or [`BURST_BOUND`], and the run's end waits
//! for the last burst at most [`FINISH_BOUND`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vload_engine::AttackPlan;
use vload_schema::{Interval, PurgeBurst, PurgeRecord};

use crate::side::{self, Deadline};

/// The whole of one purge, connect to the answer's last byte, before it counts as an error.
const PURGE_BOUND: Duration = Duration::from_secs(2);

/// The longest a burst may take (or its period, if shorter): purges it has not sent by then
/// are counted unsent, so a slow or silent target never makes bursts queue up behind it.
const BURST_BOUND: Duration = Duration::from_secs(5);

/// How long the end of the run waits for the last burst before it stops it.
const FINISH_BOUND: Duration = Duration::from_secs(2);

/// What to purge and how.
#[derive(Debug, Clone)]
pub(crate) struct PurgeSpec {
    pub(crate) every: Duration,
    pub(crate) objects: u64,
    pub(crate) method: String,
    /// `Name: value`, checked to hold no control character.
    pub(crate) header: Option<String>,
}

/// What the bursts' thread shares: the bursts done, and the word to stop.
#[derive(Default)]
struct Shared {
    bursts: Mutex<Vec<PurgeBurst>>,
    stop: AtomicBool,
}

/// The bursts' thread and when the next one is due.
pub(crate) struct Purger {
    spec: PurgeSpec,
    to_thread: Option<mpsc::Sender<(f64, Instant)>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    next_s: f64,
    end_s: f64,
}

/// The Host the attack's requests carry: its `Host` header, else the URL's authority.
pub(crate) fn host_of(plan: &AttackPlan) -> String {
    plan.request
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| plan.request.url.authority().map(|a| a.to_string()))
        .unwrap_or_default()
}

impl Purger {
    /// A purger for `plan`'s catalogue and server, or `None` without `--purge-every`.
    pub(crate) fn start(spec: Option<&PurgeSpec>, plan: &AttackPlan) -> Option<Purger> {
        let spec = spec?.clone();
        let catalogue = plan.catalogue.clone()?;
        let host = host_of(plan);
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
        let shared = Arc::new(Shared::default());
        let bound = spec.every.min(BURST_BOUND);
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("vload-purge".into())
                .spawn(move || {
                    while let Ok(mut asked) = rx.recv() {
                        // A burst asked while the last one ran is late: only the newest goes.
                        while let Ok(newer) = rx.try_recv() {
                            asked = newer;
                        }
                        let done = burst(to, &requests, asked, bound, &shared.stop);
                        lock(&shared.bursts).push(done);
                    }
                })
                .ok()?
        };
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
            shared,
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

    /// The record of the bursts: waits for the last one at most [`FINISH_BOUND`] (none when
    /// the run was `interrupted`), then stops it (what it had not sent counts unsent) and
    /// waits for the purge under way, which ends by [`PURGE_BOUND`].
    pub(crate) fn finish(mut self, interrupted: bool) -> PurgeRecord {
        drop(self.to_thread.take());
        if let Some(thread) = self.thread.take() {
            let patience = if interrupted {
                Duration::ZERO
            } else {
                FINISH_BOUND
            };
            wait_for(&thread, patience);
            self.shared.stop.store(true, Ordering::Relaxed);
            wait_for(&thread, PURGE_BOUND + Duration::from_millis(200));
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        let mut bursts = std::mem::take(&mut *lock(&self.shared.bursts));
        bursts.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        PurgeRecord {
            method: self.spec.method.clone(),
            header: self.spec.header.as_deref().map(redacted),
            every_s: self.spec.every.as_secs_f64(),
            objects: self.spec.objects,
            bursts,
        }
    }
}

/// The purge header as the run file keeps it: its name, the value redacted (it is the
/// purge's credential).
fn redacted(header: &str) -> String {
    let name = header.split_once(':').map_or(header, |(name, _)| name);
    format!("{}: (redacted)", name.trim())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits until `thread` has finished, at most `patience`.
fn wait_for(thread: &JoinHandle<()>, patience: Duration) {
    let until = Instant::now() + patience;
    while !thread.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One burst asked at `(boundary, when)`: each request on its own connection, read to its
/// end, all within `bound` (or until `stop`); what is left then is counted unsent.
fn burst(
    to: SocketAddr,
    requests: &[Vec<u8>],
    (boundary, asked): (f64, Instant),
    bound: Duration,
    stop: &AtomicBool,
) -> PurgeBurst {
    let began = Instant::now();
    let deadline = Deadline::after(bound);
    let mut status_codes = BTreeMap::new();
    let (mut sent, mut errors, mut unsent) = (0, 0, 0);
    for request in requests {
        if stop.load(Ordering::Relaxed) || deadline.passed() {
            unsent += 1;
            continue;
        }
        sent += 1;
        match purge(to, request, deadline.min(Deadline::after(PURGE_BOUND))) {
            Some(code) => *status_codes.entry(code).or_insert(0) += 1,
            None => errors += 1,
        }
    }
    PurgeBurst {
        at_s: boundary + began.duration_since(asked).as_secs_f64(),
        took_s: began.elapsed().as_secs_f64(),
        sent,
        status_codes,
        errors,
        unsent,
    }
}

/// The status code of one purge, or `None` when it got no response by `deadline`.
pub(crate) fn purge(to: SocketAddr, request: &[u8], deadline: Deadline) -> Option<u16> {
    let mut stream = side::connect(&to, deadline).ok()?;
    side::write_all(&mut stream, request, deadline).ok()?;
    // The status line is all a purge needs: read until it is complete (the answer's rest,
    // at most 64 KiB, is not waited for).
    let response = side::read_until(&mut stream, 64 << 10, deadline, |bytes| {
        bytes.contains(&b'\n')
    })
    .ok()?;
    let line = response.split(|&b| b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

//! How a worker records the end of one request: its outcome in the window (and the stage) it
//! belongs to, and the interval shipped to the collector each second.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vload_schema::ErrorKind;
use vload_timer::nanos_between;

use super::WorkerMsg;
use super::job::{Flow, Job};
use super::open::Open;
use super::state::Worker;
use crate::cache::{CacheClass, CacheSource};
use crate::conn::Conn;
use crate::failure::Failure;
use crate::plan::AttackPlan;
use crate::rate::Curve;
use crate::record::IntervalStats;
use crate::response::Response;

/// How one request ended.
pub(super) enum Outcome {
    Response {
        status: u16,
        cache: (CacheClass, Option<CacheSource>),
        service: u64,
        /// Open loop: from the intended send.
        response: Option<u64>,
    },
    Failed {
        failure: Failure,
        /// A request that timed out: recorded at the timeout (its response time in an open
        /// loop) and, if it was written, its time from the write (service time); nothing
        /// for other failures.
        service: Option<u64>,
        response: Option<u64>,
    },
}

impl Outcome {
    /// What the breakdowns count of it: its primary latency is the response time in an
    /// open loop, the service time in a closed one.
    fn end(&self, received: u64, open_loop: bool) -> crate::breakdown::End {
        let (status, cache, service, response) = match self {
            Outcome::Response {
                status,
                cache,
                service,
                response,
            } => (Some(*status), cache.0, Some(*service), *response),
            Outcome::Failed {
                service, response, ..
            } => (None, CacheClass::Unknown, *service, *response),
        };
        crate::breakdown::End {
            status,
            cache,
            received,
            latency: if open_loop { response } else { service },
        }
    }
}

/// How an exchange ended, beside its result.
pub(super) struct Ended {
    /// When the request went out, and when its exchange ended.
    pub(super) start: Instant,
    pub(super) done: Instant,
    /// Body bytes received, whether the response completed or not.
    pub(super) received: u64,
    /// Request body bytes that reached the connection.
    pub(super) written: u64,
    /// The connection's last request (--requests-per-connection).
    pub(super) last_on_connection: bool,
    /// The connection outlives a failure of this exchange (an HTTP/2 stream's).
    pub(super) survives: bool,
}

/// A rate plan's stages, for recording each request in its own.
pub(super) struct Stages {
    pub(super) curve: Arc<Curve>,
    pub(super) t0: Instant,
    pub(super) plan: Arc<AttackPlan>,
}

impl Stages {
    /// Records `outcome` in stage `stage` (where its intended send fell), and a success also
    /// in the stage running when it arrived (the throughput achieved then).
    fn record(
        &self,
        stats: &mut IntervalStats,
        stage: u32,
        done: Instant,
        received: u64,
        outcome: &Outcome,
    ) {
        let own = stats.stage(stage);
        own.completed += 1;
        own.bytes_in += received;
        match outcome {
            Outcome::Response {
                status,
                cache,
                service,
                response,
            } => {
                own.service.record(*service);
                if let Some(response) = response {
                    own.response.record(*response);
                }
                *own.status.entry(*status).or_default() += 1;
                own.hits += u64::from(cache.0.is_hit());
                own.misses += u64::from(cache.0.is_miss());
                let at = done.saturating_duration_since(self.t0).as_secs_f64();
                if self.plan.expects(*status)
                    && let Some(during) = self.curve.stage_during(at)
                {
                    stats.stage(during).done_during += 1;
                }
            }
            Outcome::Failed {
                failure,
                service,
                response,
            } => {
                if let Some(service) = service {
                    own.service.record(*service);
                }
                if let Some(response) = response {
                    own.response.record(*response);
                }
                own.count_error(failure.0);
            }
        }
    }
}

impl Worker {
    /// A request of `job` goes out at `start`.
    pub(super) fn begin(&self, job: &Job, start: Instant) {
        self.books.send(job);
        self.last_send.set(Some(start));
    }

    /// True when the request numbered `served` on its connection is its last
    /// (--requests-per-connection).
    pub(super) fn last_on_connection(&self, served: u32) -> bool {
        self.plan
            .requests_per_connection
            .is_some_and(|n| served >= n)
    }

    /// Records how the request begun for `job` ended: a response, a failure, or `None` at
    /// its deadline; says what its connection does next.
    pub(super) fn end(
        &self,
        job: &Job,
        result: Option<Result<Response, Failure>>,
        ended: Ended,
    ) -> Flow {
        let Ended {
            start,
            done,
            received,
            written,
            last_on_connection,
            survives,
        } = ended;
        self.books.end(job);
        self.books.wrote(job, written);
        let open_loop = self.open().is_some();
        let after_failure = || {
            if survives {
                Flow::KeepAlive
            } else {
                Flow::Reconnect
            }
        };
        let (outcome, flow) = match result {
            Some(Ok(response)) => {
                let flow = if response.close || last_on_connection {
                    Flow::Reconnect
                } else {
                    Flow::KeepAlive
                };
                let outcome = Outcome::Response {
                    status: response.status,
                    cache: response.cache,
                    service: nanos_between(start, done),
                    response: open_loop.then(|| nanos_between(job.intended, done)),
                };
                (outcome, flow)
            }
            Some(Err(failure)) => (
                Outcome::Failed {
                    failure,
                    service: None,
                    response: None,
                },
                after_failure(),
            ),
            None => {
                // Recorded at the timeout, so percentiles are never optimistic: the
                // primary latency (response time in an open loop, service time in a
                // closed one) at the timeout; an open loop's service time up to it.
                let timeout = self.plan.timeout;
                let at = timeout.as_nanos() as u64;
                let message = format!("no complete response within {timeout:?}");
                let outcome = Outcome::Failed {
                    failure: (ErrorKind::RequestTimeout, message),
                    service: Some(if open_loop {
                        nanos_between(start, job.deadline(timeout))
                    } else {
                        at
                    }),
                    response: open_loop.then_some(at),
                };
                (outcome, after_failure())
            }
        };
        self.record(job, done, received, outcome);
        flow
    }

    /// A connection was made (counted by when).
    /// A connection opened at `now`, its TCP connect having taken `took`.
    pub(super) fn count_connection(&self, now: Instant, took: Duration) {
        let mut part = self.books.at(now);
        part.connections_opened += 1;
        part.tcp_connect.record(took.as_nanos() as u64);
    }

    /// Counts the bytes `conn`'s server sent unasked, if it did.
    pub(super) fn note_stray(&self, conn: &mut Conn) {
        let stray = conn.take_stray();
        if stray > 0 {
            self.count_stray(Instant::now(), stray);
        }
    }

    /// A connection was closed because the server sent bytes nobody asked for after a
    /// complete response (counted by when).
    pub(super) fn count_stray(&self, now: Instant, _bytes: usize) {
        self.books.at(now).stray += 1;
    }

    /// Records how a request ended, in its window and, with a rate plan, in its stage.
    pub(super) fn record(&self, job: &Job, done: Instant, received: u64, outcome: Outcome) {
        if !job.warmup {
            self.breakdown
                .count(job.tags, &outcome.end(received, self.open().is_some()), 1);
        }
        let mut stats = self.books.of(job);
        stats.completed += 1;
        stats.bytes_in += received;
        if let Some(stages) = &self.stages {
            stages.record(&mut stats, job.stage, done, received, &outcome);
        }
        match outcome {
            Outcome::Response {
                status,
                cache,
                service,
                response,
            } => {
                stats.service.record(service);
                if let Some(response) = response {
                    stats.response.record(response);
                }
                let primary = response.unwrap_or(service);
                if cache.0.is_hit() {
                    stats.hit.record(primary);
                } else if cache.0.is_miss() {
                    stats.miss.record(primary);
                }
                stats.count_status(status);
                stats.count_cache(cache.0, cache.1);
            }
            Outcome::Failed {
                failure,
                service,
                response,
            } => {
                if let Some(service) = service {
                    stats.service.record(service);
                }
                if let Some(response) = response {
                    stats.response.record(response);
                }
                stats.count_error(failure.0);
                drop(stats);
                self.sample(failure.0, || failure.1);
            }
        }
    }

    /// Ships interval `index` to the collector (the measured window's requests, and the
    /// warm-up's if any) and starts a new one.
    pub(super) fn flush(&self, index: u32, to_collector: &mpsc::Sender<WorkerMsg>) {
        let (mut stats, warmup) = self.books.take();
        stats.in_flight = self.books.in_flight() + self.open().map_or(0, Open::waiting);
        // The collector outlives the workers; nobody listens if it is gone.
        let _ = to_collector.send(WorkerMsg::Interval {
            worker: self.id,
            index,
            stats: Box::new(stats),
            warmup: warmup.map(Box::new),
        });
    }
}

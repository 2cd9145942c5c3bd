//! How a worker records what becomes of its requests: each one's outcome in the window (and
//! the stage) it belongs to and in the breakdowns, the first message of each error kind, the
//! connections made, and the interval taken out each second.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vload_schema::ErrorKind;
use vload_timer::nanos_between;

use super::books::Books;
use crate::breakdown::{Breakdowns, End, Tally};
use crate::cache::CacheClass;
use crate::failure::Failure;
use crate::job::Job;
use crate::model::Batch;
use crate::plan::AttackPlan;
use crate::rate::Curve;
use crate::record::{ERROR_KINDS, IntervalStats, kind_index};
use crate::response::{Phases, Response};

/// How one request ended.
pub(crate) enum Outcome {
    Response {
        status: u16,
        cache: crate::cache::Verdict,
        service: u64,
        /// Open loop: from the intended send.
        response: Option<u64>,
        /// The wait for the first byte and the transfer (they add up to `service`).
        phases: Phases,
        /// The origin's own time (`Server-Timing`).
        origin: Option<u64>,
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
    fn end(&self, received: u64, open_loop: bool) -> End {
        let (status, cache, service, response, phases) = match self {
            Outcome::Response {
                status,
                cache,
                service,
                response,
                phases,
                ..
            } => (
                Some(*status),
                cache.0,
                Some(*service),
                *response,
                Some(*phases),
            ),
            Outcome::Failed {
                service, response, ..
            } => (None, CacheClass::Unknown, *service, *response, None),
        };
        End {
            status,
            cache,
            received,
            latency: if open_loop { response } else { service },
            phases,
        }
    }
}

/// How an exchange ended, beside its result.
pub(crate) struct Ended {
    /// When the request went out, and when its exchange ended.
    pub(crate) start: Instant,
    pub(crate) done: Instant,
    /// Body bytes received, whether the response completed or not.
    pub(crate) received: u64,
    /// Request body bytes that reached the connection.
    pub(crate) written: u64,
    /// The connection's last request (--requests-per-connection).
    pub(crate) last_on_connection: bool,
    /// The connection outlives a failure of this exchange (an HTTP/2 stream's).
    pub(crate) survives: bool,
    /// When the response began to arrive, if a read left it incomplete (`None`: at `done`).
    pub(crate) first_byte: Option<Instant>,
    /// Bytes read off the connection since the last exchange ended, counted in this one's
    /// window.
    pub(crate) wire: u64,
}

/// A rate plan's stages, for recording each request in its own.
pub(crate) struct Stages {
    pub(crate) curve: Arc<Curve>,
    pub(crate) t0: Instant,
}

/// What the connection does after an exchange, by the request's account (the lane adds
/// whether the connection can still carry one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// It may carry the next request.
    KeepAlive,
    /// It must be closed: the response said so, it failed, or it carried its last.
    Reconnect,
}

impl Stages {
    /// Records `outcome` in stage `stage` (where its intended send fell), and a success also
    /// in the stage running when it arrived (the throughput achieved then).
    fn record(
        &self,
        plan: &AttackPlan,
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
                ..
            } => {
                own.service.record(*service);
                if let Some(response) = response {
                    own.response.record(*response);
                }
                *own.status.entry(*status).or_default() += 1;
                own.hits += u64::from(cache.0.is_hit());
                own.misses += u64::from(cache.0.is_miss());
                own.stale += u64::from(cache.0 == crate::cache::CacheClass::Stale);
                if let Some(age) = cache.3 {
                    own.stale_ages.add(u64::from(age.seconds()));
                }
                let at = done.saturating_duration_since(self.t0).as_secs_f64();
                if plan.expects(*status)
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

/// A response complete this long after its request's deadline was not looked for in time:
/// every driver looks at its deadlines more often (the epoll loop's sweep is 10 ms, tokio's
/// timer 1 ms), so vload's thread was off a CPU or behind.
const LOOKED_LATE: std::time::Duration = std::time::Duration::from_millis(50);

/// A worker's recorder (see the module's docs).
pub(crate) struct Recorder {
    plan: Arc<AttackPlan>,
    books: Books,
    /// With a rate plan: its stages, each request recorded in its own as well.
    stages: Option<Stages>,
    /// The measured window's breakdowns.
    tally: Tally,
    samples: RefCell<[Option<String>; ERROR_KINDS.len()]>,
    /// When the last request went out.
    last_send: Cell<Option<Instant>>,
    /// When the first request went out (or failed to connect), for the start's offset.
    first_send: Cell<Option<Instant>>,
    /// A catalogue's objects drawn, warm-up and window apart.
    objects: RefCell<Option<super::ObjectDraws>>,
}

impl Recorder {
    /// The recorder of an attack that began at `t0` and whose measured window begins at
    /// `measure_from`, with its breakdowns' `tally` and a rate plan's `stages`.
    pub(crate) fn new(
        plan: Arc<AttackPlan>,
        (t0, measure_from): (Instant, Instant),
        stages: Option<Stages>,
        tally: Tally,
    ) -> Recorder {
        Recorder {
            objects: RefCell::new(plan.catalogue.as_ref().and_then(super::ObjectDraws::new)),
            books: Books::new(t0, measure_from, stages.is_some()),
            plan,
            stages,
            tally,
            samples: RefCell::new(Default::default()),
            last_send: Cell::new(None),
            first_send: Cell::new(None),
        }
    }

    /// The ledger.
    pub(crate) fn books(&self) -> &Books {
        &self.books
    }

    /// When the last request went out, if any did.
    pub(crate) fn last_send(&self) -> Option<Instant> {
        self.last_send.get()
    }

    /// When the first request went out, if any did.
    pub(crate) fn first_send(&self) -> Option<Instant> {
        self.first_send.get()
    }

    /// The attack's sending ended at `at` (its schedule is over).
    pub(crate) fn sending_ended(&self, at: Instant) {
        self.last_send.set(Some(at));
    }

    /// A request of `job` goes out at `start`.
    pub(crate) fn begin(&self, job: &Job, start: Instant, object: Option<u64>) {
        if let Some(id) = object
            && let Some(draws) = self.objects.borrow_mut().as_mut()
        {
            draws.drew(id, job.warmup);
        }
        self.books.send(job);
        self.last_send.set(Some(start));
        if self.first_send.get().is_none() {
            self.first_send.set(Some(start));
        }
    }

    /// Records how the request begun for `job` ended: a response, a failure, or `None` at
    /// its deadline; says what its connection does next.
    pub(crate) fn end(
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
            first_byte,
            wire,
        } = ended;
        self.books.end(job);
        self.books.wrote(job, written);
        if wire > 0 {
            self.books.of(job).wire_in += wire;
        }
        let after_failure = if survives {
            Flow::KeepAlive
        } else {
            Flow::Reconnect
        };
        // A response complete only after the request's deadline is a timeout: `--timeout`
        // is a bound (a driver notices a deadline up to a sweep late, and the response may
        // come in between). The connection goes on as the response left it.
        let result = match result {
            Some(Ok(response)) if done > job.deadline(self.plan.timeout) => {
                let flow = if response.close || last_on_connection {
                    Flow::Reconnect
                } else {
                    Flow::KeepAlive
                };
                self.answered_late(job, (start, done), received);
                return flow;
            }
            result => result,
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
                    response: job.response_ns(done),
                    phases: Phases::of(start, first_byte, done),
                    origin: response.origin,
                };
                (outcome, flow)
            }
            Some(Err(failure)) => (
                Outcome::Failed {
                    failure,
                    service: None,
                    response: None,
                },
                after_failure,
            ),
            None => (self.timed_out(job, start), after_failure),
        };
        self.record(job, done, received, outcome);
        flow
    }

    /// A response complete only after its request's deadline: a timeout. When vload looked
    /// long after the deadline (a driver looks at least every sweep), its whole answer was
    /// waiting: the time past it may be the client's (a thread off a CPU), so it is counted
    /// apart and says so.
    fn answered_late(&self, job: &Job, (start, done): (Instant, Instant), received: u64) {
        let late = done.saturating_duration_since(job.deadline(self.plan.timeout));
        let mut outcome = self.timed_out(job, start);
        if late > LOOKED_LATE {
            if let Outcome::Failed { failure, .. } = &mut outcome {
                failure.1 = format!(
                    "no complete response within {:?}: the whole answer was waiting when vload looked, {late:.0?} after the deadline (the time may be the client's: see Client health)",
                    self.plan.timeout
                );
            }
            self.books.of(job).answered_late += 1;
        }
        self.record(job, done, received, outcome);
    }

    /// A request that timed out: recorded at the timeout, so percentiles are never
    /// optimistic: the primary latency (response time in an open loop, service time in a
    /// closed one) at the timeout; an open loop's service time up to it.
    fn timed_out(&self, job: &Job, start: Instant) -> Outcome {
        let timeout = self.plan.timeout;
        let at = timeout.as_nanos() as u64;
        let service = if job.timed_from_due {
            nanos_between(start, job.deadline(timeout))
        } else {
            at
        };
        Outcome::Failed {
            failure: (
                ErrorKind::RequestTimeout,
                format!("no complete response within {timeout:?}"),
            ),
            service: Some(service),
            response: job.timed_from_due.then_some(at),
        }
    }

    /// A request that failed before it could be written (its connection could not be
    /// made): sent, in that vload tried.
    pub(crate) fn fail_unsent(&self, failure: Failure, job: &Job) {
        let now = Instant::now();
        self.books.send(job);
        self.last_send.set(Some(now));
        if self.first_send.get().is_none() {
            self.first_send.set(Some(now));
        }
        let outcome = Outcome::Failed {
            failure,
            service: None,
            response: None,
        };
        self.books.end(job);
        self.record(job, now, 0, outcome);
    }

    /// A request taken up whose deadline passed before its connection was made.
    pub(crate) fn fail_unconnected(&self, job: &Job) {
        let timeout = self.plan.timeout;
        self.books.send(job);
        self.books.end(job);
        let at = timeout.as_nanos() as u64;
        let outcome = Outcome::Failed {
            failure: (
                ErrorKind::RequestTimeout,
                format!(
                    "no connection within {timeout:?}: the TCP connect, TLS handshake or HTTP/2 SETTINGS was still pending"
                ),
            ),
            service: Some(at),
            response: job.timed_from_due.then_some(at),
        };
        self.record(job, Instant::now(), 0, outcome);
    }

    /// A request taken up will not be sent: no target is left for it.
    pub(crate) fn withdraw(&self, job: &Job) {
        self.books.withdraw(job);
    }

    /// Records a batch of requests that waited in the queue until their deadline.
    pub(crate) fn expire(&self, batch: &Batch) {
        let timeout = self.plan.timeout;
        let ns = timeout.as_nanos() as u64;
        let job = batch.job();
        let n = batch.count;
        let timed_out = kind_index(ErrorKind::RequestTimeout);
        let mut part = self.books.of(&job);
        // Taken up and sent (failed trying) at once: they never held a connection.
        part.sent += n;
        part.completed += n;
        part.queued += n;
        part.queue_timeouts += n;
        part.queue_wait.record_n(ns, n);
        part.response.record_n(ns, n);
        part.errors[timed_out] += n;
        if !job.warmup {
            let end = End {
                status: None,
                cache: CacheClass::Unknown,
                received: 0,
                latency: Some(ns),
                phases: None,
            };
            self.tally.count(job.tags, &end, n);
        }
        if self.stages.is_some() {
            let stage = part.stage(job.stage);
            stage.sent += n;
            stage.completed += n;
            stage.response.record_n(ns, n);
            stage.errors[timed_out] += n;
        }
        drop(part);
        self.sample(ErrorKind::RequestTimeout, || {
            format!("waited {timeout:?} for a connection and was never sent (every connection busy or still being made)")
        });
    }

    /// A connection opened at `now`: its TCP connect took `tcp`, its TLS handshake `tls`.
    pub(crate) fn connected(&self, now: Instant, tcp: Duration, tls: Option<Duration>) {
        let mut part = self.books.at(now);
        part.connections_opened += 1;
        part.tcp_connect.record(tcp.as_nanos() as u64);
        if let Some(took) = tls {
            part.tls_handshake.record(took.as_nanos() as u64);
        }
    }

    /// A connection was closed because the server sent bytes nobody asked for after a
    /// complete response (counted by when).
    pub(crate) fn stray(&self, now: Instant) {
        self.books.at(now).stray += 1;
    }

    /// A connection was closed at `now` without having carried a request.
    pub(crate) fn unused_close(&self, now: Instant) {
        self.books.at(now).unused += 1;
    }

    /// How late a stall probe's timer woke, at `now`.
    pub(crate) fn hiccup(&self, now: Instant, late_ns: u64) {
        self.books.at(now).hiccup.record(late_ns);
    }

    /// Records how a request ended, in its window and, with a rate plan, in its stage.
    fn record(&self, job: &Job, done: Instant, received: u64, outcome: Outcome) {
        if !job.warmup {
            let end = outcome.end(received, job.timed_from_due);
            self.tally.count(job.tags, &end, 1);
        }
        let mut stats = self.books.of(job);
        stats.completed += 1;
        stats.bytes_in += received;
        if let Some(stages) = &self.stages {
            stages.record(&self.plan, &mut stats, job.stage, done, received, &outcome);
        }
        match outcome {
            Outcome::Response {
                status,
                cache,
                service,
                response,
                phases,
                origin,
            } => {
                stats.service.record(service);
                if let Some(response) = response {
                    stats.response.record(response);
                }
                stats.first_byte.record(phases.first_byte);
                stats.transfer.record(phases.transfer);
                // A hit's `Server-Timing` is the one stored with the object: the origin did
                // nothing for it.
                // An origin's time beyond the request's own wait cannot be: a clock skew or a
                // lying origin, counted apart rather than folded into "proxy added 0".
                if let Some(origin) = origin.filter(|_| cache.0.is_miss()) {
                    match phases.first_byte.checked_sub(origin) {
                        Some(added) => {
                            stats.origin.record(origin);
                            stats.proxy_added.record(added);
                        }
                        None => stats.timing_beyond_wait += 1,
                    }
                }
                let primary = response.unwrap_or(service);
                if cache.0.is_hit() {
                    stats.hit.record(primary);
                } else if cache.0.is_miss() {
                    stats.miss.record(primary);
                }
                stats.count_status(status);
                stats.count_cache(cache);
                if job.watched {
                    stats.watched[0] += u64::from(cache.0.is_hit());
                    stats.watched[1] += u64::from(cache.0.is_miss());
                }
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

    fn sample(&self, kind: ErrorKind, message: impl FnOnce() -> String) {
        let mut samples = self.samples.borrow_mut();
        let slot = &mut samples[kind_index(kind)];
        if slot.is_none() {
            *slot = Some(message());
        }
    }

    /// The first message of each error kind.
    pub(crate) fn take_samples(&self) -> Vec<(ErrorKind, String)> {
        self.samples
            .borrow_mut()
            .iter_mut()
            .zip(ERROR_KINDS)
            .filter_map(|(s, k)| s.take().map(|s| (k, s)))
            .collect()
    }

    /// The catalogue objects drawn, for the worker's summary.
    pub(crate) fn take_objects(&self) -> Option<super::ObjectDraws> {
        self.objects.borrow_mut().take()
    }

    /// The measured window's breakdowns, for the worker's summary.
    pub(crate) fn take_breakdowns(&self) -> Breakdowns {
        self.tally.take()
    }

    /// The interval just ended (the measured window's requests, and the warm-up's if any),
    /// with `waiting` requests waiting for a lane beside those in flight; a new one begins.
    pub(crate) fn take_interval(&self, waiting: u64) -> (IntervalStats, Option<IntervalStats>) {
        let (mut stats, warmup) = self.books.take();
        stats.in_flight = self.books.in_flight() + waiting;
        (stats, warmup)
    }

    /// The worker stops waiting: the `never_sent` requests still waiting were never sent,
    /// requests taken up and not ended are unfinished. Returns how many requests fell due and
    /// did not complete (the backlog).
    pub(crate) fn close(&self, never_sent: Vec<Batch>) -> u64 {
        let mut backlog = 0;
        for batch in never_sent {
            self.books.unsent(&batch.job(), batch.count);
            backlog += batch.count;
        }
        backlog + self.books.close()
    }
}

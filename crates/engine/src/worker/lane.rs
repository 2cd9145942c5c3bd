//! One lane's life: a connection (or an HTTP/2 stream on another lane's connection) from its
//! connect through its requests to its end, as a state machine without I/O that both drivers
//! step, as quinn-proto's `Connection` takes events in and hands actions out.
//!
//! A driver tells the lane what happened ([`Lane::connected`], [`Lane::refused`],
//! [`Lane::ended`], [`Lane::handed`], [`Lane::closed_idle`], and [`Lane::poll`] when its
//! [`Lane::deadline`] passes) and does what the lane answers ([`Act`]): connect, send a
//! request, wait idle, sleep, or let the lane go. What the load model decides (which request,
//! whether to reconnect or back off) the lane asks the [`Model`](crate::model::Model); what a
//! request's end means for the run the [`Recorder`](crate::ledger::Recorder) records. So
//! connect, back-off, request timeout and the lane's end are written once, for every driver
//! and every model.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::shared::Core;
use crate::failure::Failure;
use crate::job::Job;
use crate::ledger::{Ended, Flow};
use crate::model::{Begin, Refused, Take};
use crate::response::Response;
use crate::workload::Drawn;

/// After a failed connect, a closed-loop lane waits this long before the next, so that a
/// dead server is not spun on.
pub(crate) const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// Where a lane is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Phase {
    /// Waits until then to connect again (after a failed connect).
    Backoff(Instant),
    /// A connect is under way since `since`, for `job` (closed loop) or for whatever waits
    /// once it is made (open loop).
    Connecting { job: Option<Job>, since: Instant },
    /// A request is out since `start`; `last` when it is its connection's last.
    Exchange {
        job: Job,
        start: Instant,
        last: bool,
    },
    /// Connected, nothing to send, since then (open loop).
    Idle(Instant),
    /// Done, or not started.
    Done,
}

/// What a driver does for a lane.
#[derive(Debug)]
pub(crate) enum Act {
    /// Drop its connection, if it has one, and connect.
    Connect,
    /// Send this request on its connection.
    Send(Drawn),
    /// Wait for a request ([`Lane::handed`]), noticing a close ([`Lane::closed_idle`]).
    Idle,
    /// Drop its connection, if it has one, and wait until its deadline ([`Lane::poll`]).
    Sleep,
    /// Drop its connection: the lane is done.
    Done,
    /// Nothing now.
    Nothing,
}

/// What crossed the connection in an exchange, beside its result.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Exchanged {
    /// Body bytes received, whether the response completed or not.
    pub(crate) received: u64,
    /// Request body bytes that reached the connection.
    pub(crate) written: u64,
    /// The connection outlives a failure of this exchange (an HTTP/2 stream's, or a request
    /// that was never written).
    pub(crate) survives: bool,
    /// When the response began to arrive, if a read left it incomplete.
    pub(crate) first_byte: Option<Instant>,
    /// Bytes read off the connection since the last exchange ended (heads and framing).
    pub(crate) wire: u64,
}

/// A count of the requests sent on a connection: a lane's own (`u32`, a connection of one
/// lane: the epoll loop's slots stay small), or one its streams share (`Rc<Cell<u32>>`, the
/// tokio driver's, whose HTTP/2 and HTTP/3 connections carry several lanes).
pub(crate) trait Served: Clone + std::fmt::Debug {
    /// A new connection's: none yet.
    fn fresh() -> Self;
    fn get(&self) -> u32;
    fn add_one(&mut self);
}

impl Served for u32 {
    fn fresh() -> Self {
        0
    }
    fn get(&self) -> u32 {
        *self
    }
    fn add_one(&mut self) {
        *self += 1;
    }
}

impl Served for Rc<Cell<u32>> {
    fn fresh() -> Self {
        Rc::new(Cell::new(0))
    }
    fn get(&self) -> u32 {
        Cell::get(self)
    }
    fn add_one(&mut self) {
        self.set(Cell::get(self) + 1);
    }
}

/// One lane (see the module's docs).
#[derive(Debug)]
pub(crate) struct Lane<S: Served = u32> {
    phase: Phase,
    /// Requests sent on its current connection, by every lane on it (an HTTP/2 or HTTP/3
    /// connection's streams share one count, so `--requests-per-connection` is per
    /// connection, not per stream).
    served: S,
    /// It rides another lane's connection (an HTTP/2 stream beside the first): it never
    /// connects, and is done when that connection is.
    rider: bool,
    /// Started and not yet done: the model counts it among its lanes.
    live: bool,
}

impl<S: Served> Lane<S> {
    /// A lane that makes its own connections.
    pub(crate) fn new() -> Lane<S> {
        Lane {
            phase: Phase::Done,
            served: S::fresh(),
            rider: false,
            live: false,
        }
    }

    /// A lane on a connection another lane made (an HTTP/2 stream), sharing its count of
    /// requests ([`Lane::connection_count`]).
    pub(crate) fn rider(served: S) -> Lane<S> {
        Lane {
            rider: true,
            served,
            ..Lane::new()
        }
    }

    /// Its connection's count of requests, for the lanes that ride it.
    pub(crate) fn connection_count(&self) -> S {
        self.served.clone()
    }

    /// Its connection has carried `--requests-per-connection` requests: no lane sends
    /// another on it.
    fn spent(&self, core: &Core) -> bool {
        core.plan
            .requests_per_connection
            .is_some_and(|n| self.served.get() >= n)
    }

    pub(crate) fn phase(&self) -> &Phase {
        &self.phase
    }

    /// When [`Lane::poll`] has something to do: a back-off's end, a connect's or a request's
    /// deadline.
    pub(crate) fn deadline(&self, core: &Core) -> Option<Instant> {
        let plan = &core.plan;
        match self.phase {
            Phase::Backoff(until) => Some(until),
            Phase::Connecting { job, since } => {
                let connect = since + plan.connect_timeout;
                Some(job.map_or(connect, |job| job.deadline(plan.timeout).min(connect)))
            }
            Phase::Exchange { job, .. } => Some(job.deadline(plan.timeout)),
            Phase::Idle(_) | Phase::Done => None,
        }
    }

    /// The lane starts: a lane of its own connects (with the closed loop's next request, or
    /// for what waits), a rider takes its first request.
    pub(crate) fn start(&mut self, core: &Core, now: Instant) -> Act {
        if self.rider {
            return self.next(core, now);
        }
        self.live = true;
        match core.model.begin(now, core.stopping(), core.books()) {
            Begin::Connect(job) => self.connect(job, now),
            Begin::Done => self.done(core),
        }
    }

    fn connect(&mut self, job: Option<Job>, now: Instant) -> Act {
        self.phase = Phase::Connecting { job, since: now };
        Act::Connect
    }

    /// Leaves the phase it is in for `next`; a connect under way is over, made or not.
    fn enter(&mut self, core: &Core, next: Phase) {
        if let Phase::Connecting { .. } = self.phase {
            core.model.connect_done();
        }
        self.phase = next;
    }

    /// An idle connection that never carried a request is closing: counted (a proxy may
    /// count it as a request error). A connection of several streams counts nowhere here:
    /// its other lanes may have used it.
    fn count_unused(&self, core: &Core, now: Instant) {
        if matches!(self.phase, Phase::Idle(_))
            && self.served.get() == 0
            && !self.rider
            && core.plan.protocol.streams() == 1
        {
            core.recorder.unused_close(now);
        }
    }

    /// Its connection is made: the TCP connect took `tcp`, the TLS handshake `tls`.
    pub(crate) fn connected(
        &mut self,
        core: &Core,
        now: Instant,
        (tcp, tls): (Duration, Option<Duration>),
    ) -> Act {
        let Phase::Connecting { job, .. } = self.phase else {
            return Act::Nothing;
        };
        self.enter(core, Phase::Idle(now));
        core.recorder.connected(now, tcp, tls);
        // A new connection, a new count (riders of the old one keep theirs).
        self.served = S::fresh();
        match job {
            Some(job) => self.send(core, job, now),
            None => self.next(core, now),
        }
    }

    /// Its connect failed with `failure`: a request fails with it (its own, or the one
    /// waiting longest), and the lane backs off or is done.
    pub(crate) fn refused(&mut self, core: &Core, now: Instant, failure: Failure) -> Act {
        let Phase::Connecting { job, .. } = self.phase else {
            return Act::Nothing;
        };
        self.enter(core, Phase::Done);
        core.expire_waiting(now);
        let (failed, next) = core.model.refused(job, now, core.books());
        if let Some(job) = failed {
            core.recorder.fail_unsent(failure, &job);
        }
        match next {
            Refused::Backoff => self.back_off(now),
            Refused::Done => self.done(core),
        }
    }

    fn back_off(&mut self, now: Instant) -> Act {
        self.phase = Phase::Backoff(now + CONNECT_BACKOFF);
        Act::Sleep
    }

    /// The next request for its connection, or what it does without one.
    fn next(&mut self, core: &Core, now: Instant) -> Act {
        core.expire_waiting(now);
        // Another stream took its connection's last request: as if it closed.
        if self.spent(core) {
            return self.lost(core, now);
        }
        // The request waiting longest is past its deadline in a second the clock has not
        // opened yet (it waits for the clock's step, which files its timeout in its own
        // second): the lane waits too. Sent now, it would fail at once, be filed early, and
        // take the next such one in a recursion as deep as the queue.
        if core.model.overdue(now, core.plan.timeout) {
            self.phase = Phase::Idle(now);
            return Act::Idle;
        }
        match core.model.take(now, core.stopping(), core.books()) {
            Take::Job(job) => self.send(core, job, now),
            Take::Idle => {
                self.phase = Phase::Idle(now);
                Act::Idle
            }
            Take::Done => self.done(core),
        }
    }

    /// Sends `job`: its request is drawn (none left: the attack is over) and goes out now.
    fn send(&mut self, core: &Core, mut job: Job, now: Instant) -> Act {
        let Some(drawn) = core.workload.draw() else {
            core.recorder.withdraw(&job);
            core.begin_stop();
            return self.done(core);
        };
        job.tags = drawn.tags;
        job.watched = drawn.watched;
        core.recorder.begin(&job, now, drawn.object);
        self.served.add_one();
        let last = self.spent(core);
        self.phase = Phase::Exchange {
            job,
            start: now,
            last,
        };
        if now >= job.deadline(core.plan.timeout) {
            // Its time ran out before a lane could take it: it fails, never written, and
            // the connection is as it was.
            let untouched = Exchanged {
                survives: true,
                ..Exchanged::default()
            };
            return self.ended(core, now, None, untouched, true);
        }
        Act::Send(drawn)
    }

    /// Its exchange ended at `now` with `result` (`None`: its deadline passed), `exchanged`
    /// crossing the connection; `reusable` when the connection can carry another request.
    pub(crate) fn ended(
        &mut self,
        core: &Core,
        now: Instant,
        result: Option<Result<Response, Failure>>,
        exchanged: Exchanged,
        reusable: bool,
    ) -> Act {
        let Phase::Exchange { job, start, last } = self.phase else {
            return Act::Nothing;
        };
        let ended = Ended {
            start,
            done: now,
            received: exchanged.received,
            written: exchanged.written,
            last_on_connection: last,
            survives: exchanged.survives,
            first_byte: exchanged.first_byte,
            wire: exchanged.wire,
        };
        let flow = core.recorder.end(&job, result, ended);
        if flow == Flow::KeepAlive && reusable {
            self.next(core, now)
        } else {
            self.lost(core, now)
        }
    }

    /// A request handed to it while idle (taken up by the dispatch); `open` is false when its
    /// connection closed meanwhile, and the request goes back.
    pub(crate) fn handed(&mut self, core: &Core, job: Job, now: Instant, open: bool) -> Act {
        if open && !self.spent(core) {
            return self.send(core, job, now);
        }
        match core.model.hand_back(job, core.books()) {
            Some(job) if !self.rider => self.connect(Some(job), now),
            Some(job) => {
                core.recorder.withdraw(&job);
                self.done(core)
            }
            None => self.lost(core, now),
        }
    }

    /// The server closed its idle connection.
    pub(crate) fn closed_idle(&mut self, core: &Core, now: Instant) -> Act {
        self.lost(core, now)
    }

    /// The attack is over for it (an idle lane at the schedule's end, or one reaped).
    pub(crate) fn stop(&mut self, core: &Core) -> Act {
        self.done(core)
    }

    /// Acts on the time: a back-off over, a connect or a request past its deadline.
    pub(crate) fn poll(&mut self, core: &Core, now: Instant) -> Act {
        let plan = &core.plan;
        match self.phase {
            Phase::Backoff(until) if now >= until => self.start(core, now),
            Phase::Connecting { job: Some(job), .. } if now >= job.deadline(plan.timeout) => {
                // The request's time ran out before its connection was made.
                self.enter(core, Phase::Done);
                core.recorder.fail_unconnected(&job);
                self.back_off(now)
            }
            Phase::Connecting { since, .. } if now >= since + plan.connect_timeout => {
                self.refused(core, now, core.connect_timed_out())
            }
            Phase::Exchange { job, .. } if now >= job.deadline(plan.timeout) => {
                self.ended(core, now, None, Exchanged::default(), false)
            }
            _ => Act::Nothing,
        }
    }

    /// Its connection is gone: a lane of its own connects again or is done, as the model
    /// says; a rider is done (the lane that made the connection makes the next).
    fn lost(&mut self, core: &Core, now: Instant) -> Act {
        if self.rider {
            return self.done(core);
        }
        self.count_unused(core, now);
        match core.model.lost(now, core.stopping(), core.books()) {
            Begin::Connect(job) => {
                self.enter(core, Phase::Done);
                self.connect(job, now)
            }
            Begin::Done => self.done(core),
        }
    }

    fn done(&mut self, core: &Core) -> Act {
        self.count_unused(core, Instant::now());
        self.enter(core, Phase::Done);
        if std::mem::take(&mut self.live) {
            core.model.lane_done();
        }
        Act::Done
    }
}

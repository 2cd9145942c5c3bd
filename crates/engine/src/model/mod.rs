//! The load model: when requests fall due, and what a lane (a connection, or an HTTP/2
//! stream) does after each event of its life. The one type the drivers and the lane's state
//! machine ask; neither names a model.
//!
//! - **Closed loop** ([`budget`]): every lane connects with a request taken up before the
//!   connect, sends the next when the previous ends, and after losing its connection connects
//!   again with the next; a failed connect fails its request and backs off.
//! - **Open loop** ([`open`]): requests fall due on a schedule; a due request goes to an idle
//!   lane or waits in a queue ([`backlog`]: a count, not the requests), lanes are opened on
//!   demand up to a cap, and a lane whose connection is gone is done (another is opened if
//!   requests wait); a failed connect fails the request waiting longest.
//!
//! What the ledger sees of it (a request falling due, taken up, handed back, waiting) is
//! entered in the [`Books`] here; how a request ends is the recorder's.

mod backlog;
mod budget;
mod open;

use std::time::{Duration, Instant};

use vload_timer::nanos_between;

use crate::job::Job;
use crate::ledger::Books;
use crate::schedule::Schedule;
pub(crate) use backlog::Batch;
use budget::Budget;
use open::Open;
pub(crate) use open::{BATCH, Due};

/// A worker's load model (see the module's docs).
pub(crate) struct Model {
    kind: Kind,
}

enum Kind {
    Closed(Budget),
    Open(Box<Open>),
}

/// What a lane about to connect connects for.
#[derive(Debug)]
pub(crate) enum Begin {
    /// Connect, for this request (closed loop) or for whatever waits once it is made.
    Connect(Option<Job>),
    /// Nothing more for this lane.
    Done,
}

/// What a lane with a usable connection and nothing to send does.
#[derive(Debug)]
pub(crate) enum Take {
    /// Sends this request, taken up now.
    Job(Job),
    /// Waits for one to fall due (the open loop, its schedule still running).
    Idle,
    /// Nothing more for this lane.
    Done,
}

/// What a lane whose connect failed does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Waits a little and connects again (a dead server is not spun on).
    Backoff,
    /// Nothing more for this lane.
    Done,
}

/// How a worker's model is set up.
pub(crate) struct ModelSetup {
    /// The open loop's share of the schedule; `None` for a closed loop.
    pub(crate) schedule: Option<Schedule>,
    /// When the window ends (a time-bounded attack), and when the measured window begins.
    pub(crate) window: (Option<Instant>, Instant),
    /// This worker's share of `--requests`.
    pub(crate) requests: Option<u64>,
    /// The open loop's connection cap for this worker, and the run's worker count.
    pub(crate) cap: (u32, u32),
    /// The rate plan's stages are recorded each on its own.
    pub(crate) staged: bool,
}

impl Model {
    pub(crate) fn new(setup: ModelSetup) -> Model {
        let kind = match setup.schedule {
            Some(schedule) => Kind::Open(Box::new(Open::new(
                schedule,
                setup.window,
                setup.requests,
                (setup.cap.0.max(1), setup.cap.1),
                setup.staged,
            ))),
            None => Kind::Closed(Budget::new(setup.requests)),
        };
        Model { kind }
    }

    fn open(&self) -> Option<&Open> {
        match &self.kind {
            Kind::Open(open) => Some(open),
            Kind::Closed(_) => None,
        }
    }

    /// The lanes a driver opens at the start, of the `connections` it was given: all of them
    /// in a closed loop; none in an open loop, which opens its own as requests wait.
    pub(crate) fn lanes_at_start(&self, connections: u32) -> u32 {
        match self.kind {
            Kind::Closed(_) => connections,
            Kind::Open(_) => 0,
        }
    }

    /// A lane that is to connect: in a closed loop with its next request, taken up now
    /// (before the connect, so no connection opens for a request that is not there); in an
    /// open loop for whatever waits once it is made.
    pub(crate) fn begin(&self, now: Instant, stopping: bool, books: &Books) -> Begin {
        match &self.kind {
            Kind::Closed(budget) => match budget.next(stopping, now, books.is_warmup(now)) {
                Some(job) => {
                    books.take_up_closed(&job);
                    Begin::Connect(Some(job))
                }
                None => Begin::Done,
            },
            Kind::Open(_) => Begin::Connect(None),
        }
    }

    /// The next request for a lane with a usable connection, taken up at `now`: the closed
    /// loop's next, or the open loop's request waiting longest (its wait counted); or what
    /// the lane does without one. Requests that waited past their deadline must have been
    /// taken out first ([`Model::take_expired`]).
    pub(crate) fn take(&self, now: Instant, stopping: bool, books: &Books) -> Take {
        let open = match &self.kind {
            Kind::Closed(budget) => {
                return match budget.next(stopping, now, books.is_warmup(now)) {
                    Some(job) => {
                        books.take_up_closed(&job);
                        Take::Job(job)
                    }
                    None => Take::Done,
                };
            }
            Kind::Open(open) => open,
        };
        match take_waiting(open, now, books) {
            Some(job) => Take::Job(job),
            None if open.dispatch_done() => Take::Done,
            None => Take::Idle,
        }
    }

    /// A lane's connect failed; it was made for `job` (closed loop). Returns the request that
    /// fails with it (closed loop: its own; open loop: the one waiting longest, taken up
    /// now) and what the lane does next.
    pub(crate) fn refused(
        &self,
        job: Option<Job>,
        now: Instant,
        books: &Books,
    ) -> (Option<Job>, Refused) {
        match &self.kind {
            Kind::Closed(_) => (job, Refused::Backoff),
            Kind::Open(open) => (take_waiting(open, now, books), Refused::Done),
        }
    }

    /// A lane's connection is gone (closed by the server, broken, or spent): it connects
    /// again with the next request (closed loop), or is done (open loop: another is opened
    /// if requests wait).
    pub(crate) fn lost(&self, now: Instant, stopping: bool, books: &Books) -> Begin {
        match self.kind {
            Kind::Closed(_) => self.begin(now, stopping, books),
            Kind::Open(_) => Begin::Done,
        }
    }

    /// A request a lane took up and could not send (its connection closed first): the
    /// closed loop gives it back to the lane, for its next connection; the open loop puts it
    /// back in front of the queue.
    pub(crate) fn hand_back(&self, job: Job, books: &Books) -> Option<Job> {
        match &self.kind {
            Kind::Closed(_) => Some(job),
            Kind::Open(open) => {
                books.put_back(&job);
                open.requeue(job);
                None
            }
        }
    }

    /// Sends every request due by `now` to idle lanes (`hand` gives one to a lane and returns
    /// `None`, or returns it when no lane is idle) or to the queue; returns when the next
    /// falls due, or that nothing more will ([`Due::Over`] at once in a closed loop).
    pub(crate) fn dispatch(
        &self,
        (now, timeout): (Instant, Duration),
        stopping: bool,
        books: &Books,
        hand: &mut dyn FnMut(Job) -> Option<Job>,
    ) -> Due {
        match self.open() {
            Some(open) => open.dispatch((now, timeout), stopping, books, hand),
            None => Due::Over,
        }
    }

    /// How many lanes to open now, each to carry `streams` requests at once: while requests
    /// wait for more than the lanes being made will take, and the cap allows (open loop).
    pub(crate) fn to_open(&self, streams: u32) -> u32 {
        self.open().map_or(0, |open| open.to_open(streams))
    }

    /// A lane opened by [`Model::to_open`] is connected, or failed to.
    pub(crate) fn connect_done(&self) {
        if let Some(open) = self.open() {
            open.connected();
        }
    }

    /// A lane opened by [`Model::to_open`] is done.
    pub(crate) fn lane_done(&self) {
        if let Some(open) = self.open() {
            open.closed();
        }
    }

    /// The attack is stopping: nothing more is dispatched.
    pub(crate) fn stop(&self) {
        if let Some(open) = self.open() {
            open.stop();
        }
    }

    /// Ends the schedule; true when it was still running (the attack's sending ends now).
    pub(crate) fn finish(&self) -> bool {
        self.open().is_some_and(Open::finish)
    }

    /// The window ends at `at` (no later than planned): nothing due after it is sent.
    pub(crate) fn end_at(&self, at: Instant) {
        if let Some(open) = self.open() {
            open.end_at(at);
        }
    }

    /// True for an open loop (a schedule dispatches its requests).
    pub(crate) fn is_open(&self) -> bool {
        self.open().is_some()
    }

    /// True once nothing more will be dispatched: a lane with nothing to send is done.
    pub(crate) fn dispatch_done(&self) -> bool {
        self.open().is_none_or(Open::dispatch_done)
    }

    /// Requests waiting for a lane.
    pub(crate) fn waiting(&self) -> u64 {
        self.open().map_or(0, Open::waiting)
    }

    /// Takes out every waiting request whose deadline (`timeout` after its due time) has
    /// passed by `now`: it can no longer be answered in time.
    pub(crate) fn take_expired(&self, now: Instant, timeout: Duration) -> Vec<Batch> {
        let Some(open) = self.open() else {
            return Vec::new();
        };
        if open.oldest_due().is_none_or(|due| due + timeout > now) {
            return Vec::new();
        }
        let cutoff = now.checked_sub(timeout).unwrap_or(now);
        open.take_due_before(cutoff + Duration::from_nanos(1))
    }

    /// True when the request waiting longest is past its deadline at `now` (its timeout not
    /// yet filed: the clock has not opened its second).
    pub(crate) fn overdue(&self, now: Instant, timeout: Duration) -> bool {
        self.open()
            .and_then(Open::oldest_due)
            .is_some_and(|due| due + timeout <= now)
    }

    /// Takes every waiting request (the worker stops: they were never sent).
    pub(crate) fn take_all_pending(&self) -> Vec<Batch> {
        self.open().map_or_else(Vec::new, Open::take_all_pending)
    }

    /// Where the schedule ended the window, once it has (open loop).
    pub(crate) fn window_end(&self) -> Option<Instant> {
        self.open().and_then(Open::window_end)
    }

    /// The most lanes open at once (open loop).
    pub(crate) fn peak(&self) -> Option<u32> {
        self.open().map(Open::peak)
    }

    /// The achieved gaps sampled (Poisson only): gaps seen, and the sample.
    pub(crate) fn take_arrivals(&self) -> Option<(u64, Vec<f64>)> {
        self.open().and_then(Open::take_arrivals)
    }
}

/// The open loop's request waiting longest, taken up at `now`, its wait counted.
fn take_waiting(open: &Open, now: Instant, books: &Books) -> Option<Job> {
    let job = open.pop_pending()?;
    books.take_up(&job);
    if job.queued {
        let mut part = books.of(&job);
        part.queued += 1;
        part.queue_wait.record(nanos_between(job.intended, now));
    }
    Some(job)
}

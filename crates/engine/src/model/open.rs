//! The open loop: requests fall due on a schedule whatever the responses do; an idle lane
//! takes the next one; when none is idle the request waits in the queue, and the wait counts.
//! Lanes are opened on demand, a few at a time, up to the cap. Which lanes are idle is the
//! driver's to keep (it hands due requests to them through [`Open::dispatch`]).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use vload_timer::nanos_between;

use super::backlog::{Backlog, Batch};
use crate::arrivals::Reservoir;
use crate::job::Job;
use crate::ledger::Books;
use crate::schedule::Schedule;

/// A dispatch later than this counts as a late send.
pub(crate) const LATE_SEND: Duration = Duration::from_millis(1);
/// Connections being made at once, at most. A momentary queue (a server pause, a preempted
/// thread) would otherwise open a connection per waiting request in one burst of connects
/// that stalls the worker thread for milliseconds, which makes the queue longer: the burst
/// fed itself, and dispatch lag p99 at 60,000-100,000/s was milliseconds instead of tens of
/// microseconds. The queue drains through the connections there are meanwhile, and its wait
/// is counted.
const MAX_CONNECTING: u32 = 4;
/// The timer may wake this much after a request's due time, so that one wake-up sends a few
/// requests instead of one each (dispatch lag stays well under 200 µs).
pub(crate) const BATCH: Duration = Duration::from_micros(20);

/// The open loop's state: the schedule, the requests waiting for a connection, the lanes
/// there are.
pub(super) struct Open {
    queue: RefCell<Backlog>,
    /// The arrival sample, once the schedule is done.
    arrivals: RefCell<Option<Reservoir>>,
    /// The schedule, until it is done.
    dispatch: RefCell<Option<Dispatch>>,
    dispatch_done: Cell<bool>,
    max_connections: u32,
    connections: Cell<u32>,
    /// The most connections there were at once.
    peak: Cell<u32>,
    connecting: Cell<u32>,
    /// The rate plan has stages, each recorded on its own.
    staged: bool,
    /// Where the measured window begins: requests due before it are the warm-up's.
    measure_from: Instant,
    /// Where the schedule ended the window, once it has.
    window_end: Cell<Option<Instant>>,
}

/// The schedule and what is left of it.
struct Dispatch {
    schedule: Schedule,
    /// The schedule's position: requests dispatched or skipped so far.
    position: u64,
    end: Option<Instant>,
    remaining: Option<u64>,
    /// Poisson: the achieved gaps, sampled; sends from `measure_from` on are kept.
    arrivals: Option<Reservoir>,
}

/// What a round of dispatching left.
pub(crate) enum Due {
    /// The next request falls due then.
    At(Instant),
    /// The schedule is done.
    Over,
}

impl Open {
    pub(super) fn new(
        schedule: Schedule,
        (end, measure_from): (Option<Instant>, Instant),
        remaining: Option<u64>,
        (max_connections, workers): (u32, u32),
        staged: bool,
    ) -> Self {
        let arrivals = schedule.rescaled(measure_from).map(|_| {
            Reservoir::new(
                vload_schema::MAX_ARRIVAL_SAMPLE / workers.max(1) as usize,
                u64::from(workers),
            )
        });
        Open {
            queue: RefCell::new(Backlog::default()),
            arrivals: RefCell::new(None),
            dispatch: RefCell::new(Some(Dispatch {
                schedule,
                position: 0,
                end,
                remaining,
                arrivals,
            })),
            dispatch_done: Cell::new(false),
            max_connections,
            connections: Cell::new(0),
            peak: Cell::new(0),
            connecting: Cell::new(0),
            staged,
            measure_from,
            window_end: Cell::new(None),
        }
    }

    /// Where the schedule ended the window: the plan's end, or where the first request of
    /// a count that was not sent would have fallen due; `None` if it was stopped.
    pub(super) fn window_end(&self) -> Option<Instant> {
        self.window_end.get()
    }

    /// The achieved gaps sampled (Poisson only): gaps seen, and the sample.
    pub(super) fn take_arrivals(&self) -> Option<(u64, Vec<f64>)> {
        let from_dispatch = self
            .dispatch
            .borrow_mut()
            .as_mut()
            .and_then(|d| d.arrivals.take());
        from_dispatch
            .or_else(|| self.arrivals.borrow_mut().take())
            .map(Reservoir::into_parts)
    }

    /// The window ends at `at` if that is earlier than planned: what falls due after it is
    /// not sent, what fell due before it and is not out yet is counted as never sent.
    pub(super) fn end_at(&self, at: Instant) {
        if let Some(d) = self.dispatch.borrow_mut().as_mut() {
            d.end = Some(d.end.map_or(at, |end| end.min(at)));
        }
    }

    /// The attack is stopping: no more dispatches (the driver closes its idle lanes).
    pub(super) fn stop(&self) {
        self.dispatch_done.set(true);
    }

    /// Requests waiting for a connection.
    pub(super) fn waiting(&self) -> u64 {
        self.queue.borrow().len()
    }

    /// A job whose connection closed before sending it goes back in front of the queue.
    pub(super) fn requeue(&self, job: Job) {
        let job = Job {
            queued: true,
            ..job
        };
        self.queue.borrow_mut().push_front(job);
    }

    /// The request waiting longest for a connection, out of the queue (the caller takes it
    /// up, or fails it if it waited past its deadline).
    pub(super) fn pop_pending(&self) -> Option<Job> {
        self.queue.borrow_mut().pop(self.measure_from)
    }

    /// When the request waiting longest fell due.
    pub(super) fn oldest_due(&self) -> Option<Instant> {
        self.queue.borrow().oldest_due()
    }

    /// Takes out of the queue every request that fell due before `cutoff`, in batches of
    /// one window and stage.
    pub(super) fn take_due_before(&self, cutoff: Instant) -> Vec<Batch> {
        self.queue
            .borrow_mut()
            .take_before(cutoff, self.measure_from)
    }

    /// Takes every request out of the queue, in batches of one window and stage.
    pub(super) fn take_all_pending(&self) -> Vec<Batch> {
        self.queue.borrow_mut().take_all(self.measure_from)
    }

    /// True once nothing more will be dispatched (the schedule is over, or the attack is
    /// stopping): a connection with nothing waiting for it closes.
    pub(super) fn dispatch_done(&self) -> bool {
        self.dispatch_done.get()
    }

    /// Sends every request due by `now` to idle lanes or the queue; returns when the next
    /// falls due, or that the schedule is over. After the window's end, requests still due in
    /// it are counted as never sent. `hand` gives a due request to an idle lane (which takes
    /// it up), or returns it when none is idle, and it waits in the queue.
    pub(super) fn dispatch(
        &self,
        (now, timeout): (Instant, Duration),
        stopping: bool,
        books: &Books,
        hand: &mut dyn FnMut(Job) -> Option<Job>,
    ) -> Due {
        let mut guard = self.dispatch.borrow_mut();
        let Some(d) = guard.as_mut() else {
            return Due::Over;
        };
        if let Some(end) = d.end
            && now >= end
        {
            d.count_unsent(end, now, books, self.measure_from);
        }
        loop {
            let due = d.schedule.due();
            if stopping {
                return Due::Over;
            }
            // The window ends where the plan says: at its end, or (a count of requests)
            // where the first request not sent would have fallen due.
            if d.remaining == Some(0) {
                self.window_end.set(Some(due));
                return Due::Over;
            }
            if let Some(end) = d.end
                && due >= end
            {
                self.window_end.set(Some(end));
                return Due::Over;
            }
            if due > now {
                return Due::At(due);
            }
            // Due in a second the worker's clock has not opened yet (a busy sender reached
            // it before its tick): it waits for the tick, so that it counts in the second it
            // fell due in (at 300,000/s, 2% of a second's requests once counted in the one
            // before).
            if due >= books.second_ends() {
                return Due::At(due);
            }
            if let Some(arrivals) = &mut d.arrivals
                && let Some(position) = d.schedule.rescaled(now)
            {
                arrivals.send(position, now >= self.measure_from);
            }
            let job = Job::due(due, d.schedule.stage(), books.is_warmup(due));
            if now >= job.deadline(timeout) {
                // Due so long ago that its deadline passed before the client got to it (a
                // freeze longer than --timeout): never sent, in the second it fell due in.
                books.never_sent(job.warmup, job.stage, 1);
            } else {
                self.dispatch_one(job, now, books, hand, d);
            }
            d.remaining = d.remaining.map(|n| n - 1);
            d.schedule.advance();
            d.position += 1;
        }
    }

    /// Ends the schedule; true when it was still running (the attack's sending ends now).
    pub(super) fn finish(&self) -> bool {
        let Some(dispatch) = self.dispatch.borrow_mut().take() else {
            return false;
        };
        *self.arrivals.borrow_mut() = dispatch.arrivals;
        self.dispatch_done.set(true);
        true
    }

    /// Counts a due request and hands it to an idle lane through `hand` (taken up there),
    /// or queues it at the schedule's position in `d`.
    fn dispatch_one(
        &self,
        job: Job,
        now: Instant,
        books: &Books,
        hand: &mut dyn FnMut(Job) -> Option<Job>,
        d: &Dispatch,
    ) {
        {
            let mut part = books.of(&job);
            part.intended += 1;
            let lag = nanos_between(job.intended, now);
            part.dispatch_lag.record(lag);
            let late = lag > LATE_SEND.as_nanos() as u64;
            part.late_sends += u64::from(late);
            if self.staged {
                let stage = part.stage(job.stage);
                stage.intended += 1;
                stage.late_sends += u64::from(late);
            }
        }
        match hand(job) {
            None => books.take_up(&job),
            Some(_) => {
                // Waiting for a connection being made is the open loop's normal growth;
                // waiting because the cap is reached is a limit the user set.
                if self.connections.get() >= self.max_connections {
                    books.of(&job).capped += 1;
                }
                self.queue.borrow_mut().push(&d.schedule, d.position);
            }
        }
    }

    /// How many connections to open now, counted as connecting at once: while requests wait
    /// for more than the connections being made will take (`streams` each), and the cap
    /// allows.
    pub(super) fn to_open(&self, streams: u32) -> u32 {
        let mut opened = 0;
        while self.queue.borrow().len() > u64::from(self.connecting.get() * streams)
            && self.connections.get() < self.max_connections
            && self.connecting.get() < MAX_CONNECTING
        {
            self.connections.set(self.connections.get() + 1);
            self.peak.set(self.peak.get().max(self.connections.get()));
            self.connecting.set(self.connecting.get() + 1);
            opened += 1;
        }
        opened
    }

    /// A connection being made is made, or failed (the caller then fails the request
    /// waiting longest with it).
    pub(super) fn connected(&self) {
        self.connecting.set(self.connecting.get() - 1);
    }

    /// The most connections there were at once.
    pub(super) fn peak(&self) -> u32 {
        self.peak.get()
    }

    /// A connection has ended.
    pub(super) fn closed(&self) {
        self.connections.set(self.connections.get() - 1);
    }
}

impl Dispatch {
    /// The window is over: a request due in it that is not out yet could only go out after
    /// it, over 1 ms late. It is counted as due and never sent (a frozen client), whichever
    /// task notices the end first, in its own window and stage.
    ///
    /// Only what fell due in the second the books have open is counted here: a worker that
    /// wakes from a freeze across the window's end steps its clock second by second, and
    /// each second's due requests are counted in it (they once all went into the second
    /// the freeze began).
    fn count_unsent(&mut self, end: Instant, now: Instant, books: &Books, measure_from: Instant) {
        let cutoff = now
            .checked_sub(LATE_SEND)
            .unwrap_or(now)
            .min(end)
            .min(books.second_ends());
        for (until, warmup) in [(cutoff.min(measure_from), true), (cutoff, false)] {
            let by_stage = self
                .schedule
                .skip_before(until, self.remaining.unwrap_or(u64::MAX));
            for (stage, unsent) in by_stage {
                self.remaining = self.remaining.map(|n| n - unsent);
                self.position += unsent;
                books.never_sent(warmup, stage, unsent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rate::{Curve, RatePlan};

    fn pool(max_connections: u32, waiting: usize) -> Open {
        let t0 = Instant::now();
        let curve = Arc::new(Curve::new(&RatePlan::constant(1000.0), Duration::ZERO));
        let schedule = Schedule::paced(t0, curve, 0, 1);
        let open = Open::new(schedule, (None, t0), None, (max_connections, 1), false);
        for _ in 0..waiting {
            open.requeue(Job::closed(t0, false));
        }
        open
    }

    #[test]
    fn a_queue_opens_a_few_connections_at_a_time() {
        let open = pool(1000, 100);
        assert_eq!(
            open.to_open(1),
            MAX_CONNECTING,
            "100 waiting, not 100 connects"
        );
        assert_eq!(open.to_open(1), 0, "none more while those are being made");
        open.connected();
        assert_eq!(open.to_open(1), 1, "one made, one more");
        // While the queue does not drain (a stalled server), the growth goes on four at a
        // time up to the cap.
        let open = pool(50, 100);
        let mut rounds = 0;
        while open.to_open(1) > 0 || open.connecting.get() > 0 {
            assert!(open.connecting.get() <= MAX_CONNECTING);
            open.connected();
            rounds += 1;
        }
        assert_eq!(open.connections.get(), 50, "the cap, reached");
        assert!(rounds >= 50, "one connect each: {rounds}");
    }

    #[test]
    fn a_short_queue_or_the_cap_opens_fewer() {
        assert_eq!(pool(1000, 2).to_open(1), 2);
        assert_eq!(pool(3, 100).to_open(1), 3);
        // HTTP/2: each connection being made will take `streams` of the waiting requests.
        assert_eq!(pool(1000, 9).to_open(8), 2);
    }
}

//! A worker's books: every request that falls due is entered once and leaves by exactly one
//! door, in the window it belongs to.
//!
//! The doors are the run file's ledger (see `vload_schema::Totals`): a request falls due
//! (`intended`); it is sent, or never sent (`unsent`: the client was frozen or stopped before
//! it got to it); a sent request ends with a response or an error (`completed`), or is still
//! open when the worker stops waiting (`unfinished`). A request taken up by a connection that
//! is still being made is *held*: it counts as sent once written, once it fails trying, or,
//! if the worker stops first, as sent and unfinished.
//!
//! A request belongs to the warm-up or to the measured window by when it fell due (open loop)
//! or was taken up (closed loop), and every event of its life is entered in that window's
//! part, whenever it happens: a warm-up request answered after the warm-up is not counted in
//! the measured window, and a measured request answered after the window's end is. Events
//! that are no request's (connections made, the stall probe) go by when they happen.

use std::cell::{Cell, RefCell, RefMut};
use std::time::Instant;

use crate::record::IntervalStats;

use crate::job::Job;

/// The two windows' recorders and the requests in flight.
pub(crate) struct Books {
    measure_from: Instant,
    /// Requests of the measured window, and of the warm-up.
    measured: RefCell<IntervalStats>,
    warmup: RefCell<IntervalStats>,
    /// A rate plan's stages are recorded each on its own as well.
    staged: bool,
    /// Requests taken up and not yet ended, by window and stage.
    flights: RefCell<Vec<Flight>>,
    /// All of them, for the per-second record.
    in_flight: Cell<u64>,
    /// When the second being recorded ends (the worker's clock ships it then): a request
    /// due at or after it belongs to the next second, and waits for the clock.
    second_ends: Cell<Instant>,
}

/// The requests of one window and stage between their take-up and their end.
#[derive(Debug, Clone, Copy)]
struct Flight {
    warmup: bool,
    stage: u32,
    /// Taken up and not ended.
    open: u64,
    /// Of those, not yet written: their connection is being made.
    held: u64,
}

impl Books {
    /// The books of an attack that began at `t0`, measured from `measure_from`.
    pub(crate) fn new(t0: Instant, measure_from: Instant, staged: bool) -> Self {
        let settings = vload_schema::HistogramSettings::default();
        Books {
            second_ends: Cell::new(t0 + std::time::Duration::from_secs(1)),
            measure_from,
            measured: RefCell::new(IntervalStats::new(&settings)),
            warmup: RefCell::new(IntervalStats::new(&settings)),
            staged,
            flights: RefCell::new(Vec::new()),
            in_flight: Cell::new(0),
        }
    }

    /// When the second being recorded ends.
    #[inline]
    pub(crate) fn second_ends(&self) -> Instant {
        self.second_ends.get()
    }

    /// True when something due (or taken up) at `at` belongs to the warm-up.
    #[inline]
    pub(crate) fn is_warmup(&self, at: Instant) -> bool {
        at < self.measure_from
    }

    /// The recorder of `job`'s window.
    #[inline]
    pub(crate) fn of(&self, job: &Job) -> RefMut<'_, IntervalStats> {
        self.part(job.warmup)
    }

    /// The recorder of a window.
    #[inline]
    pub(crate) fn part(&self, warmup: bool) -> RefMut<'_, IntervalStats> {
        if warmup {
            self.warmup.borrow_mut()
        } else {
            self.measured.borrow_mut()
        }
    }

    /// The recorder for what is no request's (a connection made, a stall measured), by when
    /// it happens.
    pub(crate) fn at(&self, now: Instant) -> RefMut<'_, IntervalStats> {
        self.part(self.is_warmup(now))
    }

    /// A closed loop's request is taken up: it falls due and is held until written.
    pub(crate) fn take_up_closed(&self, job: &Job) {
        self.of(job).intended += 1;
        self.take_up(job);
    }

    /// `job` (already counted as due) is taken up by a connection, not yet written.
    pub(crate) fn take_up(&self, job: &Job) {
        self.flight(job, |f| {
            f.open += 1;
            f.held += 1;
        });
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// A held request goes out (or fails trying): it is sent.
    pub(crate) fn send(&self, job: &Job) {
        self.flight(job, |f| f.held -= 1);
        let mut part = self.of(job);
        part.sent += 1;
        if self.staged {
            part.stage(job.stage).sent += 1;
        }
    }

    /// `bytes` of `job`'s request body reached the connection.
    pub(crate) fn wrote(&self, job: &Job, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut part = self.of(job);
        part.bytes_out += bytes;
        if self.staged {
            part.stage(job.stage).bytes_out += bytes;
        }
    }

    /// A sent request ended (its outcome is recorded by the caller).
    pub(crate) fn end(&self, job: &Job) {
        self.flight(job, |f| f.open -= 1);
        self.in_flight.set(self.in_flight.get() - 1);
    }

    /// A held request goes back to the queue (its connection closed before sending it).
    pub(crate) fn put_back(&self, job: &Job) {
        self.flight(job, |f| {
            f.open -= 1;
            f.held -= 1;
        });
        self.in_flight.set(self.in_flight.get() - 1);
    }

    /// A held request will not be sent after all (no target was left for it): due, never
    /// sent.
    pub(crate) fn withdraw(&self, job: &Job) {
        self.flight(job, |f| {
            f.open -= 1;
            f.held -= 1;
        });
        self.in_flight.set(self.in_flight.get() - 1);
        self.unsent(job, 1);
    }

    /// `n` requests of `job`'s window and stage fell due and were never sent.
    pub(crate) fn unsent(&self, job: &Job, n: u64) {
        let mut part = self.of(job);
        part.unsent += n;
        if self.staged {
            part.stage(job.stage).unsent += n;
        }
    }

    /// `n` requests of a window and stage fell due and will never be sent (the client got to
    /// them only after the window's end, or after their deadline): due and unsent at once.
    pub(crate) fn never_sent(&self, warmup: bool, stage: u32, n: u64) {
        let mut part = self.part(warmup);
        part.intended += n;
        part.unsent += n;
        if self.staged {
            let stage = part.stage(stage);
            stage.intended += n;
            stage.unsent += n;
        }
    }

    /// Requests taken up and not ended.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.get()
    }

    /// The worker stops waiting: what is still held counts as sent, and every request in
    /// flight as unfinished. Returns how many were unfinished.
    pub(crate) fn close(&self) -> u64 {
        let flights = std::mem::take(&mut *self.flights.borrow_mut());
        let mut unfinished = 0;
        for f in flights.iter().filter(|f| f.open > 0) {
            let mut part = self.part(f.warmup);
            part.sent += f.held;
            part.unfinished += f.open;
            if self.staged {
                let stage = part.stage(f.stage);
                stage.sent += f.held;
                stage.unfinished += f.open;
            }
            unfinished += f.open;
        }
        self.in_flight.set(0);
        unfinished
    }

    /// Takes both windows' records of the interval just ended, leaving empty ones: the
    /// measured window's, and the warm-up's when it has anything.
    pub(crate) fn take(&self) -> (IntervalStats, Option<IntervalStats>) {
        self.second_ends
            .set(self.second_ends.get() + std::time::Duration::from_secs(1));
        let measured = self.measured.borrow_mut().take();
        let mut warmup = self.warmup.borrow_mut();
        let any = warmup.intended
            + warmup.sent
            + warmup.completed
            + warmup.unsent
            + warmup.unfinished
            + warmup.connections_opened
            + warmup.stray
            + warmup.hiccup.moments.n
            > 0
            || !warmup.stages.is_empty();
        (measured, any.then(|| warmup.take()))
    }

    /// Applies `change` to the flight of `job`'s window and stage, made on first use (a
    /// worker has one or two in use at a time).
    #[inline]
    fn flight(&self, job: &Job, change: impl FnOnce(&mut Flight)) {
        let mut flights = self.flights.borrow_mut();
        let found = flights
            .iter()
            .position(|f| f.warmup == job.warmup && f.stage == job.stage);
        let at = found.unwrap_or_else(|| {
            flights.push(Flight {
                warmup: job.warmup,
                stage: job.stage,
                open: 0,
                held: 0,
            });
            flights.len() - 1
        });
        change(&mut flights[at]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn job(at: Instant, warmup: bool) -> Job {
        Job::closed(at, warmup)
    }

    #[test]
    fn every_request_leaves_by_one_door_in_its_own_window() {
        let t0 = Instant::now();
        let books = Books::new(t0, t0 + Duration::from_secs(1), false);
        let (early, late) = (job(t0, true), job(t0 + Duration::from_secs(2), false));
        for j in [&early, &late, &late, &late] {
            books.take_up_closed(j);
        }
        books.send(&early);
        books.end(&early);
        books.send(&late); // written, still in flight at the end
        books.withdraw(&late); // no target left for it
        // The third measured request is still held (its connection being made).
        assert_eq!(books.in_flight(), 2);
        assert_eq!(books.close(), 2);
        let (measured, warmup) = books.take();
        let warmup = warmup.expect("the warm-up request was counted there");
        assert_eq!((warmup.intended, warmup.sent, warmup.unfinished), (1, 1, 0));
        assert_eq!(
            (measured.intended, measured.sent, measured.unsent),
            (3, 2, 1)
        );
        assert_eq!(measured.unfinished, 2, "one written, one held");
        assert_eq!(
            measured.intended,
            measured.sent + measured.unsent,
            "intended = sent + unsent"
        );
        assert_eq!(books.take().1.map(|w| w.intended), None, "nothing new");
    }
}

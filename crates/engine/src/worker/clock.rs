//! The worker's clock, one for both drivers: interval ticks, the end of the window,
//! interrupts, the grace period after them, and the thread's idle (parked) time.
//!
//! A driver steps the clock with the time after each wake-up ([`Clock::step`]): tokio sleeps
//! until [`Clock::next_wake`] or an interrupt, the epoll loop wakes at least every sweep
//! (10 ms) anyway. What differs between drivers is how they dispatch an open loop's
//! requests, reap idle lanes and pass a stop on to them ([`Dispatcher`]).

use std::cell::Cell;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::setup::WorkerMsg;
use super::shared::Core;
use crate::observe::Told;

/// In-flight requests get this long to finish after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(1);
/// After a time-bounded window, in-flight requests get the request timeout and this.
const END_GRACE: Duration = Duration::from_millis(100);

/// What a driver does for the clock.
pub(super) trait Dispatcher {
    /// Open loop: sends what fell due by `now` (at the window's end: what fell due in it).
    fn dispatch(&mut self, now: Instant);
    /// Once a second: closes the lanes idle longer than the plan's `idle_close` at `now`
    /// ([`Core::idle_since`]; drivers keep idle lanes as a stack, the busy ones on top, so
    /// these are at its bottom) and expires requests that waited in the queue past their
    /// deadline.
    fn reap(&mut self, now: Instant);
    /// The attack is stopping: lanes that wait for a request stop waiting.
    fn stop(&mut self);
}

/// Ships interval `index` of worker `worker` to the collector (the measured window's
/// requests, and the warm-up's if any); a new one begins.
pub(super) fn ship(core: &Core, worker: u32, index: u32, to_collector: &mpsc::Sender<WorkerMsg>) {
    let (stats, warmup) = core.recorder.take_interval(core.model.waiting());
    // The collector outlives the workers; nobody listens if it is gone.
    let _ = to_collector.send(WorkerMsg::Interval {
        worker,
        index,
        stats: Box::new(stats),
        warmup: warmup.map(Box::new),
    });
}

/// The worker's clock (see the module's docs).
pub(super) struct Clock {
    /// The worker whose intervals it ships.
    worker: u32,
    /// The window's planned end, for a time-bounded attack.
    end: Option<Instant>,
    timeout: Duration,
    /// The interval open, and when it closes.
    index: u32,
    tick: Instant,
    /// When in-flight requests stop being waited for, once sending has stopped.
    grace: Option<Instant>,
    /// When the attack stopped sending, if it was stopped.
    attack_end: Option<Instant>,
    interrupt: watch::Receiver<Told>,
    /// What the run was last told.
    seen: Told,
    /// The first step reads the interrupt whatever its version: one that came before the
    /// start was already marked seen by the wait for it.
    fresh: bool,
}

impl Clock {
    pub(super) fn new(
        worker: u32,
        t0: Instant,
        end: Option<Instant>,
        timeout: Duration,
        interrupt: watch::Receiver<Told>,
    ) -> Clock {
        Clock {
            worker,
            end,
            timeout,
            index: 0,
            tick: t0 + Duration::from_secs(1),
            grace: None,
            attack_end: None,
            interrupt,
            seen: Told::Running,
            fresh: true,
        }
    }

    /// The index of the interval still open, and when the attack stopped sending (if it was
    /// stopped: its window's end, or an interrupt).
    pub(super) fn finish(&self) -> (u32, Option<Instant>) {
        (self.index, self.attack_end)
    }

    /// The latest a driver may sleep: the next tick, the window's end, the grace's end.
    pub(super) fn next_wake(&self) -> Instant {
        let mut wake = self.tick;
        if let Some(end) = self.end
            && self.grace.is_none()
        {
            wake = wake.min(end);
        }
        if let Some(grace) = self.grace {
            wake = wake.min(grace);
        }
        wake
    }

    /// Acts on the time: ships interval after interval as seconds pass, ends the window at
    /// its planned end (however late this thread noticed it), takes in an interrupt. False
    /// once the grace period is over: the driver stops waiting for what is in flight.
    pub(super) fn step(
        &mut self,
        core: &Core,
        to_collector: &mpsc::Sender<WorkerMsg>,
        now: Instant,
        driver: &mut dyn Dispatcher,
    ) -> bool {
        while now >= self.tick {
            // What fell due before the tick is counted in its second, however late this
            // thread woke: the dispatcher stops at the second's end (a constant 2,000/s once
            // recorded 1,997 and 2,003 in two seconds, #48).
            if self.grace.is_none() && core.model.is_open() {
                driver.dispatch(now);
            }
            ship(core, self.worker, self.index, to_collector);
            driver.reap(now);
            self.index += 1;
            self.tick += Duration::from_secs(1);
        }
        if let Some(end) = self.end
            && now >= end
            && self.grace.is_none()
        {
            self.end_window(core, end, driver);
        }
        self.read_interrupt(core, driver);
        self.grace.is_none_or(|grace| now < grace)
    }

    /// True while an interrupt may still come (for a driver that waits on it).
    pub(super) fn listening(&self) -> bool {
        self.seen != Told::Interrupt
    }

    /// Resolves when the run is told something (the tokio driver's wake-up for it).
    pub(super) async fn told(&mut self) {
        // `changed` marks the news seen, so `read_interrupt` must be told to read it: without
        // this, an interrupt or an ended window that woke the loop was never acted on (a
        // Ctrl-C of a run with target files, TLS or HTTP/2 waited for the planned end).
        // When the sender is gone, reading the value gives an interrupt.
        let _ = self.interrupt.changed().await;
        self.fresh = true;
    }

    fn read_interrupt(&mut self, core: &Core, driver: &mut dyn Dispatcher) {
        let stop = match self.interrupt.has_changed() {
            Err(_) => Told::Interrupt,
            Ok(changed) if changed || self.fresh => *self.interrupt.borrow_and_update(),
            Ok(_) => return,
        };
        self.fresh = false;
        if stop <= self.seen {
            return;
        }
        self.seen = stop;
        let now = Instant::now();
        match stop {
            Told::EndWindow if self.grace.is_none() => self.end_window(core, now, driver),
            Told::Interrupt => {
                self.attack_end.get_or_insert(now);
                core.begin_stop();
                driver.stop();
                let limit = now + INTERRUPT_GRACE;
                self.grace = Some(self.grace.map_or(limit, |g| g.min(limit)));
            }
            _ => {}
        }
    }

    /// Ends the window at `end` (planned, or now): the open loop dispatches what fell due in
    /// it (sending what is due before the end, counting what fell due too long ago as never
    /// sent), nothing more is sent, and in-flight requests get the request timeout.
    fn end_window(&mut self, core: &Core, end: Instant, driver: &mut dyn Dispatcher) {
        let now = Instant::now();
        self.attack_end = Some(end.min(now));
        core.end_window(end);
        driver.dispatch(now);
        core.begin_stop();
        driver.stop();
        self.grace = Some(Instant::now() + self.timeout + END_GRACE);
    }
}

thread_local! {
    /// When the thread parked (went idle) last, and the total time parked.
    static PARKED: Cell<(Option<Instant>, Duration)> = const { Cell::new((None, Duration::ZERO)) };
}

/// The thread goes idle (a runtime parks, an epoll wait begins).
pub(super) fn on_park() {
    PARKED.with(|p| p.set((Some(Instant::now()), p.get().1)));
}

/// The thread is awake again.
pub(super) fn on_unpark() {
    PARKED.with(|p| {
        if let (Some(since), total) = p.get() {
            p.set((None, total + since.elapsed()));
        }
    });
}

/// The calling thread's time parked so far.
pub(super) fn parked() -> Duration {
    PARKED.with(|p| p.get().1)
}

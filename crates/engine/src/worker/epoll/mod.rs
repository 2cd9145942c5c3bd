//! The epoll driver: plain HTTP/1.1, closed or open loop, on the worker's own epoll loop,
//! without tokio (no runtime is built for it).
//!
//! The plain HTTP/1.1 attack (no TLS; any workload: the attack's own request, target lists,
//! mixes, a catalogue, each request drawn as bytes, see [`crate::workload`]) spent most of
//! its user time on the
//! runtime's machinery around two syscalls a request: waking a task per response, polling
//! its future, registering its waker, polling its timeout. This loop does what the floor
//! client in `benches/peers/floor` does, with vload's recording: one wait for every
//! connection that is ready, and for each a `recv`, the response decoded in place
//! ([`Decoder`], the same framing as the tokio connection's), the result recorded, and the
//! next request written with one `send`. Timeouts are found by a sweep every [`SWEEP`]
//! rather than a timer a request; the worker's clock (intervals, the end of the window,
//! interrupts, the grace period) and the stall probe run between batches.
//!
//! Each slot is a [`Lane`](crate::worker::lane::Lane), the same state machine the tokio
//! driver's tasks step, beside its socket: this loop carries out what the lane answers
//! (connect, send, wait idle, back off, let go) and tells it what the socket did. The open
//! loop's schedule is the same model the tokio path asks; only its idle lanes are this loop's
//! slots. Its timer is the wait's own timeout (`epoll_pwait2`, in
//! nanoseconds): the wake-up for the next due request and the wake-ups for responses are
//! one wait, and a request that falls due while responses are being read goes out after the
//! response that noticed it. See docs/ARCHITECTURE.md, "Plain HTTP/1.1 runs on its own
//! epoll loop".

mod pool;
mod slot;
mod sys;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use socket2::SockAddr;

use super::clock::{Clock, Dispatcher, on_park, on_unpark};
use super::lane::{Act, Exchanged, Phase};
use super::setup::{WorkerMsg, WorkerSetup};
use super::shared::Core;
use crate::model::{BATCH, Due};
use crate::plan::Driver;
use crate::workload::Wire;
use pool::Pool;
use slot::{Connect, Read, Slot};
pub(super) use sys::{Epoll, own_descriptor_table};
use sys::{PROBE, Probe, TIMER, WAKE, Waiter};

/// How often timeouts, connect back-offs and interrupts are looked at. A timed-out request
/// is recorded at the timeout whenever it is noticed; this only bounds how long after it its
/// connection is replaced.
const SWEEP: Duration = Duration::from_millis(10);
/// Events taken from the kernel a wait.
const EVENTS: usize = 256;

/// True when `setup` is an attack this loop serves: HTTP/1.1 through the lean client over
/// plain TCP, any workload, closed or open loop.
pub(super) fn serves(setup: &WorkerSetup) -> bool {
    setup.plan.driver == Driver::Auto
        && setup.tls.is_none()
        && setup.plan.tls.is_none()
        && setup.plan.protocol.sends_prepared_bytes()
}

/// The loop's state.
struct Direct<'c> {
    core: &'c Core,
    epoll: Epoll,
    slots: Vec<Slot>,
    pool: Pool,
    /// The clock as the last response read it.
    last_done: Instant,
    /// Bytes read off any connection since an exchange last ended: counted with the next
    /// one to end (a total, not a slot's: a slot is kept small).
    wire: u64,
    /// The attack's own request.
    own: Wire,
    addr: SockAddr,
}

/// Runs the attack (`connections` connections in a closed loop, the cap in an open loop) on
/// `epoll` until it is over or the clock's grace period ends.
pub(super) fn run(
    epoll: Epoll,
    core: &Core,
    connections: u32,
    clock: &mut Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
) {
    let mut direct = Direct::new(epoll, core, connections);
    let probe = Probe::new(direct.epoll.raw());
    let mut waiter = Waiter::new(direct.epoll.raw());
    let now = Instant::now();
    // A Ctrl-C before the start stops the attack before any connection is made.
    if !clock.step(core, to_collector, now, &mut direct) {
        return;
    }
    direct.start(connections, now);
    let mut sweep = now + SWEEP;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    while direct.running() {
        // The probe's timer wakes the loop every millisecond; without it (no timerfd, or one
        // that could not be re-armed), the wait's own timeout does.
        let mut wait = if probe.as_ref().is_some_and(|p| p.armed.get()) {
            SWEEP
        } else {
            PROBE
        };
        // The clock's events (a tick, the window's end, the grace's end) are seen after the
        // wait, at most a sweep late, as timeouts are; only the open loop's next due
        // request bounds the wait more tightly.
        if let Some(due) = direct.pool.next_due {
            wait = wait.min((due + BATCH).saturating_duration_since(Instant::now()));
        }
        on_park();
        let ready = waiter.wait(&mut events, wait);
        on_unpark();
        // The clock first: the seconds that passed during the wait (a freeze, a long
        // preemption) are shipped before the events are entered, so each event goes into
        // the second it is seen in, never an earlier one (#58: a request's timeout once went
        // into a second that ended before its deadline).
        if !clock.step(core, to_collector, Instant::now(), &mut direct) {
            break;
        }
        for event in &events[..ready] {
            match event.u64 {
                TIMER => {
                    let late = probe.as_ref().and_then(|p| p.fired(direct.epoll.raw()));
                    if let Some((at, late)) = late {
                        core.recorder.hiccup(at, late);
                    }
                }
                WAKE => {}
                token => {
                    direct.event(token, event.events);
                    direct.after_event();
                }
            }
        }
        let now = Instant::now();
        if !clock.step(core, to_collector, now, &mut direct) {
            break;
        }
        if now >= sweep {
            sweep = now + SWEEP;
            direct.sweep(now);
        }
        direct.settle(now);
    }
}

impl<'c> Direct<'c> {
    fn new(epoll: Epoll, core: &'c Core, connections: u32) -> Direct<'c> {
        let lanes = core.model.lanes_at_start(connections) as usize;
        Direct {
            core,
            slots: Vec::with_capacity(lanes),
            pool: Pool::default(),
            last_done: Instant::now(),
            wire: 0,
            own: core.workload.own_wire(),
            addr: core.plan.connect_to.into(),
            epoll,
        }
    }

    /// The lanes the model starts with (a closed loop's connections), then the first
    /// dispatch (an open loop's first requests).
    fn start(&mut self, connections: u32, now: Instant) {
        for _ in 0..self.core.model.lanes_at_start(connections) {
            self.open_lane(now);
        }
        self.dispatch(now);
    }

    /// Starts a lane in a free slot (or a new one).
    fn open_lane(&mut self, now: Instant) {
        let i = match self.pool.reuse() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::new());
                self.slots.len() - 1
            }
        };
        let act = self.slots[i].lane.start(self.core, now);
        self.act(i, act);
    }

    /// True while the attack has work: a live lane, a schedule, or a request waiting.
    fn running(&self) -> bool {
        self.pool.live > 0 || !self.pool.over || self.core.model.waiting() > 0
    }

    /// Carries out what slot `i`'s lane answered, and what it answers to that, until it waits.
    fn act(&mut self, i: usize, mut act: Act) {
        loop {
            act = match act {
                Act::Nothing => return,
                Act::Connect => self.connect(i),
                Act::Send(drawn) => {
                    self.slots[i].begin(drawn.into_wire(), &self.own);
                    self.write(i)
                }
                Act::Idle => {
                    self.pool.idle(i);
                    Act::Nothing
                }
                Act::Sleep => {
                    // The sweep wakes it ([`Direct::sweep`]).
                    self.slots[i].close();
                    Act::Nothing
                }
                Act::Done => {
                    self.slots[i].lane = crate::worker::lane::Lane::new();
                    self.slots[i].free();
                    self.pool.release(i);
                    Act::Nothing
                }
            }
        }
    }

    /// Connects slot `i`'s lane.
    fn connect(&mut self, i: usize) -> Act {
        let slot = &mut self.slots[i];
        match slot.connect(&self.epoll, &self.addr, i) {
            Ok(Connect::Pending) => Act::Nothing,
            Ok(Connect::Made) => {
                let now = Instant::now();
                let took = now.saturating_duration_since(slot.began());
                slot.lane.connected(self.core, now, (took, None))
            }
            Err(failure) => slot.lane.refused(self.core, Instant::now(), failure),
        }
    }

    /// Writes what is left of slot `i`'s request.
    fn write(&mut self, i: usize) -> Act {
        match self.slots[i].write(&self.epoll, &self.own, i) {
            Ok(()) => Act::Nothing,
            Err(failure) => self.finish(i, Some(Err(failure)), None),
        }
    }

    /// The socket of `token` reported `flags`.
    fn event(&mut self, token: u64, flags: u32) {
        let i = (token & u64::from(u32::MAX)) as usize;
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if !slot.owns(token) {
            return; // a socket closed earlier in this batch
        }
        let act = match *slot.lane.phase() {
            Phase::Connecting { .. } => match slot.connect_result(&self.epoll, &self.addr, i) {
                None => Act::Nothing,
                Some(Ok(())) => {
                    let now = Instant::now();
                    let took = now.saturating_duration_since(slot.began());
                    slot.lane.connected(self.core, now, (took, None))
                }
                Some(Err(failure)) => slot.lane.refused(self.core, Instant::now(), failure),
            },
            Phase::Exchange { .. } if slot.writing(&self.own) => {
                let wakes = (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32;
                if flags & wakes == 0 {
                    return;
                }
                self.write(i)
            }
            Phase::Exchange { .. } => {
                let (read, n) = slot.read();
                self.wire += n as u64;
                match read {
                    Read::More => Act::Nothing,
                    Read::Done(result, first_byte) => self.finish(i, Some(result), first_byte),
                }
            }
            Phase::Idle(_) => {
                // The server closed an idle connection (an idle timeout), or sent what
                // nobody asked for: done with it either way, as the tokio pool is; bytes
                // are the server's fault and counted.
                let now = Instant::now();
                if slot.unasked().is_some() {
                    self.core.recorder.stray(now);
                }
                self.pool.busy(i);
                self.slots[i].lane.closed_idle(self.core, now)
            }
            Phase::Backoff(_) | Phase::Done => Act::Nothing,
        };
        self.act(i, act);
    }

    /// Slot `i`'s exchange ended with `result` (`None`: its deadline passed), its response
    /// begun at `first_byte` if an earlier read brought part of it: the lane records it and
    /// says what the slot does next.
    fn finish(
        &mut self,
        i: usize,
        result: Option<Result<crate::response::Response, crate::failure::Failure>>,
        first_byte: Option<Instant>,
    ) -> Act {
        let done = Instant::now();
        self.last_done = done;
        let kept = matches!(&result, Some(Ok(response)) if !response.close);
        let slot = &mut self.slots[i];
        let settled = slot.settle(&self.own, kept);
        if settled.stray {
            self.core.recorder.stray(done);
        }
        let exchanged = Exchanged {
            received: settled.received,
            written: settled.written,
            survives: false,
            first_byte,
            wire: std::mem::take(&mut self.wire),
        };
        slot.lane
            .ended(self.core, done, result, exchanged, settled.usable)
    }

    /// Acts on the time in every lane (back-offs over, connects and requests past their
    /// deadlines), then expires requests that waited for a lane past theirs.
    fn sweep(&mut self, now: Instant) {
        let timeout = self.core.plan.timeout;
        for i in 0..self.slots.len() {
            let slot = &mut self.slots[i];
            let act = match *slot.lane.phase() {
                Phase::Exchange { job, .. } if now >= job.deadline(timeout) => {
                    // An answer the server sent in time may wait unread (#58: a starved
                    // client filed 68 of them as the server's timeouts): read it first.
                    if let Some(act) = self.read_late(i) {
                        self.act(i, act);
                        continue;
                    }
                    // What arrived before the deadline is counted; the connection is not
                    // used again.
                    self.slots[i].disconnect();
                    self.finish(i, None, None)
                }
                _ => slot.lane.poll(self.core, now),
            };
            self.act(i, act);
        }
        self.core.expire_waiting(now);
    }

    /// Slot `i`'s response, if the whole of it is waiting on its socket at its deadline
    /// (the thread was off a CPU when it came, or its event waits for the next wait): the
    /// time went to the client, not the server, so it ends as what the server answered.
    fn read_late(&mut self, i: usize) -> Option<Act> {
        let slot = &mut self.slots[i];
        if slot.writing(&self.own) {
            return None;
        }
        let (read, n) = slot.read();
        self.wire += n as u64;
        match read {
            Read::More => None,
            Read::Done(result, first_byte) => Some(self.finish(i, Some(result), first_byte)),
        }
    }

    /// After each event: what fell due while responses were read goes out now (the last
    /// response's clock tells), and lanes that ended are replaced if requests wait.
    fn after_event(&mut self) {
        if self.pool.next_due.is_some_and(|due| self.last_done >= due) {
            self.dispatch(Instant::now());
        } else if self.pool.grow {
            self.grow(Instant::now());
        }
    }

    /// After each batch: dispatches what is due (or ends the schedule when the attack is
    /// stopping), and replaces lanes that ended.
    fn settle(&mut self, now: Instant) {
        let due = self.pool.next_due.is_some_and(|due| now >= due);
        if !self.pool.over && (due || self.core.stopping()) {
            self.dispatch(now);
        } else if self.pool.grow {
            self.grow(now);
        }
    }

    /// Sends every request due by `now` to idle lanes, queues the rest, and opens lanes for
    /// those that wait. Once the schedule is over, idle lanes are let go.
    fn dispatch(&mut self, now: Instant) {
        if self.pool.over {
            return;
        }
        let mut handed = std::mem::take(&mut self.pool.handed);
        let pool = &mut self.pool;
        let mut hand = |job| match pool.take_idle() {
            Some(i) => {
                handed.push((i, job));
                None
            }
            None => Some(job),
        };
        let core = self.core;
        let due = core.model.dispatch(
            (now, core.plan.timeout),
            core.stopping(),
            core.books(),
            &mut hand,
        );
        for (i, job) in handed.drain(..) {
            let act = self.slots[i].lane.handed(core, job, now, true);
            self.act(i, act);
        }
        self.pool.handed = handed;
        match due {
            Due::At(at) => self.pool.next_due = Some(at),
            Due::Over => {
                (self.pool.next_due, self.pool.over) = (None, true);
                core.finish_dispatch();
                for i in self.pool.take_all_idle() {
                    let act = self.slots[i].lane.stop(core);
                    self.act(i, act);
                }
            }
        }
        self.grow(now);
    }

    /// Opens lanes while requests wait for one and the cap allows (at most a few connecting
    /// at once). Each round either leaves connects under way (bounded) or settles a waiting
    /// request (made, it sends one; failed, it fails one), so this ends.
    fn grow(&mut self, now: Instant) {
        self.pool.grow = false;
        loop {
            let opening = self.core.model.to_open(1);
            if opening == 0 {
                break;
            }
            for _ in 0..opening {
                self.open_lane(now);
            }
        }
    }
}

impl Dispatcher for Direct<'_> {
    fn dispatch(&mut self, now: Instant) {
        Direct::dispatch(self, now);
    }

    /// Closes the lanes idle too long ([`Core::idle_since`](super::shared::Core::idle_since)), the oldest idle ones.
    fn reap(&mut self, now: Instant) {
        let Some(idle_since) = self.core.idle_since(now) else {
            return;
        };
        for i in self.pool.take_stale(&self.slots, idle_since) {
            let act = self.slots[i].lane.stop(self.core);
            self.act(i, act);
        }
    }

    fn stop(&mut self) {}
}

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
//! The open loop's schedule is the same [`Open`] the tokio path uses; only its connections
//! are this loop's slots. Its timer is the wait's own timeout (`epoll_pwait2`, in
//! nanoseconds): the wake-up for the next due request and the wake-ups for responses are
//! one wait, and a request that falls due while responses are being read goes out after the
//! response that noticed it. See docs/ARCHITECTURE.md, "Plain HTTP/1.1 runs on its own
//! epoll loop".

mod conn;
mod pool;
mod sys;

use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use socket2::SockAddr;

use super::clock::{Clock, Dispatcher, on_park, on_unpark};
use super::open::{BATCH, Open};
use super::state::Worker;
use super::{WorkerMsg, WorkerSetup};
use crate::plan::{Client, Driver, Protocol};
use crate::workload::Wire;
use conn::{Connection, Phase};
use pool::OpenPool;
pub(super) use sys::{Epoll, own_descriptor_table};
use sys::{Probe, Waiter};

/// How often timeouts, connect back-offs and interrupts are looked at. A timed-out request
/// is recorded at the timeout whenever it is noticed; this only bounds how long after it its
/// connection is replaced.
const SWEEP: Duration = Duration::from_millis(10);
/// The stall probe's period: how late a 1 ms timer is noticed is the loop's own stall.
pub(super) const PROBE: Duration = Duration::from_millis(1);
/// Events taken from the kernel a wait.
const EVENTS: usize = 256;
/// The probe timer's token; connections are tokened by their slot and its generation.
pub(super) const TIMER: u64 = u64::MAX;
/// The token of the timer that stands in for `epoll_pwait2`'s timeout where it is missing.
pub(super) const WAKE: u64 = u64::MAX - 1;

/// True when `setup` is an attack this loop serves: plain HTTP/1.1 with the lean client, no
/// TLS; closed or open loop, any workload.
pub(super) fn serves(setup: &WorkerSetup) -> bool {
    setup.plan.driver == Driver::Auto
        && setup.tls.is_none()
        && setup.plan.tls.is_none()
        && matches!(
            setup.plan.protocol,
            Protocol::Http1 {
                client: Client::Lean
            }
        )
}

/// The loop's state.
struct Direct<'w> {
    worker: &'w Worker,
    /// The open loop's schedule and queue; `None` in a closed loop.
    open: Option<&'w Open>,
    epoll: Epoll,
    conns: Vec<Connection>,
    /// Closed loop: slots not stopped, the attack is over when none is left. Open loop:
    /// slots with a connection (being made, busy or idle).
    live: usize,
    pool: OpenPool,
    /// The clock as the last response read it.
    last_done: Instant,
    /// The attack's own request.
    own: Wire,
    /// Every request is the attack's own: nothing is drawn.
    own_only: bool,
    addr: SockAddr,
    timeout: Duration,
    connect_timeout: Duration,
}

/// Runs the attack (`connections` connections in a closed loop, the cap in an open loop) on
/// `epoll` until it is over or the clock's grace period ends.
pub(super) fn run(
    epoll: Epoll,
    worker: &Rc<Worker>,
    connections: u32,
    clock: &mut Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
) {
    let mut direct = Direct::new(epoll, worker, connections);
    let probe = Probe::new(direct.epoll.raw());
    let mut waiter = Waiter::new(direct.epoll.raw());
    let now = Instant::now();
    // A Ctrl-C before the start stops the attack before any connection is made.
    if !clock.step(worker, to_collector, now, &mut direct) {
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
        for event in &events[..ready] {
            match event.u64 {
                TIMER => {
                    if let Some(probe) = &probe {
                        probe.fired(worker, direct.epoll.raw());
                    }
                }
                WAKE => {}
                token => {
                    direct.ready(token, event.events);
                    direct.after_event();
                }
            }
        }
        let now = Instant::now();
        if !clock.step(worker, to_collector, now, &mut direct) {
            break;
        }
        if now >= sweep {
            sweep = now + SWEEP;
            direct.sweep(now);
        }
        direct.settle(now);
    }
}

impl<'w> Direct<'w> {
    fn new(epoll: Epoll, worker: &'w Worker, connections: u32) -> Direct<'w> {
        let own = worker.own_wire();
        let own_only = worker.workload.is_own();
        let dialer = worker.dialer();
        let open = worker.open();
        Direct {
            worker,
            open,
            conns: Vec::with_capacity(if open.is_some() {
                0
            } else {
                connections as usize
            }),
            live: 0,
            pool: OpenPool {
                over: open.is_none(),
                ..OpenPool::default()
            },
            last_done: Instant::now(),
            own,
            own_only,
            addr: dialer.addr.into(),
            timeout: worker.plan.timeout,
            connect_timeout: dialer.connect_timeout,
            epoll,
        }
    }

    /// The first dispatch of an open loop, or a closed loop's connections.
    fn start(&mut self, connections: u32, now: Instant) {
        if self.open.is_some() {
            return self.dispatch(now);
        }
        for i in 0..connections as usize {
            // Live until `stop`: a connection the budget leaves without a request stops at
            // once.
            let mut conn = Connection::new();
            conn.phase = Phase::Backoff(now);
            self.conns.push(conn);
            self.live += 1;
            self.next_connection(i, now);
        }
    }

    /// Registers or changes `fd`'s interest, tokened by connection `i` and its generation.
    fn control(&self, op: i32, fd: RawFd, interest: i32, i: usize) -> io::Result<()> {
        self.epoll.control(op, fd, interest, self.conns[i].token(i))
    }
}

impl Dispatcher for Direct<'_> {
    fn dispatch(&mut self, now: Instant) {
        Direct::dispatch(self, now);
    }

    fn reap(&mut self, now: Instant) {
        Direct::reap(self, now);
    }
}

//! The tokio driver: every attack the epoll loop does not serve (TLS, HTTP/2, hyper's
//! clients, a machine without epoll), on a current-thread runtime with a `LocalSet`.
//!
//! Each lane is a task stepping its [`Lane`](crate::worker::lane::Lane), the same state
//! machine the epoll loop's slots step: it carries out what the lane answers (connect, send,
//! wait idle, back off) with the connection's own futures, and tells the lane what came of it
//! ([`lanes`]). An HTTP/2 connection's other streams are lanes of their own that ride it. The
//! open loop's due requests are sent by a dispatcher task on a microsecond timer, and by any
//! lane after each response (so a busy thread dispatches between task polls rather than only
//! when the runtime gets round to the timer); idle lanes wait in an [`IdlePool`].

mod idle;
mod lanes;
mod state;

use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vload_timer::PreciseTimer;

use super::clock::{Clock, Dispatcher, on_park, on_unpark};
use super::setup::WorkerMsg;
use super::shared::Core;
use crate::h1::H1Conn;
use crate::h2::H2Conn;
use crate::h3::H3Conn;
use crate::model::BATCH;
use crate::plan::{Client, Protocol};
use crate::protocol::{Dial, Hyper1, Hyper2, Link};
use lanes::dispatch_due;
use state::Tokio;

/// Runs the attack on a current-thread runtime until it is over or the clock's grace period
/// ends; whatever is still in flight then is cancelled. The kinds of QUIC handshakes its
/// connections made (HTTP/3).
pub(super) fn run(
    core: &Rc<Core>,
    dial: Dial,
    connections: u32,
    clock: &mut Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
) -> vload_schema::Handshakes {
    let run = (core, dial, connections, clock, to_collector);
    // The one place a protocol's implementation is chosen: each is a `Link`, and every
    // lane, idle wait and dispatch below is the same for all (docs/ARCHITECTURE.md, "The
    // protocol seam").
    match core.plan.protocol {
        Protocol::Http1 {
            client: Client::Lean,
        } => drive::<H1Conn>(run),
        Protocol::Http1 {
            client: Client::Hyper,
        } => drive::<Hyper1>(run),
        Protocol::Http2 {
            client: Client::Lean,
            ..
        } => drive::<H2Conn>(run),
        Protocol::Http2 {
            client: Client::Hyper,
            ..
        } => drive::<Hyper2>(run),
        Protocol::Http3 { .. } => drive::<H3Conn>(run),
    }
}

/// What [`drive`] runs: the core, the dial, the connections, the clock and the collector.
type Run<'a> = (
    &'a Rc<Core>,
    Dial,
    u32,
    &'a mut Clock,
    &'a mpsc::Sender<WorkerMsg>,
);

/// [`run`] over connections of `L`.
fn drive<L: Link>(
    (core, dial, connections, clock, to_collector): Run<'_>,
) -> vload_schema::Handshakes {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(on_park)
        .on_thread_unpark(on_unpark)
        .build()
        .expect("a current-thread runtime can always be built");
    let local = tokio::task::LocalSet::new();
    let driver = Rc::new(Tokio::<L>::new(core.clone(), dial));
    local.block_on(&runtime, async {
        tokio::task::spawn_local(hiccup_probe(core.clone()));
        start(&driver, connections);
        run_clock(&driver, clock, to_collector).await;
    });
    drop(local); // cancels whatever is still in flight after the grace period
    driver.dial.handshakes()
}

/// Steps the clock at each wake-up until every task has ended or the grace period is over.
async fn run_clock<L: Link>(
    driver: &Rc<Tokio<L>>,
    clock: &mut Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
) {
    let mut tasks = Tasks(driver.clone());
    let core = &driver.core;
    while clock.step(core, to_collector, Instant::now(), &mut tasks) {
        let listening = clock.listening();
        let wake = clock.next_wake();
        tokio::select! {
            biased;
            () = driver.all_done.notified() => break,
            () = tokio::time::sleep_until(wake.into()) => {}
            () = clock.told(), if listening => {}
        }
    }
}

/// The lanes the model starts with (a closed loop's connections), and the dispatcher (an
/// open loop's schedule).
fn start<L: Link>(driver: &Rc<Tokio<L>>, connections: u32) {
    for _ in 0..driver.core.model.lanes_at_start(connections) {
        driver.spawn(lanes::lane(driver.clone()));
    }
    driver.spawn(dispatcher(driver.clone()));
}

/// The open loop's dispatcher: sleeps on a microsecond timer until the next due time (a
/// little after, to batch) and dispatches everything due. A closed loop's ends at once.
async fn dispatcher<L: Link>(driver: Rc<Tokio<L>>) {
    let timer = PreciseTimer::new().ok();
    while let Some(due) = dispatch_due(&driver, Instant::now()) {
        if due <= Instant::now() {
            // Due in a second the clock has not opened yet: the clock's task ships the one
            // ending first (the model holds such requests back, so that each counts in the
            // second it fell due in).
            tokio::task::yield_now().await;
            continue;
        }
        let wake = due + BATCH;
        let sleep = async {
            match &timer {
                Some(timer) => timer.sleep_until(wake).await,
                None => tokio::time::sleep_until(wake.into()).await,
            }
        };
        tokio::select! {
            () = sleep => {}
            () = driver.wake_dispatcher.notified() => {}
        }
    }
    driver.core.finish_dispatch();
    driver.task_ended();
}

/// Records how late a 1 ms sleep wakes: the runtime's own stalls (jHiccup's method).
async fn hiccup_probe(core: Rc<Core>) {
    let Ok(timer) = PreciseTimer::new() else {
        return;
    };
    let period = Duration::from_millis(1);
    loop {
        let expected = Instant::now() + period;
        timer.sleep_until(expected).await;
        let now = Instant::now();
        core.recorder
            .hiccup(now, vload_timer::nanos_between(expected, now));
    }
}

/// The tokio driver's side of the clock: its tasks do the rest.
struct Tasks<L>(Rc<Tokio<L>>);

impl<L: Link> Dispatcher for Tasks<L> {
    fn dispatch(&mut self, now: Instant) {
        dispatch_due(&self.0, now);
    }

    fn reap(&mut self, now: Instant) {
        if let Some(idle_since) = self.0.core.idle_since(now) {
            self.0.idle.reap(idle_since);
        }
        self.0.core.expire_waiting(now);
    }

    fn stop(&mut self) {
        self.0.pass_on_stop();
    }
}

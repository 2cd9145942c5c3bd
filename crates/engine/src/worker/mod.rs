//! One worker thread: it picks its driver, waits for the start, runs the driver, and sends
//! the collector its account.
//!
//! The layers, each a file or a folder, each importing only those below it: [`setup`] (what
//! goes in and comes out), [`shared`] (what the driver and its lanes share: the load model, the
//! recorder, the workload), [`lane`] (one connection's life, a state machine without I/O),
//! [`clock`] (intervals, the window's end, interrupts, the grace period), and the two
//! drivers that step lanes and clock: [`epoll`] (the thread's own epoll loop, for HTTP/1.1
//! over plain TCP) and [`runtime`] (tokio, for everything else). This file is only the thread.

mod clock;
#[cfg(target_os = "linux")]
mod epoll;
mod lane;
mod runtime;
mod setup;
mod shared;

use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use vload_schema::Handshakes;
use vload_timer::tighten_timer_slack;

use crate::observe::Told;
use crate::protocol::Dial;
use clock::Clock;
pub(crate) use setup::{WorkerMsg, WorkerSetup, WorkerSummary};
use shared::Core;

/// Runs a worker on the current thread until its share of the attack is done.
pub(crate) fn run(setup: WorkerSetup) {
    tighten_timer_slack();
    let (cpu_start, wall_start) = (thread_cpu_time(), Instant::now());
    let delay_start = run_delay();
    let to_collector = setup.to_collector.clone();
    let mut summary = serve_attack(setup);
    summary.cpu = thread_cpu_time().saturating_sub(cpu_start);
    // Time not parked and not on a CPU is time spent runnable, waiting for a core: the
    // health verdict tells a thread starved by other processes from one that idled. The
    // kernel's own count of it, or where that is not kept, the time neither parked nor on a
    // CPU (which misses the wait between a wake-up and the first instruction after it).
    summary.waiting = match (delay_start, run_delay()) {
        (Some(start), Some(end)) => end.saturating_sub(start),
        _ => {
            let awake = wall_start.elapsed().saturating_sub(clock::parked());
            awake.saturating_sub(summary.cpu)
        }
    };
    // The collector outlives every worker; a send error means it is gone and nobody listens.
    let _ = to_collector.send(WorkerMsg::Done(Box::new(summary)));
}

/// Serves the worker's share on the driver that fits it, picked before anything is built:
/// the worker's own epoll loop for HTTP/1.1 over plain TCP on Linux (no runtime), tokio
/// otherwise.
fn serve_attack(mut setup: WorkerSetup) -> WorkerSummary {
    crate::timing::use_metric(&setup.plan.server_timing);
    crate::h1::forget_memo();
    let end = setup
        .plan
        .stop
        .duration
        .and_then(|d| setup.t0.checked_add(setup.plan.warmup + d));
    #[cfg(target_os = "linux")]
    let epoll = epoll::serves(&setup)
        .then(|| {
            epoll::own_descriptor_table();
            epoll::Epoll::new()
        })
        .and_then(Result::ok);
    let core = Rc::new(Core::new(&mut setup, end));
    let mut interrupt = setup.interrupt.clone();
    wait_for_start(setup.t0, &mut interrupt);
    let mut clock = Clock::new(setup.id, setup.t0, end, setup.plan.timeout, interrupt);
    let tx = &setup.to_collector;
    #[cfg(target_os = "linux")]
    if let Some(epoll) = epoll {
        epoll::run(epoll, &core, setup.connections, &mut clock, tx);
        return wrap_up(&core, &clock, &setup, Handshakes::default());
    }
    let dial = Dial::new(&setup.plan, setup.tls.clone());
    let handshakes = runtime::run(&core, dial, setup.connections, &mut clock, tx);
    wrap_up(&core, &clock, &setup, handshakes)
}

/// Waits for the start (`--start-at`, or the run's common t0), ending the wait at an
/// interrupt: the clock then stops the attack at once.
fn wait_for_start(t0: Instant, interrupt: &mut watch::Receiver<Told>) {
    loop {
        let now = Instant::now();
        if now >= t0 || interrupt.has_changed().is_err() || *interrupt.borrow() != Told::Running {
            return;
        }
        std::thread::sleep((t0 - now).min(Duration::from_millis(10)));
    }
}

/// The worker's account once its driver is done: every request due has its place by now
/// (what waited past its deadline timed out, what still waits was never sent, what is in
/// flight is unfinished), and the last interval is shipped.
fn wrap_up(
    core: &Core,
    clock: &Clock,
    setup: &WorkerSetup,
    handshakes: Handshakes,
) -> WorkerSummary {
    let (index, attack_end) = clock.finish();
    let end_instant = Instant::now();
    // When the attack stopped sending: its window's end (planned, or an interrupt), where
    // the open loop's schedule ended, or else (a closed loop's count) the last send.
    let attack_end = attack_end
        .or_else(|| core.model.window_end())
        .unwrap_or_else(|| core.recorder.last_send().unwrap_or(end_instant));
    core.expire_waiting(end_instant);
    let backlog = core.close_books();
    clock::ship(core, setup.id, index, &setup.to_collector);
    WorkerSummary {
        worker: setup.id,
        cpu: Duration::ZERO,
        waiting: Duration::ZERO,
        samples: core.recorder.take_samples(),
        backlog,
        attack_end,
        first_send: core.recorder.first_send(),
        end: end_instant,
        arrivals: core.model.take_arrivals(),
        peak_connections: core.model.peak(),
        handshakes,
        breakdowns: Box::new(core.recorder.take_breakdowns()),
        objects: core.recorder.take_objects(),
    }
}

/// How long the calling thread has waited on a run queue (runnable, not running), from
/// `/proc/thread-self/schedstat`; `None` where the kernel does not keep it.
fn run_delay() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(on_cpu)), Some(Ok(delay))) = (fields.next(), fields.next()) else {
        return None;
    };
    // A thread that has run shows CPU time; zeros mean the accounting is off.
    (on_cpu > 0).then(|| Duration::from_nanos(delay))
}

/// CPU time (user + system) of the calling thread.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes a timespec for the calling thread's CPU clock.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

//! One worker thread: a current-thread runtime, its connections, its recorder.
//!
//! Everything a worker touches per request is its own (`Rc`, `Cell`, `RefCell`): no locks
//! and no atomics on the hot path. Once a second the worker swaps its [`IntervalStats`] for
//! an empty one and sends the full one to the collector.
//!
//! The layers, each a file, each importing only those below it: [`job`] (what flows
//! between them); [`closed`] and [`open`], the two job sources (a budget; a schedule and a
//! pool of idle connections); [`state`], what every load model shares and how one request is
//! sent and recorded; [`serve`], the one serving loop and the tasks that run it (connections,
//! HTTP/2 streams, the dispatcher); and this file, the thread and its clock (intervals, the
//! end of the window, interrupts).

mod backlog;
mod books;
mod clock;
mod closed;
#[cfg(target_os = "linux")]
mod epoll;
mod job;
mod open;
mod recording;
mod serve;
mod state;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use vload_schema::ErrorKind;
use vload_timer::{PreciseTimer, nanos_between, tighten_timer_slack};

use crate::observe::Told;
use crate::plan::AttackPlan;
use crate::record::IntervalStats;
use crate::schedule::Schedule;
use crate::workload::Source;
use clock::Clock;
use state::Worker;

/// Closed loop: pause after a failed connect, so a dead server is not spun on.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// What a worker sends to the collector.
#[derive(Debug)]
pub(crate) enum WorkerMsg {
    /// Stats of interval `index` (second `index` after t0): what the measured window's
    /// requests did in it, and what the warm-up's did, if anything.
    Interval {
        worker: u32,
        index: u32,
        stats: Box<IntervalStats>,
        warmup: Option<Box<IntervalStats>>,
    },
    /// The worker has finished; no more messages follow from it.
    Done(WorkerSummary),
}

/// A finished worker's account.
#[derive(Debug)]
pub(crate) struct WorkerSummary {
    pub(crate) worker: u32,
    pub(crate) cpu: Duration,
    /// Time the thread was neither parked (idle) nor on a CPU: runnable, waiting for one.
    pub(crate) waiting: Duration,
    pub(crate) samples: Vec<(ErrorKind, String)>,
    /// Requests due but never completed: never sent, or still unfinished at the end.
    pub(crate) backlog: u64,
    /// When the attack stopped sending (time bound, count bound or interrupt).
    pub(crate) attack_end: Instant,
    /// When the worker stopped (last response or grace deadline).
    pub(crate) end: Instant,
    /// Poisson: achieved gaps seen in the window, and a sample of them.
    pub(crate) arrivals: Option<(u64, Vec<f64>)>,
    /// Open loop: the most connections open at once.
    pub(crate) peak_connections: Option<u32>,
    /// The measured window's breakdowns.
    pub(crate) breakdowns: Box<crate::breakdown::Breakdowns>,
}

/// Everything one worker needs to start.
#[derive(Debug)]
pub(crate) struct WorkerSetup {
    pub(crate) id: u32,
    pub(crate) plan: Arc<AttackPlan>,
    pub(crate) t0: Instant,
    /// Closed loop: connections. Open loop: the cap for this worker.
    pub(crate) connections: u32,
    /// This worker's share of `--requests`.
    pub(crate) requests: Option<u64>,
    pub(crate) schedule: Option<Schedule>,
    /// Where its requests come from (taken by the worker).
    pub(crate) source: Option<Source>,
    /// The run's breakdowns by target: their groups' names.
    pub(crate) dimensions: Arc<crate::breakdown::Dimensions>,
    pub(crate) tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    pub(crate) to_collector: mpsc::Sender<WorkerMsg>,
    pub(crate) interrupt: watch::Receiver<Told>,
}

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
    let _ = to_collector.send(WorkerMsg::Done(summary));
}

/// Serves the worker's share on the driver that fits it, picked before anything is built:
/// the worker's own epoll loop for plain HTTP/1.1 on Linux (no runtime), tokio otherwise.
fn serve_attack(mut setup: WorkerSetup) -> WorkerSummary {
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
    let worker = Rc::new(Worker::new(&mut setup, end));
    let mut interrupt = setup.interrupt.clone();
    wait_for_start(setup.t0, &mut interrupt);
    let mut clock = Clock::new(setup.t0, end, setup.plan.timeout, interrupt);
    #[cfg(target_os = "linux")]
    if let Some(epoll) = epoll {
        epoll::run(
            epoll,
            &worker,
            setup.connections,
            &mut clock,
            &setup.to_collector,
        );
        return wrap_up(&worker, &clock, &setup);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(clock::on_park)
        .on_thread_unpark(clock::on_unpark)
        .build()
        .expect("a current-thread runtime can always be built");
    let local = tokio::task::LocalSet::new();
    let summary = local.block_on(&runtime, async {
        tokio::task::spawn_local(hiccup_probe(worker.clone()));
        serve::start(&worker, setup.connections);
        clock.run(&worker, &setup.to_collector).await;
        wrap_up(&worker, &clock, &setup)
    });
    drop(local); // cancels whatever is still in flight after the grace period
    summary
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
fn wrap_up(worker: &Worker, clock: &Clock, setup: &WorkerSetup) -> WorkerSummary {
    let (index, attack_end) = clock.finish();
    let end_instant = Instant::now();
    // When the attack stopped sending: its window's end (planned, or an interrupt), where
    // the open loop's schedule ended, or else (a closed loop's count) the last send.
    let attack_end = attack_end
        .or_else(|| worker.open().and_then(open::Open::window_end))
        .unwrap_or_else(|| worker.last_send.get().unwrap_or(end_instant));
    worker.expire_waiting(end_instant);
    let backlog = worker.close_books();
    worker.flush(index, &setup.to_collector);
    WorkerSummary {
        worker: setup.id,
        cpu: Duration::ZERO,
        waiting: Duration::ZERO,
        samples: worker.take_samples(),
        backlog,
        attack_end,
        end: end_instant,
        arrivals: worker.take_arrivals(),
        peak_connections: worker.open().map(open::Open::peak),
        breakdowns: Box::new(worker.breakdown.take()),
    }
}

/// Records how late a 1 ms sleep wakes: the runtime's own stalls (jHiccup's method).
async fn hiccup_probe(worker: Rc<Worker>) {
    let Ok(timer) = PreciseTimer::new() else {
        return;
    };
    let period = Duration::from_millis(1);
    loop {
        let expected = Instant::now() + period;
        timer.sleep_until(expected).await;
        let now = Instant::now();
        worker
            .books
            .at(now)
            .hiccup
            .record(nanos_between(expected, now));
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

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
mod closed;
#[cfg(target_os = "linux")]
mod direct;
mod job;
mod open;
mod recording;
mod serve;
mod state;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use vload_schema::ErrorKind;
use vload_timer::{PreciseTimer, nanos_between, tighten_timer_slack};

use crate::observe::Stop;
use crate::plan::AttackPlan;
use crate::record::IntervalStats;
use crate::schedule::Schedule;
use crate::targets::TargetStream;
use state::Worker;

/// In-flight requests get this long to finish after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(1);
/// After a time-bounded window, in-flight requests get the request timeout and this.
const END_GRACE: Duration = Duration::from_millis(100);
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
    pub(crate) targets: Option<TargetStream>,
    pub(crate) tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    pub(crate) to_collector: mpsc::Sender<WorkerMsg>,
    pub(crate) interrupt: watch::Receiver<Stop>,
}

thread_local! {
    /// When the runtime parked (went idle) last, and the total time parked.
    static PARKED: Cell<(Option<Instant>, Duration)> = const { Cell::new((None, Duration::ZERO)) };
}

fn on_park() {
    PARKED.with(|p| p.set((Some(Instant::now()), p.get().1)));
}

fn on_unpark() {
    PARKED.with(|p| {
        if let (Some(since), total) = p.get() {
            p.set((None, total + since.elapsed()));
        }
    });
}

/// Runs a worker on the current thread until its share of the attack is done.
pub(crate) fn run(setup: WorkerSetup) {
    tighten_timer_slack();
    let (cpu_start, wall_start) = (thread_cpu_time(), Instant::now());
    let delay_start = run_delay();
    let to_collector = setup.to_collector.clone();
    // Time not parked and not on a CPU is time spent runnable, waiting for a core: the
    // health verdict tells a thread starved by other processes from one that idled.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(on_park)
        .on_thread_unpark(on_unpark)
        .build()
        .expect("a current-thread runtime can always be built");
    let local = tokio::task::LocalSet::new();
    let mut summary = local.block_on(&runtime, worker_main(setup));
    drop(local); // cancels whatever is still in flight after the grace period
    summary.cpu = thread_cpu_time().saturating_sub(cpu_start);
    // The kernel's own count of the time the thread was runnable and not running; where it
    // is not kept, the time neither parked nor on a CPU (which misses the wait between a
    // wake-up and the first instruction after it).
    summary.waiting = match (delay_start, run_delay()) {
        (Some(start), Some(end)) => end.saturating_sub(start),
        _ => {
            let parked = PARKED.with(|p| p.get().1);
            let awake = wall_start.elapsed().saturating_sub(parked);
            awake.saturating_sub(summary.cpu)
        }
    };
    // The collector outlives every worker; a send error means it is gone and nobody listens.
    let _ = to_collector.send(WorkerMsg::Done(summary));
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

async fn worker_main(mut setup: WorkerSetup) -> WorkerSummary {
    let end = setup
        .plan
        .stop
        .duration
        .and_then(|d| setup.t0.checked_add(setup.plan.warmup + d));
    // Linux: plain HTTP/1.1, closed or open loop, runs on the worker's own epoll
    // (worker/direct.rs).
    #[cfg(target_os = "linux")]
    let direct = direct::serves(&setup);
    let worker = Rc::new(Worker::new(&mut setup, end));
    let mut interrupt = setup.interrupt.clone();
    // A Ctrl-C while waiting for --start-at ends the wait; the clock below then stops at once.
    tokio::select! {
        () = tokio::time::sleep_until(setup.t0.into()) => {}
        Ok(_) = interrupt.wait_for(|stop| *stop != Stop::Running) => {}
    }
    let clock = Clock {
        t0: setup.t0,
        end,
        timeout: setup.plan.timeout,
    };
    #[cfg(target_os = "linux")]
    let served = direct
        .then(|| {
            // Blocks this thread until the attack is over: nothing else runs on its runtime.
            // `None`: no epoll for it; the tokio path serves instead.
            let (to_collector, interrupt) = (&setup.to_collector, interrupt.clone());
            direct::run(&worker, setup.connections, &clock, to_collector, interrupt)
        })
        .flatten();
    #[cfg(not(target_os = "linux"))]
    let served = None;
    let (index, attack_end) = match served {
        Some(served) => served,
        None => {
            tokio::task::spawn_local(hiccup_probe(worker.clone()));
            serve::start(&worker, setup.connections);
            clock.run(&worker, &setup.to_collector, interrupt).await
        }
    };
    let end_instant = Instant::now();
    // When the attack stopped sending: its window's end (planned, or an interrupt), where
    // the open loop's schedule ended, or else (a closed loop's count) the last send.
    let attack_end = attack_end
        .or_else(|| worker.open().and_then(open::Open::window_end))
        .unwrap_or_else(|| worker.last_send.get().unwrap_or(end_instant));
    // Every request due has its door by now: what waited past its deadline timed out,
    // what still waits was never sent, what is in flight is unfinished.
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
    }
}

/// The worker's own clock: interval ticks, the window's end, interrupts, the grace period.
struct Clock {
    t0: Instant,
    end: Option<Instant>,
    timeout: Duration,
}

impl Clock {
    /// Runs until every task has ended or the grace period is over; returns the index of the
    /// interval still open and when the attack stopped sending, if it was stopped.
    async fn run(
        &self,
        worker: &Rc<Worker>,
        to_collector: &mpsc::Sender<WorkerMsg>,
        mut interrupt: watch::Receiver<Stop>,
    ) -> (u32, Option<Instant>) {
        let far = self.t0 + Duration::from_secs(86_400 * 365 * 2);
        let (mut index, mut tick) = (0u32, self.t0 + Duration::from_secs(1));
        let mut grace: Option<Instant> = None;
        let mut attack_end: Option<Instant> = None;
        let mut seen = Stop::Running;
        let mut settle = |now| {
            serve::dispatch_due(worker, now);
        };
        loop {
            tokio::select! {
                biased;
                () = worker.all_done.notified() => break,
                () = tokio::time::sleep_until(tick.into()) => {
                    worker.flush(index, to_collector);
                    let now = Instant::now();
                    worker.reap_idle(now);
                    worker.expire_waiting(now);
                    index += 1;
                    tick += Duration::from_secs(1);
                }
                () = tokio::time::sleep_until(self.end.unwrap_or(far).into()), if self.end.is_some() && grace.is_none() => {
                    let end = self.end.expect("guarded");
                    // The window ends at its planned end, however late this thread noticed it.
                    self.end_window(worker, end, (&mut attack_end, &mut grace), &mut settle);
                }
                // Resolves at once if Ctrl-C came before the workers started.
                stop = interrupt.wait_for(|stop| *stop > seen), if seen != Stop::Interrupt => {
                    // A dropped sender is read as an interrupt: nobody can end the run else.
                    seen = stop.map_or(Stop::Interrupt, |stop| *stop);
                    self.on_stop(worker, seen, (&mut attack_end, &mut grace), &mut settle);
                }
                () = tokio::time::sleep_until(grace.unwrap_or(far).into()), if grace.is_some() => break,
            }
        }
        (index, attack_end)
    }

    /// Acts on what the run was told: the window ends now (unless it already has), or
    /// (Ctrl-C) sending stops and in-flight requests get [`INTERRUPT_GRACE`]. `settle` is
    /// the loop's open-loop dispatch ([`Clock::end_window`]).
    fn on_stop(
        &self,
        worker: &Rc<Worker>,
        stop: Stop,
        (attack_end, grace): (&mut Option<Instant>, &mut Option<Instant>),
        settle: &mut dyn FnMut(Instant),
    ) {
        let now = Instant::now();
        match stop {
            Stop::EndWindow if grace.is_none() => {
                self.end_window(worker, now, (attack_end, grace), settle);
            }
            Stop::Interrupt => {
                attack_end.get_or_insert(now);
                worker.begin_stop();
                let limit = now + INTERRUPT_GRACE;
                *grace = Some(grace.map_or(limit, |g| g.min(limit)));
            }
            _ => {}
        }
    }

    /// Ends the window at `end` (planned, or now): the open loop settles what fell due in
    /// it (`settle`, the loop's own dispatch: sends what is due before the end, counts what
    /// fell due too long ago as never sent), nothing more is sent, and in-flight requests get
    /// the request timeout.
    fn end_window(
        &self,
        worker: &Rc<Worker>,
        end: Instant,
        (attack_end, grace): (&mut Option<Instant>, &mut Option<Instant>),
        settle: &mut dyn FnMut(Instant),
    ) {
        let now = Instant::now();
        *attack_end = Some(end.min(now));
        worker.end_window(end);
        settle(now);
        worker.begin_stop();
        *grace = Some(Instant::now() + self.timeout + END_GRACE);
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

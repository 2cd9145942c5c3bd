//! Watching and stopping an attack from outside: [`Observer`] sees every interval,
//! [`Interrupt`] ends the attack early (Ctrl-C) or ends its window now (`--until-stable`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// Live state of an attack, once per interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Progress {
    /// Time since the attack began.
    pub elapsed: Duration,
    /// Planned length, warm-up included, if bounded by time.
    pub planned: Option<Duration>,
    /// Planned requests (`-n`, this shard's share), if bounded by count.
    pub planned_requests: Option<u64>,
    /// True during the warm-up.
    pub warmup: bool,
    /// Requests completed so far (warm-up included).
    pub completed: u64,
    /// Failed requests so far.
    pub errors: u64,
    /// Requests completed in the last interval, per second.
    pub rate_per_s: f64,
    /// Open loop: requests due in the last interval, per second (the rate asked); `None` in a
    /// closed loop.
    pub asked_per_s: Option<f64>,
    /// Median of the primary latency so far, in ns.
    pub p50_ns: Option<u64>,
    /// 99th percentile of the primary latency so far, in ns.
    pub p99_ns: Option<u64>,
    /// Median so far of the responses' wait for their first byte, in ns.
    pub first_byte_p50_ns: Option<u64>,
    /// Median so far of the responses' transfer, in ns.
    pub transfer_p50_ns: Option<u64>,
    /// The last interval's client-health signals, as they come (the verdict is the run's,
    /// at its end): what the live exposition shows.
    pub client: ClientSignals,
}

/// One interval's client-health signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientSignals {
    /// Open loop: requests sent more than 1 ms after they fell due.
    pub late_sends: u64,
    /// Requests that fell due and were never sent.
    pub unsent: u64,
    /// Open loop: p99 of how late the sender dispatched requests, in ns.
    pub dispatch_lag_p99_ns: Option<u64>,
    /// Open loop: p99 of how long queued requests waited for a connection, in ns.
    pub queue_wait_p99_ns: Option<u64>,
    /// p99 of the workers' hiccups (how late their own timers fired), in ns.
    pub hiccup_p99_ns: Option<u64>,
}

/// Sees an attack as it runs. The cli draws its progress line from this.
pub trait Observer {
    /// Called once per finished interval, in order, on the thread that called `run`.
    fn on_interval(&mut self, progress: &Progress);

    /// Called after [`Observer::on_interval`] with the interval's record as the run file
    /// will hold it (warm-up intervals included, flagged).
    fn on_record(&mut self, _interval: &vload_schema::Interval) {}

    /// Called about every 100 ms while the attack waits for its `--start-at`, with the time
    /// left; never called when the attack starts at once.
    fn on_waiting(&mut self, _until_start: std::time::Duration) {}

    /// Called when something the user asked for failed without ending the attack (the
    /// interval log could not be written), with one sentence saying what.
    fn on_warning(&mut self, _warning: &str) {}
}

/// No observer.
impl Observer for () {
    fn on_interval(&mut self, _: &Progress) {}
}

/// How far an attack has been told to stop; later states only ever replace earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Told {
    /// Not told anything.
    Running,
    /// End the measured window now, as if it had been planned to end here: requests due
    /// until now are settled, in-flight ones get the usual timeout (`--until-stable`).
    EndWindow,
    /// Interrupted (Ctrl-C): in-flight requests get one second, the run says it was cut.
    Interrupt,
}

/// Ends an attack early: [`Interrupt::trigger`] (Ctrl-C) stops dispatching, gives in-flight
/// requests one second, and `run` returns the results so far with `interrupted: true`;
/// [`Interrupt::end_window`] ends the window now as if it had been planned so (the run is
/// complete, not interrupted).
#[derive(Debug, Clone)]
pub struct Interrupt(Arc<watch::Sender<Told>>);

impl Interrupt {
    /// A trigger that has not fired.
    pub fn new() -> Self {
        Interrupt(Arc::new(watch::channel(Told::Running).0))
    }

    /// Fires the trigger; safe from any thread, any number of times.
    pub fn trigger(&self) {
        self.0.send_replace(Told::Interrupt);
    }

    /// Ends the measured window now; an interrupt already fired stays one.
    pub fn end_window(&self) {
        self.0.send_if_modified(|stop| {
            let earlier = *stop == Told::Running;
            if earlier {
                *stop = Told::EndWindow;
            }
            earlier
        });
    }

    /// True once interrupted ([`Interrupt::trigger`]); an ended window is not an interrupt.
    pub fn is_triggered(&self) -> bool {
        *self.0.borrow() == Told::Interrupt
    }

    /// A receiver that sees the trigger fire (each worker holds one).
    pub(crate) fn subscribe(&self) -> watch::Receiver<Told> {
        self.0.subscribe()
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

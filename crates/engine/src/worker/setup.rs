//! What goes into a worker and what comes out of it: its setup, and what it sends the
//! collector (each interval, then its summary).

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use vload_schema::ErrorKind;

use crate::observe::Told;
use crate::plan::AttackPlan;
use crate::record::IntervalStats;
use crate::schedule::Schedule;
use crate::workload::Source;

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
    Done(Box<WorkerSummary>),
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
    /// When its first request went out, if any did.
    pub(crate) first_send: Option<Instant>,
    /// When the worker stopped (last response or grace deadline).
    pub(crate) end: Instant,
    /// Poisson: achieved gaps seen in the window, and a sample of them.
    pub(crate) arrivals: Option<(u64, Vec<f64>)>,
    /// Open loop: the most connections open at once.
    pub(crate) peak_connections: Option<u32>,
    /// HTTP/3: the kinds of QUIC handshakes its connections made.
    pub(crate) handshakes: vload_schema::Handshakes,
    /// The measured window's breakdowns.
    pub(crate) breakdowns: Box<crate::breakdown::Breakdowns>,
    /// A catalogue's objects drawn, warm-up and window apart.
    pub(crate) objects: Option<crate::ledger::ObjectDraws>,
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

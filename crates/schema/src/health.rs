//! Whether the client was the bottleneck: the verdict and the signals behind it.

use serde::{Deserialize, Serialize};

/// The client's own health verdict, ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthVerdict {
    /// The client kept up.
    Ok,
    /// The client came close to its limits; numbers may be slightly pessimistic.
    Warn,
    /// The client was the bottleneck: the numbers describe vload, not the server.
    ClientBound,
}

/// Signals that say whether the client was the bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientHealth {
    /// CPU time used by the load-generating threads, in seconds (user + system).
    pub cpu_s: f64,
    /// `cpu_s / (wall time x cores available)`: 1.0 means every core was busy generating load.
    pub cpu_util: f64,
    /// The busiest worker thread's CPU time over wall time: 1.0 means it never idled.
    pub max_thread_busy: f64,
    /// Open loop: 99th percentile of dispatch lag in ns.
    pub dispatch_lag_p99_ns: Option<u64>,
    /// Open loop: requests dispatched more than 1 ms late.
    pub late_sends: u64,
    /// 99th percentile of the hiccup probe's oversleep in ns.
    pub hiccup_p99_ns: Option<u64>,
    /// Soft limit on open file descriptors during the run (after vload raised it).
    pub fd_limit: u64,
    /// File descriptors the plan needs (connections plus a margin).
    pub fd_needed: u64,
    /// The verdict.
    pub verdict: HealthVerdict,
    /// Why the verdict is not `ok`, one sentence each (the messages of `signals`).
    pub reasons: Vec<String>,
    /// The busiest worker thread's time waiting for a CPU (runnable, not running) over wall
    /// time, from `/proc/thread-self/schedstat`: other processes taking the cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_thread_waiting: Option<f64>,
    /// Each signal that moved the verdict, with its level and what it points at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<HealthSignal>,
}

/// One signal behind the client-health verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthSignal {
    /// Which measurement: `thread_busy`, `cpu`, `unsent`, `late_sends`, `dispatch_lag`,
    /// `hiccups`, `cpu_wait`, `queue_wait`, `fd_limit`.
    pub signal: String,
    /// The level it calls for.
    pub level: HealthVerdict,
    /// What it points at.
    pub cause: Cause,
    /// One sentence for the report.
    pub message: String,
}

/// What a client-health signal points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// vload itself could not keep up: its numbers measure vload, not the server.
    Client,
    /// The machine paused everyone (other processes, a VM pause): the results include
    /// those pauses, which the server under test may not have suffered.
    Machine,
    /// Requests waited for one of the connections vload was allowed to open
    /// (`--max-connections`).
    ConnectionCap,
}

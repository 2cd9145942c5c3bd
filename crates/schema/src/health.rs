//! Whether the client was the bottleneck: the verdict and the signals behind it.

use serde::{Deserialize, Serialize};

/// What limited the load a run applied: one word per cause (schema v3), ordered from the
/// least to the most the numbers are vload's rather than the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthVerdict {
    /// The load was applied as planned.
    Ok,
    /// Files of schema v1 and v2 only: the client came close to its limits. Never written
    /// from v3 on, where a signal either names what limited the load or is a note.
    Warn,
    /// The server was too slow for the planned load: requests waited for connections being
    /// made (not for the cap), which it accepted too slowly or answered so slowly that more
    /// were needed. The numbers are the server's.
    ServerLimited,
    /// Requests waited for one of the connections vload was allowed to open
    /// (`--max-connections`): a limit the user set, not the server's.
    ConnectionCapped,
    /// Other processes (or a pause of the machine) took the cores: vload, starved or
    /// paused, did not apply the planned load on time.
    MachineBusy,
    /// vload's own threads were the limit: these numbers measure vload, not the server.
    ClientBound,
}

impl HealthVerdict {
    /// The word the report prints: `ok`, `CLIENT-BOUND`, `MACHINE-BUSY`,
    /// `CONNECTION-CAPPED`, `SERVER-LIMITED` (and `WARN` for old files).
    pub fn word(self) -> &'static str {
        match self {
            HealthVerdict::Ok => "ok",
            HealthVerdict::Warn => "WARN",
            HealthVerdict::ServerLimited => "SERVER-LIMITED",
            HealthVerdict::ConnectionCapped => "CONNECTION-CAPPED",
            HealthVerdict::MachineBusy => "MACHINE-BUSY",
            HealthVerdict::ClientBound => "CLIENT-BOUND",
        }
    }

    /// The word in lower case, for tables: `ok`, `client-bound`, `machine-busy`, ...
    pub fn name(self) -> &'static str {
        match self {
            HealthVerdict::Ok => "ok",
            HealthVerdict::Warn => "warn",
            HealthVerdict::ServerLimited => "server-limited",
            HealthVerdict::ConnectionCapped => "connection-capped",
            HealthVerdict::MachineBusy => "machine-busy",
            HealthVerdict::ClientBound => "client-bound",
        }
    }

    /// The verdict a cause calls for when it limited the load.
    pub fn of(cause: Cause) -> HealthVerdict {
        match cause {
            Cause::Client => HealthVerdict::ClientBound,
            Cause::Machine => HealthVerdict::MachineBusy,
            Cause::ConnectionCap => HealthVerdict::ConnectionCapped,
            Cause::Server => HealthVerdict::ServerLimited,
        }
    }

    /// True when the run's numbers describe the server: the load was applied as planned,
    /// or only the server held it back.
    pub fn measures_server(self) -> bool {
        matches!(
            self,
            HealthVerdict::Ok | HealthVerdict::Warn | HealthVerdict::ServerLimited
        )
    }
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
    /// Open loop: the most connections open at once (every worker's peak, added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_connections: Option<u64>,
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
    /// The verdict: what limited the load, or `ok`.
    pub verdict: HealthVerdict,
    /// One sentence for each signal (the messages of `signals`), the decisive ones first.
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
    /// Which measurement: `thread_busy`, `cpu_wait`, `cpu`, `unsent`, `late_sends`,
    /// `dispatch_lag`, `hiccups`, `queue_wait` (the connection cap), `connect_wait` (the
    /// server slow to take connections), `client_limit`, `fd_limit`.
    pub signal: String,
    /// The verdict it calls for: its cause's word when it limited the load, `ok` for a
    /// note that leaves the verdict as it is.
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
    /// The server: too slow for the load, its connections all busy or still being made (v3).
    Server,
}

//! The server's own account of a run: Varnish's counters, the server process's CPU.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the server under test said about the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Varnish's counters (`--server-stats varnish[:NAME]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub varnish: Option<VarnishRecord>,
    /// The server process's CPU time (`--watch-pid PID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
}

/// `varnishstat -j` at the edges of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VarnishRecord {
    /// The instance (`varnishstat -n`), empty for the default one.
    pub instance: String,
    /// The span the counters cover: `"measured"` (warm-up excluded) or `"attack"` (warm-up
    /// included), when Varnish had not yet published its busy workers' counts at the end of
    /// the warm-up, so a snapshot there would have been stale.
    pub covers: String,
    /// Counters' increase over `covers`, by name without `MAIN.`
    /// (`client_req`, `cache_hit`, `cache_miss`, `backend_req`, `sess_conn`, ...), and
    /// `vbe_req`, the sum of every backend's `VBE.*.req`.
    pub counters: BTreeMap<String, u64>,
    /// Gauges at the end of the window (`n_object`, `threads`, ...).
    pub gauges: BTreeMap<String, u64>,
    /// Where varnishstat kept its counters: `"counters"` (Varnish 6.5 and later) or
    /// `"top level"` (before).
    pub layout: String,
}

impl VarnishRecord {
    /// Requests Varnish sent to its backends: the sum of `VBE.*.req`, which Varnish counts
    /// under each backend's lock, or `MAIN.backend_req` in run files from before vload kept
    /// it. `MAIN.backend_req` is incremented without a lock by every fetch thread at once
    /// and can fall short of the truth for good under concurrency.
    pub fn backend_requests(&self) -> u64 {
        let c = |name: &str| self.counters.get(name).copied();
        c("vbe_req").or_else(|| c("backend_req")).unwrap_or(0)
    }
}

/// CPU time of the server process and its descendants, from `/proc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// The process given with `--watch-pid`.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), e.g. `"varnishd"`.
    pub name: String,
    /// Processes counted at the end: the process and its descendants (Varnish's worker
    /// process is a child of the one started).
    pub processes: u32,
    /// User CPU seconds over the measured window.
    pub user_s: f64,
    /// System CPU seconds over the measured window.
    pub system_s: f64,
}

impl ProcessRecord {
    /// User plus system CPU seconds over the measured window.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

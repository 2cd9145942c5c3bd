//! Request and connection counters, served as JSON at `/stats`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

/// Live counters shared by every server thread.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    requests_total: AtomicU64,
    by_path: Mutex<HashMap<String, u64>>,
    by_host: Mutex<HashMap<String, u64>>,
    by_server_name: Mutex<HashMap<String, u64>>,
    connections_accepted: AtomicU64,
    connections_closed: AtomicU64,
}

impl Stats {
    pub(crate) fn count_request(&self, target: &str) {
        self.requests_total.fetch_add(1, Relaxed);
        bump(&self.by_path, target);
    }

    pub(crate) fn count_host(&self, host: &str) {
        bump(&self.by_host, host);
    }

    /// A TLS handshake completed; `name` is the SNI the client sent.
    pub(crate) fn count_server_name(&self, name: Option<&str>) {
        bump(&self.by_server_name, name.unwrap_or("(none)"));
    }

    pub(crate) fn connection_opened(&self) {
        self.connections_accepted.fetch_add(1, Relaxed);
    }

    pub(crate) fn connection_closed(&self) {
        self.connections_closed.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self, plan: Vec<crate::plan::PlanPhase>) -> StatsSnapshot {
        let copy = |map: &Mutex<HashMap<String, u64>>| -> BTreeMap<String, u64> {
            let map = map.lock().expect("no thread panics holding the stats lock");
            map.iter().map(|(k, v)| (k.clone(), *v)).collect()
        };
        let accepted = self.connections_accepted.load(Relaxed);
        StatsSnapshot {
            requests_total: self.requests_total.load(Relaxed),
            requests_by_path: copy(&self.by_path),
            requests_by_host: copy(&self.by_host),
            tls_connections_by_server_name: copy(&self.by_server_name),
            connections_accepted: accepted,
            connections_open: accepted.saturating_sub(self.connections_closed.load(Relaxed)),
            plan,
        }
    }
}

/// Counts one more `key`, allocating only for a key not seen before.
fn bump(map: &Mutex<HashMap<String, u64>>, key: &str) {
    let mut map = map.lock().expect("no thread panics holding the stats lock");
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}

/// What `/stats` returns: counts since the origin started.
///
/// Requests to `/stats` itself are not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Requests answered (or failed on purpose) since start.
    pub requests_total: u64,
    /// Requests by request target as received: the path and, if any, the query
    /// (`/obj/7?size=100`), so that every distinct cache object has its own count.
    pub requests_by_path: BTreeMap<String, u64>,
    /// Requests by Host header (`(none)` without one): many virtual hosts, one address.
    #[serde(default)]
    pub requests_by_host: BTreeMap<String, u64>,
    /// TLS connections by the server name (SNI) the client sent (`(none)` without one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_connections_by_server_name: BTreeMap<String, u64>,
    /// TCP connections accepted since start.
    pub connections_accepted: u64,
    /// TCP connections open now.
    pub connections_open: u64,
    /// The phases of the plan under way (`POST /plan`), with the requests of each; empty
    /// when no plan was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<crate::plan::PlanPhase>,
}

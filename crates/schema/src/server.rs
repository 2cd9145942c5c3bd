//! The server's own account of a run: a cache's or web server's counters (Varnish, nginx,
//! HAProxy, Squid), the server process's CPU.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the server under test said about the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// The server's counters (`--server-stats SOURCE[:WHERE]`). Version 3 files kept
    /// Varnish's as `varnish`, read here as a record of source `varnish`.
    #[serde(default, alias = "varnish", skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsRecord>,
    /// The server process's CPU time (`--watch-pid PID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
}

/// A server's counters at the edges of the measured window, in its own names and mapped
/// onto the [`CommonCounters`] every source shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRecord {
    /// Which server: `"varnish"`, `"nginx"`, `"haproxy"`, `"squid"`.
    #[serde(default = "varnish")]
    pub source: String,
    /// Where its counters were read: Varnish's instance (`varnishstat -n`, empty for the
    /// default one), nginx's stub_status or Squid's cache manager URL, HAProxy's stats socket.
    #[serde(alias = "instance")]
    pub address: String,
    /// The span the counters cover: `"measured"` (warm-up excluded) or `"attack"` (warm-up
    /// included), when the server had not yet published its counts at the end of the
    /// warm-up, so a snapshot there would have been stale.
    pub covers: String,
    /// The counters every source maps its own onto, as increases over `covers`; absent
    /// where the source has no such count.
    #[serde(default)]
    pub common: CommonCounters,
    /// The source's own counters' increase over `covers`, by its names (Varnish's without
    /// `MAIN.`: `client_req`, `cache_hit`, ...; `vbe_req`, the sum of every `VBE.*.req`).
    pub counters: BTreeMap<String, u64>,
    /// The source's gauges at the end of the window (`n_object`, `threads`, ...).
    pub gauges: BTreeMap<String, u64>,
    /// The layout the source printed its counters in (varnishstat's `"counters"` since
    /// Varnish 6.5, `"top level"` before), empty where there is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub layout: String,
    /// The server's version, where the source tells it: `varnishd -V`, HAProxy's `show
    /// info`, the `Server` header of nginx's or Squid's page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What the source's counters say went wrong in the window, in its own words, e.g.
    /// Varnish's `threads_limited`: a counter, its increase and what it means.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub troubles: Vec<Trouble>,
}

fn varnish() -> String {
    "varnish".to_owned()
}

/// The server's counts every source maps its own onto, over the span a [`StatsRecord`]
/// covers. The server's own requests for its counters (a stub_status page, Squid's cache
/// manager) are taken out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommonCounters {
    /// Requests the server received from clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Requests answered from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits: Option<u64>,
    /// Cache lookups that found nothing fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<u64>,
    /// Requests passed to the origin without a lookup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u64>,
    /// Requests the server sent to the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_requests: Option<u64>,
    /// Objects evicted to make room (not expiries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evictions: Option<u64>,
    /// Client connections accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Client connections or requests the server dropped or refused for want of resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Bytes sent to clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_out: Option<u64>,
}

impl CommonCounters {
    /// Cache lookups: hits and misses.
    pub fn lookups(&self) -> Option<u64> {
        Some(self.hits?.saturating_add(self.misses?))
    }

    /// **The** hit ratio of vload's report, `compare` and plot: hits over lookups,
    /// `hits / (hits + misses)`, Varnish's own `cache_hit / (cache_hit + cache_miss)`.
    /// Requests that were no lookup are in neither: passes, vload's own PURGE and BAN
    /// requests, and Varnish's waiting-list wake-ups, all of which `client_req` counts.
    pub fn hit_ratio(&self) -> Option<f64> {
        let lookups = self.lookups()?;
        (lookups > 0).then(|| self.hits.unwrap_or(0) as f64 / lookups as f64)
    }

    /// The client requests the cache served, the denominator of every per-request share
    /// (origin requests, evictions): lookups and passes where the source counts them, else
    /// its requests.
    pub fn served(&self) -> Option<u64> {
        match self.lookups() {
            Some(lookups) if lookups > 0 => Some(lookups.saturating_add(self.passes.unwrap_or(0))),
            _ => self.requests,
        }
    }

    /// Origin requests per request served ([`CommonCounters::served`]): what the cache
    /// spares the origin is one minus it.
    pub fn origin_per_request(&self) -> Option<f64> {
        let served = self.served()?;
        (served > 0)
            .then(|| self.origin_requests.unwrap_or(0) as f64 / served as f64)
            .filter(|_| self.origin_requests.is_some())
    }
}

/// A counter that says the server was in trouble over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trouble {
    /// The source's name of the counter, e.g. `"threads_limited"`.
    pub counter: String,
    /// Its increase over the window.
    pub value: u64,
    /// What it means, e.g. `"Varnish wanted more worker threads than thread_pool_max allows"`.
    pub meaning: String,
}

impl StatsRecord {
    /// The server's name as people write it: `Varnish`, `nginx`, `HAProxy`, `Squid`, else
    /// the source as recorded.
    pub fn display_name(&self) -> &str {
        match self.source.as_str() {
            "varnish" => "Varnish",
            "nginx" => "nginx",
            "haproxy" => "HAProxy",
            "squid" => "Squid",
            "trafficserver" => "Traffic Server",
            other => other,
        }
    }

    /// Fills [`StatsRecord::common`] and the troubles of a version 3 file's Varnish record,
    /// which kept only Varnish's own counters ([`varnish_common`]).
    pub(crate) fn fill_from_varnish_counters(&mut self) {
        if self.source != "varnish" || self.common != CommonCounters::default() {
            return;
        }
        self.common = varnish_common(&self.counters);
        if self.troubles.is_empty() {
            self.troubles = troubles(&self.counters, VARNISH_TROUBLES);
        }
    }
}

/// Varnish's counters (MAIN's without the prefix, `vbe_req` the sum of `VBE.*.req`) mapped
/// onto the common ones: requests `client_req`, hits `cache_hit`, misses `cache_miss`,
/// passes `s_pass`, origin requests `vbe_req` (or `backend_req` in files from before vload
/// kept it: a counter Varnish updates without a lock, which can fall short under
/// concurrency), evictions `n_lru_nuked`, connections `sess_conn`, dropped `sess_dropped`,
/// bytes out the responses' headers and bodies.
pub fn varnish_common(counters: &BTreeMap<String, u64>) -> CommonCounters {
    let c = |name: &str| counters.get(name).copied();
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    CommonCounters {
        requests: c("client_req"),
        hits: c("cache_hit"),
        misses: c("cache_miss"),
        passes: c("s_pass"),
        origin_requests: c("vbe_req").or_else(|| c("backend_req")),
        evictions: c("n_lru_nuked"),
        connections: c("sess_conn"),
        dropped: c("sess_dropped"),
        bytes_out: sum(c("s_resp_hdrbytes"), c("s_resp_bodybytes")),
    }
}

/// Varnish's counters that say it was in trouble, and what each means.
pub const VARNISH_TROUBLES: &[(&str, &str)] = &[
    (
        "threads_limited",
        "Varnish wanted more worker threads than thread_pool_max allows",
    ),
    (
        "sess_dropped",
        "Varnish dropped sessions (thread queue full)",
    ),
    (
        "req_dropped",
        "Varnish dropped requests (HTTP/2 queue full)",
    ),
    ("sess_fail", "Varnish failed to accept sessions"),
    (
        "n_lru_nuked",
        "the cache was full: objects were evicted, so hits are fewer than the workload allows",
    ),
    ("backend_fail", "Varnish failed to connect to its backend"),
    ("fetch_failed", "backend fetches failed"),
];

/// The troubles among `counters`: each of `table`'s counters that rose, with its meaning.
pub fn troubles(counters: &BTreeMap<String, u64>, table: &[(&str, &str)]) -> Vec<Trouble> {
    table
        .iter()
        .filter_map(|&(counter, meaning)| {
            let value = counters.get(counter).copied().filter(|&v| v > 0)?;
            Some(Trouble {
                counter: counter.to_owned(),
                value,
                meaning: meaning.to_owned(),
            })
        })
        .collect()
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

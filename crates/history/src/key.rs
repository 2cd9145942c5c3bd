//! What makes runs comparable (a series' key), what a run measured (its metrics), and
//! whether it may enter a series' statistics at all (the validity gate).

use sha2::{Digest, Sha256};
use vload_analyze::Metric;
use vload_schema::{HealthVerdict, Mode, RunFile};

/// The metrics a history follows, in table order.
pub const TRACKED: [Metric; 9] = [
    Metric::P50,
    Metric::P99,
    Metric::P999,
    Metric::Throughput,
    Metric::ErrorRate,
    Metric::HitRatio,
    Metric::ServerHitRatio,
    Metric::OriginShare,
    Metric::ServerCpu,
];

/// A metric's short name in the store, on the command line and in exports.
pub fn metric_key(metric: Metric) -> &'static str {
    match metric {
        Metric::Throughput => "throughput",
        Metric::P50 => "p50",
        Metric::P90 => "p90",
        Metric::P99 => "p99",
        Metric::P999 => "p99.9",
        Metric::Mean => "mean",
        Metric::ErrorRate => "error_ratio",
        Metric::HitRatio => "hit_ratio",
        Metric::HumanHitRatio => "human_hit_ratio",
        Metric::HumanP50 => "human_p50",
        Metric::ServerCpu => "server_cpu_per_request",
        Metric::ServerHitRatio => "server_hit_ratio",
        Metric::OriginShare => "origin_per_request",
        Metric::Evictions => "evictions_per_request",
        Metric::Capacity => "capacity",
        Metric::FirstByteP50 => "first_byte_p50",
        Metric::FirstByteP99 => "first_byte_p99",
        Metric::TransferP50 => "transfer_p50",
        Metric::ProxyAddedP50 => "proxy_added_p50",
        Metric::StampedeOriginShare => "stampede_origin_per_request",
        Metric::StampedeWaitP50 => "stampede_wait_p50",
        Metric::StaleShare => "stale_ratio",
        Metric::TierOriginShare => "tier_origin_per_request",
        Metric::StaleAgeMean => "stale_age_mean",
    }
}

/// The metric a short name names.
pub fn metric_named(name: &str) -> Option<Metric> {
    let mut all = Metric::ALL.to_vec();
    all.push(Metric::Capacity);
    all.into_iter()
        .find(|m| metric_key(*m) == name || (name == "p999" && *m == Metric::P999))
}

/// The metrics checked by default: those `compare` declares primary for the load model,
/// and those that decide a cache comparison (errors, hit ratios, origin requests).
pub fn gated_by_default(metric: Metric, mode: Mode) -> bool {
    metric.is_primary(mode)
        || matches!(
            metric,
            Metric::ErrorRate | Metric::HitRatio | Metric::ServerHitRatio | Metric::OriginShare
        )
}

/// What a series is: runs with the same key are comparable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesKey {
    /// 12 hex digits of the SHA-256 of the four parts below and the label.
    pub key: String,
    /// The run's `--label`, empty when none.
    pub label: String,
    /// The workload hash and the load's shape (model, rate or plan, connections, protocol,
    /// duration): what was asked and how hard.
    pub workload: String,
    /// The client machine: CPU model, cores, kernel, governor, architecture, vload version.
    pub testbed: String,
    /// The server: its version and the hashes of the named configuration files.
    pub config: String,
}

impl SeriesKey {
    /// The series' name in tables and exports: its label and key, or its key alone.
    pub fn name(&self) -> String {
        if self.label.is_empty() {
            self.key.clone()
        } else {
            format!("{} [{}]", self.label, self.key)
        }
    }

    /// The key of `run`.
    pub fn of(run: &RunFile) -> SeriesKey {
        let p = &run.plan;
        let load = match p.mode {
            Mode::Open => match &p.rate_plan {
                Some(stages) => format!("open plan {stages:?}"),
                None => format!("open {} req/s {:?}", p.rate_per_s.unwrap_or(0.0), p.arrival),
            },
            Mode::Closed => format!("closed {} connections", p.connections),
        };
        let workload = format!(
            "{} | {load} | {} conns | {} streams {} {} | {} s",
            &run.workload_hash[..run.workload_hash.len().min(16)],
            p.connections,
            p.streams.unwrap_or(1),
            p.http_version,
            if p.tls.is_some() { "tls" } else { "plain" },
            p.duration_s.map_or_else(
                || format!("{} requests", p.requests.unwrap_or(0)),
                |d| d.to_string()
            ),
        );
        let e = &run.environment;
        let testbed = format!(
            "{} x{} {} | kernel {} | governor {} | vload {}",
            e.cpu_model,
            e.cpus_available,
            e.arch,
            e.kernel,
            e.governor.as_deref().unwrap_or("none"),
            run.vload_version
        );
        let mut parts: Vec<String> = run.provenance.as_ref().map_or_else(Vec::new, |p| {
            p.config_files
                .iter()
                .map(|f| format!("{} {}", f.path, &f.sha256[..f.sha256.len().min(12)]))
                .collect()
        });
        parts.sort();
        if let Some(v) = run
            .server
            .as_ref()
            .and_then(|s| s.stats.as_ref())
            .and_then(|s| s.version.clone())
        {
            parts.insert(0, v);
        }
        let config = parts.join(" | ");
        let label = run.label.clone().unwrap_or_default();
        let mut hash = Sha256::new();
        for part in [&label, &run.workload_hash, &workload, &testbed, &config] {
            hash.update(part.as_bytes());
            hash.update(b"\n");
        }
        let key = hash.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        SeriesKey {
            key,
            label,
            workload,
            testbed,
            config,
        }
    }
}

/// Why a run may not enter a series' statistics, `None` when it may: interrupted, a client
/// or a machine that was the limit, no success at all, a ledger that does not balance, sends
/// that were not the plan (the arrivals check) or figures that drifted through the window
/// (stationarity).
pub fn exclusion(run: &RunFile) -> Option<String> {
    if let Err(e) = run.validate() {
        return Some(format!("its ledger does not add up ({e})"));
    }
    if run.interrupted {
        return Some("interrupted".into());
    }
    match run.client_health.verdict {
        HealthVerdict::ClientBound => return Some("CLIENT-BOUND: vload was the limit".into()),
        HealthVerdict::MachineBusy => {
            return Some("MACHINE-BUSY: other processes took the cores".into());
        }
        _ => {}
    }
    if run.totals.successes(&run.plan) == 0 {
        return Some("no request succeeded".into());
    }
    // Sends that were not the plan (more than 1% over 1 ms late: the arrivals check) or
    // figures that drifted through the window (stationarity) describe another load or a
    // transient: measured on a quiet 2-core VM, runs failing the arrivals check strayed 2.3
    // times as far from their commit's median p50 as the others (docs/history.md). A failed
    // convergence check only widens the run's own interval: that is noise, which the median
    // of a commit's runs absorbs, so such a run stays in.
    let failed: Vec<&str> = run
        .checks
        .iter()
        .filter(|c| {
            c.verdict == vload_schema::CheckVerdict::Fail
                && (c.name == "arrivals" || c.name.starts_with("stationarity"))
        })
        .map(|c| c.name.as_str())
        .collect();
    (!failed.is_empty()).then(|| format!("failed its own checks: {}", failed.join(", ")))
}

/// Every tracked metric `run` has a value for.
pub fn metrics(run: &RunFile) -> Vec<(Metric, f64)> {
    TRACKED
        .iter()
        .filter_map(|m| match m.of(run) {
            Ok(Some(v)) if v.is_finite() => Some((*m, v)),
            _ => None,
        })
        .collect()
}

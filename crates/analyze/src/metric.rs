//! The metrics `compare` compares: one number per run each.

use serde::Serialize;
use vload_schema::{Mode, RunFile, SchemaError};

use crate::latency::samples_needed;
use crate::units;

/// A metric compared between groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Successful responses per second.
    Throughput,
    /// Latency quantiles of the primary latency.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Exact mean of the primary latency.
    Mean,
    /// Failed requests over completed requests.
    ErrorRate,
    /// Cache hits over classified responses.
    HitRatio,
    /// With a crawler beside a catalogue (`--crawler`): the hit ratio of the human requests
    /// alone, against the whole run of one without a crawler (what the crawler cost them).
    HumanHitRatio,
    /// The human requests' median latency, likewise.
    HumanP50,
    /// CPU time of the watched server process per completed request (`--watch-pid`).
    ServerCpu,
    /// Cache hits over hits and misses, by the server's own counters (`--server-stats`).
    ServerHitRatio,
    /// Requests the server sent to its origin over the requests it was sent: what the cache
    /// does not spare the origin (`--server-stats`; lower is better).
    OriginShare,
    /// Objects the cache evicted to make room, per request it was sent (`--server-stats`),
    /// shown per 100 requests.
    Evictions,
    /// A sweep's capacity at its SLO: the highest step rate that met it (`vload sweep`).
    Capacity,
    /// The responses' wait for the first byte (from the write): median.
    FirstByteP50,
    /// The responses' wait for the first byte: 99th percentile.
    FirstByteP99,
    /// The responses' transfer, from the first byte to the last: median.
    TransferP50,
    /// The misses' wait for the first byte beyond the origin's own time (`Server-Timing`):
    /// what the proxy added, median.
    ProxyAddedP50,
    /// A stampede's origin fetches over its requests (`--stampede`): by the origin's own
    /// count where every event read it, else the answers the cache forwarded (lower is
    /// better: 1/N for a cache that coalesces, 1 for one that does not).
    StampedeOriginShare,
    /// A stampede's waiters (the answers the cache served itself): median.
    StampedeWaitP50,
    /// The answers the cache served stale (past their freshness) over those classified, where
    /// the cache can say stale (`Cache-Status`, `X-Cache`): fewer is fresher (during an
    /// origin outage, read it beside the error rate).
    StaleShare,
    /// Tiered caches: the requests the last layer forwarded to the origin over those the
    /// nearest reached (lower is better: what the whole path spares the origin).
    TierOriginShare,
    /// The mean `Age` of the answers served stale: how long past its fetch the cache kept
    /// serving an object (lower is fresher; a grace setting bounds it).
    StaleAgeMean,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 23] = [
        Metric::Throughput,
        Metric::P50,
        Metric::P90,
        Metric::P99,
        Metric::P999,
        Metric::Mean,
        Metric::FirstByteP50,
        Metric::FirstByteP99,
        Metric::TransferP50,
        Metric::ProxyAddedP50,
        Metric::ErrorRate,
        Metric::HitRatio,
        Metric::HumanHitRatio,
        Metric::HumanP50,
        Metric::ServerCpu,
        Metric::ServerHitRatio,
        Metric::OriginShare,
        Metric::Evictions,
        Metric::StampedeOriginShare,
        Metric::StampedeWaitP50,
        Metric::StaleShare,
        Metric::TierOriginShare,
        Metric::StaleAgeMean,
    ];

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Mean => "mean",
            Metric::ErrorRate => "error rate",
            Metric::HitRatio => "hit ratio",
            Metric::HumanHitRatio => "human hit ratio",
            Metric::HumanP50 => "human p50",
            Metric::ServerCpu => "server CPU/req",
            Metric::ServerHitRatio => "server hit ratio",
            Metric::OriginShare => "origin req/req",
            Metric::Evictions => "evictions/req",
            Metric::Capacity => "capacity at SLO",
            Metric::FirstByteP50 => "first byte p50",
            Metric::FirstByteP99 => "first byte p99",
            Metric::TransferP50 => "transfer p50",
            Metric::ProxyAddedP50 => "proxy added p50",
            Metric::StampedeOriginShare => "stampede origin/req",
            Metric::StampedeWaitP50 => "stampede wait p50",
            Metric::StaleShare => "stale share",
            Metric::TierOriginShare => "tier origin/req",
            Metric::StaleAgeMean => "stale age mean",
        }
    }

    /// True for the phases of a response (kept for the whole window, not each second),
    /// shown only when a run has them.
    pub fn is_phase(self) -> bool {
        matches!(
            self,
            Metric::FirstByteP50
                | Metric::FirstByteP99
                | Metric::TransferP50
                | Metric::ProxyAddedP50
        )
    }

    /// True for the metrics that are a duration (the latency quantiles and the phases).
    pub fn is_duration(self) -> bool {
        self.quantile().is_some()
            || self.is_phase()
            || matches!(
                self,
                Metric::Mean | Metric::StampedeWaitP50 | Metric::StaleAgeMean | Metric::HumanP50
            )
    }

    /// True for the rows shown only when some run has what they read: the server's own
    /// account, a response's phases.
    pub fn is_optional(self) -> bool {
        self.is_server_side()
            || self.is_phase()
            || matches!(
                self,
                Metric::StampedeOriginShare
                    | Metric::StampedeWaitP50
                    | Metric::StaleShare
                    | Metric::TierOriginShare
                    | Metric::StaleAgeMean
                    | Metric::HumanHitRatio
                    | Metric::HumanP50
            )
    }

    /// True for the rows of the human requests beside a crawler: shown when some run had one.
    pub fn is_human(self) -> bool {
        matches!(self, Metric::HumanHitRatio | Metric::HumanP50)
    }

    /// The quantile a latency metric reads, `None` for the others.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Metric::P50 => Some(0.5),
            Metric::P90 => Some(0.9),
            Metric::P99 => Some(0.99),
            Metric::P999 => Some(0.999),
            _ => None,
        }
    }

    /// True for ratios (compared on logs), false for proportions (compared in percentage points).
    pub fn is_ratio(self) -> bool {
        !self.is_proportion()
    }

    /// True for the metrics compared in percentage points.
    fn is_proportion(self) -> bool {
        matches!(
            self,
            Metric::ErrorRate
                | Metric::HitRatio
                | Metric::HumanHitRatio
                | Metric::ServerHitRatio
                | Metric::OriginShare
                | Metric::Evictions
                | Metric::StampedeOriginShare
                | Metric::StaleShare
                | Metric::TierOriginShare
        )
    }

    /// True for the metrics read from the server's own account, shown only when a run has it.
    pub fn is_server_side(self) -> bool {
        matches!(
            self,
            Metric::ServerCpu | Metric::ServerHitRatio | Metric::OriginShare | Metric::Evictions
        )
    }

    /// True for throughput, hit ratio and capacity.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Throughput
                | Metric::HitRatio
                | Metric::HumanHitRatio
                | Metric::ServerHitRatio
                | Metric::Capacity
        )
    }

    /// True for the metrics where a difference reads as faster or slower.
    pub fn is_speed(self) -> bool {
        !self.is_proportion()
            && !matches!(
                self,
                Metric::ServerCpu | Metric::Capacity | Metric::StaleAgeMean
            )
    }

    /// Equivalence margin: percent for ratios, percentage points for proportions.
    pub fn margin(self) -> f64 {
        match self {
            Metric::Throughput | Metric::Mean => 2.0,
            Metric::P50 | Metric::P90 | Metric::HumanP50 => 3.0,
            Metric::FirstByteP50 | Metric::TransferP50 | Metric::ProxyAddedP50 => 3.0,
            Metric::StampedeWaitP50 | Metric::StaleAgeMean => 5.0,
            Metric::StampedeOriginShare | Metric::StaleShare | Metric::TierOriginShare => 0.5,
            Metric::P99 | Metric::FirstByteP99 => 5.0,
            Metric::P999 => 10.0,
            Metric::ErrorRate => 0.1,
            Metric::HitRatio | Metric::HumanHitRatio => 0.5,
            Metric::ServerCpu => 3.0,
            Metric::ServerHitRatio | Metric::OriginShare => 0.5,
            Metric::Evictions => 1.0,
            Metric::Capacity => 2.0,
        }
    }

    /// Primary metrics are declared before looking: closed loop, throughput; open loop, p50 and p99.
    pub fn is_primary(self, mode: Mode) -> bool {
        match mode {
            Mode::Closed => self == Metric::Throughput,
            Mode::Open => matches!(self, Metric::P50 | Metric::P99),
        }
    }

    /// The metric of one run, `None` where the run cannot support it.
    pub fn of(self, run: &RunFile) -> Result<Option<f64>, SchemaError> {
        let t = &run.totals;
        let primary = run.latency.primary();
        Ok(match self {
            Metric::Throughput => {
                let seconds = run.window.measured_s + run.window.wait_s;
                (seconds > 0.0).then(|| t.successes(&run.plan) as f64 / seconds)
            }
            Metric::Mean => primary.moments.mean(),
            Metric::ErrorRate => t.failure_share(&run.plan),
            Metric::HitRatio => {
                let classified = run.cache.hit + run.cache.miss;
                (classified > 0).then(|| run.cache.hit as f64 / classified as f64)
            }
            Metric::Capacity => run.sweep.as_ref().and_then(|s| s.verdict.max_rate_per_s),
            Metric::HumanHitRatio | Metric::HumanP50 => human(self, run)?,
            Metric::ServerCpu => run
                .server
                .as_ref()
                .and_then(|s| s.process.as_ref())
                .filter(|_| t.completed > 0)
                .map(|p| p.cpu_s() * 1e9 / t.completed as f64),
            Metric::ServerHitRatio | Metric::OriginShare | Metric::Evictions => {
                server_share(self, run)
            }
            Metric::FirstByteP50 | Metric::FirstByteP99 | Metric::TransferP50 => {
                let q = if self == Metric::FirstByteP99 {
                    0.99
                } else {
                    0.5
                };
                let record = if self == Metric::TransferP50 {
                    &run.latency.transfer
                } else {
                    &run.latency.first_byte
                };
                phase_quantile(record.as_ref(), q)?
            }
            Metric::ProxyAddedP50 => phase_quantile(run.latency.proxy_added.as_ref(), 0.5)?,
            Metric::StampedeOriginShare => run.stampede.as_ref().and_then(stampede_origin_share),
            Metric::StaleShare => stale_share(run),
            Metric::TierOriginShare => tier_origin_share(&run.cache.layers),
            // In ns, as the other durations.
            Metric::StaleAgeMean => run
                .cache
                .stale_ages
                .and_then(|a| a.mean_s())
                .map(|s| s * 1e9),
            Metric::StampedeWaitP50 => {
                let waiters = run.stampede.as_ref().and_then(|s| s.waiters.as_ref());
                phase_quantile(waiters, 0.5)?
            }
            quantile => {
                let q = quantile.quantile().expect("the rest are quantiles");
                if primary.moments.n < samples_needed(q) {
                    None
                } else {
                    Some(
                        primary
                            .moments
                            .clamp(primary.histogram.decode()?.value_at_quantile(q))
                            as f64,
                    )
                }
            }
        })
    }

    /// Formats a value of this metric with its unit.
    pub fn format(self, value: f64) -> String {
        match self {
            Metric::Throughput | Metric::Capacity => units::rate(value),
            // Evictions too: per 100 requests, as their difference is in points.
            Metric::ErrorRate
            | Metric::HitRatio
            | Metric::HumanHitRatio
            | Metric::ServerHitRatio
            | Metric::OriginShare
            | Metric::Evictions
            | Metric::StampedeOriginShare
            | Metric::StaleShare
            | Metric::TierOriginShare => units::percent(value),
            _ => units::duration_ns(value),
        }
    }
}

/// The human requests' hit ratio or median: the class `human` (and `human range`) of a run
/// with a crawler, the whole run of a catalogue without one; `None` without a catalogue.
fn human(metric: Metric, run: &RunFile) -> Result<Option<f64>, SchemaError> {
    let Some(catalogue) = &run.plan.catalogue else {
        return Ok(None);
    };
    let whole = if metric == Metric::HumanHitRatio {
        Metric::HitRatio
    } else {
        Metric::P50
    };
    if catalogue.crawler.is_none() {
        return whole.of(run);
    }
    let groups: Vec<_> = run
        .breakdowns
        .iter()
        .filter(|b| b.by == "class")
        .flat_map(|b| &b.groups)
        .filter(|g| g.name.starts_with("human"))
        .collect();
    if metric == Metric::HumanHitRatio {
        let mut cache = vload_schema::GroupCache::default();
        groups.iter().for_each(|g| cache.add(&g.cache));
        return Ok(cache.hit_ratio());
    }
    // The groups' histograms share their bounds; one that did not could not be added, and
    // the row says n/a rather than a median of part of them.
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for g in &groups {
        let h = g.latency.histogram.decode()?;
        match &mut merged {
            Some(m) => {
                if m.add(&h).is_err() {
                    return Ok(None);
                }
            }
            None => merged = Some(h),
        }
    }
    Ok(merged
        .filter(|h| h.len() >= samples_needed(0.5))
        .map(|h| h.value_at_quantile(0.5) as f64))
}

/// The window's stale answers over its classified ones, where the cache's headers can say
/// stale (`Cache-Status`, `X-Cache`, or some answer said so); `None` where they cannot
/// (`X-Varnish` and `Age` alone).
fn stale_share(run: &RunFile) -> Option<f64> {
    let c = &run.cache;
    let classified = c.hit + c.miss;
    let stale: u64 = run
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.stale)
        .sum();
    let can_say =
        stale > 0 || c.by_source.cache_status + c.by_source.x_cache > 0 || !c.layers.is_empty();
    (can_say && classified > 0).then(|| stale as f64 / classified as f64)
}

/// The last layer's forwards over the nearest's requests; `None` with fewer than two layers.
pub(crate) fn tier_origin_share(layers: &[vload_schema::LayerCounts]) -> Option<f64> {
    match layers {
        [first, .., last] if first.reached > 0 => Some(last.misses as f64 / first.reached as f64),
        _ => None,
    }
}

/// A stampede's origin fetches over its requests: the origin's count where every event read
/// it, else the answers the cache forwarded.
fn stampede_origin_share(s: &vload_schema::StampedeRecord) -> Option<f64> {
    let sent: u64 = s.events.iter().map(|e| e.sent).sum();
    let counted: Option<u64> = s.events.iter().map(|e| e.origin_fetches).sum();
    let fetches = counted.unwrap_or_else(|| s.events.iter().map(|e| e.leaders).sum());
    (sent > 0).then(|| fetches as f64 / sent as f64)
}

/// Quantile `q` of a phase's record, `None` without one or with too few values.
fn phase_quantile(
    record: Option<&vload_schema::LatencyRecord>,
    q: f64,
) -> Result<Option<f64>, SchemaError> {
    let Some(record) = record.filter(|r| r.moments.n >= samples_needed(q)) else {
        return Ok(None);
    };
    let value = record.histogram.decode()?.value_at_quantile(q);
    Ok(Some(record.moments.clamp(value) as f64))
}

/// A share from the server's counters over the span they cover, by the definitions the
/// report and plot use ([`vload_schema::CommonCounters::hit_ratio`] and `served`): hits over
/// lookups, origin requests or evictions over requests served.
fn server_share(metric: Metric, run: &RunFile) -> Option<f64> {
    let c = run.server.as_ref()?.stats.as_ref()?.common;
    match metric {
        Metric::ServerHitRatio => c.hit_ratio(),
        Metric::OriginShare => c.origin_per_request(),
        _ => {
            let (evictions, served) = (c.evictions?, c.served()?);
            (served > 0).then(|| evictions as f64 / served as f64)
        }
    }
}

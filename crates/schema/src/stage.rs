//! Stages of a run: the stages of a rate plan (`--rate '0->20k:30s,20k:60s'`), or the steps
//! of a capacity sweep (`vload sweep`), each with its own summary; and a sweep's SLO and
//! answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{ClientHealth, ErrorKind, LatencyRecord};

/// What one stage (or sweep step) saw. In a rate plan, each request counts in the stage its
/// intended send fell in, wherever it completed: an overloaded stage keeps its slow requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// 0-based, in the order run (a warm-up stage first, when there is one).
    pub index: u32,
    /// True for a warm-up stage, excluded from the run's totals.
    pub warmup: bool,
    /// Start in seconds from the attack's start (warm-up included).
    pub start_s: f64,
    /// Length in seconds.
    pub duration_s: f64,
    /// Requests per second due at the stage's start.
    pub from_rate_per_s: f64,
    /// Requests per second due at its end (the same for a hold or a sweep step).
    pub to_rate_per_s: f64,
    /// Requests that fell due.
    pub intended: u64,
    /// Requests written.
    pub sent: u64,
    /// Requests that ended, with a response or an error.
    pub completed: u64,
    /// Requests due in the stage, never sent (a frozen client).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unsent: u64,
    /// Requests of the stage sent and neither answered nor failed when the run stopped.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unfinished: u64,
    /// Requests dispatched more than 1 ms late.
    pub late_sends: u64,
    /// Responses by status code.
    pub status_codes: BTreeMap<u16, u64>,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Responses classified as cache hits.
    pub hits: u64,
    /// Responses classified as not hits.
    pub misses: u64,
    /// Of `hits`, those served stale (past their freshness, by the cache's word).
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub stale: u64,
    /// The ages of the stale answers, when any carried an `Age`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_ages: Option<crate::StaleAges>,
    /// Successful (2xx/3xx) responses per second of the stage: the throughput achieved.
    pub throughput_per_s: f64,
    /// Response time from the intended send.
    pub response: LatencyRecord,
    /// Service time from the actual write.
    pub service: LatencyRecord,
    /// A sweep step's own client-health verdict (a step is a run of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_health: Option<ClientHealth>,
    /// CPU seconds of the watched server over the stage (`--watch-pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    /// A sweep step: whether it reached a steady state (its latency did not trend up, no
    /// backlog was left at its end). A step whose queue grew has not met anything, whatever
    /// its percentiles say: it has not yet shown its miss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::RunCheck>,
    /// A sweep step: the upper end of the 95% within-run interval (batch means) of each
    /// latency quantile its SLO bounds. A step meets a term only when the whole interval
    /// lies below the limit: one step's p99 from a few thousand correlated responses is
    /// noisy, and a lucky step would otherwise claim a capacity the server does not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upper_bounds: Vec<QuantileBound>,
    /// With an origin plan (`--outage`, `--slowdown`): the origin's state in this stage
    /// (`up`, `refuse`, `reset`, `hang`, `503`, `slow:200ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_state: Option<String>,
    /// With an origin plan: the requests `vload origin` itself counted in this stage, by its
    /// own clock (the cache's fetches, and what it sent while the origin was down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_requests: Option<u64>,
}

/// An origin plan the attack drove (`--outage`, `--slowdown`): each of its phases is a
/// stage of the run (`stages[].origin_state`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OriginPlanRecord {
    /// `vload origin`'s URL the plan was posted to.
    pub origin: String,
    /// The steps posted, offsets from the attack's start (warm-up included), e.g.
    /// `10s:refuse,20s:up`.
    pub steps: String,
    /// How late the origin began its phases, worst of all, in µs past when they were due
    /// (its `/stats`): the phases' edges are that exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_us: Option<u64>,
}

/// The upper end of a latency quantile's 95% within-run interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuantileBound {
    /// The quantile.
    pub metric: SloMetric,
    /// The interval's upper end in ns.
    pub upper_ns: f64,
}

impl StageRecord {
    /// Failed requests.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Responses with a status `plan` expects (2xx and 3xx unless it says).
    pub fn successes(&self, plan: &crate::Plan) -> u64 {
        self.status_codes
            .iter()
            .filter(|(code, _)| plan.expects(**code))
            .map(|(_, n)| n)
            .sum()
    }

    /// The share of the stage's requests due that did not succeed (failed, answered with
    /// a status `plan` does not expect, never sent, unfinished); `None` when none was due.
    pub fn failure_share(&self, plan: &crate::Plan) -> Option<f64> {
        let due = self.intended.max(self.completed + self.unsent);
        (due > 0).then(|| due.saturating_sub(self.successes(plan)) as f64 / due as f64)
    }
}

/// One term of a service-level objective, e.g. `p99<10ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SloTerm {
    /// What is bounded.
    pub metric: SloMetric,
    /// The bound, in the metric's unit: ns for latencies, a ratio in [0, 1] for errors,
    /// requests per second for a rate.
    pub limit: f64,
}

/// What an SLO term bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    /// Median response time must stay below the limit.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Failed requests over completed must stay below the limit.
    Errors,
}

/// A capacity sweep: the steps asked for, the SLO, and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// The rates of the planned steps, in requests per second (bisection steps come after).
    pub rates_per_s: Vec<f64>,
    /// Measured length of each step, in seconds.
    pub stage_s: f64,
    /// Warm-up before each step, in seconds.
    pub warmup_s: f64,
    /// The objective every step was held to.
    pub slo: Vec<SloTerm>,
    /// True when the sweep searched between the last passing and first failing step.
    pub find_max: bool,
    /// What the sweep found.
    pub verdict: SweepVerdict,
}

/// A sweep's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepVerdict {
    /// The highest rate whose step met the SLO.
    pub max_rate_per_s: Option<f64>,
    /// The lowest rate whose step failed it (by the server's doing).
    pub first_failing_per_s: Option<f64>,
    /// The lowest rate at which the achieved throughput fell more than 5% behind.
    pub fell_behind_per_s: Option<f64>,
    /// What ended the sweep: `slo` (the server failed the SLO), `client` (vload itself was the
    /// bottleneck: the server's capacity lies beyond what this client measured), `rates`
    /// (every step passed), or `interrupted`.
    pub stopped_by: String,
    /// One sentence: the answer, as the report prints it.
    pub summary: String,
}

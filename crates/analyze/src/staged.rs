//! What a rate plan's stages and a sweep's steps amount to: one row each, and the sweep's
//! answer.

use serde::Serialize;
use vload_schema::{HealthVerdict, RunFile, SchemaError, StageRecord};

use crate::latency::LatencySummary;
use crate::sweep::judge;
use crate::units::{rate, seconds};

/// One stage (or sweep step), summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageSummary {
    /// Its place in the order run.
    pub index: u32,
    /// A warm-up stage, left out of the run's totals.
    pub warmup: bool,
    /// Start, in seconds from the attack's start.
    pub start_s: f64,
    /// Length in seconds.
    pub duration_s: f64,
    /// Rate due at its start and end.
    pub from_rate_per_s: f64,
    /// Rate due at its end.
    pub to_rate_per_s: f64,
    /// Requests due in it.
    pub intended: u64,
    /// Requests that ended.
    pub completed: u64,
    /// Requests due that did not succeed: failed, never sent, unfinished, or answered with
    /// a status the run does not expect.
    pub failed: u64,
    /// Successful responses per second while it ran.
    pub throughput_per_s: f64,
    /// Response time from the intended send.
    pub latency: LatencySummary,
    /// Cache hits over classified responses, when any response was classified.
    pub hit_ratio: Option<f64>,
    /// A sweep step's own client-health verdict.
    pub health: Option<HealthVerdict>,
    /// A sweep step against its SLO: `met`, `missed`, `client-bound`.
    pub slo: Option<&'static str>,
    /// Server CPU per completed request in ns (a sweep step with `--watch-pid`).
    pub server_cpu_per_request_ns: Option<f64>,
    /// Responses with a 5xx status.
    pub server_errors: u64,
    /// Failed requests (no response).
    pub errors: u64,
    /// Responses the cache served stale, over all responses.
    pub stale_share: Option<f64>,
    /// With an origin plan: the origin's state in the stage.
    pub origin_state: Option<String>,
    /// With an origin plan: the requests the origin itself counted in the stage.
    pub origin_requests: Option<u64>,
}

impl StageSummary {
    /// Summarises a stage; `slo` is the sweep's, to judge a step by.
    ///
    /// # Errors
    /// A histogram does not decode.
    pub fn of(
        stage: &StageRecord,
        slo: Option<&[vload_schema::SloTerm]>,
        plan: &vload_schema::Plan,
    ) -> Result<Self, SchemaError> {
        let slo = slo
            .map(|terms| judge(terms, stage, false, plan))
            .transpose()?
            .map(|o| o.word());
        Ok(StageSummary {
            index: stage.index,
            warmup: stage.warmup,
            start_s: stage.start_s,
            duration_s: stage.duration_s,
            from_rate_per_s: stage.from_rate_per_s,
            to_rate_per_s: stage.to_rate_per_s,
            intended: stage.intended,
            completed: stage.completed,
            failed: stage
                .intended
                .max(stage.completed + stage.unsent)
                .saturating_sub(stage.successes(plan)),
            throughput_per_s: stage.throughput_per_s,
            latency: LatencySummary::of(&stage.response)?,
            hit_ratio: (stage.hits + stage.misses > 0)
                .then(|| stage.hits as f64 / (stage.hits + stage.misses) as f64),
            health: stage.client_health.as_ref().map(|h| h.verdict),
            slo,
            server_cpu_per_request_ns: stage
                .server_cpu_s
                .filter(|_| stage.completed > 0)
                .map(|cpu| cpu * 1e9 / stage.completed as f64),
            server_errors: stage.status_codes.range(500..600).map(|(_, n)| n).sum(),
            errors: stage.error_count(),
            stale_share: {
                let answered = stage.completed.saturating_sub(stage.error_count());
                (answered > 0).then(|| stage.stale as f64 / answered as f64)
            },
            origin_state: stage.origin_state.clone(),
            origin_requests: stage.origin_requests,
        })
    }

    /// `2,000.0/s`, or `0.0/s → 2,000.0/s` for a ramp.
    pub fn rate_text(&self) -> String {
        if self.from_rate_per_s == self.to_rate_per_s {
            rate(self.from_rate_per_s)
        } else {
            format!(
                "{} → {}",
                rate(self.from_rate_per_s),
                rate(self.to_rate_per_s)
            )
        }
    }
}

/// A sweep's answer, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSummary {
    /// The SLO as written.
    pub slo: String,
    /// The highest rate that met it.
    pub max_rate_per_s: Option<f64>,
    /// The lowest that missed it.
    pub first_failing_per_s: Option<f64>,
    /// Where throughput fell behind the rate.
    pub fell_behind_per_s: Option<f64>,
    /// `slo`, `client`, `rates` or `interrupted`.
    pub stopped_by: String,
    /// The answer in one sentence.
    pub summary: String,
    /// Steps, each its length after a warm-up of this long.
    pub stage_s: f64,
    /// Warm-up before each step.
    pub warmup_s: f64,
}

/// The stages of a run, a sweep's in rising rate.
///
/// # Errors
/// A histogram does not decode.
pub fn stages_of(run: &RunFile) -> Result<Vec<StageSummary>, SchemaError> {
    let slo = run.sweep.as_ref().map(|s| s.slo.as_slice());
    let mut stages = run
        .stages
        .iter()
        .map(|stage| StageSummary::of(stage, slo, &run.plan))
        .collect::<Result<Vec<_>, _>>()?;
    if run.sweep.is_some() {
        stages.sort_by(|a, b| a.from_rate_per_s.total_cmp(&b.from_rate_per_s));
    }
    Ok(stages)
}

/// The sweep's answer, if the run is a sweep.
pub fn sweep_of(run: &RunFile) -> Option<SweepSummary> {
    let s = run.sweep.as_ref()?;
    Some(SweepSummary {
        slo: crate::slo::slo_text(&s.slo),
        max_rate_per_s: s.verdict.max_rate_per_s,
        first_failing_per_s: s.verdict.first_failing_per_s,
        fell_behind_per_s: s.verdict.fell_behind_per_s,
        stopped_by: s.verdict.stopped_by.clone(),
        summary: s.verdict.summary.clone(),
        stage_s: s.stage_s,
        warmup_s: s.warmup_s,
    })
}

/// The load of a staged plan or a sweep, for the report's first line.
pub(crate) fn describe(run: &RunFile) -> Option<String> {
    if let Some(s) = &run.sweep {
        let (lo, hi) = s
            .rates_per_s
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
                (lo.min(*r), hi.max(*r))
            });
        let steps = run.stages.len();
        return Some(format!(
            "sweep, {steps} step{} from {} to {}{}, {} each after {} of warm-up, SLO {}",
            if steps == 1 { "" } else { "s" },
            rate(lo),
            rate(hi),
            if s.find_max { " and bisection" } else { "" },
            seconds(s.stage_s),
            seconds(s.warmup_s),
            crate::slo::slo_text(&s.slo)
        ));
    }
    let plan = run.plan.rate_plan.as_ref()?;
    let stages: Vec<String> = plan
        .iter()
        .map(|s| {
            let r = if s.from_rate_per_s == s.to_rate_per_s {
                rate(s.from_rate_per_s)
            } else {
                format!("{} → {}", rate(s.from_rate_per_s), rate(s.to_rate_per_s))
            };
            format!("{r} for {}", seconds(s.duration_s))
        })
        .collect();
    Some(format!("rate plan {}", stages.join(", then ")))
}

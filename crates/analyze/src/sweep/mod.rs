//! Capacity sweeps: the steps' search, each step held to the SLO, the answer, and the sweep's
//! run file.
//!
//! A sweep runs the same workload at rising rates, each step a run of its own (with its own
//! warm-up), and stops at the first step that misses the SLO. With `find_max` it then
//! bisects between the last step that met it and the first that missed, to a resolution of
//! [`RESOLUTION`], and confirms the answer by running it again. The capacity it reports is
//! never meant to lie above the server's:
//!
//! - a step meets the SLO only in a steady state: a step whose queue grew through it (its
//!   median latency rising, a backlog left at its end) has not met anything, it has not
//!   yet shown its miss (`unsteady`);
//! - a step whose load vload did not apply as planned says nothing about the server: its
//!   own threads the limit ends the sweep (`client-bound`), as does the connection cap the
//!   user set; a busy machine is run again, then ends it (`machine-busy`). A server that
//!   took connections too slowly missed the load: that is the server's limit;
//! - a miss is run again only with evidence that the machine, not the server, caused it
//!   (the step's health names the machine); a retry may overturn such a miss, and it may
//!   confirm a pass, which a miss then overturns.

use vload_schema::{
    CheckVerdict, HealthVerdict, PlannedStage, RunFile, SchemaError, SloTerm, StageRecord,
    SweepRecord, SweepVerdict,
};

use crate::merge::{MergeError, epoch_ms, merge};

mod offer;
mod outcome;
mod search;
use crate::slo;
use crate::units::rate;
use offer::offer_changed;
pub use offer::{FELL_BEHIND, machine_evidence, repeatable};
pub use outcome::StepOutcome;
pub use search::{CONFIRM_HOLD, RESOLUTION, Search};

/// Holds a finished step to the SLO: what limited its load first (a step whose load was not
/// applied says nothing about the server; a late client only when its lateness changed what
/// was offered, see [`offer_changed`]), then each term, then its steady state.
///
/// # Errors
/// A histogram does not decode.
pub fn judge(
    terms: &[SloTerm],
    step: &StageRecord,
    interrupted: bool,
    plan: &vload_schema::Plan,
) -> Result<StepOutcome, SchemaError> {
    if interrupted {
        return Ok(StepOutcome::Interrupted);
    }
    let health = step.client_health.as_ref();
    let reason = || {
        health
            .and_then(|h| {
                h.signals
                    .iter()
                    .find(|s| s.level == h.verdict)
                    .map(|s| s.message.clone())
                    .or_else(|| h.reasons.first().cloned())
            })
            .unwrap_or_else(|| "the load was not applied as planned".to_owned())
    };
    // A late client stops a step only when the lateness changed what was offered: the
    // latency is measured from the intended send, so lateness the SLO absorbs is already in
    // the verdict (a miss with it small is the server's).
    let changed = health.and_then(|h| offer_changed(terms, step, h));
    match health.map(|h| h.verdict).filter(|_| changed.is_some()) {
        Some(HealthVerdict::ClientBound) => {
            return Ok(StepOutcome::ClientBound(format!(
                "{} ({}); give vload more threads or cores (-t), or split the load with --shard",
                reason(),
                changed.unwrap_or_default()
            )));
        }
        Some(HealthVerdict::MachineBusy) => {
            return Ok(StepOutcome::MachineBusy(format!(
                "{} ({}); on one machine that is often the server under test: sweep from another machine, or give vload cores of its own (taskset)",
                reason(),
                changed.unwrap_or_default()
            )));
        }
        _ => {}
    }
    let outcomes = slo::evaluate(terms, step, plan)?;
    let met = outcomes.iter().all(|o| o.met);
    if health.is_some_and(|h| h.verdict == HealthVerdict::ConnectionCapped)
        && slo::evaluate_on(terms, step, &step.service, plan)?
            .iter()
            .all(|o| o.met)
        && !met
    {
        // The server's own share of the latency (service time, from the write) met the SLO:
        // the miss is the cap's, not the server's.
        return Ok(StepOutcome::Capped(format!(
            "{}; the server's service time met the SLO, so raise --max-connections",
            reason()
        )));
    }
    if !met {
        return Ok(StepOutcome::Missed(outcomes));
    }
    match &step.steady {
        Some(steady) if steady.verdict != CheckVerdict::Pass => {
            Ok(StepOutcome::Unsteady(outcomes, steady.message.clone()))
        }
        _ => Ok(StepOutcome::Met(outcomes)),
    }
}

/// Why a sweep stopped without a verdict on the server: the load was not applied as planned
/// (vload's threads, the machine or the connection cap), at which step, and what the steps
/// before it showed.
fn not_applied(
    stopped_by: &str,
    max: Option<f64>,
    steps: &[(f64, StageRecord, StepOutcome)],
    slo: &str,
) -> String {
    let (at, why) = steps
        .iter()
        .rev()
        .find_map(|(r, _, o)| match o {
            StepOutcome::ClientBound(why)
            | StepOutcome::MachineBusy(why)
            | StepOutcome::Capped(why) => Some((*r, why.as_str())),
            _ => None,
        })
        .unwrap_or((f64::NAN, "the load was not applied as planned"));
    let floor = max.map_or_else(
        || "no step met the SLO before that".to_owned(),
        |m| format!("the server met the SLO ({slo}) up to {} at least", rate(m)),
    );
    let who = match stopped_by {
        "client" => "vload's own threads were the limit",
        "machine" => "the machine was busy (other processes took the cores)",
        _ => "requests waited for the connection cap (--max-connections)",
    };
    format!(
        "{who} at {} ({why}): the sweep stopped without a verdict on the server; {floor}",
        rate(at)
    )
}

/// The sweep's answer from its search and steps.
pub fn verdict(
    search: &Search,
    terms: &[SloTerm],
    steps: &[(f64, StageRecord, StepOutcome)],
) -> SweepVerdict {
    let fell_behind = steps
        .iter()
        .filter(|(_, _, o)| o.is_verdict())
        .filter(|(r, s, _)| s.throughput_per_s < (1.0 - FELL_BEHIND) * r)
        .map(|(r, _, _)| *r)
        .reduce(f64::min);
    let stopped_by = search.stopped_by();
    let not_applied_load = matches!(stopped_by, "client" | "machine" | "connection_cap");
    // A sweep the load could not be applied in has no verdict on the server: a miss before
    // the stop may be the machine's doing as much as the step that stopped it, so it names
    // no failing rate (its step's record keeps the miss).
    let fail = search.first_failing().filter(|_| !not_applied_load);
    let max = search.max_rate();
    let slo = slo::slo_text(terms);
    let mut summary = match (stopped_by, max, fail) {
        ("client" | "machine" | "connection_cap", _, _) => {
            not_applied(stopped_by, max, steps, &slo)
        }
        ("interrupted", _, _) => format!(
            "interrupted: {}",
            max.map_or_else(
                || "no step met the SLO".to_owned(),
                |m| format!("the SLO ({slo}) was met up to {} so far", rate(m))
            )
        ),
        (_, Some(m), Some(f)) => format!(
            "capacity at the SLO ({slo}): {}; {} missed it",
            rate(m),
            rate(f)
        ),
        (_, None, Some(f)) => format!(
            "no step met the SLO ({slo}): the lowest, {}, missed it; sweep lower rates",
            rate(f)
        ),
        (_, Some(m), None) => format!(
            "every step met the SLO ({slo}) up to {}: the capacity lies above the highest rate swept; sweep higher",
            rate(m)
        ),
        (_, None, None) => "no step ran".to_owned(),
    };
    if !search.unrepeated().is_empty() {
        let rates: Vec<String> = search.unrepeated().iter().map(|r| rate(*r)).collect();
        summary.push_str(&format!(
            "; a miss at {} did not repeat when run again (a pause of the machine, not the server's limit)",
            rates.join(", ")
        ));
    }
    if let Some(behind) = fell_behind {
        summary.push_str(&format!(
            "; throughput fell more than {:.0}% behind the rate from {}",
            FELL_BEHIND * 100.0,
            rate(behind)
        ));
    }
    SweepVerdict {
        max_rate_per_s: max,
        first_failing_per_s: fail,
        fell_behind_per_s: fell_behind,
        stopped_by: stopped_by.to_owned(),
        summary,
    }
}

/// A rise of the median smaller than this share of the SLO's tightest latency limit does not
/// matter to it: a step is unsteady only for a rise beyond it (1 ms without a latency term).
const STEADY_FLOOR: f64 = 0.05;

/// A step's record, from its run, judged against `slo`: the measured window only (its
/// warm-up is left out), at `start_s` in the sweep.
pub fn step_record(run: &RunFile, index: u32, start_s: f64, slo: &[SloTerm]) -> StageRecord {
    let floor = slo
        .iter()
        .filter(|t| slo::quantile_of(t.metric).is_some())
        .map(|t| t.limit * STEADY_FLOOR)
        .reduce(f64::min)
        .unwrap_or(1e6);
    let t = &run.totals;
    let w = &run.window;
    let seconds = w.measured_s + w.wait_s;
    let rate = run.plan.rate_per_s.unwrap_or(0.0);
    StageRecord {
        index,
        warmup: false,
        start_s,
        duration_s: w.measured_s,
        from_rate_per_s: rate,
        to_rate_per_s: rate,
        intended: t.intended,
        sent: t.sent,
        completed: t.completed,
        unsent: t.unsent,
        unfinished: t.unfinished,
        late_sends: t.late_sends,
        status_codes: t.status_codes.clone(),
        errors: t.errors.iter().map(|(k, e)| (*k, e.count)).collect(),
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        hits: run.cache.hit,
        misses: run.cache.miss,
        stale: run
            .intervals
            .iter()
            .filter(|i| !i.warmup)
            .map(|i| i.stale)
            .sum(),
        stale_ages: run.cache.stale_ages,
        throughput_per_s: if seconds > 0.0 {
            t.successes(&run.plan) as f64 / seconds
        } else {
            0.0
        },
        response: run.latency.primary().clone(),
        service: run.latency.service.clone(),
        client_health: Some(run.client_health.clone()),
        steady: Some(crate::selfcheck::steady_state(run, floor)),
        upper_bounds: upper_bounds(run, slo),
        origin_state: None,
        origin_requests: None,
        server_cpu_s: run
            .server
            .as_ref()
            .and_then(|s| s.process.as_ref())
            .map(vload_schema::ProcessRecord::cpu_s),
    }
}

/// The upper end of each SLO quantile's 95% within-run interval, where the run supports one.
fn upper_bounds(run: &RunFile, slo: &[SloTerm]) -> Vec<vload_schema::QuantileBound> {
    slo.iter()
        .filter_map(|t| {
            let metric = match t.metric {
                vload_schema::SloMetric::P50 => crate::metric::Metric::P50,
                vload_schema::SloMetric::P90 => crate::metric::Metric::P90,
                vload_schema::SloMetric::P99 => crate::metric::Metric::P99,
                vload_schema::SloMetric::P999 => crate::metric::Metric::P999,
                vload_schema::SloMetric::Errors => return None,
            };
            let (_, upper) = crate::within_run::within_run(metric, run).ok()??;
            Some(vload_schema::QuantileBound {
                metric: t.metric,
                upper_ns: upper,
            })
        })
        .collect()
}

/// Where each step's measured window starts, in seconds from the first step's start.
pub fn step_starts(steps: &[RunFile]) -> Vec<f64> {
    let first = steps
        .first()
        .and_then(|r| epoch_ms(&r.started_at))
        .unwrap_or(0);
    steps
        .iter()
        .map(|r| {
            let at = epoch_ms(&r.started_at).unwrap_or(first);
            (at - first) as f64 / 1000.0 + r.window.warmup_s
        })
        .collect()
}

/// The sweep's run file: the steps merged (counts and histograms add, intervals on one
/// clock), one stage record per step, and the sweep's record.
///
/// # Errors
/// A histogram does not decode or add.
///
/// # Panics
/// If `steps` is empty.
pub fn assemble(
    steps: &[(String, RunFile)],
    stages: Vec<StageRecord>,
    record: SweepRecord,
) -> Result<RunFile, MergeError> {
    let mut out = merge(steps)?;
    let first = &steps[0].1;
    // Steps follow one another: their intervals are laid end to end on the sweep's clock,
    // each at its own offset (the merge's whole-second grid would add the partial seconds
    // where one step ends and the next begins into one).
    let runs: Vec<RunFile> = steps.iter().map(|(_, r)| r.clone()).collect();
    out.intervals = runs
        .iter()
        .zip(step_starts(&runs))
        .flat_map(|(run, start)| {
            let offset = start - run.window.warmup_s;
            run.intervals.iter().map(move |i| vload_schema::Interval {
                start_s: offset + i.start_s,
                ..i.clone()
            })
        })
        .collect();
    out.run_id = first.run_id.clone();
    out.label = first.label.clone();
    out.plan.rate_per_s = stages
        .iter()
        .map(|s| s.from_rate_per_s)
        .reduce(f64::max)
        .or(out.plan.rate_per_s);
    out.plan.rate_plan = Some(
        stages
            .iter()
            .map(|s| PlannedStage {
                from_rate_per_s: s.from_rate_per_s,
                to_rate_per_s: s.to_rate_per_s,
                duration_s: s.duration_s,
            })
            .collect(),
    );
    out.plan.duration_s = Some(stages.iter().map(|s| s.duration_s).sum());
    // One server record per step would count its CPU once per step; each step keeps its own.
    out.server = None;
    out.stages = stages;
    out.sweep = Some(record);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn met() -> StepOutcome {
        StepOutcome::Met(Vec::new())
    }

    fn missed() -> StepOutcome {
        StepOutcome::Missed(Vec::new())
    }

    /// Runs a search against a server that meets the SLO below `capacity`.
    fn sweep(rates: Vec<f64>, find_max: bool, capacity: f64) -> (Search, Vec<f64>) {
        let mut search = Search::new(rates, find_max, 0.0);
        let mut ran = Vec::new();
        while let Some(rate) = search.next() {
            ran.push(rate);
            let outcome = if rate < capacity { met() } else { missed() };
            search.record(rate, &outcome, true);
        }
        (search, ran)
    }

    #[test]
    fn a_sweep_stops_at_the_first_miss() {
        let (search, ran) = sweep(vec![100.0, 200.0, 300.0, 400.0], false, 250.0);
        assert_eq!(ran, [100.0, 200.0, 300.0]);
        assert_eq!(search.max_rate(), Some(200.0));
        assert_eq!(search.first_failing(), Some(300.0));
        assert_eq!(search.stopped_by(), "slo");
    }

    #[test]
    fn find_max_bisects_to_the_resolution() {
        let (search, ran) = sweep(vec![100.0, 200.0, 300.0, 400.0], true, 273.0);
        let (lo, hi) = (search.max_rate().unwrap(), search.first_failing().unwrap());
        assert!(lo < 273.0 && hi >= 273.0, "{lo} {hi}");
        assert!(hi - lo <= RESOLUTION * hi, "{lo}..{hi} after {ran:?}");
        assert!(ran.len() <= 3 + search::MAX_BISECTIONS as usize);
        // Nothing meets the SLO: bisection looks below the first step, down to the floor.
        let (search, _) = sweep(vec![100.0, 200.0], true, 40.0);
        assert!(search.max_rate().is_some_and(|m| m < 40.0 && m > 30.0));
        let mut search = Search::new(vec![100.0], true, 60.0);
        search.record(100.0, &missed(), true);
        assert_eq!(search.next(), None, "50/s is below the floor");
    }

    #[test]
    fn a_client_bound_step_ends_the_sweep_without_a_verdict() {
        let mut search = Search::new(vec![1e3, 1e6, 2e6], true, 0.0);
        search.record(1e3, &met(), true);
        search.record(1e6, &StepOutcome::ClientBound("late sends".into()), true);
        assert_eq!(search.next(), None);
        assert_eq!(search.stopped_by(), "client");
        assert_eq!(search.first_failing(), None);
    }

    #[test]
    fn every_step_met_says_sweep_higher() {
        let (search, _) = sweep(vec![10.0, 20.0], true, 1e9);
        assert_eq!(search.stopped_by(), "rates");
        let v = verdict(&search, &[], &[]);
        assert!(v.summary.contains("sweep higher"), "{}", v.summary);
    }

    #[test]
    fn a_miss_counts_only_when_it_repeats() {
        let mut search = Search::new(vec![100.0, 200.0, 300.0], false, 0.0).with_retries(1);
        search.record(100.0, &met(), true);
        search.record(200.0, &missed(), true);
        assert_eq!(search.next(), Some(200.0), "run again");
        search.record(200.0, &met(), true);
        assert_eq!(search.unrepeated(), [200.0]);
        assert_eq!(search.next(), Some(300.0));
        search.record(300.0, &missed(), true);
        assert_eq!(search.next(), Some(300.0));
        search.record(300.0, &missed(), true);
        assert_eq!(search.next(), None);
        assert_eq!(
            (search.max_rate(), search.first_failing()),
            (Some(200.0), Some(300.0))
        );
        let v = verdict(&search, &[], &[]);
        assert!(
            v.summary.contains("a miss at 200.0/s did not repeat"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn bisection_rates_read_as_rates() {
        assert_eq!(search::round3(12_345.6), 12_300.0);
        assert_eq!(search::round3(250.0), 250.0);
        assert_eq!(search::round3(0.123_45), 0.123);
    }
}

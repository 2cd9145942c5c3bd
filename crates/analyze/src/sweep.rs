//! Capacity sweeps: the steps' search, each step held to the SLO, the answer, and the sweep's
//! run file.
//!
//! A sweep runs the same workload at rising rates, each step a run of its own (with its own
//! warm-up), and stops at the first step that misses the SLO. With `find_max` it then
//! bisects between the last step that met it and the first that missed, to a resolution of
//! [`RESOLUTION`]. A step where vload itself could not keep up (a `client_bound` health
//! verdict) ends the sweep without a verdict on the server: its latencies describe vload.

use vload_schema::{
    HealthVerdict, PlannedStage, RunFile, SchemaError, SloTerm, StageRecord, SweepRecord,
    SweepVerdict,
};

use crate::merge::{MergeError, epoch_ms, merge};
use crate::slo::{self, TermOutcome};
use crate::units::rate;

/// Bisection stops once the interval between the last pass and the first miss is this share
/// of the miss's rate.
pub const RESOLUTION: f64 = 0.02;
/// At most this many bisection steps (from a 10% interval, 2% takes three).
const MAX_BISECTIONS: u32 = 6;
/// A step whose throughput is more than this share below its rate fell behind.
pub const FELL_BEHIND: f64 = 0.05;

/// How one step went.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// Every term of the SLO was met.
    Met(Vec<TermOutcome>),
    /// A term was missed, by the server's doing (the client kept up).
    Missed(Vec<TermOutcome>),
    /// vload could not keep up: the first reason.
    ClientBound(String),
    /// The step was interrupted (Ctrl-C).
    Interrupted,
}

impl StepOutcome {
    /// `met`, `missed`, `client-bound`, `interrupted`.
    pub fn word(&self) -> &'static str {
        match self {
            StepOutcome::Met(_) => "met",
            StepOutcome::Missed(_) => "missed",
            StepOutcome::ClientBound(_) => "client-bound",
            StepOutcome::Interrupted => "interrupted",
        }
    }
}

/// Holds a finished step to the SLO: client health first (a client-bound step says nothing
/// about the server), then each term.
///
/// # Errors
/// A histogram does not decode.
pub fn judge(
    terms: &[SloTerm],
    step: &StageRecord,
    interrupted: bool,
) -> Result<StepOutcome, SchemaError> {
    if interrupted {
        return Ok(StepOutcome::Interrupted);
    }
    if let Some(health) = &step.client_health
        && health.verdict == HealthVerdict::ClientBound
    {
        let signal = health
            .signals
            .iter()
            .find(|s| s.level == HealthVerdict::ClientBound);
        let reason = signal
            .map(|s| s.message.clone())
            .or_else(|| health.reasons.first().cloned())
            .unwrap_or_else(|| "the client health verdict is client_bound".to_owned());
        let advice = match signal.map(|s| s.cause) {
            Some(vload_schema::Cause::Machine) => {
                "on one machine that is often the server under test: sweep from another machine, \
                 or give vload cores of its own (taskset)"
            }
            Some(vload_schema::Cause::ConnectionCap) => "raise --max-connections",
            _ => "give vload more threads or cores (-t), or split the load with --shard",
        };
        return Ok(StepOutcome::ClientBound(format!("{reason}; {advice}")));
    }
    let outcomes = slo::evaluate(terms, step)?;
    if outcomes.iter().all(|o| o.met) {
        return Ok(StepOutcome::Met(outcomes));
    }
    // Requests that waited in vload for one of the connections it may open: if the server's
    // own share of the latency (service time, from the actual write) meets the SLO, the
    // miss is the connection cap's, not the server's.
    let capped = step.client_health.as_ref().and_then(|h| {
        h.signals
            .iter()
            .find(|s| s.cause == vload_schema::Cause::ConnectionCap)
    });
    if let Some(signal) = capped
        && slo::evaluate_on(terms, step, &step.service)?
            .iter()
            .all(|o| o.met)
    {
        return Ok(StepOutcome::ClientBound(format!(
            "{}; the server's service time met the SLO, so raise --max-connections",
            signal.message
        )));
    }
    Ok(StepOutcome::Missed(outcomes))
}

/// Whether a missed step is worth running again. A pause of a busy machine pushes a tail
/// past the SLO while the server still carries the rate (the requests held up by the pause
/// are answered later in the step); a server past its capacity falls behind the rate
/// (throughput more than [`FELL_BEHIND`] under it) and would miss again, so such a step is
/// not repeated.
pub fn repeatable(step_rate: f64, step: &StageRecord) -> bool {
    step.throughput_per_s >= (1.0 - FELL_BEHIND) * step_rate
}

/// The sweep's search: the planned rates in order, then bisection.
#[derive(Debug, Clone)]
pub struct Search {
    planned: Vec<f64>,
    next_planned: usize,
    find_max: bool,
    /// Bisection goes no lower than this rate.
    floor: f64,
    bisections: u32,
    /// The highest rate that met the SLO, and the lowest that missed it.
    pass: Option<f64>,
    fail: Option<f64>,
    stopped_by: Option<&'static str>,
    /// A step that misses is run again up to this many times before the miss counts.
    retries: u32,
    /// The rate being run again after a miss, and its misses so far.
    retrying: Option<(f64, u32)>,
    /// Rates whose miss did not repeat: a pause of the machine, not the server's limit.
    unrepeated: Vec<f64>,
}

impl Search {
    /// A search over `rates` (ascending), bisecting after the first miss with `find_max`,
    /// no lower than `floor` (a step below it could not measure the SLO in a sane time).
    pub fn new(rates: Vec<f64>, find_max: bool, floor: f64) -> Self {
        Search {
            planned: rates,
            next_planned: 0,
            find_max,
            floor,
            bisections: 0,
            pass: None,
            fail: None,
            stopped_by: None,
            retries: 0,
            retrying: None,
            unrepeated: Vec::new(),
        }
    }

    /// Runs a step that missed again, up to `retries` times; the miss counts only if every
    /// run misses. On a shared machine one pause can push a tail quantile over the SLO at a
    /// rate the server holds; a real limit misses every time.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Rates that missed once and met the SLO when run again.
    pub fn unrepeated(&self) -> &[f64] {
        &self.unrepeated
    }

    /// The rate of the next step; `None` when the sweep is over.
    pub fn next(&self) -> Option<f64> {
        if self.stopped_by.is_some() {
            return None;
        }
        if let Some((rate, _)) = self.retrying {
            return Some(rate);
        }
        match self.fail {
            None => self.planned.get(self.next_planned).copied(),
            Some(hi) => {
                let lo = self.pass.unwrap_or(0.0);
                let narrow = hi - lo <= RESOLUTION * hi;
                if !self.find_max || narrow || self.bisections >= MAX_BISECTIONS {
                    return None;
                }
                Some(round3((lo + hi) / 2.0)).filter(|mid| *mid >= self.floor)
            }
        }
    }

    /// Takes in how the step at `rate` went; a miss is run again (within the retries) only
    /// when `repeatable` (see [`repeatable`]).
    pub fn record(&mut self, rate: f64, outcome: &StepOutcome, repeatable: bool) {
        let retried = self.retrying.take().filter(|(r, _)| *r == rate);
        if retried.is_none() {
            if self.fail.is_some() {
                self.bisections += 1;
            } else {
                self.next_planned += 1;
            }
        }
        match outcome {
            StepOutcome::Met(_) => {
                if retried.is_some() {
                    self.unrepeated.push(rate);
                }
                self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
            }
            StepOutcome::Missed(_) => {
                let misses = retried.map_or(1, |(_, n)| n + 1);
                if repeatable && misses <= self.retries {
                    self.retrying = Some((rate, misses));
                } else {
                    self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
                }
            }
            StepOutcome::ClientBound(_) => self.stopped_by = Some("client"),
            StepOutcome::Interrupted => self.stopped_by = Some("interrupted"),
        }
    }

    /// What ended the sweep: `client`, `interrupted`, `slo` or `rates`.
    pub fn stopped_by(&self) -> &'static str {
        self.stopped_by
            .unwrap_or(if self.fail.is_some() { "slo" } else { "rates" })
    }

    /// The highest rate that met the SLO.
    pub fn max_rate(&self) -> Option<f64> {
        self.pass
    }

    /// The lowest rate that missed it.
    pub fn first_failing(&self) -> Option<f64> {
        self.fail
    }
}

/// A rate rounded to three significant digits, so bisection steps read as rates people pick.
fn round3(x: f64) -> f64 {
    if x <= 0.0 {
        return x;
    }
    let scale = 10f64.powi(x.log10().floor() as i32 - 2);
    (x / scale).round() * scale
}

/// The sweep's answer from its search and steps.
pub fn verdict(
    search: &Search,
    terms: &[SloTerm],
    steps: &[(f64, StageRecord, StepOutcome)],
) -> SweepVerdict {
    let fell_behind = steps
        .iter()
        .filter(|(_, _, o)| !matches!(o, StepOutcome::ClientBound(_) | StepOutcome::Interrupted))
        .filter(|(r, s, _)| s.throughput_per_s < (1.0 - FELL_BEHIND) * r)
        .map(|(r, _, _)| *r)
        .reduce(f64::min);
    let stopped_by = search.stopped_by();
    let (max, fail) = (search.max_rate(), search.first_failing());
    let slo = slo::slo_text(terms);
    let mut summary = match (stopped_by, max, fail) {
        ("client", _, _) => {
            let (at, why) = steps
                .iter()
                .rev()
                .find_map(|(r, _, o)| match o {
                    StepOutcome::ClientBound(why) => Some((*r, why.as_str())),
                    _ => None,
                })
                .unwrap_or((f64::NAN, "the client could not keep up"));
            let floor = max.map_or_else(
                || "no step met the SLO before that".to_owned(),
                |m| format!("the server met the SLO ({slo}) up to {} at least", rate(m)),
            );
            format!(
                "vload itself was the bottleneck at {} ({why}): the sweep stopped without a verdict on the server; {floor}",
                rate(at)
            )
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

/// A step's record, from its run: the measured window only (its warm-up is left out), at
/// `start_s` in the sweep.
pub fn step_record(run: &RunFile, index: u32, start_s: f64) -> StageRecord {
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
        late_sends: t.late_sends,
        status_codes: t.status_codes.clone(),
        errors: t.errors.iter().map(|(k, e)| (*k, e.count)).collect(),
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        hits: run.cache.hit,
        misses: run.cache.miss,
        throughput_per_s: if seconds > 0.0 {
            t.successes() as f64 / seconds
        } else {
            0.0
        },
        response: run.latency.primary().clone(),
        service: run.latency.service.clone(),
        client_health: Some(run.client_health.clone()),
        server_cpu_s: run
            .server
            .as_ref()
            .and_then(|s| s.process.as_ref())
            .map(vload_schema::ProcessRecord::cpu_s),
    }
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
        assert!(ran.len() <= 3 + MAX_BISECTIONS as usize);
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
        assert_eq!(round3(12_345.6), 12_300.0);
        assert_eq!(round3(250.0), 250.0);
        assert_eq!(round3(0.123_45), 0.123);
    }
}

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
use crate::slo::{self, TermOutcome};
use crate::units::rate;
use offer::offer_changed;
pub use offer::{FELL_BEHIND, machine_evidence, repeatable};

/// Bisection stops once the interval between the last pass and the first miss is this share
/// of the miss's rate.
pub const RESOLUTION: f64 = 0.02;
/// At most this many bisection steps (from a 10% interval, 2% takes three).
const MAX_BISECTIONS: u32 = 6;
/// A confirmation that overturns the answer reopens a wider interval: it leaves at least
/// this many bisections for it (from 25%, 3.1%), at most [`MAX_REOPENED`] times.
const AFTER_OVERTURN: u32 = 3;
const MAX_REOPENED: u32 = 2;

/// How one step went.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// Every term of the SLO was met, in a steady state.
    Met(Vec<TermOutcome>),
    /// A term was missed, by the server's doing (the load was applied as planned, or the
    /// server took connections too slowly for it).
    Missed(Vec<TermOutcome>),
    /// The terms held, but the step was not in a steady state (or too short to tell): its
    /// queue was growing. A miss the step had not yet shown: counted as a miss.
    Unsteady(Vec<TermOutcome>, String),
    /// vload's own threads were the limit: the first reason.
    ClientBound(String),
    /// Other processes took the cores: the planned load was not applied.
    MachineBusy(String),
    /// Requests waited for the connection cap (`--max-connections`), and the server's own
    /// share of the latency met the SLO: vload's limit as the user set it.
    Capped(String),
    /// The step was interrupted (Ctrl-C).
    Interrupted,
}

impl StepOutcome {
    /// `met`, `missed`, `unsteady`, `client-bound`, `machine-busy`, `connection-capped`,
    /// `interrupted`.
    pub fn word(&self) -> &'static str {
        match self {
            StepOutcome::Met(_) => "met",
            StepOutcome::Missed(_) => "missed",
            StepOutcome::Unsteady(..) => "unsteady",
            StepOutcome::ClientBound(_) => HealthVerdict::ClientBound.name(),
            StepOutcome::MachineBusy(_) => HealthVerdict::MachineBusy.name(),
            StepOutcome::Capped(_) => HealthVerdict::ConnectionCapped.name(),
            StepOutcome::Interrupted => "interrupted",
        }
    }

    /// True for the outcomes that are the server's: met, missed, unsteady.
    pub fn is_verdict(&self) -> bool {
        matches!(
            self,
            StepOutcome::Met(_) | StepOutcome::Missed(_) | StepOutcome::Unsteady(..)
        )
    }
}

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

/// How many times its stage the answer's confirmation is held: at 99% of a server's
/// capacity a queue grows by a request every few hundred, which an eight-second step cannot
/// see (#58: 6 slots of 4 ms answered 1,350/s, and 15 s there gave p99 34 ms against the
/// SLO's 30 ms).
pub const CONFIRM_HOLD: u32 = 3;

/// The sweep's search: the planned rates in order, then bisection, then a confirmation of
/// the answer.
#[derive(Debug, Clone)]
pub struct Search {
    planned: Vec<f64>,
    next_planned: usize,
    find_max: bool,
    /// Bisection goes no lower than this rate.
    floor: f64,
    bisections: u32,
    /// Answers a confirmation overturned.
    overturned: u32,
    /// Every rate that met the SLO (a confirmation's miss falls back to the next below).
    passes: Vec<f64>,
    fail: Option<f64>,
    stopped_by: Option<&'static str>,
    /// A step that misses with evidence of the machine is run again up to this many times;
    /// a busy machine's step too. With `find_max`, the answer is confirmed this many times.
    retries: u32,
    /// The rate being run again, and its runs so far.
    retrying: Option<(f64, u32)>,
    /// Answers run again and met again.
    confirmed: Vec<f64>,
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
            overturned: 0,
            passes: Vec::new(),
            fail: None,
            stopped_by: None,
            retries: 0,
            retrying: None,
            confirmed: Vec::new(),
            unrepeated: Vec::new(),
        }
    }

    /// Runs a step again up to `retries` times when the machine may have caused its miss
    /// or kept its load from being applied; with `find_max`, confirms the answer as often.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Rates that missed once with evidence of the machine and met the SLO when run again.
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
                let lo = self.max_rate().unwrap_or(0.0);
                let narrow = hi - lo <= RESOLUTION * hi;
                if !self.find_max || narrow || self.bisections >= MAX_BISECTIONS {
                    return self.to_confirm();
                }
                Some(round3((lo + hi) / 2.0))
                    .filter(|mid| *mid >= self.floor)
                    .or_else(|| self.to_confirm())
            }
        }
    }

    /// True when the next step ([`Search::next`]) is the answer's confirmation: a sweep holds
    /// it longer ([`CONFIRM_HOLD`]), so a queue that grows slowly near the capacity shows.
    pub fn confirming(&self) -> bool {
        self.retrying.is_none()
            && self.fail.is_some()
            && self.stopped_by.is_none()
            && self.to_confirm().is_some()
            && self.to_confirm() == self.next()
    }

    /// The answer, if it still wants confirming: `find_max` with retries, not yet run again.
    fn to_confirm(&self) -> Option<f64> {
        let pass = self.max_rate()?;
        (self.find_max && self.retries > 0 && !self.confirmed.contains(&pass)).then_some(pass)
    }

    /// Takes in how the step at `rate` went; a miss is run again (within the retries) only
    /// when `repeatable` (see [`repeatable`]).
    pub fn record(&mut self, rate: f64, outcome: &StepOutcome, repeatable: bool) {
        if self.retrying.is_none() && self.to_confirm() == Some(rate) && self.fail.is_some() {
            return self.confirm(rate, outcome);
        }
        let retried = self.retrying.take().filter(|(r, _)| *r == rate);
        if retried.is_none() {
            if self.fail.is_some() {
                self.bisections += 1;
            } else {
                self.next_planned += 1;
            }
        }
        let runs = retried.map_or(1, |(_, n)| n + 1);
        match outcome {
            StepOutcome::Met(_) => {
                if retried.is_some() {
                    self.unrepeated.push(rate);
                }
                self.passes.push(rate);
            }
            StepOutcome::Missed(_) | StepOutcome::Unsteady(..) => {
                if repeatable && runs <= self.retries {
                    self.retrying = Some((rate, runs));
                } else {
                    self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
                }
            }
            StepOutcome::MachineBusy(_) if runs <= self.retries => {
                self.retrying = Some((rate, runs));
            }
            other => self.record_stop(other),
        }
    }

    /// A confirmation of the answer at `rate`: a pass confirms it; a miss overturns it (it
    /// becomes the lowest miss, and bisection goes on below it).
    fn confirm(&mut self, rate: f64, outcome: &StepOutcome) {
        match outcome {
            StepOutcome::Met(_) => self.confirmed.push(rate),
            StepOutcome::Missed(_) | StepOutcome::Unsteady(..) => {
                self.passes.retain(|p| *p < rate);
                self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
                // Seen under load (#30): a sweep whose budget was spent above the overturned
                // answer stopped with 350..400/s, 12.5% wide.
                if self.overturned < MAX_REOPENED {
                    self.overturned += 1;
                    self.bisections = self.bisections.min(MAX_BISECTIONS - AFTER_OVERTURN);
                }
            }
            other => self.record_stop(other),
        }
    }

    /// A step that says nothing about the server ends the sweep, naming why.
    fn record_stop(&mut self, outcome: &StepOutcome) {
        self.stopped_by = Some(match outcome {
            StepOutcome::ClientBound(_) => "client",
            StepOutcome::MachineBusy(_) => "machine",
            StepOutcome::Capped(_) => "connection_cap",
            _ => "interrupted",
        });
    }

    /// What ended the sweep: `client`, `machine`, `connection_cap`, `interrupted`, `slo` or
    /// `rates`.
    pub fn stopped_by(&self) -> &'static str {
        self.stopped_by
            .unwrap_or(if self.fail.is_some() { "slo" } else { "rates" })
    }

    /// The highest rate that met the SLO (and, when confirmed, met it again).
    pub fn max_rate(&self) -> Option<f64> {
        self.passes.iter().copied().reduce(f64::max)
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

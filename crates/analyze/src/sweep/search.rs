//! The sweep's search: the planned rates in order, then bisection after the first miss,
//! then the answer's confirmation (held longer, [`CONFIRM_HOLD`]).

use super::outcome::StepOutcome;

/// Bisection stops once the interval between the last pass and the first miss is this share
/// of the miss's rate.
pub const RESOLUTION: f64 = 0.02;
/// At most this many bisection steps (from a 10% interval, 2% takes three).
pub(super) const MAX_BISECTIONS: u32 = 6;
/// A confirmation that overturns the answer reopens a wider interval: it leaves at least
/// this many bisections for it (from 25%, 3.1%), at most [`MAX_REOPENED`] times.
const AFTER_OVERTURN: u32 = 3;
const MAX_REOPENED: u32 = 2;

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
pub(super) fn round3(x: f64) -> f64 {
    if x <= 0.0 {
        return x;
    }
    let scale = 10f64.powi(x.log10().floor() as i32 - 2);
    (x / scale).round() * scale
}

//! Comparing two capacity sweeps: where each one's capacity at the SLO lies, whether the
//! two intervals part, and the steps both ran, side by side.
//!
//! A sweep brackets its capacity between the highest rate that met the SLO and the lowest
//! that missed it: the capacity lies in `[met, missed)`. Two sweeps differ when their
//! brackets do not overlap; the difference then lies between the gap's ends. One sweep a
//! side measures no run-to-run variation, which the notes say.

use serde::Serialize;
use vload_schema::{RunFile, SchemaError, SweepRecord};

use super::{Check, GroupInfo, Severity};
use crate::staged::{StageSummary, stages_of};
use crate::units::rate;

/// Where a sweep's capacity at the SLO lies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bracket {
    /// The highest rate that met the SLO (0 when none did).
    pub met_per_s: f64,
    /// The lowest rate that missed it; `None` when none did (every step met it, or the
    /// sweep stopped client-bound): the capacity is at least `met_per_s`.
    pub missed_per_s: Option<f64>,
}

impl Bracket {
    fn of(sweep: &SweepRecord) -> Bracket {
        Bracket {
            met_per_s: sweep.verdict.max_rate_per_s.unwrap_or(0.0),
            missed_per_s: sweep.verdict.first_failing_per_s,
        }
    }

    /// `[9,500.0/s, 10,000.0/s)` or `≥ 9,500.0/s`.
    pub fn text(&self) -> String {
        match self.missed_per_s {
            Some(hi) => format!("[{}, {})", rate(self.met_per_s), rate(hi)),
            None => format!("≥ {}", rate(self.met_per_s)),
        }
    }
}

/// One rate both sweeps (or either) ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepPair {
    /// The step's rate.
    pub rate_per_s: f64,
    /// A's step at this rate.
    pub a: Option<StageSummary>,
    /// B's.
    pub b: Option<StageSummary>,
}

/// Two sweeps compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepComparison {
    /// Side A.
    pub a: GroupInfo,
    /// Side B.
    pub b: GroupInfo,
    /// The SLO (A's).
    pub slo: String,
    /// Where A's capacity lies, and what ended its sweep.
    pub capacity_a: Bracket,
    /// B's.
    pub capacity_b: Bracket,
    /// `A` or `B` when one side holds more, `None` when the brackets overlap.
    pub higher: Option<char>,
    /// How much more the higher side holds, in percent of the lower: the least and the most
    /// the brackets allow (the most is `None` when the higher side's bracket is open).
    pub margin_pct: Option<(f64, Option<f64>)>,
    /// The answer in one sentence.
    pub verdict: String,
    /// Comparability findings.
    pub checks: Vec<Check>,
    /// Every rate either side ran, ascending.
    pub steps: Vec<StepPair>,
    /// What the answer can and cannot say.
    pub notes: Vec<String>,
}

/// Why two files cannot be compared as sweeps.
#[derive(Debug, thiserror::Error)]
pub enum SweepCompareError {
    /// A file is not a sweep.
    #[error("'{0}' is not a sweep (vload sweep writes one): compare a sweep with a sweep")]
    NotSweep(String),
    /// A histogram did not decode.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// Compares sweep `a` with sweep `b`.
///
/// # Errors
/// A file is not a sweep, or a histogram does not decode.
pub fn compare_sweeps(
    a: (&str, &RunFile),
    b: (&str, &RunFile),
) -> Result<SweepComparison, SweepCompareError> {
    let (sa, sb) = (sweep_of(a.0, a.1)?, sweep_of(b.0, b.1)?);
    let (ca, cb) = (Bracket::of(sa), Bracket::of(sb));
    let (higher, margin_pct) = part(ca, cb);
    let mut checks = sweep_checks(a.1, b.1, sa, sb);
    checks.extend(
        crate::checks::comparability(std::slice::from_ref(a.1), std::slice::from_ref(b.1), None)
            .into_iter()
            // The sweeps' own rates and lengths differ by design; their checks are above.
            .filter(|c| !c.message.starts_with("offered load differs"))
            .filter(|c| !c.message.starts_with("measured durations differ"))
            .filter(|c| !c.message.contains("runs: a distribution-free test")),
    );
    Ok(SweepComparison {
        a: GroupInfo {
            name: a.0.to_owned(),
            runs: vec![a.1.run_id.clone()],
        },
        b: GroupInfo {
            name: b.0.to_owned(),
            runs: vec![b.1.run_id.clone()],
        },
        slo: crate::slo::slo_text(&sa.slo),
        capacity_a: ca,
        capacity_b: cb,
        higher,
        margin_pct,
        verdict: verdict(a.0, b.0, ca, cb, higher, margin_pct, sa, sb),
        checks,
        steps: pairs(a.1, b.1)?,
        notes: vec![
            "one sweep a side: a step near the capacity can meet the SLO in one sweep and miss it in the next; repeat both sweeps (alternating A and B) before resting a claim on a small gap".to_owned(),
            "capacity brackets are [highest rate that met the SLO, lowest that missed it); narrow them with --find-max".to_owned(),
        ],
    })
}

fn sweep_of<'a>(name: &str, run: &'a RunFile) -> Result<&'a SweepRecord, SweepCompareError> {
    run.sweep
        .as_ref()
        .ok_or_else(|| SweepCompareError::NotSweep(name.to_owned()))
}

/// Which side's bracket lies wholly above the other's, and by how much.
fn part(a: Bracket, b: Bracket) -> (Option<char>, Option<(f64, Option<f64>)>) {
    let above = |hi: Bracket, lo: Bracket| -> Option<(f64, Option<f64>)> {
        let lo_top = lo.missed_per_s?;
        if hi.met_per_s < lo_top || lo_top <= 0.0 {
            return None;
        }
        let least = (hi.met_per_s / lo_top - 1.0) * 100.0;
        let most = hi
            .missed_per_s
            .filter(|_| lo.met_per_s > 0.0)
            .map(|top| (top / lo.met_per_s - 1.0) * 100.0);
        Some((least, most))
    };
    match (above(b, a), above(a, b)) {
        (Some(m), _) => (Some('B'), Some(m)),
        (None, Some(m)) => (Some('A'), Some(m)),
        (None, None) => (None, None),
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one sentence from every part of the answer"
)]
fn verdict(
    name_a: &str,
    name_b: &str,
    ca: Bracket,
    cb: Bracket,
    higher: Option<char>,
    margin: Option<(f64, Option<f64>)>,
    sa: &SweepRecord,
    sb: &SweepRecord,
) -> String {
    let client = |name: &str, s: &SweepRecord| {
        (s.verdict.stopped_by == "client").then(|| {
            format!("{name}'s sweep stopped client-bound, so its capacity is only known to be at least {}", rate(s.verdict.max_rate_per_s.unwrap_or(0.0)))
        })
    };
    let caveat: Vec<String> = [client(name_a, sa), client(name_b, sb)]
        .into_iter()
        .flatten()
        .collect();
    let mut text = match (higher, margin) {
        (Some(side), Some((least, most))) => {
            let (hi, lo) = if side == 'B' {
                (name_b, name_a)
            } else {
                (name_a, name_b)
            };
            let most = most.map_or_else(|| "more".to_owned(), |m| format!("{m:.0}%"));
            format!(
                "{hi} holds more at the SLO than {lo}: {least:.0}% to {most} (capacity {} vs {})",
                if side == 'B' { cb.text() } else { ca.text() },
                if side == 'B' { ca.text() } else { cb.text() },
            )
        }
        _ => format!(
            "cannot tell apart: the capacity brackets overlap ({name_a} {}, {name_b} {}); bisect finer with --find-max or sweep wider",
            ca.text(),
            cb.text()
        ),
    };
    if !caveat.is_empty() {
        text.push_str("; ");
        text.push_str(&caveat.join("; "));
    }
    text
}

/// Warnings when the two sweeps did not hold their steps to the same standard.
fn sweep_checks(a: &RunFile, b: &RunFile, sa: &SweepRecord, sb: &SweepRecord) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut warn = |message: String| {
        checks.push(Check {
            severity: Severity::Warning,
            message,
        });
    };
    if sa.slo != sb.slo {
        warn(format!(
            "the SLOs differ (A {}, B {}): capacities at different objectives are not comparable",
            crate::slo::slo_text(&sa.slo),
            crate::slo::slo_text(&sb.slo)
        ));
    }
    if sa.stage_s != sb.stage_s || sa.warmup_s != sb.warmup_s {
        warn(format!(
            "steps differ in length (A {} s after {} s warm-up, B {} s after {} s): a longer step lets a queue grow further",
            sa.stage_s, sa.warmup_s, sb.stage_s, sb.warmup_s
        ));
    }
    if a.plan.arrival != b.plan.arrival {
        warn(
            "arrival processes differ (constant and poisson): Poisson bursts raise the tail"
                .to_owned(),
        );
    }
    checks
}

/// Every step rate of either sweep, with each side's step at it.
fn pairs(a: &RunFile, b: &RunFile) -> Result<Vec<StepPair>, SchemaError> {
    let (sa, sb) = (stages_of(a)?, stages_of(b)?);
    let mut rates: Vec<f64> = sa.iter().chain(&sb).map(|s| s.from_rate_per_s).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let at = |side: &[StageSummary], r: f64| side.iter().find(|s| s.from_rate_per_s == r).cloned();
    Ok(rates
        .into_iter()
        .map(|r| StepPair {
            rate_per_s: r,
            a: at(&sa, r),
            b: at(&sb, r),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bracket(met: f64, missed: Option<f64>) -> Bracket {
        Bracket {
            met_per_s: met,
            missed_per_s: missed,
        }
    }

    #[test]
    fn brackets_that_part_name_the_higher_side_and_the_margin() {
        let (side, margin) = part(
            bracket(9_500.0, Some(10_000.0)),
            bracket(12_000.0, Some(12_500.0)),
        );
        assert_eq!(side, Some('B'));
        let (least, most) = margin.unwrap();
        assert!((least - 20.0).abs() < 1e-9, "{least}");
        assert!((most.unwrap() - 31.578_947).abs() < 1e-3);
        let (side, _) = part(bracket(12_000.0, None), bracket(9_000.0, Some(10_000.0)));
        assert_eq!(side, Some('A'), "an open bracket above a closed one");
    }

    #[test]
    fn overlapping_or_open_brackets_do_not_part() {
        assert_eq!(
            part(
                bracket(9_500.0, Some(10_500.0)),
                bracket(10_000.0, Some(11_000.0))
            )
            .0,
            None
        );
        // Both open: each only known to be at least something.
        assert_eq!(
            part(bracket(9_000.0, None), bracket(12_000.0, None)).0,
            None
        );
    }
}

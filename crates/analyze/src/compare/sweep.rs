//! Comparing two capacity sweeps: where each one's capacity at the SLO lies, whether the
//! two intervals part, and the steps both ran, side by side.
//!
//! A sweep brackets its capacity between the highest rate that met the SLO and the lowest
//! that missed it: the capacity lies in `[met, missed)`. Two sweeps differ when their
//! brackets do not overlap; the difference then lies between the gap's ends. One sweep a
//! side measures no run-to-run variation, which the notes say.

use serde::Serialize;
use vload_schema::{RunFile, SchemaError, SweepRecord};

use super::{Check, GroupInfo, Row, Severity, Verdict, compare_metric};
use crate::metric::Metric;
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
    /// A sweep's bracket. Only a sweep that ended on the SLO (or ran every rate) bounds its
    /// capacity from above: one stopped because its load was not applied (vload's threads,
    /// a busy machine, the connection cap) or interrupted knows only a lower bound, whatever
    /// step missed before (see #30: two client-bound sweeps of one server were told apart
    /// by "700% to 1151%").
    fn of(sweep: &SweepRecord) -> Bracket {
        let clean = matches!(sweep.verdict.stopped_by.as_str(), "slo" | "rates");
        Bracket {
            met_per_s: sweep.verdict.max_rate_per_s.unwrap_or(0.0),
            missed_per_s: sweep.verdict.first_failing_per_s.filter(|_| clean),
        }
    }

    /// `[9,500.0/s, 10,000.0/s)`, `≥ 9,500.0/s`, `< 1,000.0/s`, or `unknown` when no step
    /// met the SLO and none missed it (the sweep stopped client-bound at its first step).
    pub fn text(&self) -> String {
        match (self.met_per_s > 0.0, self.missed_per_s) {
            (true, Some(hi)) => format!("[{}, {})", rate(self.met_per_s), rate(hi)),
            (false, Some(hi)) => format!("< {}", rate(hi)),
            (true, None) => format!("≥ {}", rate(self.met_per_s)),
            (false, None) => "unknown".to_owned(),
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

/// Two sweeps, or two groups of sweeps, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepComparison {
    /// Side A.
    pub a: GroupInfo,
    /// Side B.
    pub b: GroupInfo,
    /// The SLO (A's first sweep's).
    pub slo: String,
    /// Where each of A's sweeps put its capacity.
    pub brackets_a: Vec<Bracket>,
    /// B's.
    pub brackets_b: Vec<Bracket>,
    /// The capacity (highest rate that met the SLO) of each sweep, compared as compare
    /// compares any metric: the method the group sizes allow.
    pub capacity: Row,
    /// One sweep a side: `A` or `B` when one side's bracket lies wholly above the other's;
    /// groups: the side the capacity row finds better. `None` when neither.
    pub higher: Option<char>,
    /// One sweep a side: how much more the higher side holds, in percent of the lower, the
    /// least and the most the brackets allow (`None` for the most when the higher side's
    /// bracket is open).
    pub margin_pct: Option<(f64, Option<f64>)>,
    /// The answer in one sentence.
    pub verdict: String,
    /// Comparability findings.
    pub checks: Vec<Check>,
    /// p99 at each rate every sweep ran, compared across the sweeps.
    pub p99_at: Vec<(f64, Row)>,
    /// One sweep a side: every rate either ran, side by side.
    pub steps: Vec<StepPair>,
    /// What the answer can and cannot say.
    pub notes: Vec<String>,
}

/// Why files cannot be compared as sweeps.
#[derive(Debug, thiserror::Error)]
pub enum SweepCompareError {
    /// A file is not a sweep.
    #[error("{0} is not a sweep (vload sweep writes one): compare sweeps with sweeps")]
    NotSweep(String),
    /// A histogram did not decode.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// Compares the sweeps of group `a` with those of group `b` (each at least one).
///
/// # Errors
/// A file is not a sweep, or a histogram does not decode.
///
/// # Panics
/// If a group is empty.
pub fn compare_sweeps(
    (name_a, a): (&str, &[RunFile]),
    (name_b, b): (&str, &[RunFile]),
) -> Result<SweepComparison, SweepCompareError> {
    assert!(!a.is_empty() && !b.is_empty(), "each side needs a sweep");
    let records = |name: &str, runs: &[RunFile]| -> Result<Vec<SweepRecord>, SweepCompareError> {
        runs.iter().map(|r| sweep_of(name, r).cloned()).collect()
    };
    let (sa, sb) = (records(name_a, a)?, records(name_b, b)?);
    let (brackets_a, brackets_b): (Vec<Bracket>, Vec<Bracket>) = (
        sa.iter().map(Bracket::of).collect(),
        sb.iter().map(Bracket::of).collect(),
    );
    let capacity = |runs: &[RunFile]| {
        runs.iter()
            .map(|r| Metric::Capacity.of(r))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut capacity = compare_metric(Metric::Capacity, true, capacity(a)?, capacity(b)?);
    let single = a.len() == 1 && b.len() == 1;
    let (higher, margin_pct, verdict) = if single {
        // One sweep a side has no spread to test, but its brackets are measured bounds:
        // brackets that part are the answer, and the row says so rather than "inconclusive".
        let (higher, margin) = part(brackets_a[0], brackets_b[0]);
        capacity.verdict = match higher {
            Some('A') => Verdict::ABetter,
            Some('B') => Verdict::BBetter,
            _ => Verdict::Inconclusive,
        };
        let text = verdict(
            (name_a, &sa[0], brackets_a[0]),
            (name_b, &sb[0], brackets_b[0]),
            higher,
            margin,
        );
        (higher, margin, text)
    } else {
        let side = match capacity.verdict {
            Verdict::ABetter => Some('A'),
            Verdict::BBetter => Some('B'),
            _ => None,
        };
        let text = group_verdict(name_a, name_b, &capacity, &sa, &sb);
        (side, None, text)
    };
    let mut checks = sweep_checks(&sa, &sb, a, b);
    checks.extend(
        crate::checks::comparability(a, b, None)
            .into_iter()
            // The sweeps' own rates and lengths differ by design; their checks are above.
            .filter(|c| !c.message.starts_with("offered load differs"))
            .filter(|c| !c.message.starts_with("measured durations differ")),
    );
    let mut notes = vec![
        "capacity is the highest step rate that met the SLO; its bracket runs up to the lowest that missed it ([met, missed)); narrow brackets with --find-max".to_owned(),
    ];
    if single {
        notes.push("one sweep a side: a step near the capacity can meet the SLO in one sweep and miss it in the next; repeat both sweeps (alternating A and B) before resting a claim on a small gap".to_owned());
    }
    Ok(SweepComparison {
        a: group_info(name_a, a),
        b: group_info(name_b, b),
        slo: crate::slo::slo_text(&sa[0].slo),
        brackets_a,
        brackets_b,
        capacity,
        higher,
        margin_pct,
        verdict,
        checks,
        p99_at: p99_at(a, b)?,
        steps: if single {
            pairs(&a[0], &b[0])?
        } else {
            Vec::new()
        },
        notes,
    })
}

fn group_info(name: &str, runs: &[RunFile]) -> GroupInfo {
    GroupInfo {
        name: name.to_owned(),
        runs: runs.iter().map(|r| r.run_id.clone()).collect(),
    }
}

fn sweep_of<'a>(name: &str, run: &'a RunFile) -> Result<&'a SweepRecord, SweepCompareError> {
    run.sweep
        .as_ref()
        .ok_or_else(|| SweepCompareError::NotSweep(format!("{name}'s run {}", run.run_id)))
}

/// Groups: what the capacity row found, in words.
fn group_verdict(
    name_a: &str,
    name_b: &str,
    row: &Row,
    sa: &[SweepRecord],
    sb: &[SweepRecord],
) -> String {
    let median = |side: &crate::compare::Side| side.median.map_or_else(|| "n/a".to_owned(), rate);
    let delta = match (row.delta, row.interval) {
        (Some(d), Some((lo, hi))) => format!("{d:+.1}% [{lo:+.1}%, {hi:+.1}%]"),
        (Some(d), None) => format!("{d:+.1}%"),
        _ => "n/a".to_owned(),
    };
    let bound = sa
        .iter()
        .chain(sb)
        .filter(|s| !matches!(s.verdict.stopped_by.as_str(), "slo" | "rates"))
        .count();
    let mut text = format!(
        "capacity at the SLO, median {name_a} {} against {name_b} {}: B vs A {delta}, {} ({} sweeps against {})",
        median(&row.a),
        median(&row.b),
        row.verdict.text(Metric::Capacity),
        sa.len(),
        sb.len()
    );
    if bound > 0 {
        text.push_str(&format!(
            "; {bound} sweep(s) stopped before a verdict on the server (client-bound, a busy machine, the connection cap, or interrupted): their capacity is only a lower bound"
        ));
    }
    text
}

/// p99 at each rate every sweep on both sides ran.
fn p99_at(a: &[RunFile], b: &[RunFile]) -> Result<Vec<(f64, Row)>, SchemaError> {
    let all: Vec<Vec<StageSummary>> = a.iter().chain(b).map(stages_of).collect::<Result<_, _>>()?;
    let mut common: Vec<f64> = all[0].iter().map(|s| s.from_rate_per_s).collect();
    common.retain(|r| {
        all.iter()
            .all(|st| st.iter().any(|s| s.from_rate_per_s == *r))
    });
    common.sort_by(f64::total_cmp);
    common.dedup();
    let p99 = |stages: &[StageSummary], r: f64| {
        stages
            .iter()
            .rfind(|s| s.from_rate_per_s == r)
            .and_then(|s| s.latency.quantile("p99"))
            .map(|v| v as f64)
    };
    let (sa, sb) = all.split_at(a.len());
    Ok(common
        .into_iter()
        .map(|r| {
            let va = sa.iter().map(|st| p99(st, r)).collect();
            let vb = sb.iter().map(|st| p99(st, r)).collect();
            (r, compare_metric(Metric::P99, false, va, vb))
        })
        .collect())
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

/// One sweep a side: the brackets, in words.
fn verdict(
    (name_a, sa, ca): (&str, &SweepRecord, Bracket),
    (name_b, sb, cb): (&str, &SweepRecord, Bracket),
    higher: Option<char>,
    margin: Option<(f64, Option<f64>)>,
) -> String {
    let client = |name: &str, s: &SweepRecord| {
        let why = match s.verdict.stopped_by.as_str() {
            "slo" | "rates" => return None,
            "client" => "client-bound",
            "machine" => "on a busy machine",
            "connection_cap" => "at the connection cap",
            _ => "interrupted",
        };
        Some(match s.verdict.max_rate_per_s {
            Some(met) if met > 0.0 => format!(
                "{name}'s sweep stopped {why}, so its capacity is only known to be at least {}",
                rate(met)
            ),
            _ => format!(
                "{name}'s sweep stopped {why} before any step met the SLO: its capacity is unknown"
            ),
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
        _ if ca.text() == "unknown" || cb.text() == "unknown" => format!(
            "cannot tell apart: no capacity to compare ({name_a} {}, {name_b} {})",
            ca.text(),
            cb.text()
        ),
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

/// Warnings when the sweeps did not hold their steps to the same standard (each against
/// A's first).
fn sweep_checks(
    sa: &[SweepRecord],
    sb: &[SweepRecord],
    a: &[RunFile],
    b: &[RunFile],
) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut warn = |message: String| {
        checks.push(Check {
            severity: Severity::Warning,
            message,
        });
    };
    let first = &sa[0];
    if let Some(other) = sa.iter().chain(sb).find(|s| s.slo != first.slo) {
        warn(format!(
            "the SLOs differ ({} and {}): capacities at different objectives are not comparable",
            crate::slo::slo_text(&first.slo),
            crate::slo::slo_text(&other.slo)
        ));
    }
    if let Some(other) = sa
        .iter()
        .chain(sb)
        .find(|s| s.stage_s != first.stage_s || s.warmup_s != first.warmup_s)
    {
        warn(format!(
            "steps differ in length ({} s after {} s warm-up, and {} s after {} s): a longer step lets a queue grow further",
            first.stage_s, first.warmup_s, other.stage_s, other.warmup_s
        ));
    }
    if let Some(other) = sa
        .iter()
        .chain(sb)
        .find(|s| s.rates_per_s != first.rates_per_s || s.find_max != first.find_max)
    {
        let steps = |s: &SweepRecord| {
            let rates: Vec<String> = s.rates_per_s.iter().map(|r| rate(*r)).collect();
            let search = if s.find_max { " with --find-max" } else { "" };
            format!("{}{search}", rates.join(", "))
        };
        warn(format!(
            "the sweeps planned different steps ({} and {}): their brackets differ in resolution, and the p99 rows cover only the rates both ran",
            steps(first),
            steps(other)
        ));
    }
    if a.iter()
        .chain(b)
        .any(|r| r.plan.arrival != a[0].plan.arrival)
    {
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
    // A step run again after a miss: its last run decided.
    let at = |side: &[StageSummary], r: f64| side.iter().rfind(|s| s.from_rate_per_s == r).cloned();
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
    fn brackets_say_what_is_known() {
        assert_eq!(
            bracket(9_500.0, Some(10_000.0)).text(),
            "[9,500.0/s, 10,000.0/s)"
        );
        assert_eq!(bracket(9_500.0, None).text(), "≥ 9,500.0/s");
        assert_eq!(bracket(0.0, Some(1_000.0)).text(), "< 1,000.0/s");
        assert_eq!(bracket(0.0, None).text(), "unknown");
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

//! `vload compare`: two groups of runs, metric by metric, with the method their run counts allow.
//!
//! Every per-run metric is one number per run; runs are the unit of replication. Latency and
//! throughput are compared on logs (effects are ratios); error rate and hit ratio in
//! percentage points. With at least 4 runs a side: exact Mann-Whitney U and a Hodges-Lehmann
//! interval; with 2-3: Welch's t on logs, labelled low N; with a single run on one side: the
//! other side's prediction interval; 1 against 1: within-run batch-means intervals only.

mod row;
pub mod sweep;

use serde::Serialize;
use vload_schema::{LatencyKind, RunFile, SchemaError};

pub use crate::checks::{Check, Severity};
pub use crate::metric::Metric;
use crate::units;
pub use row::{ALPHA, CONFIDENCE, Method, Row, Side, Verdict, compare_metric, median_ci_coverage};

/// A group of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupInfo {
    /// Name: a label, or "A"/"B".
    pub name: String,
    /// Run ids.
    pub runs: Vec<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Group A.
    pub a: GroupInfo,
    /// Group B.
    pub b: GroupInfo,
    /// The load model and plan both sides ran (from A's first run).
    pub plan: String,
    /// Which latency the latency rows are.
    pub latency: LatencyKind,
    /// Comparability findings, loudest first.
    pub checks: Vec<Check>,
    /// One row per metric.
    pub rows: Vec<Row>,
    /// Footnotes: multiplicity, confidence achieved, what a single run can say.
    pub notes: Vec<String>,
}

/// The fixed sentence for one run a side.
pub const SINGLE_RUN: &str = "1 against 1 cannot decide: each run's interval shows only its own noise, not how \
much a re-run moves (restarts, placement, thermal), so no difference can be pinned on the setup; \
4 runs a side, alternated A B A B, make the rank test possible (5 a side give 96.8% intervals)";

/// Compares group `a` with group `b` (each at least one run).
///
/// # Errors
/// A histogram in a run does not decode.
pub fn compare(a: (&str, &[RunFile]), b: (&str, &[RunFile])) -> Result<Comparison, SchemaError> {
    let (name_a, runs_a) = a;
    let (name_b, runs_b) = b;
    assert!(
        !runs_a.is_empty() && !runs_b.is_empty(),
        "each group needs a run"
    );
    let first = &runs_a[0];
    let mode = first.plan.mode;
    let mut rows = Vec::new();
    for metric in Metric::ALL {
        // The server's rows and the phases' only when some run kept what they read.
        // The human requests' rows only when some run had a crawler beside its catalogue.
        let kept = |r: &RunFile| match metric.is_human() {
            true => r
                .plan
                .catalogue
                .as_ref()
                .is_some_and(|c| c.crawler.is_some()),
            false => metric.of(r).is_ok_and(|v| v.is_some()),
        };
        if metric.is_optional() && !runs_a.iter().chain(runs_b).any(kept) {
            continue;
        }
        let va = runs_a
            .iter()
            .map(|r| metric.of(r))
            .collect::<Result<Vec<_>, _>>()?;
        let vb = runs_b
            .iter()
            .map(|r| metric.of(r))
            .collect::<Result<Vec<_>, _>>()?;
        let mut row = compare_metric(metric, metric.is_primary(mode), va, vb);
        if runs_a.len() == 1 && runs_b.len() == 1 && row.method == Method::SingleRuns {
            for (side, run) in [(&mut row.a, &runs_a[0]), (&mut row.b, &runs_b[0])] {
                side.within_run = crate::within_run::within_run(metric, run)?;
                if side.within_run.is_none() && side.median.is_some() {
                    side.within_run_missing =
                        Some(if metric.is_server_side() && metric != Metric::ServerCpu {
                            "the server's counters cover the window, not each second".into()
                        } else if metric.is_phase() {
                            "phases are kept for the window, not each second".into()
                        } else if matches!(
                            metric,
                            Metric::StampedeOriginShare | Metric::StampedeWaitP50
                        ) {
                            "a stampede's events are not the window's seconds".into()
                        } else if metric == Metric::StaleAgeMean {
                            "stale ages are kept for the window, not each second".into()
                        } else if metric.is_human() {
                            "a class is kept for the window, not each second".into()
                        } else {
                            crate::within_run::missing(run)
                        });
                }
            }
        }
        rows.push(row);
    }
    let notes = notes(&rows, runs_a.len(), runs_b.len(), first.latency.primary);
    let hit_ratios = rows
        .iter()
        .find(|r| r.metric == Metric::HitRatio)
        .and_then(|r| r.a.median.zip(r.b.median));
    Ok(Comparison {
        a: group_info(name_a, runs_a),
        b: group_info(name_b, runs_b),
        plan: crate::summary::describe_plan(first),
        latency: first.latency.primary,
        checks: crate::checks::comparability(runs_a, runs_b, hit_ratios)
            .into_iter()
            .map(|c| Check {
                message: units::clean(&c.message).into_owned(),
                ..c
            })
            .collect(),
        rows,
        notes,
    })
}

/// The footnotes: what is primary, how many rows were tested, the confidence the intervals
/// reach, what one run a side can say, which latency it is.
fn notes(rows: &[Row], runs_a: usize, runs_b: usize, latency: LatencyKind) -> Vec<String> {
    let tested = rows.iter().filter(|r| r.p.is_some()).count();
    let mut notes =
        vec!["* primary metric (declared before looking); the others are exploratory".to_owned()];
    if tested > 0 {
        notes.push(format!(
            "{tested} rows tested at α = {ALPHA}: about {:.2} false positives expected by chance",
            tested as f64 * ALPHA
        ));
    }
    if runs_a == 1 && runs_b == 1 {
        notes.push(SINGLE_RUN.to_owned());
    }
    notes.push(match latency {
        LatencyKind::Response => {
            "latency = response time from the intended send (free of coordinated omission)".into()
        }
        LatencyKind::Service => {
            "latency = service time, closed loop (subject to coordinated omission)".into()
        }
    });
    notes
}

fn group_info(name: &str, runs: &[RunFile]) -> GroupInfo {
    // Labels and run ids come from files: made safe to print here, once.
    GroupInfo {
        name: units::clean(name).into_owned(),
        runs: runs
            .iter()
            .map(|r| units::clean(&r.run_id).into_owned())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: Metric, a: &[f64], b: &[f64]) -> Row {
        compare_metric(
            metric,
            false,
            a.iter().map(|v| Some(*v)).collect(),
            b.iter().map(|v| Some(*v)).collect(),
        )
    }

    #[test]
    fn clear_latency_drop_with_five_runs_is_b_faster() {
        let r = row(
            Metric::P50,
            &[212.0, 208.0, 219.0, 215.0, 210.0],
            &[171.0, 166.0, 175.0, 170.0, 168.0],
        );
        assert_eq!(r.method, Method::MannWhitney);
        assert_eq!(r.verdict, Verdict::BFaster);
        assert!((r.p.unwrap() - 0.007_936_5).abs() < 1e-6);
        let (lo, hi) = r.interval.unwrap();
        assert!(
            lo < r.delta.unwrap() && r.delta.unwrap() < hi && hi < -3.0,
            "{r:?}"
        );
    }

    #[test]
    fn higher_throughput_is_b_faster_and_lower_is_a_faster() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [120.0, 121.0, 119.0, 120.5, 119.5];
        assert_eq!(row(Metric::Throughput, &a, &b).verdict, Verdict::BFaster);
        assert_eq!(row(Metric::Throughput, &b, &a).verdict, Verdict::AFaster);
    }

    #[test]
    fn significant_but_tiny_is_small_but_real() {
        let a = [100.0, 100.1, 100.2, 100.3, 100.4];
        let b = [101.0, 101.1, 101.2, 101.3, 101.4];
        let r = row(Metric::P99, &a, &b);
        assert_eq!(r.verdict, Verdict::SmallButReal, "{r:?}");
    }

    #[test]
    fn tight_overlap_is_equivalent() {
        let a = [100.0, 100.2, 99.8, 100.1, 99.9, 100.05];
        let b = [100.1, 99.9, 100.0, 100.2, 99.85, 100.15];
        let r = row(Metric::Throughput, &a, &b);
        assert_eq!(r.verdict, Verdict::Equivalent { margin: 2.0 }, "{r:?}");
        assert!(r.a.spread_is_ci, "six runs give a median interval");
    }

    #[test]
    fn noisy_overlap_is_no_difference() {
        let a = [100.0, 130.0, 85.0, 120.0, 95.0];
        let b = [110.0, 90.0, 125.0, 100.0, 140.0];
        assert_eq!(row(Metric::P99, &a, &b).verdict, Verdict::NoDifference);
    }

    #[test]
    fn three_runs_use_welch_and_say_low_n() {
        let r = row(Metric::P50, &[100.0, 102.0, 98.0], &[110.0, 111.0, 115.0]);
        assert_eq!(r.method, Method::WelchLowN);
        assert!(r.note.as_deref().unwrap().contains("low N"));
        assert_eq!(r.verdict, Verdict::AFaster);
        let r = row(Metric::P50, &[100.0, 120.0, 90.0], &[105.0, 125.0, 85.0]);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
    }

    #[test]
    fn one_against_one_is_inconclusive_with_the_difference() {
        let r = row(Metric::P99, &[100.0], &[150.0]);
        assert_eq!(r.method, Method::SingleRuns);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.delta, Some(50.0));
        assert!(
            r.regressed(10.0),
            "a CI pipeline with one run a side acts on the estimate"
        );
    }

    #[test]
    fn one_against_many_uses_a_prediction_interval() {
        let r = row(Metric::P99, &[100.0, 101.0, 99.0, 100.5], &[130.0]);
        assert_eq!(r.method, Method::PredictionInterval);
        assert!(r.note.as_deref().unwrap().contains("outside"), "{r:?}");
    }

    #[test]
    fn proportions_compare_in_points_and_identical_values_are_equal() {
        let r = row(Metric::ErrorRate, &[0.0; 5], &[0.0; 5]);
        assert_eq!(r.verdict, Verdict::Equal);
        let r = row(
            Metric::HitRatio,
            &[0.90, 0.91, 0.90, 0.905, 0.90],
            &[0.99, 0.99, 0.995, 0.99, 0.985],
        );
        assert_eq!(r.verdict, Verdict::BBetter);
        assert!((r.delta.unwrap() - 8.75).abs() < 0.5, "{r:?}");
    }

    #[test]
    fn missing_values_make_the_row_not_available() {
        let r = compare_metric(
            Metric::P999,
            false,
            vec![Some(1.0), None],
            vec![Some(1.0), Some(2.0)],
        );
        assert_eq!(r.verdict, Verdict::NotAvailable);
        assert!(r.note.unwrap().contains("too few samples"));
    }

    /// A/A: two groups drawn from one distribution must not call a difference, in the large
    /// majority of draws (at most what α allows, with margin).
    #[test]
    fn aa_comparisons_rarely_call_a_difference() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut called = 0;
        let trials = 400;
        for _ in 0..trials {
            // Log-normal-ish run-to-run noise around 200 µs, 5% sd.
            let mut draw = || 200_000.0 * (1.0 + 0.05 * (next() + next() + next() - 1.5) * 2.0);
            let a: Vec<f64> = (0..5).map(|_| draw()).collect();
            let b: Vec<f64> = (0..5).map(|_| draw()).collect();
            if matches!(
                row(Metric::P50, &a, &b).verdict,
                Verdict::AFaster | Verdict::BFaster | Verdict::SmallButReal
            ) {
                called += 1;
            }
        }
        assert!(
            called as f64 / (trials as f64) < 0.08,
            "{called} of {trials} A/A comparisons called a difference"
        );
    }
}

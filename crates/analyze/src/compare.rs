//! `vload compare`: two groups of runs, metric by metric, with the method their run counts allow.
//!
//! Every per-run metric is one number per run; runs are the unit of replication. Latency and
//! throughput are compared on logs (effects are ratios); error rate and hit ratio in
//! percentage points. With at least 4 runs a side: exact Mann-Whitney U and a Hodges-Lehmann
//! interval; with 2-3: Welch's t on logs, labelled low N; with a single run on one side: the
//! other side's prediction interval; 1 against 1: within-run batch-means intervals only.

use serde::Serialize;
use vload_schema::{LatencyKind, RunFile, SchemaError};

pub use crate::checks::{Check, Severity};
pub use crate::metric::Metric;
use crate::stats::{self, hodges_lehmann, mann_whitney, median, welch};
use crate::units;

/// Significance level of every test.
pub const ALPHA: f64 = 0.05;
/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// How a row was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Exact Mann-Whitney U and a Hodges-Lehmann interval (>= 4 runs a side).
    MannWhitney,
    /// Welch's t (on logs for ratios), 2-3 runs on a side.
    WelchLowN,
    /// One run against a prediction interval of the other side.
    PredictionInterval,
    /// One run a side: within-run batch-means intervals only.
    SingleRuns,
    /// Every value on both sides is the same.
    Identical,
    /// A run cannot support the metric.
    NotAvailable,
}

/// The conclusion of a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// A is faster (or better), the difference lies outside the margin.
    AFaster,
    /// B is faster (or better), the difference lies outside the margin.
    BFaster,
    /// A is better (error rate, hit ratio).
    ABetter,
    /// B is better (error rate, hit ratio).
    BBetter,
    /// Significant, but the interval reaches into the equivalence margin.
    SmallButReal,
    /// The interval lies inside ± the margin.
    Equivalent {
        /// The margin (percent or percentage points).
        margin: f64,
    },
    /// No significant difference, and equivalence not shown either.
    NoDifference,
    /// Too few runs to tell.
    Inconclusive,
    /// Identical on every run.
    Equal,
    /// The metric is not available for every run.
    NotAvailable,
}

impl Verdict {
    /// Text in tables; `metric` gives the margin its unit.
    pub fn text(&self, metric: Metric) -> String {
        match self {
            Verdict::AFaster => "A faster".into(),
            Verdict::BFaster => "B faster".into(),
            Verdict::ABetter => "A better".into(),
            Verdict::BBetter => "B better".into(),
            Verdict::SmallButReal => "small but real".into(),
            Verdict::Equivalent { margin } if metric.is_ratio() => {
                format!("equivalent (±{margin}%)")
            }
            Verdict::Equivalent { margin } => format!("equivalent (±{margin} pp)"),
            Verdict::NoDifference => "~".into(),
            Verdict::Inconclusive => "inconclusive".into(),
            Verdict::Equal => "equal".into(),
            Verdict::NotAvailable => "n/a".into(),
        }
    }
}

/// One group's values of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// Median of the runs.
    pub median: Option<f64>,
    /// Smallest and largest run (n < 6), or the order-statistic interval of the median (n >= 6).
    pub spread: Option<(f64, f64)>,
    /// Whether `spread` is a range or a confidence interval of the median.
    pub spread_is_ci: bool,
    /// Single run: the within-run batch-means interval, if the run was long enough.
    pub within_run: Option<(f64, f64)>,
    /// Runs.
    pub n: usize,
    /// Every run's value.
    pub values: Vec<Option<f64>>,
}

/// One metric compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The metric.
    pub metric: Metric,
    /// Declared primary for this load model.
    pub primary: bool,
    /// Group A.
    pub a: Side,
    /// Group B.
    pub b: Side,
    /// B against A: percent for ratios, percentage points for proportions.
    pub delta: Option<f64>,
    /// Interval of `delta`.
    pub interval: Option<(f64, f64)>,
    /// p-value, where a test applies.
    pub p: Option<f64>,
    /// How the row was decided.
    pub method: Method,
    /// The conclusion.
    pub verdict: Verdict,
    /// Anything a reader must know about this row.
    pub note: Option<String>,
}

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
pub const SINGLE_RUN: &str = "single run per side: within-run uncertainty only; run-to-run variation \
(restarts, placement, thermal) is unmeasured, so a difference cannot be attributed to the setup";

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
    let watched = |r: &RunFile| r.server.as_ref().is_some_and(|s| s.process.is_some());
    for metric in Metric::ALL {
        // Server CPU only when some run watched the server.
        if metric == Metric::ServerCpu && !runs_a.iter().chain(runs_b).any(watched) {
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
            row.a.within_run = crate::within_run::within_run(metric, &runs_a[0])?;
            row.b.within_run = crate::within_run::within_run(metric, &runs_b[0])?;
        }
        rows.push(row);
    }
    let tested = rows.iter().filter(|r| r.p.is_some()).count();
    let mut notes =
        vec!["* primary metric (declared before looking); the others are exploratory".to_owned()];
    if tested > 0 {
        notes.push(format!(
            "{tested} rows tested at α = {ALPHA}: about {:.2} false positives expected by chance",
            tested as f64 * ALPHA
        ));
    }
    if rows.iter().any(|r| r.method == Method::MannWhitney) {
        let hl = hodges_lehmann(
            &vec![0.0; runs_a.len()],
            &vec![0.0; runs_b.len()],
            CONFIDENCE,
        );
        if let Some(achieved) = hl.achieved_confidence {
            notes.push(format!(
                "Hodges-Lehmann intervals achieve {:.1}% confidence",
                achieved * 100.0
            ));
        }
    }
    if runs_a.len() == 1 && runs_b.len() == 1 {
        notes.push(SINGLE_RUN.to_owned());
    }
    notes.push(match first.latency.primary {
        LatencyKind::Response => {
            "latency = response time from the intended send (free of coordinated omission)".into()
        }
        LatencyKind::Service => {
            "latency = service time, closed loop (subject to coordinated omission)".into()
        }
    });
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

fn side(values: Vec<Option<f64>>) -> Side {
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    let n = values.len();
    if known.len() < n || known.is_empty() {
        return Side {
            median: None,
            spread: None,
            spread_is_ci: false,
            within_run: None,
            n,
            values,
        };
    }
    let mut sorted = known.clone();
    sorted.sort_by(f64::total_cmp);
    let (spread, spread_is_ci) = match median_ci(n, CONFIDENCE) {
        Some((lo, hi)) if n >= 6 => (Some((sorted[lo], sorted[hi])), true),
        _ => (Some((sorted[0], sorted[n - 1])), false),
    };
    Side {
        median: Some(median(&known)),
        spread,
        spread_is_ci,
        within_run: None,
        n,
        values,
    }
}

/// 0-based order statistics bounding the median with at least `confidence` (benchstat's method).
fn median_ci(n: usize, confidence: f64) -> Option<(usize, usize)> {
    // Coverage of [X(l), X(n-1-l)] is P(l < B <= n-1-l) for B ~ Binomial(n, 1/2).
    let pmf: Vec<f64> = (0..=n).map(|k| binomial_pmf(n, k)).collect();
    (0..n / 2)
        .rev()
        .find(|&l| pmf[l + 1..n - l].iter().sum::<f64>() >= confidence)
        .map(|l| (l, n - 1 - l))
}

fn binomial_pmf(n: usize, k: usize) -> f64 {
    let ln_choose: f64 = (0..k)
        .map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln())
        .sum();
    (ln_choose - n as f64 * std::f64::consts::LN_2).exp()
}

/// Compares one metric given each run's value.
pub fn compare_metric(
    metric: Metric,
    primary: bool,
    va: Vec<Option<f64>>,
    vb: Vec<Option<f64>>,
) -> Row {
    let (a, b) = (side(va), side(vb));
    let mut row = Row {
        metric,
        primary,
        delta: None,
        interval: None,
        p: None,
        method: Method::NotAvailable,
        verdict: Verdict::NotAvailable,
        note: None,
        a,
        b,
    };
    let (Some(ma), Some(mb)) = (row.a.median, row.b.median) else {
        row.note = Some(match metric {
            Metric::HitRatio => "n/a: no cache headers to classify".into(),
            Metric::ServerCpu => "n/a: a run did not watch the server (--watch-pid)".into(),
            _ => "n/a: too few samples in some run".into(),
        });
        return row;
    };
    let xa: Vec<f64> = row.a.values.iter().flatten().copied().collect();
    let xb: Vec<f64> = row.b.values.iter().flatten().copied().collect();
    if metric.is_ratio() && xa.iter().chain(&xb).any(|v| *v <= 0.0) {
        row.note = Some("n/a: a run has no value above zero".into());
        return row;
    }
    row.delta = Some(effect(metric, ma, mb));
    let first = xa[0];
    if xa.iter().chain(&xb).all(|v| *v == first) {
        row.method = Method::Identical;
        row.interval = Some((0.0, 0.0));
        row.verdict = Verdict::Equal;
        return row;
    }
    let transform = |v: &f64| if metric.is_ratio() { v.ln() } else { v * 100.0 };
    let (ta, tb): (Vec<f64>, Vec<f64>) = (
        xa.iter().map(transform).collect(),
        xb.iter().map(transform).collect(),
    );
    let to_effect = |d: f64| {
        if metric.is_ratio() {
            (d.exp() - 1.0) * 100.0
        } else {
            d
        }
    };
    let (na, nb) = (ta.len(), tb.len());
    if na >= 4 && nb >= 4 {
        row.method = Method::MannWhitney;
        row.p = Some(mann_whitney(&ta, &tb).p);
        let hl = hodges_lehmann(&ta, &tb, CONFIDENCE);
        row.delta = Some(to_effect(hl.estimate));
        row.interval = hl.interval.map(|(lo, hi)| (to_effect(lo), to_effect(hi)));
    } else if na >= 2 && nb >= 2 {
        row.method = Method::WelchLowN;
        let w = welch(&ta, &tb, CONFIDENCE).expect("two values a side");
        row.p = Some(w.p);
        row.delta = Some(to_effect(w.difference));
        row.interval = Some((to_effect(w.interval.0), to_effect(w.interval.1)));
        row.note =
            Some("parametric, low N: needs >= 4 runs per side for a distribution-free test".into());
    } else if na == 1 && nb == 1 {
        row.method = Method::SingleRuns;
        row.verdict = Verdict::Inconclusive;
        row.note = Some("1 vs 1: run-to-run variation is unmeasured".into());
        return row;
    } else {
        row.method = Method::PredictionInterval;
        row.verdict = Verdict::Inconclusive;
        let (single, group, single_is_b) = if na == 1 {
            (ta[0], &tb, false)
        } else {
            (tb[0], &ta, true)
        };
        let (mean, var) = stats::mean_var(group);
        let m = group.len() as f64;
        let half = stats::t_quantile(0.975, m - 1.0) * var.sqrt() * (1.0 + 1.0 / m).sqrt();
        let outside = (single - mean).abs() > half;
        let (who, other) = if single_is_b { ("B", "A") } else { ("A", "B") };
        row.note = Some(format!(
            "1 run: {who} falls {} {other}'s 95% prediction interval (assumes equal run-to-run variance)",
            if outside { "outside" } else { "inside" }
        ));
        return row;
    }
    row.verdict = decide(
        metric,
        row.p.expect("set above"),
        row.interval,
        row.method == Method::WelchLowN,
    );
    row
}

/// B against A, percent for ratios, percentage points for proportions.
fn effect(metric: Metric, a: f64, b: f64) -> f64 {
    if metric.is_ratio() {
        (b / a - 1.0) * 100.0
    } else {
        (b - a) * 100.0
    }
}

fn decide(metric: Metric, p: f64, interval: Option<(f64, f64)>, low_n: bool) -> Verdict {
    let margin = metric.margin();
    let significant = p < ALPHA;
    let Some((lo, hi)) = interval else {
        return if significant {
            Verdict::SmallButReal
        } else {
            Verdict::Inconclusive
        };
    };
    if significant && (lo > margin || hi < -margin) {
        // The whole interval lies on one side, beyond the margin.
        let b_up = lo > margin;
        let b_wins = b_up == metric.higher_is_better();
        return match (b_wins, metric.is_speed()) {
            (true, true) => Verdict::BFaster,
            (false, true) => Verdict::AFaster,
            (true, false) => Verdict::BBetter,
            (false, false) => Verdict::ABetter,
        };
    }
    if significant {
        return Verdict::SmallButReal;
    }
    if lo >= -margin && hi <= margin {
        return Verdict::Equivalent { margin };
    }
    if low_n {
        Verdict::Inconclusive
    } else {
        Verdict::NoDifference
    }
}

impl Row {
    /// True when B is worse than A by more than `percent` on this metric, with evidence: a
    /// significant verdict in A's favour, or, for one run a side, the point estimate alone.
    pub fn regressed(&self, percent: f64) -> bool {
        let Some(delta) = self.delta else {
            return false;
        };
        let worse = if self.metric.higher_is_better() {
            -delta
        } else {
            delta
        };
        if worse <= percent {
            return false;
        }
        match self.method {
            Method::SingleRuns | Method::PredictionInterval => true,
            _ => matches!(
                self.verdict,
                Verdict::AFaster | Verdict::ABetter | Verdict::SmallButReal
            ),
        }
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

    #[test]
    fn median_interval_follows_benchstat() {
        assert_eq!(median_ci(5, 0.95), None, "n < 6 has no 95% median interval");
        assert_eq!(
            median_ci(6, 0.95),
            Some((0, 5)),
            "at n = 6 it is [min, max], 96.9%"
        );
        assert_eq!(median_ci(10, 0.95), Some((1, 8)));
    }
}

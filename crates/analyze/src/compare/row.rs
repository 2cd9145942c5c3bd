//! One metric compared: each side's values, the method their counts allow, the difference
//! with its interval, and the verdict.

use serde::Serialize;

use crate::metric::Metric;
use crate::stats::{self, hodges_lehmann, mann_whitney, median, welch};

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
    /// Single run without a within-run interval: why (`2 s measured, 5 needed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_run_missing: Option<String>,
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
    /// B against A: percent for ratios, percentage points for proportions. With 4 or more
    /// runs a side the Hodges-Lehmann shift, with 2-3 Welch's difference of the means (of the
    /// logs, for ratios), else the difference of the medians.
    pub delta: Option<f64>,
    /// The difference of the two medians shown (B's median against A's), which the shift
    /// estimates differently.
    pub medians_delta: Option<f64>,
    /// Interval of `delta`.
    pub interval: Option<(f64, f64)>,
    /// The confidence `interval` truly has: rank intervals reach only discrete levels
    /// (96.8% for 5 + 5 runs).
    pub coverage: Option<f64>,
    /// p-value, where a test applies.
    pub p: Option<f64>,
    /// How the row was decided.
    pub method: Method,
    /// The conclusion.
    pub verdict: Verdict,
    /// Anything a reader must know about this row.
    pub note: Option<String>,
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
            within_run_missing: None,
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
        within_run_missing: None,
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

/// The confidence the median interval of `n` runs truly has (96.9% for 6), if it has one.
pub fn median_ci_coverage(n: usize) -> Option<f64> {
    if n < 6 {
        return None;
    }
    let (lo, hi) = median_ci(n, CONFIDENCE)?;
    Some((lo + 1..=hi).map(|k| binomial_pmf(n, k)).sum())
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
        medians_delta: None,
        interval: None,
        coverage: None,
        p: None,
        method: Method::NotAvailable,
        verdict: Verdict::NotAvailable,
        note: None,
        a,
        b,
    };
    let (Some(ma), Some(mb)) = (row.a.median, row.b.median) else {
        row.note = Some(missing(metric));
        return row;
    };
    let xa: Vec<f64> = row.a.values.iter().flatten().copied().collect();
    let xb: Vec<f64> = row.b.values.iter().flatten().copied().collect();
    if metric.is_ratio() && xa.iter().chain(&xb).any(|v| *v <= 0.0) {
        row.note = Some("n/a: a run has no value above zero".into());
        return row;
    }
    row.delta = Some(effect(metric, ma, mb));
    row.medians_delta = row.delta;
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
    match (ta.len(), tb.len()) {
        (na, nb) if na >= 4 && nb >= 4 => rank_test(&mut row, &ta, &tb),
        (na, nb) if na >= 2 && nb >= 2 => welch_low_n(&mut row, &ta, &tb),
        (1, 1) => {
            row.method = Method::SingleRuns;
            row.verdict = Verdict::Inconclusive;
            return row;
        }
        _ => {
            prediction_interval(&mut row, &ta, &tb);
            return row;
        }
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
/// A difference on the transformed scale back as an effect: percent for ratios, points for
/// proportions.
fn to_effect(metric: Metric, d: f64) -> f64 {
    if metric.is_ratio() {
        (d.exp() - 1.0) * 100.0
    } else {
        d
    }
}

/// At least 4 runs a side: exact Mann-Whitney U and the Hodges-Lehmann shift's interval.
fn rank_test(row: &mut Row, ta: &[f64], tb: &[f64]) {
    row.method = Method::MannWhitney;
    row.p = Some(mann_whitney(ta, tb).p);
    let hl = hodges_lehmann(ta, tb, CONFIDENCE);
    row.delta = Some(to_effect(row.metric, hl.estimate));
    row.interval = hl
        .interval
        .map(|(lo, hi)| (to_effect(row.metric, lo), to_effect(row.metric, hi)));
    row.coverage = hl.interval.and(hl.achieved_confidence);
}

/// 2-3 runs a side: Welch's t, labelled low N.
fn welch_low_n(row: &mut Row, ta: &[f64], tb: &[f64]) {
    row.method = Method::WelchLowN;
    let w = welch(ta, tb, CONFIDENCE).expect("two values a side");
    row.p = Some(w.p);
    row.delta = Some(to_effect(row.metric, w.difference));
    row.interval = Some((
        to_effect(row.metric, w.interval.0),
        to_effect(row.metric, w.interval.1),
    ));
    row.coverage = Some(CONFIDENCE);
    row.note =
        Some("parametric, low N: needs >= 4 runs per side for a distribution-free test".into());
}

/// One run against several: where it falls in the other side's 95% prediction interval.
fn prediction_interval(row: &mut Row, ta: &[f64], tb: &[f64]) {
    row.method = Method::PredictionInterval;
    row.verdict = Verdict::Inconclusive;
    let (single, group, single_is_b) = if ta.len() == 1 {
        (ta[0], tb, false)
    } else {
        (tb[0], ta, true)
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
}

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

/// Why a metric has no value on a side, in the note under the table.
fn missing(metric: Metric) -> String {
    match metric {
        Metric::HitRatio => "n/a: no cache headers to classify".into(),
        Metric::ServerCpu => "n/a: a run did not watch the server (--watch-pid)".into(),
        Metric::ServerHitRatio | Metric::OriginShare | Metric::Evictions => {
            "n/a: a run kept no server counters (--server-stats), or its server counts none such (nginx's stub_status: no hits, no origin requests)".into()
        }
        Metric::StaleShare => {
            "n/a: a run's cache headers cannot say stale (X-Varnish and Age alone: vcl/grace.vcl adds Cache-Status)".into()
        }
        Metric::TierOriginShare => {
            "n/a: a run's answers list one cache, not a path of them (Cache-Status members, X-Cache words)".into()
        }
        Metric::StaleAgeMean => {
            "n/a: a run had no stale answer with an Age (nginx sends none)".into()
        }
        Metric::HumanHitRatio | Metric::HumanP50 => {
            "n/a: a run's human requests had too few samples, or a run had no catalogue".into()
        }
        Metric::StampedeOriginShare | Metric::StampedeWaitP50 => {
            "n/a: a run had no stampede, or no answer the cache served itself".into()
        }
        _ => "n/a: too few samples in some run".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_follows_benchstat() {
        assert_eq!(median_ci(5, 0.95), None, "n < 6 has no 95% median interval");
        assert_eq!(
            median_ci(6, 0.95),
            Some((0, 5)),
            "at n = 6 it is [min, max], 96.9%"
        );
        assert_eq!(median_ci(10, 0.95), Some((1, 8)));
        // 1 - 2/64 at 6 runs; P(1 < B <= 8) for B ~ Bin(10, 1/2) = 1 - 2 * 11/1024.
        assert!((median_ci_coverage(6).unwrap() - 0.96875).abs() < 1e-12);
        assert!((median_ci_coverage(10).unwrap() - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        assert_eq!(median_ci_coverage(5), None);
    }
}

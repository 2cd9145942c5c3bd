//! One metric of one series over commits: per-commit medians of the runs that passed the
//! gate, change points placed by E-divisive means and kept by a t-test on those medians
//! ([`crate::detect`]), then each confirmed, or not, by `compare`'s test on the runs either
//! side; and the newest commit against the segment it would continue.

use vload_analyze::Metric;
use vload_analyze::compare::{Method, Verdict, compare_metric};
use vload_analyze::stats::{mean_var, median, t_cdf};

use crate::detect::{self, MAX_P};
use crate::store::StoredRun;

/// Commits either side of a change point whose runs confirm it: the nearest, so that slow
/// drift before it does not blur the step.
pub const WINDOW: usize = 10;

/// The p-value below which one or two new runs fall outside the runs before them.
pub const ONE_RUN_ALPHA: f64 = 0.01;

/// One commit of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitPoint {
    /// The commit (or `run <id>` for a run that named none).
    pub commit: String,
    /// When its first run started.
    pub first_run: String,
    /// Its runs' values that passed the gate.
    pub values: Vec<f64>,
    /// Its runs kept out by the gate.
    pub excluded: usize,
}

impl CommitPoint {
    /// The median of its valid runs, `None` when it has none.
    pub fn median(&self) -> Option<f64> {
        (!self.values.is_empty()).then(|| median(&self.values))
    }
}

/// How sure a change is.
#[derive(Debug, Clone, PartialEq)]
pub enum Strength {
    /// The runs either side differ beyond the metric's margin (compare's verdict).
    Confirmed,
    /// Found in the medians, not confirmed by the runs: why.
    Weak(String),
}

/// A change in a metric, starting at a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Index into the series' commits (those with valid runs) of the first commit after it.
    pub index: usize,
    /// That commit.
    pub commit: String,
    /// The medians of the runs before and after (the metric's unit).
    pub before: f64,
    /// After.
    pub after: f64,
    /// The shift, in percent (ratios) or percentage points (proportions), compare's estimate.
    pub delta: f64,
    /// Its 95% interval, where the test gives one.
    pub interval: Option<(f64, f64)>,
    /// The p-value of the runs' test.
    pub p: Option<f64>,
    /// The test on the runs: `Mann-Whitney`, `Welch (low n)`, `prediction interval`.
    pub method: &'static str,
    /// Runs on each side that were tested.
    pub runs: (usize, usize),
    /// Confirmed or weak.
    pub strength: Strength,
    /// True when the change makes the metric worse.
    pub worse: bool,
}

/// One metric of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricHistory {
    /// The metric.
    pub metric: Metric,
    /// Every commit with at least one run (valid or not), oldest first.
    pub commits: Vec<CommitPoint>,
    /// Change points, oldest first.
    pub changes: Vec<Change>,
    /// The newest commit with valid runs against the runs of the segment before it; `None`
    /// when there are too few.
    pub newest: Option<Change>,
}

/// Groups `runs` (oldest first) by commit, in the order of each commit's first run.
pub fn commits(runs: &[StoredRun], metric: Metric) -> Vec<CommitPoint> {
    let mut points: Vec<CommitPoint> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for run in runs {
        let at = *index.entry(&run.commit).or_insert_with(|| {
            points.push(CommitPoint {
                commit: run.commit.clone(),
                first_run: run.started_at.clone(),
                values: Vec::new(),
                excluded: 0,
            });
            points.len() - 1
        });
        match (&run.excluded, run.value(metric)) {
            (Some(_), _) => points[at].excluded += 1,
            (None, Some(v)) => points[at].values.push(v),
            (None, None) => {}
        }
    }
    points
}

/// The history of `metric` over `runs` (one series, oldest first).
pub fn judge(runs: &[StoredRun], metric: Metric) -> MetricHistory {
    let commits = commits(runs, metric);
    let valid: Vec<&CommitPoint> = commits.iter().filter(|c| !c.values.is_empty()).collect();
    let medians: Vec<f64> = valid
        .iter()
        .map(|c| c.median().expect("has values"))
        .collect();
    let found = detect::change_points(&medians, MAX_P);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|c| c.at))
        .chain(std::iter::once(valid.len()))
        .collect();
    let changes = bounds
        .windows(3)
        .map(|w| {
            let before = runs_of(&valid[w[0].max(w[1].saturating_sub(WINDOW))..w[1]]);
            let after = runs_of(&valid[w[1]..w[2].min(w[1] + WINDOW)]);
            shift(metric, w[1], &valid[w[1]].commit, &before, &after)
        })
        .collect();
    let newest = valid.len().checked_sub(1).and_then(|last| {
        let start = *bounds.iter().rev().find(|b| **b < last)?;
        let before = runs_of(&valid[start.max(last.saturating_sub(WINDOW))..last]);
        (before.len() >= 2).then(|| {
            shift(
                metric,
                last,
                &valid[last].commit,
                &before,
                &valid[last].values,
            )
        })
    });
    MetricHistory {
        metric,
        commits,
        changes,
        newest,
    }
}

fn runs_of(commits: &[&CommitPoint]) -> Vec<f64> {
    commits
        .iter()
        .flat_map(|c| c.values.iter().copied())
        .collect()
}

/// `after` against `before` by compare's test; one or two runs after, by their mean's place
/// in the prediction interval of the runs before (Welch's test on two runs has about one
/// degree of freedom: it passed a +9% regression 3 times in 41 that one run caught).
fn shift(metric: Metric, index: usize, commit: &str, before: &[f64], after: &[f64]) -> Change {
    let (mb, ma) = (median(before), median(after));
    let mut change = Change {
        index,
        commit: commit.to_owned(),
        before: mb,
        after: ma,
        delta: effect(metric, mb, ma),
        interval: None,
        p: None,
        method: "prediction interval",
        runs: (before.len(), after.len()),
        strength: Strength::Weak(String::new()),
        worse: false,
    };
    if after.len() <= 2 {
        few_runs(metric, &mut change, before, after);
    } else {
        let row = compare_metric(
            metric,
            false,
            before.iter().map(|v| Some(*v)).collect(),
            after.iter().map(|v| Some(*v)).collect(),
        );
        change.delta = row.delta.unwrap_or(change.delta);
        change.interval = row.interval;
        change.p = row.p;
        change.method = match row.method {
            Method::MannWhitney => "Mann-Whitney",
            Method::WelchLowN => "Welch (low n)",
            Method::Identical => "identical",
            _ => "none",
        };
        change.strength = match row.verdict {
            Verdict::AFaster | Verdict::BFaster | Verdict::ABetter | Verdict::BBetter => {
                Strength::Confirmed
            }
            Verdict::SmallButReal => Strength::Weak(format!(
                "real, but its interval reaches into ±{}{}",
                metric.margin(),
                unit(metric)
            )),
            Verdict::Equal => Strength::Weak("no change: the same on every run".into()),
            _ => Strength::Weak(match row.p {
                Some(_) => "the runs either side do not confirm it".into(),
                None => "too few runs either side to confirm it".into(),
            }),
        };
    }
    change.worse = if metric.higher_is_better() {
        change.delta < 0.0
    } else {
        change.delta > 0.0
    };
    change
}

/// One or two runs against `before`: Student's prediction interval of their mean (on logs
/// for ratios), half as wide again for one run as the mean of two is sure to be.
fn few_runs(metric: Metric, change: &mut Change, before: &[f64], after: &[f64]) {
    let t = |v: f64| {
        if metric.is_ratio() {
            v.max(f64::MIN_POSITIVE).ln()
        } else {
            v * 100.0
        }
    };
    let xs: Vec<f64> = before.iter().map(|v| t(*v)).collect();
    let (mean, var) = mean_var(&xs);
    let (m, k) = (xs.len() as f64, after.len() as f64);
    let new = after.iter().map(|v| t(*v)).sum::<f64>() / k;
    let scale = var.sqrt() * (1.0 / k + 1.0 / m).sqrt();
    let p = if scale > 0.0 {
        2.0 * (1.0 - t_cdf(((new - mean) / scale).abs(), m - 1.0))
    } else if new == mean {
        1.0
    } else {
        0.0
    };
    change.p = Some(p);
    let runs = if after.len() == 1 {
        "one run"
    } else {
        "two runs"
    };
    change.strength = if p >= ONE_RUN_ALPHA {
        Strength::Weak(format!("{runs}, inside the runs' prediction interval"))
    } else if change.delta.abs() <= metric.margin() {
        Strength::Weak(format!(
            "real, but within ±{}{}",
            metric.margin(),
            unit(metric)
        ))
    } else {
        Strength::Confirmed
    };
}

fn effect(metric: Metric, a: f64, b: f64) -> f64 {
    if metric.is_ratio() {
        (b / a - 1.0) * 100.0
    } else {
        (b - a) * 100.0
    }
}

/// `%` for ratios, `pp` for proportions.
pub fn unit(metric: Metric) -> &'static str {
    if metric.is_ratio() { "%" } else { "pp" }
}

impl Change {
    /// True when this change is a confirmed regression beyond `margin` (percent, or points).
    pub fn regression_beyond(&self, margin: f64) -> bool {
        self.strength == Strength::Confirmed && self.worse && self.delta.abs() > margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A +9% regression seen in two runs is caught at least as often as in one (#61: Welch's
    /// test on two runs passed it 3 times in 41), and the same runs without it rarely fail.
    #[test]
    fn two_runs_are_at_least_as_strict_as_one() {
        let mut state = 7u64;
        let mut normal = || {
            let mut u = || {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
            };
            (-2.0 * u().ln()).sqrt() * (std::f64::consts::TAU * u()).cos()
        };
        let (mut one, mut two, mut false_alarms) = (0, 0, 0);
        for _ in 0..41 {
            // Ten runs before at 2% noise; two after, 9% slower.
            let before: Vec<f64> = (0..10).map(|_| 2.0 * (1.0 + 0.02 * normal())).collect();
            let after: Vec<f64> = (0..2).map(|_| 2.18 * (1.0 + 0.02 * normal())).collect();
            let same: Vec<f64> = (0..2).map(|_| 2.0 * (1.0 + 0.02 * normal())).collect();
            let caught =
                |runs: &[f64]| shift(Metric::P50, 10, "c", &before, runs).regression_beyond(0.0);
            one += usize::from(caught(&after[..1]));
            two += usize::from(caught(&after));
            false_alarms += usize::from(caught(&same));
        }
        assert!(
            two >= one && two >= 40,
            "two runs caught {two} of 41, one run {one}"
        );
        assert!(
            false_alarms <= 2,
            "{false_alarms} of 41 unchanged pairs failed"
        );
        let change = shift(Metric::P50, 10, "c", &[2.0, 2.02, 1.98, 2.01], &[2.0, 2.01]);
        assert_eq!(change.method, "prediction interval");
        assert_eq!(
            change.strength,
            Strength::Weak("two runs, inside the runs' prediction interval".into())
        );
    }
}

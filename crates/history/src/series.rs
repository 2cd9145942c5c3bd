//! Series read from the store and judged, and the gate over them.

use vload_analyze::Metric;

use crate::judge::{self, Change, MetricHistory};
use crate::key;
use crate::store::{SeriesInfo, Store, StoreError, StoredRun};

/// One series and what its metrics did.
#[derive(Debug, Clone)]
pub struct SeriesHistory {
    /// The series.
    pub info: SeriesInfo,
    /// Its runs, oldest first (after the branch filter).
    pub runs: Vec<StoredRun>,
    /// One history per metric that any run has.
    pub metrics: Vec<MetricHistory>,
}

impl SeriesHistory {
    /// Runs kept out of the statistics, with the reason.
    pub fn excluded(&self) -> impl Iterator<Item = &StoredRun> {
        self.runs.iter().filter(|r| r.excluded.is_some())
    }
}

/// Which runs and metrics a view looks at.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Series whose key starts with this, or whose label equals it.
    pub series: Option<String>,
    /// Only runs of this branch.
    pub branch: Option<String>,
    /// The metrics (default: every tracked one a run has).
    pub metrics: Vec<Metric>,
}

/// Every selected series with its metrics judged.
///
/// # Errors
/// When the store cannot be read.
pub fn histories(store: &Store, selection: &Selection) -> Result<Vec<SeriesHistory>, StoreError> {
    let mut all = Vec::new();
    for info in store.series()? {
        if let Some(want) = &selection.series
            && !info.key.key.starts_with(want.as_str())
            && info.key.label != *want
        {
            continue;
        }
        let mut runs = store.runs(&info.key.key)?;
        if let Some(branch) = &selection.branch {
            runs.retain(|r| r.branch.as_deref() == Some(branch.as_str()));
        }
        if runs.is_empty() {
            continue;
        }
        let wanted: Vec<Metric> = if selection.metrics.is_empty() {
            key::TRACKED.to_vec()
        } else {
            selection.metrics.clone()
        };
        let metrics = wanted
            .into_iter()
            .filter(|m| runs.iter().any(|r| r.value(*m).is_some()))
            .map(|m| judge::judge(&runs, m))
            .collect();
        all.push(SeriesHistory {
            info,
            runs,
            metrics,
        });
    }
    Ok(all)
}

/// What `history check` decided: the confirmed regressions the newest commit starts.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The margin asked (percent for ratios, points for proportions), or `None` for each
    /// metric's own equivalence margin.
    pub margin: Option<f64>,
    /// Series label or key, metric and change, for every regression found.
    pub regressions: Vec<(String, Metric, Change)>,
    /// Series whose newest commit could not be judged, and why (every run of it kept out by
    /// the gate, or no runs before it): a gate that cannot judge does not pass.
    pub unjudged: Vec<(String, String)>,
}

/// The gate over `histories`: for each series, the metrics checked (those given, or the
/// primary ones of its load model and the cache's), the newest commit's change when it is a
/// confirmed regression beyond the margin.
pub fn gate(histories: &[SeriesHistory], margin: Option<f64>, explicit: bool) -> Gate {
    let mut regressions = Vec::new();
    let mut unjudged = Vec::new();
    for h in histories {
        let mode = h.runs[0].mode;
        if let Some(why) = unjudgeable(h) {
            unjudged.push((h.info.key.name(), why));
            continue;
        }
        for m in &h.metrics {
            if !explicit && !key::gated_by_default(m.metric, mode) {
                continue;
            }
            if let Some(change) = &m.newest
                && change.regression_beyond(margin.unwrap_or(m.metric.margin()))
            {
                regressions.push((h.info.key.name(), m.metric, change.clone()));
            }
        }
    }
    Gate {
        margin,
        regressions,
        unjudged,
    }
}

/// Why the newest commit of a series cannot be judged, if it cannot.
fn unjudgeable(h: &SeriesHistory) -> Option<String> {
    let newest = h
        .runs
        .iter()
        .max_by(|a, b| a.started_at.cmp(&b.started_at))?;
    let commit = &newest.commit;
    let runs: Vec<&StoredRun> = h.runs.iter().filter(|r| &r.commit == commit).collect();
    if runs.iter().all(|r| r.excluded.is_some()) {
        let why: Vec<&str> = runs.iter().filter_map(|r| r.excluded.as_deref()).collect();
        return Some(format!(
            "every run of the newest commit {commit} was kept out ({}): run it again on a quiet machine",
            why.join("; ")
        ));
    }
    let judged = h
        .metrics
        .iter()
        .any(|m| m.newest.as_ref().is_some_and(|c| &c.commit == commit));
    (!judged).then(|| {
        format!("the newest commit {commit} has no valid runs before it to be judged against (2 are needed)")
    })
}

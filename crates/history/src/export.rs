//! Exports for the dashboards teams already keep: Bencher Metric Format (BMF) and
//! github-action-benchmark's `customSmallerIsBetter` / `customBiggerIsBetter` JSON. Each
//! exports one commit (the newest by default): the median of its valid runs, and their range.

use serde_json::{Map, Value, json};
use vload_analyze::Metric;

use crate::key;
use crate::series::SeriesHistory;

/// The value of a metric in an export's unit: nanoseconds for latencies and CPU in BMF,
/// milliseconds in github-action-benchmark's JSON; ratios as fractions; throughput per second.
fn scaled(metric: Metric, value: f64, latency_in_ms: bool) -> f64 {
    if metric.is_duration() && latency_in_ms {
        value / 1e6
    } else {
        value
    }
}

/// The unit github-action-benchmark shows beside a value.
fn unit(metric: Metric) -> &'static str {
    match metric {
        Metric::Throughput => "req/s",
        Metric::ServerCpu => "ns/req",
        m if m.is_duration() => "ms",
        _ => "ratio",
    }
}

/// True when some series has a valid run of `commit` (a prefix names it too): an export of
/// a commit no series knows would be an empty document, not an answer.
pub fn knows_commit(histories: &[SeriesHistory], commit: &str) -> bool {
    histories
        .iter()
        .any(|h| (0..h.metrics.len()).any(|i| chosen(h, i, Some(commit)).is_some()))
}

/// The commit exported: `commit` when given, else the newest with valid runs.
fn chosen<'a>(
    h: &'a SeriesHistory,
    metric_index: usize,
    commit: Option<&str>,
) -> Option<&'a crate::judge::CommitPoint> {
    let m = &h.metrics[metric_index];
    match commit {
        Some(c) => m
            .commits
            .iter()
            .find(|p| p.commit == c || p.commit.starts_with(c)),
        None => m.commits.iter().rev().find(|p| !p.values.is_empty()),
    }
    .filter(|p| !p.values.is_empty())
}

/// Bencher Metric Format: `{"<series>": {"<metric>": {"value", "lower_value", "upper_value"}}}`.
pub fn bmf(histories: &[SeriesHistory], commit: Option<&str>) -> Value {
    let mut out = Map::new();
    for h in histories {
        let mut measures = Map::new();
        for (i, m) in h.metrics.iter().enumerate() {
            let Some(point) = chosen(h, i, commit) else {
                continue;
            };
            let s = |v: f64| scaled(m.metric, v, false);
            let lo = point.values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = point
                .values
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            measures.insert(
                key::metric_key(m.metric).to_owned(),
                json!({
                    "value": s(point.median().expect("has values")),
                    "lower_value": s(lo),
                    "upper_value": s(hi),
                }),
            );
        }
        if !measures.is_empty() {
            out.insert(h.info.key.name(), Value::Object(measures));
        }
    }
    Value::Object(out)
}

/// github-action-benchmark's custom JSON: an array of `{name, unit, value, range, extra}`,
/// only the metrics where smaller is better (`bigger` false) or bigger is (`bigger` true).
pub fn github_action_benchmark(
    histories: &[SeriesHistory],
    commit: Option<&str>,
    bigger: bool,
) -> Value {
    let mut out = Vec::new();
    for h in histories {
        for (i, m) in h.metrics.iter().enumerate() {
            if m.metric.higher_is_better() != bigger {
                continue;
            }
            let Some(point) = chosen(h, i, commit) else {
                continue;
            };
            let s = |v: f64| scaled(m.metric, v, true);
            let lo = point.values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = point
                .values
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            out.push(json!({
                "name": format!("{} {}", h.info.key.name(), key::metric_key(m.metric)),
                "unit": unit(m.metric),
                "value": s(point.median().expect("has values")),
                "range": format!("{} to {}", s(lo), s(hi)),
                "extra": format!("commit {}, {} valid runs, {} excluded", point.commit, point.values.len(), point.excluded),
            }));
        }
    }
    Value::Array(out)
}

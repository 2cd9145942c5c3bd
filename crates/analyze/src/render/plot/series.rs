//! What one run contributes to the charts, read from its run file once.

use vload_schema::{LatencyKind, RunFile, SchemaError};

use super::svg::ms;
use crate::summary::Summary;

/// The quantiles of the percentile curve a group's median is taken at (every run at the
/// same points, so that they line up).
const GRID_QUANTILES: [f64; 12] = [
    0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99995, 0.99999,
];

/// Points of a line, (x, y).
type Line = Vec<(f64, f64)>;

/// What one run contributes to the charts.
pub(super) struct RunSeries {
    pub(super) name: String,
    /// The run's `--label`, by which runs are grouped.
    pub(super) label: Option<String>,
    /// Per interval: p50, p99 and max of the primary latency, in ms.
    pub(super) p50: Vec<(f64, f64)>,
    pub(super) p99: Vec<(f64, f64)>,
    pub(super) max: Vec<(f64, f64)>,
    /// Per interval: completed and failed requests per second.
    pub(super) throughput: Vec<(f64, f64)>,
    pub(super) errors: Vec<(f64, f64)>,
    /// The whole run's percentile curve: (1 / (1 - q), ms).
    pub(super) curve: Vec<(f64, f64)>,
    /// The same at [`GRID_QUANTILES`] the run has samples for.
    pub(super) grid_curve: Vec<(f64, f64)>,
    /// Per interval: requests that fell due per second (open loop, not a sweep).
    pub(super) intended: Vec<(f64, f64)>,
    /// The spans of its warm-up intervals, joined where they touch.
    pub(super) warmups: Vec<(f64, f64)>,
    /// The stages an origin plan put the origin in a state other than up (`--outage`,
    /// `--slowdown`): their spans and the state.
    pub(super) origin_phases: Vec<(f64, f64, String)>,
    /// Per interval with classified responses, when some answer was stale: the stale share,
    /// in percent.
    pub(super) stale: Vec<(f64, f64)>,
    /// A stampede's events (`--stampede`): when each fired, and the origin fetches it cost
    /// (the origin's count, else the answers the cache forwarded).
    pub(super) stampede: Vec<(f64, f64)>,
    /// A path of caches, per interval: each layer's hit ratio, in percent (the nearest the
    /// client first), and the share of the requests the path sent to the origin.
    pub(super) layer_hits: Vec<Vec<(f64, f64)>>,
    pub(super) path_origin: Vec<(f64, f64)>,
    /// Which latency the run's figures are.
    pub(super) kind: LatencyKind,
    /// Per measured interval (or warm-up one): its span and its latency histogram.
    pub(super) histograms: Vec<(f64, f64, hdrhistogram::Histogram<u64>)>,
    /// Per interval with classified responses: the hit ratio, in percent.
    pub(super) hit_ratio: Vec<(f64, f64)>,
    /// Per interval of a watched server (`--watch-pid`): the cores it kept busy, and its CPU
    /// per completed request in µs.
    pub(super) server_cores: Vec<(f64, f64)>,
    pub(super) server_cpu_per_request: Vec<(f64, f64)>,
    /// Hits over hits and misses by the server's own count each second (`--server-stats`).
    pub(super) server_hit_ratio: Vec<(f64, f64)>,
    /// Requests the server sent to the origin each second, by its own count.
    pub(super) origin_per_s: Vec<(f64, f64)>,
    /// Failed requests over the whole run, warm-up included.
    pub(super) failed: u64,
    pub(super) summary: Summary,
    /// A sweep's record: its SLO and its answer.
    pub(super) sweep: Option<vload_schema::SweepRecord>,
}

impl RunSeries {
    pub(super) fn of(name: &str, run: &RunFile) -> Result<Self, SchemaError> {
        let (curve, grid_curve) = percentile_curves(run)?;
        let mut series = RunSeries {
            name: name.to_owned(),
            label: run.label.clone().filter(|l| !l.is_empty()),
            p50: Vec::new(),
            p99: Vec::new(),
            max: Vec::new(),
            throughput: Vec::new(),
            errors: Vec::new(),
            curve,
            grid_curve,
            intended: Vec::new(),
            warmups: Vec::new(),
            origin_phases: origin_phases(run),
            stale: Vec::new(),
            layer_hits: Vec::new(),
            path_origin: Vec::new(),
            stampede: stampede_marks(run),
            kind: run.latency.primary,
            histograms: Vec::new(),
            hit_ratio: Vec::new(),
            server_cores: Vec::new(),
            server_hit_ratio: Vec::new(),
            origin_per_s: Vec::new(),
            server_cpu_per_request: Vec::new(),
            failed: 0,
            summary: Summary::of(run)?,
            sweep: run.sweep.clone(),
        };
        let open = run.plan.mode == vload_schema::Mode::Open && run.sweep.is_none();
        let any_stale = run.intervals.iter().any(|i| i.stale > 0);
        // A last interval of a few milliseconds would plot as a spike of noise.
        for interval in run.intervals.iter().filter(|i| i.duration_s >= 0.5) {
            let t = interval.start_s + interval.duration_s / 2.0;
            let end = interval.start_s + interval.duration_s;
            let h = interval.latency.histogram.decode()?;
            let m = &interval.latency.moments;
            if !h.is_empty() {
                let at = |q: f64| ms(m.clamp(h.value_at_quantile(q)) as f64);
                series.p50.push((t, at(0.5)));
                series.p99.push((t, at(0.99)));
                series.max.push((t, ms(m.max_ns as f64)));
            }
            let seconds = interval.duration_s.max(1e-9);
            series
                .throughput
                .push((t, interval.completed as f64 / seconds));
            if open {
                series
                    .intended
                    .push((t, interval.intended as f64 / seconds));
            }
            if interval.warmup {
                match series.warmups.last_mut() {
                    Some(last) if (last.1 - interval.start_s).abs() < 0.05 => last.1 = end,
                    _ => series.warmups.push((interval.start_s, end)),
                }
            }
            let classified = interval.hits + interval.misses;
            if classified > 0 {
                let ratio = interval.hits as f64 / classified as f64;
                series.hit_ratio.push((t, 100.0 * ratio));
                if any_stale {
                    let stale = interval.stale as f64 / classified as f64;
                    series.stale.push((t, 100.0 * stale));
                }
            }
            series.push_layers(interval, t);
            series.push_server(interval, t, seconds);
            let failed: u64 = interval.errors.values().sum();
            series.failed += failed;
            series.errors.push((t, failed as f64 / seconds));
            series.histograms.push((interval.start_s, end, h));
        }
        Ok(series)
    }

    /// A path of caches in one interval: each layer's hit ratio, the share sent on to the
    /// origin.
    fn push_layers(&mut self, interval: &vload_schema::Interval, t: f64) {
        let layers = &interval.layers;
        if layers.len() < 2 {
            return;
        }
        if self.layer_hits.len() < layers.len() {
            self.layer_hits.resize(layers.len(), Vec::new());
        }
        for (line, l) in self.layer_hits.iter_mut().zip(layers) {
            if l.reached > 0 {
                line.push((t, 100.0 * l.hits as f64 / l.reached as f64));
            }
        }
        let (first, last) = (layers[0], layers[layers.len() - 1]);
        if first.reached > 0 {
            self.path_origin
                .push((t, 100.0 * last.misses as f64 / first.reached as f64));
        }
    }

    /// The server's side of one interval: its own hit ratio and origin requests
    /// (`--server-stats`), its CPU (`--watch-pid`).
    fn push_server(&mut self, interval: &vload_schema::Interval, t: f64, seconds: f64) {
        if let Some(server) = &interval.server {
            if let Some(ratio) = server.hit_ratio() {
                self.server_hit_ratio.push((t, 100.0 * ratio));
            }
            if let Some(origin) = server.origin_requests {
                self.origin_per_s.push((t, origin as f64 / seconds));
            }
        }
        if let Some(cpu) = interval.server_cpu_s.filter(|c| c.is_finite()) {
            self.server_cores.push((t, cpu / seconds));
            if interval.completed > 0 {
                let per_request = cpu * 1e6 / interval.completed as f64;
                self.server_cpu_per_request.push((t, per_request));
            }
        }
    }
}

/// The primary latency by percentile on HdrHistogram's `1/(1-q)` axis, never above the max:
/// every step of the histogram, and the points of [`GRID_QUANTILES`] with samples enough.
/// A stampede's events: when each fired, and the origin fetches it cost.
fn stampede_marks(run: &RunFile) -> Vec<(f64, f64)> {
    run.stampede.as_ref().map_or_else(Vec::new, |s| {
        s.events
            .iter()
            .map(|e| (e.at_s, e.origin_fetches.unwrap_or(e.leaders) as f64))
            .collect()
    })
}

/// The stages an origin plan put the origin in a state other than up.
fn origin_phases(run: &RunFile) -> Vec<(f64, f64, String)> {
    run.stages
        .iter()
        .filter_map(|s| {
            let state = s.origin_state.as_deref().filter(|s| *s != "up")?;
            Some((
                s.start_s,
                s.start_s + s.duration_s,
                format!("origin {state}"),
            ))
        })
        .collect()
}

fn percentile_curves(run: &RunFile) -> Result<(Line, Line), SchemaError> {
    let record = run.latency.primary();
    let h = record.histogram.decode()?;
    if h.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let value = |v: u64| ms(record.moments.clamp(h.highest_equivalent(v)) as f64);
    let curve = h
        .iter_quantiles(5)
        .filter(|v| v.quantile_iterated_to() < 1.0)
        .map(|v| {
            (
                1.0 / (1.0 - v.quantile_iterated_to()),
                value(v.value_iterated_to()),
            )
        })
        .collect();
    let samples = h.len() as f64;
    let grid = GRID_QUANTILES
        .iter()
        .filter(|q| samples * (1.0 - **q) >= 1.0)
        .map(|q| (1.0 / (1.0 - q), value(h.value_at_quantile(*q))))
        .collect();
    Ok((curve, grid))
}

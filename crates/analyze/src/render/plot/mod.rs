//! `vload plot`: one self-contained HTML page of SVG charts, no network fetches.
//!
//! The markup is well-formed XML (every element closed, text escaped), so the page parses
//! with an XML parser as well as in a browser.

mod svg;

use std::fmt::Write as _;

use vload_schema::{LatencyKind, RunFile, SchemaError};

use crate::summary::Summary;
use crate::units::{count, duration_ns, rate};
use svg::{
    Axis, HeatColumn, PALETTE, Scale, Series, bounds_of, chart, escape, fmt_ms, fmt_percentile,
    fmt_plain, heatmap, ms,
};

/// Latency bins of a heatmap column (log-spaced between the chart's bounds).
const HEAT_BINS: usize = 48;
/// At most this many columns a heatmap: longer runs merge neighbouring seconds.
const HEAT_COLUMNS: usize = 240;

/// What one run contributes to the charts.
struct RunSeries {
    name: String,
    color: &'static str,
    /// Per interval: p50, p99 and max of the primary latency, in ms.
    p50: Vec<(f64, f64)>,
    p99: Vec<(f64, f64)>,
    max: Vec<(f64, f64)>,
    /// Per interval: completed and failed requests per second.
    throughput: Vec<(f64, f64)>,
    errors: Vec<(f64, f64)>,
    /// The whole run's percentile curve: (1 / (1 - q), ms).
    curve: Vec<(f64, f64)>,
    /// Per interval: requests that fell due per second (open loop).
    intended: Vec<(f64, f64)>,
    /// Per stage (a rate plan's or a sweep's): (throughput achieved, p50 / p99 / p99.9 in ms).
    knee: [Vec<(f64, f64)>; 3],
    /// A sweep: its rate over time would show the gaps between steps, not a plan.
    sweep: bool,
    /// A sweep's SLO latency limits, in ms, by name.
    slo: Vec<(String, f64)>,
    /// Which latency the run's figures are.
    kind: LatencyKind,
    /// Per measured interval (or warm-up one): its span and its latency histogram.
    histograms: Vec<(f64, f64, hdrhistogram::Histogram<u64>)>,
    /// Failed requests over the whole run, warm-up included.
    failed: u64,
    summary: Summary,
}

impl RunSeries {
    fn of(index: usize, name: &str, run: &RunFile) -> Result<Self, SchemaError> {
        let mut series = RunSeries {
            name: name.to_owned(),
            color: PALETTE[index % PALETTE.len()],
            p50: Vec::new(),
            p99: Vec::new(),
            max: Vec::new(),
            throughput: Vec::new(),
            errors: Vec::new(),
            curve: percentile_curve(run)?,
            intended: Vec::new(),
            knee: Default::default(),
            slo: slo_limits(run),
            sweep: run.sweep.is_some(),
            kind: run.latency.primary,
            histograms: Vec::new(),
            failed: 0,
            summary: Summary::of(run)?,
        };
        series.knee = knee(&series.summary);
        // A last interval of a few milliseconds would plot as a spike of noise.
        for interval in run.intervals.iter().filter(|i| i.duration_s >= 0.5) {
            let t = interval.start_s + interval.duration_s / 2.0;
            let h = interval.latency.histogram.decode()?;
            let m = &interval.latency.moments;
            if !h.is_empty() {
                series
                    .p50
                    .push((t, ms(m.clamp(h.value_at_quantile(0.5)) as f64)));
                series
                    .p99
                    .push((t, ms(m.clamp(h.value_at_quantile(0.99)) as f64)));
                series.max.push((t, ms(m.max_ns as f64)));
            }
            let seconds = interval.duration_s.max(1e-9);
            series
                .throughput
                .push((t, interval.completed as f64 / seconds));
            if run.plan.mode == vload_schema::Mode::Open {
                series
                    .intended
                    .push((t, interval.intended as f64 / seconds));
            }
            let failed: u64 = interval.errors.values().sum();
            series.failed += failed;
            series.errors.push((t, failed as f64 / seconds));
            let end = interval.start_s + interval.duration_s;
            series.histograms.push((interval.start_s, end, h));
        }
        Ok(series)
    }

    /// The heatmap's columns over `bounds` (ms): each second's (or group of seconds')
    /// requests spread over log-spaced latency bins, as shares of the column.
    fn heat_columns(&self, bounds: (f64, f64)) -> Vec<HeatColumn> {
        let per_column = self.histograms.len().div_ceil(HEAT_COLUMNS).max(1);
        let (log_lo, log_hi) = (bounds.0.log10(), bounds.1.log10());
        self.histograms
            .chunks(per_column)
            .map(|chunk| {
                let mut counts = vec![0u64; HEAT_BINS];
                for (_, _, h) in chunk {
                    for v in h.iter_recorded() {
                        let at = ms(h.median_equivalent(v.value_iterated_to()) as f64)
                            .max(bounds.0)
                            .log10();
                        let bin = ((at - log_lo) / (log_hi - log_lo) * HEAT_BINS as f64) as usize;
                        // Saturating: a hostile run file's counts must not wrap.
                        let cell = &mut counts[bin.min(HEAT_BINS - 1)];
                        *cell = cell.saturating_add(v.count_at_value());
                    }
                }
                let total = counts.iter().fold(0u64, |t, c| t.saturating_add(*c)).max(1) as f64;
                HeatColumn {
                    from: chunk[0].0,
                    to: chunk[chunk.len() - 1].1,
                    shares: counts.iter().map(|c| *c as f64 / total).collect(),
                }
            })
            .collect()
    }

    fn line(&self, suffix: &str, dash: &'static str, points: &[(f64, f64)]) -> Series {
        Series {
            name: format!("{}{suffix}", self.name),
            color: self.color,
            dash,
            points: points.to_vec(),
            dots: false,
        }
    }
}

/// Each stage's quantiles against the throughput it achieved, in rising offered rate: the
/// knee where throughput stops growing and latency turns up is the capacity. Quantiles too
/// thin to report are left out.
fn knee(summary: &Summary) -> [Vec<(f64, f64)>; 3] {
    let mut stages: Vec<_> = summary.stages.iter().filter(|s| !s.warmup).collect();
    stages.sort_by(|a, b| {
        let offered = |s: &crate::staged::StageSummary| s.from_rate_per_s.max(s.to_rate_per_s);
        offered(a).total_cmp(&offered(b))
    });
    ["p50", "p99", "p99.9"].map(|q| {
        stages
            .iter()
            .filter_map(|s| Some((s.throughput_per_s, ms(s.latency.quantile(q)? as f64))))
            .collect()
    })
}

/// A sweep's latency limits, to draw as lines across the knee.
fn slo_limits(run: &RunFile) -> Vec<(String, f64)> {
    let Some(sweep) = &run.sweep else {
        return Vec::new();
    };
    sweep
        .slo
        .iter()
        .filter(|t| crate::slo::quantile_of(t.metric).is_some())
        .map(|t| (crate::slo::term_text(t), ms(t.limit)))
        .collect()
}

/// The primary latency by percentile on HdrHistogram's `1/(1-q)` axis, never above the max.
fn percentile_curve(run: &RunFile) -> Result<Vec<(f64, f64)>, SchemaError> {
    let record = run.latency.primary();
    let h = record.histogram.decode()?;
    if h.is_empty() {
        return Ok(Vec::new());
    }
    Ok(h.iter_quantiles(5)
        .filter(|v| v.quantile_iterated_to() < 1.0)
        .map(|v| {
            let value = record
                .moments
                .clamp(h.highest_equivalent(v.value_iterated_to()));
            (1.0 / (1.0 - v.quantile_iterated_to()), ms(value as f64))
        })
        .collect())
}

/// Renders runs (name, run) as one HTML page with inline SVG charts.
///
/// # Errors
/// A histogram does not decode.
pub fn html(runs: &[(String, RunFile)]) -> Result<String, SchemaError> {
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (name, run))| RunSeries::of(i, name, run))
        .collect::<Result<Vec<_>, _>>()?;
    let time = Axis {
        label: "seconds since start",
        scale: Scale::Linear,
        format: fmt_plain,
    };
    let latency_axis = Axis {
        label: "latency",
        scale: Scale::Log,
        format: fmt_ms,
    };
    // The latency each run reports: one phrase when they agree, else each run's own.
    let kind = if series.windows(2).all(|w| w[0].kind == w[1].kind) {
        series
            .first()
            .map_or(kind_words(LatencyKind::Response), |s| kind_words(s.kind))
            .to_owned()
    } else {
        "each run's own latency, which differ: see the table".to_owned()
    };
    let all = |f: &dyn Fn(&RunSeries) -> Vec<Series>| series.iter().flat_map(f).collect::<Vec<_>>();
    let mut page = String::from(HEAD);
    let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
    let _ = writeln!(page, "<h1>vload: {}</h1>", escape(&names.join(" vs ")));
    page.push_str(&summary_table(&series));
    page.push_str(&chart(
        &format!("Latency over time: p50, p99 (dashed), max (dotted), {kind}"),
        &time,
        &latency_axis,
        &all(&|s| {
            vec![
                s.line(" p50", "none", &s.p50),
                s.line(" p99", "6 3", &s.p99),
                s.line(" max", "1 3", &s.max),
            ]
        }),
    ));
    page.push_str(&chart(
        "Throughput over time (completed requests per second)",
        &time,
        &per_second("requests per second"),
        &all(&|s| vec![s.line("", "none", &s.throughput)]),
    ));
    if series.iter().any(|s| !s.knee[0].is_empty()) {
        page.push_str(&stage_charts(&series, &time, &latency_axis));
    }
    page.push_str(&heatmaps(&series, &time, &latency_axis));
    // A chart of zeros says nothing: left out when no run had an error.
    if series.iter().any(|s| s.failed > 0) {
        page.push_str(&chart(
            "Errors over time (failed requests per second)",
            &time,
            &per_second("errors per second"),
            &all(&|s| vec![s.line(" errors", "none", &s.errors)]),
        ));
    }
    page.push_str(&chart(
        &format!("Latency by percentile ({kind})"),
        &Axis {
            label: "percentile",
            scale: Scale::Log,
            format: fmt_percentile,
        },
        &latency_axis,
        &all(&|s| vec![s.line("", "none", &s.curve)]),
    ));
    page.push_str(FOOT);
    Ok(page)
}

fn kind_words(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Service => "service time (closed loop)",
        LatencyKind::Response => "response time from the intended send",
    }
}

/// One latency heatmap per run, all on the same latency bounds so they compare by eye.
fn heatmaps(series: &[RunSeries], time: &Axis, latency: &Axis) -> String {
    let bounds = bounds_of(
        series
            .iter()
            .flat_map(|s| s.histograms.iter())
            .filter(|(_, _, h)| !h.is_empty())
            .flat_map(|(_, _, h)| [ms(h.min() as f64), ms(h.max() as f64)]),
        Scale::Log,
    );
    let mut out = String::new();
    for s in series.iter().filter(|s| !s.histograms.is_empty()) {
        out.push_str(&heatmap(
            &format!(
                "Latency heatmap of {}: {}, each second's requests by latency",
                s.name,
                kind_words(s.kind)
            ),
            time,
            latency,
            bounds,
            &s.heat_columns(bounds),
        ));
    }
    out
}

/// For rate plans and sweeps: latency against the throughput each stage achieved (the
/// knee, with the SLO's limits), and the rate asked for against the rate achieved.
fn stage_charts(series: &[RunSeries], time: &Axis, latency: &Axis) -> String {
    let mut knee = Vec::new();
    let dotted = |line: Series| Series { dots: true, ..line };
    for s in series {
        knee.push(dotted(s.line(" p50", "none", &s.knee[0])));
        knee.push(dotted(s.line(" p99", "6 3", &s.knee[1])));
        knee.push(dotted(s.line(" p99.9", "1 3", &s.knee[2])));
        let span = s.knee[0]
            .iter()
            .map(|p| p.0)
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            });
        for (name, limit) in &s.slo {
            knee.push(Series {
                name: format!("{} SLO {name}", s.name),
                color: "#888888",
                dash: "2 2",
                points: vec![(span.0, *limit), (span.1, *limit)],
                dots: false,
            });
        }
    }
    let mut out = chart(
        "Latency against throughput achieved, one point a stage: p50, p99 (dashed), p99.9 (dotted)",
        &per_second("throughput achieved (successful responses per second)"),
        latency,
        &knee,
    );
    let ramp: Vec<Series> = series
        .iter()
        .filter(|s| !s.intended.is_empty() && !s.sweep)
        .flat_map(|s| {
            [
                s.line(" asked", "6 3", &s.intended),
                s.line(" achieved", "none", &s.throughput),
            ]
        })
        .collect();
    if !ramp.is_empty() {
        out.push_str(&chart(
            "Rate asked for (due, dashed) and achieved (completed) over time",
            time,
            &per_second("requests per second"),
            &ramp,
        ));
    }
    out
}

fn per_second(label: &'static str) -> Axis {
    Axis {
        label,
        scale: Scale::Linear,
        format: fmt_plain,
    }
}

const FOOT: &str = "<p class=\"foot\">Made by vload. Percentiles need 10/(1-q) samples to be meaningful: p99.9 rests on at least 10,000.</p>\n</body>\n</html>\n";

/// One row a run (numbers only, so no cell wraps), then each run's plan on a line of its own.
fn summary_table(rows: &[RunSeries]) -> String {
    let mut out = String::from(
        "<div class=\"table\">\n<table>\n<tr><th>run</th><th>requests</th><th>throughput</th><th>p50</th><th>p99</th><th>p99.9</th><th>errors</th><th>latency</th><th>client</th></tr>\n",
    );
    for RunSeries {
        name,
        color,
        summary: s,
        ..
    } in rows
    {
        let q = |n: &str| {
            s.latency
                .quantile(n)
                .map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64))
        };
        let errors: u64 = s.errors.values().map(|e| e.count).sum();
        let _ = writeln!(
            out,
            r#"<tr><td><span class="swatch" style="background:{color}"></span>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            escape(name),
            count(s.requests),
            escape(&rate(s.throughput_per_s)),
            escape(&q("p50")),
            escape(&q("p99")),
            escape(&q("p99.9")),
            count(errors),
            match s.latency_kind {
                LatencyKind::Service => "service time",
                LatencyKind::Response => "response time",
            },
            s.health.verdict.name()
        );
    }
    out.push_str("</table>\n</div>\n<ul class=\"plans\">\n");
    for RunSeries {
        name, summary: s, ..
    } in rows
    {
        let _ = writeln!(out, "<li><b>{}</b>: {}</li>", escape(name), escape(&s.plan));
    }
    out.push_str("</ul>\n");
    out
}

const HEAD: &str = r#"<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<title>vload plot</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 920px; color: #222; }
h1 { font-size: 20px; margin-bottom: 12px; }
h2 { font-size: 15px; margin: 28px 0 6px; font-weight: 600; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e5e5e5; white-space: nowrap; }
.table { overflow-x: auto; }
.plans { font-size: 13px; color: #444; padding-left: 18px; margin: 8px 0 0; }
th { color: #555; font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
.tick { font-size: 11px; fill: #555; }
.axis { font-size: 12px; fill: #333; }
.legend { font-size: 12px; margin: 4px 0 0 70px; }
.legend span { margin-right: 16px; white-space: nowrap; }
.legend svg { vertical-align: middle; margin-right: 4px; }
.foot { color: #777; font-size: 12px; margin-top: 28px; }
</style>
</head>
<body>
"#;

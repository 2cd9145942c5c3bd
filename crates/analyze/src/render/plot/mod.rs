//! `vload plot`: one self-contained HTML page of SVG charts, no network fetches.
//!
//! The markup is well-formed XML (every element closed, text escaped), so the page parses
//! with an XML parser as well as in a browser.

mod group;
mod heat;
mod knee;
mod series;
mod strip;
mod svg;

use std::fmt::Write as _;

use vload_schema::{LatencyKind, RunFile, SchemaError};

use crate::units::{count, duration_ns, rate};
use group::{Group, groups, lines};
use heat::{HeatColumn, heatmap};
use series::RunSeries;
use strip::{Strip, strip};
use svg::{
    Axis, Band, Extras, Scale, bounds_of, chart_with, escape, fmt_ms, fmt_percentile, fmt_plain, ms,
};

/// Latency bins of a heatmap column (log-spaced between the chart's bounds).
const HEAT_BINS: usize = 48;
/// At most this many columns a heatmap: longer runs merge neighbouring seconds.
const HEAT_COLUMNS: usize = 240;

/// A run's heatmap columns over `bounds` (ms): each second's (or group of seconds')
/// requests spread over log-spaced latency bins, as shares of the column.
fn heat_columns(run: &RunSeries, bounds: (f64, f64)) -> Vec<HeatColumn> {
    let per_column = run.histograms.len().div_ceil(HEAT_COLUMNS).max(1);
    let (log_lo, log_hi) = (bounds.0.log10(), bounds.1.log10());
    run.histograms
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

/// Renders runs (name, run) as one HTML page with inline SVG charts. Runs whose labels
/// repeat are grouped: a colour a label, each run thin around the label's median, and a
/// view of each run's value by group.
///
/// # Errors
/// A histogram does not decode.
pub fn html(runs: &[(String, RunFile)]) -> Result<String, SchemaError> {
    let series = runs
        .iter()
        .map(|(name, run)| RunSeries::of(name, run))
        .collect::<Result<Vec<_>, _>>()?;
    let (groups, grouped) = groups(&series);
    // The latency each run reports: one phrase when they agree, else each run's own.
    let kind = if series.windows(2).all(|w| w[0].kind == w[1].kind) {
        series
            .first()
            .map_or(kind_words(LatencyKind::Response), |s| kind_words(s.kind))
            .to_owned()
    } else {
        "each run's own latency, which differ: see the table".to_owned()
    };
    let mut over_time = Extras {
        bands: warmup_bands(&series)
            .into_iter()
            .chain(phase_bands(&series))
            .collect(),
        ..Extras::default()
    };
    if groups.iter().any(|g| g.members.len() > 1) {
        over_time
            .notes
            .push("thin lines: each run; thick: the median of its group".to_owned());
    }
    let page = Page {
        series: &series,
        groups: &groups,
        grouped,
        kind,
        over_time,
        time: Axis {
            label: "seconds since start",
            scale: Scale::Linear,
            format: fmt_plain,
        },
        latency: Axis {
            label: "latency",
            scale: Scale::Log,
            format: fmt_ms,
        },
    };
    let mut out = String::from(HEAD);
    let _ = writeln!(
        out,
        "<h1>vload: {}</h1>",
        escape(&group::title(&groups, grouped))
    );
    out.push_str(&summary_table(&series, &groups));
    out.push_str(&page.over_time_charts());
    if grouped && groups.len() >= 2 {
        out.push_str(&compare_view(&groups, &series, &page.latency));
    }
    out.push_str(&knee::knee_chart(&groups, &series, grouped, &page.latency));
    out.push_str(&heatmaps(&groups, &series, &page.time, &page.latency));
    // A chart of zeros says nothing: left out when no run had an error.
    if series.iter().any(|s| s.failed > 0) {
        out.push_str(&chart_with(
            "Errors over time (failed requests per second)",
            &page.time,
            &per_second("errors per second"),
            &page.lines(&|s| &s.errors, " errors", "none"),
            &page.over_time,
        ));
    }
    out.push_str(&page.server_charts());
    out.push_str(&page.cache_lab_charts());
    out.push_str(&page.percentile_chart());
    out.push_str(FOOT);
    Ok(out)
}

/// What the charts of one page share.
struct Page<'a> {
    series: &'a [RunSeries],
    groups: &'a [Group],
    grouped: bool,
    /// The latency the runs report, in words.
    kind: String,
    /// The warm-up bands and notes of the charts over time.
    over_time: Extras,
    time: Axis,
    latency: Axis,
}

impl Page<'_> {
    fn lines(
        &self,
        pick: &dyn Fn(&RunSeries) -> &[(f64, f64)],
        suffix: &str,
        dash: &'static str,
    ) -> Vec<svg::Series> {
        lines(self.groups, self.series, pick, suffix, dash, self.grouped)
    }

    /// Latency over time, and throughput with the rate asked.
    fn over_time_charts(&self) -> String {
        let mut latency_lines = self.lines(&|s| &s.p50, " p50", "none");
        latency_lines.extend(self.lines(&|s| &s.p99, " p99", "6 3"));
        latency_lines.extend(self.lines(&|s| &s.max, " max", "1 3"));
        let mut out = chart_with(
            &format!(
                "Latency over time: p50, p99 (dashed), max (dotted), {}",
                self.kind
            ),
            &self.time,
            &self.latency,
            &latency_lines,
            &self.over_time,
        );
        let mut rate_lines = self.lines(&|s| &s.throughput, "", "none");
        let asked = self.series.iter().any(|s| !s.intended.is_empty());
        if asked {
            rate_lines.extend(self.lines(&|s| &s.intended, " asked", "6 3"));
        }
        out.push_str(&chart_with(
            if asked {
                "Throughput over time: completed requests per second, and the rate asked (dashed)"
            } else {
                "Throughput over time (completed requests per second)"
            },
            &self.time,
            &per_second("requests per second"),
            &rate_lines,
            &self.over_time,
        ));
        out
    }

    /// The cache lab's charts: a path of caches layer by layer, a stampede's events.
    fn cache_lab_charts(&self) -> String {
        let mut out = String::new();
        if self.series.iter().any(|s| !s.path_origin.is_empty()) {
            out.push_str(&chart_with(
                "A path of caches: the share of requests sent on to the origin, each second (the last layer's forwards over the nearest's requests)",
                &self.time,
                &per_second("to the origin, %"),
                &self.lines(&|s| &s.path_origin, "", "none"),
                &self.over_time,
            ));
        }
        let layers = self
            .series
            .iter()
            .map(|s| s.layer_hits.len())
            .max()
            .unwrap_or(0);
        if layers >= 2 {
            let mut lines = Vec::new();
            for k in 0..layers {
                let suffix = format!(" layer {}", k + 1);
                let dash = if k == 0 { "none" } else { "6 3" };
                lines.extend(self.lines(
                    &|s| s.layer_hits.get(k).map_or(&[][..], |l| &l[..]),
                    &suffix,
                    dash,
                ));
            }
            out.push_str(&chart_with(
                "A path of caches: each layer's hit ratio, each second (layer 1 nearest the client; dashed: the layers behind it)",
                &self.time,
                &per_second("hit ratio, %"),
                &lines,
                &self.over_time,
            ));
        }
        if self.series.iter().any(|s| !s.stampede.is_empty()) {
            let mut marks = self.lines(&|s| &s.stampede, "", "none");
            marks.iter_mut().for_each(|m| m.dots = true);
            out.push_str(&chart_with(
                "Stampedes: origin fetches each event cost (one mark an event: the origin's count, else the answers the cache forwarded)",
                &self.time,
                &per_second("origin fetches"),
                &marks,
                &self.over_time,
            ));
        }
        out
    }

    /// The cache's hit ratio and the server's CPU over time, when some run has them.
    fn server_charts(&self) -> String {
        let mut out = String::new();
        let chart =
            |out: &mut String, title: &str, label, pick: &dyn Fn(&RunSeries) -> &[(f64, f64)]| {
                if self.series.iter().any(|s| !pick(s).is_empty()) {
                    out.push_str(&chart_with(
                        title,
                        &self.time,
                        &per_second(label),
                        &self.lines(pick, "", "none"),
                        &self.over_time,
                    ));
                }
            };
        chart(
            &mut out,
            "Hit ratio over time (hits over classified responses, each second)",
            "hit ratio, %",
            &|s| &s.hit_ratio,
        );
        chart(
            &mut out,
            "Stale answers over time (served past their freshness, % of classified, each second)",
            "stale, %",
            &|s| &s.stale,
        );
        chart(
            &mut out,
            "Hit ratio over time by the server's own count (hits over hits and misses, --server-stats)",
            "hit ratio, %",
            &|s| &s.server_hit_ratio,
        );
        chart(
            &mut out,
            "Origin requests over time (the server's own count of requests it sent on, --server-stats)",
            "requests to the origin",
            &|s| &s.origin_per_s,
        );
        chart(
            &mut out,
            "Server CPU over time (cores the watched server kept busy, --watch-pid)",
            "cores",
            &|s| &s.server_cores,
        );
        chart(
            &mut out,
            "Server CPU per request over time (µs of the server's CPU a completed request)",
            "µs per request",
            &|s| &s.server_cpu_per_request,
        );
        out
    }

    /// The percentile curves: each run's own steps; a group's median at fixed quantiles.
    fn percentile_chart(&self) -> String {
        let median = |name: &str| is_median(self.groups, name);
        let curve_lines: Vec<_> = self
            .lines(&|s| &s.curve, "", "none")
            .into_iter()
            .filter(|l| l.thin || !median(&l.name))
            .chain(
                self.lines(&|s| &s.grid_curve, "", "none")
                    .into_iter()
                    .filter(|l| !l.thin && median(&l.name)),
            )
            .collect();
        chart_with(
            &format!("Latency by percentile ({})", self.kind),
            &Axis {
                label: "percentile",
                scale: Scale::Log,
                format: fmt_percentile,
            },
            &self.latency,
            &curve_lines,
            &Extras::default(),
        )
    }
}

/// True when `name` is the median line of a group of several runs.
fn is_median(groups: &[Group], name: &str) -> bool {
    groups.iter().any(|g| g.members.len() > 1 && g.name == name)
}

/// The warm-up spans of the runs, each drawn once.
fn warmup_bands(series: &[RunSeries]) -> Vec<Band> {
    let mut spans: Vec<(f64, f64)> = series.iter().flat_map(|s| s.warmups.clone()).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    spans.dedup_by(|a, b| (a.0 - b.0).abs() < 0.05 && (a.1 - b.1).abs() < 0.05);
    spans
        .into_iter()
        .enumerate()
        .map(|(i, (from, to))| Band {
            from,
            to,
            label: "warm-up".to_owned(),
            fill: "#f1f1f1",
            show_label: i == 0,
        })
        .collect()
}

/// The spans an origin plan put the origin down or slow, each drawn once, labelled with the
/// state.
fn phase_bands(series: &[RunSeries]) -> Vec<Band> {
    let mut spans: Vec<(f64, f64, String)> = series
        .iter()
        .flat_map(|s| s.origin_phases.clone())
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    spans.dedup_by(|a, b| (a.0 - b.0).abs() < 0.05 && (a.1 - b.1).abs() < 0.05 && a.2 == b.2);
    spans
        .into_iter()
        .map(|(from, to, label)| Band {
            from,
            to,
            label,
            fill: "#fbe3e3",
            show_label: true,
        })
        .collect()
}

/// Each run's p50, p99 and throughput by group: what `vload compare` weighs, seen.
fn compare_view(groups: &[Group], series: &[RunSeries], latency: &Axis) -> String {
    let strips = |value: &dyn Fn(&RunSeries) -> Option<f64>| -> Vec<Strip> {
        groups
            .iter()
            .map(|g| Strip {
                name: g.name.clone(),
                color: g.color.clone(),
                values: g
                    .members
                    .iter()
                    .filter_map(|&i| Some((series[i].name.clone(), value(&series[i])?)))
                    .collect(),
            })
            .collect()
    };
    let quantile =
        |q: &'static str| move |s: &RunSeries| s.summary.latency.quantile(q).map(|v| ms(v as f64));
    let mut out = String::new();
    for q in ["p50", "p99"] {
        out.push_str(&strip(
            &format!("Each run's {q} by group (bar: the group's median)"),
            latency,
            &strips(&quantile(q)),
        ));
    }
    out.push_str(&strip(
        "Each run's throughput by group (bar: the group's median)",
        &per_second("successful responses per second"),
        &strips(&|s| Some(s.summary.throughput_per_s)),
    ));
    // The two that decide a cache comparison, when the runs have them.
    let cpu = strips(&|s| {
        let ns = s.summary.server.as_ref()?.cpu_per_request_ns?;
        Some(ns / 1e3)
    });
    if cpu.iter().any(|g| !g.values.is_empty()) {
        let axis = Axis {
            label: "server CPU per request (µs; lower is better)",
            scale: Scale::Linear,
            format: fmt_plain,
        };
        out.push_str(&strip(
            "Each run's server CPU per request by group (bar: the group's median)",
            &axis,
            &cpu,
        ));
    }
    let hits = strips(&|s| {
        let c = &s.summary.cache;
        let classified = c.hit + c.miss;
        (classified > 0).then(|| 100.0 * c.hit as f64 / classified as f64)
    });
    if hits.iter().any(|g| !g.values.is_empty()) {
        let axis = Axis {
            label: "hit ratio, % of classified responses",
            scale: Scale::Linear,
            format: fmt_plain,
        };
        out.push_str(&strip(
            "Each run's hit ratio by group (bar: the group's median)",
            &axis,
            &hits,
        ));
    }
    out
}

fn kind_words(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Service => "service time (closed loop)",
        LatencyKind::Response => "response time from the intended send",
    }
}

/// One latency heatmap per group (a group's runs' shares averaged column by column), all on
/// the same latency bounds so they compare by eye.
fn heatmaps(groups: &[Group], series: &[RunSeries], time: &Axis, latency: &Axis) -> String {
    let bounds = bounds_of(
        series
            .iter()
            .flat_map(|s| s.histograms.iter())
            .filter(|(_, _, h)| !h.is_empty())
            .flat_map(|(_, _, h)| [ms(h.min() as f64), ms(h.max() as f64)]),
        Scale::Log,
    );
    let mut out = String::new();
    for group in groups {
        let members: Vec<&RunSeries> = group
            .members
            .iter()
            .map(|&i| &series[i])
            .filter(|s| !s.histograms.is_empty())
            .collect();
        let Some(first) = members.first() else {
            continue;
        };
        let mut columns = heat_columns(first, bounds);
        for other in &members[1..] {
            let more = heat_columns(other, bounds);
            columns.truncate(more.len());
            for (column, add) in columns.iter_mut().zip(more) {
                for (share, extra) in column.shares.iter_mut().zip(add.shares) {
                    *share += extra;
                }
            }
        }
        let n = members.len() as f64;
        for column in &mut columns {
            column.shares.iter_mut().for_each(|s| *s /= n);
        }
        let whose = match members.len() {
            1 => group.name.clone(),
            n => format!("{} ({n} runs, averaged)", group.name),
        };
        out.push_str(&heatmap(
            &format!(
                "Latency heatmap of {whose}: {}, each second's requests by latency",
                kind_words(first.kind)
            ),
            time,
            latency,
            bounds,
            &columns,
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
fn summary_table(rows: &[RunSeries], groups: &[Group]) -> String {
    let colour_of = |i: usize| {
        groups
            .iter()
            .find(|g| g.members.contains(&i))
            .map_or("#999999", |g| g.color.as_str())
    };
    let mut out = String::from(
        "<div class=\"table\">\n<table>\n<tr><th>run</th><th>requests</th><th>throughput</th><th>p50</th><th>p99</th><th>p99.9</th><th>errors</th><th>latency</th><th>client</th></tr>\n",
    );
    for (
        i,
        RunSeries {
            name, summary: s, ..
        },
    ) in rows.iter().enumerate()
    {
        let color = colour_of(i);
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
    // Runs with the same plan share a line (ten runs of one recipe are one plan).
    let mut plans: Vec<(&str, Vec<&str>)> = Vec::new();
    for run in rows {
        match plans.iter_mut().find(|(p, _)| *p == run.summary.plan) {
            Some((_, names)) => names.push(&run.name),
            None => plans.push((&run.summary.plan, vec![&run.name])),
        }
    }
    for (plan, names) in &plans {
        let who = if plans.len() == 1 && names.len() > 1 {
            "every run".to_owned()
        } else {
            names.join(", ")
        };
        let _ = writeln!(out, "<li><b>{}</b>: {}</li>", escape(&who), escape(plan));
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

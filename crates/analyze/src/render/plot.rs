//! `vload plot`: one self-contained HTML page of SVG charts, no network fetches.
//!
//! The markup is well-formed XML (every element closed, text escaped), so the page parses
//! with an XML parser as well as in a browser.

use std::fmt::Write as _;

use vload_schema::{LatencyKind, RunFile, SchemaError};

use crate::summary::Summary;
use crate::units::{count, duration_ns, rate};

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 45.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 45.0;

/// One line on a chart.
struct Series {
    name: String,
    color: &'static str,
    dash: &'static str,
    points: Vec<(f64, f64)>,
}

/// How an axis maps values.
#[derive(Clone, Copy)]
enum Scale {
    Linear,
    Log,
}

struct Axis {
    label: &'static str,
    scale: Scale,
    format: fn(f64) -> String,
}

/// Escapes text for XML; control characters, which XML cannot carry at all, are shown as
/// escapes (a label from a run file may hold anything).
fn escape(text: &str) -> String {
    crate::units::clean(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn bounds(series: &[Series], pick: fn(&(f64, f64)) -> f64, scale: Scale) -> (f64, f64) {
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().map(pick))
        .filter(|v| v.is_finite());
    let values: Vec<f64> = match scale {
        Scale::Log => values.filter(|v| *v > 0.0).collect(),
        Scale::Linear => values.collect(),
    };
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match scale {
        // Nothing to draw (no successful response, no positive value): a unit axis.
        _ if !lo.is_finite() => match scale {
            Scale::Log => (1.0, 10.0),
            Scale::Linear => (0.0, 1.0),
        },
        Scale::Log => (
            10f64.powf(lo.log10().floor()),
            10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
        ),
        Scale::Linear => (lo.min(0.0), if hi > lo.min(0.0) { hi * 1.05 } else { 1.0 }),
    }
}

fn project(v: f64, (lo, hi): (f64, f64), scale: Scale, span: f64) -> f64 {
    let t = match scale {
        Scale::Linear => (v - lo) / (hi - lo),
        Scale::Log => (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10()),
    };
    t.clamp(0.0, 1.0) * span
}

/// At most this many ticks on an axis, whatever the data.
const MAX_TICKS: usize = 24;

fn ticks((lo, hi): (f64, f64), scale: Scale) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return vec![lo].into_iter().filter(|v| v.is_finite()).collect();
    }
    match scale {
        Scale::Log if lo <= 0.0 => Vec::new(),
        Scale::Log => {
            let (a, b) = (lo.log10().round() as i32, hi.log10().round() as i32);
            (a..=b).take(MAX_TICKS).map(|e| 10f64.powi(e)).collect()
        }
        Scale::Linear => {
            let raw = (hi - lo) / 5.0;
            let magnitude = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * magnitude)
                .find(|s| *s >= raw)
                .unwrap_or(raw);
            let first = (lo / step).ceil() * step;
            (0..=10)
                .map(|i| first + f64::from(i) * step)
                .filter(|v| *v <= hi + step * 1e-9)
                .collect()
        }
    }
}

fn chart(title: &str, x: &Axis, y: &Axis, series: &[Series]) -> String {
    let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let xb = bounds(series, |p| p.0, x.scale);
    let yb = bounds(series, |p| p.1, y.scale);
    let mut svg = String::new();
    let _ = writeln!(svg, "<h2>{}</h2>", escape(title));
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}">"#,
        escape(title)
    );
    let _ = writeln!(svg, r#"<g transform="translate({LEFT},{TOP})">"#);
    for t in ticks(yb, y.scale) {
        let py = h - project(t, yb, y.scale, h);
        let _ = writeln!(
            svg,
            r##"<line x1="0" x2="{w}" y1="{py:.1}" y2="{py:.1}" stroke="#e5e5e5"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="-8" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
            py + 4.0,
            escape(&(y.format)(t))
        );
    }
    for t in ticks(xb, x.scale) {
        let px = project(t, xb, x.scale, w);
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="0" y2="{h}" stroke="#f0f0f0"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
            h + 16.0,
            escape(&(x.format)(t))
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{w}" height="{h}" fill="none" stroke="#999"/>"##
    );
    for s in series {
        let points: Vec<String> = s
            .points
            .iter()
            .filter(|(px, py)| {
                px.is_finite() && py.is_finite() && !(matches!(y.scale, Scale::Log) && *py <= 0.0)
            })
            .map(|(px, py)| {
                format!(
                    "{:.1},{:.1}",
                    project(*px, xb, x.scale, w),
                    h - project(*py, yb, y.scale, h)
                )
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let _ = writeln!(
            svg,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{}" stroke-width="1.8" stroke-dasharray="{}" points="{}"/>"#,
            escape(&s.name),
            s.color,
            s.dash,
            points.join(" ")
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis">{}</text>"#,
        w / 2.0,
        h + 36.0,
        x.label
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(-56,{:.1}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
        h / 2.0,
        y.label
    );
    svg.push_str("</g>\n</svg>\n");
    svg.push_str(&legend(series));
    svg
}

fn legend(series: &[Series]) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for s in series {
        let _ = write!(
            out,
            r#"<span><svg xmlns="http://www.w3.org/2000/svg" width="28" height="10"><line x1="0" x2="28" y1="5" y2="5" stroke="{}" stroke-width="2.5" stroke-dasharray="{}"/></svg>{}</span>"#,
            s.color,
            s.dash,
            escape(&s.name)
        );
    }
    out.push_str("</div>\n");
    out
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn fmt_ms(v: f64) -> String {
    duration_ns(v * 1e6)
}

fn fmt_plain(v: f64) -> String {
    if v >= 1000.0 {
        count(v.round() as u64)
    } else {
        // Ticks are 1, 2 or 5 times a power of ten: three decimals hold them without float noise.
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn fmt_percentile(v: f64) -> String {
    // x = 1 / (1 - p): 1 -> 0%, 10 -> 90%, 100 -> 99%, ...
    let p = 100.0 * (1.0 - 1.0 / v);
    if p < 1e-9 {
        "0%".into()
    } else {
        format!(
            "{}%",
            format!("{p:.5}")
                .trim_end_matches('0')
                .trim_end_matches('.')
        )
    }
}

/// Renders the page for `runs` (name, run), overlaid.
///
/// # Errors
/// A histogram does not decode.
pub fn html(runs: &[(String, RunFile)]) -> Result<String, SchemaError> {
    let mut latency = Vec::new();
    let mut throughput = Vec::new();
    let mut errors = Vec::new();
    let mut distribution = Vec::new();
    let mut summaries = Vec::new();
    for (i, (name, run)) in runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut p50 = Vec::new();
        let mut p99 = Vec::new();
        let mut max = Vec::new();
        // A last interval of a few milliseconds would plot as a spike of noise.
        for interval in run.intervals.iter().filter(|i| i.duration_s >= 0.5) {
            let t = interval.start_s + interval.duration_s / 2.0;
            let h = interval.latency.histogram.decode()?;
            if !h.is_empty() {
                let m = &interval.latency.moments;
                p50.push((t, ms(m.clamp(h.value_at_quantile(0.5)) as f64)));
                p99.push((t, ms(m.clamp(h.value_at_quantile(0.99)) as f64)));
                max.push((t, ms(interval.latency.moments.max_ns as f64)));
            }
            let seconds = interval.duration_s.max(1e-9);
            throughput.push((i, t, interval.completed as f64 / seconds));
            errors.push((i, t, interval.errors.values().sum::<u64>() as f64 / seconds));
        }
        latency.push(Series {
            name: format!("{name} p50"),
            color,
            dash: "none",
            points: p50,
        });
        latency.push(Series {
            name: format!("{name} p99"),
            color,
            dash: "6 3",
            points: p99,
        });
        latency.push(Series {
            name: format!("{name} max"),
            color,
            dash: "1 3",
            points: max,
        });
        let h = run.latency.primary().histogram.decode()?;
        let curve: Vec<(f64, f64)> = if h.is_empty() {
            Vec::new()
        } else {
            h.iter_quantiles(5)
                .filter(|v| v.quantile_iterated_to() < 1.0)
                .map(|v| {
                    (
                        1.0 / (1.0 - v.quantile_iterated_to()),
                        ms(run
                            .latency
                            .primary()
                            .moments
                            .clamp(h.highest_equivalent(v.value_iterated_to()))
                            as f64),
                    )
                })
                .collect()
        };
        distribution.push(Series {
            name: name.clone(),
            color,
            dash: "none",
            points: curve,
        });
        summaries.push((name.clone(), color, Summary::of(run)?));
    }
    let by_run = |values: &[(usize, f64, f64)], suffix: &str| -> Vec<Series> {
        runs.iter()
            .enumerate()
            .map(|(i, (name, _))| Series {
                name: format!("{name}{suffix}"),
                color: PALETTE[i % PALETTE.len()],
                dash: "none",
                points: values
                    .iter()
                    .filter(|(r, _, _)| *r == i)
                    .map(|(_, t, v)| (*t, *v))
                    .collect(),
            })
            .collect()
    };
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
    let kind = match runs[0].1.latency.primary {
        LatencyKind::Response => "response time from the intended send",
        LatencyKind::Service => "service time (closed loop)",
    };
    let mut page = String::new();
    page.push_str(HEAD);
    let _ = writeln!(
        page,
        "<h1>vload: {}</h1>",
        escape(
            &runs
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        )
    );
    page.push_str(&summary_table(&summaries));
    page.push_str(&chart(
        &format!("Latency over time: p50, p99 (dashed), max (dotted), {kind}"),
        &time,
        &latency_axis,
        &latency,
    ));
    page.push_str(&chart(
        "Throughput over time (completed requests per second)",
        &time,
        &Axis {
            label: "requests per second",
            scale: Scale::Linear,
            format: fmt_plain,
        },
        &by_run(&throughput, ""),
    ));
    page.push_str(&chart(
        "Errors over time (failed requests per second)",
        &time,
        &Axis {
            label: "errors per second",
            scale: Scale::Linear,
            format: fmt_plain,
        },
        &by_run(&errors, " errors"),
    ));
    page.push_str(&chart(
        &format!("Latency by percentile ({kind})"),
        &Axis {
            label: "percentile",
            scale: Scale::Log,
            format: fmt_percentile,
        },
        &latency_axis,
        &distribution,
    ));
    page.push_str("<p class=\"foot\">Made by vload. Percentiles need 10/(1-q) samples to be meaningful: p99.9 rests on at least 10,000.</p>\n</body>\n</html>\n");
    Ok(page)
}

fn summary_table(rows: &[(String, &'static str, Summary)]) -> String {
    let mut out = String::from(
        "<table>\n<tr><th>run</th><th>plan</th><th>requests</th><th>throughput</th><th>p50</th><th>p99</th><th>p99.9</th><th>errors</th><th>client</th></tr>\n",
    );
    for (name, color, s) in rows {
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
            escape(&s.plan),
            count(s.requests),
            escape(&rate(s.throughput_per_s)),
            escape(&q("p50")),
            escape(&q("p99")),
            escape(&q("p99.9")),
            count(errors),
            format!("{:?}", s.health.verdict).to_lowercase()
        );
    }
    out.push_str("</table>\n");
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
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e5e5e5; }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_carry_no_float_noise() {
        assert_eq!(fmt_plain(0.600_000_000_000_000_1), "0.6");
        assert_eq!(fmt_plain(2.0), "2");
        assert_eq!(fmt_plain(15_000.0), "15,000");
        assert_eq!(fmt_percentile(1.0), "0%");
        assert_eq!(fmt_percentile(100.0), "99%");
        assert_eq!(fmt_percentile(1_000.0), "99.9%");
    }
}

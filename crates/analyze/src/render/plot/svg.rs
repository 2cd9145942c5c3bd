//! Charts as SVG: series, axes (linear or log), ticks, a legend. Well-formed XML: every
//! element closed, text escaped.

use std::fmt::Write as _;

use crate::units::{count, duration_ns};

pub(super) const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 45.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 45.0;

/// One line on a chart.
pub(super) struct Series {
    pub(super) name: String,
    pub(super) color: &'static str,
    pub(super) dash: &'static str,
    pub(super) points: Vec<(f64, f64)>,
    /// Marks each point with a dot (a point is a stage, not a sample of a curve).
    pub(super) dots: bool,
}

/// How an axis maps values.
#[derive(Clone, Copy)]
pub(super) enum Scale {
    Linear,
    Log,
}

pub(super) struct Axis {
    pub(super) label: &'static str,
    pub(super) scale: Scale,
    pub(super) format: fn(f64) -> String,
}

/// Escapes text for XML; control characters, which XML cannot carry at all, are shown as
/// escapes (a label from a run file may hold anything).
pub(super) fn escape(text: &str) -> String {
    crate::units::clean(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn bounds(series: &[Series], pick: fn(&(f64, f64)) -> f64, scale: Scale) -> (f64, f64) {
    bounds_of(series.iter().flat_map(|s| s.points.iter().map(pick)), scale)
}

/// The axis bounds for `values`: whole decades on a log scale.
pub(super) fn bounds_of(values: impl Iterator<Item = f64>, scale: Scale) -> (f64, f64) {
    let values = values.filter(|v| v.is_finite());
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

/// A chart's heading and the opening of its SVG, the drawing area translated to the origin.
fn open_chart(title: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(svg, "<h2>{}</h2>", escape(title));
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}">"#,
        escape(title)
    );
    let _ = writeln!(svg, r#"<g transform="translate({LEFT},{TOP})">"#);
    svg
}

pub(super) fn chart(title: &str, x: &Axis, y: &Axis, series: &[Series]) -> String {
    let plot = Plot {
        w: WIDTH - LEFT - RIGHT,
        h: HEIGHT - TOP - BOTTOM,
        xb: bounds(series, |p| p.0, x.scale),
        yb: bounds(series, |p| p.1, y.scale),
        x,
        y,
    };
    let mut svg = open_chart(title);
    plot.grid(&mut svg);
    for s in series {
        plot.line(&mut svg, s);
    }
    plot.labels(&mut svg);
    svg.push_str("</g>\n</svg>\n");
    svg.push_str(&legend(series));
    svg
}

/// A chart's drawing area and how values map onto it.
struct Plot<'a> {
    w: f64,
    h: f64,
    xb: (f64, f64),
    yb: (f64, f64),
    x: &'a Axis,
    y: &'a Axis,
}

impl Plot<'_> {
    fn at(&self, (vx, vy): (f64, f64)) -> (f64, f64) {
        (
            project(vx, self.xb, self.x.scale, self.w),
            self.h - project(vy, self.yb, self.y.scale, self.h),
        )
    }

    /// Grid lines and tick labels on both axes, and the frame.
    fn grid(&self, svg: &mut String) {
        let (w, h) = (self.w, self.h);
        for t in ticks(self.yb, self.y.scale) {
            let py = h - project(t, self.yb, self.y.scale, h);
            let _ = writeln!(
                svg,
                r##"<line x1="0" x2="{w}" y1="{py:.1}" y2="{py:.1}" stroke="#e5e5e5"/>"##
            );
            let _ = writeln!(
                svg,
                r#"<text x="-8" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
                py + 4.0,
                escape(&(self.y.format)(t))
            );
        }
        for t in ticks(self.xb, self.x.scale) {
            let px = project(t, self.xb, self.x.scale, w);
            let _ = writeln!(
                svg,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="0" y2="{h}" stroke="#f0f0f0"/>"##
            );
            let _ = writeln!(
                svg,
                r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
                h + 16.0,
                escape(&(self.x.format)(t))
            );
        }
        let _ = writeln!(
            svg,
            r##"<rect x="0" y="0" width="{w}" height="{h}" fill="none" stroke="#999"/>"##
        );
    }

    /// One series as a polyline (nothing when it has no point to draw).
    fn line(&self, svg: &mut String, s: &Series) {
        let log_y = matches!(self.y.scale, Scale::Log);
        let points: Vec<String> = s
            .points
            .iter()
            .filter(|(px, py)| px.is_finite() && py.is_finite() && !(log_y && *py <= 0.0))
            .map(|p| {
                let (px, py) = self.at(*p);
                format!("{px:.1},{py:.1}")
            })
            .collect();
        if points.is_empty() {
            return;
        }
        let _ = writeln!(
            svg,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{}" stroke-width="1.8" stroke-dasharray="{}" points="{}"/>"#,
            escape(&s.name),
            s.color,
            s.dash,
            points.join(" ")
        );
        if s.dots {
            for point in &points {
                let (px, py) = point.split_once(',').unwrap_or_default();
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{px}" cy="{py}" r="2.5" fill="{}"/>"#,
                    s.color
                );
            }
        }
    }

    /// The axes' names.
    fn labels(&self, svg: &mut String) {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis">{}</text>"#,
            self.w / 2.0,
            self.h + 36.0,
            self.x.label
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(-56,{:.1}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
            self.h / 2.0,
            self.y.label
        );
    }
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

/// One column of a heatmap: a span of time and the share of its requests in each latency
/// bin (bins log-spaced over the chart's latency bounds, lowest first).
pub(super) struct HeatColumn {
    pub(super) from: f64,
    pub(super) to: f64,
    pub(super) shares: Vec<f64>,
}

/// The smallest share the colour scale tells apart from nothing: 0.01% (one request in ten
/// thousand), so that the tail a stall or a cache miss leaves stays visible.
const HEAT_FLOOR: f64 = 1e-4;

/// A share as a colour, on a log scale from [`HEAT_FLOOR`] (pale) to 100% (dark).
fn heat_colour(share: f64) -> String {
    // Light yellow to dark purple through orange and red: light is little, dark is much.
    const STOPS: [(f64, [f64; 3]); 5] = [
        (0.0, [255.0, 245.0, 200.0]),
        (0.25, [254.0, 196.0, 79.0]),
        (0.5, [240.0, 101.0, 34.0]),
        (0.75, [180.0, 30.0, 80.0]),
        (1.0, [50.0, 10.0, 90.0]),
    ];
    let t = ((share.max(HEAT_FLOOR).log10() - HEAT_FLOOR.log10()) / -HEAT_FLOOR.log10())
        .clamp(0.0, 1.0);
    let i = STOPS
        .iter()
        .rposition(|(at, _)| *at <= t)
        .unwrap_or(0)
        .min(3);
    let ((a, ca), (b, cb)) = (STOPS[i], STOPS[i + 1]);
    let f = ((t - a) / (b - a)).clamp(0.0, 1.0);
    let c: Vec<u8> = (0..3)
        .map(|k| (ca[k] + (cb[k] - ca[k]) * f).round() as u8)
        .collect();
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// A latency heatmap: time on x, latency on a log y (`y_bounds` in ms), each cell coloured by
/// the share of that column's requests in that latency bin.
pub(super) fn heatmap(
    title: &str,
    x: &Axis,
    y: &Axis,
    y_bounds: (f64, f64),
    columns: &[HeatColumn],
) -> String {
    let x_bounds = (
        columns.first().map_or(0.0, |c| c.from),
        columns.last().map_or(1.0, |c| c.to).max(1e-9),
    );
    let plot = Plot {
        w: WIDTH - LEFT - RIGHT,
        h: HEIGHT - TOP - BOTTOM,
        xb: x_bounds,
        yb: y_bounds,
        x,
        y,
    };
    let mut svg = open_chart(title);
    plot.grid(&mut svg);
    let (log_lo, log_hi) = (y_bounds.0.log10(), y_bounds.1.log10());
    for column in columns {
        let bins = column.shares.len().max(1) as f64;
        let x0 = project(column.from, plot.xb, Scale::Linear, plot.w);
        let x1 = project(column.to, plot.xb, Scale::Linear, plot.w);
        for (bin, share) in column.shares.iter().enumerate() {
            if *share <= 0.0 {
                continue;
            }
            let lo = 10f64.powf(log_lo + (log_hi - log_lo) * bin as f64 / bins);
            let hi = 10f64.powf(log_lo + (log_hi - log_lo) * (bin + 1) as f64 / bins);
            let (y_top, y_bottom) = (
                plot.h - project(hi, plot.yb, Scale::Log, plot.h),
                plot.h - project(lo, plot.yb, Scale::Log, plot.h),
            );
            let _ = writeln!(
                svg,
                r#"<rect class="cell" x="{x0:.1}" y="{y_top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{:.2}%</title></rect>"#,
                (x1 - x0).max(0.5),
                (y_bottom - y_top).max(0.5),
                heat_colour(*share),
                share * 100.0
            );
        }
    }
    plot.labels(&mut svg);
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="none" stroke="#999"/>"##,
        plot.w, plot.h
    );
    svg.push_str("</g>\n</svg>\n");
    svg.push_str(&heat_legend());
    svg
}

/// The colour scale of the heatmaps: what share of a second's requests each colour means.
fn heat_legend() -> String {
    let mut out = String::from(
        r#"<div class="legend">share of the second's requests in the cell: <svg xmlns="http://www.w3.org/2000/svg" width="280" height="28">"#,
    );
    for i in 0..100 {
        let t = f64::from(i) / 99.0;
        let share = 10f64.powf(HEAT_FLOOR.log10() * (1.0 - t));
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="0" width="2.7" height="12" fill="{}"/>"#,
            24.0 + t * 222.0,
            heat_colour(share)
        );
    }
    for (i, label) in ["0.01%", "0.1%", "1%", "10%", "100%"].iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="25" text-anchor="middle" class="tick">{label}</text>"#,
            25.0 + 222.0 * i as f64 / 4.0
        );
    }
    out.push_str("</svg></div>\n");
    out
}

pub(super) fn ms(ns: f64) -> f64 {
    ns / 1e6
}

pub(super) fn fmt_ms(v: f64) -> String {
    duration_ns(v * 1e6)
}

pub(super) fn fmt_plain(v: f64) -> String {
    if v >= 1000.0 {
        count(v.round() as u64)
    } else {
        // Ticks are 1, 2 or 5 times a power of ten: three decimals hold them without float noise.
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

pub(super) fn fmt_percentile(v: f64) -> String {
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

    #[test]
    fn heat_colours_run_from_pale_to_dark_on_a_log_scale() {
        assert_eq!(heat_colour(0.0), "#fff5c8", "below the floor: the palest");
        assert_eq!(heat_colour(1e-4), "#fff5c8");
        assert_eq!(heat_colour(1.0), "#320a5a", "everything: the darkest");
        // One decade per quarter of the scale.
        assert_eq!(heat_colour(0.01), "#f06522");
        let brightness = |c: &str| {
            (1..7)
                .step_by(2)
                .map(|i| u32::from_str_radix(&c[i..i + 2], 16).unwrap())
                .sum::<u32>()
        };
        let shares = [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0];
        assert!(
            shares
                .windows(2)
                .all(|w| brightness(&heat_colour(w[0])) > brightness(&heat_colour(w[1]))),
            "more is darker"
        );
    }
}

//! Charts as SVG: series, axes (linear or log), ticks, a legend. Well-formed XML: every
//! element closed, text escaped.

use std::fmt::Write as _;

use crate::units::count;

/// The first ten colours (Tableau 10, told apart by most eyes); more groups than that get
/// colours spread around the hue circle by the golden angle, so no two runs share one.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#bab0ac",
];
pub(super) const WIDTH: f64 = 880.0;
pub(super) const HEIGHT: f64 = 320.0;
pub(super) const LEFT: f64 = 84.0;
pub(super) const RIGHT: f64 = 45.0;
pub(super) const TOP: f64 = 20.0;
pub(super) const BOTTOM: f64 = 45.0;
/// About how wide a character of a tick label is, in pixels (11 px system font).
const TICK_CHAR: f64 = 6.4;
/// Above this many points a series gets no hover marks (the page would grow too big).
const HOVER_POINTS: usize = 400;

/// The colour of group `index`.
pub(super) fn colour(index: usize) -> String {
    if let Some(c) = PALETTE.get(index) {
        return (*c).to_owned();
    }
    let hue = (index as f64 * 137.507_764) % 360.0;
    format!("hsl({hue:.0},55%,45%)")
}

/// One line on a chart.
pub(super) struct Series {
    pub(super) name: String,
    pub(super) color: String,
    pub(super) dash: &'static str,
    pub(super) points: Vec<(f64, f64)>,
    /// Marks each point with a dot (a point is a stage, not a sample of a curve).
    pub(super) dots: bool,
    /// One run of a group drawn around the group's median: thin, faint, not in the legend.
    pub(super) thin: bool,
    /// The group (label) the series belongs to, when runs are grouped.
    pub(super) group: Option<String>,
}

impl Series {
    pub(super) fn new(
        name: String,
        color: String,
        dash: &'static str,
        points: Vec<(f64, f64)>,
    ) -> Self {
        Series {
            name,
            color,
            dash,
            points,
            dots: false,
            thin: false,
            group: None,
        }
    }
}

/// A span of x shaded behind the series (the warm-up, a sweep's capacity bracket).
pub(super) struct Band {
    pub(super) from: f64,
    pub(super) to: f64,
    pub(super) label: String,
    pub(super) fill: &'static str,
    /// Written at the band's top (else only on hover): the first of repeated bands.
    pub(super) show_label: bool,
}

/// How a mark is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Filled: a step that met the SLO.
    Dot,
    /// A cross: a step that missed.
    Cross,
    /// Hollow: a step that says nothing about the server (client-bound, machine busy, capped).
    Ring,
}

/// One marked point, with what hovering over it says.
pub(super) struct Mark {
    pub(super) at: (f64, f64),
    pub(super) shape: Shape,
    pub(super) color: String,
    pub(super) title: String,
    /// What the mark means, for its class and the legend (`met`, `missed`, ...).
    pub(super) outcome: &'static str,
}

/// What a chart draws besides its series.
#[derive(Default)]
pub(super) struct Extras {
    pub(super) bands: Vec<Band>,
    pub(super) marks: Vec<Mark>,
    /// Lines under the legend, e.g. what the thin lines are.
    pub(super) notes: Vec<String>,
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

pub(super) fn project(v: f64, (lo, hi): (f64, f64), scale: Scale, span: f64) -> f64 {
    let t = match scale {
        Scale::Linear => (v - lo) / (hi - lo),
        Scale::Log => (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10()),
    };
    t.clamp(0.0, 1.0) * span
}

/// At most this many ticks on an axis, whatever the data.
const MAX_TICKS: usize = 24;

pub(super) fn ticks((lo, hi): (f64, f64), scale: Scale) -> Vec<f64> {
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
pub(super) fn open_chart(title: &str) -> String {
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

/// A chart with bands shaded behind its series and marks over them.
pub(super) fn chart_with(
    title: &str,
    x: &Axis,
    y: &Axis,
    series: &[Series],
    extras: &Extras,
) -> String {
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(extras.marks.iter().map(|m| m.at.0))
        .chain(extras.bands.iter().flat_map(|b| [b.from, b.to]));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(extras.marks.iter().map(|m| m.at.1));
    let plot = Plot {
        w: WIDTH - LEFT - RIGHT,
        h: HEIGHT - TOP - BOTTOM,
        xb: bounds_of(xs, x.scale),
        yb: bounds_of(ys, y.scale),
        x,
        y,
    };
    let mut svg = open_chart(title);
    for band in &extras.bands {
        plot.band(&mut svg, band);
    }
    plot.grid(&mut svg);
    for s in series.iter().filter(|s| s.thin) {
        plot.line(&mut svg, s);
    }
    for s in series.iter().filter(|s| !s.thin) {
        plot.line(&mut svg, s);
    }
    for mark in &extras.marks {
        plot.mark(&mut svg, mark);
    }
    plot.labels(&mut svg);
    svg.push_str("</g>\n</svg>\n");
    svg.push_str(&legend(series, extras));
    svg
}

/// A chart's drawing area and how values map onto it.
pub(super) struct Plot<'a> {
    pub(super) w: f64,
    pub(super) h: f64,
    pub(super) xb: (f64, f64),
    pub(super) yb: (f64, f64),
    pub(super) x: &'a Axis,
    pub(super) y: &'a Axis,
}

impl Plot<'_> {
    fn at(&self, (vx, vy): (f64, f64)) -> (f64, f64) {
        (
            project(vx, self.xb, self.x.scale, self.w),
            self.h - project(vy, self.yb, self.y.scale, self.h),
        )
    }

    /// The widest y tick label, in characters.
    pub(super) fn widest_y_tick(&self) -> usize {
        ticks(self.yb, self.y.scale)
            .iter()
            .map(|t| (self.y.format)(*t).chars().count())
            .max()
            .unwrap_or(1)
    }

    /// A shaded span of x, its label at the top.
    fn band(&self, svg: &mut String, band: &Band) {
        if !(band.from.is_finite() && band.to.is_finite()) {
            return;
        }
        let x0 = project(band.from, self.xb, self.x.scale, self.w);
        let x1 = project(band.to, self.xb, self.x.scale, self.w);
        let _ = writeln!(
            svg,
            r#"<rect class="band" x="{x0:.1}" y="0" width="{:.1}" height="{}" fill="{}"><title>{}</title></rect>"#,
            (x1 - x0).max(1.5),
            self.h,
            band.fill,
            escape(&band.label)
        );
        if band.show_label {
            // Near the right edge the label reads leftwards, so that it stays on the chart.
            let (x, anchor) = if x0 > self.w * 0.7 {
                (x1 - 4.0, "end")
            } else {
                (x0 + 4.0, "start")
            };
            let _ = writeln!(
                svg,
                r#"<text x="{x:.1}" y="12" text-anchor="{anchor}" class="tick">{}</text>"#,
                escape(&band.label)
            );
        }
    }

    /// A marked point: a dot, a cross or a ring, with a hover title.
    fn mark(&self, svg: &mut String, mark: &Mark) {
        if !(mark.at.0.is_finite() && mark.at.1.is_finite()) {
            return;
        }
        let (px, py) = self.at(mark.at);
        let title = escape(&mark.title);
        let c = &mark.color;
        let _ = match mark.shape {
            Shape::Dot => writeln!(
                svg,
                r#"<circle class="mark {}" cx="{px:.1}" cy="{py:.1}" r="4" fill="{c}"><title>{title}</title></circle>"#,
                mark.outcome
            ),
            Shape::Ring => writeln!(
                svg,
                r#"<circle class="mark {}" cx="{px:.1}" cy="{py:.1}" r="4" fill="white" stroke="{c}" stroke-width="1.5"><title>{title}</title></circle>"#,
                mark.outcome
            ),
            Shape::Cross => writeln!(
                svg,
                r#"<path class="mark {}" d="M{:.1},{:.1}l8,8m0,-8l-8,8" stroke="{c}" stroke-width="2.2"><title>{title}</title></path>"#,
                mark.outcome,
                px - 4.0,
                py - 4.0
            ),
        };
    }

    /// Grid lines and tick labels on both axes, and the frame.
    pub(super) fn grid(&self, svg: &mut String) {
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

    /// One series as a polyline (nothing when it has no point to draw), with hover titles.
    fn line(&self, svg: &mut String, s: &Series) {
        let log_y = matches!(self.y.scale, Scale::Log);
        let kept: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(px, py)| px.is_finite() && py.is_finite() && !(log_y && *py <= 0.0))
            .collect();
        if kept.is_empty() {
            return;
        }
        let points: Vec<(f64, f64)> = kept.iter().map(|p| self.at(*p)).collect();
        let text: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let (width, opacity) = if s.thin { (1.0, 0.35) } else { (1.8, 1.0) };
        let group = s
            .group
            .as_ref()
            .map(|g| format!(r#" data-group="{}""#, escape(g)))
            .unwrap_or_default();
        let _ = writeln!(
            svg,
            r#"<polyline class="series{}" data-series="{}"{group} fill="none" stroke="{}" stroke-width="{width}" stroke-opacity="{opacity}" stroke-dasharray="{}" points="{}"><title>{}</title></polyline>"#,
            if s.thin { " thin" } else { "" },
            escape(&s.name),
            s.color,
            s.dash,
            text.join(" "),
            escape(&s.name)
        );
        for (i, (px, py)) in points.iter().enumerate() {
            if s.dots {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.5" fill="{}"/>"#,
                    s.color
                );
            }
            if !s.thin && points.len() <= HOVER_POINTS {
                let (vx, vy) = kept[i];
                let _ = writeln!(
                    svg,
                    r#"<circle class="hover" cx="{px:.1}" cy="{py:.1}" r="5" fill="transparent"><title>{}: {} at {}</title></circle>"#,
                    escape(&s.name),
                    escape(&(self.y.format)(vy)),
                    escape(&(self.x.format)(vx))
                );
            }
        }
    }

    /// The axes' names; the y one left of its widest tick label, never over it.
    pub(super) fn labels(&self, svg: &mut String) {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis">{}</text>"#,
            self.w / 2.0,
            self.h + 36.0,
            self.x.label
        );
        let x = -(8.0 + self.widest_y_tick() as f64 * TICK_CHAR + 8.0).min(LEFT - 4.0);
        let _ = writeln!(
            svg,
            r#"<text transform="translate({x:.1},{:.1}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
            self.h / 2.0,
            self.y.label
        );
    }
}

fn legend(series: &[Series], extras: &Extras) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for s in series.iter().filter(|s| !s.thin && !s.points.is_empty()) {
        let _ = write!(
            out,
            r#"<span><svg xmlns="http://www.w3.org/2000/svg" width="28" height="10"><line x1="0" x2="28" y1="5" y2="5" stroke="{}" stroke-width="2.5" stroke-dasharray="{}"/></svg>{}</span>"#,
            s.color,
            s.dash,
            escape(&s.name)
        );
    }
    let mut outcomes: Vec<(Shape, &str)> = Vec::new();
    for m in &extras.marks {
        if !outcomes.iter().any(|(_, o)| *o == m.outcome) {
            outcomes.push((m.shape, m.outcome));
        }
    }
    for (shape, outcome) in outcomes {
        let icon = match shape {
            Shape::Dot => r##"<circle cx="6" cy="5" r="4" fill="#555"/>"##,
            Shape::Ring => {
                r##"<circle cx="6" cy="5" r="4" fill="white" stroke="#555" stroke-width="1.5"/>"##
            }
            Shape::Cross => r##"<path d="M2,1l8,8m0,-8l-8,8" stroke="#555" stroke-width="2"/>"##,
        };
        let _ = write!(
            out,
            r#"<span><svg xmlns="http://www.w3.org/2000/svg" width="12" height="10">{icon}</svg>{outcome}</span>"#
        );
    }
    for note in &extras.notes {
        let _ = write!(out, "<span>{}</span>", escape(note));
    }
    out.push_str("</div>\n");
    out
}

pub(super) fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// A latency in ms as a tick or a hover shows it: `10 ms`, `1 s`, `250 µs`, `1.5 ms`, with
/// no trailing zeros (a decade tick is a round number).
pub(super) fn fmt_ms(v: f64) -> String {
    let (value, unit) = if v >= 1_000.0 {
        (v / 1_000.0, "s")
    } else if v >= 1.0 {
        (v, "ms")
    } else if v >= 0.001 {
        (v * 1_000.0, "µs")
    } else {
        (v * 1e6, "ns")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if value >= 1_000.0 {
        format!("{} {unit}", count(value.round() as u64))
    } else {
        format!("{text} {unit}")
    }
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

    /// See #35: decade ticks read "1.000 s" and "100,000 s" on a latency axis.
    #[test]
    fn latency_ticks_are_round_and_in_their_unit() {
        assert_eq!(fmt_ms(1_000.0), "1 s");
        assert_eq!(fmt_ms(100_000.0), "100 s");
        assert_eq!(fmt_ms(10.0), "10 ms");
        assert_eq!(fmt_ms(0.1), "100 µs");
        assert_eq!(fmt_ms(1.5), "1.5 ms");
        assert_eq!(fmt_ms(31_206.0), "31.2 s");
        assert_eq!(fmt_ms(0.000_5), "500 ns");
    }

    #[test]
    fn colours_do_not_repeat_past_the_palette() {
        let colours: Vec<String> = (0..30).map(colour).collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{i}: {c} repeats");
        }
    }
}

//! Strip charts: one column a group, each run a dot, the group's median a bar.

use std::fmt::Write as _;

use super::svg::{
    Axis, BOTTOM, HEIGHT, LEFT, Plot, RIGHT, Scale, TOP, WIDTH, bounds_of, escape, open_chart,
    project,
};

/// One group of a strip chart: its runs' values.
pub(super) struct Strip {
    pub(super) name: String,
    pub(super) color: String,
    /// (run, value) for each run that has one.
    pub(super) values: Vec<(String, f64)>,
}

/// A strip chart: one column a group, each run a dot (spread sideways so that equal values
/// stay apart), the group's median a bar across. A comparison's verdict, seen.
pub(super) fn strip(title: &str, y: &Axis, groups: &[Strip]) -> String {
    let plot = Plot {
        w: WIDTH - LEFT - RIGHT,
        h: HEIGHT - TOP - BOTTOM,
        xb: (0.0, groups.len().max(1) as f64),
        yb: bounds_of(
            groups.iter().flat_map(|g| g.values.iter().map(|v| v.1)),
            y.scale,
        ),
        x: &Axis {
            label: "",
            scale: Scale::Linear,
            format: |_| String::new(),
        },
        y,
    };
    let mut svg = open_chart(title);
    // Grid, y ticks and the frame; the x ticks fall between the columns, unlabelled.
    plot.grid(&mut svg);
    let (w, h) = (plot.w, plot.h);
    let column = w / groups.len().max(1) as f64;
    for (g, group) in groups.iter().enumerate() {
        let cx = column * (g as f64 + 0.5);
        let _ = writeln!(
            svg,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" class="axis">{} ({} runs)</text>"#,
            h + 20.0,
            escape(&group.name),
            group.values.len()
        );
        for (i, (run, value)) in group.values.iter().enumerate() {
            let dx = (i % 7) as f64 * 7.0 - 21.0;
            let py = h - project(*value, plot.yb, y.scale, h);
            let _ = writeln!(
                svg,
                r#"<circle class="run" data-group="{}" cx="{:.1}" cy="{py:.1}" r="4" fill="{}" fill-opacity="0.75"><title>{}: {}</title></circle>"#,
                escape(&group.name),
                cx + dx,
                group.color,
                escape(run),
                escape(&(y.format)(*value))
            );
        }
        let mut values: Vec<f64> = group.values.iter().map(|v| v.1).collect();
        if !values.is_empty() {
            let m = super::group::median(&mut values);
            let py = h - project(m, plot.yb, y.scale, h);
            let _ = writeln!(
                svg,
                r#"<line class="median" data-group="{}" x1="{:.1}" x2="{:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{}" stroke-width="3"><title>{} median: {}</title></line>"#,
                escape(&group.name),
                cx - 34.0,
                cx + 34.0,
                group.color,
                escape(&group.name),
                escape(&(y.format)(m))
            );
        }
    }
    plot.labels(&mut svg);
    svg.push_str("</g>\n</svg>\n");
    svg
}

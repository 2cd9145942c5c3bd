//! Latency heatmaps: time on x, latency on a log y, each cell coloured by the share of its
//! column's requests in it.

use std::fmt::Write as _;

use super::svg::{Axis, BOTTOM, HEIGHT, LEFT, Plot, RIGHT, Scale, TOP, WIDTH, open_chart, project};

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

#[cfg(test)]
mod tests {
    use super::*;

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

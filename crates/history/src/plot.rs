//! `history plot`: one self-contained HTML page, a chart per series and metric: each run a
//! dot at its commit (runs kept out by the gate a red cross, with the reason on hover), the
//! per-commit medians as a line, confirmed change points as solid lines and weak ones dashed.

use std::fmt::Write as _;

use crate::judge::{MetricHistory, Strength};
use crate::render;
use crate::series::SeriesHistory;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 80.0;
const BOTTOM: f64 = 30.0;

/// The page for `histories`.
pub fn page(histories: &[SeriesHistory]) -> String {
    let mut out = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>vload history</title>\n<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}h2{font-size:16px;margin-top:2em}svg{display:block;margin:0.5em 0 1.5em}.note{color:#666}text{font-size:11px;fill:#444}</style></head><body>\n<h1>vload history</h1>\n<p class=\"note\">Each dot is a run at its commit; red crosses are runs kept out of the statistics (hover for why); the line joins the commits' medians; solid verticals are confirmed change points, dashed ones weak.</p>\n",
    );
    for h in histories {
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<p class=\"note\">{}<br>{}{}</p>",
            escape(&h.info.key.name()),
            escape(&h.info.key.workload),
            escape(&h.info.key.testbed),
            if h.info.key.config.is_empty() {
                String::new()
            } else {
                format!("<br>{}", escape(&h.info.key.config))
            }
        );
        for m in &h.metrics {
            chart(&mut out, h, m);
        }
    }
    out.push_str("</body></html>\n");
    out
}

/// Where a chart puts commit `i` and value `v`.
struct Scale {
    n: usize,
    lo: f64,
    hi: f64,
    pad: f64,
}

impl Scale {
    fn x(&self, i: usize) -> f64 {
        LEFT + (i as f64 + 0.5) * (WIDTH - LEFT - 10.0) / self.n as f64
    }
    fn y(&self, v: f64) -> f64 {
        10.0 + (self.hi - v) / (self.hi - self.lo) * (HEIGHT - BOTTOM - 10.0)
    }
    fn column(&self) -> f64 {
        (WIDTH - LEFT) / self.n as f64
    }
}

fn chart(out: &mut String, h: &SeriesHistory, m: &MetricHistory) {
    let excluded: Vec<(usize, f64, &str)> = h
        .runs
        .iter()
        .filter_map(|r| {
            let at = m.commits.iter().position(|c| c.commit == r.commit)?;
            Some((at, r.value(m.metric)?, r.excluded.as_deref()?))
        })
        .collect();
    let values = m
        .commits
        .iter()
        .flat_map(|c| c.values.iter().copied())
        .chain(excluded.iter().map(|e| e.1));
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return;
    }
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.01).max(1e-12);
    let s = Scale {
        n: m.commits.len().max(1),
        lo: lo - pad,
        hi: hi + pad,
        pad,
    };
    let _ = writeln!(
        out,
        "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{0}\"><text x=\"4\" y=\"14\">{0}</text>",
        escape(m.metric.name())
    );
    grid(out, &s, m);
    changes(out, &s, m);
    points(out, &s, m, &excluded);
    out.push_str("</svg>\n");
}

fn grid(out: &mut String, s: &Scale, m: &MetricHistory) {
    for v in [s.lo + s.pad, (s.lo + s.hi) / 2.0, s.hi - s.pad] {
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{WIDTH}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"{1}\" y=\"{0:.1}\" text-anchor=\"end\">{2}</text>",
            s.y(v),
            LEFT - 4.0,
            escape(&m.metric.format(v))
        );
    }
    let step = (s.n / 10).max(1);
    for (i, c) in m.commits.iter().enumerate().step_by(step) {
        let name: String = c.commit.chars().take(10).collect();
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            s.x(i),
            HEIGHT - 8.0,
            escape(&name)
        );
    }
}

fn changes(out: &mut String, s: &Scale, m: &MetricHistory) {
    for c in &m.changes {
        let Some(at) = m.commits.iter().position(|p| p.commit == c.commit) else {
            continue;
        };
        let dash = if c.strength == Strength::Confirmed {
            ""
        } else {
            " stroke-dasharray=\"4 3\""
        };
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"10\" y2=\"{1}\" stroke=\"#d62728\"{dash}><title>{2}</title></line>",
            s.x(at) - s.column() / 2.0,
            HEIGHT - BOTTOM,
            escape(&render::change_line(m.metric, c))
        );
    }
}

fn points(out: &mut String, s: &Scale, m: &MetricHistory, excluded: &[(usize, f64, &str)]) {
    let line: Vec<String> = m
        .commits
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.median().map(|v| format!("{:.1},{:.1}", s.x(i), s.y(v))))
        .collect();
    let _ = writeln!(
        out,
        "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, c) in m.commits.iter().enumerate() {
        for v in &c.values {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#1f77b4\"><title>{} {}</title></circle>",
                s.x(i),
                s.y(*v),
                escape(&c.commit),
                escape(&m.metric.format(*v))
            );
        }
    }
    for (i, v, why) in excluded {
        let _ = writeln!(
            out,
            "<path d=\"M{:.1} {:.1}l6 6m0 -6l-6 6\" stroke=\"#d62728\" stroke-width=\"1.5\"><title>excluded: {}</title></path>",
            s.x(*i) - 3.0,
            s.y(*v) - 3.0,
            escape(why)
        );
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

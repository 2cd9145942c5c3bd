//! The comparison as a benchstat-like table: text, markdown or JSON.

use crate::compare::{Comparison, Method, Row, Severity, Side};
use crate::render::table;

fn fmt_side(row: &Row, side: &Side) -> String {
    let Some(median) = side.median else {
        return "n/a".to_owned();
    };
    let value = row.metric.format(median);
    let spread = side
        .within_run
        .or(if side.n > 1 { side.spread } else { None });
    match spread {
        Some((lo, hi)) => format!(
            "{value} [{}..{}]",
            row.metric.format(lo),
            row.metric.format(hi)
        ),
        None => value,
    }
}

fn fmt_delta(row: &Row, d: f64) -> String {
    if row.metric.name().contains("rate") || row.metric.name().contains("ratio") {
        format!("{d:+.2} pp")
    } else {
        format!("{d:+.1}%")
    }
}

fn cells(row: &Row) -> Vec<String> {
    named_cells(row, row.metric.name())
}

/// A row's cells under another name (`p99 at 2,000.0/s`).
pub(crate) fn named_cells(row: &Row, name: &str) -> Vec<String> {
    let name = if row.primary {
        format!("{name} *")
    } else {
        name.to_owned()
    };
    let delta = match (row.delta, row.method) {
        (Some(d), _) => fmt_delta(row, d),
        (None, _) => "—".to_owned(),
    };
    let interval = match row.interval {
        Some((lo, hi)) if row.method != Method::Identical => {
            format!("[{}, {}]", fmt_delta(row, lo), fmt_delta(row, hi))
        }
        _ => "—".to_owned(),
    };
    let p = row.p.map_or_else(
        || "—".to_owned(),
        |p| {
            if p < 0.001 {
                "<0.001".to_owned()
            } else {
                format!("{p:.3}")
            }
        },
    );
    let mut verdict = row.verdict.text(row.metric);
    if row.method == Method::WelchLowN {
        verdict.push_str(" (low N)");
    }
    vec![
        name,
        fmt_side(row, &row.a),
        fmt_side(row, &row.b),
        delta,
        interval,
        p,
        format!("{}+{}", row.a.n, row.b.n),
        verdict,
    ]
}

fn header(c: &Comparison) -> Vec<String> {
    stats_header(c.a.runs.len(), c.b.runs.len())
}

/// The header of a table of rows, for groups of these sizes.
pub(crate) fn stats_header(runs_a: usize, runs_b: usize) -> Vec<String> {
    let single = runs_a == 1 && runs_b == 1;
    let what = |n: usize| match (single, n) {
        (true, _) => "[within-run 95%]",
        (false, n) if n >= 6 => "median [95% CI]",
        _ => "median [range]",
    };
    vec![
        "metric".into(),
        format!("A {}", what(runs_a)),
        format!("B {}", what(runs_b)),
        "B vs A".into(),
        "95% CI".into(),
        "p".into(),
        "n".into(),
        "verdict".into(),
    ]
}

/// Renders as text.
pub fn text(c: &Comparison) -> String {
    let mut out = format!(
        "vload compare   A = {} ({} run{})   B = {} ({} run{})\n",
        c.a.name,
        c.a.runs.len(),
        if c.a.runs.len() == 1 { "" } else { "s" },
        c.b.name,
        c.b.runs.len(),
        if c.b.runs.len() == 1 { "" } else { "s" },
    );
    out.push_str(&format!("plan            {}\n", c.plan));
    for check in &c.checks {
        let prefix = match check.severity {
            Severity::Warning => "WARNING: ",
            Severity::Note => "note: ",
        };
        out.push_str(&format!("{prefix}{}\n", check.message));
    }
    out.push('\n');
    let mut rows = vec![header(c)];
    rows.extend(c.rows.iter().map(cells));
    out.push_str(&table::layout(&rows));
    out.push('\n');
    for note in row_notes(c) {
        out.push_str(&note);
        out.push('\n');
    }
    for note in &c.notes {
        out.push_str(note);
        out.push('\n');
    }
    out
}

/// Renders as a markdown table with the checks and notes as lists.
pub fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "## vload compare: A = {} ({}) vs B = {} ({})\n\n",
        c.a.name,
        c.a.runs.len(),
        c.b.name,
        c.b.runs.len()
    );
    out.push_str(&format!("Plan: {}\n\n", c.plan));
    for check in &c.checks {
        let prefix = match check.severity {
            Severity::Warning => "**Warning:** ",
            Severity::Note => "",
        };
        out.push_str(&format!("- {prefix}{}\n", check.message));
    }
    out.push('\n');
    let mut rows = vec![header(c)];
    rows.extend(c.rows.iter().map(cells));
    out.push_str(&table::markdown(&rows));
    out.push('\n');
    for note in row_notes(c) {
        out.push_str(&format!("- {note}\n"));
    }
    for note in &c.notes {
        out.push_str(&format!("- {note}\n"));
    }
    out
}

/// Renders as JSON, with the schema version.
pub fn json(c: &Comparison) -> String {
    super::json_document("compare", "comparison", c)
}

/// Row notes, each text once with the metrics it applies to.
fn row_notes(c: &Comparison) -> Vec<String> {
    let mut notes: Vec<(String, Vec<&str>)> = Vec::new();
    for row in &c.rows {
        let Some(note) = &row.note else { continue };
        match notes.iter_mut().find(|(text, _)| text == note) {
            Some((_, metrics)) => metrics.push(row.metric.name()),
            None => notes.push((note.clone(), vec![row.metric.name()])),
        }
    }
    notes
        .into_iter()
        .map(|(text, metrics)| format!("{}: {text}", metrics.join(", ")))
        .collect()
}

//! The comparison as a benchstat-like table: text, markdown or JSON.

use crate::compare::{Comparison, Method, Row, Severity, Side, Verdict};
use crate::render::table;

fn fmt_side(row: &Row, side: &Side) -> String {
    let Some(median) = side.median else {
        return "n/a".to_owned();
    };
    let value = row.metric.format(median);
    if side.within_run_missing.is_some() {
        // One run a side and no within-run interval: the bracket says so (a note says why).
        return format!("{value} [none]");
    }
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
    if !row.metric.is_ratio() {
        format!("{d:+.2} pp")
    } else {
        format!("{d:+.1}%")
    }
}

/// A confidence as a header shows it: `95%`, `96.8%`.
fn percent(coverage: f64) -> String {
    let p = format!("{:.1}", coverage * 100.0);
    format!("{}%", p.trim_end_matches(".0"))
}

/// What a table of `rows` needs to say in its header: which estimate the shift column is,
/// whether the medians' own difference gets a column beside it, and the intervals' coverage
/// (one for the table, or `None` when rows differ and each cell gives its own).
struct Columns {
    shift: &'static str,
    medians: bool,
    coverage: Option<f64>,
    mixed: bool,
}

impl Columns {
    fn of<'a>(rows: impl IntoIterator<Item = &'a Row> + Clone) -> Columns {
        let any = |m: Method| rows.clone().into_iter().any(|r| r.method == m);
        let shift = if any(Method::MannWhitney) {
            "B vs A (HL shift)"
        } else if any(Method::WelchLowN) {
            "B vs A (Welch)"
        } else {
            "B vs A (medians)"
        };
        let mut coverages: Vec<f64> = rows
            .clone()
            .into_iter()
            .filter(|r| r.method != Method::Identical)
            .filter_map(|r| r.coverage)
            .collect();
        coverages.sort_by(f64::total_cmp);
        coverages.dedup_by(|a, b| (*a - *b).abs() < 5e-4);
        Columns {
            shift,
            medians: any(Method::MannWhitney) || any(Method::WelchLowN),
            coverage: (coverages.len() == 1).then(|| coverages[0]),
            mixed: coverages.len() > 1,
        }
    }
}

/// A row's cells under its own name.
fn cells(row: &Row, columns: &Columns) -> Vec<String> {
    named_cells(row, row.metric.name(), columns)
}

/// A row's cells under another name (`p99 at 2,000.0/s`).
fn named_cells(row: &Row, name: &str, columns: &Columns) -> Vec<String> {
    let name = if row.primary {
        format!("{name} *")
    } else {
        name.to_owned()
    };
    let delta = match row.delta {
        Some(d) => fmt_delta(row, d),
        None => "—".to_owned(),
    };
    let interval = match row.interval {
        Some((lo, hi)) if row.method != Method::Identical => {
            let cell = format!("[{}, {}]", fmt_delta(row, lo), fmt_delta(row, hi));
            match (columns.mixed, row.coverage) {
                (true, Some(c)) => format!("{cell} {}", percent(c)),
                _ => cell,
            }
        }
        _ => "—".to_owned(),
    };
    let p = row.p.map_or_else(|| "—".to_owned(), crate::units::p_value);
    let mut verdict = row.verdict.text(row.metric);
    if row.method == Method::WelchLowN {
        verdict.push_str(" (low N)");
    }
    let mut cells = vec![name, fmt_side(row, &row.a), fmt_side(row, &row.b)];
    if columns.medians {
        cells.push(
            row.medians_delta
                .map_or_else(|| "—".to_owned(), |d| fmt_delta(row, d)),
        );
    }
    cells.extend([
        delta,
        interval,
        p,
        format!("{}+{}", row.a.n, row.b.n),
        verdict,
    ]);
    cells
}

/// The header of a table of `rows`, for groups of these sizes.
fn stats_header(runs_a: usize, runs_b: usize, columns: &Columns) -> Vec<String> {
    let single = runs_a == 1 && runs_b == 1;
    let what = |n: usize| match (single, crate::compare::median_ci_coverage(n)) {
        (true, _) => "[within-run 95%]".to_owned(),
        (false, Some(c)) => format!("median [{} CI]", percent(c)),
        (false, None) => "median [range]".to_owned(),
    };
    let mut header = vec![
        "metric".to_owned(),
        format!("A {}", what(runs_a)),
        format!("B {}", what(runs_b)),
    ];
    if columns.medians {
        header.push("B vs A (medians)".to_owned());
    }
    header.extend([
        columns.shift.to_owned(),
        match columns.coverage {
            Some(c) => format!("{} CI", percent(c)),
            None => "CI".to_owned(),
        },
        "p".to_owned(),
        "n".to_owned(),
        "verdict".to_owned(),
    ]);
    header
}

/// A table of named rows (a sweep comparison's capacity and p99 at each rate), header first,
/// with the legend lines its columns and verdicts need.
pub(crate) fn named_table(
    runs_a: usize,
    runs_b: usize,
    rows: &[(String, &Row)],
) -> (Vec<Vec<String>>, Vec<String>) {
    let columns = Columns::of(rows.iter().map(|(_, r)| *r));
    let mut table = vec![stats_header(runs_a, runs_b, &columns)];
    table.extend(rows.iter().map(|(name, r)| named_cells(r, name, &columns)));
    (table, legend(rows.iter().map(|(_, r)| *r), &columns))
}

fn table(c: &Comparison) -> (Vec<Vec<String>>, Vec<String>) {
    let columns = Columns::of(&c.rows);
    let mut rows = vec![stats_header(c.a.runs.len(), c.b.runs.len(), &columns)];
    rows.extend(c.rows.iter().map(|r| cells(r, &columns)));
    (rows, legend(&c.rows, &columns))
}

/// One line per column or verdict word in the table that a reader may not know.
fn legend<'a>(rows: impl IntoIterator<Item = &'a Row> + Clone, columns: &Columns) -> Vec<String> {
    let rows: Vec<&Row> = rows.into_iter().collect();
    let mut lines = Vec::new();
    if rows.iter().any(|r| r.method == Method::MannWhitney) {
        lines.push(format!(
            "HL shift: the Hodges-Lehmann shift, the median of the differences over every pair of runs (one from A, one from B); it is what the rank test tests, and it can differ from the difference of the two medians shown beside it{}",
            match columns.coverage {
                Some(c) if (c - 0.95).abs() > 5e-4 => format!(
                    "; its interval covers {} (exact for these run counts: a rank interval cannot be made exactly 95%)",
                    percent(c)
                ),
                _ => String::new(),
            }
        ));
    }
    if rows.iter().any(|r| r.method == Method::WelchLowN) {
        lines.push("Welch: the difference of the means (of the logarithms, for ratios) with Welch's t interval, for 2-3 runs a side".to_owned());
    }
    let side_missing: Vec<String> = rows
        .iter()
        .flat_map(|r| [("A", &r.a), ("B", &r.b)])
        .filter_map(|(name, side)| {
            side.within_run_missing
                .as_ref()
                .map(|why| format!("{name}: {why}"))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !side_missing.is_empty() {
        lines.push(format!(
            "[none]: no within-run interval ({}): it needs 5 measured seconds with samples in each",
            side_missing.join("; ")
        ));
    }
    let has = |f: &dyn Fn(&Verdict) -> bool| rows.iter().any(|r| f(&r.verdict));
    if has(&|v| {
        matches!(
            v,
            Verdict::AFaster | Verdict::BFaster | Verdict::ABetter | Verdict::BBetter
        )
    }) {
        // The margins of the metrics in this table, from the metrics themselves.
        let mut margins: Vec<String> = Vec::new();
        for row in &rows {
            let unit = if row.metric.is_ratio() { "%" } else { " pp" };
            let text = format!("±{}{unit} {}", row.metric.margin(), row.metric.name());
            if !margins.contains(&text) {
                margins.push(text);
            }
        }
        lines.push(format!(
            "A/B faster, A/B better: significant (p < 0.05) and the whole interval lies beyond the metric's margin ({})",
            margins.join(", ")
        ));
    }
    if has(&|v| matches!(v, Verdict::SmallButReal)) {
        lines.push("small but real: significant (p < 0.05), but the interval reaches inside the margin, so the difference may be too small to matter".to_owned());
    }
    if has(&|v| matches!(v, Verdict::Equivalent { .. })) {
        lines.push("equivalent (±M): the whole interval lies within ±M: any difference is smaller than that".to_owned());
    }
    if has(&|v| matches!(v, Verdict::NoDifference)) {
        lines.push("~: no significant difference, but not shown equivalent either: the interval is wider than the margin (more runs narrow it)".to_owned());
    }
    if has(&|v| matches!(v, Verdict::Inconclusive)) {
        lines.push(
            "inconclusive: too few runs to test (at least 4 a side for the rank test)".to_owned(),
        );
    }
    lines
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
    let (rows, legend) = table(c);
    out.push_str(&table::layout(&rows));
    out.push('\n');
    for note in row_notes(c).iter().chain(&c.notes).chain(&legend) {
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
    let (rows, legend) = table(c);
    out.push_str(&table::markdown(&rows));
    out.push('\n');
    for note in row_notes(c).iter().chain(&c.notes).chain(&legend) {
        out.push_str(&format!("- {}\n", md_item(note)));
    }
    out
}

/// A note as a markdown list item: a leading `*` would open a nested list.
pub(crate) fn md_item(note: &str) -> String {
    match note.strip_prefix("* ") {
        Some(rest) => format!("\\* {rest}"),
        None => note.to_owned(),
    }
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

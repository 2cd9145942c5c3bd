//! Two sweeps compared: the capacity brackets, the answer, and the steps side by side.

use crate::compare::Severity;
use crate::compare::sweep::{StepPair, SweepComparison};
use crate::render::table;
use crate::staged::StageSummary;
use crate::units::{duration_ns, rate};

fn header() -> Vec<String> {
    [
        "rate",
        "A throughput",
        "A p50",
        "A p99",
        "A SLO",
        "B throughput",
        "B p50",
        "B p99",
        "B SLO",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn side(cells: &mut Vec<String>, step: Option<&StageSummary>) {
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    match step {
        Some(s) => cells.extend([
            rate(s.throughput_per_s),
            ns(s.latency.quantile("p50")),
            ns(s.latency.quantile("p99")),
            s.slo.unwrap_or("n/a").to_owned(),
        ]),
        None => cells.extend(["—", "—", "—", "not run"].map(str::to_owned)),
    }
}

fn row(pair: &StepPair) -> Vec<String> {
    let mut cells = vec![rate(pair.rate_per_s)];
    side(&mut cells, pair.a.as_ref());
    side(&mut cells, pair.b.as_ref());
    cells
}

fn lines(c: &SweepComparison) -> Vec<String> {
    let brackets = |b: &[crate::compare::sweep::Bracket]| {
        b.iter().map(|b| b.text()).collect::<Vec<_>>().join(", ")
    };
    vec![
        format!("SLO             {}", c.slo),
        format!(
            "capacity        A {}   B {}",
            brackets(&c.brackets_a),
            brackets(&c.brackets_b)
        ),
        format!("verdict         {}", c.verdict),
    ]
}

/// The capacity row and the p99 at each common rate, as compare's table, with its legend.
fn stats_rows(c: &SweepComparison) -> (Vec<Vec<String>>, Vec<String>) {
    let mut rows = vec![(c.capacity.metric.name().to_owned(), &c.capacity)];
    rows.extend(
        c.p99_at
            .iter()
            .map(|(r, row)| (format!("p99 at {}", rate(*r)), row)),
    );
    crate::render::compare::named_table(c.a.runs.len(), c.b.runs.len(), &rows)
}

/// Renders as text.
pub fn text(c: &SweepComparison) -> String {
    let mut out = format!(
        "vload compare (sweeps)   A = {} ({} sweep{})   B = {} ({} sweep{})\n",
        c.a.name,
        c.a.runs.len(),
        if c.a.runs.len() == 1 { "" } else { "s" },
        c.b.name,
        c.b.runs.len(),
        if c.b.runs.len() == 1 { "" } else { "s" },
    );
    for line in lines(c) {
        out.push_str(&line);
        out.push('\n');
    }
    for check in &c.checks {
        let prefix = match check.severity {
            Severity::Warning => "WARNING: ",
            Severity::Note => "note: ",
        };
        out.push_str(&format!("{prefix}{}\n", check.message));
    }
    out.push('\n');
    let (stats, legend) = stats_rows(c);
    out.push_str(&table::layout(&stats));
    if !c.steps.is_empty() {
        out.push('\n');
        let mut rows = vec![header()];
        rows.extend(c.steps.iter().map(row));
        out.push_str(&table::layout(&rows));
    }
    out.push('\n');
    for note in c.notes.iter().chain(&legend) {
        out.push_str(note);
        out.push('\n');
    }
    out
}

/// Renders as markdown.
pub fn markdown(c: &SweepComparison) -> String {
    let mut out = format!(
        "## vload compare (sweeps): A = {} vs B = {}\n\n",
        c.a.name, c.b.name
    );
    for line in lines(c) {
        out.push_str(&format!(
            "- {}\n",
            line.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    for check in &c.checks {
        let prefix = match check.severity {
            Severity::Warning => "**Warning:** ",
            Severity::Note => "",
        };
        out.push_str(&format!("- {prefix}{}\n", check.message));
    }
    out.push('\n');
    let (stats, legend) = stats_rows(c);
    out.push_str(&table::markdown(&stats));
    if !c.steps.is_empty() {
        out.push('\n');
        let mut rows = vec![header()];
        rows.extend(c.steps.iter().map(row));
        out.push_str(&table::markdown(&rows));
    }
    out.push('\n');
    for note in c.notes.iter().chain(&legend) {
        out.push_str(&format!("- {}\n", crate::render::compare::md_item(note)));
    }
    out
}

/// Renders as JSON, with the schema version.
pub fn json(c: &SweepComparison) -> String {
    super::json_document("compare_sweeps", "comparison", c)
}

//! `history show` and `history check` as text and Markdown.

use std::fmt::Write as _;

use vload_analyze::Metric;
use vload_analyze::units::clean_lines;

use crate::judge::{Change, Strength, unit};
use crate::series::{Gate, SeriesHistory};

/// A commit as shown: 12 characters of a hash, a run's id in full.
fn short(commit: &str) -> &str {
    if commit.starts_with("run ") || commit.len() <= 12 {
        commit
    } else {
        &commit[..12]
    }
}

fn signed(metric: Metric, delta: f64) -> String {
    format!("{delta:+.1}{}", unit(metric))
}

/// One change in one line: shift, interval, where, medians either side, strength and test.
pub fn change_line(metric: Metric, c: &Change) -> String {
    let interval = c
        .interval
        .map(|(lo, hi)| format!(" [{}, {}]", signed(metric, lo), signed(metric, hi)))
        .unwrap_or_default();
    let p =
        c.p.map(|p| format!(", p {}", p_text(p)))
            .unwrap_or_default();
    let how = format!("{}, {} vs {} runs{p}", c.method, c.runs.0, c.runs.1);
    let strength = match &c.strength {
        Strength::Confirmed => format!("confirmed ({how})"),
        Strength::Weak(why) => format!("weak: {why} ({how})"),
    };
    format!(
        "{} {}{interval} at {} ({} -> {}){}: {strength}",
        metric.name(),
        signed(metric, c.delta),
        short(&c.commit),
        metric.format(c.before),
        metric.format(c.after),
        if c.worse && c.strength == Strength::Confirmed {
            ", worse"
        } else {
            ""
        },
    )
}

fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "< 0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// `history show`: per series, its identity, the last `last` commits with each metric's
/// median, the change points, the newest commit's test, and the excluded runs.
pub fn show(histories: &[SeriesHistory], last: usize) -> String {
    let mut out = String::new();
    if histories.is_empty() {
        out.push_str(
            "no runs stored (or none selected): add some with `vload history add RUN.json`\n",
        );
    }
    for h in histories {
        series_head(&mut out, h);
        table(&mut out, h, last);
        changes(&mut out, h);
        let excluded: Vec<_> = h.excluded().collect();
        if !excluded.is_empty() {
            let _ = writeln!(out, "  excluded from the statistics ({}):", excluded.len());
            for r in excluded {
                let _ = writeln!(
                    out,
                    "    {}  {}  {}",
                    r.run_id,
                    short(&r.commit),
                    r.excluded.as_deref().unwrap_or_default()
                );
            }
        }
        out.push('\n');
    }
    clean_lines(&out).into_owned()
}

fn series_head(out: &mut String, h: &SeriesHistory) {
    let k = &h.info.key;
    let commits = h.metrics.first().map_or(0, |m| m.commits.len());
    let excluded = h.excluded().count();
    let _ = writeln!(out, "series {}", h.info.key.name());
    let _ = writeln!(out, "  workload  {}", k.workload);
    let _ = writeln!(out, "  testbed   {}", k.testbed);
    if !k.config.is_empty() {
        let _ = writeln!(out, "  server    {}", k.config);
    }
    let _ = writeln!(
        out,
        "  {commits} commits, {} runs ({excluded} excluded)\n",
        h.runs.len()
    );
}

fn table(out: &mut String, h: &SeriesHistory, last: usize) {
    let Some(first) = h.metrics.first() else {
        return;
    };
    let n = first.commits.len();
    let from = n.saturating_sub(last);
    if from > 0 {
        let _ = writeln!(out, "  ({from} older commits not shown: --last {n})");
    }
    let _ = write!(out, "  {:<14} {:>5}", "commit", "runs");
    for m in &h.metrics {
        let _ = write!(out, " {:>14}", m.metric.name());
    }
    out.push('\n');
    for i in from..n {
        let point = &first.commits[i];
        let total = point.values.len() + point.excluded;
        let marks: String = h
            .metrics
            .iter()
            .filter(|m| m.changes.iter().any(|c| c.commit == point.commit))
            .map(|_| '*')
            .take(1)
            .collect();
        let _ = write!(
            out,
            "  {:<13}{:1} {:>5}",
            short(&point.commit),
            marks,
            runs_text(total, point.excluded)
        );
        for m in &h.metrics {
            let cell = m.commits[i]
                .median()
                .map_or_else(|| "-".into(), |v| m.metric.format(v));
            let _ = write!(out, " {cell:>14}");
        }
        out.push('\n');
    }
    out.push('\n');
}

fn runs_text(total: usize, excluded: usize) -> String {
    if excluded == 0 {
        total.to_string()
    } else {
        format!("{total}-{excluded}")
    }
}

fn changes(out: &mut String, h: &SeriesHistory) {
    let all: Vec<(Metric, &Change)> = h
        .metrics
        .iter()
        .flat_map(|m| m.changes.iter().map(move |c| (m.metric, c)))
        .collect();
    if all.is_empty() {
        let _ = writeln!(out, "  change points: none");
    } else {
        let _ = writeln!(out, "  change points (* in the table):");
        for (metric, c) in all {
            let _ = writeln!(out, "    {}", change_line(metric, c));
        }
    }
    let newest: Vec<(Metric, &Change)> = h
        .metrics
        .iter()
        .filter_map(|m| m.newest.as_ref().map(|c| (m.metric, c)))
        .collect();
    let Some((_, first)) = newest.first() else {
        return;
    };
    let confirmed: Vec<&(Metric, &Change)> = newest
        .iter()
        .filter(|(_, c)| c.strength == Strength::Confirmed)
        .collect();
    if confirmed.is_empty() {
        let shifts: Vec<String> = newest
            .iter()
            .map(|(m, c)| format!("{} {}", m.name(), signed(*m, c.delta)))
            .collect();
        let _ = writeln!(
            out,
            "  newest commit {} against the runs since the last change point: no confirmed change ({})",
            short(&first.commit),
            shifts.join(", ")
        );
    } else {
        let _ = writeln!(
            out,
            "  newest commit {} against the runs since the last change point:",
            short(&first.commit)
        );
        for (metric, c) in confirmed {
            let _ = writeln!(out, "    {}", change_line(*metric, c));
        }
    }
}

/// `history check`'s verdict as text (`markdown` false) or Markdown, for a CI summary.
pub fn gate(gate: &Gate, histories: &[SeriesHistory], markdown: bool) -> String {
    let margin = gate
        .margin
        .map_or_else(|| "each metric's own margin".into(), |m| format!("{m}%"));
    let mut out = String::new();
    let head = if gate.regressions.is_empty() && !gate.unjudged.is_empty() {
        format!(
            "Gate: NOT JUDGED (exit 2): {} series could not be judged.",
            gate.unjudged.len()
        )
    } else if gate.regressions.is_empty() {
        format!("Gate: passed: the newest commit starts no confirmed regression beyond {margin}.")
    } else {
        format!(
            "Gate: FAILED (exit 1): the newest commit starts {} confirmed regression{} beyond {margin}.",
            gate.regressions.len(),
            if gate.regressions.len() == 1 { "" } else { "s" }
        )
    };
    if markdown {
        let _ = writeln!(out, "### vload history check\n\n**{head}**\n");
        for (series, why) in &gate.unjudged {
            let _ = writeln!(out, "- not judged: **{series}**: {why}");
        }
        if !gate.regressions.is_empty() {
            out.push_str("| series | metric | change |\n|---|---|---|\n");
            for (series, metric, c) in &gate.regressions {
                let _ = writeln!(
                    out,
                    "| {series} | {} | {} |",
                    metric.name(),
                    change_line(*metric, c)
                );
            }
            out.push('\n');
        }
        for h in histories {
            let found: Vec<String> = h
                .metrics
                .iter()
                .flat_map(|m| m.changes.iter().map(move |c| change_line(m.metric, c)))
                .collect();
            let excluded = h.excluded().count();
            let _ = writeln!(
                out,
                "- **{}**: {} commits, {} runs ({excluded} excluded); change points: {}",
                h.info.key.name(),
                h.metrics.first().map_or(0, |m| m.commits.len()),
                h.runs.len(),
                if found.is_empty() {
                    "none".into()
                } else {
                    found.join("; ")
                }
            );
        }
    } else {
        let _ = writeln!(out, "{head}");
        for (series, why) in &gate.unjudged {
            let _ = writeln!(out, "  not judged: {series}: {why}");
        }
        for (series, metric, c) in &gate.regressions {
            let _ = writeln!(out, "  {series}: {}", change_line(*metric, c));
        }
    }
    clean_lines(&out).into_owned()
}

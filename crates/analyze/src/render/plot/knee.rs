//! The knee: latency against rate, one point a stage, where throughput stops growing and
//! latency turns up. For a sweep, each step marked by its outcome at the SLO (met, missed,
//! or saying nothing about the server) and the capacity bracket shaded.

use super::group::{Group, median_line};
use super::series::RunSeries;
use super::svg::{Axis, Band, Extras, Mark, Scale, Series, Shape, chart_with, fmt_plain, ms};
use crate::staged::StageSummary;

/// Above this many sweeps on one chart their brackets would hide each other: left out.
const MAX_BRACKETS: usize = 4;

/// The knee chart, or nothing when no run has two constant stages or a sweep.
pub(super) fn knee_chart(
    groups: &[Group],
    runs: &[RunSeries],
    grouped: bool,
    latency: &Axis,
) -> String {
    let sweep = runs.iter().any(|r| r.sweep.is_some());
    let knees: Vec<[Vec<(f64, f64)>; 3]> = runs.iter().map(|r| knee(r, sweep)).collect();
    if knees.iter().all(|k| k[0].len() < 2 && !sweep) {
        return String::new();
    }
    let mut series = Vec::new();
    for group in groups {
        for (q, dash) in [(0, "none"), (1, "6 3"), (2, "1 3")] {
            let quantile = ["p50", "p99", "p99.9"][q];
            let members: Vec<&[(f64, f64)]> =
                group.members.iter().map(|&i| &knees[i][q][..]).collect();
            if members.iter().all(|m| m.is_empty()) {
                continue;
            }
            let single = group.members.len() == 1;
            for &i in &group.members {
                let name = if single && grouped {
                    &group.name
                } else {
                    &runs[i].name
                };
                let mut line = Series::new(
                    format!("{name} {quantile}"),
                    group.color.clone(),
                    dash,
                    knees[i][q].clone(),
                );
                // A line of one point is not seen: its point is drawn.
                line.dots = !sweep || knees[i][q].len() == 1;
                line.thin = !single;
                line.group = grouped.then(|| group.name.clone());
                series.push(line);
            }
            // Runs of a group line up by the rate asked only in a sweep.
            if !single && sweep {
                let mut median = Series::new(
                    format!("{} {quantile}", group.name),
                    group.color.clone(),
                    dash,
                    median_line(&members),
                );
                median.group = Some(group.name.clone());
                series.push(median);
            }
        }
    }
    let mut extras = Extras::default();
    if sweep {
        sweep_extras(groups, runs, &knees, &mut series, &mut extras);
    } else {
        fell_behind(groups, runs, &mut extras);
    }
    let (title, x_label) = if sweep {
        (
            "Latency against the rate asked, one point a step (the last try at each rate): p50, p99 (dashed), p99.9 (dotted); marks: each step against the SLO; shaded: the capacity bracket",
            "rate asked (requests per second)",
        )
    } else {
        (
            "Latency against the rate asked, one point a constant stage: p50, p99 (dashed), p99.9 (dotted); crosses: stages whose throughput fell over 5% behind the rate asked (overload)",
            "rate asked (requests per second)",
        )
    };
    let x = Axis {
        label: x_label,
        scale: Scale::Linear,
        format: fmt_plain,
    };
    chart_with(title, &x, latency, &series, &extras)
}

/// Each run's knee: p50, p99 and p99.9 (where it has samples enough) of its constant
/// stages, in rising rate asked. A sweep's rate tried twice keeps its last try (a retry
/// replaces the one before); a ramp is no point (its mean rate would be drawn as a rate it
/// never held). The rate asked, not the throughput achieved, is x: at overload the throughput
/// falls behind the rate and a line drawn against it folded back on itself, unexplained;
/// a stage that fell behind is marked instead ([`fell_behind`]).
fn knee(run: &RunSeries, sweep: bool) -> [Vec<(f64, f64)>; 3] {
    let mut stages: Vec<&StageSummary> = constant_stages(run);
    if sweep {
        stages.sort_by(|a, b| a.to_rate_per_s.total_cmp(&b.to_rate_per_s));
        // Last try at each rate: the stages came in the order run, and the sort is stable.
        stages.reverse();
        stages.dedup_by(|a, b| (a.to_rate_per_s - b.to_rate_per_s).abs() < 1e-9);
        stages.reverse();
    } else {
        stages.sort_by(|a, b| a.to_rate_per_s.total_cmp(&b.to_rate_per_s));
    }
    ["p50", "p99", "p99.9"].map(|q| {
        stages
            .iter()
            .filter_map(|s| Some((s.to_rate_per_s, ms(s.latency.quantile(q)? as f64))))
            .collect()
    })
}

/// A sweep's SLO terms on latency, each a line across the rates drawn (a tenth either side
/// of the one rate of a sweep of one).
fn slo_lines(
    group: &Group,
    record: &vload_schema::SweepRecord,
    span: (f64, f64),
    series: &mut Vec<Series>,
) {
    let span = if span.1 - span.0 < 1e-9 {
        (span.0 * 0.9, span.1 * 1.1)
    } else {
        span
    };
    for term in record
        .slo
        .iter()
        .filter(|t| crate::slo::quantile_of(t.metric).is_some())
    {
        let mut line = Series::new(
            format!("{} SLO {}", group.name, crate::slo::term_text(term)),
            "#777777".to_owned(),
            "10 3 2 3",
            vec![(span.0, ms(term.limit)), (span.1, ms(term.limit))],
        );
        line.group = Some(group.name.clone());
        series.push(line);
    }
}

/// A plan's stages whose throughput fell more than 5% behind the rate asked: a cross on
/// their p50, saying both rates.
fn fell_behind(groups: &[Group], runs: &[RunSeries], extras: &mut Extras) {
    for group in groups {
        for &i in &group.members {
            for stage in constant_stages(&runs[i]) {
                let Some(p50) = stage.latency.quantile("p50") else {
                    continue;
                };
                if stage.throughput_per_s >= 0.95 * stage.to_rate_per_s {
                    continue;
                }
                extras.marks.push(Mark {
                    at: (stage.to_rate_per_s, ms(p50 as f64)),
                    shape: Shape::Cross,
                    color: group.color.clone(),
                    title: format!(
                        "{}: asked {}/s, achieved {}/s: overload",
                        runs[i].name,
                        fmt_plain(stage.to_rate_per_s),
                        fmt_plain(stage.throughput_per_s)
                    ),
                    outcome: "fell behind",
                });
            }
        }
    }
}

/// The measured stages that held one rate throughout.
fn constant_stages(run: &RunSeries) -> Vec<&StageSummary> {
    run.summary
        .stages
        .iter()
        .filter(|s| !s.warmup && (s.from_rate_per_s - s.to_rate_per_s).abs() < 1e-9)
        .collect()
}

/// A sweep's marks (every step, each try, by its outcome), its SLO lines and its bracket.
fn sweep_extras(
    groups: &[Group],
    runs: &[RunSeries],
    knees: &[[Vec<(f64, f64)>; 3]],
    series: &mut Vec<Series>,
    extras: &mut Extras,
) {
    let span = knees
        .iter()
        .flat_map(|k| k[0].iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let sweeps = runs.iter().filter(|r| r.sweep.is_some()).count();
    for group in groups {
        let mut slo_drawn = false;
        for &i in &group.members {
            let run = &runs[i];
            let Some(record) = &run.sweep else { continue };
            let quantile = record
                .slo
                .iter()
                .find(|t| crate::slo::quantile_of(t.metric).is_some())
                .map_or("p99", |t| crate::slo::metric_name(t.metric));
            for step in constant_stages(run) {
                let Some(word) = step.slo else { continue };
                let Some(value) = step.latency.quantile(quantile) else {
                    continue;
                };
                let shape = match word {
                    "met" => Shape::Dot,
                    "missed" | "unsteady" => Shape::Cross,
                    _ => Shape::Ring,
                };
                extras.marks.push(Mark {
                    at: (step.to_rate_per_s, ms(value as f64)),
                    shape,
                    color: group.color.clone(),
                    title: format!(
                        "{}: step at {}/s {word}, {quantile} {}",
                        run.name,
                        fmt_plain(step.to_rate_per_s),
                        super::svg::fmt_ms(ms(value as f64))
                    ),
                    outcome: word,
                });
            }
            if !slo_drawn && span.0.is_finite() {
                slo_drawn = true;
                slo_lines(group, record, span, series);
            }
            if sweeps <= MAX_BRACKETS {
                extras.bands.extend(bracket(&run.name, record, sweeps > 1));
            }
        }
    }
    if sweeps > MAX_BRACKETS {
        extras.notes.push(format!(
            "{sweeps} sweeps: their capacity brackets are in the table, not shaded"
        ));
    }
}

/// The capacity bracket of a sweep: from the highest rate met to the lowest missed.
fn bracket(name: &str, record: &vload_schema::SweepRecord, named: bool) -> Option<Band> {
    let verdict = &record.verdict;
    let lo = verdict.max_rate_per_s?;
    let prefix = if named {
        format!("{name}: ")
    } else {
        String::new()
    };
    Some(match verdict.first_failing_per_s {
        Some(hi) => Band {
            from: lo,
            to: hi,
            label: format!("{prefix}capacity {}..{}/s", fmt_plain(lo), fmt_plain(hi)),
            fill: "#e3f1df",
            show_label: true,
        },
        None => Band {
            from: lo,
            to: lo,
            label: format!("{prefix}capacity at least {}/s", fmt_plain(lo)),
            fill: "#b9dcb0",
            show_label: true,
        },
    })
}

//! Runs grouped by label: one colour a group, its runs as thin lines around their median.
//!
//! Ten runs of docs/varnish.md's 5+5 recipe are two things to compare, not ten: with labels
//! that repeat, each label is a group (a colour, a legend entry, a median line); otherwise
//! every run is a group of its own.

use std::collections::BTreeMap;

use super::series::RunSeries;
use super::svg::{Series, colour};

/// Runs drawn in one colour.
pub(super) struct Group {
    /// The label, or the run's name when runs are not grouped.
    pub(super) name: String,
    pub(super) color: String,
    /// Indexes into the runs, in the order given.
    pub(super) members: Vec<usize>,
}

/// The groups of `runs`: by label when every run has one and some label repeats, else one
/// a run. Groups keep the order their first run was given in.
pub(super) fn groups(runs: &[RunSeries]) -> (Vec<Group>, bool) {
    let labels: Option<Vec<&str>> = runs.iter().map(|r| r.label.as_deref()).collect();
    let grouped = labels.as_ref().is_some_and(|labels| {
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len() < labels.len()
    });
    let mut groups: Vec<Group> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let name = match (&labels, grouped) {
            (Some(labels), true) => labels[i].to_owned(),
            _ => run.name.clone(),
        };
        match groups.iter_mut().find(|g| grouped && g.name == name) {
            Some(group) => group.members.push(i),
            None => groups.push(Group {
                color: colour(groups.len()),
                name,
                members: vec![i],
            }),
        }
    }
    (groups, grouped)
}

/// The page's title: the groups with their run counts, or the runs' names when few.
pub(super) fn title(groups: &[Group], grouped: bool) -> String {
    if grouped {
        let parts: Vec<String> = groups
            .iter()
            .map(|g| match g.members.len() {
                1 => format!("{} (1 run)", g.name),
                n => format!("{} ({n} runs)", g.name),
            })
            .collect();
        parts.join(" vs ")
    } else if groups.len() <= 4 {
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        names.join(" vs ")
    } else {
        format!("{} runs", groups.len())
    }
}

/// The lines of one quantity (`pick`) for every group: a group of one is its run's line; a
/// larger group is its runs thin and faint, and their median at each x in the group's
/// colour.
pub(super) fn lines(
    groups: &[Group],
    runs: &[RunSeries],
    pick: &dyn Fn(&RunSeries) -> &[(f64, f64)],
    suffix: &str,
    dash: &'static str,
    grouped: bool,
) -> Vec<Series> {
    let mut out = Vec::new();
    for group in groups {
        let label = grouped.then(|| group.name.clone());
        if let [only] = group.members[..] {
            let run = &runs[only];
            let name = if grouped { &group.name } else { &run.name };
            let mut line = Series::new(
                format!("{name}{suffix}"),
                group.color.clone(),
                dash,
                pick(run).to_vec(),
            );
            line.group = label;
            out.push(line);
            continue;
        }
        for &i in &group.members {
            let mut line = Series::new(
                format!("{}{suffix}", runs[i].name),
                group.color.clone(),
                dash,
                pick(&runs[i]).to_vec(),
            );
            line.thin = true;
            line.group = label.clone();
            out.push(line);
        }
        let members: Vec<&[(f64, f64)]> = group.members.iter().map(|&i| pick(&runs[i])).collect();
        let mut median = Series::new(
            format!("{}{suffix}", group.name),
            group.color.clone(),
            dash,
            median_line(&members),
        );
        median.group = label;
        out.push(median);
    }
    out
}

/// The median of several lines at each x that at least half of them have (x matched to a
/// thousandth).
pub(super) fn median_line(lines: &[&[(f64, f64)]]) -> Vec<(f64, f64)> {
    let mut at: BTreeMap<i64, (f64, Vec<f64>)> = BTreeMap::new();
    for line in lines {
        for &(x, y) in *line {
            if x.is_finite() && y.is_finite() {
                let key = (x * 1_000.0).round() as i64;
                at.entry(key).or_insert_with(|| (x, Vec::new())).1.push(y);
            }
        }
    }
    at.into_values()
        .filter(|(_, ys)| ys.len() * 2 >= lines.len())
        .map(|(x, mut ys)| (x, median(&mut ys)))
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count).
pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_line_takes_the_middle_at_each_shared_x() {
        let a = [(1.0, 1.0), (2.0, 5.0)];
        let b = [(1.0, 3.0), (2.0, 7.0), (3.0, 9.0)];
        let c = [(1.0, 2.0), (2.0, 6.0)];
        let line = median_line(&[&a, &b, &c]);
        // x = 3 is in one line of three: no median there.
        assert_eq!(line, [(1.0, 2.0), (2.0, 6.0)]);
        assert_eq!(median(&mut [4.0, 1.0]), 2.5);
    }
}

//! Breakdowns merged: the groups of the same name add up, histograms and all. A breakdown
//! that some run lacks is left out (its groups would no longer add up to the merged totals).

use vload_schema::{Breakdown, GROUP_LIMIT, Group, LatencyRecord, OTHER, RunFile};

use super::add::{add_record, finish};
use super::error::MergeError;

/// The runs' breakdowns, each a partition of the merged totals.
pub(super) fn merge_breakdowns(runs: &[(String, RunFile)]) -> Result<Vec<Breakdown>, MergeError> {
    let Some((_, first)) = runs.first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for b in &first.breakdowns {
        let all: Option<Vec<(&str, &Breakdown)>> = runs
            .iter()
            .map(|(name, r)| {
                r.breakdowns
                    .iter()
                    .find(|o| o.by == b.by)
                    .map(|o| (name.as_str(), o))
            })
            .collect();
        if let Some(all) = all {
            out.push(merge_one(&b.by, &all)?);
        }
    }
    Ok(out)
}

/// A group being added up.
struct Acc {
    group: Group,
    latency: super::Accumulator,
    /// The responses' wait for the first byte and their transfer.
    phases: [super::Accumulator; 2],
}

fn merge_one(by: &str, all: &[(&str, &Breakdown)]) -> Result<Breakdown, MergeError> {
    let mut groups: Vec<Acc> = Vec::new();
    let mut folded = 0;
    for (run, b) in all {
        folded = b.folded.max(folded);
        for g in &b.groups {
            let at = match groups.iter().position(|a| a.group.name == g.name) {
                Some(at) => at,
                None => {
                    groups.push(Acc {
                        group: Group {
                            requests: 0,
                            errors: 0,
                            bytes_in: 0,
                            status_classes: Default::default(),
                            cache: Default::default(),
                            first_byte: None,
                            transfer: None,
                            ..g.clone()
                        },
                        latency: None,
                        phases: [None, None],
                    });
                    groups.len() - 1
                }
            };
            add(&mut groups[at], g, run)?;
        }
    }
    // Runs that are not shards of one attack may name different groups: beyond the limit,
    // the smallest fold into one.
    if groups.len() > GROUP_LIMIT + 2 {
        groups.sort_by_key(|a| std::cmp::Reverse(a.group.requests));
        let rest = groups.split_off(GROUP_LIMIT);
        folded += rest.len() as u64;
        let mut other = Acc {
            group: Group {
                name: OTHER.into(),
                requests: 0,
                errors: 0,
                bytes_in: 0,
                status_classes: Default::default(),
                cache: Default::default(),
                latency: rest[0].group.latency.clone(),
                first_byte: None,
                transfer: None,
            },
            latency: None,
            phases: [None, None],
        };
        for acc in rest {
            let g = finish_group(acc)?;
            add(&mut other, &g, "(folded)")?;
        }
        groups.push(other);
    }
    Ok(Breakdown {
        by: by.to_owned(),
        folded,
        groups: groups
            .into_iter()
            .map(finish_group)
            .collect::<Result<_, _>>()?,
    })
}

fn add(acc: &mut Acc, g: &Group, run: &str) -> Result<(), MergeError> {
    let a = &mut acc.group;
    // Saturating, as the merge's other sums: a hostile file's counts must not wrap.
    a.requests = a.requests.saturating_add(g.requests);
    a.errors = a.errors.saturating_add(g.errors);
    a.bytes_in = a.bytes_in.saturating_add(g.bytes_in);
    a.status_classes.add(&g.status_classes);
    a.cache.add(&g.cache);
    let [first_byte, transfer] = &mut acc.phases;
    for (into, record) in [(first_byte, &g.first_byte), (transfer, &g.transfer)] {
        if let Some(record) = record {
            add_record(into, record, run)?;
        }
    }
    add_record(&mut acc.latency, &g.latency, run)
}

fn finish_group(acc: Acc) -> Result<Group, MergeError> {
    let latency: Option<LatencyRecord> = finish(acc.latency)?;
    let [first_byte, transfer] = acc.phases;
    Ok(Group {
        latency: latency.unwrap_or(acc.group.latency),
        first_byte: finish(first_byte)?,
        transfer: finish(transfer)?,
        ..acc.group
    })
}

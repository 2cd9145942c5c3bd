//! Whether runs may be merged: the same plan, and shards that make one whole attack.

use std::collections::BTreeMap;

use vload_schema::RunFile;

use super::error::MergeError;

/// The plan fields that must agree, with their values.
fn plan_fields(run: &RunFile) -> Vec<(&'static str, String)> {
    let p = &run.plan;
    vec![
        ("workload_hash", run.workload_hash.clone()),
        ("mode", format!("{:?}", p.mode).to_lowercase()),
        ("arrival", format!("{:?}", p.arrival).to_lowercase()),
        ("rate_per_s", format!("{:?}", p.rate_per_s)),
        ("rate_plan", format!("{:?}", p.rate_plan)),
        ("connections", p.connections.to_string()),
        ("duration_s", format!("{:?}", p.duration_s)),
        ("requests", format!("{:?}", p.requests)),
        ("warmup_s", p.warmup_s.to_string()),
        ("timeout_s", p.timeout_s.to_string()),
        ("histogram", format!("{:?}", p.histogram)),
        // Two servers' numbers in one report would describe neither.
        (
            "server_address",
            p.server_address.clone().unwrap_or_else(|| p.target.clone()),
        ),
        ("expect_status", p.expected_text()),
    ]
}

/// Refuses the same run twice (one file given twice, or a copy): every request would be
/// counted twice. Not even `--force` merges it.
///
/// # Errors
/// [`MergeError::SameRun`] naming both files.
pub fn check_distinct(runs: &[(String, RunFile)]) -> Result<(), MergeError> {
    let mut seen: BTreeMap<&str, &String> = BTreeMap::new();
    for (name, run) in runs {
        if let Some(first) = seen.insert(&run.run_id, name) {
            return Err(MergeError::SameRun {
                run_id: run.run_id.clone(),
                file_a: first.clone(),
                file_b: name.clone(),
            });
        }
    }
    Ok(())
}

/// Checks that every run planned the same attack as the first.
///
/// # Errors
/// [`MergeError::PlansDiffer`] naming the first field that differs.
pub fn check_plans(runs: &[(String, RunFile)]) -> Result<(), MergeError> {
    let Some((first_name, first)) = runs.first() else {
        return Ok(());
    };
    let reference = plan_fields(first);
    for (name, run) in &runs[1..] {
        for ((field, a), (_, b)) in reference.iter().zip(plan_fields(run)) {
            if *a != b {
                return Err(MergeError::PlansDiffer {
                    field,
                    a: a.clone(),
                    b,
                    file_a: first_name.clone(),
                    file_b: name.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Shards that began this close together began together (clocks, and processes started
/// by hand, are no closer).
pub(crate) const TOGETHER_MS: i64 = 1_000;

/// Checks that sharded runs are the N shards of one attack, each once, and returns what a
/// reader must know about them (windows that do not overlap, late starts, unsynchronised
/// clocks). With `force`, a missing or duplicated shard is a finding instead of an error.
///
/// # Errors
/// [`MergeError::Shards`]: a shard twice or missing, shards of different counts, or shards
/// mixed with unsharded runs.
pub fn check_shards(runs: &[(String, RunFile)], force: bool) -> Result<Vec<String>, MergeError> {
    let sharded: Vec<(&String, vload_schema::ShardRecord)> = runs
        .iter()
        .filter_map(|(name, r)| r.plan.shard.map(|s| (name, s)))
        .collect();
    if sharded.is_empty() {
        return Ok(Vec::new());
    }
    let mut findings = Vec::new();
    let mut problem = |message: String| -> Result<(), MergeError> {
        if force {
            findings.push(message);
            Ok(())
        } else {
            Err(MergeError::Shards(message))
        }
    };
    if let Some((name, _)) = runs.iter().find(|(_, r)| r.plan.shard.is_none()) {
        problem(format!(
            "'{name}' is not a shard but '{}' is shard {}/{}",
            sharded[0].0, sharded[0].1.index, sharded[0].1.count
        ))?;
    }
    let count = sharded[0].1.count;
    if let Some((name, s)) = sharded.iter().find(|(_, s)| s.count != count) {
        problem(format!(
            "'{name}' is a shard of {} but '{}' one of {count}",
            s.count, sharded[0].0
        ))?;
    }
    let mut seen: BTreeMap<u32, &String> = BTreeMap::new();
    for (name, s) in &sharded {
        if let Some(first) = seen.insert(s.index, name) {
            problem(format!(
                "shard {}/{count} appears twice: '{first}' and '{name}'",
                s.index
            ))?;
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        problem(format!(
            "shard{} {} missing: the attack had {count} shards",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ))?;
    }
    findings.extend(timing(runs));
    Ok(findings)
}

/// Milliseconds since the epoch of an RFC 3339 UTC time as vload writes it.
pub(crate) fn epoch_ms(stamp: &str) -> Option<i64> {
    let b = stamp.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let ms = if b.get(19) == Some(&b'.') {
        num(20..23).unwrap_or(0)
    } else {
        0
    };
    // Howard Hinnant's days-from-civil.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

/// What a reader of merged shards must know about their timing: windows that do not
/// overlap, late starts, unsynchronised clocks.
fn timing(runs: &[(String, RunFile)]) -> Vec<String> {
    let mut findings = Vec::new();
    // Windows on the wall clock: [start, start + warm-up + measured].
    let spans: Vec<(&String, i64, i64)> = runs
        .iter()
        .filter_map(|(name, r)| {
            let start = epoch_ms(&r.started_at)?;
            let length = (r.window.warmup_s + r.window.measured_s) * 1000.0;
            Some((name, start, start + length as i64))
        })
        .collect();
    let latest_start = spans.iter().max_by_key(|s| s.1);
    let earliest_end = spans.iter().min_by_key(|s| s.2);
    let earliest_start = spans.iter().min_by_key(|s| s.1);
    if let (Some(late), Some(early), Some(first)) = (latest_start, earliest_end, earliest_start)
        && late.1 <= early.2
        && late.1 - first.1 > TOGETHER_MS
    {
        findings.push(format!(
            "shards began {:.1} s apart ('{}' after '{}'): the merged window is their union on the wall clock, and its seconds outside their overlap carry only some shards' load; start them together with one --start-at",
            (late.1 - first.1) as f64 / 1000.0,
            late.0,
            first.0
        ));
    }
    if let (Some(late), Some(early)) = (latest_start, earliest_end)
        && late.1 > early.2
    {
        findings.push(format!(
            "shards' windows do not overlap: '{}' began {:.1} s after '{}' ended (start them together with --start-at)",
            late.0,
            (late.1 - early.2) as f64 / 1000.0,
            early.0
        ));
    }
    let late: Vec<(&String, f64)> = runs
        .iter()
        .filter_map(|(name, r)| Some((name, r.window.start_offset_s.filter(|s| s.abs() > 1.0)?)))
        .collect();
    match late.as_slice() {
        [] => {}
        [(name, late)] => findings.push(format!(
            "'{name}' began {late:.1} s after its --start-at: its window is shifted against the others"
        )),
        many => findings.push(format!(
            "{} began more than 1 s after their --start-at (up to {:.1} s): their windows are shifted against the others",
            some_names(many.iter().map(|(n, _)| *n)),
            many.iter().map(|(_, l)| *l).fold(0.0, f64::max)
        )),
    }
    // One line however many shards share it: 1,000 shards once printed 1,000 of them.
    let unsynchronised: Vec<(&String, &str, u64)> = runs
        .iter()
        .filter_map(|(name, r)| {
            let clock = r.environment.clock.filter(|c| !c.synchronized)?;
            Some((name, r.environment.hostname.as_str(), clock.max_error_us))
        })
        .collect();
    match unsynchronised.as_slice() {
        [] => {}
        [(name, host, error)] => findings.push(format!(
            "'{name}': the clock of {host} is not synchronised (max error {} ms): shards' seconds may not line up",
            error / 1000
        )),
        many => {
            let mut hosts: Vec<&str> = many.iter().map(|(_, h, _)| *h).collect();
            hosts.sort_unstable();
            hosts.dedup();
            findings.push(format!(
                "{}: the clocks of {} machine{} are not synchronised (max error up to {} ms): shards' seconds may not line up",
                some_names(many.iter().map(|(n, _, _)| *n)),
                hosts.len(),
                if hosts.len() == 1 { "" } else { "s" },
                many.iter().map(|(_, _, e)| e / 1000).max().unwrap_or(0)
            ));
        }
    }
    findings
}

/// `'a', 'b', 'c' and 997 more` of some file names.
fn some_names<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&String> = names.collect();
    let shown: Vec<String> = names.iter().take(3).map(|n| format!("'{n}'")).collect();
    match names.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #45: 1,000 unsynchronised shards once printed 1,000 identical lines.
    #[test]
    fn many_shards_with_one_trouble_get_one_line() {
        let mut run =
            RunFile::from_json(include_str!("../../../schema/tests/data/golden-run.json")).unwrap();
        run.environment.clock = Some(vload_schema::ClockRecord {
            synchronized: false,
            offset_us: 0,
            max_error_us: 16_000_000,
            est_error_us: 0,
        });
        let runs: Vec<(String, RunFile)> = (0..1000)
            .map(|i| (format!("shard-{i}.json"), run.clone()))
            .collect();
        let findings = timing(&runs);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0].starts_with("'shard-0.json', 'shard-1.json', 'shard-2.json' and 997 more"),
            "{findings:?}"
        );
    }

    #[test]
    fn parses_the_timestamps_vload_writes() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            epoch_ms("2026-11-22T01:56:12.345Z"),
            Some(1_795_312_572_345)
        );
        assert_eq!(epoch_ms("garbage"), None);
    }
}

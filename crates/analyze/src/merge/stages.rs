//! Stages of merged runs: shards' stage by stage, consecutive runs' one after another.

use vload_schema::{RunFile, StageRecord};

use super::add::{add, add_record, finish};
use super::error::MergeError;

/// Stages of shards add up stage by stage (each shard ran every stage at its share of the
/// rate; the rates recorded are the whole attack's). Stages of consecutive runs follow one
/// another, on the merged clock.
pub(super) fn merge_stages(
    runs: &[(String, RunFile)],
    starts: &[i64],
    overlapping: bool,
) -> Result<Vec<StageRecord>, MergeError> {
    let earliest = starts.iter().copied().min().unwrap_or(0);
    let mut merged: Vec<StageRecord> = Vec::new();
    for ((name, run), start) in runs.iter().zip(starts) {
        for stage in &run.stages {
            if !overlapping {
                let mut next = stage.clone();
                next.index = merged.len() as u32;
                next.start_s += (start - earliest) as f64 / 1000.0;
                merged.push(next);
                continue;
            }
            match merged.get_mut(stage.index as usize) {
                Some(into) if into.index == stage.index => add_stage(into, stage, name)?,
                _ => {
                    let mut first = stage.clone();
                    first.client_health = None;
                    first.server_cpu_s = None;
                    merged.push(first);
                }
            }
        }
    }
    Ok(merged)
}

fn add_stage(into: &mut StageRecord, s: &StageRecord, name: &str) -> Result<(), MergeError> {
    // Each run read the one origin's count of the phase: counts that cannot be added.
    into.origin_requests = None;
    if into.origin_state != s.origin_state {
        into.origin_state = None;
    }
    for (a, b) in [
        (&mut into.intended, s.intended),
        (&mut into.sent, s.sent),
        (&mut into.completed, s.completed),
        (&mut into.unsent, s.unsent),
        (&mut into.unfinished, s.unfinished),
        (&mut into.late_sends, s.late_sends),
        (&mut into.bytes_in, s.bytes_in),
        (&mut into.bytes_out, s.bytes_out),
        (&mut into.hits, s.hits),
        (&mut into.misses, s.misses),
        (&mut into.stale, s.stale),
    ] {
        add(a, b);
    }
    vload_schema::StaleAges::merge_into(&mut into.stale_ages, s.stale_ages.as_ref());
    for (code, n) in &s.status_codes {
        add(into.status_codes.entry(*code).or_default(), *n);
    }
    for (kind, n) in &s.errors {
        add(into.errors.entry(*kind).or_default(), *n);
    }
    into.throughput_per_s += s.throughput_per_s;
    into.duration_s = into.duration_s.max(s.duration_s);
    for (acc, record) in [
        (&mut into.response, &s.response),
        (&mut into.service, &s.service),
    ] {
        let mut sum = Some((acc.histogram.decode()?, acc.moments));
        add_record(&mut sum, record, name)?;
        *acc = finish(sum)?.expect("a sum of records is a record");
    }
    Ok(())
}

//! Stampedes of merged runs (#59). Consecutive runs' events follow one another, each with
//! its own origin count. Shards' events fired together are one event of the whole: their
//! requests add up, but each shard read the one origin's count around the same event, so
//! the origin's fetches cannot be added: the merged event keeps the cache's word (leaders)
//! and leaves the origin's count unknown rather than add it several times.

use vload_schema::{RunFile, StampedeEvent, StampedeRecord};

use super::add::{add, add_record, finish};
use super::error::MergeError;

/// The runs' stampedes as one, `None` when no run had one; `starts` in ms since the epoch.
pub(super) fn merge_stampedes(
    runs: &[(String, RunFile)],
    starts: &[i64],
    overlapping: bool,
) -> Result<Option<StampedeRecord>, MergeError> {
    let earliest = starts.iter().copied().min().unwrap_or(0);
    let mut out: Option<StampedeRecord> = None;
    let (mut leaders, mut waiters) = (None, None);
    for ((name, run), start) in runs.iter().zip(starts) {
        let Some(s) = &run.stampede else {
            continue;
        };
        for (acc, record) in [(&mut leaders, &s.leaders), (&mut waiters, &s.waiters)] {
            if let Some(r) = record {
                add_record(acc, r, name)?;
            }
        }
        let offset = (start - earliest) as f64 / 1000.0;
        let Some(into) = out.as_mut() else {
            let mut first = s.clone();
            first.events.iter_mut().for_each(|e| e.at_s += offset);
            out = Some(first);
            continue;
        };
        if !overlapping {
            into.events.extend(s.events.iter().map(|e| StampedeEvent {
                at_s: e.at_s + offset,
                ..e.clone()
            }));
            continue;
        }
        add(&mut into.requests, s.requests);
        for (k, e) in s.events.iter().enumerate() {
            match into.events.get_mut(k) {
                Some(to) => add_event(to, e),
                None => into.events.push(StampedeEvent {
                    origin_fetches: None,
                    ..e.clone()
                }),
            }
        }
    }
    let Some(mut merged) = out else {
        return Ok(None);
    };
    if overlapping && runs.iter().filter(|(_, r)| r.stampede.is_some()).count() > 1 {
        merged
            .events
            .iter_mut()
            .for_each(|e| e.origin_fetches = None);
    }
    merged.leaders = finish(leaders)?;
    merged.waiters = finish(waiters)?;
    Ok(Some(merged))
}

/// One shard's event added to the whole's.
fn add_event(into: &mut StampedeEvent, e: &StampedeEvent) {
    for (a, b) in [
        (&mut into.sent, e.sent),
        (&mut into.leaders, e.leaders),
        (&mut into.waiters, e.waiters),
        (&mut into.unclassified, e.unclassified),
        (&mut into.server_errors, e.server_errors),
        (&mut into.errors, e.errors),
        (&mut into.unfinished, e.unfinished),
    ] {
        add(a, b);
    }
    into.at_s = into.at_s.min(e.at_s);
    into.spread_ns = into.spread_ns.max(e.spread_ns);
}

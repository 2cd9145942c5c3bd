//! The report's stampede block (`--stampede`): per event, how many fetches reached the
//! origin, and the latencies of the answers the cache forwarded (the leaders) and of those
//! it served itself (the waiters).

use vload_schema::StampedeRecord;

use super::rows::row;
use crate::latency::LatencySummary;
use crate::units::{count, duration_ns};

pub(super) fn render_stampede(out: &mut String, s: &StampedeRecord) {
    let events = s.events.len();
    row(
        out,
        "Stampede",
        "[requests, every, events, after]",
        &format!(
            "{}, {} s, {events}, {}",
            count(s.requests),
            s.every_s,
            after(s)
        ),
    );
    if events == 0 {
        row(out, "", "", "no event ran (the window ended first)");
        return;
    }
    row(out, "", "[origin fetches per event]", &fetches(s));
    row(
        out,
        "",
        "[leaders: p50, p99]",
        &latency(&s.leaders, "the cache forwarded"),
    );
    let waiters = latency(&s.waiters, "the cache served itself");
    row(out, "", "[waiters: p50, p99]", &waiters);
    let mut spreads: Vec<u64> = s.events.iter().map(|e| e.spread_ns).collect();
    spreads.sort_unstable();
    row(
        out,
        "",
        "[send spread: median, most]",
        &format!(
            "{}, {}  (first write to last, each event)",
            duration_ns(spreads[spreads.len() / 2] as f64),
            duration_ns(*spreads.last().expect("events") as f64)
        ),
    );
    let sum = |f: fn(&vload_schema::StampedeEvent) -> u64| s.events.iter().map(f).sum::<u64>();
    let (failed, unfinished, unclassified, errors5) = (
        sum(|e| e.errors),
        sum(|e| e.unfinished),
        sum(|e| e.unclassified),
        sum(|e| e.server_errors),
    );
    if failed + unfinished + unclassified + errors5 > 0 {
        row(
            out,
            "",
            "[failed, open, no cache word, 5xx]",
            &[failed, unfinished, unclassified, errors5]
                .map(count)
                .join(", "),
        );
    }
}

/// A latency record's p50 and p99 (or, too few for a median worth the name, its range).
fn latency(l: &Option<vload_schema::LatencyRecord>, whose: &str) -> String {
    let Some(l) = l.as_ref().and_then(|l| LatencySummary::of(l).ok()) else {
        return format!("none  (no answer {whose})");
    };
    let ns = |v: Option<u64>| v.map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64));
    match (l.quantile("p50"), l.quantile("p99")) {
        (Some(p50), p99) => format!(
            "{}, {}  ({} answers {whose})",
            ns(Some(p50)),
            ns(p99.or(l.max_ns)),
            count(l.n)
        ),
        (None, _) => format!(
            "min {}, max {}  ({} answers {whose})",
            ns(l.min_ns),
            ns(l.max_ns),
            count(l.n)
        ),
    }
}

/// Fetches per event: the origin's own count where it was read, else the cache's word.
fn fetches(s: &StampedeRecord) -> String {
    let events = s.events.len();
    let counted: Vec<u64> = s.events.iter().filter_map(|e| e.origin_fetches).collect();
    let leaders: u64 = s.events.iter().map(|e| e.leaders).sum();
    let per = |n: u64, of: usize| format!("{:.2}", n as f64 / of.max(1) as f64);
    if counted.len() == events {
        let exactly_one = counted.iter().filter(|&&n| n == 1).count();
        format!(
            "{} by the origin's count ({exactly_one} of {events} events exactly 1); leaders by the cache's word {}",
            per(counted.iter().sum(), events),
            per(leaders, events)
        )
    } else {
        let exactly_one = s.events.iter().filter(|e| e.leaders == 1).count();
        format!(
            "{} by the cache's word ({exactly_one} of {events} events exactly 1; --stampede-origin counts at the origin)",
            per(leaders, events)
        )
    }
}

/// What each event followed, and its object.
fn after(s: &StampedeRecord) -> String {
    let target = crate::units::clean(&s.target);
    match s.on.as_str() {
        "purge" => format!("a purge of {target}"),
        "new" => format!("nothing: each event a new object, {target} with v=K added"),
        _ => format!("each expiry of {target}"),
    }
}

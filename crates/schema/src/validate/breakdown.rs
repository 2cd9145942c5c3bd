//! Each breakdown is a partition of the measured window: its groups add up to the totals.

use std::collections::BTreeSet;

use super::fields::{MAX_COUNT, bounded, invalid};
use crate::{Breakdown, GROUP_LIMIT, GroupCache, RunFile, SchemaError, StatusClasses};

/// What a breakdown's groups must add up to.
#[derive(Debug, Default, PartialEq, Eq)]
struct Sums {
    requests: u64,
    errors: u64,
    latency_n: u64,
    bytes_in: u64,
    classes: StatusClasses,
    /// Hits, misses and unknown, as `cache` counts them.
    cache: [u64; 3],
}

impl Sums {
    fn of_run(run: &RunFile) -> Sums {
        let t = &run.totals;
        let mut classes = StatusClasses::default();
        for (code, n) in &t.status_codes {
            classes.count_n(*code, *n);
        }
        Sums {
            requests: t.completed,
            errors: t.errors.values().map(|e| e.count).sum(),
            latency_n: run.latency.primary().moments.n,
            bytes_in: t.bytes_in,
            classes,
            cache: [run.cache.hit, run.cache.miss, run.cache.unknown],
        }
    }

    fn of(breakdown: &Breakdown) -> Sums {
        let mut sums = Sums::default();
        for g in &breakdown.groups {
            sums.requests += g.requests;
            sums.errors += g.errors;
            sums.latency_n += g.latency.moments.n;
            sums.bytes_in += g.bytes_in;
            sums.classes.add(&g.status_classes);
            let c: &GroupCache = &g.cache;
            sums.cache[0] += c.hit + c.stale;
            sums.cache[1] += c.miss + c.pass;
            sums.cache[2] += c.unknown;
        }
        sums
    }
}

impl RunFile {
    pub(super) fn validate_breakdowns(&self) -> Result<(), SchemaError> {
        let whole = Sums::of_run(self);
        let mut seen = BTreeSet::new();
        for (i, b) in self.breakdowns.iter().enumerate() {
            let field = format!("breakdowns[{i}]");
            if !seen.insert(b.by.as_str()) {
                return Err(invalid(
                    format!("{field}.by"),
                    format!("a second breakdown by {}", b.by),
                ));
            }
            validate_groups(&field, b)?;
            let sums = Sums::of(b);
            if sums != whole {
                return Err(invalid(
                    field,
                    format!(
                        "its groups add up to {sums:?}, but the run's totals are {whole:?}: a breakdown must partition the window"
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn validate_groups(field: &str, b: &Breakdown) -> Result<(), SchemaError> {
    // The named groups, the fold and one group for requests without a name.
    if b.groups.len() > GROUP_LIMIT + 2 {
        return Err(invalid(
            format!("{field}.groups"),
            format!(
                "{} groups, beyond the {GROUP_LIMIT} vload keeps by name",
                b.groups.len()
            ),
        ));
    }
    let mut names = BTreeSet::new();
    for (j, g) in b.groups.iter().enumerate() {
        let field = format!("{field}.groups[{j}]");
        if !names.insert(g.name.as_str()) {
            return Err(invalid(
                format!("{field}.name"),
                format!("a second group named {:?}", g.name),
            ));
        }
        bounded(&format!("{field}.requests"), g.requests, MAX_COUNT)?;
        bounded(&format!("{field}.bytes_in"), g.bytes_in, MAX_COUNT)?;
        g.latency.validate(&format!("{field}.latency"))?;
        for (name, record) in [("first_byte", &g.first_byte), ("transfer", &g.transfer)] {
            if let Some(record) = record {
                record.validate(&format!("{field}.{name}"))?;
                if record.moments.n > g.requests - g.errors.min(g.requests) {
                    return Err(invalid(
                        format!("{field}.{name}"),
                        format!("{} values for {} responses", record.moments.n, g.requests),
                    ));
                }
            }
        }
        let c = &g.status_classes;
        let responses = [c.s1xx, c.s2xx, c.s3xx, c.s4xx, c.s5xx]
            .iter()
            .try_fold(0u64, |sum, n| sum.checked_add(*n));
        let k = &g.cache;
        let classified = [k.hit, k.stale, k.miss, k.pass, k.unknown]
            .iter()
            .try_fold(0u64, |sum, n| sum.checked_add(*n));
        let balanced = responses.zip(classified).is_some_and(|(r, k)| {
            r == k
                && r.checked_add(g.errors) == Some(g.requests)
                && g.latency.moments.n <= g.requests
        });
        if !balanced {
            return Err(invalid(
                field,
                format!(
                    "{} requests, but {:?} responses, {:?} classified by the cache, {} errors and {} latencies",
                    g.requests, responses, classified, g.errors, g.latency.moments.n
                ),
            ));
        }
    }
    Ok(())
}

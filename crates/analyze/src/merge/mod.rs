//! Exact merges: several run files (shards, machines) into one.

use std::collections::BTreeMap;

use vload_schema::{
    ClientHealth, EncodedHistogram, HealthSignal, HealthVerdict, Interval, RunFile, SchemaError,
};

mod add;
mod breakdowns;
mod check;
mod error;
mod stages;
mod stampede;

use add::{Accumulator, OPTIONAL, add, add_layers, add_record, finish};
pub use error::MergeError;

pub(crate) use check::epoch_ms;
pub use check::{check_distinct, check_plans, check_shards};
use stages::merge_stages;

/// Merges runs exactly: counts add, histograms add, moments merge by Chan's formula, and
/// intervals that fall in the same wall-clock second add up. Runs that overlap in time are
/// taken as shards of one attack (the window is the longest); runs that do not overlap, as
/// consecutive parts (windows add).
///
/// # Errors
/// A histogram does not decode or has another layout. Plans are not checked here: see
/// [`check_plans`].
///
/// # Panics
/// If `runs` is empty.
pub fn merge(runs: &[(String, RunFile)]) -> Result<RunFile, MergeError> {
    let (_, first) = runs.first().expect("merge needs a run");
    if runs.len() == 1 {
        return Ok(first.clone());
    }
    check_distinct(runs)?;
    let starts: Vec<i64> = runs
        .iter()
        .map(|(_, r)| epoch_ms(&r.started_at).unwrap_or(0))
        .collect();
    let earliest = *starts.iter().min().expect("non-empty");
    let mut sums = Sums::default();
    for ((name, run), start) in runs.iter().zip(&starts) {
        sums.add(name, run, (start - earliest) as f64 / 1000.0)?;
    }
    let mut out = first.clone();
    // The merge is the whole attack.
    out.plan.shard = None;
    // Each run's server counters cover its own span; shards share one server, so adding them
    // would count it several times. A merged report leaves them out.
    out.server = None;
    let overlapping = overlapping(runs, &starts);
    out.window = merged_window(runs, &starts, overlapping);
    out.stages = merge_stages(runs, &starts, overlapping)?;
    out.breakdowns = breakdowns::merge_breakdowns(runs)?;
    // A sweep's answer belongs to its own steps.
    out.sweep = None;
    out.stampede = stampede::merge_stampedes(runs, &starts, overlapping)?;
    // An origin plan's steps are offsets from one attack's start: they hold for one run.
    if runs.len() > 1 {
        out.origin_plan = None;
    }
    // The runs' arrival samples as one; the checks are the merge's own, made from the
    // merged data by whoever reads it (the first run's would be reported as the whole's).
    out.arrivals = vload_schema::ArrivalSample::combine(
        runs.iter()
            .filter_map(|(_, r)| r.arrivals.as_ref())
            .map(|a| (a.sends, a.gaps.clone())),
    );
    out.checks = Vec::new();
    sums.finish(&mut out)?;
    out.client_health = merge_health(runs);
    out.interrupted = runs.iter().any(|(_, r)| r.interrupted);
    out.run_id = merged_id(runs);
    out.plan.server_address = Some(
        distinct(runs.iter().map(|(_, r)| {
            r.plan
                .server_address
                .clone()
                .unwrap_or_else(|| r.plan.target.clone())
        }))
        .join(", "),
    );
    out.started_at = runs
        .iter()
        .zip(&starts)
        .min_by_key(|(_, s)| **s)
        .map(|((_, r), _)| r.started_at.clone())
        .unwrap_or_default();
    let labels = distinct(runs.iter().filter_map(|(_, r)| r.label.clone()));
    out.label = (!labels.is_empty()).then(|| labels.join("+"));
    out.environment.hostname =
        distinct(runs.iter().map(|(_, r)| r.environment.hostname.clone())).join(",");
    out.environment.arch = distinct(runs.iter().map(|(_, r)| r.environment.arch.clone())).join(",");
    Ok(out)
}

/// True when every run began before every other ended: shards of one attack.
fn overlapping(runs: &[(String, RunFile)], starts: &[i64]) -> bool {
    runs.iter().zip(starts).all(|((_, r), s)| {
        let end = s.saturating_add(((r.window.warmup_s + r.window.measured_s) * 1000.0) as i64);
        starts.iter().all(|s2| *s2 <= end)
    })
}

/// Runs that overlap in time are shards of one attack (the window is the longest, or,
/// when they began more than [`check::TOGETHER_MS`] apart, the union of their measured windows on
/// the wall clock, which the per-second data spans); runs that do not are consecutive parts
/// (windows add).
fn merged_window(
    runs: &[(String, RunFile)],
    starts: &[i64],
    overlapping: bool,
) -> vload_schema::Window {
    let windows = runs.iter().map(|(_, r)| r.window);
    if overlapping {
        let mut window = windows
            .reduce(|acc, w| vload_schema::Window {
                warmup_s: acc.warmup_s.max(w.warmup_s),
                measured_s: acc.measured_s.max(w.measured_s),
                wait_s: acc.wait_s.max(w.wait_s),
                start_offset_s: None,
            })
            .expect("runs are not empty");
        let spread = starts.iter().max().unwrap_or(&0) - starts.iter().min().unwrap_or(&0);
        if spread > check::TOGETHER_MS {
            // Measured windows on the wall clock, in seconds from the earliest start.
            let earliest = *starts.iter().min().unwrap_or(&0);
            let spans = runs.iter().zip(starts).map(|((_, r), s)| {
                let from = (s - earliest) as f64 / 1000.0 + r.window.warmup_s;
                (from, from + r.window.measured_s)
            });
            let (from, to) = spans.fold((f64::INFINITY, 0.0f64), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            });
            window.measured_s = window.measured_s.max(to - from);
        }
        window
    } else {
        let sum = |f: fn(&vload_schema::Window) -> f64| {
            runs.iter().map(|(_, r)| f(&r.window)).sum::<f64>()
        };
        vload_schema::Window {
            warmup_s: sum(|w| w.warmup_s),
            measured_s: sum(|w| w.measured_s),
            wait_s: sum(|w| w.wait_s),
            start_offset_s: None,
        }
    }
}

/// Everything that adds up over the runs.
struct Sums {
    totals: vload_schema::Totals,
    cache: vload_schema::CacheCounts,
    /// Every latency record adds up, the optional ones (hit, miss, TLS, queue wait) included:
    /// keeping the first run's would report one shard's hit latency as the whole attack's.
    records: [Accumulator; OPTIONAL.len()],
    service: Accumulator,
    hiccup: Accumulator,
    /// Intervals by wall-clock second since the earliest run's start.
    intervals: BTreeMap<i64, (Interval, hdrhistogram::Histogram<u64>)>,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            totals: zero_totals(),
            cache: Default::default(),
            records: Default::default(),
            service: None,
            hiccup: None,
            intervals: BTreeMap::new(),
        }
    }
}

impl Sums {
    /// Adds a run that started `offset_s` after the earliest.
    fn add(&mut self, name: &str, run: &RunFile, offset_s: f64) -> Result<(), MergeError> {
        add_totals(&mut self.totals, &run.totals);
        let (into, c) = (&mut self.cache, &run.cache);
        add(&mut into.hit, c.hit);
        add(&mut into.miss, c.miss);
        add(&mut into.unknown, c.unknown);
        add(&mut into.by_source.x_varnish, c.by_source.x_varnish);
        add(&mut into.by_source.x_cache, c.by_source.x_cache);
        add(&mut into.by_source.age, c.by_source.age);
        add(&mut into.by_source.cache_status, c.by_source.cache_status);
        add_layers(&mut into.layers, &c.layers);
        vload_schema::StaleAges::merge_into(&mut into.stale_ages, c.stale_ages.as_ref());
        for (acc, field) in self.records.iter_mut().zip(OPTIONAL) {
            if let Some(r) = field(&run.latency) {
                add_record(acc, r, name)?;
            }
        }
        add_record(&mut self.service, &run.latency.service, name)?;
        add_record(&mut self.hiccup, &run.latency.hiccup, name)?;
        for interval in &run.intervals {
            add_interval(
                &mut self.intervals,
                offset_s + interval.start_s,
                interval,
                name,
            )?;
        }
        Ok(())
    }

    /// Writes the sums into the merged run.
    fn finish(self, out: &mut RunFile) -> Result<(), MergeError> {
        out.totals = self.totals;
        out.cache = self.cache;
        let [
            response,
            lag,
            hit,
            miss,
            tls,
            connect,
            queue,
            first_byte,
            transfer,
            origin,
            proxy_added,
        ] = self.records;
        out.latency.response = finish(response)?;
        out.latency.dispatch_lag = finish(lag)?;
        out.latency.hit = finish(hit)?;
        out.latency.miss = finish(miss)?;
        out.latency.tls_handshake = finish(tls)?;
        out.latency.tcp_connect = finish(connect)?;
        out.latency.queue_wait = finish(queue)?;
        out.latency.first_byte = finish(first_byte)?;
        out.latency.transfer = finish(transfer)?;
        out.latency.origin = finish(origin)?;
        out.latency.proxy_added = finish(proxy_added)?;
        out.latency.service = finish(self.service)?.expect("every run has service time");
        out.latency.hiccup = finish(self.hiccup)?.expect("every run has a hiccup record");
        out.intervals = self
            .intervals
            .into_values()
            .map(|(mut interval, h)| {
                interval.latency.histogram = EncodedHistogram::encode(&h)?;
                Ok(interval)
            })
            .collect::<Result<_, SchemaError>>()?;
        Ok(())
    }
}

/// The merge's own run id, from its inputs' (FNV-1a over the sorted ids): two merges of
/// different runs never share one, and a merge merged again is told from its parts.
fn merged_id(runs: &[(String, RunFile)]) -> String {
    let mut ids: Vec<&str> = runs.iter().map(|(_, r)| r.run_id.as_str()).collect();
    ids.sort_unstable();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in ids.join("\n").bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("merge-of-{}-{hash:016x}", runs.len())
}

fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for item in items {
        if !v.contains(&item) {
            v.push(item);
        }
    }
    v
}

fn zero_totals() -> vload_schema::Totals {
    vload_schema::Totals {
        intended: 0,
        sent: 0,
        completed: 0,
        status_codes: BTreeMap::new(),
        errors: BTreeMap::new(),
        bytes_in: 0,
        bytes_out: 0,
        // Known for the merge only when every part counted it.
        wire_bytes_in: Some(0),
        connections_opened: 0,
        late_sends: 0,
        backlog: 0,
        out_of_range: 0,
        unsent: 0,
        unfinished: 0,
        stray_closes: 0,
        server_timing_beyond_wait: 0,
        timeouts_answered_late: 0,
        connections_unused: 0,
        queue_timeouts: 0,
        queued: 0,
        handshakes: None,
    }
}

fn add_totals(into: &mut vload_schema::Totals, t: &vload_schema::Totals) {
    add(&mut into.intended, t.intended);
    add(&mut into.sent, t.sent);
    add(&mut into.completed, t.completed);
    for (code, n) in &t.status_codes {
        add(into.status_codes.entry(*code).or_default(), *n);
    }
    for (kind, e) in &t.errors {
        let slot = into
            .errors
            .entry(*kind)
            .or_insert_with(|| vload_schema::ErrorCount {
                count: 0,
                sample: e.sample.clone(),
            });
        add(&mut slot.count, e.count);
    }
    add(&mut into.bytes_in, t.bytes_in);
    add(&mut into.bytes_out, t.bytes_out);
    into.wire_bytes_in = into
        .wire_bytes_in
        .zip(t.wire_bytes_in)
        .map(|(a, b)| a.saturating_add(b));
    add(&mut into.connections_opened, t.connections_opened);
    add(&mut into.late_sends, t.late_sends);
    add(&mut into.backlog, t.backlog);
    add(&mut into.out_of_range, t.out_of_range);
    add(&mut into.unsent, t.unsent);
    add(&mut into.unfinished, t.unfinished);
    add(&mut into.stray_closes, t.stray_closes);
    add(
        &mut into.server_timing_beyond_wait,
        t.server_timing_beyond_wait,
    );
    add(&mut into.timeouts_answered_late, t.timeouts_answered_late);
    add(&mut into.connections_unused, t.connections_unused);
    add(&mut into.queue_timeouts, t.queue_timeouts);
    add(&mut into.queued, t.queued);
    if let Some(h) = &t.handshakes {
        into.handshakes.get_or_insert_default().add(h);
    }
}

fn add_interval(
    intervals: &mut BTreeMap<i64, (Interval, hdrhistogram::Histogram<u64>)>,
    offset_s: f64,
    interval: &Interval,
    name: &str,
) -> Result<(), MergeError> {
    let second = offset_s.round() as i64;
    let h = interval.latency.histogram.decode()?;
    match intervals.get_mut(&second) {
        None => {
            let mut first = interval.clone();
            first.start_s = second as f64;
            intervals.insert(second, (first, h));
        }
        Some((into, sum)) => {
            sum.add(&h)
                .map_err(|_| MergeError::Layout(name.to_owned()))?;
            into.latency.moments.merge(&interval.latency.moments);
            into.duration_s = into.duration_s.max(interval.duration_s);
            into.warmup &= interval.warmup;
            add(&mut into.intended, interval.intended);
            add(&mut into.sent, interval.sent);
            add(&mut into.completed, interval.completed);
            for (kind, n) in &interval.errors {
                add(into.errors.entry(*kind).or_default(), *n);
            }
            into.status_classes.add(&interval.status_classes);
            add(&mut into.bytes_in, interval.bytes_in);
            add(&mut into.bytes_out, interval.bytes_out);
            add(&mut into.connections_opened, interval.connections_opened);
            add(&mut into.in_flight, interval.in_flight);
            add(&mut into.unsent, interval.unsent);
            add(&mut into.unfinished, interval.unfinished);
            add(&mut into.stray_closes, interval.stray_closes);
            add(&mut into.hits, interval.hits);
            add(&mut into.misses, interval.misses);
            add(&mut into.stale, interval.stale);
            vload_schema::StaleAges::merge_into(&mut into.stale_ages, interval.stale_ages.as_ref());
            add_layers(&mut into.layers, &interval.layers);
            add(&mut into.purged_hits, interval.purged_hits);
            add(&mut into.purged_misses, interval.purged_misses);
            into.server_cpu_s = None;
            into.server = None;
        }
    }
    Ok(())
}

fn merge_health(runs: &[(String, RunFile)]) -> ClientHealth {
    let hs: Vec<&ClientHealth> = runs.iter().map(|(_, r)| &r.client_health).collect();
    let worst = hs.iter().map(|h| h.verdict).max();
    let max = |f: fn(&ClientHealth) -> f64| hs.iter().map(|h| f(h)).fold(0.0, f64::max);
    let max_opt = |f: fn(&ClientHealth) -> Option<u64>| hs.iter().filter_map(|h| f(h)).max();
    ClientHealth {
        cpu_s: hs.iter().map(|h| h.cpu_s).sum(),
        cpu_util: max(|h| h.cpu_util),
        max_thread_busy: max(|h| h.max_thread_busy),
        peak_connections: hs
            .iter()
            .filter_map(|h| h.peak_connections)
            .reduce(u64::saturating_add),
        dispatch_lag_p99_ns: max_opt(|h| h.dispatch_lag_p99_ns),
        late_sends: hs.iter().fold(0, |n, h| n.saturating_add(h.late_sends)),
        hiccup_p99_ns: max_opt(|h| h.hiccup_p99_ns),
        fd_limit: hs.iter().map(|h| h.fd_limit).min().unwrap_or(0),
        fd_needed: hs.iter().map(|h| h.fd_needed).max().unwrap_or(0),
        verdict: worst.unwrap_or(HealthVerdict::Ok),
        reasons: runs
            .iter()
            .flat_map(|(name, r)| {
                r.client_health
                    .reasons
                    .iter()
                    .map(move |reason| format!("{name}: {reason}"))
            })
            .collect(),
        max_thread_waiting: hs
            .iter()
            .filter_map(|h| h.max_thread_waiting)
            .reduce(f64::max),
        signals: runs
            .iter()
            .flat_map(|(name, r)| {
                r.client_health.signals.iter().map(move |s| HealthSignal {
                    message: format!("{name}: {}", s.message),
                    ..s.clone()
                })
            })
            .collect(),
    }
}

//! What a run amounts to: the numbers every report prints.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::latency::{LatencySummary, QUANTILES, samples_needed};
use vload_schema::{
    CacheCounts, ClientHealth, ErrorCount, ErrorKind, LatencyKind, LatencyRecord, Mode, RunFile,
    SchemaError,
};

/// Everything a report prints about one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Label of the run, if any.
    pub label: Option<String>,
    /// Load model.
    pub mode: Mode,
    /// The plan in words, e.g. `HTTP/1.1, closed loop, 50 connections, 10 s, 1 thread`.
    pub plan: String,
    /// Which latency the headline numbers are.
    pub latency_kind: LatencyKind,
    /// Requests that ended in the measured window.
    pub requests: u64,
    /// Requests due per second of the measured window.
    pub rate_per_s: f64,
    /// Successful (2xx/3xx) responses per second, wait included.
    pub throughput_per_s: f64,
    /// Measured window in seconds.
    pub measured_s: f64,
    /// Wait for the last responses in seconds.
    pub wait_s: f64,
    /// Warm-up in seconds (excluded).
    pub warmup_s: f64,
    /// The primary latency.
    pub latency: LatencySummary,
    /// Service time, when the primary latency is response time.
    pub service: Option<LatencySummary>,
    /// Dispatch lag (open loop).
    pub dispatch_lag: Option<LatencySummary>,
    /// Response body bytes in.
    pub bytes_in: u64,
    /// Request body bytes out.
    pub bytes_out: u64,
    /// Share of the requests due that got an expected status.
    pub success_ratio: Option<f64>,
    /// The statuses that count as success, as written: `2xx-3xx`.
    pub expected: String,
    /// The ledger: requests due, sent, never sent, unfinished (completed is `requests`).
    pub intended: u64,
    /// Requests sent (or failed trying).
    pub sent: u64,
    /// Requests sent that had no outcome when the run stopped waiting.
    pub unfinished: u64,
    /// Of the request timeouts, those that never left vload's queue.
    pub queue_timeouts: u64,
    /// Of the request timeouts, those whose whole answer was waiting when vload looked.
    pub timeouts_answered_late: u64,
    /// Connections closed for bytes the server sent after a complete response.
    pub stray_closes: u64,
    /// Responses by status code.
    pub status_codes: BTreeMap<u16, u64>,
    /// Failures by kind.
    pub errors: BTreeMap<ErrorKind, ErrorCount>,
    /// Open loop: due requests never completed.
    pub backlog: u64,
    /// Open loop: requests dispatched over 1 ms late.
    pub late_sends: u64,
    /// Open loop: requests due in the window that were never sent (a frozen client).
    pub unsent: u64,
    /// Open loop: requests that waited for a free connection.
    pub queued: u64,
    /// Open loop: how long those requests waited.
    pub queue_wait: Option<LatencySummary>,
    /// Where the load was sent, e.g. `127.0.0.1:6081`.
    pub server_address: Option<String>,
    /// Cache classification.
    pub cache: CacheCounts,
    /// Primary latency of cache hits, when responses were classified.
    pub hit: Option<LatencySummary>,
    /// Primary latency of classified non-hits.
    pub miss: Option<LatencySummary>,
    /// TCP connections opened in the measured window.
    pub connections_opened: u64,
    /// TCP connections opened during the warm-up (a closed loop opens them all there).
    pub connections_opened_warmup: u64,
    /// Of the window's, those opened in its first second (a closed loop's, all of them).
    pub connections_opened_first_s: u64,
    /// TLS handshake times, for https.
    pub tls_handshake: Option<LatencySummary>,
    /// TCP connect times (the accept queue's wait shows here), warm-up included; for
    /// HTTP/3, QUIC's handshakes (one round trip, TLS 1.3 in it).
    pub tcp_connect: Option<LatencySummary>,
    /// The run spoke HTTP/3: its connections are QUIC's, made by one handshake.
    pub quic: bool,
    /// HTTP/3: the kinds of its QUIC handshakes and its early requests.
    pub handshakes: Option<vload_schema::Handshakes>,
    /// The responses' wait for the first byte and transfer, and the proxy's share.
    pub phases: Option<crate::phases::PhaseSummary>,
    /// Target files the requests came from.
    pub targets: Option<vload_schema::TargetsRecord>,
    /// The synthetic cache workload requests were drawn from.
    pub catalogue: Option<vload_schema::CatalogueRecord>,
    /// What the model says a cache should have hit for it.
    pub cache_model: Option<vload_schema::CacheModelRecord>,
    /// The hit ratio of an LRU holding as many objects as Varnish held at the window's end
    /// (its `n_object`), warm: (objects, hit ratio). Varnish's own storage overhead is then
    /// out of the comparison, and what is left is how far its LRU is from an exact one.
    pub lru_of_held: Option<(u64, f64)>,
    /// The warm-up run before the attack, until the cache was warm.
    pub warmed: Option<vload_schema::WarmRecord>,
    /// Purges sent beside the load.
    pub purges: Option<vload_schema::PurgeRecord>,
    /// Stampedes beside the load (`--stampede`).
    pub stampede: Option<vload_schema::StampedeRecord>,
    /// What each burst of purges did.
    pub purge_effects: Vec<crate::purge::PurgeEffect>,
    /// Client health and verdict.
    pub health: ClientHealth,
    /// The run was stopped early.
    pub interrupted: bool,
    /// The server's own account (`--server-stats`, `--watch-pid`), beside vload's.
    pub server: Option<ServerSummary>,
    /// A rate plan's stages or a sweep's steps (a sweep's in rising rate).
    pub stages: Vec<crate::staged::StageSummary>,
    /// The window's requests by host, class, set, pass, status class and cache state.
    pub breakdowns: Vec<crate::breakdown::BreakdownSummary>,
    /// A sweep's answer.
    pub sweep: Option<crate::staged::SweepSummary>,
    /// The run's checks of itself: arrivals, convergence, stationarity.
    pub checks: Vec<vload_schema::RunCheck>,
}

/// The server's counters and CPU next to vload's own counts for the same span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSummary {
    /// The server's counters, as recorded.
    pub stats: Option<vload_schema::StatsRecord>,
    /// vload's counts over the span the server's counters cover.
    pub vload_span: Option<SpanCounts>,
    /// The watched process's CPU over the measured window.
    pub process: Option<vload_schema::ProcessRecord>,
    /// Server CPU per completed request over the measured window, in ns.
    pub cpu_per_request_ns: Option<f64>,
    /// Cores the server kept busy on average over the measured window.
    pub cores: Option<f64>,
    /// Where the server's account and vload's disagree, or the server reports trouble.
    pub findings: Vec<String>,
    /// What the server's counters show that is vload's own doing, said so.
    pub notes: Vec<String>,
}

/// vload's counts over one span of the attack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SpanCounts {
    /// Requests completed.
    pub completed: u64,
    /// Responses classified as hits.
    pub hits: u64,
    /// Responses classified as not hits (misses and passes).
    pub misses: u64,
    /// Connections opened.
    pub connections: u64,
    /// Connections closed without carrying a request.
    pub unused: u64,
}

impl ServerSummary {
    fn of(run: &RunFile) -> Option<ServerSummary> {
        let server = run.server.as_ref()?;
        let measured = SpanCounts {
            completed: run.totals.completed,
            hits: run.cache.hit,
            misses: run.cache.miss,
            connections: run.totals.connections_opened,
            unused: run.totals.connections_unused,
        };
        let whole = SpanCounts {
            completed: run.intervals.iter().map(|i| i.completed).sum(),
            hits: run.intervals.iter().map(|i| i.hits).sum(),
            misses: run.intervals.iter().map(|i| i.misses).sum(),
            connections: run.intervals.iter().map(|i| i.connections_opened).sum(),
            unused: run.totals.connections_unused,
        };
        let mut findings = Vec::new();
        let mut notes = Vec::new();
        let vload_span = server.stats.as_ref().map(|v| {
            let span = if v.covers == "attack" {
                whole
            } else {
                measured
            };
            let slack = 2 * u64::from(crate::layers::in_flight_bound(run)) + span.completed / 100;
            let span = match crate::layers::deeper_layer(run, v, span.completed, slack) {
                Some((layer, counts)) => {
                    notes.push(format!(
                        "these counters are of layer {layer} of the cache path (it served what vload's layer {layer} figures say reached it): compared with those"
                    ));
                    SpanCounts {
                        completed: counts.reached,
                        hits: counts.hits,
                        misses: counts.misses,
                        ..span
                    }
                }
                None => span,
            };
            let (found, noted) = stats_findings(v, span, crate::layers::in_flight_bound(run));
            findings.extend(found);
            notes.extend(noted);
            span
        });
        let seconds = run.window.measured_s + run.window.wait_s;
        let cpu = server
            .process
            .as_ref()
            .map(vload_schema::ProcessRecord::cpu_s);
        Some(ServerSummary {
            stats: server.stats.clone(),
            vload_span,
            process: server.process.clone(),
            cpu_per_request_ns: cpu
                .filter(|_| run.totals.completed > 0)
                .map(|cpu| cpu * 1e9 / run.totals.completed as f64),
            cores: cpu.filter(|_| seconds > 0.0).map(|cpu| cpu / seconds),
            findings,
            notes,
        })
    }
}

/// What the server's counters say that vload's do not, or that contradicts them, and the
/// troubles its counters name (findings); and what in them is vload's own doing (notes).
fn stats_findings(
    v: &vload_schema::StatsRecord,
    vload: SpanCounts,
    connections: u32,
) -> (Vec<String>, Vec<String>) {
    use crate::units::{count, percent};
    let name = v.display_name();
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    // Requests in flight at the span's edges may fall on either side of it.
    let slack = 2 * u64::from(connections) + vload.completed / 100;
    // The requests the cache served (lookups and passes: not PURGE/BAN, nor Varnish's
    // waiting-list wake-ups, which client_req also counts).
    if let Some(requests) = v.common.served()
        && requests.abs_diff(vload.completed) > slack
    {
        let stale = if v.source == "varnish" {
            ", or its counters were stale (start varnishd with -p feature=+busy_stats_rate)"
        } else {
            ""
        };
        let what = if v.common.lookups().is_some_and(|l| l > 0) {
            " (hits, misses and passes)"
        } else {
            ""
        };
        findings.push(format!(
            "{name} counted {} client requests{what}, vload completed {}: another client is using this {name}, or requests were lost between them{stale}",
            count(requests),
            count(vload.completed)
        ));
    }
    // Like with like: the server's hits over what it served (passes count as not hits, as
    // vload classifies them), vload's over the responses it could classify.
    let classified = vload.hits + vload.misses;
    if let (Some(served), Some(hits)) = (v.common.served(), v.common.hits)
        && served > 0
        && classified > 0
    {
        let theirs = hits as f64 / served as f64;
        let ours = vload.hits as f64 / classified as f64;
        if (theirs - ours).abs() > 0.01 {
            findings.push(format!(
                "hit ratio disagrees: {name} {} (hits / requests served), vload {} (from response headers): a layer in between rewrites the cache headers, or the classification does not fit this setup",
                percent(theirs),
                percent(ours)
            ));
        }
    }
    for trouble in &v.troubles {
        // HAProxy counts a connection closed before its first request as a request error:
        // as many as vload closed unused are vload's doing (measured against HAProxy 2.6:
        // 10 connections opened and closed without a request, ereq +10).
        let own = (v.source == "haproxy" && trouble.counter == "frontend.ereq")
            .then_some(vload.unused)
            .filter(|n| *n > 0);
        match own {
            Some(own) if trouble.value <= own => notes.push(format!(
                "{name}'s {} {} are vload's: it closed {} connections that never carried a request (at the run's end, or idle), which {name} counts as request errors",
                trouble.counter,
                count(trouble.value),
                count(own)
            )),
            _ => findings.push(format!(
                "{} ({} {}{})",
                trouble.meaning,
                trouble.counter,
                count(trouble.value),
                own.map_or_else(String::new, |own| format!(
                    ", of which up to {} are vload's connections closed without a request",
                    count(own)
                ))
            )),
        }
    }
    (findings, notes)
}

impl Summary {
    /// Summarises a run file.
    ///
    /// # Errors
    /// A histogram in the file does not decode.
    pub fn of(run: &RunFile) -> Result<Summary, SchemaError> {
        let mut summary = Summary::of_raw(run)?;
        summary.clean();
        Ok(summary)
    }

    /// Every string that came from the run file or a server, made safe to print.
    fn clean(&mut self) {
        let clean = |s: &mut String| *s = crate::units::clean(s).into_owned();
        self.label.as_mut().map(clean);
        self.checks.iter_mut().for_each(|c| {
            clean(&mut c.name);
            clean(&mut c.message);
        });
        self.server_address.as_mut().map(clean);
        self.errors.values_mut().for_each(|e| clean(&mut e.sample));
        if let Some(t) = &mut self.targets {
            t.sets.iter_mut().for_each(|set| {
                clean(&mut set.file);
                clean(&mut set.format);
            });
            clean(&mut t.pick);
        }
        self.health.reasons.iter_mut().for_each(clean);
        self.health.signals.iter_mut().for_each(|s| {
            clean(&mut s.message);
            clean(&mut s.signal);
        });
        if let Some(server) = &mut self.server {
            server.findings.iter_mut().for_each(clean);
            server.notes.iter_mut().for_each(clean);
            if let Some(v) = &mut server.stats {
                clean(&mut v.source);
                clean(&mut v.address);
                clean(&mut v.covers);
                v.troubles.iter_mut().for_each(|t| {
                    clean(&mut t.counter);
                    clean(&mut t.meaning);
                });
            }
            if let Some(p) = &mut server.process {
                clean(&mut p.name);
            }
        }
    }

    fn of_raw(run: &RunFile) -> Result<Summary, SchemaError> {
        let t = &run.totals;
        let w = &run.window;
        let successes = t.successes(&run.plan);
        let due = t.intended.max(t.completed + t.unsent);
        let open = run.latency.primary == LatencyKind::Response;
        let optional = |r: Option<&LatencyRecord>| r.map(LatencySummary::of).transpose();
        Ok(Summary {
            label: run.label.clone(),
            mode: run.plan.mode,
            plan: describe_plan(run),
            latency_kind: run.latency.primary,
            requests: t.completed,
            rate_per_s: per_second(due, w.measured_s),
            throughput_per_s: per_second(successes, w.measured_s + w.wait_s),
            measured_s: w.measured_s,
            wait_s: w.wait_s,
            warmup_s: w.warmup_s,
            latency: LatencySummary::of(run.latency.primary())?,
            service: optional(Some(&run.latency.service).filter(|_| open))?,
            dispatch_lag: optional(run.latency.dispatch_lag.as_ref())?,
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
            success_ratio: (due > 0).then(|| successes as f64 / due as f64),
            expected: run.plan.expected_text(),
            intended: due,
            sent: t.sent,
            unfinished: t.unfinished,
            queue_timeouts: t.queue_timeouts,
            timeouts_answered_late: t.timeouts_answered_late,
            stray_closes: t.stray_closes,
            status_codes: t.status_codes.clone(),
            errors: t.errors.clone(),
            backlog: t.backlog,
            late_sends: t.late_sends,
            unsent: t.unsent,
            queued: t.queued,
            queue_wait: optional(run.latency.queue_wait.as_ref())?,
            server_address: run.plan.server_address.clone(),
            cache: run.cache.clone(),
            hit: optional(run.latency.hit.as_ref())?,
            miss: optional(run.latency.miss.as_ref())?,
            connections_opened: t.connections_opened,
            connections_opened_warmup: run
                .intervals
                .iter()
                .filter(|i| i.warmup)
                .map(|i| i.connections_opened)
                .sum(),
            connections_opened_first_s: run
                .intervals
                .iter()
                .find(|i| !i.warmup)
                .map_or(0, |i| i.connections_opened),
            tls_handshake: optional(run.latency.tls_handshake.as_ref())?,
            tcp_connect: optional(run.latency.tcp_connect.as_ref())?,
            quic: run.plan.http_version == "3",
            handshakes: t.handshakes,
            phases: crate::phases::PhaseSummary::of(run)?,
            targets: run.plan.targets.clone(),
            catalogue: run.plan.catalogue.clone(),
            cache_model: run.cache_model.clone(),
            lru_of_held: lru_of_held(run),
            warmed: run.warmed.clone(),
            purges: run.purges.clone(),
            stampede: run.stampede.clone(),
            purge_effects: crate::purge::effects(run),
            health: run.client_health.clone(),
            interrupted: run.interrupted,
            server: ServerSummary::of(run),
            stages: crate::staged::stages_of(run)?,
            breakdowns: crate::breakdown::BreakdownSummary::of_run(run)?,
            sweep: crate::staged::sweep_of(run),
            checks: if run.checks.is_empty() {
                crate::selfcheck::run_checks(run)?
            } else {
                run.checks.clone()
            },
        })
    }

    /// True when the stdev exceeds the mean, which readers often take for a bug.
    pub fn has_long_tail(&self) -> bool {
        matches!((self.latency.stdev_ns, self.latency.mean_ns), (Some(s), Some(m)) if s > m)
    }
}

fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// Which latency a run's primary figures are, in words.
pub(crate) fn latency_words(kind: vload_schema::LatencyKind) -> &'static str {
    match kind {
        vload_schema::LatencyKind::Response => {
            "response time from the intended send, open loop (free of coordinated omission)"
        }
        vload_schema::LatencyKind::Service => {
            "service time from the actual write, closed loop (subject to coordinated omission)"
        }
    }
}

/// The protocol as h2load and curl name it: `HTTP/1.1`, `HTTP/1.1 over TLS`, `HTTP/2 (h2c)`,
/// `HTTP/2 over TLS`, `HTTP/3 (QUIC v1)`.
fn protocol(p: &vload_schema::Plan) -> String {
    match (p.http_version.as_str(), p.tls.is_some()) {
        ("3", _) => "HTTP/3 (QUIC v1)".to_owned(),
        ("2", false) => "HTTP/2 (h2c)".to_owned(),
        ("2", true) => "HTTP/2 over TLS".to_owned(),
        (version, false) => format!("HTTP/{version}"),
        (version, true) => format!("HTTP/{version} over TLS"),
    }
}

pub(crate) fn describe_plan(run: &RunFile) -> String {
    let p = &run.plan;
    // HTTP/2 multiplexes: the load is connections times streams, as h2load's -c and -m.
    let plural = if p.connections == 1 { "" } else { "s" };
    let connections = match p.streams {
        Some(streams) if streams > 1 => {
            format!("{} connection{plural} x {streams} streams", p.connections)
        }
        _ => format!("{} connection{plural}", p.connections),
    };
    let load = match p.mode {
        Mode::Closed => format!("closed loop, {connections}"),
        Mode::Open => {
            let arrival = match p.arrival {
                vload_schema::Arrival::Constant => "constant",
                vload_schema::Arrival::Poisson => "poisson",
            };
            match crate::staged::describe(run) {
                // A plan or a sweep: "constant" before it read as a constant rate (#48:
                // "constant rate plan 0.0/s -> 2,000.0/s"); its spacing is said after it.
                Some(plan) => {
                    let spacing = match p.arrival {
                        vload_schema::Arrival::Constant => "evenly spaced",
                        vload_schema::Arrival::Poisson => "Poisson arrivals",
                    };
                    format!("open loop, {plan}, {spacing}, up to {connections}")
                }
                None => {
                    let rate = p
                        .rate_per_s
                        .map_or_else(|| "?".to_owned(), crate::units::rate);
                    format!("open loop, {arrival} {rate}, up to {connections}")
                }
            }
        }
    };
    let stop = match (p.duration_s, p.requests) {
        (Some(d), Some(n)) => format!(
            "{} or {} requests",
            crate::units::seconds(d),
            crate::units::count(n)
        ),
        (Some(d), None) => crate::units::seconds(d),
        (None, Some(n)) => format!("{} requests", crate::units::count(n)),
        (None, None) => "unbounded".to_owned(),
    };
    // --until-stable: its bound, not the longest it could have run.
    let stop = match &run.until_stable {
        Some(u) => format!(
            "until p99 within ±{:.0}% (at most {})",
            u.target * 100.0,
            crate::units::seconds(u.max_duration_s)
        ),
        None => stop,
    };
    let shard = p.shard.map_or_else(String::new, |s| {
        format!(
            "shard {}/{} ({} connections) of: ",
            s.index, s.count, s.connections
        )
    });
    format!(
        "{shard}{}, {load}, {stop}, {} thread{}",
        protocol(p),
        p.threads,
        if p.threads == 1 { "" } else { "s" }
    )
}

/// An LRU of Varnish's `n_object` for a `--catalogue` run with Varnish's counters.
fn lru_of_held(run: &RunFile) -> Option<(u64, f64)> {
    let model = run.cache_model.as_ref()?;
    let held = *run
        .server
        .as_ref()?
        .stats
        .as_ref()?
        .gauges
        .get("n_object")?;
    let catalogue = vload_cache::Catalogue::from_record(run.plan.catalogue.as_ref()?).ok()?;
    if catalogue.crawler.is_some() {
        // Che's approximation knows no crawler.
        return None;
    }
    let load = vload_cache::model::Load {
        catalogue: &catalogue,
        rate_per_s: model.rate_per_s,
        before: model.requests_before,
        window: model.requests_window,
    };
    let prediction =
        vload_cache::model::predict(load, Some(vload_cache::Capacity::Objects(held.max(1))));
    Some((held, prediction.lru?.0))
}

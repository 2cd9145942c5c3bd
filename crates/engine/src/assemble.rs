//! The run file of a finished attack, assembled from what the workers and the collector
//! recorded and the facts of the run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use vload_schema::{
    CacheCounts, CacheSources, ErrorCount, ErrorKind, HistogramSettings, Latency, LatencyKind,
    Mode, RunFile, SCHEMA_VERSION, Totals, Window,
};

use crate::collect::{Collected, record_of};
use crate::env;
use crate::env::FD_MARGIN;
use crate::health::{HealthInputs, assess};
use crate::plan::{Arrival, AttackPlan, Load};
use crate::record::{Distribution, IntervalStats};
use crate::targets::{Pick, TargetPlan, TargetSummary};
use crate::tls::Verify;
use crate::worker::WorkerSummary;

/// Facts about a finished run that the run file records.
pub(crate) struct RunContext {
    pub(crate) t0: Instant,
    pub(crate) started_at: SystemTime,
    pub(crate) collector_cpu: Duration,
    pub(crate) fd_limit: u64,
    pub(crate) interrupted: bool,
    pub(crate) targets: Option<TargetSummary>,
    pub(crate) dimensions: std::sync::Arc<crate::breakdown::Dimensions>,
}

/// Every worker's breakdowns, merged.
fn breakdowns(
    summaries: &[WorkerSummary],
    dims: &crate::breakdown::Dimensions,
) -> Vec<vload_schema::Breakdown> {
    let mut all = crate::breakdown::Breakdowns::new(&HistogramSettings::default(), dims);
    for s in summaries {
        all.merge(&s.breakdowns);
    }
    all.records(dims)
}

/// The run file of an attack.
pub(crate) fn assemble(plan: &AttackPlan, c: Collected, context: &RunContext) -> RunFile {
    let open = plan.is_open_loop();
    let t = &c.totals;
    let latest =
        |at: fn(&WorkerSummary) -> Instant| c.summaries.iter().map(at).max().unwrap_or(context.t0);
    let (attack_end, end) = (latest(|s| s.attack_end), latest(|s| s.end));
    let backlog = c.summaries.iter().map(|s| s.backlog).sum();
    let mut run = RunFile {
        schema_version: SCHEMA_VERSION,
        vload_version: env!("CARGO_PKG_VERSION").to_owned(),
        run_id: env::run_id(context.started_at),
        label: plan.label.clone(),
        started_at: env::rfc3339(context.started_at),
        interrupted: context.interrupted,
        environment: env::environment(),
        plan: vload_schema::Plan {
            // Named only when a response carried it.
            server_timing: (t.origin.moments.n > 0).then(|| plan.server_timing.clone()),
            ..plan_record(plan, context.targets.as_ref())
        },
        workload_hash: env::workload_hash(plan, context.targets.as_ref().map(|t| &t.hash)),
        window: window(
            plan,
            context,
            (
                c.summaries.iter().filter_map(|s| s.first_send).min(),
                attack_end,
                end,
            ),
        ),
        totals: Totals {
            // hyper's clients do not say what they read.
            wire_bytes_in: plan.protocol.counts_wire().then_some(t.wire_in),
            handshakes: plan.protocol.is_quic().then(|| {
                let mut all = vload_schema::Handshakes::default();
                c.summaries.iter().for_each(|s| all.add(&s.handshakes));
                all
            }),
            ..totals(t, open, errors(&c), backlog)
        },
        latency: latency(t, open),
        cache: cache_counts(t),
        client_health: health(plan, &c, context, end),
        breakdowns: breakdowns(&c.summaries, &context.dimensions),
        stages: crate::staged::records(
            plan,
            c.stages,
            attack_end.saturating_duration_since(context.t0),
        ),
        sweep: None,
        arrivals: arrivals(&c.summaries),
        until_stable: None,
        checks: Vec::new(),
        provenance: None,
        intervals: c.intervals,
        server: None,
        cache_model: None,
        purges: None,
        stampede: None,
        origin_plan: None,
        warmed: None,
    };
    if let Some(catalogue) = &plan.catalogue {
        let mut model = vload_cache::model_record(catalogue, plan.cache_capacity, &run);
        model.realized_cold_bound = realized_cold_bound(&c.summaries);
        run.cache_model = Some(model);
    }
    run
}

/// The run's cache counts from its totals.
fn cache_counts(t: &IntervalStats) -> CacheCounts {
    CacheCounts {
        hit: t.cache[0],
        miss: t.cache[1],
        unknown: t.cache[2],
        by_source: CacheSources {
            x_varnish: t.cache_sources[0],
            x_cache: t.cache_sources[1],
            age: t.cache_sources[2],
            cache_status: t.cache_sources[3],
        },
        layers: crate::collect::layers(&t.layers),
        stale_ages: t.stale_ages.counted(),
    }
}

/// The bound from empty for the objects the workers drew, all of them together.
fn realized_cold_bound(summaries: &[WorkerSummary]) -> Option<f64> {
    let mut draws = summaries.iter().map(|s| s.objects.as_ref());
    let mut all = draws.next()??.clone();
    for other in draws {
        all.merge(other?);
    }
    all.cold_bound()
}

/// The workers' samples of achieved inter-send gaps as one (Poisson runs only).
fn arrivals(summaries: &[WorkerSummary]) -> Option<vload_schema::ArrivalSample> {
    vload_schema::ArrivalSample::combine(summaries.iter().filter_map(|s| s.arrivals.clone()))
}

/// The window from the worker's instants: the first send, the end of sending, the end.
fn window(
    plan: &AttackPlan,
    context: &RunContext,
    (first_send, attack_end, end): (Option<Instant>, Instant, Instant),
) -> Window {
    let t0 = context.t0;
    let sending_s = attack_end.saturating_duration_since(t0).as_secs_f64();
    let warmup_s = plan.warmup.as_secs_f64().min(sending_s);
    Window {
        warmup_s,
        measured_s: (sending_s - warmup_s).max(0.0),
        wait_s: end.saturating_duration_since(attack_end).as_secs_f64(),
        // From `--start-at` to the first send (a shard frozen past its start shows it), or
        // to the start when nothing was sent.
        start_offset_s: plan.start_at.map(|at| {
            let planned = match context.started_at.duration_since(at) {
                Ok(late) => late.as_secs_f64(),
                Err(early) => -early.duration().as_secs_f64(),
            };
            planned
                + first_send.map_or(0.0, |first| {
                    first.saturating_duration_since(t0).as_secs_f64()
                })
        }),
    }
}

/// The errors by kind, each with the first message a worker saw.
fn errors(c: &Collected) -> BTreeMap<ErrorKind, ErrorCount> {
    c.totals
        .errors_by_kind()
        .map(|(kind, count)| {
            let sample = c
                .summaries
                .iter()
                .flat_map(|s| &s.samples)
                .find(|(k, _)| *k == kind)
                .map(|(_, m)| m.clone());
            (
                kind,
                ErrorCount {
                    count,
                    sample: sample.unwrap_or_default(),
                },
            )
        })
        .collect()
}

fn totals(
    t: &IntervalStats,
    open: bool,
    errors: BTreeMap<ErrorKind, ErrorCount>,
    backlog: u64,
) -> Totals {
    Totals {
        intended: if open { t.intended } else { t.sent },
        sent: t.sent,
        completed: t.completed,
        status_codes: t.status_codes().collect(),
        errors,
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        wire_bytes_in: None,
        connections_opened: t.connections_opened,
        late_sends: t.late_sends,
        backlog,
        out_of_range: t.response.out_of_range + t.service.out_of_range,
        unsent: t.unsent,
        unfinished: t.unfinished,
        stray_closes: t.stray,
        server_timing_beyond_wait: t.timing_beyond_wait,
        timeouts_answered_late: t.answered_late,
        connections_unused: t.unused,
        queue_timeouts: t.queue_timeouts,
        queued: t.queued,
        handshakes: None,
    }
}

fn latency(t: &IntervalStats, open: bool) -> Latency {
    let some = |d: &Distribution| (d.moments.n > 0).then(|| record_of(d));
    Latency {
        primary: if open {
            LatencyKind::Response
        } else {
            LatencyKind::Service
        },
        response: open.then(|| record_of(&t.response)),
        service: record_of(&t.service),
        dispatch_lag: open.then(|| record_of(&t.dispatch_lag)),
        hiccup: record_of(&t.hiccup),
        hit: some(&t.hit),
        miss: some(&t.miss),
        tls_handshake: some(&t.tls_handshake),
        tcp_connect: some(&t.tcp_connect),
        queue_wait: some(&t.queue_wait),
        first_byte: some(&t.first_byte),
        transfer: some(&t.transfer),
        origin: some(&t.origin),
        proxy_added: some(&t.proxy_added),
    }
}

fn health(
    plan: &AttackPlan,
    c: &Collected,
    context: &RunContext,
    end: Instant,
) -> vload_schema::ClientHealth {
    let t = &c.totals;
    let open = plan.is_open_loop();
    let wall_s = end.saturating_duration_since(context.t0).as_secs_f64();
    let cpu_s: f64 = c.summaries.iter().map(|s| s.cpu.as_secs_f64()).sum();
    // The thread that idled least: busy on a CPU, or runnable and waiting for one.
    let (busiest, waiting) = c
        .summaries
        .iter()
        .map(|s| (s.cpu.as_secs_f64(), s.waiting.as_secs_f64()))
        .max_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)))
        .unwrap_or((0.0, 0.0));
    let share = |seconds: f64| {
        if wall_s > 0.0 {
            (seconds / wall_s).min(1.0)
        } else {
            0.0
        }
    };
    assess(&HealthInputs {
        cpu_s: cpu_s + context.collector_cpu.as_secs_f64(),
        wall_s,
        cores: env::cores(),
        max_thread_busy: share(busiest),
        max_thread_waiting: Some(share(waiting)),
        open_loop: open,
        intended: t.intended,
        late_sends: t.late_sends,
        unsent: t.unsent,
        dispatch_lag_p99_ns: if open {
            t.dispatch_lag.quantile(0.99)
        } else {
            None
        },
        hiccup_p99_ns: t.hiccup.quantile(0.99),
        service_p50_ns: t.service.quantile(0.5),
        capped: t.capped,
        queued: t.queued,
        queue_wait_p99_ns: t.queue_wait.quantile(0.99),
        max_connections: plan.own_connections(),
        peak_connections: open.then(|| {
            c.summaries
                .iter()
                .map(|s| u64::from(s.peak_connections.unwrap_or(0)))
                .sum()
        }),
        client_limit_errors: t
            .errors_by_kind()
            .filter(|(k, _)| *k == ErrorKind::ClientLimit)
            .map(|(_, n)| n)
            .sum(),
        fd_limit: context.fd_limit,
        fd_needed: u64::from(plan.own_connections()) + FD_MARGIN,
    })
}

fn plan_record(plan: &AttackPlan, targets: Option<&TargetSummary>) -> vload_schema::Plan {
    let (mode, rate_per_s, arrival, seed) = match &plan.load {
        Load::Closed { .. } => (Mode::Closed, None, vload_schema::Arrival::Constant, None),
        Load::Open { rate, arrival, .. } => match *arrival {
            Arrival::Constant => (
                Mode::Open,
                Some(rate.peak_rate()),
                vload_schema::Arrival::Constant,
                None,
            ),
            Arrival::Poisson { seed } => (
                Mode::Open,
                Some(rate.peak_rate()),
                vload_schema::Arrival::Poisson,
                Some(seed),
            ),
        },
    };
    let request = &plan.request;
    vload_schema::Plan {
        mode,
        target: request.url.to_string(),
        method: request.method.to_string(),
        headers: headers_record(&request.headers),
        body_bytes: request.body.len() as u64,
        connections: plan.connections(),
        rate_per_s,
        rate_plan: crate::staged::planned(plan),
        arrival,
        seed,
        duration_s: plan.stop.duration.map(|d| d.as_secs_f64()),
        requests: plan.stop.requests,
        warmup_s: plan.warmup.as_secs_f64(),
        timeout_s: plan.timeout.as_secs_f64(),
        connect_timeout_s: plan.connect_timeout.as_secs_f64(),
        http_version: plan.protocol.version().to_owned(),
        threads: plan.threads.min(plan.own_connections()),
        histogram: HistogramSettings::default(),
        targets: plan
            .targets
            .as_ref()
            .zip(targets)
            .map(|(tp, summary)| targets_record(tp, summary)),
        connect_to: plan.connect_to_set.then(|| plan.connect_to.to_string()),
        server_address: Some(plan.connect_to.to_string()),
        requests_per_connection: plan.requests_per_connection,
        streams: plan
            .protocol
            .is_multiplexed()
            .then_some(plan.protocol.streams()),
        tls: plan.tls.as_ref().map(|t| vload_schema::TlsRecord {
            server_name: t.server_name.clone(),
            verify: verify_text(&t.verify),
        }),
        shard: plan.shard.map(|s| vload_schema::ShardRecord {
            index: s.index,
            count: s.count,
            connections: plan.own_connections(),
            rate_per_s: rate_per_s.map(|r| r / f64::from(s.count)),
        }),
        start_at: plan.start_at.map(env::rfc3339),
        expect_status: (plan.expect_status != vload_schema::DEFAULT_EXPECTED)
            .then(|| plan.expect_status.clone()),
        catalogue: plan.catalogue.as_ref().map(vload_cache::Catalogue::record),
        classes: plan
            .classes
            .iter()
            .map(|c| vload_schema::UrlClassRecord {
                name: c.name.clone(),
                regex: c.pattern.as_str().to_owned(),
            })
            .collect(),
        server_timing: None,
    }
}

/// The request's headers as the run file keeps them: credentials redacted, since the file
/// is shared and compared.
fn headers_record(headers: &http::HeaderMap) -> Vec<vload_schema::Header> {
    headers
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes());
            vload_schema::Header {
                name: n.to_string(),
                value: if crate::url::is_secret_header(n.as_str()) {
                    crate::url::redact(&value)
                } else {
                    value.into_owned()
                },
            }
        })
        .collect()
}

fn verify_text(verify: &Verify) -> String {
    match verify {
        Verify::SystemRoots => "system roots".to_owned(),
        Verify::CaFile(path) => format!("ca file {}", path.display()),
        Verify::Insecure => "insecure (not verified)".to_owned(),
    }
}

fn targets_record(plan: &TargetPlan, summary: &TargetSummary) -> vload_schema::TargetsRecord {
    let (pick, seed) = match plan.pick {
        Pick::Sequential => ("sequential", None),
        Pick::Random { seed } => ("random", Some(seed)),
        Pick::RoundRobin => ("round_robin", None),
    };
    vload_schema::TargetsRecord {
        pick: pick.to_owned(),
        seed,
        passes: plan.passes,
        sets: plan
            .sets
            .iter()
            .zip(&summary.sets)
            .map(|(set, found)| vload_schema::TargetSetRecord {
                file: set.path.display().to_string(),
                format: set.format.as_str().to_owned(),
                weight: set.weight,
                targets: found.targets,
                lines_skipped: found.skipped,
                other_methods: found.other_methods,
            })
            .collect(),
    }
}

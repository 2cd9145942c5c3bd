//! vload's load engine: open- and closed-loop HTTP/1.1 on hyper, recorded in HdrHistograms.
//!
//! [`run`] takes an [`AttackPlan`] and returns the [`RunFile`] of the attack. It blocks
//! the calling thread, which collects results while `plan.threads` worker threads
//! generate the load, each on its own current-thread tokio runtime with its own
//! connections and its own recorder (no locks or shared atomics per request).
//!
//! - **Closed loop** ([`Load::Closed`]): each connection sends its next request when the
//!   previous response ends. Latency is service time, subject to coordinated omission.
//! - **Open loop** ([`Load::Open`]): request k is due at `t0 + k / rate` (or Poisson).
//!   Connections open on demand up to the cap; a request that finds them all busy waits,
//!   and the wait counts. The primary latency is the response time from the *intended*
//!   send; service time and dispatch lag are recorded too. The scheduler wakes on a
//!   microsecond timer and dispatches everything due at each wake-up.
//!
//! Every second each worker ships an interval (counts and histograms) to the collector,
//! which merges them with `Histogram::add` and Chan's formula, so memory stays flat
//! however long the run. Timeouts count as errors *and* are recorded at the timeout.
//! An [`Observer`] sees each interval (the cli draws its progress line from it), and an
//! [`Interrupt`] ends the attack early with the results so far.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use vload_engine::{AttackPlan, Interrupt, Load, RequestTemplate, Stop, run};
//!
//! let url: http::Uri = "http://127.0.0.1:8081/".parse()?;
//! let mut headers = http::HeaderMap::new();
//! headers.insert(http::header::HOST, "127.0.0.1:8081".parse()?);
//! let plan = AttackPlan {
//!     request: RequestTemplate { url, method: http::Method::GET, headers, body: Default::default() },
//!     connect_to: "127.0.0.1:8081".parse()?,
//!     load: Load::Closed { connections: 50 },
//!     stop: Stop { duration: Some(Duration::from_secs(10)), requests: None },
//!     warmup: Duration::ZERO,
//!     timeout: Duration::from_secs(30),
//!     connect_timeout: Duration::from_secs(10),
//!     threads: 1,
//!     label: None,
//!     hlog: None,
//!     targets: None,
//!     requests_per_connection: None,
//!     connect_to_set: false,
//!     http2: false,
//!     streams: 1,
//!     tls: None,
//!     shard: None,
//!     http1_client: Default::default(),
//!     start_at: None,
//! };
//! let run_file = run(plan, &mut (), &Interrupt::new())?;
//! println!("{} requests", run_file.totals.completed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Errors
//!
//! [`EngineError`] for what stops an attack from running at all (the interval log cannot
//! be written, a thread cannot start). Failed requests are never errors of `run`: they
//! are counted by [`vload_schema::ErrorKind`] in the run file.
//!
//! # Limits
//!
//! HTTP/1.1 over TCP. Latencies above 60 s are clamped and counted in `out_of_range`.

#[doc(hidden)]
pub mod bench;
mod cache;
mod collect;
mod env;
mod h1;
mod health;
mod plan;
mod record;
mod schedule;
mod targets;
mod tls;
mod worker;

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;
use vload_schema::{
    CacheCounts, CacheSources, ErrorCount, HistogramSettings, Latency, LatencyKind, Mode, RunFile,
    SCHEMA_VERSION, Totals, Window,
};

pub use plan::{Arrival, AttackPlan, Http1Client, Load, RequestTemplate, Shard, Stop};
pub use targets::{
    Pick, Target, TargetError, TargetFormat, TargetPlan, TargetSet, TargetSummary, check_port,
};
pub use tls::{TlsError, TlsOptions, Verify};

use crate::collect::{CollectSetup, Collected, collect, record_of};
use crate::health::{HealthInputs, assess};
use crate::plan::share;
use crate::schedule::Schedule;
use crate::targets::TargetStream;
use crate::worker::{WorkerSetup, thread_cpu_time};

/// The CPUs this process may use.
pub fn available_cores() -> u32 {
    env::cores()
}

/// Raises this process's soft limit on open files to its hard limit and returns the limit
/// now in force. [`run`] does this itself; servers started from the cli call it too.
pub fn raise_fd_limit() -> u64 {
    health::raise_fd_limit()
}

/// What stops an attack from running.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The interval log cannot be created or written.
    #[error("cannot write interval log '{}': {error}", path.display())]
    Hlog {
        /// The log's path.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// A worker thread could not start.
    #[error("cannot start worker thread: {0}")]
    Thread(std::io::Error),
    /// Targets name hosts other than the URL's, and no address was given for them.
    #[error(
        "targets name other hosts ({0}, ...) than the URL: vload sends every request to one server; give it with --connect-to HOST:PORT"
    )]
    ManyHosts(String),
    /// The TLS setup cannot work (CA file, roots, server name).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A target file is missing or malformed.
    #[error("{0}")]
    Targets(TargetError),
    /// A shard would get nothing to do.
    #[error("{0}")]
    Shard(String),
    /// The plan needs more of this machine than it has (file descriptors, local ports).
    #[error("{0}")]
    Capacity(String),
    /// A worker thread panicked: a bug in vload.
    #[error("a worker thread panicked (a bug in vload; please report it)")]
    WorkerPanicked,
}

/// Live state of an attack, once per interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Time since the attack began.
    pub elapsed: Duration,
    /// Planned length, warm-up included, if bounded by time.
    pub planned: Option<Duration>,
    /// True during the warm-up.
    pub warmup: bool,
    /// Requests completed so far (warm-up included).
    pub completed: u64,
    /// Failed requests so far.
    pub errors: u64,
    /// Requests completed in the last interval, per second.
    pub rate_per_s: f64,
    /// Median of the primary latency so far, in ns.
    pub p50_ns: Option<u64>,
    /// 99th percentile of the primary latency so far, in ns.
    pub p99_ns: Option<u64>,
}

/// Sees an attack as it runs. The cli draws its progress line from this.
pub trait Observer {
    /// Called once per finished interval, in order, on the thread that called [`run`].
    fn on_interval(&mut self, progress: &Progress);

    /// Called when something the user asked for failed without ending the attack (the
    /// interval log could not be written), with one sentence saying what.
    fn on_warning(&mut self, _warning: &str) {}
}

/// No observer.
impl Observer for () {
    fn on_interval(&mut self, _: &Progress) {}
}

/// Ends an attack early (Ctrl-C): dispatching stops, in-flight requests get one second,
/// and [`run`] returns the results so far with `interrupted: true`.
#[derive(Debug, Clone)]
pub struct Interrupt(Arc<watch::Sender<bool>>);

impl Interrupt {
    /// A trigger that has not fired.
    pub fn new() -> Self {
        Interrupt(Arc::new(watch::channel(false).0))
    }

    /// Fires the trigger; safe from any thread, any number of times.
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }

    /// True once fired.
    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs an attack to its end and returns its run file.
///
/// # Errors
/// See [`EngineError`].
///
/// # Panics
/// If `plan` has zero threads or connections or a non-positive rate; the cli validates these.
pub fn run(
    plan: AttackPlan,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
) -> Result<RunFile, EngineError> {
    assert!(
        plan.threads > 0 && plan.connections() > 0,
        "plan needs threads and connections"
    );
    if let Load::Open { rate_per_s, .. } = plan.load {
        assert!(
            rate_per_s > 0.0 && rate_per_s.is_finite(),
            "open loop needs a positive rate"
        );
    }
    let fd_limit = health::raise_fd_limit();
    let mut plan = plan;
    let targets = plan
        .targets
        .as_ref()
        .map(TargetPlan::validate)
        .transpose()
        .map_err(EngineError::Targets)?;
    if let Some(summary) = &targets {
        let base = plan
            .request
            .url
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let others: Vec<&String> = summary.hosts.iter().filter(|h| **h != base).collect();
        if !plan.connect_to_set && !others.is_empty() {
            return Err(EngineError::ManyHosts(
                others
                    .iter()
                    .take(3)
                    .map(|h| h.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
    }
    let shard = plan.own_shard();
    let sharded = |what: &str| {
        EngineError::Shard(format!(
            "shard {}/{} gets no {what}: the attack has too few for {} shards",
            shard.index, shard.count, shard.count
        ))
    };
    if plan.own_connections() == 0 {
        return Err(sharded("connection (give -c at least the shard count)"));
    }
    if plan.own_requests() == Some(0) {
        return Err(sharded("request (give -n at least the shard count)"));
    }
    check_capacity(&plan, fd_limit)?;
    let mut threads = plan.threads.min(plan.own_connections());
    let mut pass_count = None;
    if let (Some(tp), Some(summary)) = (&plan.targets, &targets) {
        let total: u64 = summary.sets.iter().map(|s| s.targets).sum();
        // Every shard takes every Nth target from its index.
        let own = plan::share(total, shard.count, shard.index);
        if summary
            .sets
            .iter()
            .any(|s| plan::share(s.targets, shard.count, shard.index) == 0)
        {
            return Err(sharded(
                "target (a target file has fewer entries than shards)",
            ));
        }
        if !matches!(tp.pick, Pick::Random { .. }) {
            // Every worker needs a share of the list.
            threads = threads.min(u32::try_from(own).unwrap_or(u32::MAX)).max(1);
        }
        if let Some(passes) = tp.passes {
            let requests = passes.checked_mul(total).ok_or_else(|| {
                EngineError::Capacity(format!(
                    "--passes {passes} over {total} targets is more requests than can be counted"
                ))
            })?;
            plan.stop.requests = Some(requests);
            pass_count = Some((total, passes));
        }
    }
    // Created only once the plan is known to run, so a refused plan leaves no empty log.
    let hlog = match &plan.hlog {
        Some(path) => Some((
            File::create(path).map_err(|error| EngineError::Hlog {
                path: path.clone(),
                error,
            })?,
            path.clone(),
        )),
        None => None,
    };
    // Workers start together at t0: shortly from now, or at --start-at.
    let now = (Instant::now(), SystemTime::now());
    let lead = Duration::from_millis(20);
    let (t0, started_at) = match plan.start_at.map(|at| at.duration_since(now.1)) {
        Some(Ok(wait)) if wait > lead => (now.0 + wait, now.1 + wait),
        _ => (now.0 + lead, now.1 + lead),
    };
    let plan = Arc::new(plan);
    let (tx, rx) = std::sync::mpsc::channel();
    let tls = plan
        .tls
        .as_ref()
        .map(|options| tls::client_config(options, plan.http2))
        .transpose()?;
    // Every worker's setup first: nothing may start attacking if a target file fails to open.
    let setups = (0..threads)
        .map(|id| {
            // Worker `id` of shard i is worker i + N * id of the whole attack: schedules and
            // target lists are dealt over all shards' workers at once.
            let (global, workers) = (shard.index + shard.count * id, shard.count * threads);
            Ok(WorkerSetup {
                id,
                plan: plan.clone(),
                t0,
                connections: share(u64::from(plan.own_connections()), threads, id) as u32,
                requests: match pass_count {
                    Some((total, passes)) => {
                        Some(targets::pass_share(total, passes, global, workers))
                    }
                    None => plan.own_requests().map(|n| share(n, threads, id)),
                },
                schedule: schedule_for(&plan, t0, global, workers),
                targets: match (&plan.targets, &targets) {
                    (Some(tp), Some(summary)) => Some(
                        TargetStream::new(tp, summary, global, workers, shard)
                            .map_err(EngineError::Targets)?,
                    ),
                    _ => None,
                },
                tls: tls.clone(),
                to_collector: tx.clone(),
                interrupt: interrupt.0.subscribe(),
            })
        })
        .collect::<Result<Vec<_>, EngineError>>()?;
    let mut handles = Vec::new();
    for setup in setups {
        let name = format!("vload-worker-{}", setup.id);
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || worker::run(setup))
        {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                // Stop the workers already started before reporting.
                interrupt.trigger();
                drop(tx);
                handles.into_iter().for_each(|h| drop(h.join()));
                return Err(EngineError::Thread(e));
            }
        }
    }
    drop(tx);
    let cpu_start = thread_cpu_time();
    let setup = CollectSetup {
        workers: threads,
        t0,
        warmup: plan.warmup,
        planned: plan.stop.duration,
        open_loop: plan.is_open_loop(),
        started_at,
    };
    let collected = collect(
        &rx,
        &setup,
        observer,
        hlog.as_ref()
            .map(|(f, p)| (f.try_clone().expect("dup of a fresh file"), p.as_path())),
    );
    let collector_cpu = thread_cpu_time().saturating_sub(cpu_start);
    let panicked = handles.into_iter().map(|h| h.join()).any(|r| r.is_err());
    let collected = collected?;
    if panicked || collected.summaries.len() != threads as usize {
        return Err(EngineError::WorkerPanicked);
    }
    let context = RunContext {
        t0,
        started_at,
        collector_cpu,
        fd_limit,
        interrupted: interrupt.is_triggered(),
        targets,
    };
    Ok(assemble(&plan, collected, &context))
}

/// Refuses a plan this machine cannot hold, before anything is sent: every connection needs
/// a file descriptor, and every connection to one address needs a local port of its own.
/// Without this check the attack would run and count the client's own failures
/// ("Too many open files") as requests.
fn check_capacity(plan: &AttackPlan, fd_limit: u64) -> Result<(), EngineError> {
    let connections = u64::from(plan.own_connections());
    let fd_needed = connections + FD_MARGIN;
    if fd_needed > fd_limit {
        return Err(EngineError::Capacity(format!(
            "{} connections need about {fd_needed} file descriptors but this process may open {fd_limit} (ulimit -n, raised to its hard limit): lower -c/--max-connections or raise the hard limit",
            connections
        )));
    }
    if let Some((low, high)) = env::local_port_range() {
        let ports = u64::from(high.saturating_sub(low)) + 1;
        if connections > ports {
            return Err(EngineError::Capacity(format!(
                "{connections} connections to one address need as many local ports, but this machine has {ports} ({low}-{high} in /proc/sys/net/ipv4/ip_local_port_range): lower -c/--max-connections, widen the range, or split the attack with --shard over machines"
            )));
        }
    }
    Ok(())
}

/// File descriptors beyond the connections: the runtime, timers, stdio, files.
const FD_MARGIN: u64 = 64;

/// Facts about a finished run that the run file records.
struct RunContext {
    t0: Instant,
    started_at: SystemTime,
    collector_cpu: Duration,
    fd_limit: u64,
    interrupted: bool,
    targets: Option<TargetSummary>,
}

fn schedule_for(plan: &AttackPlan, t0: Instant, worker: u32, workers: u32) -> Option<Schedule> {
    match plan.load {
        Load::Closed { .. } => None,
        Load::Open {
            rate_per_s,
            arrival: Arrival::Constant,
            ..
        } => Some(Schedule::constant(t0, rate_per_s, worker, workers)),
        Load::Open {
            rate_per_s,
            arrival: Arrival::Poisson { seed },
            ..
        } => Some(Schedule::poisson(t0, rate_per_s, seed, worker, workers)),
    }
}

fn assemble(plan: &AttackPlan, c: Collected, context: &RunContext) -> RunFile {
    let RunContext {
        t0,
        started_at,
        collector_cpu,
        fd_limit,
        interrupted,
        ..
    } = *context;
    let open = plan.is_open_loop();
    let t = &c.totals;
    let attack_end = c.summaries.iter().map(|s| s.attack_end).max().unwrap_or(t0);
    let end = c.summaries.iter().map(|s| s.end).max().unwrap_or(t0);
    let warmup_s = plan
        .warmup
        .as_secs_f64()
        .min(attack_end.saturating_duration_since(t0).as_secs_f64());
    let window = Window {
        warmup_s,
        measured_s: (attack_end.saturating_duration_since(t0).as_secs_f64() - warmup_s).max(0.0),
        wait_s: end.saturating_duration_since(attack_end).as_secs_f64(),
        start_offset_s: plan.start_at.map(|at| match started_at.duration_since(at) {
            Ok(late) => late.as_secs_f64(),
            Err(early) => -early.duration().as_secs_f64(),
        }),
    };
    let wall_s = end.saturating_duration_since(t0).as_secs_f64();
    let thread_cpu: Vec<f64> = c.summaries.iter().map(|s| s.cpu.as_secs_f64()).collect();
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
    let p = |d: &record::Distribution, q: f64| {
        (!d.histogram.is_empty()).then(|| d.moments.clamp(d.histogram.value_at_quantile(q)))
    };
    let mut errors = std::collections::BTreeMap::new();
    for (kind, count) in t.errors_by_kind() {
        let sample = c
            .summaries
            .iter()
            .flat_map(|s| &s.samples)
            .find(|(k, _)| *k == kind)
            .map(|(_, m)| m.clone());
        errors.insert(
            kind,
            ErrorCount {
                count,
                sample: sample.unwrap_or_default(),
            },
        );
    }
    let health = assess(&HealthInputs {
        cpu_s: thread_cpu.iter().sum::<f64>() + collector_cpu.as_secs_f64(),
        wall_s,
        cores: env::cores(),
        max_thread_busy: share(busiest),
        max_thread_waiting: Some(share(waiting)),
        open_loop: open,
        intended: t.intended,
        late_sends: t.late_sends,
        unsent: t.unsent,
        dispatch_lag_p99_ns: if open { p(&t.dispatch_lag, 0.99) } else { None },
        hiccup_p99_ns: p(&t.hiccup, 0.99),
        service_p50_ns: p(&t.service, 0.5),
        queued: t.queued,
        queue_wait_p99_ns: p(&t.queue_wait, 0.99),
        max_connections: plan.own_connections(),
        client_limit_errors: t
            .errors_by_kind()
            .filter(|(k, _)| *k == vload_schema::ErrorKind::ClientLimit)
            .map(|(_, n)| n)
            .sum(),
        fd_limit,
        fd_needed: u64::from(plan.own_connections()) + FD_MARGIN,
    });
    RunFile {
        schema_version: SCHEMA_VERSION,
        vload_version: env!("CARGO_PKG_VERSION").to_owned(),
        run_id: env::run_id(started_at),
        label: plan.label.clone(),
        started_at: env::rfc3339(started_at),
        interrupted,
        environment: env::environment(),
        plan: plan_record(plan, context.targets.as_ref()),
        workload_hash: env::workload_hash(plan, context.targets.as_ref().map(|t| &t.hash)),
        window,
        totals: Totals {
            intended: if open { t.intended } else { t.sent },
            sent: t.sent,
            completed: t.completed,
            status_codes: t.status_codes().collect(),
            errors,
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
            connections_opened: t.connections_opened,
            late_sends: t.late_sends,
            backlog: c.summaries.iter().map(|s| s.backlog).sum(),
            out_of_range: t.response.out_of_range + t.service.out_of_range,
            unsent: t.unsent,
            queued: t.queued,
        },
        latency: Latency {
            primary: if open {
                LatencyKind::Response
            } else {
                LatencyKind::Service
            },
            response: open.then(|| record_of(&t.response)),
            service: record_of(&t.service),
            dispatch_lag: open.then(|| record_of(&t.dispatch_lag)),
            hiccup: record_of(&t.hiccup),
            hit: (t.hit.moments.n > 0).then(|| record_of(&t.hit)),
            miss: (t.miss.moments.n > 0).then(|| record_of(&t.miss)),
            tls_handshake: (t.tls_handshake.moments.n > 0).then(|| record_of(&t.tls_handshake)),
            queue_wait: (t.queue_wait.moments.n > 0).then(|| record_of(&t.queue_wait)),
        },
        cache: CacheCounts {
            hit: t.cache[0],
            miss: t.cache[1],
            unknown: t.cache[2],
            by_source: CacheSources {
                x_varnish: t.cache_sources[0],
                x_cache: t.cache_sources[1],
                age: t.cache_sources[2],
            },
        },
        client_health: health,
        intervals: c.intervals,
        server: None,
    }
}

fn plan_record(plan: &AttackPlan, targets: Option<&TargetSummary>) -> vload_schema::Plan {
    let (mode, rate_per_s, arrival, seed) = match plan.load {
        Load::Closed { .. } => (Mode::Closed, None, vload_schema::Arrival::Constant, None),
        Load::Open {
            rate_per_s,
            arrival,
            ..
        } => match arrival {
            Arrival::Constant => (
                Mode::Open,
                Some(rate_per_s),
                vload_schema::Arrival::Constant,
                None,
            ),
            Arrival::Poisson { seed } => (
                Mode::Open,
                Some(rate_per_s),
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
        headers: request
            .headers
            .iter()
            .map(|(n, v)| vload_schema::Header {
                name: n.to_string(),
                value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
            })
            .collect(),
        body_bytes: request.body.len() as u64,
        connections: plan.connections(),
        rate_per_s,
        arrival,
        seed,
        duration_s: plan.stop.duration.map(|d| d.as_secs_f64()),
        requests: plan.stop.requests,
        warmup_s: plan.warmup.as_secs_f64(),
        timeout_s: plan.timeout.as_secs_f64(),
        connect_timeout_s: plan.connect_timeout.as_secs_f64(),
        http_version: if plan.http2 {
            "2".to_owned()
        } else {
            "1.1".to_owned()
        },
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
        streams: plan.http2.then_some(plan.streams),
        tls: plan.tls.as_ref().map(|t| vload_schema::TlsRecord {
            server_name: t.server_name.clone(),
            verify: match &t.verify {
                Verify::SystemRoots => "system roots".to_owned(),
                Verify::CaFile(path) => format!("ca file {}", path.display()),
                Verify::Insecure => "insecure (not verified)".to_owned(),
            },
        }),
        shard: plan.shard.map(|s| vload_schema::ShardRecord {
            index: s.index,
            count: s.count,
            connections: plan.own_connections(),
            rate_per_s: rate_per_s.map(|r| r / f64::from(s.count)),
        }),
        start_at: plan.start_at.map(env::rfc3339),
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

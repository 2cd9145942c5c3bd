//! Running an attack: prepare (check the plan against the machine, read the targets, place
//! t0), spawn the workers, collect their intervals, assemble the run file.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use vload_schema::RunFile;

use crate::assemble::{RunContext, assemble};
use crate::breakdown::Dimensions;
use crate::collect::{CollectSetup, Collected, collect};
use crate::env::FD_MARGIN;
use crate::error::EngineError;
use crate::observe::{Interrupt, Observer};
use crate::plan::{Arrival, AttackPlan, Load, Shard, share};
use crate::rate::Curve;
use crate::schedule::Schedule;
use crate::targets::{Pick, TargetPlan, TargetSummary};
use crate::worker::{self, WorkerMsg, WorkerSetup, thread_cpu_time};
use crate::workload::{self, FileStream, Held, Prepared, Source};
use crate::{env, tls};

/// How far ahead of now the workers start together, so that all have started by then.
const LEAD: Duration = Duration::from_millis(20);

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
    let attack = prepare(plan)?;
    let (tx, rx) = mpsc::channel();
    let setups = attack.setups(&tx, interrupt)?;
    let handles = spawn(setups, tx, interrupt)?;
    wait_for_start(attack.t0, observer, interrupt);
    let (collected, collector_cpu) = attack.collect(&rx, handles, observer)?;
    let context = RunContext {
        t0: attack.t0,
        started_at: attack.started_at,
        collector_cpu,
        fd_limit: attack.fd_limit,
        interrupted: interrupt.is_triggered(),
        targets: attack.targets,
        dimensions: attack.dimensions,
    };
    Ok(assemble(&attack.plan, collected, &context))
}

/// Tells the observer how long until t0 while the workers wait for a `--start-at`; returns
/// at t0 or at once on an interrupt (the workers see it too).
fn wait_for_start(t0: Instant, observer: &mut dyn Observer, interrupt: &Interrupt) {
    const TICK: Duration = Duration::from_millis(100);
    loop {
        let left = t0.saturating_duration_since(Instant::now());
        if left <= TICK || interrupt.is_triggered() {
            return;
        }
        observer.on_waiting(left);
        std::thread::sleep(TICK.min(left - TICK));
    }
}

/// An attack checked and ready to start.
struct Attack {
    plan: Arc<AttackPlan>,
    targets: Option<TargetSummary>,
    threads: u32,
    /// With `--passes`: the targets in the list and the passes over it.
    passes: Option<(u64, u64)>,
    fd_limit: u64,
    t0: Instant,
    started_at: SystemTime,
    tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    hlog: Option<(File, PathBuf)>,
    /// The breakdowns' dimensions by target and their names.
    dimensions: Arc<Dimensions>,
    /// The target lists held in memory, prepared as their client sends them.
    held: Option<Arc<Held>>,
}

fn prepare(mut plan: AttackPlan) -> Result<Attack, EngineError> {
    assert!(
        plan.threads > 0 && plan.connections() > 0,
        "plan needs threads and connections"
    );
    if let Load::Open { rate, .. } = &plan.load {
        let peak = rate.peak_rate();
        assert!(
            peak > 0.0 && peak.is_finite(),
            "open loop needs a positive rate"
        );
    }
    let fd_limit = env::raise_fd_limit();
    let mut targets = plan
        .targets
        .as_ref()
        .map(TargetPlan::validate)
        .transpose()
        .map_err(EngineError::Targets)?;
    check_hosts(&plan, targets.as_ref())?;
    check_shard(&plan)?;
    check_capacity(&plan, fd_limit)?;
    let (threads, passes) = deal_targets(&mut plan, targets.as_ref())?;
    if plan.protocol.is_quic() && plan.tls.is_none() {
        return Err(tls::TlsError::QuicNeedsTls.into());
    }
    let tls = plan
        .tls
        .as_ref()
        .map(|options| {
            tls::client_config(options, plan.protocol.alpn(), plan.protocol.early_data())
        })
        .transpose()?;
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
    let (t0, started_at) = start_time(plan.start_at);
    let dimensions = Arc::new(Dimensions::new(&plan, targets.as_ref()));
    // The lists held are prepared once for every worker, and only that form is kept.
    let loaded = targets.as_mut().and_then(|t| t.loaded.take());
    let held = loaded.map(|loaded| {
        let loaded = Arc::try_unwrap(loaded).unwrap_or_else(|shared| (*shared).clone());
        let form = (plan.protocol.sends_prepared_bytes(), plan.tls.is_some());
        Arc::new(Held::prepare(
            loaded,
            &Prepared::new(&plan),
            &dimensions,
            form,
        ))
    });
    Ok(Attack {
        held,
        plan: Arc::new(plan),
        dimensions,
        targets,
        threads,
        passes,
        fd_limit,
        t0,
        started_at,
        tls,
        hlog,
    })
}

/// Workers start together at t0: shortly from now, or at `--start-at`.
fn start_time(start_at: Option<SystemTime>) -> (Instant, SystemTime) {
    let now = (Instant::now(), SystemTime::now());
    match start_at.map(|at| at.duration_since(now.1)) {
        Some(Ok(wait)) if wait > LEAD => (now.0 + wait, now.1 + wait),
        _ => (now.0 + LEAD, now.1 + LEAD),
    }
}

/// Targets naming other hosts need an address for them: vload sends to one server.
fn check_hosts(plan: &AttackPlan, targets: Option<&TargetSummary>) -> Result<(), EngineError> {
    let Some(summary) = targets else {
        return Ok(());
    };
    let base = plan
        .request
        .url
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let others: Vec<&String> = summary.hosts.iter().filter(|h| **h != base).collect();
    if !plan.connect_to_set && !others.is_empty() {
        let named: Vec<&str> = others.iter().take(3).map(|h| h.as_str()).collect();
        return Err(EngineError::ManyHosts(named.join(", ")));
    }
    Ok(())
}

fn shard_error(shard: Shard, what: &str) -> EngineError {
    EngineError::Shard(format!(
        "shard {}/{} gets no {what}: the attack has too few for {} shards",
        shard.index, shard.count, shard.count
    ))
}

/// A shard must get a connection and, with `-n`, a request.
fn check_shard(plan: &AttackPlan) -> Result<(), EngineError> {
    let shard = plan.own_shard();
    if plan.own_connections() == 0 {
        return Err(shard_error(
            shard,
            "connection (give -c at least the shard count)",
        ));
    }
    if plan.own_requests() == Some(0) {
        return Err(shard_error(
            shard,
            "request (give -n at least the shard count)",
        ));
    }
    Ok(())
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
            "{connections} connections need about {fd_needed} file descriptors but this process may open {fd_limit} (ulimit -n, raised to its hard limit): lower -c/--max-connections or raise the hard limit"
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

/// The worker threads the targets allow (each needs a share of a list it walks in order),
/// and with `--passes` the request count they make.
fn deal_targets(
    plan: &mut AttackPlan,
    targets: Option<&TargetSummary>,
) -> Result<(u32, Option<(u64, u64)>), EngineError> {
    let threads = plan.threads.min(plan.own_connections());
    let (Some(tp), Some(summary)) = (&plan.targets, targets) else {
        return Ok((threads, None));
    };
    let shard = plan.own_shard();
    let total: u64 = summary.sets.iter().map(|s| s.targets).sum();
    // Every shard takes every Nth target from its index.
    if summary
        .sets
        .iter()
        .any(|s| share(s.targets, shard.count, shard.index) == 0)
    {
        return Err(shard_error(
            shard,
            "target (a target file has fewer entries than shards)",
        ));
    }
    let own = share(total, shard.count, shard.index);
    let threads = if matches!(tp.pick, Pick::Random { .. }) {
        threads
    } else {
        threads.min(u32::try_from(own).unwrap_or(u32::MAX)).max(1)
    };
    let Some(passes) = tp.passes else {
        return Ok((threads, None));
    };
    let requests = passes.checked_mul(total).ok_or_else(|| {
        EngineError::Capacity(format!(
            "--passes {passes} over {total} targets is more requests than can be counted"
        ))
    })?;
    plan.stop.requests = Some(requests);
    Ok((threads, Some((total, passes))))
}

/// Worker `worker` of `workers`' share of the open loop's arrivals; `None` in closed loop.
fn schedule_for(plan: &AttackPlan, t0: Instant, worker: u32, workers: u32) -> Option<Schedule> {
    let Load::Open { rate, arrival, .. } = &plan.load else {
        return None;
    };
    // Every worker of every shard follows the whole attack's curve and takes its share.
    let curve = Arc::new(Curve::new(rate, plan.warmup));
    Some(match *arrival {
        Arrival::Constant => Schedule::paced(t0, curve, worker, workers),
        Arrival::Poisson { seed } => Schedule::poisson(t0, curve, seed, worker, workers),
    })
}

impl Attack {
    /// Every worker's setup, before any starts: nothing may attack if a target file fails
    /// to open.
    fn setups(
        &self,
        tx: &mpsc::Sender<WorkerMsg>,
        interrupt: &Interrupt,
    ) -> Result<Vec<WorkerSetup>, EngineError> {
        (0..self.threads)
            .map(|id| self.setup(id, tx, interrupt))
            .collect()
    }

    fn setup(
        &self,
        id: u32,
        tx: &mpsc::Sender<WorkerMsg>,
        interrupt: &Interrupt,
    ) -> Result<WorkerSetup, EngineError> {
        let plan = &self.plan;
        let shard = plan.own_shard();
        // Worker `id` of shard i is worker i + N * id of the whole attack: schedules and
        // target lists are dealt over all shards' workers at once.
        let (global, workers) = (shard.index + shard.count * id, shard.count * self.threads);
        let source = match (&plan.targets, &self.targets, &plan.catalogue) {
            (Some(tp), Some(summary), _) => Source::Files(
                FileStream::new(tp, summary, global, workers, shard)
                    .map_err(EngineError::Targets)?,
                self.held.clone(),
            ),
            (_, _, Some(catalogue)) => Source::Catalogue(Box::new(
                catalogue.sampler(global, workers).starting_at(self.t0),
            )),
            _ => Source::Own,
        };
        Ok(WorkerSetup {
            id,
            plan: plan.clone(),
            t0: self.t0,
            connections: share(u64::from(plan.own_connections()), self.threads, id) as u32,
            requests: match self.passes {
                Some((total, passes)) => Some(workload::pass_share(total, passes, global, workers)),
                None => plan.own_requests().map(|n| share(n, self.threads, id)),
            },
            schedule: schedule_for(plan, self.t0, global, workers),
            source: Some(source),
            dimensions: self.dimensions.clone(),
            tls: self.tls.clone(),
            to_collector: tx.clone(),
            interrupt: interrupt.subscribe(),
        })
    }

    /// Collects every interval until the workers are done, then joins them; returns what
    /// was collected and the collector's own CPU time.
    fn collect(
        &self,
        rx: &mpsc::Receiver<WorkerMsg>,
        handles: Vec<JoinHandle<()>>,
        observer: &mut dyn Observer,
    ) -> Result<(Collected, Duration), EngineError> {
        let cpu_start = thread_cpu_time();
        let setup = CollectSetup {
            workers: self.threads,
            t0: self.t0,
            warmup: self.plan.warmup,
            planned: self.plan.stop.duration,
            planned_requests: self.plan.own_requests(),
            open_loop: self.plan.is_open_loop(),
            started_at: self.started_at,
        };
        let hlog = self.hlog.as_ref().map(|(file, path)| {
            (
                file.try_clone().expect("a fresh file can be duplicated"),
                path.as_path(),
            )
        });
        let collected = collect(rx, &setup, observer, hlog);
        let collector_cpu = thread_cpu_time().saturating_sub(cpu_start);
        let panicked = handles.into_iter().map(|h| h.join()).any(|r| r.is_err());
        let collected = collected?;
        if panicked || collected.summaries.len() != self.threads as usize {
            return Err(EngineError::WorkerPanicked);
        }
        Ok((collected, collector_cpu))
    }
}

/// Starts a thread per worker; if one cannot start, stops those that did.
fn spawn(
    setups: Vec<WorkerSetup>,
    tx: mpsc::Sender<WorkerMsg>,
    interrupt: &Interrupt,
) -> Result<Vec<JoinHandle<()>>, EngineError> {
    let mut handles = Vec::new();
    for setup in setups {
        let name = format!("vload-worker-{}", setup.id);
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || worker::run(setup))
        {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                interrupt.trigger();
                drop(tx);
                handles.into_iter().for_each(|h| drop(h.join()));
                return Err(EngineError::Thread(e));
            }
        }
    }
    Ok(handles)
}

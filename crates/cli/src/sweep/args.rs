//! `vload sweep`'s flags, and the attack each step runs.

use std::time::Duration;

use anyhow::bail;
use vload_schema::SloTerm;

use crate::attack::AttackArgs;
use crate::attack::flags::{
    ArrivalArg, ConnectionArgs, LoadArgs, OutputArgs, Rate, RequestArgs, ServerArgs,
};
use crate::attack::targets::TargetArgs;
use crate::parse;

/// Find the highest rate a server holds within an SLO: open-loop steps of rising rate, each
/// a run of its own with its own warm-up, until a step misses the SLO.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SweepArgs {
    /// Target URL, http://host[:port]/path (default: where the targets point, or a built-in
    /// origin on 127.0.0.1 started for this sweep).
    pub(crate) url: Option<String>,
    #[command(flatten, next_help_heading = "Sweep")]
    pub(crate) sweep: SweepFlags,
    #[command(flatten, next_help_heading = "Request")]
    pub(crate) request: RequestArgs,
    #[command(flatten, next_help_heading = "Targets")]
    pub(crate) targets: TargetArgs,
    #[command(flatten, next_help_heading = "Cache workload")]
    pub(crate) cache: crate::attack::cache::CacheArgs,
    #[command(flatten, next_help_heading = "Connection")]
    pub(crate) connection: ConnectionArgs,
    #[command(flatten, next_help_heading = "Output")]
    pub(crate) output: OutputArgs,
    #[command(flatten, next_help_heading = "Server")]
    pub(crate) server: ServerArgs,
}

/// The steps' rates, ascending.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rates(pub(crate) Vec<f64>);

/// The objective every step is held to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slo(pub(crate) Vec<SloTerm>);

fn rates_arg(text: &str) -> Result<Rates, String> {
    parse::rates(text).map(Rates)
}

fn slo_arg(text: &str) -> Result<Slo, String> {
    vload_analyze::slo::parse(text).map(Slo)
}

/// The steps and what each must meet.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SweepFlags {
    /// Rates of the steps: FROM..TO/STEP (1k..20k/1k) or a list (1k,2k,5k,10k).
    #[arg(long, value_parser = rates_arg)]
    pub(crate) rates: Rates,
    /// The objective each step must meet, in a steady state: p50, p90, p99 or p99.9 of the
    /// response time (from the intended send) below a limit, and errors (requests due
    /// without an expected status: failed, never sent, or another status) below a share,
    /// e.g. 'p99<10ms,errors<0.1%'.
    #[arg(long, value_parser = slo_arg)]
    pub(crate) slo: Slo,
    /// Measured length of each step (5s at least: a shorter one is lengthened, since the
    /// steady-state test needs 5 measured seconds).
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub(crate) stage: Duration,
    /// Warm-up before each step, at its rate, left out of its results.
    #[arg(long, value_parser = parse::duration, default_value = "2s")]
    pub(crate) warmup: Duration,
    /// After the first step that misses the SLO, bisect between it and the last that met it,
    /// to within 2% (default: stop at the first miss).
    #[arg(long)]
    pub(crate) find_max: bool,
    /// Run a step again up to N times when the machine, not the server, may have caused its
    /// miss (its health names the machine) or kept its load from being applied; with
    /// --find-max, run the answer again to confirm it (a miss overturns it). A miss with no
    /// sign of the machine, or whose throughput fell behind its rate, counts at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) retries: u32,
    /// Spacing of requests within a step.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Constant)]
    pub(crate) arrival: ArrivalArg,
    /// Seed of the Poisson arrivals and of --pick random (default: 1).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Most connections a step may open (default: 10000).
    #[arg(long)]
    pub(crate) max_connections: Option<u32>,
    /// Worker threads (default: all cores, or half of them for a loopback target).
    #[arg(short = 't', long)]
    pub(crate) threads: Option<u32>,
}

impl SweepArgs {
    /// Refuses a sweep that cannot answer: flags that bound a run otherwise, and quantiles
    /// the steps are too short to measure.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        let s = &self.sweep;
        if self.output.fail_if.is_some() {
            bail!(
                "--fail-if judges one run, and a sweep runs one per step, each held to --slo: drop it, and use --slo"
            );
        }
        if self.output.hlog.is_some() {
            bail!("--hlog records one run, and a sweep runs one per step: drop it");
        }
        if self.targets.passes.is_some() {
            bail!("a sweep's steps last --stage each: drop --passes");
        }
        crate::attack::flags::whole_seconds("--warmup", s.warmup)?;
        if s.retries > 5 {
            bail!(
                "--retries {}: at most 5 (a miss that repeats 5 times is the server's)",
                s.retries
            );
        }
        if s.stage.is_zero() {
            bail!("--stage must be longer than 0s");
        }
        let lowest = s.rates.0.first().copied().unwrap_or(0.0);
        if lowest < self.floor() {
            let (name, needed) = self.needed().expect("a floor comes from a quantile");
            bail!(
                "{name} needs {needed} responses a step, and the lowest step ({}) would take {:.0}s to send them, over 10 times --stage {}: raise the lowest rate or lengthen --stage",
                vload_analyze::units::rate(lowest),
                needed as f64 / lowest,
                humantime::format_duration(s.stage)
            );
        }
        Ok(())
    }

    /// The SLO's highest quantile, by name, and the responses a step needs to measure it.
    fn needed(&self) -> Option<(&'static str, u64)> {
        self.sweep
            .slo
            .0
            .iter()
            .filter_map(|t| {
                let q = vload_analyze::slo::quantile_of(t.metric)?;
                Some((
                    vload_analyze::slo::metric_name(t.metric),
                    vload_analyze::samples_needed(q),
                ))
            })
            .max_by_key(|(_, n)| *n)
    }

    /// The lowest rate a step may have: one that measures the SLO's quantiles in at most
    /// ten times --stage.
    pub(crate) fn floor(&self) -> f64 {
        self.needed().map_or(0.0, |(_, n)| {
            n as f64 / (10.0 * self.sweep.stage.as_secs_f64())
        })
    }

    /// How long the step at `rate` is measured: --stage, or longer when a step would be too
    /// short to show whether it was steady (5 seconds) or a slow step would not send enough
    /// requests to measure the SLO's quantiles (p99 needs 1,000).
    pub(crate) fn stage_for(&self, rate: f64) -> Duration {
        let steady = Duration::from_secs(vload_analyze::selfcheck::STEADY_SECONDS as u64);
        let stage = self.sweep.stage.max(steady);
        match self.needed() {
            Some((_, n)) if rate > 0.0 && (n as f64 / rate) > stage.as_secs_f64() => {
                Duration::from_secs((n as f64 / rate).ceil() as u64)
            }
            _ => stage,
        }
    }

    /// The attack of the step at `rate`; `with_output` keeps the sweep's -o (the session
    /// checks it once, before anything is sent).
    pub(crate) fn step(&self, rate: f64, with_output: bool) -> AttackArgs {
        self.step_for(rate, self.stage_for(rate), with_output)
    }

    /// The answer's confirmation at `rate`: held [`CONFIRM_HOLD`] times its stage.
    pub(crate) fn confirmation(&self, rate: f64) -> AttackArgs {
        let stage = self.stage_for(rate) * vload_analyze::sweep::CONFIRM_HOLD;
        self.step_for(rate, stage, false)
    }

    fn step_for(&self, rate: f64, stage: Duration, with_output: bool) -> AttackArgs {
        let s = &self.sweep;
        AttackArgs {
            url: self.url.clone(),
            load: LoadArgs {
                connections: None,
                rate: Some(Rate::PerSecond(rate)),
                latency: false,
                arrival: s.arrival,
                seed: s.seed,
                max_connections: s.max_connections,
                duration: Some(stage),
                requests: None,
                until_stable: None,
                max_duration: None,
                warmup: s.warmup,
                threads: s.threads,
                shard: None,
                start_at: None,
            },
            request: self.request.clone(),
            history: crate::history::ProvenanceArgs::default(),
            targets: self.targets.clone(),
            cache: self.cache.clone(),
            stampede: crate::stampede::StampedeArgs::default(),
            outage: crate::outage::OutageArgs::default(),
            connection: self.connection.clone(),
            output: OutputArgs {
                output: if with_output {
                    self.output.output.clone()
                } else {
                    None
                },
                label: self.output.label.clone(),
                hlog: None,
                no_progress: self.output.no_progress,
                progress_every: self.output.progress_every,
                metrics_listen: None,
                metrics_remote_write: None,
                metrics_linger: std::time::Duration::ZERO,
                dashboard: None,
                dashboard_linger: std::time::Duration::ZERO,
                quiet: self.output.quiet,
                brief: false,
                fail_if: None,
                expect_status: self.output.expect_status.clone(),
                server_timing: vload_engine::SERVER_TIMING_METRIC.to_owned(),
            },
            server: self.server.clone(),
        }
    }
}

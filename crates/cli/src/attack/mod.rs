//! `vload attack`: where the load goes, the plan, and running it.

pub(crate) mod args;
pub(crate) mod cache;
pub(crate) mod flags;
mod notes;
pub(crate) mod targets;

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use vload_engine::{AttackPlan, Interrupt, Observer, Progress};
use vload_schema::RunFile;

pub(crate) use args::AttackArgs;

use crate::output::Destination;
use crate::progress::{ProgressLine, ProgressMode};
use crate::server::watch::ServerWatch;
use crate::stable::StableWatch;
use crate::{finish, paint};

/// What `vload attack` did: the run, where it goes, and the signal that ended it early.
pub(crate) struct Attack {
    pub(crate) run: RunFile,
    pub(crate) output: Option<Destination>,
    pub(crate) signal: Option<i32>,
    /// The signal watch, for the waits after the run file is written.
    pub(crate) signals: crate::signals::Signals,
    /// The `--metrics-listen` endpoint, still answering until told to finish.
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    /// The `--dashboard` page, still answering until told to finish.
    pub(crate) dashboard: Option<crate::dashboard::Dashboard>,
}

/// Where the load goes when no URL is given: the URL of the first absolute target (so a
/// vegeta user's `--targets` file is sent where it says), the --connect-to address, or, when
/// nothing names a server, the built-in origin.
enum Aim {
    Url(String),
    BuiltIn,
}

impl AttackArgs {
    fn aim(&self) -> anyhow::Result<Aim> {
        if let Some(url) = &self.url {
            return Ok(Aim::Url(url.clone()));
        }
        let connect_to = &self.connection.connect_to;
        let Some(targets) = self.targets.plan(self.load.seed)? else {
            return Ok(match connect_to {
                Some(to) => Aim::Url(format!("http://{to}/")),
                None => Aim::BuiltIn,
            });
        };
        let summary = targets.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let files = targets
            .sets
            .iter()
            .map(|s| format!("'{}'", s.path.display()))
            .collect::<Vec<_>>()
            .join(", ");
        let origin = match (&summary.first_origin, summary.paths, connect_to) {
            (Some(origin), 0, _) | (Some(origin), _, Some(_)) => origin.clone(),
            (Some(_), paths, None) => bail!(
                "{files} holds both absolute URLs and {paths} paths, and no URL was given for the paths: give the URL they resolve against, e.g. vload attack {} http://host:port/",
                self.targets.flag()
            ),
            (None, _, Some(to)) => format!("http://{to}"),
            (None, _, None) => return Ok(Aim::BuiltIn),
        };
        if summary.schemes.0 > 0 && summary.schemes.1 > 0 {
            bail!(
                "{files} mixes http:// and https:// URLs and no URL was given: vload speaks one of them per attack; give the URL, e.g. vload attack {} https://host/",
                self.targets.flag()
            );
        }
        Ok(Aim::Url(format!("{origin}/")))
    }
}

/// What stays up across the runs of one command: the signal watch, the run file's
/// destination (checked before anything is sent), and where the load goes (the built-in
/// origin, when nothing names a server, alive until the session ends).
pub(crate) struct Session {
    pub(crate) interrupt: Interrupt,
    signals: crate::signals::Signals,
    pub(crate) output: Option<Destination>,
    url: String,
    origin: Option<vload_origin::OriginHandle>,
}

impl Session {
    /// Installs the signal handlers, checks the output, and finds the server.
    pub(crate) fn open(args: &AttackArgs) -> anyhow::Result<Session> {
        // First, so that a Ctrl-C while files are read ends vload cleanly.
        let interrupt = Interrupt::new();
        let signals =
            crate::signals::watch(interrupt.clone()).context("cannot install signal handlers")?;
        let output = args
            .output
            .output
            .as_deref()
            .map(|path| crate::output::check(path, "run file"))
            .transpose()?;
        let (url, origin) = match args.aim()? {
            Aim::Url(url) => (url, None),
            Aim::BuiltIn => {
                let origin = vload_origin::spawn(vload_origin::OriginConfig {
                    threads: Some(1),
                    ..vload_origin::OriginConfig::loopback()
                })
                .context("cannot start the built-in origin")?;
                (origin.url(), Some(origin))
            }
        };
        Ok(Session {
            interrupt,
            signals,
            output,
            url,
            origin,
        })
    }

    /// The plan `args` make against this session's server.
    pub(crate) fn plan(&self, args: &AttackArgs) -> anyhow::Result<AttackPlan> {
        let mut plan = args.plan(&self.url)?;
        // The built-in origin answers any Host: targets naming other hosts all go to it.
        plan.connect_to_set |= self.origin.is_some();
        Ok(plan)
    }

    /// Runs one attack of `plan` to its run file, with the progress line and the server's
    /// counters as `args` ask.
    pub(crate) fn attack(&self, args: &AttackArgs, plan: AttackPlan) -> anyhow::Result<RunFile> {
        self.attack_with(args, plan, (None, None))
    }

    /// [`Session::attack`], the figures also served to `metrics` as they come.
    fn attack_with(
        &self,
        args: &AttackArgs,
        plan: AttackPlan,
        (metrics, dashboard): (
            Option<&mut crate::metrics::Metrics>,
            Option<&mut crate::dashboard::Dashboard>,
        ),
    ) -> anyhow::Result<RunFile> {
        let every = args.output.progress_every;
        let mode = if args.output.no_progress || args.output.quiet {
            ProgressMode::Off
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Live
        } else if every.is_zero() {
            ProgressMode::Off
        } else {
            ProgressMode::Every(every)
        };
        let mut progress = ProgressLine::new(mode);
        // The server's counters before anything is sent: a wrong name fails here, not after.
        let mut watch = ServerWatch::start(&args.server, &plan)?;
        let mut stable = args
            .load
            .until_stable
            .zip(args.load.max_duration)
            .map(|(target, max)| StableWatch::new(target, max, self.interrupt.clone()));
        let warmed = self.warm(args, &plan, &mut watch)?;
        let spec = args.cache.purges(plan.tls.is_some())?;
        // The origin's plan begins now, with the attack: both keep one clock (a post that
        // fails stops the attack before anything else starts).
        let origin = crate::outage::Posted::post(args.origin_plan(&plan)?, plan.warmup)?;
        let mut plan = plan;
        // The objects purged are watched: their refetches are counted on them.
        plan.watched_objects = spec.as_ref().map_or(0, |s| s.objects);
        let mut purger = crate::purge::Purger::start(spec.as_ref(), &plan);
        let stampeder = stampede(args, &plan)?;
        let result = vload_engine::run(
            plan,
            &mut Observers(
                &mut progress,
                &mut watch,
                stable.as_mut(),
                metrics,
                purger.as_mut(),
                dashboard,
                stampeder.as_ref(),
            ),
            &self.interrupt,
        );
        progress.clear();
        let mut run = result?;
        // A signal after the window still ends the run early: the side channels hurry.
        run.interrupted |= self.interrupt.is_triggered();
        run.purges = purger.map(|p| p.finish(run.interrupted));
        run.stampede = stampeder.and_then(crate::stampede::Stampeder::finish);
        crate::outage::Posted::finish(origin, &mut run);
        if let Some(warmed) = warmed {
            run.warmed = Some(warmed);
            // The warm-up run's requests warmed the cache too: the model counts them.
            run.cache_model = vload_cache::remodel(&run).or(run.cache_model);
        }
        watch.finish(&mut run);
        run.until_stable = stable.map(|s| s.record());
        // A signal while the side channels finished: the file says so, as the exit code will.
        run.interrupted |= self.interrupt.is_triggered();
        Ok(run)
    }

    /// `--warmup-until`'s warm-up, before the attack. The server's counters are read afresh
    /// after it, so that they cover the attack alone, as vload's own counts do (read before,
    /// Varnish counted the warm-up's requests as the window's, and the report blamed the
    /// cache headers for the difference).
    fn warm(
        &self,
        args: &AttackArgs,
        plan: &AttackPlan,
        watch: &mut ServerWatch,
    ) -> anyhow::Result<Option<vload_schema::WarmRecord>> {
        let Some(rule) = &args.cache.warmup_until else {
            return Ok(None);
        };
        let max = args.cache.warmup_max.unwrap_or(Duration::from_secs(300));
        let warmed = crate::warm::warm_up(
            plan,
            rule == "pass",
            max,
            &self.interrupt,
            args.output.quiet,
        )?;
        *watch = ServerWatch::start(&args.server, plan)?;
        Ok(Some(warmed))
    }

    /// True when vload started its own origin.
    pub(crate) fn builtin(&self) -> bool {
        self.origin.is_some()
    }

    /// The signal that ended the session early, if one came.
    pub(crate) fn signal(&self) -> Option<i32> {
        self.signals.received()
    }
}

/// Runs `vload attack` up to its run file, which the caller writes after the report.
pub(crate) fn run(args: &AttackArgs) -> anyhow::Result<Attack> {
    let session = Session::open(args)?;
    let plan = session.plan(args)?;
    let out = &args.output;
    let mut metrics = (out.metrics_listen.is_some() || out.metrics_remote_write.is_some())
        .then(|| {
            crate::metrics::Metrics::start(
                out.metrics_listen,
                out.metrics_remote_write.clone(),
                args.load.shard,
            )
        })
        .transpose()?;
    if let Some(addr) = metrics.as_ref().and_then(crate::metrics::Metrics::addr) {
        let open = if addr.ip().is_loopback() {
            ""
        } else {
            " (unauthenticated: anyone who reaches this address reads the run's figures)"
        };
        crate::paint::say!("vload: metrics for Prometheus at http://{addr}/metrics{open}");
    }
    let mut dashboard = out
        .dashboard
        .map(crate::dashboard::Dashboard::start)
        .transpose()?;
    if let Some(d) = &dashboard {
        let addr = d.addr();
        let open = if addr.ip().is_loopback() {
            ""
        } else {
            " (unauthenticated: anyone who reaches this address reads the run's figures)"
        };
        crate::paint::say!("vload: live page at http://{addr}/{open}");
    }
    announce(&plan, session.builtin(), args.url.is_none());
    let run = session.attack_with(args, plan, (metrics.as_mut(), dashboard.as_mut()))?;
    let signal = session.signal();
    Ok(Attack {
        run,
        output: session.output,
        signal,
        signals: session.signals.clone(),
        metrics,
        dashboard,
    })
}

/// `--stampede`'s events against `plan`'s server, for its warm-up and window.
fn stampede(
    args: &AttackArgs,
    plan: &AttackPlan,
) -> anyhow::Result<Option<crate::stampede::Stampeder>> {
    let Some(spec) = args.stampede.spec(plan.tls.is_some())? else {
        return Ok(None);
    };
    let host = crate::purge::host_of(plan);
    let window = plan.stop.duration.map(|d| d + plan.warmup);
    crate::stampede::Stampeder::start(Some(&spec), plan.connect_to, &host, window)
}

/// The observers of one attack.
struct Observers<'a>(
    &'a mut ProgressLine,
    &'a mut ServerWatch,
    Option<&'a mut StableWatch>,
    Option<&'a mut crate::metrics::Metrics>,
    Option<&'a mut crate::purge::Purger>,
    Option<&'a mut crate::dashboard::Dashboard>,
    Option<&'a crate::stampede::Stampeder>,
);

impl Observer for Observers<'_> {
    #[allow(
        clippy::print_stderr,
        reason = "a warning that part of the output is lost"
    )]
    fn on_warning(&mut self, warning: &str) {
        self.0.suspend(|| {
            crate::paint::say!("vload: warning: {}", vload_analyze::units::clean(warning))
        });
    }

    fn on_waiting(&mut self, until_start: std::time::Duration) {
        self.0.on_waiting(until_start);
    }

    fn on_interval(&mut self, p: &Progress) {
        self.1.on_interval(p);
        self.0.on_interval(p);
        let stampede = self.6.map(crate::stampede::Stampeder::live);
        if let Some(metrics) = &mut self.3 {
            metrics.on_interval(p);
            metrics.on_stampede(stampede);
        }
        if let Some(dashboard) = &mut self.5 {
            dashboard.on_interval(p);
            dashboard.on_server(p.elapsed.as_secs_f64(), self.1.latest());
            dashboard.on_stampede(stampede);
        }
    }

    fn on_record(&mut self, interval: &vload_schema::Interval) {
        if let Some(stable) = &mut self.2 {
            stable.on_record(interval);
        }
        if let Some(metrics) = &mut self.3 {
            metrics.on_record(interval);
        }
        if let Some(purger) = &mut self.4 {
            purger.on_record(interval);
        }
        if let Some(dashboard) = &mut self.5 {
            dashboard.on_record(interval);
        }
    }
}

#[allow(clippy::print_stderr, reason = "the cli's own status line")]
pub(crate) fn announce(plan: &AttackPlan, builtin: bool, from_targets: bool) {
    let target = vload_analyze::units::clean(&plan.request.url.to_string()).into_owned();
    let origin = match (builtin, from_targets) {
        (true, _) => " (the built-in origin: no URL given, and nothing names a server)",
        (false, true) => " (no URL given: where the targets and --connect-to point)",
        (false, false) => "",
    };
    let why = if plan.connect_to.ip().is_loopback()
        && plan.threads * 2 <= vload_engine::available_cores()
    {
        " (loopback target: the other cores are left to the server)"
    } else {
        ""
    };
    let threads = format!(
        "{} thread{}",
        plan.threads,
        if plan.threads == 1 { "" } else { "s" }
    );
    let address = if plan.connect_to_set && !builtin {
        format!(" at {}", plan.connect_to)
    } else {
        String::new()
    };
    crate::paint::say!("vload: attacking {target}{address}{origin} with {threads}{why}");
}

/// `vload attack`: runs it, prints the report, writes the run file, and exits as the run
/// deserves (see [`crate::finish`]).
pub(crate) fn command(args: &AttackArgs) -> anyhow::Result<ExitCode> {
    if args.load.capped_by_connections() {
        paint::say!(
            "vload: note: with --rate, -c {} caps the connections (--max-connections {0}), as in wrk2",
            args.load.connections.unwrap_or_default()
        );
    }
    if args.load.latency {
        paint::say!("vload: note: --latency is wrk's: vload always reports latency percentiles");
    }
    let line: Vec<String> = std::env::args().collect();
    if let Some(note) = notes::threads_flag(&line) {
        paint::say!("vload: note: {note}");
    }
    // Targets read from stdin are copied out of it before the load: what is left there at the
    // end was never read.
    let mut stdin_noted = false;
    if !line.iter().any(|a| a == "-" || a.ends_with("=-"))
        && let Some(note) = notes::unread_stdin()
    {
        paint::say!("vload: note: {note}");
        stdin_noted = true;
    }
    // Hashed before the attack: a wrong path fails now, not after the load.
    let config_files = args.history.config()?;
    let Attack {
        mut run,
        output,
        signal,
        signals,
        metrics,
        dashboard,
    } = run(args)?;
    targets::name_as_given(&mut run);
    if !stdin_noted && let Some(note) = notes::unread_stdin() {
        paint::say!("vload: note: {note}");
    }
    run.checks = vload_analyze::selfcheck::run_checks(&run).context("checking the run")?;
    run.provenance = args.history.provenance(config_files);
    let balanced = finish::ledger_balances(&run);
    let code = finish::report_and_save(
        &run,
        output.as_ref(),
        signal,
        (args.output.quiet, args.output.brief),
    );
    let late = waits_after_the_file(args, &run, (signal, &signals), (dashboard, metrics));
    let code = code?;
    if let Some(late) = late
        && signal.is_none()
    {
        paint::say!(
            "vload: signal {late} after the run file was written: the run is complete, vload stops waiting"
        );
        return Ok(ExitCode::from(128 + late as u8));
    }
    if !balanced {
        return Ok(ExitCode::from(2));
    }
    if code == ExitCode::SUCCESS
        && let Some(error) = finish::no_success(&run)
    {
        return Err(error);
    }
    if code == ExitCode::SUCCESS {
        return finish::thresholds(&run, args.output.fail_if.as_ref());
    }
    Ok(code)
}

/// The waits after the run file is written (the history's lock, the lingers): each ends at
/// once on a signal, which is returned (the exit code then says it).
fn waits_after_the_file(
    args: &AttackArgs,
    run: &RunFile,
    (signal, signals): (Option<i32>, &crate::signals::Signals),
    (dashboard, metrics): (
        Option<crate::dashboard::Dashboard>,
        Option<crate::metrics::Metrics>,
    ),
) -> Option<i32> {
    // After an interrupted run a second signal quits at once, as during it.
    let signals = signal.is_none().then_some(signals);
    let mut late = None;
    if args.history.history {
        late = crate::history::store_run_unless(&args.history, run, signals);
    }
    late.or_else(|| {
        linger(
            run,
            (dashboard, args.output.dashboard_linger),
            (metrics, args.output.metrics_linger),
            signals,
        )
    })
}

/// The last look and the last scrape, after the run file is written: the live page shows
/// the run's own figures for its linger and the metrics listener answers for its own, both
/// counted from now; a signal ends both at once and is returned.
fn linger(
    run: &RunFile,
    (dashboard, dashboard_linger): (Option<crate::dashboard::Dashboard>, std::time::Duration),
    (metrics, metrics_linger): (Option<crate::metrics::Metrics>, std::time::Duration),
    signals: Option<&crate::signals::Signals>,
) -> Option<i32> {
    let now = std::time::Instant::now();
    let mut dashboard = dashboard.map(|mut d| {
        d.show_final(run);
        (now + dashboard_linger, d)
    });
    let mut metrics = metrics.map(|mut m| {
        m.show_final(run.client_health.verdict.word());
        let linger = if m.serving() {
            metrics_linger
        } else {
            std::time::Duration::ZERO
        };
        (now + linger, m)
    });
    let mut signal = None;
    loop {
        let next = [
            dashboard.as_ref().map(|(at, _)| *at),
            metrics.as_ref().map(|(at, _)| *at),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else {
            return signal;
        };
        if signal.is_none() {
            signal = match signals {
                Some(signals) => signals.wait_until(next),
                None => {
                    std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
                    None
                }
            };
        }
        let over = |at: std::time::Instant| signal.is_some() || at <= std::time::Instant::now();
        if dashboard.as_ref().is_some_and(|(at, _)| over(*at)) {
            dashboard.take().expect("checked").1.stop();
        }
        if metrics.as_ref().is_some_and(|(at, _)| over(*at)) {
            metrics.take().expect("checked").1.stop();
        }
    }
}

//! `vload history`: add run files to the store, show series and their change points, check
//! the newest commit (a CI gate), plot, and export for Bencher or github-action-benchmark.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use vload_analyze::Metric;
use vload_history::{Added, Selection, Store};

mod provenance;

pub(crate) use provenance::ProvenanceArgs;

/// `vload history`.
#[derive(Debug, clap::Args)]
pub(crate) struct HistoryArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Debug, clap::Subcommand)]
enum HistoryCommand {
    /// Store run files (idempotent by run id); runs the gate keeps out are stored and marked.
    Add(AddArgs),
    /// Each series: its commits with each metric's median, change points, excluded runs.
    Show(ShowArgs),
    /// Exit 1 when the newest commit starts a confirmed regression, with a summary for CI.
    Check(CheckArgs),
    /// Draw each metric over commits, change points and excluded runs marked, as HTML.
    Plot(PlotArgs),
    /// One commit's figures for Bencher (BMF) or github-action-benchmark.
    Export(ExportArgs),
    /// Remove runs: a series that has ended, a run stored by mistake, what is older than a
    /// cutoff (a series left without runs goes with them).
    Forget(ForgetArgs),
}

#[derive(Debug, clap::Args)]
struct ForgetArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Every run of the series whose key starts with this, or whose label is this
    /// (repeatable).
    #[arg(long, value_name = "KEY|LABEL")]
    series: Vec<String>,
    /// The run with this id (repeatable).
    #[arg(long, value_name = "RUN_ID")]
    run: Vec<String>,
    /// Every run that started longer ago than this, e.g. 90d.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    older_than: Option<std::time::Duration>,
}

/// Where the database is.
#[derive(Debug, clap::Args)]
struct DbArgs {
    /// The history database (SQLite; created when absent) (default: vload-history.db in the
    /// working directory).
    #[arg(long, value_name = "PATH", env = "VLOAD_HISTORY")]
    db: Option<PathBuf>,
}

impl DbArgs {
    fn path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| PathBuf::from(vload_history::DEFAULT_DB))
    }

    /// Opens the store; for a reader, a missing database is an error rather than created.
    fn open(&self, create: bool) -> anyhow::Result<Store> {
        let path = self.path();
        if !create && !path.exists() {
            anyhow::bail!(
                "{}: no history database here: add runs with `vload history add RUN.json` (or name one with --db or VLOAD_HISTORY)",
                path.display()
            );
        }
        Store::open(&path).map_err(|e| anyhow::anyhow!("history database {e}"))
    }
}

/// Which series, runs and metrics.
#[derive(Debug, clap::Args)]
struct SelectArgs {
    /// Only the series whose key starts with this, or whose label is this (default: all).
    #[arg(long, value_name = "KEY|LABEL")]
    series: Option<String>,
    /// Only the runs of this branch (default: every run).
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// The metrics: p50, p99, p99.9, throughput, error_ratio, hit_ratio, server_hit_ratio,
    /// origin_per_request, server_cpu_per_request; repeatable (default: every one a run has).
    #[arg(long = "metric", value_name = "NAME", value_parser = metric)]
    metrics: Vec<Metric>,
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection {
            series: self.series.clone(),
            branch: self.branch.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

fn metric(name: &str) -> Result<Metric, String> {
    vload_history::key::metric_named(name).ok_or_else(|| {
        let names: Vec<&str> = vload_history::key::TRACKED
            .iter()
            .map(|m| vload_history::key::metric_key(*m))
            .collect();
        format!(
            "not a metric history follows: use one of {}",
            names.join(", ")
        )
    })
}

#[derive(Debug, clap::Args)]
struct AddArgs {
    /// Run files written by `vload attack -o` (or `vload report --merge`); - for stdin.
    #[arg(required = true, value_name = "RUN.json")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    select: SelectArgs,
    /// Show this many of the newest commits in each table (change points are listed whatever
    /// their age) (default: 20).
    #[arg(long, value_name = "N", default_value_t = 20)]
    last: usize,
}

/// How `history check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CheckFormat {
    /// Plain text.
    Text,
    /// Markdown, for a CI job's summary or a pull-request comment.
    Markdown,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    select: SelectArgs,
    /// Fail on a confirmed regression larger than this, in percent (percentage points for
    /// ratios such as the hit ratio), e.g. 5 or 5% (default: each metric's own margin, as
    /// in compare).
    #[arg(long, value_name = "PCT", value_parser = crate::parse::percent_margin)]
    fail_if_regressed: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    format: CheckFormat,
}

#[derive(Debug, clap::Args)]
struct PlotArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    select: SelectArgs,
    /// Write the page here; - for stdout (default: vload-history.html).
    #[arg(
        short = 'o',
        long,
        value_name = "PATH",
        default_value = "vload-history.html"
    )]
    output: PathBuf,
}

/// What `history export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormat {
    /// Bencher Metric Format: `bencher run --adapter json`.
    Bmf,
    /// github-action-benchmark's customSmallerIsBetter: latencies, errors, origin share, CPU.
    CustomSmallerIsBetter,
    /// github-action-benchmark's customBiggerIsBetter: throughput and hit ratios.
    CustomBiggerIsBetter,
}

#[derive(Debug, clap::Args)]
struct ExportArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    select: SelectArgs,
    /// The format.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// The commit exported, or a prefix of it (default: each series' newest with valid runs).
    #[arg(long, value_name = "ID")]
    commit: Option<String>,
}

/// `vload history ...`.
pub(crate) fn command(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        HistoryCommand::Add(a) => add(a),
        HistoryCommand::Show(a) => {
            let store = a.db.open(false)?;
            let histories = histories(&store, &a.select)?;
            print(&vload_history::render::show(&histories, a.last))?;
            Ok(ExitCode::SUCCESS)
        }
        HistoryCommand::Check(a) => check(a),
        HistoryCommand::Plot(a) => {
            let store = a.db.open(false)?;
            let page = vload_history::plot::page(&histories(&store, &a.select)?);
            crate::output::write_to(&a.output, &page, "history plot")?;
            if a.output != Path::new("-") {
                crate::paint::say!("vload: history plot written to {}", a.output.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        HistoryCommand::Forget(a) => forget(a),
        HistoryCommand::Export(a) => {
            let store = a.db.open(false)?;
            let h = histories(&store, &a.select)?;
            let commit = a.commit.as_deref();
            if let Some(c) = commit
                && !vload_history::export::knows_commit(&h, c)
            {
                anyhow::bail!(
                    "--commit {c}: no valid run of that commit in the series selected (`vload history show` lists their commits); give one of them, or leave --commit out for the newest"
                );
            }
            let value = match a.format {
                ExportFormat::Bmf => vload_history::export::bmf(&h, commit),
                ExportFormat::CustomSmallerIsBetter => {
                    vload_history::export::github_action_benchmark(&h, commit, false)
                }
                ExportFormat::CustomBiggerIsBetter => {
                    vload_history::export::github_action_benchmark(&h, commit, true)
                }
            };
            print(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `vload history forget`: what is named must exist (a typo forgets nothing, loudly).
fn forget(a: &ForgetArgs) -> anyhow::Result<ExitCode> {
    if a.series.is_empty() && a.run.is_empty() && a.older_than.is_none() {
        anyhow::bail!(
            "history forget: give --series KEY|LABEL, --run RUN_ID or --older-than DURATION"
        );
    }
    let mut store = a.db.open(false)?;
    let all = store.series().context("reading the history database")?;
    let mut keys = Vec::new();
    for want in &a.series {
        let found: Vec<String> = all
            .iter()
            .filter(|s| s.key.key.starts_with(want.as_str()) || s.key.label == *want)
            .map(|s| s.key.key.clone())
            .collect();
        if found.is_empty() {
            let labels: std::collections::BTreeSet<&str> =
                all.iter().map(|s| s.key.label.as_str()).collect();
            let labels: Vec<&str> = labels.into_iter().collect();
            anyhow::bail!(
                "--series {want}: no series has that key or label (labels: {}); `vload history show` lists the series",
                labels.join(", ")
            );
        }
        keys.extend(found);
    }
    for id in &a.run {
        if store
            .file(id)
            .context("reading the history database")?
            .is_none()
        {
            anyhow::bail!("--run {id}: no run with that id in the history database");
        }
    }
    let cutoff = a.older_than.map(|age| {
        humantime::format_rfc3339_millis(std::time::SystemTime::now() - age).to_string()
    });
    let (runs, series) = store
        .forget(&keys, &a.run, cutoff.as_deref())
        .map_err(|e| anyhow::anyhow!("history database {e}"))?;
    crate::paint::say!("vload: forgot {runs} runs; {series} series had no run left and are gone");
    Ok(ExitCode::SUCCESS)
}

fn histories(
    store: &Store,
    select: &SelectArgs,
) -> anyhow::Result<Vec<vload_history::SeriesHistory>> {
    vload_history::histories(store, &select.selection()).context("reading the history database")
}

#[allow(clippy::print_stdout, reason = "the command's output")]
fn print(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Adds each file; one that cannot be read is named and skipped, and the command exits 2
/// after the others are stored.
fn add(args: &AddArgs) -> anyhow::Result<ExitCode> {
    let mut store = args.db.open(true)?;
    let mut failed = 0;
    for file in &args.files {
        // Ids, labels and reasons come from the file: printed with controls escaped.
        match add_one(&mut store, file) {
            Ok(line) => crate::paint::say!("vload: {}", vload_analyze::units::clean(&line)),
            Err(e) => {
                failed += 1;
                let line = format!("{}: {e:#}", file.display());
                crate::paint::say!("vload: error: {}", vload_analyze::units::clean(&line));
            }
        }
    }
    if failed > 0 {
        crate::paint::say!("vload: {failed} of {} files not stored", args.files.len());
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn add_one(store: &mut Store, file: &Path) -> anyhow::Result<String> {
    let text = crate::analysis::read_text(file)?;
    let added = store
        .add(&text, &file.display().to_string())
        .map_err(|e| match e {
            vload_history::StoreError::Run(e) => anyhow::anyhow!("{e}"),
            other => anyhow::anyhow!("history database {other}"),
        })?;
    Ok(describe(&added))
}

/// One line for an added run.
pub(crate) fn describe(added: &Added) -> String {
    match added {
        Added::New {
            run_id,
            series,
            excluded: None,
        } => {
            format!("history: stored run {run_id} in series {series}")
        }
        Added::New {
            run_id,
            series,
            excluded: Some(why),
        } => format!(
            "history: stored run {run_id} in series {series}, kept out of its statistics: {why}"
        ),
        Added::Already { run_id } => format!("history: run {run_id} was stored before: unchanged"),
    }
}

/// [`store_run`] on a thread of its own, waited for until it ends or a signal comes (the
/// database's lock may be held by another adder for up to 30 s): the signal is returned and
/// the run is left unstored, the database as SQLite keeps it after any stop (one commit or
/// none).
pub(crate) fn store_run_unless(
    args: &ProvenanceArgs,
    run: &vload_schema::RunFile,
    signals: Option<&crate::signals::Signals>,
) -> Option<i32> {
    let (args, run) = (args.clone(), run.clone());
    let (done, stored) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("vload-history".into())
        .spawn(move || {
            store_run(&args, &run);
            let _ = done.send(());
        });
    if spawned.is_err() {
        crate::paint::say!(
            "vload: error: --history: no thread to store the run; the run file is unaffected"
        );
        return None;
    }
    loop {
        match stored.recv_timeout(std::time::Duration::from_millis(20)) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(signal) = signals.and_then(crate::signals::Signals::received) {
            crate::paint::say!(
                "vload: --history: a signal came while the run was being stored: not stored (the run file is unaffected; add it with `vload history add`)"
            );
            return Some(signal);
        }
    }
}

/// `--history`: stores the run just written; a failure is said, and the run file stands.
fn store_run(args: &ProvenanceArgs, run: &vload_schema::RunFile) -> bool {
    let path = args
        .db
        .clone()
        .unwrap_or_else(|| PathBuf::from(vload_history::DEFAULT_DB));
    let result =
        Store::open(&path).and_then(|mut s| s.add(&run.to_json(), "vload attack --history"));
    match result {
        Ok(added) => {
            crate::paint::say!("vload: {}", vload_analyze::units::clean(&describe(&added)));
            true
        }
        Err(e) => {
            crate::paint::say!(
                "vload: error: --history: history database {e}; the run file is unaffected"
            );
            false
        }
    }
}

fn check(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open(false)?;
    let histories = histories(&store, &args.select)?;
    if histories.is_empty() {
        anyhow::bail!(
            "{}: no runs selected to check: add runs with `vload history add`, or widen --series/--branch",
            args.db.path().display()
        );
    }
    let gate = vload_history::gate(
        &histories,
        args.fail_if_regressed,
        !args.select.metrics.is_empty(),
    );
    let text = vload_history::render::gate(&gate, &histories, args.format == CheckFormat::Markdown);
    print(&text)?;
    Ok(if !gate.regressions.is_empty() {
        ExitCode::from(1)
    } else if !gate.unjudged.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

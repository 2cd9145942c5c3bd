//! `vload report`, `vload compare` and `vload plot`: reading run files and printing analyses.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use vload_analyze::compare::Comparison;
use vload_analyze::render;
use vload_schema::RunFile;

/// Output format of `vload report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    /// The text report, as `vload attack` prints it.
    Text,
    /// Eight lines, vegeta's length: requests, duration, latencies, bytes, success, statuses,
    /// health.
    Brief,
    /// The summary as JSON.
    Json,
    /// Markdown tables.
    Markdown,
    /// HdrHistogram's percentile distribution, for its plotter.
    Hgrm,
    /// wrk's layout.
    Wrk,
}

/// Output format of `vload compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CompareFormat {
    /// An aligned table.
    Text,
    /// Every row and value as JSON.
    Json,
    /// A markdown table.
    Markdown,
}

/// Print runs: one report each, or one for the shards of an attack (or with --merge).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReportArgs {
    /// Run files written by `vload attack -o`; `-` reads one from standard input.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub(crate) format: ReportFormat,
    /// Merge the runs into one report, refusing runs whose plans differ (default: the shards
    /// of one attack are merged, other runs get a report each, as `cat` would show them).
    #[arg(long)]
    pub(crate) merge: bool,
    /// Merge runs even when their plans differ (default: refuse, naming the difference).
    #[arg(long)]
    pub(crate) force: bool,
    /// Also write the merged run file here, e.g. to compare sharded attacks (default: none).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Exit 1 when the run crosses a threshold, e.g. 'p99>10ms,errors>0.1%,rate<9000', as
    /// `vload attack --fail-if` does (default: none).
    #[arg(long, value_name = "TERMS", value_parser = crate::parse::fail_if)]
    pub(crate) fail_if: Option<crate::parse::FailIf>,
}

/// Compare two runs or two groups of runs, metric by metric, with honest statistics.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CompareArgs {
    /// Run files of group A (or both runs, or every run with --group-by).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Run files of group B, after `--`.
    #[arg(last = true)]
    pub(crate) group_b: Vec<PathBuf>,
    /// Split the files into two groups by this field (default: none).
    #[arg(long, value_enum)]
    pub(crate) group_by: Option<GroupBy>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub(crate) format: CompareFormat,
    /// Exit 1 when a primary metric is worse in B by more than this many percent, with evidence (default: never).
    #[arg(long, value_name = "PCT", value_parser = crate::parse::percent_margin)]
    pub(crate) fail_if_regressed: Option<f64>,
}

/// A field to group runs by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GroupBy {
    /// The run's --label.
    Label,
}

/// Draw runs as one self-contained HTML page: latency and throughput over time, percentiles.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PlotArgs {
    /// Run files to overlay.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Where to write the HTML page.
    #[arg(short = 'o', long, required_unless_present = "serve")]
    pub(crate) output: Option<PathBuf>,
    /// Serve the page at http://ADDR/ until Ctrl-C instead of (or beside) writing it, e.g.
    /// 127.0.0.1:8090 (port 0 takes a free one, printed).
    #[arg(long, value_name = "ADDR")]
    pub(crate) serve: Option<std::net::SocketAddr>,
}

/// The largest run file read: a day-long run is about 200 MB, so this leaves room while a
/// wrong file (a disk image, a log) is refused instead of read into memory.
const MAX_RUN_FILE: u64 = 1 << 30;

/// Reads and validates a run file; errors name the file.
pub(crate) fn read_run(path: &Path) -> anyhow::Result<RunFile> {
    let text = read_text(path)?;
    RunFile::from_json(&text).with_context(|| format!("'{}'", path.display()))
}

/// A run file's text, bounded in size; errors name the file.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = crate::output::read_json_text(path, MAX_RUN_FILE, "run file")?;
    String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("'{}': not a run file (not UTF-8 text)", path.display()))
}

fn read_all(paths: &[PathBuf]) -> anyhow::Result<Vec<(String, RunFile)>> {
    paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read_run(p)?)))
        .collect()
}

/// A short name for a run in legends: its label, else its file name.
fn display_name(path: &str, run: &RunFile) -> String {
    run.label.clone().unwrap_or_else(|| {
        Path::new(path)
            .file_stem()
            .map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned())
    })
}

/// Prints `text` on stdout; `colour`: a text report, its verdicts coloured on a terminal.
fn print(text: &str, colour: bool) -> anyhow::Result<()> {
    // Run files may come from anywhere: nothing in them reaches the terminal as a control.
    let text = vload_analyze::units::clean_lines(text);
    if colour {
        crate::paint::write_report(std::io::stdout().lock(), &text)?;
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

#[allow(clippy::print_stderr, reason = "the cli's status line")]
pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let runs = read_all(&args.files)?;
    let shards = runs.iter().all(|(_, r)| r.plan.shard.is_some());
    if runs.len() > 1 && !(shards || args.merge || args.force || args.output.is_some()) {
        return report_each(args, &runs);
    }
    if !args.force {
        vload_analyze::merge::check_plans(&runs)?;
    }
    let findings = vload_analyze::merge::check_shards(&runs, args.force)?;
    let run = vload_analyze::merge::merge(&runs)?;
    if runs.len() > 1 {
        let machines = run.environment.hostname.split(',').count();
        let shards = runs.iter().filter(|(_, r)| r.plan.shard.is_some()).count();
        let what = match runs.iter().find_map(|(_, r)| r.plan.shard) {
            Some(s) => format!("{shards} shards of {}", s.count),
            None => format!("{} runs", runs.len()),
        };
        crate::paint::say!(
            "vload: merged {what} from {machines} machine{}",
            if machines == 1 { "" } else { "s" }
        );
    }
    for finding in &findings {
        crate::paint::say!("vload: warning: {}", vload_analyze::units::clean(finding));
    }
    if let Some(path) = &args.output {
        crate::output::write_to(path, &run.to_json(), "merged run file")?;
    }
    print(
        &rendered(args.format, &run)?,
        args.format == ReportFormat::Text,
    )?;
    crate::finish::thresholds(&run, args.fail_if.as_ref())
}

/// One run's report in `format`.
fn rendered(format: ReportFormat, run: &RunFile) -> anyhow::Result<String> {
    let summary = vload_analyze::Summary::of(run)?;
    Ok(match format {
        ReportFormat::Text => render::report::text::render(&summary),
        ReportFormat::Brief => render::report::brief::render(&summary),
        ReportFormat::Json => render::report::json::render(&summary),
        ReportFormat::Markdown => render::report::markdown::render(&summary),
        ReportFormat::Hgrm => render::report::hgrm::render(run)?,
        ReportFormat::Wrk => render::report::wrk::render(run)?,
    })
}

/// Runs that are not the shards of one attack: a report each, under its file's name as
/// `head` and `tail` name theirs (JSON: an array of the reports), and `--fail-if` on each.
fn report_each(args: &ReportArgs, runs: &[(String, RunFile)]) -> anyhow::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    if args.format == ReportFormat::Json {
        let mut reports = Vec::new();
        for (_, run) in runs {
            let text = rendered(args.format, run)?;
            reports.push(serde_json::from_str::<serde_json::Value>(&text)?);
        }
        print(
            &format!("{}\n", serde_json::to_string_pretty(&reports)?),
            false,
        )?;
    } else {
        for (i, (name, run)) in runs.iter().enumerate() {
            let gap = if i == 0 { "" } else { "\n" };
            let text = format!("{gap}==> {name} <==\n{}", rendered(args.format, run)?);
            print(&text, args.format == ReportFormat::Text)?;
        }
    }
    for (name, run) in runs {
        if args.fail_if.is_some() {
            crate::paint::say!("vload: {name}:");
        }
        if crate::finish::thresholds(run, args.fail_if.as_ref())? != ExitCode::SUCCESS {
            code = ExitCode::from(1);
        }
    }
    Ok(code)
}

/// The two groups, named.
type Groups = ((String, Vec<RunFile>), (String, Vec<RunFile>));

fn groups(args: &CompareArgs) -> anyhow::Result<Groups> {
    let name = |runs: &[RunFile], fallback: &str| {
        let first = runs.first().and_then(|r| r.label.clone());
        match first {
            Some(label)
                if runs
                    .iter()
                    .all(|r| r.label.as_deref() == Some(label.as_str())) =>
            {
                label
            }
            _ => fallback.to_owned(),
        }
    };
    let strip = |runs: Vec<(String, RunFile)>| runs.into_iter().map(|(_, r)| r).collect::<Vec<_>>();
    if let Some(GroupBy::Label) = args.group_by {
        if !args.group_b.is_empty() {
            bail!("--group-by label takes every run as one list: drop the `--`");
        }
        let runs = strip(read_all(&args.files)?);
        let mut labels: Vec<String> = Vec::new();
        for run in &runs {
            let label = run.label.clone().unwrap_or_else(|| "(no label)".to_owned());
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        if labels.len() != 2 {
            bail!(
                "--group-by label needs exactly two labels among the runs, found {}: {}",
                labels.len(),
                labels.join(", ")
            );
        }
        let pick = |label: &str| -> Vec<RunFile> {
            runs.iter()
                .filter(|r| r.label.as_deref().unwrap_or("(no label)") == label)
                .cloned()
                .collect()
        };
        return Ok((
            (labels[0].clone(), pick(&labels[0])),
            (labels[1].clone(), pick(&labels[1])),
        ));
    }
    let (a, b) = match (args.files.len(), args.group_b.is_empty()) {
        (_, false) => (
            strip(read_all(&args.files)?),
            strip(read_all(&args.group_b)?),
        ),
        (2, true) => (
            strip(read_all(&args.files[..1])?),
            strip(read_all(&args.files[1..])?),
        ),
        (n, true) => bail!(
            "compare needs two runs (a.json b.json), two groups separated by `--`, or --group-by label; got {n} file{} and no `--`",
            if n == 1 { "" } else { "s" }
        ),
    };
    Ok(((name(&a, "A"), a), (name(&b, "B"), b)))
}

#[allow(clippy::print_stderr, reason = "the cli's verdict line")]
pub(crate) fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if args
        .fail_if_regressed
        .is_some_and(|p| !(p >= 0.0 && p.is_finite()))
    {
        bail!("--fail-if-regressed takes a percentage of 0 or more, e.g. 5");
    }
    let ((name_a, a), (name_b, b)) = groups(args)?;
    if a.is_empty() || b.is_empty() {
        bail!(
            "group {} is empty: give at least one run a side",
            if a.is_empty() { "A" } else { "B" }
        );
    }
    if a.iter().chain(&b).any(|r| r.sweep.is_some()) {
        return compare_sweeps(args, (&name_a, &a), (&name_b, &b));
    }
    let comparison: Comparison = vload_analyze::compare((&name_a, &a), (&name_b, &b))?;
    let mut text = match args.format {
        CompareFormat::Text => render::compare::text(&comparison),
        CompareFormat::Json => render::compare::json(&comparison),
        CompareFormat::Markdown => render::compare::markdown(&comparison),
    };
    let regressed: Option<Vec<String>> = args.fail_if_regressed.map(|threshold| {
        comparison
            .rows
            .iter()
            .filter(|r| r.primary && r.regressed(threshold))
            .map(|r| format!("{} {:+.1}%", r.metric.name(), r.delta.unwrap_or(0.0)))
            .collect()
    });
    if let (Some(threshold), Some(regressed)) = (args.fail_if_regressed, &regressed) {
        let undecided = comparison.rows.iter().filter(|r| r.primary).all(|r| {
            use vload_analyze::compare::Verdict;
            matches!(r.verdict, Verdict::Inconclusive | Verdict::NotAvailable)
        });
        text.push_str(&gate_text(
            args.format,
            threshold,
            (!regressed.is_empty()).then(|| regressed.join(", ")),
            undecided,
        ));
    }
    print(&text, args.format == CompareFormat::Text)?;
    if let (Some(threshold), Some(regressed)) = (args.fail_if_regressed, regressed)
        && !regressed.is_empty()
    {
        crate::paint::say!(
            "vload: regression beyond {threshold}% in B: {}",
            regressed.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--fail-if-regressed` decided, written into the output itself (a CI job's summary
/// shows the output, not vload's stderr): why the job fails, or that it passes; and, when
/// the verdicts could not decide, that the gate acted on the medians' shift alone.
fn gate_text(
    format: CompareFormat,
    threshold: f64,
    regressed: Option<String>,
    undecided: bool,
) -> String {
    let caveat = if undecided {
        " The verdicts above are inconclusive (too few runs to test): the gate acts on the shift of the medians alone; more runs a side would say whether it is real."
    } else {
        ""
    };
    let line = match &regressed {
        Some(what) => format!(
            "Gate: FAILED (exit 1): --fail-if-regressed {threshold}%: {what} in B, beyond {threshold}%.{caveat}"
        ),
        None => format!(
            "Gate: passed: no primary metric regressed beyond {threshold}% (--fail-if-regressed)."
        ),
    };
    match format {
        CompareFormat::Json => String::new(),
        CompareFormat::Markdown => format!("\n**{line}**\n"),
        CompareFormat::Text => format!("\n{line}\n"),
    }
}

/// Sweeps: where each one's capacity at the SLO lies, and whether the sides differ.
fn compare_sweeps(
    args: &CompareArgs,
    a: (&str, &[RunFile]),
    b: (&str, &[RunFile]),
) -> anyhow::Result<ExitCode> {
    let comparison = vload_analyze::compare::sweep::compare_sweeps(a, b)?;
    let text = match args.format {
        CompareFormat::Text => render::sweeps::text(&comparison),
        CompareFormat::Json => render::sweeps::json(&comparison),
        CompareFormat::Markdown => render::sweeps::markdown(&comparison),
    };
    let mut text = text;
    let why = args
        .fail_if_regressed
        .map(|threshold| (threshold, sweep_regression(&comparison, threshold)));
    if let Some((threshold, why)) = &why {
        text.push_str(&gate_text(args.format, *threshold, why.clone(), false));
    }
    print(&text, args.format == CompareFormat::Text)?;
    if let Some((threshold, Some(why))) = why {
        crate::paint::say!("vload: regression beyond {threshold}% in B: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// B's capacity regressed beyond `threshold` percent: one sweep a side, when B's whole
/// bracket lies that far below A's floor; groups, when the capacity row's interval does.
fn sweep_regression(
    c: &vload_analyze::compare::sweep::SweepComparison,
    threshold: f64,
) -> Option<String> {
    if let ([a], [b]) = (c.brackets_a.as_slice(), c.brackets_b.as_slice()) {
        let top_b = b.missed_per_s?;
        return (top_b < a.met_per_s * (1.0 - threshold / 100.0))
            .then(|| format!("capacity at the SLO {} against A's {}", b.text(), a.text()));
    }
    c.capacity
        .regressed(threshold)
        .then(|| format!("capacity at the SLO {}", c.verdict))
}

#[allow(clippy::print_stderr, reason = "the cli's status line")]
pub(crate) fn plot(args: &PlotArgs) -> anyhow::Result<ExitCode> {
    let runs = read_all(&args.files)?;
    // Runs whose labels repeat are grouped by the label on the page: each is then named by
    // its file, so that its own line and dots say which run they are.
    let repeats = |label: &Option<String>| {
        label.is_some() && runs.iter().filter(|(_, r)| &r.label == label).count() > 1
    };
    let named: Vec<(String, RunFile)> = runs
        .iter()
        .map(|(path, run)| {
            let name = if repeats(&run.label) {
                display_name(
                    path,
                    &RunFile {
                        label: None,
                        ..run.clone()
                    },
                )
            } else {
                display_name(path, run)
            };
            (name, run.clone())
        })
        .collect();
    let page = render::plot::html(&named)?;
    if let Some(output) = &args.output {
        crate::output::write_to(output, &page, "plot")?;
        crate::paint::say!("vload: plot written to {}", output.display());
    }
    if let Some(addr) = args.serve {
        let addr = crate::dashboard::serve_page(addr, page)?;
        crate::paint::say!("vload: plot served at http://{addr}/ until Ctrl-C");
        // Served by its own thread until Ctrl-C ends the process.
        loop {
            std::thread::park();
        }
    }
    Ok(ExitCode::SUCCESS)
}

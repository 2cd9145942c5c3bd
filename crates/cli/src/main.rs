//! `vload`: an HTTP load generator and analyzer for caches, proxies and APIs.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the cli is where vload prints"
)]

mod analysis;
mod attack;
mod examples;
mod metrics;
mod output;
mod paint;
mod parse;
mod progress;
mod purge;
mod server;
mod signals;
mod stable;
mod sweep;
mod warm;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::attack::AttackArgs;

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    a comparison found a regression or a threshold was breached
  2    error: bad input, a run file that could not be written, or an attack in which no
       request succeeded
  130  the attack was interrupted by Ctrl-C (SIGINT); 143 by SIGTERM; 129 by SIGHUP: the
       report was printed and the run file written (marked interrupted); a second signal
       quits at once";

/// HTTP load generator and analyzer: honest latencies, exact merges, defensible comparisons.
#[derive(Debug, Parser)]
#[command(name = "vload", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send load (open or closed loop) and report latencies, errors and client health.
    #[command(after_help = examples::ATTACK)]
    Attack(Box<AttackArgs>),
    /// Find a server's capacity: steps of rising rate, each held to an SLO, until one misses.
    #[command(after_help = examples::SWEEP)]
    Sweep(Box<sweep::SweepArgs>),
    /// Print runs: one report each, or one for the shards of an attack (or with --merge).
    #[command(after_help = examples::REPORT)]
    Report(analysis::ReportArgs),
    /// Compare two runs or two groups of runs: verdicts with confidence intervals.
    #[command(after_help = examples::COMPARE)]
    Compare(analysis::CompareArgs),
    /// Draw runs as one self-contained HTML page.
    #[command(after_help = examples::PLOT)]
    Plot(analysis::PlotArgs),
    /// Run the test origin: Hello World, synthetic sizes and delays, fault modes, /stats.
    #[command(after_help = examples::ORIGIN)]
    Origin(vload_origin::OriginArgs),
    /// Print a shell completion script: `vload completions bash >
    /// ~/.local/share/bash-completion/completions/vload`.
    ///
    /// Where each shell finds it, for one user (new shells pick it up):
    ///   bash  ~/.local/share/bash-completion/completions/vload  (needs the bash-completion
    ///         package; or `source` the file from ~/.bashrc)
    ///   zsh   ~/.zfunc/_vload, with `fpath+=~/.zfunc; autoload -Uz compinit; compinit` in
    ///         ~/.zshrc
    ///   fish  ~/.config/fish/completions/vload.fish
    #[command(verbatim_doc_comment)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `vload man > vload.1 && man ./vload.1`.
    Man,
}

#[derive(Debug, clap::Args)]
struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

impl Cli {
    #[cfg(test)]
    pub(crate) fn attack(&self) -> Option<&AttackArgs> {
        match &self.command {
            Command::Attack(args) => Some(args),
            _ => None,
        }
    }
}

fn main() -> ExitCode {
    // vegeta's single-dash long flags (-rate=50/1s) would parse as vload's short ones
    // (-r 'ate=50/1s'): named before clap reads them.
    if let Some(hint) = std::env::args()
        .skip(1)
        .take_while(|a| a != "--")
        .filter(|a| a.starts_with('-') && !a.starts_with("--") && a.len() > 2)
        .find_map(|a| hint_for(&a))
    {
        crate::paint::say!("vload: error: {hint}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => match peer_hint(&err) {
            Some(hint) => {
                crate::paint::say!("vload: error: {hint}");
                return ExitCode::from(2);
            }
            None => err.exit(),
        },
    };
    let result = run(&cli);
    attack::targets::remove_copies();
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let message = format!("{err:#}");
            crate::paint::say!("vload: error: {}", vload_analyze::units::clean(&message));
            ExitCode::from(2)
        }
    }
}

/// Other load tools' flags that vload spells differently, with vload's spelling: what a
/// user of wrk, wrk2, hey, oha, ab or vegeta types first.
const PEER_FLAGS: &[(&str, &str)] = &[
    (
        "-z",
        "hey's and oha's duration is vload's -d/--duration, e.g. -d 5s",
    ),
    (
        "-q",
        "oha's and hey's rate limit is vload's -r/--rate (the whole attack's, per second), e.g. -r 100",
    ),
    (
        "-k",
        "vload keeps connections alive by default (ab's -k); --requests-per-connection 1 turns keep-alive off",
    ),
    (
        "--vus",
        "k6's virtual users are vload's closed-loop connections: -c/--connections, e.g. -c 50",
    ),
    (
        "--rps",
        "k6's --rps is vload's -r/--rate (an open loop, requests per second), e.g. -r 2000",
    ),
    (
        "--iterations",
        "k6's --iterations is vload's -n/--requests, e.g. -n 10000",
    ),
    (
        "-L",
        "oha's latency correction is built in: vload's open loop (-r) measures every request from its intended send",
    ),
    (
        "--latency-correction",
        "oha's latency correction is built in: vload's open loop (-r) measures every request from its intended send",
    ),
    (
        "-s",
        "vload runs no scripts (wrk's -s): request lists go in --targets, --urls or --replay-log",
    ),
    (
        "-T",
        "ab's content type is a header in vload: -H 'Content-Type: ...'",
    ),
    ("-p", "ab's POST file is vload's -m POST --body-file FILE"),
    (
        "-rate",
        "vegeta's -rate is vload's -r/--rate, e.g. -r 50/1s",
    ),
    (
        "-duration",
        "vegeta's -duration is vload's -d/--duration, e.g. -d 30s",
    ),
    (
        "-output",
        "vegeta's -output is vload's -o/--output (a run file), e.g. -o run.json",
    ),
    (
        "-header",
        "vegeta's -header is vload's -H/--header, e.g. -H 'X-A: 1'",
    ),
    (
        "-targets",
        "vegeta's -targets is vload's --targets (two dashes), e.g. --targets t.http",
    ),
    (
        "-timeout",
        "vegeta's -timeout is vload's --timeout (two dashes), e.g. --timeout 5s",
    ),
    (
        "-max-workers",
        "vegeta's -max-workers bounds its connections: vload's --max-connections",
    ),
    (
        "-workers",
        "vegeta's -workers is vload's --max-connections (connections open on demand)",
    ),
    (
        "-connections",
        "vegeta's -connections is vload's --max-connections",
    ),
    (
        "-body",
        "vegeta's -body is vload's --body-file (two dashes)",
    ),
    (
        "-insecure",
        "vegeta's -insecure is vload's --insecure (two dashes)",
    ),
    (
        "-D",
        "h2load's -D (duration) is vload's -d/--duration, e.g. -d 30s",
    ),
];

/// A hint for a flag vload does not have but another tool does.
fn peer_hint(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    hint_for(arg)
}

/// The hint for `arg` (`-z`, `-rate=50/1s`), if another tool spells it so. Any single-dash
/// long flag with a value (`-output=x.bin`) is vegeta's style: clap would read it as vload's
/// short flag with the rest for value (`-o 'utput=x.bin'`), so it is named instead.
fn hint_for(arg: &str) -> Option<String> {
    let flag = arg.split('=').next().unwrap_or(arg);
    if let Some((_, hint)) = PEER_FLAGS.iter().find(|(peer, _)| *peer == flag) {
        return Some(format!("unknown flag '{arg}': {hint}"));
    }
    let word = flag.strip_prefix('-')?;
    let long = word.len() >= 2
        && !word.starts_with('-')
        && word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
        && arg.contains('=');
    long.then(|| {
        format!("vegeta-style flag '{arg}': vload's long flags take two dashes: --{word}=...")
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Attack(args) => attack(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Report(args) => analysis::report(args),
        Command::Compare(args) => analysis::compare(args),
        Command::Plot(args) => analysis::plot(args),
        Command::Origin(args) => origin(args),
        Command::Completions(args) => completions(args.shell),
        Command::Man => man(),
    }
}

/// `vload completions SHELL`: the script on stdout.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory as _;
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "vload", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `vload man`: one roff page with every subcommand in it.
fn man() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory as _;
    let command = Cli::command();
    let mut out = std::io::stdout().lock();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let subcommands: Vec<_> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    writeln!(out, ".SH COMMANDS")?;
    for sub in &subcommands {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(
            out,
            ".TP\n\\fB{}\\fR\n{}",
            sub.get_name(),
            roff_escape(&about)
        )?;
    }
    writeln!(
        out,
        ".PP\nEach command's options are in its own section below."
    )?;
    for sub in subcommands {
        let name = sub.get_name();
        writeln!(out, ".SH \"VLOAD {}\"", name.to_uppercase())?;
        if let Some(about) = sub.get_long_about().or_else(|| sub.get_about()) {
            writeln!(out, "{}", roff_escape(&about.to_string()))?;
        }
        let sub_man = clap_mangen::Man::new(sub.clone().bin_name(format!("vload {name}")));
        let mut section = Vec::new();
        sub_man.render_synopsis_section(&mut section)?;
        sub_man.render_options_section(&mut section)?;
        // Each subcommand's sections become subsections of its own.
        let text = String::from_utf8_lossy(&section).replace(".SH ", ".SS ");
        out.write_all(text.as_bytes())?;
    }
    man_examples(&mut out)?;
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in
        EXIT_CODES
            .lines()
            .skip(1)
            .fold(Vec::<(String, String)>::new(), |mut codes, line| {
                let line = line.trim();
                match line.split_once(char::is_whitespace) {
                    Some((code, rest)) if code.parse::<u8>().is_ok() => {
                        codes.push((code.to_owned(), rest.trim().to_owned()));
                    }
                    _ => {
                        if let Some((_, meaning)) = codes.last_mut() {
                            meaning.push(' ');
                            meaning.push_str(line);
                        }
                    }
                }
                codes
            })
    {
        writeln!(out, ".TP\n\\fB{code}\\fR\n{}", roff_escape(&meaning))?;
    }
    man.render_version_section(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Text made safe for a roff line: a leading dot or quote would be read as a request.
/// The manual's EXAMPLES: each command's, as its `--help` ends.
fn man_examples(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, ".SH EXAMPLES")?;
    for (name, text) in examples::ALL {
        writeln!(out, ".SS \"vload {name}\"\n.nf")?;
        for line in text
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
        {
            writeln!(out, "{}", roff_escape(line))?;
        }
        writeln!(out, ".fi")?;
    }
    Ok(())
}

fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with('.') || line.starts_with('\'') {
                format!("\\&{line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn attack(args: &AttackArgs) -> anyhow::Result<ExitCode> {
    if args.load.capped_by_connections() {
        paint::say!(
            "vload: note: with --rate, -c {} caps the connections (--max-connections {0}), as in wrk2",
            args.load.connections.unwrap_or_default()
        );
    }
    if args.load.latency {
        paint::say!("vload: note: --latency is wrk's: vload always reports latency percentiles");
    }
    let attack::Attack {
        mut run,
        output,
        signal,
        metrics,
    } = attack::run(args)?;
    attack::targets::name_as_given(&mut run);
    run.checks = vload_analyze::selfcheck::run_checks(&run).context("checking the run")?;
    let balanced = ledger_balances(&run);
    let code = report_and_save(&run, output.as_ref(), signal, args.output.quiet);
    // The last scrape: after the run file is written, before vload exits.
    if let Some(metrics) = metrics {
        metrics.finish(args.output.metrics_linger);
    }
    let code = code?;
    if !balanced {
        return Ok(ExitCode::from(2));
    }
    if code == ExitCode::SUCCESS
        && let Some(error) = no_success(&run)
    {
        return Err(error);
    }
    if code == ExitCode::SUCCESS {
        return thresholds(&run, args.output.fail_if.as_ref());
    }
    Ok(code)
}

/// `--fail-if`: one line on stderr per threshold the run crossed, and exit 1; a line saying
/// they held otherwise, so a CI log shows what was checked.
fn thresholds(
    run: &vload_schema::RunFile,
    fail_if: Option<&parse::FailIf>,
) -> anyhow::Result<ExitCode> {
    let Some(parse::FailIf(terms)) = fail_if else {
        return Ok(ExitCode::SUCCESS);
    };
    let breaches = vload_analyze::thresholds::breaches(terms, run).context("checking --fail-if")?;
    if breaches.is_empty() {
        let all: Vec<String> = terms.iter().map(|t| t.text()).collect();
        crate::paint::say!("vload: thresholds held: none of {} crossed", all.join(", "));
        return Ok(ExitCode::SUCCESS);
    }
    for breach in &breaches {
        crate::paint::say!("vload: threshold crossed: {}", breach.message);
    }
    Ok(ExitCode::from(1))
}

/// Prints the report, then writes the run file: the report first and always, so whatever
/// happens to the file, the numbers are shown. Exit 128 + the signal that interrupted it.
fn report_and_save(
    run: &vload_schema::RunFile,
    output: Option<&output::Destination>,
    signal: Option<i32>,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    let summary = vload_analyze::Summary::of(run).context("summarising the run")?;
    let report = vload_analyze::render::report::text::render(&summary);
    // With `-o -` the run file takes stdout, and the report goes to stderr.
    let report = vload_analyze::units::clean_lines(&report);
    let printed = if quiet {
        Ok(())
    } else if output.is_some_and(|o| *o == output::Destination::Stdout) {
        paint::write_report(std::io::stderr().lock(), &report)
    } else {
        paint::write_report(std::io::stdout().lock(), &report)
    };
    if let Some(destination) = output
        && !save_run(destination, run)
    {
        return Ok(ExitCode::from(2));
    }
    printed?;
    Ok(match signal {
        Some(signal) => ExitCode::from(128 + signal as u8),
        None => ExitCode::SUCCESS,
    })
}

/// Checks a run file vload made against its own ledger (every request due in exactly one
/// place) before it is written: a file that breaks it would be refused by every reader, so
/// it is still written, for a bug report, and the run exits 2.
pub(crate) fn ledger_balances(run: &vload_schema::RunFile) -> bool {
    match run.validate() {
        Ok(()) => true,
        Err(e) => {
            crate::paint::say!(
                "vload: error: this run's own account does not add up ({e}): a bug in vload; the run file is written as it is, for a report"
            );
            false
        }
    }
}

/// An attack in which no request succeeded (none answered with an expected status): the
/// server is down, unreachable or failing, and its numbers describe nothing to defend.
pub(crate) fn no_success(run: &vload_schema::RunFile) -> Option<anyhow::Error> {
    let t = &run.totals;
    if run.interrupted || t.successes(&run.plan) > 0 {
        return None;
    }
    let server = run
        .plan
        .server_address
        .as_deref()
        .unwrap_or(&run.plan.target);
    let responses: u64 = t.status_codes.values().sum();
    if responses > 0 {
        let statuses = t
            .status_codes
            .iter()
            .map(|(code, n)| format!("{n} x {code}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Some(anyhow::anyhow!(
            "no request succeeded: {responses} responses, none with an expected status ({statuses}; expected {}): check the URL, or widen --expect-status",
            run.plan.expected_text()
        ));
    }
    match t.errors.iter().max_by_key(|(_, e)| e.count) {
        Some((kind, first)) => Some(anyhow::anyhow!(
            "no request got a response ({} x {}, e.g. \"{}\"): check that the server at {server} is up and reachable",
            first.count,
            kind.as_str(),
            first.sample,
        )),
        None => Some(anyhow::anyhow!(
            "nothing was measured: no request completed in the measured window ({} due, {} never sent, {} open at the end)",
            t.intended,
            t.unsent,
            t.unfinished
        )),
    }
}

/// Writes the run file; when that fails (a full disk), says so in one line, saves it
/// elsewhere, and says where. Returns false on failure (the run then exits 2).
fn save_run(destination: &output::Destination, run: &vload_schema::RunFile) -> bool {
    let text = run.to_json();
    let error = match output::write(destination, &text, "run file") {
        Ok(()) => {
            crate::paint::say!(
                "vload: run file written to {}",
                destination.path().display()
            );
            return true;
        }
        Err(e) => format!("{e:#}"),
    };
    match output::rescue(&text, &run.run_id) {
        Ok(saved) => crate::paint::say!(
            "vload: error: {error}; the run was saved to {} instead",
            saved.display()
        ),
        Err(failures) => crate::paint::say!(
            "vload: error: {error}; no copy could be saved either ({}): the report above is all that is left of this run",
            failures.join("; ")
        ),
    }
    false
}

fn origin(args: &vload_origin::OriginArgs) -> anyhow::Result<ExitCode> {
    vload_engine::raise_fd_limit();
    let config = vload_origin::OriginConfig::try_from(args)?;
    let listen = config.listen;
    let origin =
        vload_origin::spawn(config).with_context(|| format!("cannot listen on {listen}"))?;
    let url = origin.url();
    origin.run_until_signal(|| {
        println!("vload origin listening on {url}");
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::SUCCESS)
}

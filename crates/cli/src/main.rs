//! `vload`: an HTTP load generator and analyzer for caches, proxies and APIs.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the cli is where vload prints"
)]

mod analysis;
mod attack;
mod parse;
mod server;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::attack::AttackArgs;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  a comparison found a regression or a threshold was breached
  2  error: bad input, or an attack in which no request succeeded";

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
    Attack(Box<AttackArgs>),
    /// Print one run, or the exact merge of several (shards, machines).
    Report(analysis::ReportArgs),
    /// Compare two runs or two groups of runs: verdicts with confidence intervals.
    Compare(analysis::CompareArgs),
    /// Draw runs as one self-contained HTML page.
    Plot(analysis::PlotArgs),
    /// Run the test origin: Hello World, synthetic sizes and delays, fault modes, /stats.
    Origin(vload_origin::OriginArgs),
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
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("vload: error: {err:#}");
            ExitCode::from(2)
        }
    }
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
        Command::Report(args) => analysis::report(args),
        Command::Compare(args) => analysis::compare(args),
        Command::Plot(args) => analysis::plot(args),
        Command::Origin(args) => origin(args),
    }
}

fn attack(args: &AttackArgs) -> anyhow::Result<ExitCode> {
    let run = attack::run(args)?;
    let summary = vload_analyze::Summary::of(&run).context("summarising the run")?;
    let mut out = std::io::stdout().lock();
    out.write_all(vload_analyze::render::text::render(&summary).as_bytes())?;
    out.flush()?;
    if let Some(path) = &args.output {
        eprintln!("vload: run file written to {}", path.display());
    }
    let succeeded = run.totals.successes() > 0 || run.totals.status_codes.values().sum::<u64>() > 0;
    if !succeeded && run.totals.error_count() > 0 {
        let (kind, first) = run
            .totals
            .errors
            .iter()
            .max_by_key(|(_, e)| e.count)
            .expect("errors are not empty");
        anyhow::bail!(
            "no request got a response ({} x {}, e.g. \"{}\"): check that the server at {} is up and reachable",
            first.count,
            kind.as_str(),
            first.sample,
            run.plan.target
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn origin(args: &vload_origin::OriginArgs) -> anyhow::Result<ExitCode> {
    vload_engine::raise_fd_limit();
    let config = vload_origin::OriginConfig::try_from(args)?;
    let listen = config.listen;
    let origin =
        vload_origin::spawn(config).with_context(|| format!("cannot listen on {listen}"))?;
    println!("vload origin listening on {}", origin.url());
    std::io::stdout().flush()?;
    origin.run_until_signal()?;
    Ok(ExitCode::SUCCESS)
}

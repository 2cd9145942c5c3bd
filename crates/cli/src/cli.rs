//! The command line as clap reads it: the commands, their flags' groups, the exit codes.

use clap::{Parser, Subcommand};

use crate::attack::AttackArgs;
use crate::{analysis, examples, sweep};

pub(crate) const EXIT_CODES: &str = "\
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
pub(crate) enum Command {
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
    /// Keep every run in a database and find the commits where a metric changed.
    #[command(after_help = examples::HISTORY)]
    History(crate::history::HistoryArgs),
    /// What each replacement policy should hit for a catalogue, before any run.
    #[command(after_help = examples::MODEL)]
    Model(crate::model::ModelArgs),
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
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

impl Cli {
    /// The command asked for.
    pub(crate) fn asked(&self) -> &Command {
        &self.command
    }

    #[cfg(test)]
    pub(crate) fn attack(&self) -> Option<&AttackArgs> {
        match &self.command {
            Command::Attack(args) => Some(args),
            _ => None,
        }
    }
}

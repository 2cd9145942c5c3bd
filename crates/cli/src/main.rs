//! `vload`: an HTTP load generator and analyzer for caches, proxies and APIs.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the cli is where vload prints"
)]

mod analysis;
mod attack;
mod cli;
mod dashboard;
mod examples;
mod finish;
mod history;
mod http;
mod manual;
mod metrics;
mod model;
mod outage;
mod output;
mod paint;
mod parse;
mod peers;
mod progress;
mod purge;
mod server;
mod side;
mod signals;
mod stable;
mod stampede;
mod sweep;
mod warm;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;

use cli::{Cli, Command};
use peers::{hint_for, peer_hint};

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
            None => {
                // clap quotes a refused value whole: a password in a URL is hidden first.
                let text = err.render().to_string();
                let shown = vload_engine::url::hide_passwords(&text);
                if shown == text {
                    err.exit()
                }
                eprint!("{shown}");
                return ExitCode::from(2);
            }
        },
    };
    let result = run(&cli);
    attack::targets::remove_copies();
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let message = vload_engine::url::hide_passwords(&format!("{err:#}"));
            crate::paint::say!("vload: error: {}", vload_analyze::units::clean(&message));
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
    match cli.asked() {
        Command::Attack(args) => attack::command(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Report(args) => analysis::report(args),
        Command::Compare(args) => analysis::compare(args),
        Command::Plot(args) => analysis::plot(args),
        Command::History(args) => history::command(args),
        Command::Model(args) => model::run(args),
        Command::Origin(args) => origin(args),
        Command::Completions(args) => manual::completions(args.shell),
        Command::Man => manual::man(),
    }
}

fn origin(args: &vload_origin::OriginArgs) -> anyhow::Result<ExitCode> {
    vload_engine::raise_fd_limit();
    let config = vload_origin::OriginConfig::try_from(args)?;
    let listen = config.listen;
    let origin =
        vload_origin::spawn(config).with_context(|| format!("cannot listen on {listen}"))?;
    let url = origin.url();
    let quic = match (args.http3, args.tls_cert.is_some()) {
        (false, _) => "",
        (true, true) => " (and HTTP/3 on UDP: vload attack --http3)",
        (true, false) => {
            " (and HTTP/3 on UDP, self-signed certificate: vload attack --http3 --insecure)"
        }
    };
    origin.run_until_signal(|| {
        println!("vload origin listening on {url}{quic}");
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::SUCCESS)
}

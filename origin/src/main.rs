//! `vload-origin`: the test origin as a standalone binary (also `vload origin`).

use std::process::ExitCode;

use clap::Parser;
use vload_origin::{OriginArgs, OriginConfig};

/// vload's test origin server.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    origin: OriginArgs,
}

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary's only output"
)]
fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = OriginConfig::try_from(&cli.origin)
        .map_err(|e| e.to_string())
        .and_then(|config| {
            let listen = config.listen;
            vload_origin::spawn(config).map_err(|e| format!("cannot listen on {listen}: {e}"))
        })
        .and_then(|origin| {
            let url = origin.url();
            origin
                .run_until_signal(|| println!("vload-origin listening on {url}"))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vload-origin: error: {e}");
            ExitCode::from(2)
        }
    }
}

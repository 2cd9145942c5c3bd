//! Command-line arguments of `vload-origin` and `vload origin`.

use std::net::SocketAddr;
use std::time::Duration;

use crate::config::{DelayRamp, OriginConfig, Stall, TlsIdentity};
use crate::queue::Service;

/// Run the test origin: Hello World, synthetic sizes and delays, fault modes, `/stats`.
#[derive(Debug, Clone, clap::Args)]
pub struct OriginArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub listen: SocketAddr,
    /// Server threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Stall every this long, e.g. 5s: no response is written during the stall (default: never).
    #[arg(long, value_parser = humantime::parse_duration, requires = "stall_for")]
    pub stall_every: Option<Duration>,
    /// Length of each stall, e.g. 1s (with --stall-every).
    #[arg(long, value_parser = humantime::parse_duration, requires = "stall_every")]
    pub stall_for: Option<Duration>,
    /// Close every connection after this many requests (default: keep alive).
    #[arg(long)]
    pub close_after: Option<u64>,
    /// Reset the connection of every Nth request (default: never).
    #[arg(long)]
    pub reset_every: Option<u64>,
    /// Send every body at this many bytes per second (default: as fast as possible).
    #[arg(long)]
    pub slow_body: Option<u64>,
    /// Delay every response by this long, e.g. 10ms; or by a delay that ramps from the first
    /// request on, e.g. 1ms..20ms with --delay-over 30s (default: none).
    #[arg(long, value_parser = parse_delay, value_name = "DELAY|FROM..TO")]
    pub delay: Option<Delay>,
    /// How long a --delay FROM..TO ramp lasts, counted from the first request; the delay
    /// then holds at TO.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub delay_over: Option<Duration>,
    /// Serve https with this PEM certificate chain (with --tls-key) (default: plain HTTP).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Serve HTTP/3 (QUIC v1) over UDP on the same port as well, with --tls-cert or else a
    /// self-signed certificate made at start (attack it with --insecure).
    #[arg(long)]
    pub http3: bool,
    /// With --http3: session tickets allow no early data, so clients resume without 0-RTT
    /// (default: 0-RTT accepted).
    #[arg(long, requires = "http3")]
    pub refuse_0rtt: bool,
    /// With --http3: answer each new connection with a Retry first (address validation, as
    /// a QUIC server under attack does): one round trip more a handshake.
    #[arg(long, requires = "http3")]
    pub quic_retry: bool,
    /// Share the port with servers already listening on it (SO_REUSEPORT), which then split
    /// the connections (default: refuse a port in use).
    #[arg(long)]
    pub reuse_port: bool,
    /// Serve at most N requests at once across the server, the rest waiting in line: with
    /// --delay D, a server of known capacity N / D per second (default: no limit).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// With --concurrency: how long each request holds its slot: the delay exactly
    /// (constant), or an exponential time of that mean, seeded by --seed.
    #[arg(long, value_enum, default_value_t = ServiceArg::Constant, requires = "concurrency")]
    pub service: ServiceArg,
    /// The seed of --service exponential (default: 1).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `--service`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceArg {
    /// Every request holds its slot for the delay.
    Constant,
    /// Exponential service times with the delay as their mean.
    Exponential,
}

/// `--delay`: fixed, or a ramp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// The same delay for every response.
    Fixed(Duration),
    /// From the first to the second, over `--delay-over`.
    Ramp(Duration, Duration),
}

fn parse_delay(text: &str) -> Result<Delay, String> {
    let one = |t: &str| {
        humantime::parse_duration(t.trim())
            .map_err(|e| format!("'{t}' is not a duration ({e}), e.g. 10ms or 1ms..20ms"))
    };
    match text.split_once("..") {
        Some((from, to)) => Ok(Delay::Ramp(one(from)?, one(to)?)),
        None => one(text).map(Delay::Fixed),
    }
}

/// A flag combination that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum OriginArgsError {
    /// The stall would never end.
    #[error("--stall-for {0:?} must be shorter than --stall-every {1:?}")]
    StallTooLong(Duration, Duration),
    /// A ramp without its length, or a length without a ramp.
    #[error("{0}")]
    Ramp(&'static str),
    /// A count of zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// No certificate could be made for --http3.
    #[error(
        "cannot make a self-signed certificate for --http3 ({0}): give --tls-cert and --tls-key"
    )]
    Certificate(String),
    /// A TLS file cannot be read.
    #[error("cannot read {flag} '{path}': {error}")]
    TlsFile {
        /// The flag.
        flag: &'static str,
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

impl TryFrom<&OriginArgs> for OriginConfig {
    type Error = OriginArgsError;

    fn try_from(args: &OriginArgs) -> Result<Self, Self::Error> {
        let stall = match (args.stall_every, args.stall_for) {
            (Some(every), Some(length)) if length >= every || every.is_zero() => {
                return Err(OriginArgsError::StallTooLong(length, every));
            }
            (Some(every), Some(length)) => Some(Stall { every, length }),
            _ => None,
        };
        for (value, flag) in [
            (args.close_after, "--close-after"),
            (args.reset_every, "--reset-every"),
            (args.slow_body, "--slow-body"),
            (args.threads.map(|t| t as u64), "--threads"),
            (args.concurrency.map(|c| c as u64), "--concurrency"),
        ] {
            if value == Some(0) {
                return Err(OriginArgsError::Zero(flag));
            }
        }
        let (delay, delay_ramp) = match (args.delay, args.delay_over) {
            (Some(Delay::Ramp(from, to)), Some(over)) => (Some(from), Some(DelayRamp { to, over })),
            (Some(Delay::Ramp(..)), None) => {
                return Err(OriginArgsError::Ramp(
                    "--delay FROM..TO ramps over --delay-over: give it, e.g. --delay-over 30s",
                ));
            }
            (_, Some(_)) => {
                return Err(OriginArgsError::Ramp(
                    "--delay-over is the length of a --delay FROM..TO ramp: give one, e.g. --delay 1ms..20ms",
                ));
            }
            (Some(Delay::Fixed(d)), None) => (Some(d), None),
            (None, None) => (None, None),
        };
        let read = |flag: &'static str, path: &std::path::PathBuf| {
            std::fs::read(path).map_err(|error| OriginArgsError::TlsFile {
                flag,
                path: path.display().to_string(),
                error,
            })
        };
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsIdentity {
                cert_pem: read("--tls-cert", cert)?,
                key_pem: read("--tls-key", key)?,
            }),
            _ if args.http3 => Some(self_signed(args.listen)?),
            _ => None,
        };
        Ok(OriginConfig {
            tls,
            http3: args.http3,
            refuse_early_data: args.refuse_0rtt,
            quic_retry: args.quic_retry,
            listen: args.listen,
            threads: args.threads,
            stall,
            close_after: args.close_after,
            reset_every: args.reset_every,
            slow_body_bytes_per_s: args.slow_body,
            delay,
            delay_ramp,
            reuse_port: args.reuse_port,
            concurrency: args.concurrency,
            quic_reset_key: None,
            service: match args.service {
                ServiceArg::Constant => Service::Constant,
                ServiceArg::Exponential => Service::Exponential { seed: args.seed },
            },
        })
    }
}

/// A certificate for localhost, 127.0.0.1, ::1 and `listen`'s address, made now: HTTP/3
/// without a certificate of the user's (the client then needs --insecure).
fn self_signed(listen: std::net::SocketAddr) -> Result<TlsIdentity, OriginArgsError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
    let own = listen.ip().to_string();
    if !listen.ip().is_unspecified() && !names.contains(&own) {
        names.push(own);
    }
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| OriginArgsError::Certificate(e.to_string()))?;
    Ok(TlsIdentity {
        cert_pem: made.cert.pem().into_bytes(),
        key_pem: made.key_pair.serialize_pem().into_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        origin: OriginArgs,
    }

    fn config(args: &[&str]) -> Result<OriginConfig, String> {
        let cli = Cli::try_parse_from(std::iter::once("origin").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        OriginConfig::try_from(&cli.origin).map_err(|e| e.to_string())
    }

    #[test]
    fn stall_flags_make_a_stall() {
        let c = config(&["--stall-every", "5s", "--stall-for", "1s"]).unwrap();
        assert_eq!(
            c.stall,
            Some(Stall {
                every: Duration::from_secs(5),
                length: Duration::from_secs(1)
            })
        );
        assert_eq!(c.listen, "127.0.0.1:8081".parse().unwrap());
    }

    #[test]
    fn impossible_combinations_are_refused() {
        assert!(
            config(&["--stall-every", "1s", "--stall-for", "2s"])
                .unwrap_err()
                .contains("shorter")
        );
        assert!(config(&["--stall-every", "1s"]).is_err());
        assert!(
            config(&["--close-after", "0"])
                .unwrap_err()
                .contains("--close-after")
        );
        assert!(config(&["--listen", "nowhere"]).is_err());
        assert!(
            config(&["--delay", "1ms..20ms"])
                .unwrap_err()
                .contains("--delay-over")
        );
        assert!(
            config(&["--delay-over", "5s"])
                .unwrap_err()
                .contains("FROM..TO")
        );
        assert!(
            config(&["--delay", "1ms..soon"])
                .unwrap_err()
                .contains("soon")
        );
    }

    #[test]
    fn a_delay_is_fixed_or_ramps() {
        let c = config(&["--delay", "10ms"]).unwrap();
        assert_eq!(
            (c.delay, c.delay_ramp),
            (Some(Duration::from_millis(10)), None)
        );
        let c = config(&["--delay", "1ms..20ms", "--delay-over", "30s"]).unwrap();
        assert_eq!(c.delay, Some(Duration::from_millis(1)));
        assert_eq!(
            c.delay_ramp,
            Some(DelayRamp {
                to: Duration::from_millis(20),
                over: Duration::from_secs(30)
            })
        );
    }
}

//! `vload attack`'s flags, in the groups `--help` shows them under; each group validates its
//! own values and turns them into the engine's types.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use vload_engine::{Arrival, Client, Load, Protocol, RatePlan, RequestTemplate, Shard, Stop};

use crate::parse::{self, ExpectStatus, FailIf};

/// `--rate`: a number of requests per second, a plan of stages, or unlimited.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rate {
    PerSecond(f64),
    Plan(RatePlan),
    Unlimited,
}

fn rate_arg(text: &str) -> Result<Rate, String> {
    if text.contains([':', ',']) || text.contains("->") {
        return parse::rate_plan(text).map(Rate::Plan);
    }
    Ok(parse::rate(text)?.map_or(Rate::Unlimited, Rate::PerSecond))
}

/// Open-loop arrival process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ArrivalArg {
    /// Evenly spaced: request k at t0 + k / rate.
    Constant,
    /// Exponential gaps (a Poisson process), seeded by --seed.
    Poisson,
}

pub(crate) const DEFAULT_CONNECTIONS: u32 = 50;
const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;
const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// `--until-stable` stops no earlier than this many measured seconds: ten one-second batches
/// are the fewest whose independence (lag-1 autocorrelation) can be judged and acted on.
pub(crate) const MIN_STABLE: Duration = Duration::from_secs(10);
/// More worker threads than this helps no machine (one per core is the most that does).
const MAX_THREADS: u32 = 1024;
/// HTTP/2 servers allow 100 to 1,000 streams on a connection (SETTINGS_MAX_CONCURRENT_STREAMS);
/// beyond the server's figure, requests only wait inside vload.
const MAX_STREAMS: u32 = 10_000;
/// Streams in flight over all connections: each is a task with its request and buffers.
const MAX_IN_FLIGHT: u64 = 1_000_000;
/// The largest request body: one copy is shared by every request, but a wrong file (a disk
/// image) should be refused, not read into memory.
const MAX_BODY: u64 = 1 << 30;

/// How much load, for how long.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LoadArgs {
    /// Connections in the closed loop, each with one request in flight (default: 50).
    #[arg(short = 'c', long)]
    pub(crate) connections: Option<u32>,
    /// Requests per second for an open loop: 20000, 20k, 20000/s, 1200/m; infinity or 0 for a
    /// closed loop; or a plan of stages, each RATE:DURATION (hold) or FROM->TO:DURATION (ramp),
    /// e.g. '0->20k:30s,20k:60s', which sets the duration (default: closed loop).
    #[arg(short = 'r', long, short_alias = 'R', value_parser = rate_arg)]
    pub(crate) rate: Option<Rate>,
    /// wrk's --latency: vload always reports latency percentiles, so it changes nothing.
    #[arg(long, hide = true)]
    pub(crate) latency: bool,
    /// Spacing of open-loop requests.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Constant)]
    pub(crate) arrival: ArrivalArg,
    /// Seed of the Poisson arrival process, of --pick random and of a --catalogue; the same seed gives the same schedule (default: 1).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Most connections an open loop may open, or the connections of --rate infinity (default: 10000).
    #[arg(long)]
    pub(crate) max_connections: Option<u32>,
    /// Measured duration after warm-up, e.g. 10s, 2m (default: 10s unless -n is given).
    #[arg(short = 'd', long, value_parser = parse::duration)]
    pub(crate) duration: Option<Duration>,
    /// Total requests to send, warm-up included (default: unbounded, stop by duration).
    #[arg(short = 'n', long)]
    pub(crate) requests: Option<u64>,
    /// Run until the p99's 95% interval is within ±PCT% of it (e.g. 5), checked once a second
    /// from 10 measured seconds on, for at most --max-duration; the report says whether it
    /// converged (default: run for -d).
    #[arg(long, value_name = "PCT", value_parser = parse::percent, requires = "max_duration", conflicts_with_all = ["duration", "requests", "shard"])]
    pub(crate) until_stable: Option<f64>,
    /// The longest --until-stable measures, after the warm-up, e.g. 2m.
    #[arg(long, value_parser = parse::duration, requires = "until_stable")]
    pub(crate) max_duration: Option<Duration>,
    /// Warm-up before the measured window, recorded in intervals but excluded from results.
    #[arg(long, value_parser = parse::duration, default_value = "0s")]
    pub(crate) warmup: Duration,
    /// Worker threads (default: all cores, or half of them for a loopback target).
    #[arg(short = 't', long)]
    pub(crate) threads: Option<u32>,
    /// Run shard I of N (0-based, e.g. 2/4): this process takes 1/N of the rate or connections
    /// and every Nth target from I; `vload report` merges the shards' run files (default: none).
    #[arg(long, value_name = "I/N", value_parser = parse::shard)]
    pub(crate) shard: Option<Shard>,
    /// Begin at this wall-clock time (RFC 3339, e.g. 2026-11-22T10:00:00Z, or +30s from now),
    /// so that shards started apart begin together (default: at once).
    #[arg(long, value_name = "TIME", value_parser = parse::start_at)]
    pub(crate) start_at: Option<std::time::SystemTime>,
}

impl LoadArgs {
    /// The load model; `random_pick` says whether --seed also seeds a target pick.
    pub(crate) fn load(&self, random_pick: bool) -> anyhow::Result<Load> {
        let open = match &self.rate {
            Some(Rate::PerSecond(rate)) => Some(RatePlan::constant(*rate)),
            Some(Rate::Plan(plan)) => Some(plan.clone()),
            _ => None,
        };
        if let Some(Rate::Plan(plan)) = &self.rate {
            self.check_plan(plan)?;
        }
        if open.is_some() && self.connections.is_some() && self.max_connections.is_some() {
            bail!(
                "-c/--connections and --max-connections both cap an open loop's connections: give --max-connections alone"
            );
        }
        if open.is_none() && self.rate.is_none() && self.max_connections.is_some() {
            bail!("--max-connections applies to --rate: for a closed loop use -c/--connections");
        }
        if open.is_none() && self.arrival == ArrivalArg::Poisson {
            bail!("--arrival poisson shapes an open loop: give a --rate too");
        }
        if self.seed.is_some() && self.arrival != ArrivalArg::Poisson && !random_pick {
            bail!(
                "--seed needs --arrival poisson, --pick random or --catalogue (nothing else is random)"
            );
        }
        let load = match open {
            Some(rate) => Load::Open {
                rate,
                arrival: match self.arrival {
                    ArrivalArg::Constant => Arrival::Constant,
                    ArrivalArg::Poisson => Arrival::Poisson {
                        seed: self.seed.unwrap_or(1),
                    },
                },
                // wrk2's and oha's habit: -c beside a rate caps the connections (the note
                // says so, `capped_by_connections`).
                max_connections: self
                    .max_connections
                    .or(self.connections)
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS),
            },
            None => Load::Closed {
                connections: self
                    .connections
                    .or(self.max_connections)
                    .unwrap_or(DEFAULT_CONNECTIONS),
            },
        };
        if connections(&load) == 0 {
            bail!("connections must be at least 1");
        }
        Ok(load)
    }

    /// True when -c is read as --max-connections (given beside a rate), for the note that
    /// says so.
    pub(crate) fn capped_by_connections(&self) -> bool {
        matches!(self.rate, Some(Rate::PerSecond(_) | Rate::Plan(_)))
            && self.connections.is_some()
            && self.max_connections.is_none()
    }

    /// A plan's own limits on the other flags.
    fn check_plan(&self, plan: &RatePlan) -> anyhow::Result<()> {
        if self.duration.is_some() {
            bail!("a rate plan lasts as long as its stages: drop -d/--duration, or add a stage");
        }
        if !self.warmup.is_zero() && plan.first_rate() == 0.0 {
            bail!(
                "--warmup holds the plan's first rate, which is 0: start the plan with a warm-up stage instead, e.g. '1k:10s,1k->20k:30s'"
            );
        }
        Ok(())
    }

    /// When the attack ends; `passes` (a walk over a list) bounds it instead of a duration.
    pub(crate) fn stop(&self, passes: Option<u64>) -> anyhow::Result<Stop> {
        if self.duration.is_some_and(|d| d.is_zero()) {
            bail!("--duration must be longer than 0s");
        }
        if self.requests == Some(0) {
            bail!("--requests must be at least 1");
        }
        if passes == Some(0) {
            bail!("--passes must be at least 1");
        }
        whole_seconds("--warmup", self.warmup)?;
        if passes.is_some() && self.requests.is_some() {
            bail!("--passes and -n/--requests both count requests: give one of them");
        }
        if let Some(max) = self.max_duration {
            self.check_until_stable(max, passes)?;
        }
        let duration = match (&self.rate, self.duration, self.requests, passes) {
            _ if self.max_duration.is_some() => self.max_duration,
            (Some(Rate::Plan(plan)), ..) => plan.duration(),
            (_, None, None, None) => Some(DEFAULT_DURATION),
            (_, d, _, _) => d,
        };
        Ok(Stop {
            duration,
            requests: self.requests,
        })
    }

    /// `--until-stable` judges a steady load from [`MIN_STABLE`] measured seconds on.
    fn check_until_stable(&self, max: Duration, passes: Option<u64>) -> anyhow::Result<()> {
        if matches!(self.rate, Some(Rate::Plan(_))) {
            bail!(
                "--until-stable waits for a steady load, and a rate plan changes it by design: give one --rate"
            );
        }
        if passes.is_some() {
            bail!("--passes ends the attack after its walks: drop it, or --until-stable");
        }
        if max < MIN_STABLE {
            bail!(
                "--max-duration {} is too short for --until-stable, which judges from {} measured seconds on: give at least {}s",
                humantime::format_duration(max),
                MIN_STABLE.as_secs(),
                MIN_STABLE.as_secs()
            );
        }
        whole_seconds("--max-duration", max)
    }

    /// Worker threads: as asked, or the default for where the load goes.
    pub(crate) fn threads(&self, connect_to: std::net::SocketAddr) -> anyhow::Result<u32> {
        match self.threads {
            Some(0) => bail!("--threads must be at least 1"),
            Some(t) if t > MAX_THREADS => bail!(
                "--threads {t} is more than vload runs ({MAX_THREADS}): one thread per core is the most that helps"
            ),
            Some(t) => Ok(t),
            None => Ok(vload_engine::AttackPlan::default_threads(
                connect_to,
                vload_engine::available_cores(),
            )),
        }
    }
}

/// Results are kept per second from the attack's start, so a warm-up must end on a
/// second's edge: one that ended mid-second would drop the rest of that second from the
/// results, or keep part of the warm-up in them.
pub(crate) fn whole_seconds(flag: &str, d: Duration) -> anyhow::Result<()> {
    if d.subsec_nanos() != 0 {
        bail!(
            "{flag} {}: give whole seconds (e.g. {}s): results are kept per second, and a warm-up ending mid-second would cut that second in two",
            humantime::format_duration(d),
            d.as_secs() + 1
        );
    }
    Ok(())
}

/// Connections (closed loop) or the cap on them (open loop).
fn connections(load: &Load) -> u32 {
    match *load {
        Load::Closed { connections } => connections,
        Load::Open {
            max_connections, ..
        } => max_connections,
    }
}

/// What each request is.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RequestArgs {
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub(crate) method: String,
    /// Request header 'Name: value'; repeatable (default: Host from the URL).
    #[arg(short = 'H', long = "header", value_parser = parse::header)]
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// Request body, as written (a file: --body-file; '@FILE' is refused, not sent) (default:
    /// none).
    #[arg(long, conflicts_with = "body_file")]
    pub(crate) body: Option<String>,
    /// Request body read from a file (default: none).
    #[arg(long)]
    pub(crate) body_file: Option<PathBuf>,
}

impl RequestArgs {
    /// The request against `url`: Host from the URL unless given, the body, its type.
    pub(crate) fn request(&self, url: Uri) -> anyhow::Result<RequestTemplate> {
        let method = method(&self.method)?;
        let mut headers = HeaderMap::new();
        let authority = url.authority().context("the URL names no host")?.as_str();
        headers.insert(
            http::header::HOST,
            HeaderValue::from_str(authority).context("URL host is not a valid Host header")?,
        );
        for (name, value) in &self.headers {
            if name == http::header::HOST {
                headers.insert(name.clone(), value.clone());
            } else {
                headers.append(name.clone(), value.clone());
            }
        }
        let body = match (&self.body, &self.body_file) {
            // curl's and hey's `@FILE` would go out as the literal text: named instead.
            (Some(text), _) if text.starts_with('@') && text.len() > 1 => anyhow::bail!(
                "--body '{text}': vload sends --body as written; to send the file's bytes, use --body-file {}",
                &text[1..]
            ),
            (Some(text), _) => Bytes::from(text.clone()),
            (None, Some(path)) => {
                Bytes::from(crate::output::read_bounded(path, MAX_BODY, "--body-file")?)
            }
            (None, None) => Bytes::new(),
        };
        if !body.is_empty() && !headers.contains_key(http::header::CONTENT_TYPE) {
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
        }
        Ok(RequestTemplate {
            url,
            method,
            headers,
            body,
        })
    }
}

/// A request method: a token (RFC 9110) with a letter in it. h2load's `-m 10` (streams per
/// connection) would otherwise be sent as the method "10".
pub(crate) fn method(text: &str) -> anyhow::Result<Method> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        bail!(
            "invalid method '{text}' for -m/--method: a method is a word like GET or POST; h2load's -m {text} (streams per connection) is --http2 --streams {text} here"
        );
    }
    Method::from_bytes(text.as_bytes()).map_err(|_| {
        anyhow::anyhow!(
            "invalid method '{text}' for -m/--method: expected a token like GET or POST"
        )
    })
}

/// How connections are made and what they speak.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ConnectionArgs {
    /// Send every request to HOST:PORT, keeping each target's Host header and TLS SNI (default: the URL's host).
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) connect_to: Option<String>,
    /// Resolve HOST:PORT to ADDR, as curl does, e.g. www.example.com:80:127.0.0.1 (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub(crate) resolve: Vec<String>,
    /// Speak HTTP/2: prior knowledge (h2c) for http://, ALPN for https:// (default: HTTP/1.1).
    #[arg(long)]
    pub(crate) http2: bool,
    /// Speak HTTP/3 over QUIC v1 (https:// URLs only; UDP to the URL's port).
    #[arg(long, conflicts_with = "http2")]
    pub(crate) http3: bool,
    /// With --http3: resume sessions with 0-RTT early data when a ticket allows it; only
    /// GET, HEAD, OPTIONS and TRACE go out early, others wait for the handshake.
    #[arg(long = "0rtt", requires = "http3")]
    pub(crate) zero_rtt: bool,
    /// HTTP/2 or HTTP/3 streams in flight on each connection (default: 1).
    #[arg(long, value_name = "N")]
    pub(crate) streams: Option<u32>,
    /// HTTP/1.1 client: vload's lean one (default), or hyper's for comparison.
    #[arg(long, value_name = "lean|hyper", value_parser = client_parser())]
    pub(crate) http1_client: Option<Client>,
    /// HTTP/2 client: vload's lean one (default), or hyper's for comparison.
    #[arg(long, value_name = "lean|hyper", value_parser = client_parser())]
    pub(crate) http2_client: Option<Client>,
    /// Close and reopen each connection after this many requests; 1 = no keep-alive (default: keep alive).
    #[arg(long, value_name = "N")]
    pub(crate) requests_per_connection: Option<u32>,
    /// A request without a complete response by then fails and is recorded at this value.
    #[arg(long, value_parser = parse::duration, default_value = "30s")]
    pub(crate) timeout: Duration,
    /// A connection attempt fails after this long.
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub(crate) connect_timeout: Duration,
    /// Skip the check of the server's TLS certificate (default: verify against the system's roots).
    #[arg(long, conflicts_with = "cacert")]
    pub(crate) insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,
}

impl ConnectionArgs {
    /// The protocol, with `--streams` bounded by what a server and this process can hold.
    pub(crate) fn protocol(&self, load: &Load) -> anyhow::Result<Protocol> {
        if self.http3 && (self.http1_client.is_some() || self.http2_client.is_some()) {
            bail!(
                "--http1-client and --http2-client pick an HTTP/1.1 or HTTP/2 client, but --http3 speaks HTTP/3 (one client): drop them"
            );
        }
        let multiplexed = self.http2 || self.http3;
        let streams = match (multiplexed, self.streams) {
            (_, Some(0)) => bail!("--streams must be at least 1"),
            (false, Some(_)) => {
                bail!("--streams multiplexes HTTP/2 or HTTP/3: add --http2 or --http3")
            }
            (false, None) if self.http2_client.is_some() => {
                bail!("--http2-client picks the HTTP/2 client: add --http2")
            }
            _ if self.http2 && self.http1_client.is_some() => {
                bail!(
                    "--http1-client picks the HTTP/1.1 client, but --http2 speaks HTTP/2: use --http2-client lean|hyper"
                )
            }
            (_, Some(n)) if n > MAX_STREAMS => bail!(
                "--streams {n} is more than any HTTP/2 or HTTP/3 server allows on a connection (they advertise 100 to 1,000): at most {MAX_STREAMS}"
            ),
            (_, n) => n.unwrap_or(1),
        };
        let connections = connections(load);
        let in_flight = u64::from(connections) * u64::from(streams);
        if in_flight > MAX_IN_FLIGHT {
            bail!(
                "{connections} connections x {streams} streams is {in_flight} requests in flight, more than vload holds ({MAX_IN_FLIGHT}): lower -c/--max-connections or --streams"
            );
        }
        Ok(if self.http3 {
            Protocol::Http3 {
                streams,
                early_data: self.zero_rtt,
            }
        } else if self.http2 {
            Protocol::Http2 {
                streams,
                client: self.http2_client.unwrap_or_default(),
            }
        } else {
            Protocol::Http1 {
                client: self.http1_client.unwrap_or_default(),
            }
        })
    }

    /// The timeouts, each longer than zero.
    pub(crate) fn timeouts(&self) -> anyhow::Result<(Duration, Duration)> {
        for (value, flag) in [
            (self.timeout, "--timeout"),
            (self.connect_timeout, "--connect-timeout"),
        ] {
            if value.is_zero() {
                bail!("{flag} must be longer than 0s");
            }
        }
        Ok((self.timeout, self.connect_timeout))
    }

    pub(crate) fn requests_per_connection(&self) -> anyhow::Result<Option<u32>> {
        match self.requests_per_connection {
            Some(0) => bail!("--requests-per-connection must be at least 1"),
            n => Ok(n),
        }
    }
}

/// `--http1-client` / `--http2-client`: the two names, so that a shell completes them (a
/// parser function alone completed file names).
fn client_parser() -> impl clap::builder::TypedValueParser<Value = Client> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(["lean", "hyper"])
        .try_map(|name: String| parse::client(&name))
}

/// Where the results go.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OutputArgs {
    /// Write the run file (JSON) here: atomically for a file, in place for a FIFO or device, `-` for stdout (the report then goes to stderr) (default: none).
    #[arg(short = 'o', long)]
    pub(crate) output: Option<PathBuf>,
    /// Label stored in the run file, e.g. x86_64 (default: none).
    #[arg(long)]
    pub(crate) label: Option<String>,
    /// Also write an HdrHistogram interval log (.hlog) here (default: none).
    #[arg(long)]
    pub(crate) hlog: Option<PathBuf>,
    /// Do not draw the live progress line on stderr (default: drawn when stderr is a terminal).
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// When stderr is not a terminal (a CI log), print a plain progress line this often; 0
    /// for none (default: 10s).
    #[arg(long, value_name = "DURATION", value_parser = crate::parse::duration, default_value = "10s")]
    pub(crate) progress_every: Duration,
    /// Serve the attack's counters and latency for Prometheus at http://ADDR/metrics while it
    /// runs, e.g. 127.0.0.1:9464 (port 0 takes a free one, printed) (default: none).
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
    /// Push the same figures as --metrics-listen serves to a Prometheus remote-write receiver
    /// once a second and at the end, e.g. http://127.0.0.1:9090/api/v1/write (Prometheus with
    /// --web.enable-remote-write-receiver) (default: none).
    #[arg(long, value_name = "URL", value_parser = remote_write_url)]
    pub(crate) metrics_remote_write: Option<crate::server::fetch::HttpUrl>,
    /// With --metrics-listen: keep answering this long after the run file is written, so that
    /// the last scrape sees the final figures (default: 0s).
    #[arg(long, value_name = "DURATION", value_parser = crate::parse::duration, default_value = "0s")]
    pub(crate) metrics_linger: Duration,
    /// Serve a live page of the attack at http://ADDR/ while it runs (each second's
    /// throughput, asked rate, latency, hit ratios, server CPU, the ledger), then the run
    /// file's figures and its plot, e.g. 127.0.0.1:8090 (port 0 takes a free one, printed)
    /// (default: none).
    #[arg(long, value_name = "ADDR")]
    pub(crate) dashboard: Option<std::net::SocketAddr>,
    /// With --dashboard: keep serving the final figures this long after the run file is
    /// written (default: 5s).
    #[arg(long, value_name = "DURATION", value_parser = crate::parse::duration, default_value = "5s", requires = "dashboard")]
    pub(crate) dashboard_linger: Duration,
    /// Print no report and no progress line: errors, notes, --fail-if's breaches and the exit
    /// code still speak, and -o still writes the run file (default: the report is printed).
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Print the short report (eight lines, vegeta's length) instead of the full one; `vload
    /// report RUN.json` gives the full one later (default: the full report).
    #[arg(long, conflicts_with = "quiet")]
    pub(crate) brief: bool,
    /// Exit 1 when the run crosses a threshold, for CI: e.g. 'p99>10ms,errors>0.1%,rate<9000'
    /// (p50, p75, p90, p95, p99, p99.9, mean, max of the run's latency; k6's p(95) too; errors; rate in successful
    /// responses/s); one line per breach after the report (default: none).
    #[arg(long, value_name = "TERMS", value_parser = crate::parse::fail_if)]
    pub(crate) fail_if: Option<FailIf>,
    /// The statuses that count as success, e.g. 2xx, 200,204 or 200-299: the success
    /// ratio, errors, --fail-if and the exit code go by them (default: 2xx,3xx).
    #[arg(long, value_name = "LIST", value_parser = crate::parse::expect_status, default_value = "2xx,3xx")]
    pub(crate) expect_status: ExpectStatus,
    /// The Server-Timing metric whose dur is the origin's own time: the report splits each
    /// miss's wait for the first byte into the origin's time and the proxy's (default: app,
    /// what vload origin sends).
    #[arg(long, value_name = "NAME", value_parser = crate::parse::server_timing, default_value = vload_engine::SERVER_TIMING_METRIC)]
    pub(crate) server_timing: String,
}

/// The server's own account of the run.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServerArgs {
    /// Keep the server's own counters over the measured window, read at its edges:
    /// varnish[:NAME] (varnishstat -n NAME), nginx:URL (its stub_status page),
    /// haproxy[:SOCKET] (its stats socket, default /run/haproxy/admin.sock), squid[:URL]
    /// (its port, default http://127.0.0.1:3128, for the cache manager) (default: none).
    #[arg(long, value_name = "SOURCE[:WHERE]")]
    pub(crate) server_stats: Option<crate::server::ServerStats>,
    /// Record this server process's CPU time (and its descendants') per interval, for server
    /// CPU per request (default: none).
    #[arg(long, value_name = "PID")]
    pub(crate) watch_pid: Option<u32>,
}

/// `--metrics-remote-write`'s URL: plain http (a receiver behind TLS is reached through a
/// local agent or proxy).
fn remote_write_url(url: &str) -> Result<crate::server::fetch::HttpUrl, String> {
    crate::server::fetch::HttpUrl::parse(url).map_err(|why| {
        format!("{why}: give the receiver's http:// URL, e.g. http://127.0.0.1:9090/api/v1/write (https: through a local agent)")
    })
}

//! `vload attack`: flags, the plan they make, and running it.

use std::io::{IsTerminal as _, Write as _};
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use vload_engine::{
    Arrival, AttackPlan, Interrupt, Load, Observer, Pick, Progress, RequestTemplate, Stop,
    TargetFormat, TargetPlan, TargetSet, TlsOptions, Verify,
};
use vload_schema::RunFile;

use crate::output::Destination;
use crate::{parse, server};

/// `--rate`: a number of requests per second, or unlimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rate {
    PerSecond(f64),
    Unlimited,
}

fn rate_arg(text: &str) -> Result<Rate, String> {
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

const DEFAULT_CONNECTIONS: u32 = 50;
/// More worker threads than this helps no machine (one per core is the most that does).
const MAX_THREADS: u32 = 1024;
/// HTTP/2 servers allow 100 to 1,000 streams on a connection (SETTINGS_MAX_CONCURRENT_STREAMS);
/// beyond the server's figure, requests only wait inside vload.
const MAX_STREAMS: u32 = 10_000;
/// Streams in flight over all connections: each is a task with its request and buffers.
const MAX_IN_FLIGHT: u64 = 1_000_000;
const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Send load to a URL and report what happened.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AttackArgs {
    /// Target URL, http://host[:port]/path (default: a built-in origin on 127.0.0.1, started for this run).
    pub(crate) url: Option<String>,
    /// Connections in the closed loop, each with one request in flight (default: 50).
    #[arg(short = 'c', long)]
    pub(crate) connections: Option<u32>,
    /// Requests per second for an open loop: 20000, 20k, 20000/s, 1200/m; infinity or 0 for a closed loop (default: closed loop).
    #[arg(short = 'r', long, value_parser = rate_arg)]
    pub(crate) rate: Option<Rate>,
    /// Spacing of open-loop requests (default: constant).
    #[arg(long, value_enum, default_value_t = ArrivalArg::Constant)]
    pub(crate) arrival: ArrivalArg,
    /// Seed of the Poisson arrival process; the same seed gives the same schedule (default: 1).
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
    /// Warm-up before the measured window, recorded in intervals but excluded from results (default: 0s).
    #[arg(long, value_parser = parse::duration, default_value = "0s")]
    pub(crate) warmup: Duration,
    /// A request without a complete response by then fails and is recorded at this value (default: 30s).
    #[arg(long, value_parser = parse::duration, default_value = "30s")]
    pub(crate) timeout: Duration,
    /// A connection attempt fails after this long (default: 10s).
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub(crate) connect_timeout: Duration,
    /// Request method (default: GET).
    #[arg(short = 'm', long, default_value = "GET")]
    pub(crate) method: String,
    /// Request header 'Name: value'; repeatable (default: Host from the URL).
    #[arg(short = 'H', long = "header", value_parser = parse::header)]
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// Request body (default: none).
    #[arg(long, conflicts_with = "body_file")]
    pub(crate) body: Option<String>,
    /// Request body read from a file (default: none).
    #[arg(long)]
    pub(crate) body_file: Option<PathBuf>,
    /// Worker threads (default: all cores, or half of them for a loopback target).
    #[arg(short = 't', long)]
    pub(crate) threads: Option<u32>,
    /// Write the run file (JSON, schema v1) here, atomically (default: none).
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
    /// Keep the server's own counters over the measured window: varnish or varnish:NAME
    /// (varnishstat -j -n NAME at the window's edges) (default: none).
    #[arg(long, value_name = "varnish[:NAME]")]
    pub(crate) server_stats: Option<crate::server::ServerStats>,
    /// HTTP/1.1 client: vload's lean one, or hyper's for comparison (default: lean).
    #[arg(long, value_name = "lean|hyper", value_parser = parse::http1_client, default_value = "lean")]
    pub(crate) http1_client: vload_engine::Http1Client,
    /// Run shard I of N (0-based, e.g. 2/4): this process takes 1/N of the rate or connections
    /// and every Nth target from I; `vload report` merges the shards' run files (default: none).
    #[arg(long, value_name = "I/N", value_parser = parse::shard)]
    pub(crate) shard: Option<vload_engine::Shard>,
    /// Begin at this wall-clock time (RFC 3339, e.g. 2026-11-22T10:00:00Z), so that shards
    /// started apart begin together (default: at once).
    #[arg(long, value_name = "TIME", value_parser = parse::start_at)]
    pub(crate) start_at: Option<std::time::SystemTime>,
    /// Record this server process's CPU time (and its descendants') per interval, for server
    /// CPU per request (default: none).
    #[arg(long, value_name = "PID")]
    pub(crate) watch_pid: Option<u32>,
    /// Targets in vegeta's http format, or JSON lines with --targets-format json (default: the URL alone).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "replay_log", "mix"])]
    pub(crate) targets: Option<PathBuf>,
    /// Format of --targets: http (vegeta's) or json (one object a line) (default: json for .json/.jsonl, else http).
    #[arg(long, value_enum)]
    pub(crate) targets_format: Option<TargetsFormatArg>,
    /// URLs or paths, one a line; paths resolve against the URL (default: the URL alone).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay_log", "mix"])]
    pub(crate) urls: Option<PathBuf>,
    /// Replay the GET and HEAD requests of an NCSA combined or varnishncsa log (default: none).
    #[arg(long, value_name = "FILE", conflicts_with = "mix")]
    pub(crate) replay_log: Option<PathBuf>,
    /// URL lists mixed by weight, e.g. hot.txt:90,crawl.txt:10 (default: none).
    #[arg(long, value_name = "FILE:WEIGHT,...")]
    pub(crate) mix: Option<String>,
    /// How targets are chosen: sequential (file order), random (seeded), round-robin (default: sequential).
    #[arg(long, value_enum, default_value_t = PickArg::Sequential)]
    pub(crate) pick: PickArg,
    /// Walk the list this many times, then stop (default: loop until the duration ends).
    #[arg(long, conflicts_with = "requests")]
    pub(crate) passes: Option<u64>,
    /// Count malformed target or log lines instead of refusing the file (default: refuse).
    #[arg(long)]
    pub(crate) skip_bad_lines: bool,
    /// Send every request to HOST:PORT, keeping each target's Host header and TLS SNI (default: the URL's host).
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) connect_to: Option<String>,
    /// Resolve HOST:PORT to ADDR, as curl does, e.g. www.example.com:80:127.0.0.1 (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub(crate) resolve: Vec<String>,
    /// Skip the check of the server's TLS certificate (default: verify against the system's roots).
    #[arg(long, conflicts_with = "cacert")]
    pub(crate) insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,
    /// Speak HTTP/2: prior knowledge (h2c) for http://, ALPN for https:// (default: HTTP/1.1).
    #[arg(long)]
    pub(crate) http2: bool,
    /// HTTP/2 streams in flight on each connection (default: 1).
    #[arg(long, value_name = "N")]
    pub(crate) streams: Option<u32>,
    /// Close and reopen each connection after this many requests; 1 = no keep-alive (default: keep alive).
    #[arg(long, value_name = "N")]
    pub(crate) requests_per_connection: Option<u32>,
}

/// Format of a --targets file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TargetsFormatArg {
    /// vegeta's http format.
    Http,
    /// One JSON object a line.
    Json,
}

/// How targets are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PickArg {
    /// File order, looping.
    Sequential,
    /// At random, seeded by --seed.
    Random,
    /// File order; a --mix interleaves its lists deterministically by weight.
    RoundRobin,
}

impl AttackArgs {
    /// Validates the flags and builds the plan against `url`.
    pub(crate) fn plan(&self, url: &str) -> anyhow::Result<AttackPlan> {
        let uri = target(url)?;
        let uri_is_https = uri.scheme_str() == Some("https");
        if !uri_is_https && (self.insecure || self.cacert.is_some()) {
            bail!("--insecure and --cacert apply to https:// URLs");
        }
        let tls_name = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        let (connect_to, connect_to_set) = self.connect_address(&uri)?;
        let load = self.load()?;
        let stop = self.stop()?;
        for (value, flag) in [
            (self.timeout, "--timeout"),
            (self.connect_timeout, "--connect-timeout"),
        ] {
            if value.is_zero() {
                bail!("{flag} must be longer than 0s");
            }
        }
        let threads = match self.threads {
            Some(0) => bail!("--threads must be at least 1"),
            Some(t) if t > MAX_THREADS => bail!(
                "--threads {t} is more than vload runs ({MAX_THREADS}): one thread per core is the most that helps"
            ),
            Some(t) => t,
            None => AttackPlan::default_threads(connect_to, vload_engine::available_cores()),
        };
        Ok(AttackPlan {
            request: self.request(uri)?,
            connect_to,
            load,
            stop,
            warmup: self.warmup,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            threads,
            label: self.label.clone(),
            hlog: self.hlog.clone(),
            targets: self.target_plan()?,
            requests_per_connection: match self.requests_per_connection {
                Some(0) => bail!("--requests-per-connection must be at least 1"),
                n => n,
            },
            connect_to_set,
            http2: self.http2,
            streams: self.streams_checked(&load)?,
            tls: (uri_is_https).then(|| TlsOptions {
                server_name: tls_name,
                verify: match (&self.cacert, self.insecure) {
                    (_, true) => Verify::Insecure,
                    (Some(path), false) => Verify::CaFile(path.clone()),
                    (None, false) => Verify::SystemRoots,
                },
            }),
            shard: self.shard,
            start_at: self.start_at,
            http1_client: self.http1_client,
        })
    }

    /// The target files, if any, and how to walk them.
    fn target_plan(&self) -> anyhow::Result<Option<TargetPlan>> {
        let set = |path: &PathBuf, format| TargetSet {
            path: path.clone(),
            format,
            weight: 1,
        };
        let sets = if let Some(path) = &self.targets {
            let json = path
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl");
            let format = match self.targets_format {
                Some(TargetsFormatArg::Json) => TargetFormat::JsonLines,
                Some(TargetsFormatArg::Http) => TargetFormat::Vegeta,
                None if json => TargetFormat::JsonLines,
                None => TargetFormat::Vegeta,
            };
            vec![set(path, format)]
        } else if let Some(path) = &self.urls {
            vec![set(path, TargetFormat::Urls)]
        } else if let Some(path) = &self.replay_log {
            vec![set(path, TargetFormat::Log)]
        } else if let Some(mix) = &self.mix {
            parse_mix(mix)?
        } else {
            if self.passes.is_some()
                || self.skip_bad_lines
                || self.pick != PickArg::Sequential
                || self.targets_format.is_some()
            {
                bail!(
                    "--passes, --pick, --skip-bad-lines and --targets-format need target files: --urls, --targets, --replay-log or --mix"
                );
            }
            return Ok(None);
        };
        let pick = match self.pick {
            PickArg::Sequential => Pick::Sequential,
            PickArg::Random => Pick::Random {
                seed: self.seed.unwrap_or(1),
            },
            PickArg::RoundRobin => Pick::RoundRobin,
        };
        if self.passes.is_some() && (sets.len() > 1 || self.pick == PickArg::Random) {
            bail!(
                "--passes walks one list in order: it does not combine with --mix or --pick random"
            );
        }
        Ok(Some(TargetPlan {
            sets,
            pick,
            passes: self.passes,
            skip_bad_lines: self.skip_bad_lines,
        }))
    }

    fn load(&self) -> anyhow::Result<Load> {
        let open = match self.rate {
            Some(Rate::PerSecond(rate)) => Some(rate),
            _ => None,
        };
        if open.is_some() && self.connections.is_some() {
            bail!(
                "-c/--connections sets a closed loop: with --rate, cap connections with --max-connections"
            );
        }
        if open.is_none() && self.rate.is_none() && self.max_connections.is_some() {
            bail!("--max-connections applies to --rate: for a closed loop use -c/--connections");
        }
        if open.is_none() && self.arrival == ArrivalArg::Poisson {
            bail!("--arrival poisson shapes an open loop: give a --rate too");
        }
        if self.seed.is_some()
            && self.arrival != ArrivalArg::Poisson
            && self.pick != PickArg::Random
        {
            bail!("--seed needs --arrival poisson or --pick random (nothing else is random)");
        }
        let load = match open {
            Some(rate_per_s) => Load::Open {
                rate_per_s,
                arrival: match self.arrival {
                    ArrivalArg::Constant => Arrival::Constant,
                    ArrivalArg::Poisson => Arrival::Poisson {
                        seed: self.seed.unwrap_or(1),
                    },
                },
                max_connections: self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            },
            None => Load::Closed {
                connections: self
                    .connections
                    .or(self.max_connections)
                    .unwrap_or(DEFAULT_CONNECTIONS),
            },
        };
        let connections = match load {
            Load::Closed { connections } => connections,
            Load::Open {
                max_connections, ..
            } => max_connections,
        };
        if connections == 0 {
            bail!("connections must be at least 1");
        }
        Ok(load)
    }

    /// `--streams`, bounded by what a server and this process can hold.
    fn streams_checked(&self, load: &Load) -> anyhow::Result<u32> {
        let streams = match (self.http2, self.streams) {
            (_, Some(0)) => bail!("--streams must be at least 1"),
            (false, Some(_)) => bail!("--streams multiplexes HTTP/2: add --http2"),
            (_, Some(n)) if n > MAX_STREAMS => bail!(
                "--streams {n} is more than any HTTP/2 server allows on a connection (they advertise 100 to 1,000): at most {MAX_STREAMS}"
            ),
            (_, n) => n.unwrap_or(1),
        };
        let connections = match *load {
            Load::Closed { connections } => connections,
            Load::Open {
                max_connections, ..
            } => max_connections,
        };
        let in_flight = u64::from(connections) * u64::from(streams);
        if in_flight > MAX_IN_FLIGHT {
            bail!(
                "{connections} connections x {streams} streams is {in_flight} requests in flight, more than vload holds ({MAX_IN_FLIGHT}): lower -c/--max-connections or --streams"
            );
        }
        Ok(streams)
    }

    fn stop(&self) -> anyhow::Result<Stop> {
        if self.duration.is_some_and(|d| d.is_zero()) {
            bail!("--duration must be longer than 0s");
        }
        if self.requests == Some(0) {
            bail!("--requests must be at least 1");
        }
        if self.passes == Some(0) {
            bail!("--passes must be at least 1");
        }
        let duration = match (self.duration, self.requests, self.passes) {
            (None, None, None) => Some(DEFAULT_DURATION),
            (d, _, _) => d,
        };
        Ok(Stop {
            duration,
            requests: self.requests,
        })
    }

    fn request(&self, url: Uri) -> anyhow::Result<RequestTemplate> {
        let method = Method::from_bytes(self.method.as_bytes()).map_err(|_| {
            anyhow::anyhow!(
                "invalid method '{}' for -m/--method: expected a token like GET or POST",
                self.method
            )
        })?;
        let mut headers = HeaderMap::new();
        let authority = url
            .authority()
            .expect("target() checked the authority")
            .as_str();
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
            (Some(text), _) => Bytes::from(text.clone()),
            (None, Some(path)) => Bytes::from(read_body_file(path)?),
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

impl AttackArgs {
    /// Where connections go: --connect-to, a matching --resolve, or the URL's own address.
    fn connect_address(&self, uri: &Uri) -> anyhow::Result<(SocketAddr, bool)> {
        if let Some(to) = &self.connect_to {
            let addr = to
                .to_socket_addrs()
                .with_context(|| format!("cannot resolve --connect-to '{to}': expected HOST:PORT"))?
                .next()
                .with_context(|| format!("--connect-to '{to}' has no address"))?;
            if addr.port() == 0 {
                bail!("--connect-to '{to}': port 0 is not a port (1 to 65535)");
            }
            return Ok((addr, true));
        }
        let authority = uri.authority().expect("target() checked the authority");
        let default_port = if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        let key = format!(
            "{}:{}",
            authority.host(),
            authority.port_u16().unwrap_or(default_port)
        );
        for entry in &self.resolve {
            let bad = || {
                anyhow::anyhow!(
                    "invalid --resolve '{entry}': expected HOST:PORT:ADDR, e.g. www.example.com:80:127.0.0.1"
                )
            };
            let (host_port, addr) = entry.rsplit_once(':').ok_or_else(bad)?;
            let addr: std::net::IpAddr =
                addr.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
            let port: u16 = host_port
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse().ok())
                .filter(|p| *p > 0)
                .ok_or_else(bad)?;
            if host_port == key {
                return Ok((SocketAddr::new(addr, port), true));
            }
        }
        Ok((resolve(uri)?, false))
    }
}

/// The largest request body: one copy is shared by every request, but a wrong file (a disk
/// image) should be refused, not read into memory.
const MAX_BODY: u64 = 1 << 30;

fn read_body_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let cannot = || format!("cannot read --body-file '{}'", path.display());
    let file = std::fs::File::open(path).with_context(cannot)?;
    let size = file.metadata().with_context(cannot)?.len();
    if size > MAX_BODY {
        bail!(
            "--body-file '{}' is {size} bytes, above the 1 GiB vload sends as one body",
            path.display()
        );
    }
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_BODY), &mut body)
        .with_context(cannot)?;
    Ok(body)
}

/// `hot.txt:90,crawl.txt:10`.
fn parse_mix(text: &str) -> anyhow::Result<Vec<TargetSet>> {
    text.split(',')
        .map(|part| {
            let (path, weight) = part.rsplit_once(':').ok_or_else(|| {
                anyhow::anyhow!("invalid --mix part '{part}': expected FILE:WEIGHT")
            })?;
            let weight: u32 = weight.parse().ok().filter(|w| *w > 0).ok_or_else(|| {
                anyhow::anyhow!(
                    "invalid weight '{weight}' in --mix: expected a whole number above 0"
                )
            })?;
            Ok(TargetSet {
                path: PathBuf::from(path),
                format: TargetFormat::Urls,
                weight,
            })
        })
        .collect()
}

/// Parses and resolves the target URL.
fn target(url: &str) -> anyhow::Result<Uri> {
    if !url.contains("://") {
        bail!("invalid URL '{url}': no scheme: expected http://{url}");
    }
    let uri: Uri = url.parse().map_err(|e| {
        anyhow::anyhow!("invalid URL '{url}': {e}: expected http://host[:port]/path")
    })?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {}
        Some(other) => {
            bail!("'{url}': unsupported scheme '{other}': expected http://host[:port]/path")
        }
        None => bail!("invalid URL '{url}': expected http://host[:port]/path"),
    }
    let Some(authority) = uri.authority() else {
        bail!("invalid URL '{url}': no host: expected http://host[:port]/path")
    };
    // The http crate reads `:99999` as no port at all, which would attack port 80.
    vload_engine::check_port(authority)
        .map_err(|why| anyhow::anyhow!("invalid URL '{url}': {why}"))?;
    Ok(uri)
}

/// The address of the URL's host.
fn resolve(uri: &Uri) -> anyhow::Result<SocketAddr> {
    let url = uri.to_string();
    let authority = uri.authority().expect("target() checked the authority");
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let addr = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host '{host}' of URL '{url}'"))?
        .next()
        .with_context(|| format!("host '{host}' of URL '{url}' has no address"))?;
    Ok(addr)
}

/// The live progress line on stderr.
struct ProgressLine {
    enabled: bool,
    drawn: bool,
}

impl Observer for ProgressLine {
    fn on_interval(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        use vload_analyze::units::{count, duration_ns, rate};
        let planned = p
            .planned
            .map(|d| format!("/{}s", d.as_secs()))
            .unwrap_or_default();
        let latency = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| duration_ns(v as f64));
        let phase = if p.warmup { " (warm-up)" } else { "" };
        let line = format!(
            "{}s{planned}{phase}  {}  done {}  p50 {}  p99 {}  errors {}",
            p.elapsed.as_secs(),
            rate(p.rate_per_s),
            count(p.completed),
            latency(p.p50_ns),
            latency(p.p99_ns),
            count(p.errors)
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }
}

/// Two observers of one attack.
struct Observers<'a>(&'a mut ProgressLine, &'a mut ServerWatch);

impl Observer for Observers<'_> {
    #[allow(
        clippy::print_stderr,
        reason = "a warning that part of the output is lost"
    )]
    fn on_warning(&mut self, warning: &str) {
        self.0.clear();
        eprintln!("vload: warning: {}", vload_analyze::units::clean(warning));
    }

    fn on_interval(&mut self, p: &Progress) {
        self.1.on_interval(p);
        self.0.on_interval(p);
    }
}

/// `--server-stats` and `--watch-pid`: the server's counters and CPU at the edges of the
/// measured window, and its CPU per interval.
struct ServerWatch {
    varnish: Option<Option<String>>,
    pid: Option<u32>,
    /// Intervals in the warm-up: the window opens when the last of them is reported.
    warmup_intervals: u64,
    varnish_start: Option<server::VarnishSnapshot>,
    varnish_edge: Option<server::VarnishSnapshot>,
    /// Requests vload completed in the warm-up, to tell a stale edge snapshot.
    warmup_completed: u64,
    connections: u64,
    cpu_edge: Option<server::ProcessCpu>,
    /// CPU before the attack, then after each interval.
    cpu_samples: Vec<Option<server::ProcessCpu>>,
    /// A sample failed (the process ended): said once.
    cpu_lost: bool,
}

impl ServerWatch {
    fn start(args: &AttackArgs, plan: &AttackPlan) -> anyhow::Result<Self> {
        let warmup = plan.warmup;
        let varnish = args.server_stats.clone().map(|s| match s {
            server::ServerStats::Varnish { instance } => instance,
        });
        let varnish_start = varnish
            .as_ref()
            .map(|instance| server::varnishstat(instance.as_deref()))
            .transpose()?;
        let cpu_start = args.watch_pid.map(server::process_cpu).transpose()?;
        let warmup_intervals = warmup.as_secs_f64().ceil() as u64;
        let open_now = warmup_intervals == 0;
        Ok(ServerWatch {
            varnish,
            pid: args.watch_pid,
            warmup_intervals,
            varnish_edge: varnish_start.clone().filter(|_| open_now),
            varnish_start,
            warmup_completed: 0,
            connections: u64::from(plan.connections()),
            cpu_edge: cpu_start.filter(|_| open_now),
            cpu_samples: vec![cpu_start],
            cpu_lost: false,
        })
    }

    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    fn on_interval(&mut self, p: &Progress) {
        if let Some(pid) = self.pid {
            let sample = server::process_cpu(pid).ok();
            if sample.is_none() && !self.cpu_lost {
                self.cpu_lost = true;
                eprintln!("vload: warning: --watch-pid {pid}: the process has ended");
            }
            self.cpu_samples.push(sample);
        }
        if p.warmup && p.elapsed.as_secs() == self.warmup_intervals {
            // The last warm-up interval: the measured window opens now.
            self.cpu_edge = self.cpu_samples.last().copied().flatten();
            self.warmup_completed = p.completed;
            if let Some(instance) = &self.varnish {
                match server::varnishstat(instance.as_deref()) {
                    Ok(snapshot) => self.varnish_edge = Some(snapshot),
                    Err(e) => eprintln!("vload: warning: {e:#}"),
                }
            }
        }
    }

    /// Adds the server's record to `run`; a server that cannot be read now costs its record,
    /// never the run.
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    fn finish(self, run: &mut RunFile) {
        if self.varnish.is_none() && self.pid.is_none() {
            return;
        }
        let mut record = vload_schema::ServerRecord {
            varnish: None,
            process: None,
        };
        if let Some(instance) = &self.varnish {
            let instance = instance.as_deref();
            // Every request vload completed, warm-up included, was one lookup.
            let expected: u64 = run.intervals.iter().map(|i| i.completed).sum();
            let settled = self
                .varnish_start
                .as_ref()
                .map(|start| server::settled_varnishstat(instance, start, expected));
            let window = match (&self.varnish_start, &self.varnish_edge, settled) {
                (_, _, Some(Err(e))) => Err(format!("{e:#}")),
                (Some(start), edge, Some(Ok(end))) => {
                    // Varnish publishes a busy connection's counts late (when it closes, or
                    // with feature +busy_stats_rate every few requests): an edge snapshot
                    // that missed the warm-up's requests is stale, and the whole attack is
                    // kept instead.
                    let fresh = edge.as_ref().filter(|edge| {
                        let seen = edge.client_req().saturating_sub(start.client_req());
                        let slack = 2 * self.connections + self.warmup_completed / 100;
                        seen.abs_diff(self.warmup_completed) <= slack
                    });
                    match fresh {
                        Some(edge) => server::varnish_window(instance, "measured", edge, &end),
                        None => server::varnish_window(instance, "attack", start, &end),
                    }
                }
                _ => unreachable!("the first snapshot was taken or start failed"),
            };
            match window {
                Ok(window) => record.varnish = Some(window),
                Err(why) => eprintln!("vload: warning: no Varnish counters kept: {why}"),
            }
        }
        if let Some(pid) = self.pid {
            let end = server::process_cpu(pid)
                .ok()
                .or_else(|| self.cpu_samples.iter().rev().flatten().next().copied());
            match (self.cpu_edge, end) {
                (Some(start), Some(end)) => {
                    record.process = Some(server::process_window(pid, start, end));
                }
                _ => eprintln!("vload: warning: --watch-pid {pid}: no CPU time kept"),
            }
            let tick = server::tick_s();
            for (interval, pair) in run.intervals.iter_mut().zip(self.cpu_samples.windows(2)) {
                if let [Some(a), Some(b)] = pair {
                    let ticks = (b.user + b.system).saturating_sub(a.user + a.system);
                    interval.server_cpu_s = Some(ticks as f64 * tick);
                }
            }
        }
        run.server = Some(record);
    }
}

impl ProgressLine {
    fn clear(&self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// The signal that interrupted an attack, if one did (0 until then).
#[derive(Debug, Clone, Default)]
pub(crate) struct Signals(std::sync::Arc<std::sync::atomic::AtomicI32>);

impl Signals {
    /// The first signal received, if any.
    pub(crate) fn received(&self) -> Option<i32> {
        Some(self.0.load(std::sync::atomic::Ordering::SeqCst)).filter(|s| *s != 0)
    }
}

/// On SIGINT, SIGTERM or SIGHUP, triggers `interrupt` (the attack ends, the run file is still
/// written); on a second one, exits at once, since the user insists (a run file waiting for
/// a reader at a FIFO would otherwise hold the process forever).
fn watch_signals(interrupt: Interrupt) -> anyhow::Result<Signals> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Installed now, so a signal that comes before the thread runs is not lost.
    let (mut int, mut term, mut hup) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })?;
    let signals = Signals::default();
    let seen = signals.0.clone();
    std::thread::Builder::new()
        .name("vload-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                loop {
                    let number = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                        _ = hup.recv() => libc::SIGHUP,
                    };
                    let first = seen.compare_exchange(
                        0,
                        number,
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                    );
                    if first.is_err() {
                        std::process::exit(128 + number);
                    }
                    interrupt.trigger();
                }
            });
        })?;
    Ok(signals)
}

/// What `vload attack` did: the run, where it goes, and the signal that ended it early.
pub(crate) struct Attack {
    pub(crate) run: RunFile,
    pub(crate) output: Option<Destination>,
    pub(crate) signal: Option<i32>,
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
        let Some(targets) = self.target_plan()? else {
            if let Some(to) = &self.connect_to {
                return Ok(Aim::Url(format!("http://{to}/")));
            }
            return Ok(Aim::BuiltIn);
        };
        let summary = targets.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let files = targets
            .sets
            .iter()
            .map(|s| format!("'{}'", s.path.display()))
            .collect::<Vec<_>>()
            .join(", ");
        let origin = match (&summary.first_origin, summary.paths, &self.connect_to) {
            (Some(origin), 0, _) => origin.clone(),
            (Some(_), paths, None) => bail!(
                "{files} holds both absolute URLs and {paths} paths, and no URL was given for the paths: give the URL they resolve against, e.g. vload attack {} http://host:port/",
                self.target_flag()
            ),
            (Some(origin), _, Some(_)) => origin.clone(),
            (None, _, Some(to)) => format!("http://{to}"),
            (None, _, None) => return Ok(Aim::BuiltIn),
        };
        if summary.schemes.0 > 0 && summary.schemes.1 > 0 {
            bail!(
                "{files} mixes http:// and https:// URLs and no URL was given: vload speaks one of them per attack; give the URL, e.g. vload attack {} https://host/",
                self.target_flag()
            );
        }
        Ok(Aim::Url(format!("{origin}/")))
    }

    /// The flag that named the targets, for messages.
    fn target_flag(&self) -> &'static str {
        match (&self.targets, &self.urls, &self.replay_log) {
            (Some(_), _, _) => "--targets FILE",
            (_, Some(_), _) => "--urls FILE",
            (_, _, Some(_)) => "--replay-log FILE",
            _ => "--mix FILES",
        }
    }
}

/// Runs `vload attack` up to its run file, which the caller writes after the report.
pub(crate) fn run(args: &AttackArgs) -> anyhow::Result<Attack> {
    // First, so that a Ctrl-C while files are read ends vload cleanly.
    let interrupt = Interrupt::new();
    let signals = watch_signals(interrupt.clone()).context("cannot install signal handlers")?;
    let output = args
        .output
        .as_deref()
        .map(|path| crate::output::check(path, "run file"))
        .transpose()?;
    // No URL and nothing naming a server: the built-in origin, on its own thread, alive
    // until the attack ends.
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
    let mut plan = args.plan(&url)?;
    // The built-in origin answers any Host: targets naming other hosts all go to it.
    plan.connect_to_set |= origin.is_some();
    announce(&plan, origin.is_some(), args.url.is_none());
    let mut progress = ProgressLine {
        enabled: !args.no_progress && std::io::stderr().is_terminal(),
        drawn: false,
    };
    // The server's counters before anything is sent: a wrong name fails here, not after.
    let mut watch = ServerWatch::start(args, &plan)?;
    let result = vload_engine::run(plan, &mut Observers(&mut progress, &mut watch), &interrupt);
    progress.clear();
    let mut run = result?;
    watch.finish(&mut run);
    drop(origin);
    Ok(Attack {
        run,
        output,
        signal: signals.received(),
    })
}

#[allow(clippy::print_stderr, reason = "the cli's own status line")]
fn announce(plan: &AttackPlan, builtin: bool, from_targets: bool) {
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
    eprintln!("vload: attacking {target}{address}{origin} with {threads}{why}");
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::Cli;

    const URL: &str = "http://127.0.0.1:9/";

    fn args(extra: &[&str]) -> AttackArgs {
        let argv = ["vload", "attack"]
            .into_iter()
            .chain(extra.iter().copied())
            .chain([URL]);
        Cli::try_parse_from(argv)
            .expect("valid flags")
            .attack()
            .expect("attack subcommand")
            .clone()
    }

    fn plan_error(extra: &[&str]) -> String {
        args(extra).plan(URL).unwrap_err().to_string()
    }

    #[test]
    fn rate_accepts_suffixes() {
        assert_eq!(args(&["-r", "2k"]).rate, Some(Rate::PerSecond(2_000.0)));
        assert_eq!(
            args(&["--rate", "1200/m"]).rate,
            Some(Rate::PerSecond(20.0))
        );
        assert_eq!(args(&["--rate", "infinity"]).rate, Some(Rate::Unlimited));
    }

    #[test]
    fn no_rate_is_a_closed_loop_of_50_for_10s() {
        let plan = args(&[]).plan(URL).unwrap();
        assert_eq!(plan.load, Load::Closed { connections: 50 });
        assert_eq!(
            plan.stop,
            Stop {
                duration: Some(Duration::from_secs(10)),
                requests: None
            }
        );
        assert_eq!(plan.request.headers["host"], "127.0.0.1:9");
    }

    #[test]
    fn rate_infinity_with_max_connections_is_a_closed_loop() {
        let plan = args(&["--rate", "0", "--max-connections", "7"])
            .plan(URL)
            .unwrap();
        assert_eq!(plan.load, Load::Closed { connections: 7 });
    }

    #[test]
    fn open_loop_takes_rate_arrival_and_seed() {
        let plan = args(&[
            "-r",
            "20k",
            "--arrival",
            "poisson",
            "--seed",
            "9",
            "--max-connections",
            "300",
        ])
        .plan(URL)
        .unwrap();
        assert_eq!(
            plan.load,
            Load::Open {
                rate_per_s: 20_000.0,
                arrival: Arrival::Poisson { seed: 9 },
                max_connections: 300
            }
        );
    }

    #[test]
    fn impossible_combinations_say_what_to_do() {
        assert!(plan_error(&["-c", "10", "-r", "100"]).contains("--max-connections"));
        assert!(plan_error(&["--max-connections", "10"]).contains("-c/--connections"));
        assert!(plan_error(&["--arrival", "poisson"]).contains("--rate"));
        assert!(plan_error(&["-r", "10", "--seed", "3"]).contains("--arrival poisson"));
        assert!(plan_error(&["-d", "0s"]).contains("--duration"));
        assert!(plan_error(&["-n", "0"]).contains("--requests"));
        assert!(plan_error(&["-c", "0"]).contains("at least 1"));
        assert!(plan_error(&["-t", "0"]).contains("--threads"));
        assert!(plan_error(&["-m", "GE T"]).contains("invalid method"));
        assert!(plan_error(&["--body-file", "/nonexistent/vload"]).contains("--body-file"));
        assert!(
            Cli::try_parse_from(["vload", "attack", "--body", "a", "--body-file", "b", URL])
                .is_err()
        );
    }

    #[test]
    fn bad_urls_name_the_url_and_the_fix() {
        let a = args(&[]);
        for (url, needle) in [
            ("127.0.0.1:8080/", "expected http://"),
            ("https://no-such-host.invalid/", "cannot resolve host"),
            ("ftp://127.0.0.1/", "unsupported scheme"),
            ("http://", "invalid URL"),
            (
                "http://no-such-host.invalid/",
                "cannot resolve host 'no-such-host.invalid'",
            ),
        ] {
            let e = format!("{:#}", a.plan(url).unwrap_err());
            assert!(e.contains(needle), "{url}: {e}");
        }
    }

    #[test]
    fn headers_body_and_host_override() {
        let plan = args(&[
            "-H",
            "Host: example.test",
            "-H",
            "X-A: 1",
            "-H",
            "X-A: 2",
            "-m",
            "POST",
            "--body",
            "hi",
        ])
        .plan(URL)
        .unwrap();
        let h = &plan.request.headers;
        assert_eq!(h["host"], "example.test");
        assert_eq!(h.get_all("x-a").iter().count(), 2);
        assert_eq!(plan.request.method, Method::POST);
        assert_eq!(plan.request.body, Bytes::from_static(b"hi"));
        assert_eq!(
            plan.connect_to,
            "127.0.0.1:9".parse::<SocketAddr>().unwrap()
        );
    }

    #[test]
    fn loopback_targets_get_half_the_cores() {
        let plan = args(&[]).plan(URL).unwrap();
        assert_eq!(plan.threads, (vload_engine::available_cores() / 2).max(1));
        assert_eq!(args(&["-t", "3"]).plan(URL).unwrap().threads, 3);
    }
}

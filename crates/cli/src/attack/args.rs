//! `vload attack`'s arguments as typed, and the plan they make against a URL.

use std::net::{SocketAddr, ToSocketAddrs as _};

use anyhow::{Context as _, bail};
use http::Uri;
use vload_engine::{AttackPlan, TlsOptions, Verify};

use super::cache::CacheArgs;
use super::flags::{ConnectionArgs, LoadArgs, OutputArgs, RequestArgs, ServerArgs};
use super::targets::{PickArg, TargetArgs};

/// Send load to a URL and report what happened.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AttackArgs {
    /// Target URL, http://host[:port]/path (default: where the targets point, or a built-in
    /// origin on 127.0.0.1 started for this run).
    pub(crate) url: Option<String>,
    #[command(flatten, next_help_heading = "Load")]
    pub(crate) load: LoadArgs,
    #[command(flatten, next_help_heading = "Request")]
    pub(crate) request: RequestArgs,
    #[command(flatten, next_help_heading = "Targets")]
    pub(crate) targets: TargetArgs,
    #[command(flatten, next_help_heading = "Cache workload")]
    pub(crate) cache: CacheArgs,
    #[command(flatten, next_help_heading = "Stampede")]
    pub(crate) stampede: crate::stampede::StampedeArgs,
    #[command(flatten, next_help_heading = "Origin plan")]
    pub(crate) outage: crate::outage::OutageArgs,
    #[command(flatten, next_help_heading = "Connection")]
    pub(crate) connection: ConnectionArgs,
    #[command(flatten, next_help_heading = "Output")]
    pub(crate) output: OutputArgs,
    #[command(flatten, next_help_heading = "Server")]
    pub(crate) server: ServerArgs,
    #[command(flatten, next_help_heading = "History")]
    pub(crate) history: crate::history::ProvenanceArgs,
}

impl AttackArgs {
    /// Validates the flags and builds the plan against `url`.
    pub(crate) fn plan(&self, url: &str) -> anyhow::Result<AttackPlan> {
        // Credentials in the URL become a Basic Authorization header, as curl sends them,
        // never part of the Host header (nor, unredacted, of the run file).
        let (userinfo, url) = match vload_engine::url::take_userinfo(url) {
            Some((userinfo, stripped)) => (Some(userinfo), stripped),
            None => (None, url.to_owned()),
        };
        let url = url.as_str();
        let uri = parse_url(url)?;
        let tls = self.tls(&uri)?;
        let (connect_to, connect_to_set) = self.connect_address(&uri)?;
        // --seed also seeds a random pick and a catalogue's draws.
        let random_pick = self.targets.pick == PickArg::Random || self.cache.catalogue.is_some();
        let load = self.load.load(random_pick)?;
        let (timeout, connect_timeout) = self.connection.timeouts()?;
        let mut request = self.request.request(uri)?;
        if let Some(userinfo) = userinfo
            && !request.headers.contains_key(http::header::AUTHORIZATION)
        {
            let value = vload_engine::url::basic_authorization(&userinfo);
            request.headers.insert(
                http::header::AUTHORIZATION,
                http::HeaderValue::from_str(&value)
                    .context("the URL's credentials are not a valid header")?,
            );
        }
        let mut plan = AttackPlan::new(
            request,
            connect_to,
            load,
            self.load.stop(self.targets.passes)?,
        );
        plan.warmup = self.load.warmup;
        plan.timeout = timeout;
        plan.connect_timeout = connect_timeout;
        plan.threads = self.load.threads(connect_to)?;
        plan.label = self.output.label.clone();
        plan.hlog = self.output.hlog.clone();
        plan.targets = self.targets.plan(self.load.seed)?;
        if let Some((catalogue, capacity)) = self.cache.catalogue(self.load.seed)? {
            plan.catalogue = Some(catalogue);
            plan.cache_capacity = capacity;
        }
        plan.classes = self.targets.classes()?;
        if !plan.classes.is_empty() && plan.targets.is_none() && plan.catalogue.is_none() {
            bail!(
                "--class groups requests by their path: it needs target files (--urls, --targets, --replay-log, --mix) or --catalogue"
            );
        }
        plan.requests_per_connection = self.connection.requests_per_connection()?;
        plan.connect_to_set = connect_to_set;
        plan.protocol = self.connection.protocol(&plan.load)?;
        plan.tls = tls;
        plan.shard = self.load.shard;
        plan.start_at = self.load.start_at;
        plan.expect_status = self.output.expect_status.clone().0;
        plan.server_timing = self.output.server_timing.clone();
        check_start(self.load.start_at, self.load.shard.is_some())?;
        if let Some(origin) = self.origin_plan(&plan)? {
            origin.apply(&mut plan);
        }
        Ok(plan)
    }

    /// The origin plan `--outage` and `--slowdown` ask for against `plan`'s window.
    pub(crate) fn origin_plan(
        &self,
        plan: &AttackPlan,
    ) -> anyhow::Result<Option<crate::outage::OriginPlan>> {
        let measured = plan.stop.duration.or(match &plan.load {
            vload_engine::Load::Open { rate, .. } => rate.duration(),
            vload_engine::Load::Closed { .. } => None,
        });
        let origin = self
            .outage
            .plan(&plan.load, measured, self.load.shard.is_some())?;
        if origin.is_some() && self.load.start_at.is_some() {
            bail!("--outage and --slowdown begin with the attack: drop --start-at");
        }
        Ok(origin)
    }

    /// TLS for an https URL: its host as the server name, verified as asked.
    fn tls(&self, uri: &Uri) -> anyhow::Result<Option<TlsOptions>> {
        let c = &self.connection;
        if uri.scheme_str() != Some("https") {
            if c.insecure || c.cacert.is_some() {
                bail!("--insecure and --cacert apply to https:// URLs");
            }
            return Ok(None);
        }
        Ok(Some(TlsOptions {
            server_name: uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_owned(),
            verify: match (&c.cacert, c.insecure) {
                (_, true) => Verify::Insecure,
                (Some(path), false) => Verify::CaFile(path.clone()),
                (None, false) => Verify::SystemRoots,
            },
        }))
    }

    /// Where connections go: --connect-to, a matching --resolve, or the URL's own address;
    /// true when set by hand.
    fn connect_address(&self, uri: &Uri) -> anyhow::Result<(SocketAddr, bool)> {
        let c = &self.connection;
        if let Some(to) = &c.connect_to {
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
        let authority = uri.authority().context("the URL names no host")?;
        let key = format!("{}:{}", authority.host(), port_of(uri));
        for entry in &c.resolve {
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

/// The URL's port, or its scheme's.
fn port_of(uri: &Uri) -> u16 {
    uri.port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        })
}

/// Parses the target URL: http or https, a host, a port that is one.
pub(crate) fn parse_url(url: &str) -> anyhow::Result<Uri> {
    if !url.contains("://") {
        bail!("invalid URL '{url}': no scheme: expected http://{url}");
    }
    let encoded = vload_engine::url::encode_url(url);
    let uri: Uri = encoded.parse().map_err(|e| {
        anyhow::anyhow!("invalid URL '{url}': {e}: expected http://host[:port]/path")
    })?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
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
    let host = uri
        .host()
        .context("the URL names no host")?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let addr = (host, port_of(uri))
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host '{host}' of URL '{url}'"))?
        .next()
        .with_context(|| format!("host '{host}' of URL '{url}' has no address"))?;
    Ok(addr)
}

/// A `--start-at` already past: refused for one attack (it would start at once, silently
/// not when asked); for a shard, loudly warned, since its siblings may have begun on time
/// and this one is better late than missing (the merge flags its late start).
fn check_start(start_at: Option<std::time::SystemTime>, shard: bool) -> anyhow::Result<()> {
    let Some(at) = start_at else {
        return Ok(());
    };
    let Ok(ago) = std::time::SystemTime::now().duration_since(at) else {
        return Ok(());
    };
    if ago < std::time::Duration::from_secs(1) {
        return Ok(());
    }
    let when = humantime::format_rfc3339_seconds(at);
    let ago = humantime::format_duration(std::time::Duration::from_secs(ago.as_secs()));
    if !shard {
        bail!(
            "--start-at {when} was {ago} ago: give a time ahead (e.g. +1m, or $(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)), or drop it to start at once"
        );
    }
    crate::paint::say!(
        "vload: WARNING: --start-at {when} was {ago} ago: this shard starts now, late; its siblings may have started on time, and the merged report will flag the late start"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use std::net::SocketAddr;
    use std::time::Duration;

    use bytes::Bytes;
    use http::Method;
    use vload_engine::{Arrival, Load, Stop};

    use super::*;
    use crate::attack::flags::Rate;
    use crate::cli::Cli;

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
        assert_eq!(
            args(&["-r", "2k"]).load.rate,
            Some(Rate::PerSecond(2_000.0))
        );
        assert_eq!(
            args(&["--rate", "1200/m"]).load.rate,
            Some(Rate::PerSecond(20.0))
        );
        assert_eq!(
            args(&["--rate", "infinity"]).load.rate,
            Some(Rate::Unlimited)
        );
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
                rate: vload_engine::RatePlan::constant(20_000.0),
                arrival: Arrival::Poisson { seed: 9 },
                max_connections: 300
            }
        );
    }

    #[test]
    fn impossible_combinations_say_what_to_do() {
        // wrk2's habit: -c beside a rate caps the connections (with a note); both caps at
        // once are refused.
        let capped = args(&["-c", "10", "-r", "100"]).plan(URL).unwrap();
        assert!(matches!(
            capped.load,
            Load::Open {
                max_connections: 10,
                ..
            }
        ));
        assert!(
            plan_error(&["-c", "10", "--max-connections", "20", "-r", "100"])
                .contains("give --max-connections alone")
        );
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

    /// See #30: credentials in the URL went into the Host header of every request.
    #[test]
    fn credentials_in_the_url_are_basic_auth_not_host() {
        let url = "http://user:s%40cret@127.0.0.1:9/a";
        let plan = args(&[]).plan(url).unwrap();
        let h = &plan.request.headers;
        assert_eq!(h["host"], "127.0.0.1:9");
        assert_eq!(h["authorization"], "Basic dXNlcjpzQGNyZXQ=");
        assert_eq!(plan.request.url.to_string(), "http://127.0.0.1:9/a");
        // A header given by hand wins.
        let plan = args(&["-H", "Authorization: Bearer t"]).plan(url).unwrap();
        assert_eq!(plan.request.headers["authorization"], "Bearer t");
    }

    #[test]
    fn expected_statuses_parse_as_ranges() {
        let r = |from, to| vload_schema::StatusRange { from, to };
        let plan = |e: &str| {
            args(&["--expect-status", e])
                .plan(URL)
                .unwrap()
                .expect_status
        };
        assert_eq!(plan("2xx,3xx"), [r(200, 399)]);
        assert_eq!(plan("200,204,304"), [r(200, 200), r(204, 204), r(304, 304)]);
        assert_eq!(plan("200-299,404"), [r(200, 299), r(404, 404)]);
        assert_eq!(args(&[]).plan(URL).unwrap().expect_status, [r(200, 399)]);
        for bad in ["2xx,9xx", "99", "300-200", "ok"] {
            let argv = ["vload", "attack", "--expect-status", bad, URL];
            assert!(Cli::try_parse_from(argv).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_targets_get_half_the_cores() {
        let plan = args(&[]).plan(URL).unwrap();
        assert_eq!(plan.threads, (vload_engine::available_cores() / 2).max(1));
        assert_eq!(args(&["-t", "3"]).plan(URL).unwrap().threads, 3);
    }
}

//! `vload attack`'s stampede flags.

use std::time::Duration;

use anyhow::bail;

/// A stampede beside the load: N requests for one object at one instant, again and again.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StampedeArgs {
    /// Send N requests for one object at one instant, one a connection of its own, at each
    /// expiry of the object (or right after a purge of it), counted apart from the load
    /// (default: none).
    #[arg(long, value_name = "N")]
    pub(crate) stampede: Option<u64>,
    /// How often a stampede comes (the object's max-age with --stampede-on expiry) (default:
    /// 10s).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "stampede")]
    pub(crate) stampede_every: Option<Duration>,
    /// What each stampede follows: expiry (the object's max-age runs out: it is asked once
    /// first, then just after each expiry), purge (a PURGE of it is sent just before) or new
    /// (each event asks an object never asked before: the target with v=K added to its query)
    /// (default: expiry).
    #[arg(long, value_name = "EVENT", value_parser = ["expiry", "purge", "new"], requires = "stampede")]
    pub(crate) stampede_on: Option<String>,
    /// The object's request target (default: /stampede?cache=max-age=EVERY, which vload's
    /// origin serves with that max-age).
    #[arg(long, value_name = "PATH", requires = "stampede")]
    pub(crate) stampede_target: Option<String>,
    /// `vload origin`'s /stats URL: each event's origin fetches, counted by the origin itself
    /// (default: the cache's word on each answer only).
    #[arg(long, value_name = "URL", requires = "stampede")]
    pub(crate) stampede_origin: Option<String>,
}

/// The most requests a stampede sends at once (one connection each).
pub(crate) const MOST: u64 = 10_000;

/// What each event follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StampedeOn {
    /// The object's max-age running out.
    Expiry,
    /// A purge of it, sent just before.
    Purge,
    /// Nothing: each event asks an object never asked before.
    New,
}

impl StampedeOn {
    /// The run file's word for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StampedeOn::Expiry => "expiry",
            StampedeOn::Purge => "purge",
            StampedeOn::New => "new",
        }
    }
}

/// A checked stampede.
#[derive(Debug, Clone)]
pub(crate) struct StampedeSpec {
    pub(crate) requests: u64,
    pub(crate) every: Duration,
    pub(crate) on: StampedeOn,
    pub(crate) target: String,
    pub(crate) origin: Option<crate::server::fetch::HttpUrl>,
}

impl StampedeArgs {
    /// The stampede asked for, checked (`https`: the URL's scheme).
    pub(crate) fn spec(&self, https: bool) -> anyhow::Result<Option<StampedeSpec>> {
        let Some(requests) = self.stampede else {
            return Ok(None);
        };
        if https {
            bail!("--stampede sends plain HTTP/1.1: stampede through an http:// URL of the cache");
        }
        if !(1..=MOST).contains(&requests) {
            bail!("--stampede {requests}: give 1 to {MOST} requests (one connection each)");
        }
        let every = self.stampede_every.unwrap_or(Duration::from_secs(10));
        if every < Duration::from_secs(1) || every.subsec_nanos() != 0 {
            bail!(
                "--stampede-every {}: give whole seconds, 1s or more (an object's max-age is in seconds)",
                humantime::format_duration(every)
            );
        }
        let target = match &self.stampede_target {
            Some(t) if t.contains('#') => bail!(
                "--stampede-target '{}' has a fragment: give a path and query, e.g. /hot?cache=max-age=10",
                t.escape_debug()
            ),
            Some(t) if t.starts_with('/') && !t.chars().any(|c| c.is_control() || c == ' ') => {
                t.clone()
            }
            Some(t) => bail!(
                "--stampede-target '{}' is not a request target: give a path, e.g. /hot?cache=max-age=10",
                t.escape_debug()
            ),
            None => format!("/stampede?cache=max-age={}", every.as_secs()),
        };
        let origin = self
            .stampede_origin
            .as_deref()
            .map(crate::server::fetch::HttpUrl::parse)
            .transpose()
            .map_err(|why| {
                anyhow::anyhow!("--stampede-origin {why}: give vload origin's /stats URL, e.g. http://127.0.0.1:8080/stats")
            })?;
        Ok(Some(StampedeSpec {
            requests,
            every,
            on: match self.stampede_on.as_deref() {
                Some("purge") => StampedeOn::Purge,
                Some("new") => StampedeOn::New,
                _ => StampedeOn::Expiry,
            },
            target,
            origin,
        }))
    }
}

impl StampedeSpec {
    /// Event `k`'s request target (from 0): the object's, or with `new` one never asked
    /// before, `v=k` added to its query.
    pub(crate) fn target_of(&self, k: usize) -> String {
        if self.on != StampedeOn::New {
            return self.target.clone();
        }
        let join = if self.target.contains('?') { '&' } else { '?' };
        format!("{}{join}v={k}", self.target)
    }
}

//! `vload attack`'s cache-workload flags: a synthetic catalogue and the cache to model.

use anyhow::{Context as _, bail};
use vload_cache::{Capacity, Catalogue};

/// A synthetic catalogue of objects to draw requests from, and the cache to model.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct CacheArgs {
    /// Draw requests from a seeded catalogue of N objects, /c/ID?size=..., which the built-in
    /// origin serves from the path alone (default: none).
    #[arg(long, value_name = "N", conflicts_with_all = ["targets", "urls", "replay_log", "mix"])]
    pub(crate) catalogue: Option<u64>,
    /// How often each object is asked: zipf:S, uniform, or hot:OBJECTS%:REQUESTS% (a hot set
    /// beside a crawl of the whole catalogue) (default: zipf:0.8).
    #[arg(long, value_name = "LAW", requires = "catalogue")]
    pub(crate) popularity: Option<String>,
    /// Each object's size: BYTES (4k), MIN-MAX (1k-64k), lognormal:MEDIAN:SIGMA or file:PATH
    /// of sizes (default: 4k).
    #[arg(long, value_name = "LAW", requires = "catalogue")]
    pub(crate) object_size: Option<String>,
    /// The max-age the origin gives each object: SECONDS or a range MIN-MAX each object
    /// draws from, e.g. 300 or 1m-10m (default: no Cache-Control).
    #[arg(long, value_name = "SECONDS", requires = "catalogue")]
    pub(crate) ttl: Option<String>,
    /// Share of requests for objects asked once and never again, e.g. 5% (default: 0%).
    #[arg(long, value_name = "PERCENT", requires = "catalogue")]
    pub(crate) one_hit_wonders: Option<String>,
    /// Spread the objects over N virtual hosts, site0.test to siteN-1.test, by Host header
    /// (default: 1, the URL's host).
    #[arg(long, value_name = "N", requires = "catalogue")]
    pub(crate) vhosts: Option<u32>,
    /// New objects replacing old ones a second, e.g. 50/s: each replaces one object at the same
    /// popularity, with a path, size and TTL of its own (default: none).
    #[arg(long, value_name = "RATE", requires = "catalogue")]
    pub(crate) churn: Option<String>,
    /// A crawler beside the catalogue's requests, a share of all of them: SHARE% crawls the
    /// catalogue from its least popular object up, SHARE%:unique asks new URLs; counted as
    /// the class `crawler`, the rest as `human` (default: none).
    #[arg(long, value_name = "SHARE[:KIND]", requires = "catalogue")]
    pub(crate) crawler: Option<String>,
    /// Each object's variants, N of them: N or N:query puts a tracking parameter in the URL
    /// (&utm_source=v0 to vN-1), N:vary sends Accept-Language: vK and has the origin answer
    /// Vary: Accept-Language; each request picks one, uniformly or by :zipf:S (default: none).
    #[arg(long, value_name = "N[:KIND][:LAW]", requires = "catalogue")]
    pub(crate) variants: Option<String>,
    /// A share of requests asking a range of their object, SHARE%[:KIND][:LENGTH]: first
    /// (bytes=0-...), window (at a random offset), suffix (bytes=-N) or mixed, a third each;
    /// LENGTH bytes each, 64k unless given. Counted as the class range, the rest whole
    /// (default: none).
    #[arg(long, value_name = "SHARE[:KIND][:LENGTH]", requires = "catalogue")]
    pub(crate) ranges: Option<String>,
    /// The cache's capacity, bytes (64M) or objects (5000obj): the run file then says what an
    /// LRU of that size should hit (default: only the bounds of any cache).
    #[arg(long, value_name = "SIZE", requires = "catalogue")]
    pub(crate) cache_size: Option<String>,
    /// Purge the catalogue's most popular objects in a burst this often, from the end of the
    /// warm-up on, on a connection of their own (default: no purges).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "catalogue")]
    pub(crate) purge_every: Option<std::time::Duration>,
    /// Objects purged a burst, the most popular first (default: 10).
    #[arg(long, value_name = "N", requires = "purge_every")]
    pub(crate) purge_objects: Option<u64>,
    /// The method of a purge request, e.g. BAN (default: PURGE).
    #[arg(long, value_name = "METHOD", requires = "purge_every")]
    pub(crate) purge_method: Option<String>,
    /// Before the attack, warm the cache with the same load until its hit ratio holds still
    /// (the last 5 s each within a point, no longer rising): hit-ratio; or with one pass over
    /// the --catalogue or the target list, every object once: pass (default: only --warmup).
    #[arg(long, value_name = "RULE", value_parser = ["hit-ratio", "pass"])]
    pub(crate) warmup_until: Option<String>,
    /// The longest --warmup-until may warm, e.g. 2m (default: 5m).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "warmup_until")]
    pub(crate) warmup_max: Option<std::time::Duration>,
    /// A header added to every purge request, e.g. 'X-Purge-Key: secret' (default: none).
    #[arg(long, value_name = "NAME: VALUE", requires = "purge_every")]
    pub(crate) purge_header: Option<String>,
}

impl CacheArgs {
    /// The catalogue, seeded by `seed`, and the capacity to model.
    pub(crate) fn catalogue(
        &self,
        seed: Option<u64>,
    ) -> anyhow::Result<Option<(Catalogue, Option<Capacity>)>> {
        let Some(objects) = self.catalogue else {
            return Ok(None);
        };
        let defaults = Catalogue::default();
        let catalogue = Catalogue {
            objects,
            popularity: match &self.popularity {
                Some(law) => law
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--popularity {e}"))?,
                None => defaults.popularity,
            },
            sizes: match &self.object_size {
                Some(law) => size_law(law)?,
                None => defaults.sizes,
            },
            ttl: self
                .ttl
                .as_deref()
                .map(vload_cache::parse_ttl)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--ttl {e}"))?,
            one_hit_wonders: match &self.one_hit_wonders {
                Some(text) => percent(text).context("--one-hit-wonders")?,
                None => 0.0,
            },
            hosts: self.vhosts.unwrap_or(1),
            seed: seed.unwrap_or(1),
            churn_per_s: self.churn.as_deref().map(churn_rate).transpose()?,
            crawler: self
                .crawler
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--crawler {e}"))?
                .filter(|c: &vload_cache::Crawler| c.share > 0.0),
            variants: self
                .variants
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--variants {e}"))?,
            ranges: self
                .ranges
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--ranges {e}"))?,
        };
        catalogue.check().map_err(anyhow::Error::msg)?;
        let capacity = self
            .cache_size
            .as_deref()
            .map(vload_cache::parse_capacity)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--cache-size {e}"))?;
        Ok(Some((catalogue, capacity)))
    }
}

/// `--churn 50/s` or `--churn 50`: objects a second.
fn churn_rate(text: &str) -> anyhow::Result<f64> {
    let number = text.trim().strip_suffix("/s").unwrap_or(text.trim());
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => bail!("--churn {text}: give new objects a second, e.g. 50/s"),
    }
}

impl CacheArgs {
    /// The purge bursts asked for, checked against the URL's scheme.
    pub(crate) fn purges(&self, https: bool) -> anyhow::Result<Option<crate::purge::PurgeSpec>> {
        let Some(every) = self.purge_every else {
            return Ok(None);
        };
        if https {
            bail!("--purge-every sends plain HTTP/1.1: purge through an http:// URL of the cache");
        }
        if every < std::time::Duration::from_secs(1) || every.subsec_nanos() != 0 {
            bail!(
                "--purge-every {}: give whole seconds, 1s or more (bursts begin on a second's boundary)",
                humantime::format_duration(every)
            );
        }
        let method = self.purge_method.clone().unwrap_or_else(|| "PURGE".into());
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
            bail!("--purge-method '{method}' is not a method: expected letters, e.g. PURGE or BAN");
        }
        let header = match &self.purge_header {
            Some(h) => {
                let valid = h
                    .split_once(':')
                    .filter(|_| !h.chars().any(char::is_control));
                let valid = valid.filter(|(name, value)| {
                    http::HeaderName::from_bytes(name.trim().as_bytes()).is_ok()
                        && http::HeaderValue::from_str(value.trim()).is_ok()
                });
                let Some((name, value)) = valid else {
                    bail!(
                        "--purge-header '{}' is not one header: expected 'Name: value' on one line (no CR, LF or other control character)",
                        h.escape_debug()
                    );
                };
                // Sent as checked: one line, trimmed.
                Some(format!("{}: {}", name.trim(), value.trim()))
            }
            None => None,
        };
        Ok(Some(crate::purge::PurgeSpec {
            every,
            objects: self.purge_objects.unwrap_or(10).max(1),
            method,
            header,
        }))
    }
}

/// A share from `5%` or `0.05`.
fn percent(text: &str) -> anyhow::Result<f64> {
    let share = match text.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.trim().parse::<f64>(),
    };
    match share {
        Ok(s) if (0.0..1.0).contains(&s) => Ok(s),
        _ => bail!("'{text}' is not a share: expected a percentage below 100%, e.g. 5%"),
    }
}

/// `--object-size`'s law: as written, or for `file:PATH` the sizes the file lists, one a line
/// (`#` comments and blank lines skipped), as a table the run file records whole.
fn size_law(text: &str) -> anyhow::Result<vload_cache::SizeLaw> {
    let Some(path) = text.trim().strip_prefix("file:") else {
        return text
            .parse()
            .map_err(|e| anyhow::anyhow!("--object-size {e}"));
    };
    let file = std::path::Path::new(path);
    let listed = crate::output::read_bounded(file, 64 << 20, "--object-size file")?;
    let listed = String::from_utf8_lossy(&listed);
    let mut sizes = Vec::new();
    for (i, line) in listed.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let size = vload_cache::parse_bytes(line)
            .map_err(|e| anyhow::anyhow!("--object-size file:{path}:{}: {e}", i + 1))?;
        sizes.push(size);
    }
    vload_cache::SizeLaw::table(sizes)
        .map_err(|e| anyhow::anyhow!("--object-size file:{path}: {e}"))
}

//! A synthetic cache workload (`--catalogue`) and what the model says a cache should have
//! achieved for it.

use serde::{Deserialize, Serialize};

/// The catalogue requests were drawn from: enough to draw the same requests again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogueRecord {
    /// Objects asked again and again (one-hit wonders on top).
    pub objects: u64,
    /// The popularity law, e.g. `"zipf:0.8"`, `"uniform"`, `"hot:10%:90%"`.
    pub popularity: String,
    /// The object-size law, e.g. `"4k"`, `"1k-64k"`, `"lognormal:16k:1"`, `"file:sizes.txt"`.
    pub object_size: String,
    /// The origin's max-age for each object, seconds, `[min, max]` (absent: none sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_s: Option<[u64; 2]>,
    /// Share of requests for objects asked once, 0 to 1.
    pub one_hit_wonders: f64,
    /// Virtual hosts the objects are spread over (1: the attack's Host).
    pub hosts: u32,
    /// The seed of every object's size and TTL and of every worker's draws.
    pub seed: u64,
    /// Bytes of every object that is asked again.
    pub total_bytes: u64,
    /// New objects replacing old ones a second (`--churn`), counted from the attack's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn_per_s: Option<f64>,
    /// A crawler beside the catalogue's requests (`--crawler`): `30%:tail` (a crawl from the
    /// least popular object up) or `10%:unique` (new URLs), its share of every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawler: Option<String>,
    /// Each object's variants (`--variants`): `16:query:uniform` (a tracking parameter,
    /// `utm_source`, in the URL) or `4:vary:zipf:1` (an `Accept-Language` the origin varies
    /// on), and the law each request picks its variant by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants: Option<String>,
    /// A share of requests asking a range of their object (`--ranges`): `30%:mixed:64k`
    /// (first bytes, a window or the last bytes, a third each), `100%:first:1M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<String>,
}

/// What a cache should have achieved for the catalogue over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheModelRecord {
    /// The capacity modelled (`--cache-size`), e.g. `"64M"` or `"5000 objects"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
    /// Hit ratio of an LRU cache of that capacity once warm (Che's approximation, the
    /// origin's TTLs folded in), 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_hit_ratio: Option<f64>,
    /// That LRU's characteristic time, seconds: how long an object stays after its last
    /// request (absent when the whole catalogue fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_characteristic_time_s: Option<f64>,
    /// With a crawler (`--crawler`): the LRU's hit ratio of the catalogue's own (human)
    /// requests alone, the crawler in the cache beside them; `lru_hit_ratio` is then over
    /// all requests. Both from a sampled simulation (Che's approximation knows no crawler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_human_hit_ratio: Option<f64>,
    /// The most any cache could hit in the window if it was empty when the attack started
    /// (every object's first request misses), 0 to 1: the expectation for a run like this
    /// one.
    pub cold_bound: f64,
    /// The same bound for the objects this run actually drew: one minus the window's
    /// requests that were an object's first of the run, over the window's requests that
    /// drew an object (not those that failed to connect or expired in the queue). Absent
    /// when it is not known (a merge of shards, a `--warmup-until` run, `--churn`, a
    /// catalogue of more than 2^26 objects, files before #58).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realized_cold_bound: Option<f64>,
    /// The most any cache can hit once warm when objects expire at the origin's max-age or
    /// are replaced (`--churn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_bound: Option<f64>,
    /// With variants (`--variants`): the same model for a cache that normalises them away
    /// (one key an object), beside the figures above for one that keys on each variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalised: Option<NormalisedModel>,
    /// Requests a second the model assumed (the window's).
    pub rate_per_s: f64,
    /// Requests sent before the window (warm-up), which the cold bound counts as warming.
    pub requests_before: u64,
    /// Requests in the window.
    pub requests_window: u64,
}

/// What the model says of a cache that keys each object once, its variants normalised
/// away (the parameter stripped, the header folded), for the same load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NormalisedModel {
    /// The LRU's hit ratio once warm (with `--cache-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_hit_ratio: Option<f64>,
    /// The most any cache could hit in the window from empty.
    pub cold_bound: f64,
    /// The most any cache can hit once warm under the max-age or churn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_bound: Option<f64>,
}

/// Purges sent beside the load (`--purge-every`), burst by burst, kept apart from the
/// load's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PurgeRecord {
    /// The method of each purge request, e.g. `"PURGE"` or `"BAN"`.
    pub method: String,
    /// An extra header of each purge request, `Name: value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Seconds between bursts.
    pub every_s: f64,
    /// Objects purged a burst: the most popular of the catalogue.
    pub objects: u64,
    /// The bursts, in time order.
    pub bursts: Vec<PurgeBurst>,
}

/// One burst of purges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PurgeBurst {
    /// When it began, seconds from the attack's start (warm-up included).
    pub at_s: f64,
    /// How long it took, seconds.
    pub took_s: f64,
    /// Purge requests sent.
    pub sent: u64,
    /// Their responses by status code.
    pub status_codes: std::collections::BTreeMap<u16, u64>,
    /// Purge requests that got no response (connect failed, reset, timeout).
    pub errors: u64,
    /// Purge requests never sent: the burst's time (its period, at most 5 s) ran out, or the
    /// run ended, first. `sent + unsent` is the burst's objects.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub unsent: u64,
}

/// A warm-up run until the cache was warm (`--warmup-until hit-ratio`), before the attack
/// this file measures: a run of its own, whose seconds are not in this file's intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmRecord {
    /// What ended it: `"hit-ratio"` (its last 5 seconds held still).
    pub until: String,
    /// True when the rule was met; false when `max_s` ran out first.
    pub reached: bool,
    /// How long it ran, seconds.
    pub seconds: f64,
    /// The longest it could run (`--warmup-max`), seconds.
    pub max_s: f64,
    /// Requests it sent.
    pub requests: u64,
    /// The hit ratio over its last 5 seconds, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio: Option<f64>,
    /// A pass: the objects it asked for and got no response for (connect refused, reset,
    /// timed out, never sent); a pass with any is not `reached`, since those objects were
    /// never fetched into the cache.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub failed: u64,
}

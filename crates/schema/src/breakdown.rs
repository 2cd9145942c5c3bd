//! Breakdowns: the measured window's requests grouped one way (by virtual host, URL class,
//! target set, pass, status class or cache state), each group with its counts and its
//! latency histogram. Every breakdown is a partition: its groups' counts add up to the run's
//! totals, and [`crate::RunFile::validate`] refuses a file where they do not.

use serde::{Deserialize, Serialize};

use crate::{LatencyRecord, StatusClasses};

/// The most groups a breakdown keeps by name; the rest are folded into one group named
/// [`OTHER`]. Each group holds a histogram (about 216 KiB in memory while recorded, a few
/// hundred bytes in the file), so the bound keeps a run of a million hosts as small as one
/// of a few.
pub const GROUP_LIMIT: usize = 32;

/// The group of the names beyond [`GROUP_LIMIT`].
pub const OTHER: &str = "(other)";

/// The group of requests that failed before a target was drawn for them (their connection
/// could not be made), in the breakdowns by target (host, class, set, pass).
pub const NO_TARGET: &str = "(no target)";

/// The group of requests that ended without a response, in the breakdowns by status class
/// and cache state.
pub const FAILED: &str = "(failed)";

/// One way of grouping the window's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// What the groups are: `host` (the Host a request was addressed to), `class`
    /// (`--class NAME=REGEX`, the first that matched the path; `(unclassified)` otherwise),
    /// `set` (the target file of a `--mix`), `pass` (over a target list, `--passes`),
    /// `status` (`1xx`..`5xx`, where a code outside 100..=499 counts as `5xx` as in
    /// `status_classes`; `(failed)`), `cache`
    /// (`hit`, `stale`, `miss`, `pass`, `unknown`, `(failed)`) or `size` (the response
    /// body's bytes: `< 1 KiB`, `1-10 KiB`, `10-100 KiB`, `100 KiB-1 MiB`, `>= 1 MiB`,
    /// `(failed)`).
    pub by: String,
    /// Distinct names folded into [`OTHER`] because the breakdown had [`GROUP_LIMIT`] already.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub folded: u64,
    /// The groups with at least one request, in the order of their names' definition.
    pub groups: Vec<Group>,
}

/// One group's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Its name: a host, a class, a file, a pass number, a status class or a cache state.
    pub name: String,
    /// Requests that ended (a response or a failure).
    pub requests: u64,
    /// Of those, failures (no response).
    pub errors: u64,
    /// Responses by status class.
    pub status_classes: StatusClasses,
    /// Responses by what they said of the cache.
    pub cache: GroupCache,
    /// Body bytes received.
    pub bytes_in: u64,
    /// The run's primary latency (response time in an open loop, service time in a closed
    /// one) of the group's requests.
    pub latency: LatencyRecord,
    /// Its responses' wait for the first byte and their transfer (see
    /// `latency.first_byte`), in the breakdowns by cache state, status, size and class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<LatencyRecord>,
    /// Its responses' transfer, from the first byte to the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<LatencyRecord>,
}

/// A group's responses by cache state. `hit` + `stale` are the run's cache hits, `miss` +
/// `pass` its misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupCache {
    /// Served from the cache.
    pub hit: u64,
    /// Served from the cache past its freshness.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub stale: u64,
    /// Fetched from the origin.
    pub miss: u64,
    /// Passed to the origin without a lookup.
    #[serde(default, skip_serializing_if = "crate::skip::is_zero")]
    pub pass: u64,
    /// No evidence either way.
    pub unknown: u64,
}

impl GroupCache {
    /// Hits over classified responses; `None` when none was classified.
    pub fn hit_ratio(&self) -> Option<f64> {
        let hits = self.hit + self.stale;
        let classified = hits + self.miss + self.pass;
        (classified > 0).then(|| hits as f64 / classified as f64)
    }

    /// Adds `other`'s counts (saturating: a hostile file's counts must not wrap).
    pub fn add(&mut self, other: &GroupCache) {
        self.hit = self.hit.saturating_add(other.hit);
        self.stale = self.stale.saturating_add(other.stale);
        self.miss = self.miss.saturating_add(other.miss);
        self.pass = self.pass.saturating_add(other.pass);
        self.unknown = self.unknown.saturating_add(other.unknown);
    }
}

//! What target files are and hold: formats, sets, picks, targets, errors, summaries.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, Method};

/// The format of a target file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetFormat {
    /// One URL, or a path resolved against the base URL, per line.
    Urls,
    /// vegeta's http format: `METHOD URL`, header lines, `@body-file`, a blank line between targets.
    Vegeta,
    /// One JSON object per line: `{"method", "url", "header": {"Name": ["value"]}, "body": base64}`.
    JsonLines,
    /// NCSA combined or varnishncsa log lines; only GET and HEAD requests are replayed.
    Log,
}

impl TargetFormat {
    /// Name in run files.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetFormat::Urls => "urls",
            TargetFormat::Vegeta => "targets",
            TargetFormat::JsonLines => "json",
            TargetFormat::Log => "log",
        }
    }
}

/// One file of targets with its weight in a mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSet {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: TargetFormat,
    /// Relative weight among the sets (1 when alone).
    pub weight: u32,
}

/// How the next target is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// In file order, looping; with several sets, a set is drawn at random by weight.
    Sequential,
    /// Uniformly at random (seeded), with replacement; loads the lists into memory.
    Random {
        /// The seed.
        seed: u64,
    },
    /// In file order; with several sets, the sets interleave deterministically by weight.
    RoundRobin,
}

/// The target files of an attack and how to walk them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlan {
    /// The sets (one, or several for a mix).
    pub sets: Vec<TargetSet>,
    /// How to choose.
    pub pick: Pick,
    /// Walk the list this many times, then stop (sequential picks, one set).
    pub passes: Option<u64>,
    /// Count malformed lines instead of refusing the file.
    pub skip_bad_lines: bool,
}

/// One request target from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Method; `None` for URL lists (the attack's method applies).
    pub method: Option<Method>,
    /// Host of an absolute URL, or `None` for a path (the base URL's host applies).
    pub authority: Option<Authority>,
    /// The scheme of an absolute URL: true for `https`. `None` for a path.
    pub https: Option<bool>,
    /// Path and query.
    pub path: PathAndQuery,
    /// Headers of this target (added to the attack's).
    pub headers: HeaderMap,
    /// Body; empty for none (the attack's body applies).
    pub body: Bytes,
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TargetError {
    /// The file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong and what would work.
    pub message: String,
}

/// What validation found in one set.
#[derive(Debug, Clone, PartialEq)]
pub struct SetSummary {
    /// Targets read.
    pub targets: u64,
    /// Malformed lines skipped (with `skip_bad_lines`).
    pub skipped: u64,
    /// Log lines not replayed because of their method.
    pub other_methods: u64,
}

/// The most distinct hosts validation counts targets of.
pub(super) const VHOSTS_TRACKED: usize = 10_000;

/// What validation found, for the plan record and the workload hash.
#[derive(Debug, Clone)]
pub struct TargetSummary {
    /// Per set, in order.
    pub sets: Vec<SetSummary>,
    /// SHA-256 over every target, in order.
    pub hash: [u8; 32],
    /// Hosts named by absolute URLs (at most 16 kept).
    pub hosts: Vec<String>,
    /// The hosts the targets are addressed to (a target's Host header, else its URL's
    /// authority, else `""` for the attack's), busiest first, ties in file order; at most
    /// 10,000 distinct.
    pub vhosts: Vec<(String, u64)>,
    /// Targets addressed to a host beyond the ones tracked.
    pub vhosts_untracked: u64,
    /// Targets that are paths, resolved against the attack's URL.
    pub paths: u64,
    /// The first absolute URL's `scheme://authority`, where an attack without a URL sends
    /// its load.
    pub first_origin: Option<String>,
    /// Absolute URLs by scheme: (`http`, `https`).
    pub schemes: (u64, u64),
    /// Every set's targets, held in memory: for `--pick random`, and for lists of up to
    /// [`super::HELD_TARGETS`] targets in all.
    pub(crate) loaded: Option<Arc<Vec<Vec<Target>>>>,
    /// The lists are held in memory (`loaded`, until the attack takes them).
    pub(crate) held: bool,
}

//! The vload run file, schema v1.
//!
//! Every `vload attack` writes one JSON document per run; `vload report`, `compare` and
//! `plot` read it. This crate holds the types of that document ([`RunFile`] and what it
//! contains), the histogram codec ([`EncodedHistogram`]: HdrHistogram V2 + DEFLATE in
//! base64, readable by any HdrHistogram implementation) and exact streaming moments
//! ([`Moments`]: Welford's update, Chan's merge). It has no I/O and no async.
//!
//! # The format, field by field
//!
//! Every field name carries its unit (`_s` seconds, `_ns` nanoseconds, `bytes_`).
//! Adding a field keeps [`SCHEMA_VERSION`]; renaming or removing one bumps it.
//! A file's size depends on the run's duration (one [`Interval`] per second), never on
//! its request count.
//!
//! - `schema_version`, `vload_version`, `run_id`, `label`, `started_at`, `interrupted`:
//!   identity of the run ([`RunFile`]).
//! - `environment`: `arch`, `os`, `cpu_model`, `cpus_available`, `kernel`, `hostname`
//!   ([`Environment`]).
//! - `plan`: `mode` (`closed` | `open`), `target`, `method`, `headers`, `body_bytes`,
//!   `connections`, `rate_per_s`, `arrival` (`constant` | `poisson`), `seed`, `duration_s`,
//!   `requests`, `warmup_s`, `timeout_s`, `connect_timeout_s`, `http_version`, `threads`,
//!   `histogram` (`unit`, `lowest_ns`, `highest_ns`, `sigfig`), and when used `targets`
//!   (`pick`, `seed`, `passes`, `sets`: `file`, `format`, `weight`, `targets`, `lines_skipped`,
//!   `other_methods`), `connect_to`, `requests_per_connection` ([`Plan`], [`TargetsRecord`]).
//! - `workload_hash`: SHA-256 of what was requested.
//! - `window`: `warmup_s`, `measured_s`, `wait_s` ([`Window`]).
//! - `totals`: `intended`, `sent`, `completed`, `status_codes`, `errors` (by [`ErrorKind`],
//!   each `count` and `sample`), `bytes_in`, `bytes_out`, `connections_opened`,
//!   `late_sends`, `backlog`, `out_of_range` ([`Totals`]).
//! - `latency`: `primary` (`response` | `service`) and the records `response`, `service`,
//!   `dispatch_lag`, `hiccup`, and when responses were classified `hit` and `miss`, each a
//!   `histogram` and exact `moments` (`n`, `mean_ns`,
//!   `m2_ns2`, `min_ns`, `max_ns`, `sum_ns`) ([`Latency`], [`LatencyRecord`], [`Moments`]).
//! - `cache`: `hit`, `miss`, `unknown`, `by_source` (`x_varnish`, `x_cache`, `age`)
//!   ([`CacheCounts`]).
//! - `client_health`: `cpu_s`, `cpu_util`, `max_thread_busy`, `dispatch_lag_p99_ns`,
//!   `late_sends`, `hiccup_p99_ns`, `fd_limit`, `fd_needed`, `verdict`
//!   (`ok` | `warn` | `client_bound`), `reasons` ([`ClientHealth`]).
//! - `intervals`: per second `start_s`, `duration_s`, `warmup`, `intended`, `sent`,
//!   `completed`, `errors`, `status_classes` (`1xx`..`5xx`), `bytes_in`, `bytes_out`,
//!   `connections_opened`, `in_flight`, `hits`, `misses`, `latency` ([`Interval`]).
//!
//! # Example
//!
//! A complete document (the crate's golden test file) and how to read it:
//!
//! ```
//! use vload_schema::{LatencyKind, Mode, RunFile};
//!
//! let text = include_str!("../tests/data/golden-run.json");
//! let run = RunFile::from_json(text)?;
//! assert_eq!(run.plan.mode, Mode::Open);
//! assert_eq!(run.latency.primary, LatencyKind::Response);
//! let histogram = run.latency.primary().histogram.decode()?;
//! assert_eq!(histogram.len(), run.latency.primary().moments.n);
//! assert_eq!(run.to_json(), text); // byte for byte
//! # Ok::<(), vload_schema::SchemaError>(())
//! ```
//!
//! ```json
#![doc = include_str!("../tests/data/golden-run.json")]
//! ```
//!
//! # Errors
//!
//! Reading returns [`SchemaError`]; nothing here panics on bad input.
//!
//! # Limits
//!
//! Histograms cover 1 ns to 60 s at 3 significant digits (about 216 KiB in memory each,
//! a few hundred bytes compressed); slower values are clamped and counted in
//! `totals.out_of_range`.

mod codec;
mod moments;
mod run;

pub use codec::EncodedHistogram;
pub use moments::Moments;
pub use run::*;

/// The run-file format version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Why a run file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Malformed, truncated or mistyped JSON.
    #[error("not valid run-file JSON: {0}")]
    Json(serde_json::Error),
    /// JSON without a numeric `schema_version`.
    #[error("not a vload run file (no schema_version field)")]
    NotARun,
    /// Written by a newer vload.
    #[error("schema version {found} is newer than this vload reads ({supported}): upgrade vload")]
    NewerVersion {
        /// The version in the file.
        found: u64,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A histogram that does not decode.
    #[error("{0}")]
    Histogram(String),
}

/// Creates an empty histogram with the run file's standard layout.
pub fn new_histogram(settings: &HistogramSettings) -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(
        settings.lowest_ns,
        settings.highest_ns,
        settings.sigfig,
    )
    .expect("HistogramSettings hold valid bounds")
}

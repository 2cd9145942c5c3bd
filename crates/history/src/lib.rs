//! vload's run history: every run file kept in one SQLite database, runs grouped into series
//! of comparable runs (same workload and load, label, testbed and server configuration), and
//! for each tracked metric the commits where it changed.
//!
//! - [`Store`]: add run files (idempotent by run id; concurrent adders are safe), list series
//!   and their runs.
//! - [`key`]: a series' key, the metrics kept of each run, and the validity gate: runs that
//!   were interrupted, CLIENT-BOUND or MACHINE-BUSY, without a success, unbalanced (the
//!   ledger), or that failed their arrivals or stationarity checks are kept but never enter
//!   a series' statistics.
//! - [`detect`]: E-divisive means with a t-test (Hunter / Apache Otava) over per-commit
//!   medians.
//! - [`judge`]: each change point confirmed, or shown weak, by `compare`'s test on the runs
//!   either side; the newest commit against the segment before it.
//! - [`export`]: Bencher Metric Format and github-action-benchmark's custom JSON.

pub mod detect;
pub mod export;
pub mod judge;
pub mod key;
pub mod plot;
pub mod render;
mod series;
mod store;

pub use judge::{Change, CommitPoint, MetricHistory, Strength};
pub use key::SeriesKey;
pub use series::{Gate, Selection, SeriesHistory, gate, histories};
pub use store::{Added, DEFAULT_DB, SeriesInfo, Store, StoreError, StoredRun};

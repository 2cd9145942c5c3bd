//! The run-file format's version, and why a file could not be read.

/// The run-file format version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 5;

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
    /// A field that contradicts the rest of the file.
    #[error("{field}: {why}")]
    Invalid {
        /// The field, as a path: `totals.errors`, `intervals[3].latency.histogram`.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// An object names the same key twice.
    #[error("{0}")]
    Duplicate(String),
}

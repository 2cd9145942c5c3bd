//! Why runs cannot be merged.

use vload_schema::SchemaError;

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Two runs planned different attacks.
    #[error(
        "plans differ: {field} is {a} in '{file_a}' but {b} in '{file_b}' (--force merges anyway)"
    )]
    PlansDiffer {
        /// The plan field.
        field: &'static str,
        /// Its value in the first file.
        a: String,
        /// Its value in the other file.
        b: String,
        /// The first file.
        file_a: String,
        /// The other file.
        file_b: String,
    },
    /// A histogram did not decode or add.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Histograms of different layouts.
    #[error("histograms of '{0}' have another layout and cannot be added")]
    Layout(String),
    /// The shards do not make one whole attack.
    #[error("{0} (--force merges what is there)")]
    Shards(String),
    /// One run given twice.
    #[error(
        "'{file_a}' and '{file_b}' are the same run ({run_id}): merging it with itself would count every request twice"
    )]
    SameRun {
        /// The run id both carry.
        run_id: String,
        /// The first file.
        file_a: String,
        /// The other file.
        file_b: String,
    },
}

//! A report row: a name, the fields it holds, their values, in columns.

use std::fmt::Write as _;

/// Writes a row.
pub(super) fn row(out: &mut String, name: &str, fields: &str, values: &str) {
    let _ = writeln!(out, "{name:<13} {fields:<35} {values}");
}

/// A value, or `n/a` without one.
pub(super) fn or_na(value: Option<String>) -> String {
    value.unwrap_or_else(|| "n/a".to_owned())
}

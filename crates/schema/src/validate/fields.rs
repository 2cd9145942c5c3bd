//! The checks every field of a run file gets: a count within what a run can hold, a duration
//! within what a run can last, a finite number; and the error naming the field.

use crate::error::SchemaError;

/// The largest count a run file may hold (requests, bytes, hits): 2^56, beyond a year at
/// any rate one machine sends, and low enough that merging 256 runs cannot overflow.
pub(super) const MAX_COUNT: u64 = 1 << 56;
/// The largest count one interval (one second) may hold.
pub(super) const MAX_INTERVAL_COUNT: u64 = 1 << 40;

/// The longest span a run file may describe, in seconds (about 31 years).
const MAX_SECONDS: f64 = 1e9;

/// A duration in seconds: finite, not negative, not beyond [`MAX_SECONDS`].
pub(super) fn seconds(field: &str, value: f64) -> Result<(), SchemaError> {
    finite(field, value)?;
    if value > MAX_SECONDS {
        return Err(invalid(field, format!("{value} s is longer than any run")));
    }
    Ok(())
}

pub(super) fn bounded(field: &str, value: u64, max: u64) -> Result<(), SchemaError> {
    if value <= max {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{value} is beyond any count a run holds"),
        ))
    }
}

pub(super) fn invalid(field: impl Into<String>, why: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        field: field.into(),
        why: why.into(),
    }
}

pub(super) fn finite(field: &str, value: f64) -> Result<(), SchemaError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{value} is not a finite, non-negative number"),
        ))
    }
}

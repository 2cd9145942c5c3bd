//! `skip_serializing_if` helpers the record types share: a leaf module, so that the types'
//! files name it and not the crate's root (which names them).

/// A count of zero is left out of the file.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

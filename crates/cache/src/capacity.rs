//! How much a cache holds.

use crate::parse::{self, parse_bytes};

/// How much a cache holds: bytes of bodies, or a number of objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    /// Bytes of object bodies.
    Bytes(u64),
    /// Objects, whatever their size.
    Objects(u64),
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capacity::Bytes(b) => write!(f, "{}", parse::bytes_text(*b)),
            Capacity::Objects(n) => write!(f, "{n} objects"),
        }
    }
}

/// A cache's capacity: bytes (`64MiB`, `512M`) or objects (`5000obj`, `5000 objects`).
///
/// # Errors
/// Neither form, or zero.
pub fn parse_capacity(text: &str) -> Result<Capacity, String> {
    let t = text.trim();
    let objects = ["objects", "object", "obj"]
        .iter()
        .find_map(|suffix| t.strip_suffix(suffix));
    let capacity = match objects {
        Some(n) => Capacity::Objects(n.trim().parse().map_err(|_| {
            format!("'{text}' is not a capacity: expected bytes like 64MiB or objects like 5000obj")
        })?),
        None => Capacity::Bytes(parse_bytes(t).map_err(|_| {
            format!("'{text}' is not a capacity: expected bytes like 64MiB or objects like 5000obj")
        })?),
    };
    match capacity {
        Capacity::Bytes(0) | Capacity::Objects(0) => Err(format!(
            "'{text}': a cache that holds nothing hits nothing; give a capacity above zero"
        )),
        c => Ok(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_bytes_or_objects() {
        assert_eq!(parse_capacity("64M"), Ok(Capacity::Bytes(64 << 20)));
        assert_eq!(parse_capacity("5000obj"), Ok(Capacity::Objects(5000)));
        assert_eq!(parse_capacity("5000 objects"), Ok(Capacity::Objects(5000)));
        assert!(parse_capacity("0").unwrap_err().contains("above zero"));
        assert!(parse_capacity("lots").unwrap_err().contains("5000obj"));
    }
}

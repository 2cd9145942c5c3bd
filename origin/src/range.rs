//! `Range: bytes=...` on a sized body (RFC 9110, section 14): one range is answered 206
//! with its `Content-Range`; one past the end, 416; several, or one that does not parse,
//! are ignored (the whole body, 200), as the RFC allows.

/// What a `Range` header makes of a body of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ranged {
    /// Bytes `first..=last`: 206.
    Part { first: u64, last: u64 },
    /// Nothing of the body is in the range: 416.
    Unsatisfiable,
    /// The whole body: 200.
    Whole,
}

/// The part of a body of `size` bytes that `range` (the header's value) asks.
pub(crate) fn ranged(range: &str, size: u64) -> Ranged {
    let Some(spec) = range.trim().strip_prefix("bytes=") else {
        return Ranged::Whole;
    };
    if spec.contains(',') {
        return Ranged::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ranged::Whole;
    };
    let number = |s: &str| s.trim().parse::<u64>().ok();
    match (first.trim(), last.trim()) {
        ("", suffix) => match number(suffix) {
            Some(0) => Ranged::Unsatisfiable,
            Some(n) if size > 0 => Ranged::Part {
                first: size.saturating_sub(n),
                last: size - 1,
            },
            Some(_) => Ranged::Unsatisfiable,
            None => Ranged::Whole,
        },
        (first, last) => match (number(first), last) {
            (Some(a), _) if a >= size => Ranged::Unsatisfiable,
            (Some(a), "") => Ranged::Part {
                first: a,
                last: size - 1,
            },
            (Some(a), last) => match number(last) {
                Some(b) if b >= a => Ranged::Part {
                    first: a,
                    last: b.min(size - 1),
                },
                _ => Ranged::Whole,
            },
            (None, _) => Ranged::Whole,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        let part = |first, last| Ranged::Part { first, last };
        assert_eq!(ranged("bytes=0-99", 1000), part(0, 99));
        assert_eq!(ranged("bytes=900-", 1000), part(900, 999));
        assert_eq!(ranged("bytes=-100", 1000), part(900, 999));
        assert_eq!(ranged("bytes=-5000", 1000), part(0, 999));
        assert_eq!(ranged("bytes=990-2000", 1000), part(990, 999));
        assert_eq!(ranged("bytes=1000-", 1000), Ranged::Unsatisfiable);
        assert_eq!(ranged("bytes=-0", 1000), Ranged::Unsatisfiable);
        assert_eq!(ranged("bytes=0-1,5-6", 1000), Ranged::Whole);
        assert_eq!(ranged("items=0-1", 1000), Ranged::Whole);
        assert_eq!(ranged("bytes=9-3", 1000), Ranged::Whole);
        assert_eq!(ranged("bytes=x-3", 1000), Ranged::Whole);
    }
}

//! Range requests (#60): a share of a catalogue's requests ask part of their object, the
//! first bytes (`bytes=0-65535`), a window at a random offset (`bytes=A-B`) or the last bytes
//! (`bytes=-65536`), as video players, download managers and PDF viewers do. A cache
//! that fetches the whole object on a miss answers each from its copy (Varnish: 206 from the
//! stored object, the origin asked for all of it).

use crate::parse::{bytes_text, parse_bytes};

/// Which part of its object a range request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeKind {
    /// The first bytes: `bytes=0-(L-1)`.
    First,
    /// A window at an offset drawn uniformly: `bytes=A-(A+L-1)`.
    Window,
    /// The last bytes: `bytes=-L`.
    Suffix,
    /// Each of the three, a third of the range requests each.
    Mixed,
}

/// A share of requests that ask a range of their object, of one kind and length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranges {
    /// The share of requests with a `Range`, in (0, 1].
    pub share: f64,
    /// Which part.
    pub kind: RangeKind,
    /// Bytes asked (an object smaller than this is asked whole, as a range).
    pub length: u64,
}

/// One request's range of an object of known size: bytes `first..=last`, written as a
/// suffix (`bytes=-N`) when `suffix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte asked.
    pub first: u64,
    /// The last byte asked.
    pub last: u64,
    /// Asked as the last `last - first + 1` bytes.
    pub suffix: bool,
}

impl ByteRange {
    /// The bytes the range asks (what a 206 carries).
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    /// Never: a range asks at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the header line's value, `bytes=0-65535` or `bytes=-65536`, through `put`.
    pub fn write_value(&self, mut put: impl FnMut(&[u8])) {
        let mut number = itoa::Buffer::new();
        put(b"bytes=");
        if self.suffix {
            put(b"-");
            put(number.format(self.len()).as_bytes());
        } else {
            put(number.format(self.first).as_bytes());
            put(b"-");
            put(number.format(self.last).as_bytes());
        }
    }
}

impl Ranges {
    /// The range of an object of `size` bytes, from two uniform numbers; `None` for an
    /// empty object.
    pub fn draw(&self, size: u64, pick: f64, offset: f64) -> Option<ByteRange> {
        if size == 0 {
            return None;
        }
        let len = self.length.clamp(1, size);
        let kind = match self.kind {
            RangeKind::Mixed => [RangeKind::First, RangeKind::Window, RangeKind::Suffix]
                [((pick * 3.0) as usize).min(2)],
            kind => kind,
        };
        let first = match kind {
            RangeKind::First => 0,
            RangeKind::Suffix => size - len,
            _ => ((offset * (size - len + 1) as f64) as u64).min(size - len),
        };
        Some(ByteRange {
            first,
            last: first + len - 1,
            suffix: kind == RangeKind::Suffix,
        })
    }
}

impl std::str::FromStr for Ranges {
    type Err = String;

    /// `30%` (mixed, 64 KiB), `30%:window`, `100%:first:1M`, `10%:suffix:4k`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{text}' is not a range setting: expected SHARE%[:first|:window|:suffix|:mixed][:LENGTH], e.g. 30%, 100%:first:1M or 10%:suffix:4k"
            )
        };
        let mut parts = text.trim().split(':');
        let share: f64 = parts
            .next()
            .and_then(|s| s.strip_suffix('%'))
            .and_then(|s| s.trim().parse().ok())
            .filter(|s: &f64| *s > 0.0 && *s <= 100.0)
            .ok_or_else(bad)?;
        let mut kind = RangeKind::Mixed;
        let mut length = 64 * 1024;
        for part in parts {
            match part {
                "first" => kind = RangeKind::First,
                "window" => kind = RangeKind::Window,
                "suffix" => kind = RangeKind::Suffix,
                "mixed" => kind = RangeKind::Mixed,
                bytes => length = parse_bytes(bytes).ok().filter(|&n| n > 0).ok_or_else(bad)?,
            }
        }
        Ok(Ranges {
            share: share / 100.0,
            kind,
            length,
        })
    }
}

impl std::fmt::Display for Ranges {
    /// `30%:mixed:64k`: as the flag takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            RangeKind::First => "first",
            RangeKind::Window => "window",
            RangeKind::Suffix => "suffix",
            RangeKind::Mixed => "mixed",
        };
        write!(
            f,
            "{}%:{kind}:{}",
            100.0 * self.share,
            bytes_text(self.length)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_print_and_draw_inside_their_object() {
        let r: Ranges = "30%".parse().unwrap();
        assert_eq!(
            r,
            Ranges {
                share: 0.3,
                kind: RangeKind::Mixed,
                length: 65536
            }
        );
        for text in [
            "100%:first:1M",
            "10%:suffix:4k",
            "50%:window",
            "30%:mixed:100",
        ] {
            let r: Ranges = text.parse().unwrap();
            assert_eq!(r.to_string().parse::<Ranges>().unwrap(), r, "{text}");
        }
        for bad in ["30", "0%", "101%", "30%:middle", "30%:first:0", "x%"] {
            let err = bad.parse::<Ranges>().unwrap_err();
            assert!(err.contains("SHARE%[:first"), "{bad}: {err}");
        }
        let text = |r: ByteRange| {
            let mut v = Vec::new();
            r.write_value(|p| v.extend_from_slice(p));
            String::from_utf8(v).unwrap()
        };
        let first: Ranges = "100%:first:1k".parse().unwrap();
        assert_eq!(text(first.draw(4096, 0.5, 0.5).unwrap()), "bytes=0-1023");
        let suffix: Ranges = "100%:suffix:1k".parse().unwrap();
        let s = suffix.draw(4096, 0.5, 0.5).unwrap();
        assert_eq!(
            (text(s), s.first, s.len()),
            ("bytes=-1024".into(), 3072, 1024)
        );
        let window: Ranges = "100%:window:1k".parse().unwrap();
        for u in [0.0, 0.3, 0.999_999] {
            let w = window.draw(4096, 0.5, u).unwrap();
            assert!(w.last < 4096 && w.len() == 1024, "{w:?}");
        }
        // An object smaller than the length is asked whole; an empty one not at all.
        assert_eq!(first.draw(100, 0.5, 0.5).unwrap().len(), 100);
        assert_eq!(first.draw(0, 0.5, 0.5), None);
        let mixed: Ranges = "100%".parse().unwrap();
        let kinds: Vec<bool> = [0.1, 0.5, 0.9]
            .iter()
            .map(|&p| mixed.draw(1 << 20, p, 0.5).unwrap().suffix)
            .collect();
        assert_eq!(kinds, [false, false, true]);
    }
}

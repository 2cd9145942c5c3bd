//! How large each object is: a law over sizes, applied to each object by its id.

use std::str::FromStr;
use std::sync::Arc;

use crate::parse::{bytes_text, parse_bytes};

/// The largest object the laws give: 1 GiB.
const LARGEST: u64 = 1 << 30;

/// Object sizes: each object's size is drawn once from the law, by a hash of the
/// catalogue's seed and its id, so it never changes within or between runs.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeLaw {
    /// Every object this many bytes.
    Fixed(u64),
    /// Uniform in `min..=max` bytes.
    Range(u64, u64),
    /// Lognormal with this median and shape (the standard deviation of the size's log), as
    /// web object sizes are; at most 1 GiB.
    LogNormal {
        /// The median size in bytes.
        median: u64,
        /// σ of ln(size).
        sigma: f64,
    },
    /// Drawn uniformly from the sizes listed in a file, one a line.
    File {
        /// The file, as named.
        path: String,
        /// Its sizes.
        sizes: Arc<Vec<u64>>,
    },
}

impl Default for SizeLaw {
    fn default() -> Self {
        SizeLaw::Fixed(4096)
    }
}

impl FromStr for SizeLaw {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let bad = |why: String| {
            format!(
                "'{text}' is not an object-size law ({why}): expected BYTES (4k), MIN-MAX (1k-64k), lognormal:MEDIAN:SIGMA (lognormal:16k:1.0) or file:PATH"
            )
        };
        if let Some(path) = t.strip_prefix("file:") {
            let text = std::fs::read_to_string(path).map_err(|e| bad(format!("{path}: {e}")))?;
            let mut sizes = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                sizes.push(parse_bytes(line).map_err(|e| bad(format!("{path}:{}: {e}", i + 1)))?);
            }
            if sizes.is_empty() {
                return Err(bad(format!("{path} lists no sizes")));
            }
            return Ok(SizeLaw::File {
                path: path.to_owned(),
                sizes: Arc::new(sizes),
            });
        }
        if let Some(rest) = t.strip_prefix("lognormal:") {
            let (median, sigma) = rest.split_once(':').ok_or_else(|| bad("no SIGMA".into()))?;
            let median = parse_bytes(median).map_err(bad)?;
            let sigma: f64 = sigma.parse().map_err(|_| bad(format!("SIGMA '{sigma}'")))?;
            if median == 0 || !(0.0..=5.0).contains(&sigma) {
                return Err(bad("a median above 0 and SIGMA in 0-5".into()));
            }
            return Ok(SizeLaw::LogNormal { median, sigma });
        }
        if let Some((lo, hi)) = t.split_once('-') {
            let (lo, hi) = (
                parse_bytes(lo).map_err(&bad)?,
                parse_bytes(hi).map_err(&bad)?,
            );
            if lo > hi {
                return Err(bad("MIN above MAX".into()));
            }
            return Ok(SizeLaw::Range(lo, hi));
        }
        parse_bytes(t).map(SizeLaw::Fixed).map_err(bad)
    }
}

impl std::fmt::Display for SizeLaw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizeLaw::Fixed(b) => write!(f, "{}", bytes_text(*b)),
            SizeLaw::Range(lo, hi) => write!(f, "{}-{}", bytes_text(*lo), bytes_text(*hi)),
            SizeLaw::LogNormal { median, sigma } => {
                write!(f, "lognormal:{}:{sigma}", bytes_text(*median))
            }
            SizeLaw::File { path, .. } => write!(f, "file:{path}"),
        }
    }
}

impl SizeLaw {
    /// The size of the object whose hash is `h` (two independent 64-bit hashes of its id).
    pub(crate) fn size(&self, h: u64, h2: u64) -> u64 {
        match self {
            SizeLaw::Fixed(b) => *b,
            SizeLaw::Range(lo, hi) => lo + h % (hi - lo + 1),
            SizeLaw::LogNormal { median, sigma } => {
                // Box-Muller from two uniforms in (0, 1).
                let u1 = crate::unit(h).max(f64::MIN_POSITIVE);
                let u2 = crate::unit(h2);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let size = (*median as f64).ln() + sigma * z;
                (size.exp().round() as u64).clamp(1, LARGEST)
            }
            SizeLaw::File { sizes, .. } => sizes[(h % sizes.len() as u64) as usize],
        }
    }

    /// The mean size under the law (what a one-hit wonder occupies on average).
    pub(crate) fn mean(&self) -> f64 {
        match self {
            SizeLaw::Fixed(b) => *b as f64,
            SizeLaw::Range(lo, hi) => (*lo as f64 + *hi as f64) / 2.0,
            SizeLaw::LogNormal { median, sigma } => {
                (*median as f64 * (sigma * sigma / 2.0).exp()).min(LARGEST as f64)
            }
            SizeLaw::File { sizes, .. } => {
                sizes.iter().map(|&s| s as f64).sum::<f64>() / sizes.len() as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laws_parse_and_print_back() {
        for text in ["4k", "1500", "1k-64k", "lognormal:16k:1"] {
            let law: SizeLaw = text.parse().unwrap();
            assert_eq!(law.to_string(), text);
        }
        for bad in [
            "4 apples",
            "64k-1k",
            "lognormal:16k",
            "lognormal:0:1",
            "file:/nonexistent/x",
        ] {
            let err = bad.parse::<SizeLaw>().unwrap_err();
            assert!(err.contains(bad) && err.contains("expected BYTES"), "{err}");
        }
    }

    #[test]
    fn lognormal_sizes_have_their_median_and_mean() {
        let law: SizeLaw = "lognormal:16k:1.0".parse().unwrap();
        let mut sizes: Vec<u64> = (0..100_000u64)
            .map(|i| law.size(crate::mix(i), crate::mix(i ^ 0xabcd)))
            .collect();
        sizes.sort_unstable();
        let median = sizes[sizes.len() / 2] as f64;
        assert!((median / 16384.0 - 1.0).abs() < 0.02, "median {median}");
        let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
        assert!(
            (mean / law.mean() - 1.0).abs() < 0.02,
            "mean {mean} against {}",
            law.mean()
        );
    }

    #[test]
    fn ranges_cover_both_ends() {
        let law = SizeLaw::Range(10, 12);
        let seen: std::collections::BTreeSet<u64> =
            (0..1000).map(|i| law.size(crate::mix(i), 0)).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![10, 11, 12]);
    }
}

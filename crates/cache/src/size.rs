//! How large each object is: a law over sizes, applied to each object by its id. A law is
//! what its text says, whole: a table of sizes is written out (`list:4k,16kx3`), so that a
//! run file's law is read back without opening anything (`--object-size file:PATH` is read
//! by the cli, which gives the table).

use std::str::FromStr;
use std::sync::Arc;

use crate::hash::unit;
use crate::parse::{bytes_text, parse_bytes};

/// The largest object the laws give: 1 GiB.
const LARGEST: u64 = 1 << 30;
/// The most distinct sizes a table holds: its text stays a few tens of kilobytes in a run
/// file.
pub const TABLE_SIZES: usize = 4096;

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
    /// Drawn uniformly from a table of sizes (a size listed N times N times as likely),
    /// written `list:SIZE[xN],...`, smallest first.
    Table(Arc<Vec<u64>>),
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
        if t.starts_with("file:") {
            return Err(bad(
                "a file of sizes is read by vload attack, which records the sizes in the run file as list:..."
                    .into(),
            ));
        }
        if let Some(rest) = t.strip_prefix("list:") {
            let mut sizes = Vec::new();
            for entry in rest.split(',') {
                let (size, times) = match entry.split_once('x') {
                    Some((size, n)) => (
                        size,
                        n.parse::<usize>()
                            .map_err(|_| bad(format!("count in '{entry}'")))?,
                    ),
                    None => (entry, 1),
                };
                let size = parse_bytes(size).map_err(&bad)?;
                if times == 0 || sizes.len() + times > 1 << 24 {
                    return Err(bad(format!("count in '{entry}'")));
                }
                sizes.extend(std::iter::repeat_n(size, times));
            }
            return SizeLaw::table(sizes).map_err(bad);
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
            SizeLaw::Table(sizes) => {
                f.write_str("list:")?;
                let mut first = true;
                for run in sizes.chunk_by(|a, b| a == b) {
                    if !first {
                        f.write_str(",")?;
                    }
                    first = false;
                    write!(f, "{}", bytes_text(run[0]))?;
                    if run.len() > 1 {
                        write!(f, "x{}", run.len())?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl SizeLaw {
    /// A table of `sizes`, each as likely (their order does not matter: they are sorted).
    ///
    /// # Errors
    /// No sizes, a size of 0 or above 1 GiB, or more than [`TABLE_SIZES`] distinct ones.
    pub fn table(mut sizes: Vec<u64>) -> Result<SizeLaw, String> {
        if sizes.is_empty() {
            return Err("no sizes listed".into());
        }
        if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > LARGEST) {
            return Err(format!(
                "a size of {bad} bytes: give sizes from 1 byte to 1 GiB"
            ));
        }
        sizes.sort_unstable();
        let distinct = sizes.chunk_by(|a, b| a == b).count();
        if distinct > TABLE_SIZES {
            return Err(format!(
                "{distinct} distinct sizes, more than {TABLE_SIZES}: round them (to 1k, say) or give a lognormal law"
            ));
        }
        Ok(SizeLaw::Table(Arc::new(sizes)))
    }

    /// The size of the object whose hash is `h` (two independent 64-bit hashes of its id).
    pub(crate) fn size(&self, h: u64, h2: u64) -> u64 {
        match self {
            SizeLaw::Fixed(b) => *b,
            SizeLaw::Range(lo, hi) => lo + h % (hi - lo + 1),
            SizeLaw::LogNormal { median, sigma } => {
                // Box-Muller from two uniforms in (0, 1).
                let u1 = unit(h).max(f64::MIN_POSITIVE);
                let u2 = unit(h2);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let size = (*median as f64).ln() + sigma * z;
                (size.exp().round() as u64).clamp(1, LARGEST)
            }
            SizeLaw::Table(sizes) => sizes[(h % sizes.len() as u64) as usize],
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
            SizeLaw::Table(sizes) => {
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
        for text in [
            "4k",
            "1500",
            "1k-64k",
            "lognormal:16k:1",
            "list:1k,4kx3,16k",
        ] {
            let law: SizeLaw = text.parse().unwrap();
            assert_eq!(law.to_string(), text);
        }
        for bad in [
            "4 apples",
            "64k-1k",
            "lognormal:16k",
            "lognormal:0:1",
            "file:/nonexistent/x",
            "list:",
            "list:4kx0",
            "list:0",
        ] {
            let err = bad.parse::<SizeLaw>().unwrap_err();
            assert!(err.contains(bad) && err.contains("expected BYTES"), "{err}");
        }
    }

    #[test]
    fn lognormal_sizes_have_their_median_and_mean() {
        let law: SizeLaw = "lognormal:16k:1.0".parse().unwrap();
        let mut sizes: Vec<u64> = (0..100_000u64)
            .map(|i| law.size(crate::hash::mix(i), crate::hash::mix(i ^ 0xabcd)))
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
        let seen: std::collections::BTreeSet<u64> = (0..1000)
            .map(|i| law.size(crate::hash::mix(i), 0))
            .collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![10, 11, 12]);
    }

    #[test]
    fn a_table_is_written_whole_and_read_back_without_a_file() {
        let law = SizeLaw::table(vec![16384, 1024, 4096, 1024]).unwrap();
        assert_eq!(law.to_string(), "list:1kx2,4k,16k");
        assert_eq!(law.to_string().parse::<SizeLaw>().unwrap(), law);
        assert_eq!(law.mean(), (1024.0 * 2.0 + 4096.0 + 16384.0) / 4.0);
        let many: Vec<u64> = (1..=TABLE_SIZES as u64 + 1).collect();
        assert!(SizeLaw::table(many).unwrap_err().contains("distinct sizes"));
        assert!(SizeLaw::table(vec![]).is_err());
    }
}

//! Variants of each object (#60): the same object under several cache keys, as a tracking
//! parameter in the query string (`&utm_source=v3`) or a request header the origin varies
//! on (`Accept-Language: v3` with `Vary: Accept-Language`). A cache that keys on them
//! stores and fetches each variant apart; one that normalises them (strips the parameter,
//! or folds the header) keeps one copy. Each request picks its variant independently, by a
//! law of its own (uniform, or Zipf over the variants).

use crate::Popularity;

/// The query parameter a query-string variant sets, as analytics links do.
pub const QUERY_PARAMETER: &str = "utm_source";
/// The request header a header variant sets; the origin answers `Vary` on it.
pub const VARY_HEADER: &str = "Accept-Language";
/// [`VARY_HEADER`] as HTTP/2 and the lean client write it, in lower case.
pub const VARY_NAME: &str = "accept-language";
/// The most variants an object may have (the model groups them; the run keeps 2 bits a key).
pub const MOST_VARIANTS: u32 = 10_000;

/// Where a variant lives in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantKind {
    /// A query parameter, [`QUERY_PARAMETER`]: a different URL.
    Query,
    /// A request header, [`VARY_HEADER`], that the origin's `Vary` names: the same URL.
    Vary,
}

/// Each object's variants and how a request picks one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variants {
    /// Variants of each object, at least one.
    pub count: u32,
    /// Query parameter or header.
    pub kind: VariantKind,
    /// How a request picks its variant: uniform, or Zipf over the variants (variant 0 the
    /// most asked).
    pub law: Popularity,
}

impl Variants {
    /// Each variant's share of its object's requests, grouped where they differ by under
    /// 10% (every variant alone at the top): `(variants in the group, each one's share)`.
    pub(crate) fn weights(&self) -> Vec<(f64, f64)> {
        let n = u64::from(self.count);
        if !matches!(self.law, Popularity::Zipf(_)) {
            return vec![(n as f64, 1.0 / n as f64)];
        }
        let norm = self.law.norm(n);
        let mut out = Vec::new();
        let mut start = 0u64;
        while start < n {
            let end = ((start as f64 * 1.1).ceil() as u64).max(start + 1).min(n);
            let p: f64 = (start..end).map(|k| self.law.probability(k, n, norm)).sum();
            let count = (end - start) as f64;
            out.push((count, p / count));
            start = end;
        }
        out
    }

    /// Writes variant `k`'s value (`v3`) through `put`.
    pub fn write_value(k: u32, mut put: impl FnMut(&[u8])) {
        put(b"v");
        put(itoa::Buffer::new().format(k).as_bytes());
    }
}

impl std::str::FromStr for Variants {
    type Err = String;

    /// `16` (query, uniform), `16:vary`, `16:query:zipf:1`, `4:vary:uniform`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{text}' is not a variants setting: expected N[:query|:vary][:uniform|:zipf:S], e.g. 16, 4:vary or 16:query:zipf:1 (N from 1 to {MOST_VARIANTS})"
            )
        };
        let mut parts = text.trim().splitn(2, ':');
        let count: u32 = parts
            .next()
            .and_then(|n| n.trim().parse().ok())
            .filter(|n| (1..=MOST_VARIANTS).contains(n))
            .ok_or_else(bad)?;
        let rest = parts.next().unwrap_or("");
        let (kind, law) = match rest.split_once(':').unwrap_or((rest, "")) {
            ("query", law) => (VariantKind::Query, law),
            ("vary", law) => (VariantKind::Vary, law),
            ("", "") => (VariantKind::Query, ""),
            _ => (VariantKind::Query, rest),
        };
        let law = match law {
            "" => Popularity::Uniform,
            law => law.parse().map_err(|_| bad())?,
        };
        if matches!(law, Popularity::Hot { .. }) {
            return Err(bad());
        }
        Ok(Variants { count, kind, law })
    }
}

impl std::fmt::Display for Variants {
    /// `16:query:uniform`, `4:vary:zipf:1`: as the flag takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            VariantKind::Query => "query",
            VariantKind::Vary => "vary",
        };
        write!(f, "{}:{kind}:{}", self.count, self.law)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_print_and_weigh() {
        let v: Variants = "16".parse().unwrap();
        assert_eq!(
            v,
            Variants {
                count: 16,
                kind: VariantKind::Query,
                law: Popularity::Uniform
            }
        );
        assert_eq!(v.to_string(), "16:query:uniform");
        for text in ["4:vary", "16:query:zipf:1", "8:zipf:0.8", "3:vary:uniform"] {
            let v: Variants = text.parse().unwrap();
            assert_eq!(v.to_string().parse::<Variants>().unwrap(), v, "{text}");
        }
        assert_eq!(
            "8:zipf:0.8".parse::<Variants>().unwrap().kind,
            VariantKind::Query
        );
        for bad in [
            "0",
            "x",
            "4:header",
            "4:vary:hot:10%:90%",
            "10001",
            "4:zipf:-1",
        ] {
            let err = bad.parse::<Variants>().unwrap_err();
            assert!(err.contains("N[:query|:vary]"), "{bad}: {err}");
        }
        assert_eq!(v.weights(), vec![(16.0, 1.0 / 16.0)]);
        let zipf: Variants = "1000:zipf:1".parse().unwrap();
        let w = zipf.weights();
        assert!(w.len() < 100, "{} groups", w.len());
        let total: f64 = w.iter().map(|(n, p)| n * p).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        assert!(w[0].1 > w[1].1, "variant 0 is the most asked");
    }

    /// Each request picks a variant at its share; the query's is in the URL, the header's
    /// in a header line with the origin asked to vary on it; keys are apart per variant.
    #[test]
    fn requests_pick_variants_at_their_share_and_write_them() {
        let c = crate::Catalogue {
            objects: 100,
            variants: Some("4".parse().unwrap()),
            ..crate::Catalogue::default()
        };
        let mut s = c.sampler(0, 1);
        let mut picked = [0u32; 4];
        let mut keys = std::collections::HashSet::new();
        for _ in 0..40_000 {
            let id = s.next_id();
            let k = s.last_variant().unwrap();
            picked[k as usize] += 1;
            let key = c.key(id, Some(k));
            assert!(key < c.keys());
            keys.insert(key);
        }
        assert!(
            picked.iter().all(|&n| n.abs_diff(10_000) < 500),
            "{picked:?}"
        );
        assert!(keys.len() > 200, "{} keys of 400", keys.len());
        let mut path = Vec::new();
        c.write_variant_path(7, Some(3), |p| path.extend_from_slice(p));
        assert_eq!(path, b"/c/7?size=4096&utm_source=v3");
        c.write_header_lines(Some(3), None, |_| panic!("a query variant has no header"));
        let vary = crate::Catalogue {
            variants: Some("4:vary".parse().unwrap()),
            ..c.clone()
        };
        path.clear();
        vary.write_variant_path(7, Some(3), |p| path.extend_from_slice(p));
        assert_eq!(path, b"/c/7?size=4096&header=Vary:Accept-Language");
        let mut line = Vec::new();
        vary.write_header_lines(Some(3), None, |p| line.extend_from_slice(p));
        assert_eq!(line, b"\r\naccept-language: v3");
        let both = crate::Catalogue {
            crawler: Some("10%".parse().unwrap()),
            ..c.clone()
        };
        assert!(
            both.check()
                .unwrap_err()
                .contains("--variants and --crawler")
        );
        let many = crate::Catalogue {
            objects: 100_000,
            variants: Some("10000".parse().unwrap()),
            ..c
        };
        assert!(many.check().unwrap_err().contains("cache keys"));
    }
}

//! A crawler beside a catalogue's own requests (#60): a share of every request, each the
//! next object of a crawl of the catalogue from its least popular object up, or a URL never
//! asked before.

/// A crawler beside the catalogue's own (human) requests: a share of every request, each
/// either the next object of a crawl of the catalogue from its least popular object up, or
/// a URL never asked before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crawler {
    /// Its share of all requests, in [0, 1).
    pub share: f64,
    /// True: every crawler request is a new URL; false: a crawl of the catalogue's tail first.
    pub unique: bool,
}

impl std::str::FromStr for Crawler {
    type Err = String;

    /// `30%` (a crawl of the tail), `30%:tail`, `30%:unique`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{text}' is not a crawler: expected SHARE%[:tail|:unique], e.g. 30% or 10%:unique"
            )
        };
        let (share, kind) = text.trim().split_once(':').unwrap_or((text.trim(), "tail"));
        let share: f64 = share
            .strip_suffix('%')
            .and_then(|v| v.trim().parse().ok())
            .filter(|v: &f64| (0.0..100.0).contains(v))
            .ok_or_else(bad)?;
        let unique = match kind {
            "tail" => false,
            "unique" => true,
            _ => return Err(bad()),
        };
        Ok(Crawler {
            share: share / 100.0,
            unique,
        })
    }
}

impl std::fmt::Display for Crawler {
    /// `30%:tail`, `10%:unique`: as the flag takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.unique { "unique" } else { "tail" };
        write!(f, "{}%:{kind}", 100.0 * self.share)
    }
}

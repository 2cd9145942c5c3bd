//! One latency distribution, summarised: exact moments, and the quantiles enough samples
//! support.

use serde::Serialize;
use vload_schema::{LatencyRecord, SchemaError};

/// Quantiles every report shows, with the fewest samples that support each: a percentile
/// of fewer than `10 / (1 - q)` samples rests on a handful of values and is not shown.
pub const QUANTILES: [(f64, &str); 5] = [
    (0.5, "p50"),
    (0.9, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (0.999, "p99.9"),
];

/// Samples needed before quantile `q` is reported.
pub fn samples_needed(q: f64) -> u64 {
    (10.0 / (1.0 - q)).round() as u64
}

/// One latency distribution, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub n: u64,
    /// Exact minimum in ns.
    pub min_ns: Option<u64>,
    /// Exact mean in ns.
    pub mean_ns: Option<f64>,
    /// Exact sample standard deviation in ns.
    pub stdev_ns: Option<f64>,
    /// Quantiles (name, value in ns); `None` where too few samples support it. In JSON each
    /// is a key of its own with its unit, `p99_ns`, `p99_9_ns`, so `jq .latency.p99_ns` works.
    #[serde(flatten, serialize_with = "keyed_ns")]
    pub quantiles: Vec<(String, Option<u64>)>,
    /// Exact maximum in ns.
    pub max_ns: Option<u64>,
}

impl LatencySummary {
    /// Summarises a recorded distribution.
    ///
    /// # Errors
    /// The histogram does not decode.
    pub fn of(record: &LatencyRecord) -> Result<Self, SchemaError> {
        let histogram = record.histogram.decode()?;
        let m = &record.moments;
        let n = m.n;
        let quantiles = QUANTILES
            .iter()
            .map(|&(q, name)| {
                let value = (n >= samples_needed(q) && !histogram.is_empty())
                    .then(|| m.clamp(histogram.value_at_quantile(q)));
                (name.to_owned(), value)
            })
            .collect();
        Ok(LatencySummary {
            n,
            min_ns: (n > 0).then_some(m.min_ns),
            mean_ns: m.mean(),
            stdev_ns: m.stdev(),
            quantiles,
            max_ns: (n > 0).then_some(m.max_ns),
        })
    }

    /// The value of a named quantile (`"p99"`), if shown.
    pub fn quantile(&self, name: &str) -> Option<u64> {
        self.quantiles
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
    }
}

/// Quantiles as `{"p50_ns": 1234, "p99_9_ns": null}`.
fn keyed_ns<S: serde::Serializer>(
    quantiles: &[(String, Option<u64>)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap as _;
    let mut map = serializer.serialize_map(Some(quantiles.len()))?;
    for (name, value) in quantiles {
        map.serialize_entry(&format!("{}_ns", name.replace('.', "_")), value)?;
    }
    map.end()
}

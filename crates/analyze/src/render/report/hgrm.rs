//! HdrHistogram's percentile distribution (`.hgrm`), for HdrHistogram's plotter.

use std::fmt::Write as _;

use vload_schema::{RunFile, SchemaError};

/// HdrHistogram's percentile distribution (`.hgrm`), values in milliseconds, as
/// `outputPercentileDistribution` writes it and HdrHistogram's plotter reads it.
///
/// # Errors
/// The histogram does not decode.
pub fn render(run: &RunFile) -> Result<String, SchemaError> {
    let h = run.latency.primary().histogram.decode()?;
    let m = &run.latency.primary().moments;
    let scale = 1e6;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            let q = v.quantile_iterated_to();
            // Bucket tops, as HdrHistogram prints them, but never above the exact max.
            let value = m.clamp(h.highest_equivalent(v.value_iterated_to())) as f64 / scale;
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:12.3} {q:2.12} {:10} {:14.2}",
                    cumulative(&h, v.value_iterated_to()),
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(
                    out,
                    "{value:12.3} {q:2.12} {:10}",
                    cumulative(&h, v.value_iterated_to())
                );
            }
        }
    }
    let mean = m.mean().unwrap_or(0.0) / scale;
    let stdev = m.stdev().unwrap_or(0.0) / scale;
    let _ = writeln!(
        out,
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        m.clamp(h.max()) as f64 / scale,
        h.len()
    );
    let sub_buckets = (2.0 * 10f64.powi(i32::from(h.sigfig())))
        .log2()
        .ceil()
        .exp2();
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets
    );
    // A comment line as the footer's are: plotters skip it.
    let _ = writeln!(
        out,
        "#[Latency = {}]",
        crate::summary::latency_words(run.latency.primary)
    );
    Ok(out)
}

fn cumulative(h: &hdrhistogram::Histogram<u64>, value: u64) -> u64 {
    h.count_between(0, value)
}

//! `--fail-if`: thresholds a run must not cross, k6-style, for CI: `p99>10ms,errors>0.1%,rate<9000`.
//!
//! Each term names a metric, a comparison and a limit; the run *fails* a term when the
//! comparison holds. Latencies are the run's own latency (response time from the intended
//! send in an open loop, service time in a closed loop), and every breach says which.

use vload_schema::{LatencyKind, RunFile, SchemaError};

use crate::slo::{parse_latency, parse_share};
use crate::units::{duration_ns, percent, rate};

/// What a term bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// A latency quantile (0.5, 0.75, 0.9, 0.95, 0.99, 0.999) of the run's latency.
    Quantile(Quantile),
    /// The mean latency.
    Mean,
    /// The largest latency.
    Max,
    /// Share of the requests due that did not succeed: failed, never sent, unfinished, or
    /// answered with a status the run does not expect (`--expect-status`, 2xx and 3xx by
    /// default).
    Errors,
    /// Successful responses (an expected status) per second over the measured window.
    Rate,
}

/// The quantiles a term can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    /// p50.
    P50,
    /// p75.
    P75,
    /// p90.
    P90,
    /// p95 (k6's favourite).
    P95,
    /// p99.
    P99,
    /// p99.9.
    P999,
}

impl Quantile {
    fn q(self) -> f64 {
        match self {
            Quantile::P50 => 0.5,
            Quantile::P75 => 0.75,
            Quantile::P90 => 0.9,
            Quantile::P95 => 0.95,
            Quantile::P99 => 0.99,
            Quantile::P999 => 0.999,
        }
    }
}

/// How a term compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`.
    Above,
    /// `>=`.
    AtLeast,
    /// `<`.
    Below,
    /// `<=`.
    AtMost,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Above => value > limit,
            Op::AtLeast => value >= limit,
            Op::Below => value < limit,
            Op::AtMost => value <= limit,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Op::Above => ">",
            Op::AtLeast => ">=",
            Op::Below => "<",
            Op::AtMost => "<=",
        }
    }
}

/// One threshold: fail when `measure op limit` holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    /// What it bounds.
    pub measure: Measure,
    /// The comparison that fails the run.
    pub op: Op,
    /// The limit: ns for latencies, a share for errors, per second for rate.
    pub limit: f64,
    name: &'static str,
}

impl Threshold {
    /// The term as written, normalised: `p99>10.00 ms`.
    pub fn text(&self) -> String {
        format!("{}{}{}", self.name, self.op.text(), self.show(self.limit))
    }

    fn show(&self, v: f64) -> String {
        match self.measure {
            Measure::Errors => percent(v),
            Measure::Rate => rate(v),
            _ => duration_ns(v),
        }
    }
}

const SHAPE: &str = "expected terms like p99>10ms,errors>0.1%,rate<9000 (metrics p50, p75, p90, p95, p99, p99.9, mean, max, errors, rate; k6's p(95) too; comparisons >, >=, <, <=)";

/// Parses `p99>10ms,errors>0.1%,rate<9000`.
///
/// # Errors
/// One line naming the term and what was expected.
pub fn parse(text: &str) -> Result<Vec<Threshold>, String> {
    let mut terms = Vec::new();
    for term in text.split(',').map(str::trim) {
        let at = term
            .find(['<', '>'])
            .ok_or_else(|| format!("--fail-if term '{term}' has no comparison: {SHAPE}"))?;
        let (name, rest) = term.split_at(at);
        let (op, limit) = match rest.as_bytes() {
            [b'>', b'=', ..] => (Op::AtLeast, &rest[2..]),
            [b'<', b'=', ..] => (Op::AtMost, &rest[2..]),
            [b'>', ..] => (Op::Above, &rest[1..]),
            _ => (Op::Below, &rest[1..]),
        };
        // k6 writes p(95); its limits are in milliseconds when they have no unit.
        let lower = name.trim().to_ascii_lowercase();
        let k6 = lower.starts_with("p(") && lower.ends_with(')');
        let normal = if k6 {
            format!("p{}", &lower[2..lower.len() - 1])
        } else {
            lower
        };
        let (measure, name) = match normal.as_str() {
            "p50" | "median" => (Measure::Quantile(Quantile::P50), "p50"),
            "p75" => (Measure::Quantile(Quantile::P75), "p75"),
            "p90" => (Measure::Quantile(Quantile::P90), "p90"),
            "p95" => (Measure::Quantile(Quantile::P95), "p95"),
            "p99" => (Measure::Quantile(Quantile::P99), "p99"),
            "p99.9" | "p999" => (Measure::Quantile(Quantile::P999), "p99.9"),
            "mean" | "avg" => (Measure::Mean, "mean"),
            "max" => (Measure::Max, "max"),
            "errors" | "error" | "error_rate" => (Measure::Errors, "errors"),
            "rate" | "throughput" | "rps" => (Measure::Rate, "rate"),
            other => {
                return Err(format!(
                    "--fail-if term '{term}': unknown metric '{other}': {SHAPE}"
                ));
            }
        };
        // --fail-if names what fails a run; the other direction would fail every good run
        // and pass every bad one (`p99<10s` exits 0 on a run whose p99 is 31 s).
        let fails_high = !matches!(measure, Measure::Rate);
        let reads_as_pass = matches!(op, Op::Below | Op::AtMost) == fails_high;
        let bare = limit.trim().parse::<f64>().is_ok();
        let limit_text =
            if k6 && bare && matches!(measure, Measure::Quantile(_) | Measure::Mean | Measure::Max)
            {
                format!("{}ms", limit.trim())
            } else {
                limit.trim().to_owned()
            };
        if reads_as_pass {
            let (fail, pass) = if fails_high { (">", "<") } else { ("<", ">") };
            let flipped = format!("{}{fail}{limit_text}", name);
            if k6 {
                return Err(format!(
                    "--fail-if term '{term}' is k6's threshold, which passes when it holds; --fail-if fails the run when its term holds: write {flipped}"
                ));
            }
            return Err(format!(
                "--fail-if term '{term}' reads as a condition to pass, but --fail-if fails the run when its term holds: write {flipped} to fail a run whose {name} is beyond {} (--slo of vload sweep takes the pass form, {name}{pass}...)",
                limit.trim()
            ));
        }
        let limit = limit_text.as_str();
        let value = match measure {
            Measure::Errors => parse_share(limit),
            Measure::Rate => per_second(limit),
            _ => parse_latency(limit),
        }
        .map_err(|why| format!("--fail-if term '{term}': {why}"))?;
        terms.push(Threshold {
            measure,
            op,
            limit: value,
            name,
        });
    }
    Ok(terms)
}

fn per_second(text: &str) -> Result<f64, String> {
    let number = text.strip_suffix("/s").unwrap_or(text).trim();
    let (number, scale) = match number.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => (number, 1.0),
    };
    number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v * scale)
        .ok_or_else(|| {
            format!("'{text}' is not a rate: write requests per second, like 9000 or 9k")
        })
}

/// A threshold the run crossed, with the value that crossed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Breach {
    /// The threshold.
    pub threshold: Threshold,
    /// The run's value; `None` when the run cannot give one (no responses), which fails.
    pub value: Option<f64>,
    /// One line: `p99 14.20 ms > 10.00 ms (response time from the intended send)`.
    pub message: String,
}

/// The thresholds `run` crosses.
///
/// # Errors
/// The run's histogram does not decode.
pub fn breaches(terms: &[Threshold], run: &RunFile) -> Result<Vec<Breach>, SchemaError> {
    let primary = run.latency.primary();
    let histogram = primary.histogram.decode()?;
    let moments = &primary.moments;
    let kind = match run.latency.primary {
        LatencyKind::Response => "response time from the intended send, open loop",
        LatencyKind::Service => "service time from the actual write, closed loop",
    };
    let t = &run.totals;
    let mut out = Vec::new();
    for term in terms {
        let value = match term.measure {
            Measure::Quantile(q) => {
                (moments.n > 0).then(|| moments.clamp(histogram.value_at_quantile(q.q())) as f64)
            }
            Measure::Mean => moments.mean(),
            Measure::Max => (moments.n > 0).then_some(moments.max_ns as f64),
            Measure::Errors => t.failure_share(&run.plan),
            Measure::Rate => {
                let seconds = run.window.measured_s + run.window.wait_s;
                (seconds > 0.0).then(|| t.successes(&run.plan) as f64 / seconds)
            }
        };
        let crossed = value.is_none_or(|v| term.op.holds(v, term.limit));
        if !crossed {
            continue;
        }
        let shown = value.map_or_else(|| "n/a (no responses)".to_owned(), |v| term.show(v));
        let which = match term.measure {
            Measure::Quantile(_) | Measure::Mean | Measure::Max => format!(" ({kind})"),
            Measure::Errors => format!(
                " (requests due without a {} response: failed, never sent, or another status)",
                run.plan.expected_text()
            ),
            Measure::Rate => format!(" ({} responses per second)", run.plan.expected_text()),
        };
        out.push(Breach {
            threshold: *term,
            value,
            message: format!(
                "{} {shown} {} {}{which}",
                term.name,
                term.op.text(),
                term.show(term.limit)
            ),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_with_comparisons_and_units() {
        let t = parse("p99>10ms, errors>0.1%,rate<9k,p99.9>=1s,mean>=2ms").unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(
            (t[0].measure, t[0].op, t[0].limit),
            (Measure::Quantile(Quantile::P99), Op::Above, 10e6)
        );
        assert!((t[1].limit - 0.001).abs() < 1e-12);
        assert_eq!(
            (t[2].measure, t[2].op, t[2].limit),
            (Measure::Rate, Op::Below, 9000.0)
        );
        assert_eq!(t[3].op, Op::AtLeast);
        assert_eq!(t[4].op, Op::AtLeast);
        assert_eq!(t[0].text(), "p99>10.00 ms");
    }

    /// #48: p95 (and p75) as k6 users write them; k6's own `p(95)<500` is named with the
    /// --fail-if form it means, its bare milliseconds given their unit.
    #[test]
    fn p95_and_k6_thresholds() {
        let t = parse("p95>1s,p75>=2ms,p(95)>500").unwrap();
        assert_eq!(
            (t[0].measure, t[0].limit),
            (Measure::Quantile(Quantile::P95), 1e9)
        );
        assert_eq!(t[1].measure, Measure::Quantile(Quantile::P75));
        assert_eq!(
            (t[2].measure, t[2].limit),
            (Measure::Quantile(Quantile::P95), 500e6)
        );
        let err = parse("p(95)<500").unwrap_err();
        assert!(
            err.contains("k6's threshold") && err.contains("write p95>500ms"),
            "{err}"
        );
    }

    #[test]
    fn bad_terms_name_themselves() {
        for (text, needle) in [
            ("p99=10ms", "no comparison"),
            ("p98>10ms", "unknown metric 'p98'"),
            ("p99>fast", "'fast' is not a duration"),
            ("errors>5", "share"),
            ("rate<lots", "not a rate"),
            // See #30: `p99<10s` exited 0 on a run whose p99 was 31 s.
            ("p99<10s", "write p99>10s"),
            ("errors<=1%", "write errors>1%"),
            ("rate>9000", "write rate<9000"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}

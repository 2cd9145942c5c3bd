//! Service-level objectives: `p99<10ms,errors<0.1%`, parsed, and held against a stage.

use vload_schema::{Plan, SchemaError, SloMetric, SloTerm, StageRecord};

use crate::latency::samples_needed;
use crate::units::{duration_ns, percent};

/// The quantile an SLO metric bounds, if it is a latency.
pub fn quantile_of(metric: SloMetric) -> Option<f64> {
    match metric {
        SloMetric::P50 => Some(0.5),
        SloMetric::P90 => Some(0.9),
        SloMetric::P99 => Some(0.99),
        SloMetric::P999 => Some(0.999),
        SloMetric::Errors => None,
    }
}

/// The name a term is written with: `p99`, `p99.9`, `errors`.
pub fn metric_name(metric: SloMetric) -> &'static str {
    match metric {
        SloMetric::P50 => "p50",
        SloMetric::P90 => "p90",
        SloMetric::P99 => "p99",
        SloMetric::P999 => "p99.9",
        SloMetric::Errors => "errors",
    }
}

/// A term as written: `p99<10.00 ms`, `errors<0.10%`.
pub fn term_text(term: &SloTerm) -> String {
    let limit = match term.metric {
        SloMetric::Errors => percent(term.limit),
        _ => duration_ns(term.limit),
    };
    format!("{}<{limit}", metric_name(term.metric))
}

/// An SLO as written: the terms joined by commas.
pub fn slo_text(terms: &[SloTerm]) -> String {
    terms.iter().map(term_text).collect::<Vec<_>>().join(", ")
}

/// Parses `p99<10ms,errors<0.1%`: terms separated by commas, each a metric (`p50`, `p90`,
/// `p99`, `p99.9`, `errors`), `<`, and a limit (a duration for latencies; a percentage or a
/// ratio for errors). A quantile must stay below its limit; `errors` is the share of
/// requests due that did not succeed (failed, never sent, or answered with a status the run
/// does not expect).
///
/// # Errors
/// One line naming the term and what was expected.
pub fn parse(text: &str) -> Result<Vec<SloTerm>, String> {
    let shape = "expected terms like p99<10ms,errors<0.1% (metrics p50, p90, p99, p99.9, errors)";
    let mut terms: Vec<SloTerm> = Vec::new();
    for term in text.split(',').map(str::trim) {
        let (name, limit) = term.split_once('<').ok_or_else(|| match term.split_once('>') {
            // The other sense: --slo names what a step must meet.
            Some((name, limit)) => format!(
                "SLO term '{term}' reads as a condition to fail, but --slo takes what each step must meet: write {}<{} (--fail-if of vload attack takes the fail form)",
                name.trim(),
                limit.trim_start_matches('=').trim()
            ),
            None => format!("SLO term '{term}' has no '<': {shape}"),
        })?;
        let metric = match name.trim().to_ascii_lowercase().as_str() {
            "p50" | "median" => SloMetric::P50,
            "p90" => SloMetric::P90,
            "p99" => SloMetric::P99,
            "p99.9" | "p999" => SloMetric::P999,
            "errors" | "error" => SloMetric::Errors,
            other => {
                return Err(format!(
                    "SLO term '{term}': unknown metric '{other}': {shape}"
                ));
            }
        };
        let limit = limit.trim_start_matches('=').trim();
        let value = match metric {
            SloMetric::Errors => error_limit(limit),
            _ => latency_limit(limit),
        }
        .map_err(|why| format!("SLO term '{term}': {why}"))?;
        if terms.iter().any(|t| t.metric == metric) {
            return Err(format!("SLO '{text}' bounds {} twice", metric_name(metric)));
        }
        terms.push(SloTerm {
            metric,
            limit: value,
        });
    }
    Ok(terms)
}

/// A latency limit in ns: `10ms`, `250us`.
pub(crate) fn parse_latency(text: &str) -> Result<f64, String> {
    humantime::parse_duration(text)
        .map(|d| d.as_nanos() as f64)
        .map_err(|_| {
            format!("'{text}' is not a duration: write a number with a unit, like 10ms or 250us")
        })
}

/// A share of requests: `0.1%` or `0.001`, from 0 to 1.
pub(crate) fn parse_share(text: &str) -> Result<f64, String> {
    let bad = || format!("'{text}' is not a share of requests: write 0.1% or 0.001");
    let ratio = match text.strip_suffix('%') {
        Some(number) => number.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => text.parse::<f64>().map_err(|_| bad())?,
    };
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(format!("'{text}' is not a share from 0% to at most 100%"))
    }
}

fn latency_limit(text: &str) -> Result<f64, String> {
    match parse_latency(text)? {
        0.0 => Err("a latency below 0 s is never met".to_owned()),
        ns => Ok(ns),
    }
}

fn error_limit(text: &str) -> Result<f64, String> {
    match parse_share(text)? {
        0.0 => Err(format!(
            "'{text}' is not a share above 0% and at most 100% (errors<0% is never met)"
        )),
        ratio => Ok(ratio),
    }
}

/// One term held against one stage.
#[derive(Debug, Clone, PartialEq)]
pub struct TermOutcome {
    /// The term.
    pub term: SloTerm,
    /// The stage's value of the metric; `None` when nothing completed.
    pub value: Option<f64>,
    /// True when the value is below the limit (for a quantile with a within-run interval,
    /// the interval's upper end too).
    pub met: bool,
    /// For a quantile: the upper end of the stage's 95% within-run interval, when known.
    pub upper: Option<f64>,
    /// For a quantile: fewer samples than the report needs to show it (`10 / (1 - q)`), so
    /// the value rests on a handful of requests.
    pub thin: bool,
}

impl TermOutcome {
    /// `p99 14.20 ms (limit 10.00 ms)`.
    pub fn text(&self) -> String {
        let show = |v: f64| match self.term.metric {
            SloMetric::Errors => percent(v),
            _ => duration_ns(v),
        };
        let value = self.value.map_or_else(|| "n/a".to_owned(), show);
        let upper = self
            .upper
            .map_or_else(String::new, |u| format!(", 95% up to {}", show(u)));
        format!(
            "{} {value} (limit {}{upper})",
            metric_name(self.term.metric),
            show(self.term.limit)
        )
    }
}

/// Holds every term against a stage's response times (from the intended send) and its
/// failures (what `plan` counts as success decides them).
///
/// # Errors
/// The stage's histogram does not decode.
pub fn evaluate(
    terms: &[SloTerm],
    stage: &StageRecord,
    plan: &Plan,
) -> Result<Vec<TermOutcome>, SchemaError> {
    evaluate_on(terms, stage, &stage.response, plan)
}

/// Holds every term against `latency` (a stage's response or service times) and the
/// stage's errors.
///
/// # Errors
/// The histogram does not decode.
pub fn evaluate_on(
    terms: &[SloTerm],
    stage: &StageRecord,
    latency: &vload_schema::LatencyRecord,
    plan: &Plan,
) -> Result<Vec<TermOutcome>, SchemaError> {
    let histogram = latency.histogram.decode()?;
    let moments = &latency.moments;
    // The within-run bounds describe the response times; a caller holding the terms against
    // another latency (service time) has none.
    let bounded = std::ptr::eq(latency, &stage.response);
    Ok(terms
        .iter()
        .map(|term| {
            let (value, thin) = match quantile_of(term.metric) {
                Some(q) => (
                    (!histogram.is_empty())
                        .then(|| moments.clamp(histogram.value_at_quantile(q)) as f64),
                    moments.n < samples_needed(q),
                ),
                None => (stage.failure_share(plan), false),
            };
            let upper = stage
                .upper_bounds
                .iter()
                .find(|b| bounded && b.metric == term.metric)
                .map(|b| b.upper_ns);
            TermOutcome {
                term: *term,
                value,
                met: value.is_some_and(|v| v < term.limit) && upper.is_none_or(|u| u < term.limit),
                upper,
                thin,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_with_their_units() {
        let terms = parse("p99<10ms, errors<0.1%,p99.9<=1s,p50<250us").unwrap();
        assert_eq!(terms.len(), 4);
        assert_eq!(terms[0].metric, SloMetric::P99);
        assert_eq!(terms[0].limit, 10e6);
        assert_eq!(terms[1].metric, SloMetric::Errors);
        assert!((terms[1].limit - 0.001).abs() < 1e-12);
        assert_eq!(terms[2].limit, 1e9);
        assert_eq!(terms[3].limit, 250e3);
        assert_eq!(slo_text(&terms[..2]), "p99<10.00 ms, errors<0.10%");
        assert_eq!(parse("errors<0.5").unwrap()[0].limit, 0.5);
    }

    #[test]
    fn bad_terms_say_what_was_expected() {
        for (bad, says) in [
            ("p99>10ms", "write p99<10ms"),
            ("p99", "has no '<'"),
            ("p42<10ms", "unknown metric 'p42'"),
            ("p99<10", "not a duration"),
            ("p99<0ms", "never met"),
            ("errors<0%", "above 0%"),
            ("errors<150%", "at most 100%"),
            ("errors<lots", "not a share"),
            ("p99<1ms,p99<2ms", "twice"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

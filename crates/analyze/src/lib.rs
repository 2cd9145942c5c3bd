//! vload's analyzer: what a run file means.
//!
//! [`Summary::of`] turns a [`vload_schema::RunFile`] into the numbers a report prints
//! (exact moments, percentiles where enough samples support them, rates, the error set,
//! cache hits and the client-health verdict); [`render::report::text::render`] prints it. The
//! crate is pure computation over run files: no I/O, no async runtime.
//!
//! # Example
//!
//! ```
//! let text = include_str!("../../schema/tests/data/golden-run.json");
//! let run = vload_schema::RunFile::from_json(text)?;
//! let summary = vload_analyze::Summary::of(&run)?;
//! let report = vload_analyze::render::report::text::render(&summary);
//! assert!(report.contains("response time from the intended send"));
//! # Ok::<(), vload_schema::SchemaError>(())
//! ```
//!
//! # Errors
//!
//! Only a histogram that does not decode ([`vload_schema::SchemaError`]).
//!
//! # Limits
//!
//! A quantile is shown only with at least `10 / (1 - q)` samples (p99 needs 1,000):
//! otherwise it is `n/a` rather than a number resting on a handful of values.

pub mod breakdown;
mod checks;
pub mod compare;
mod latency;
mod layers;
pub mod merge;
mod metric;
pub mod phases;
pub mod purge;
pub mod render;
pub mod selfcheck;
pub mod slo;
pub mod staged;
pub mod stats;
mod summary;
pub mod sweep;
pub mod thresholds;
pub mod units;
pub mod within_run;

pub use compare::{Comparison, compare};
pub use metric::Metric;
pub use summary::{LatencySummary, QUANTILES, Summary, samples_needed};
pub use within_run::within_run;

#[cfg(test)]
mod tests {
    use vload_schema::RunFile;

    use super::*;

    fn golden() -> RunFile {
        RunFile::from_json(include_str!("../../schema/tests/data/golden-run.json")).unwrap()
    }

    #[test]
    fn text_report_has_every_section_and_never_nan() {
        let report = render::report::text::render(&Summary::of(&golden()).unwrap());
        for needle in [
            "Requests",
            "Duration",
            "Latency",
            "Bytes",
            "Success",
            "Status codes",
            "Error set",
            "request_timeout",
            "Cache",
            "Client health ok",
            "[x86_64]",
        ] {
            assert!(report.contains(needle), "missing {needle}:\n{report}");
        }
        assert!(
            !report.contains("NaN") && !report.contains("inf"),
            "{report}"
        );
    }

    #[test]
    fn percentiles_without_enough_samples_are_not_shown() {
        let summary = Summary::of(&golden()).unwrap();
        assert_eq!(summary.latency.n, 4);
        assert_eq!(
            summary.latency.quantile("p50"),
            None,
            "4 samples cannot support a median"
        );
        let report = render::report::text::render(&summary);
        assert!(report.contains("too few samples (4)"), "{report}");
    }

    /// The report says what was run, as h2load does: the protocol, and for HTTP/2 the
    /// streams on each connection (`--http2 -c 4 --streams 10` printed "4 connections").
    #[test]
    fn the_plan_names_its_protocol_and_streams() {
        let mut run = golden();
        let line = |run: &RunFile| render::report::text::render(&Summary::of(run).unwrap());
        assert!(
            line(&run).starts_with("vload: HTTP/1.1, open loop"),
            "{}",
            line(&run)
        );
        run.plan.http_version = "2".into();
        run.plan.streams = Some(10);
        run.plan.connections = 4;
        let report = line(&run);
        assert!(
            report.starts_with("vload: HTTP/2 (h2c), open loop")
                && report.contains("4 connections x 10 streams"),
            "{report}"
        );
        run.plan.tls = Some(vload_schema::TlsRecord {
            server_name: "localhost".into(),
            verify: "insecure (not verified)".into(),
        });
        assert!(
            line(&run).starts_with("vload: HTTP/2 over TLS,"),
            "{}",
            line(&run)
        );
    }

    /// Connections opened in the warm-up and kept alive serve the window's requests: "requests
    /// each" counts them (it said n/a for 717,284 requests on 50 such connections).
    #[test]
    fn requests_each_counts_connections_from_the_warm_up() {
        let mut summary = Summary::of(&golden()).unwrap();
        summary.requests = 717_284;
        summary.connections_opened = 0;
        summary.connections_opened_warmup = 50;
        let report = render::report::text::render(&summary);
        let line = report
            .lines()
            .find(|l| l.starts_with("Connections"))
            .expect("a connections line");
        assert!(line.ends_with("14,345.7"), "{line}");
    }

    /// #48: connections all opened in the first second (a closed loop's) are said to be,
    /// not spread over the run as a rate ("50, 5.0/s" for 50 opened at t=0).
    #[test]
    fn connections_opened_at_the_start_have_no_rate() {
        let mut summary = Summary::of(&golden()).unwrap();
        summary.connections_opened = 50;
        summary.connections_opened_warmup = 0;
        let line = |s: &Summary| {
            render::report::text::render(s)
                .lines()
                .find(|l| l.starts_with("Connections"))
                .expect("a connections line")
                .to_owned()
        };
        summary.connections_opened_first_s = 50;
        assert!(
            line(&summary).contains(" 50, all in the first second, "),
            "{}",
            line(&summary)
        );
        summary.connections_opened_first_s = 10;
        assert!(line(&summary).contains("/s, "), "{}", line(&summary));
    }

    /// #48: a rate plan's throughput follows the plan, so its seconds' spread is not noise:
    /// `-r '100:3s,300:3s'` failed "throughput 199.8/s ±57.5%: not converged".
    #[test]
    fn a_rate_plans_throughput_is_not_judged_for_convergence() {
        let mut run = golden();
        run.plan.rate_plan = Some(vec![vload_schema::PlannedStage {
            from_rate_per_s: 100.0,
            to_rate_per_s: 300.0,
            duration_s: 6.0,
        }]);
        let checks = crate::selfcheck::run_checks(&run).unwrap();
        let throughput = checks
            .iter()
            .find(|c| c.name == "convergence:throughput")
            .unwrap();
        assert_eq!(throughput.verdict, vload_schema::CheckVerdict::Unknown);
        assert!(
            throughput.message.contains("rate plan"),
            "{}",
            throughput.message
        );
    }

    /// An `--until-stable` run says its bound, not the longest it could have lasted.
    #[test]
    fn until_stable_runs_name_their_bound() {
        let mut run = golden();
        run.until_stable = Some(vload_schema::UntilStable {
            target: 0.05,
            max_duration_s: 20.0,
            converged_after_s: Some(11.0),
            half_width: Some(0.04),
        });
        let report = render::report::text::render(&Summary::of(&run).unwrap());
        let first = report.lines().next().unwrap_or_default();
        assert!(
            first.contains("until p99 within ±5% (at most 20.000 s)"),
            "{first}"
        );
    }

    #[test]
    fn long_tails_are_explained() {
        // The golden run has one 990 ms outlier among ~200 µs responses.
        let summary = Summary::of(&golden()).unwrap();
        assert!(summary.has_long_tail());
        assert!(render::report::text::render(&summary).contains("normal for a long tail"));
    }

    #[test]
    fn quantile_floors_follow_ten_over_one_minus_q() {
        assert_eq!(samples_needed(0.5), 20);
        assert_eq!(samples_needed(0.99), 1_000);
        assert_eq!(samples_needed(0.999), 10_000);
    }
}

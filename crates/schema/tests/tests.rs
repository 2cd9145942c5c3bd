//! Integration tests of the run-file format.

mod golden {
    use std::collections::BTreeMap;

    use vload_schema::*;

    const GOLDEN: &str = "tests/data/golden-run.json";

    fn record(values: &[u64]) -> LatencyRecord {
        let mut histogram = new_histogram(&HistogramSettings::default());
        let mut moments = Moments::new();
        for &v in values {
            histogram.record(v).unwrap();
            moments.record(v);
        }
        LatencyRecord {
            histogram: EncodedHistogram::encode(&histogram).unwrap(),
            moments,
        }
    }

    /// A small but complete open-loop run, built field by field.
    pub(super) fn sample_run() -> RunFile {
        let response = [180_000, 210_000, 250_000, 990_000_000];
        let service = [170_000, 200_000, 240_000, 2_100_000];
        let mut errors = BTreeMap::new();
        errors.insert(
            ErrorKind::RequestTimeout,
            ErrorCount {
                count: 1,
                sample: "no response within 1s".into(),
            },
        );
        let mut interval_errors = BTreeMap::new();
        interval_errors.insert(ErrorKind::RequestTimeout, 1);
        RunFile {
            schema_version: SCHEMA_VERSION,
            vload_version: "0.1.0".into(),
            run_id: "20261122T013612Z-5f3a9c21".into(),
            label: Some("x86_64".into()),
            started_at: "2026-11-22T01:36:12.345Z".into(),
            interrupted: false,
            environment: Environment {
                arch: "x86_64".into(),
                os: "linux".into(),
                cpu_model: "Example CPU @ 2.00GHz".into(),
                cpus_available: 2,
                kernel: "6.1.0".into(),
                hostname: "loadgen-1".into(),
                clock: None,
                governor: None,
            },
            plan: Plan {
                mode: Mode::Open,
                target: "http://127.0.0.1:8081/".into(),
                method: "GET".into(),
                headers: vec![Header {
                    name: "accept".into(),
                    value: "*/*".into(),
                }],
                body_bytes: 0,
                connections: 10_000,
                rate_per_s: Some(5.0),
                rate_plan: None,
                arrival: Arrival::Constant,
                seed: None,
                duration_s: Some(1.0),
                requests: None,
                warmup_s: 0.0,
                timeout_s: 1.0,
                connect_timeout_s: 1.0,
                http_version: "1.1".into(),
                threads: 1,
                histogram: HistogramSettings::default(),
                targets: None,
                connect_to: None,
                server_address: None,
                requests_per_connection: None,
                streams: None,
                tls: None,
                shard: None,
                start_at: None,
                expect_status: None,
                catalogue: None,
                classes: Vec::new(),
                server_timing: None,
            },
            workload_hash: "9b1c3f8a2e".repeat(6) + "abcd",
            window: Window {
                warmup_s: 0.0,
                measured_s: 1.0,
                wait_s: 0.75,
                start_offset_s: None,
            },
            totals: Totals {
                intended: 5,
                sent: 5,
                completed: 5,
                status_codes: BTreeMap::from([(200, 4)]),
                errors,
                bytes_in: 44,
                bytes_out: 0,
                wire_bytes_in: None,
                connections_opened: 2,
                late_sends: 0,
                backlog: 0,
                out_of_range: 0,
                unsent: 0,
                unfinished: 0,
                stray_closes: 0,
                server_timing_beyond_wait: 0,
                timeouts_answered_late: 0,
                connections_unused: 0,
                queue_timeouts: 0,
                queued: 0,
                handshakes: None,
            },
            latency: Latency {
                primary: LatencyKind::Response,
                response: Some(record(&response)),
                service: record(&service),
                dispatch_lag: Some(record(&[2_000, 3_000, 2_500, 4_000, 3_500])),
                hiccup: record(&[40_000, 55_000, 61_000]),
                hit: None,
                miss: None,
                tls_handshake: None,
                tcp_connect: None,
                queue_wait: None,
                first_byte: None,
                transfer: None,
                origin: None,
                proxy_added: None,
            },
            cache: CacheCounts {
                hit: 3,
                miss: 1,
                unknown: 0,
                by_source: CacheSources {
                    x_varnish: 4,
                    x_cache: 0,
                    age: 0,
                    cache_status: 0,
                },
                layers: Vec::new(),
                stale_ages: None,
            },
            client_health: ClientHealth {
                cpu_s: 0.012,
                cpu_util: 0.003,
                max_thread_busy: 0.006,
                peak_connections: None,
                dispatch_lag_p99_ns: Some(4_001),
                late_sends: 0,
                hiccup_p99_ns: Some(61_023),
                fd_limit: 1_048_576,
                fd_needed: 10_064,
                verdict: HealthVerdict::Ok,
                reasons: vec![],
                max_thread_waiting: None,
                signals: vec![],
            },
            intervals: vec![Interval {
                start_s: 0.0,
                duration_s: 1.0,
                warmup: false,
                intended: 5,
                sent: 5,
                completed: 5,
                errors: interval_errors,
                status_classes: StatusClasses {
                    s2xx: 4,
                    ..StatusClasses::default()
                },
                bytes_in: 44,
                bytes_out: 0,
                connections_opened: 2,
                in_flight: 0,
                unsent: 0,
                unfinished: 0,
                stray_closes: 0,
                hits: 3,
                misses: 1,
                stale: 0,
                stale_ages: None,
                layers: Vec::new(),
                purged_hits: 0,
                purged_misses: 0,
                latency: record(&response),
                server_cpu_s: None,
                server: None,
            }],
            server: None,
            cache_model: None,
            purges: None,
            stampede: None,
            origin_plan: None,
            warmed: None,
            stages: Vec::new(),
            breakdowns: Vec::new(),
            sweep: None,
            arrivals: None,
            until_stable: None,
            checks: Vec::new(),
            provenance: None,
        }
    }

    #[test]
    fn server_records_round_trip_and_stay_out_of_runs_without_them() {
        let mut run = sample_run();
        assert!(!run.to_json().contains("\"server"), "absent, not null");
        let mut counters = std::collections::BTreeMap::new();
        counters.insert("cache_hit".to_owned(), 41_000);
        counters.insert("client_req".to_owned(), 41_001);
        run.server = Some(ServerRecord {
            stats: Some(StatsRecord {
                source: "varnish".into(),
                address: "/tmp/v".into(),
                covers: "measured".into(),
                common: varnish_common(&counters),
                counters,
                gauges: [("n_object".to_owned(), 1)].into_iter().collect(),
                layout: "counters".into(),
                version: None,
                troubles: Vec::new(),
            }),
            process: Some(ProcessRecord {
                pid: 4242,
                name: "varnishd".into(),
                processes: 2,
                user_s: 1.25,
                system_s: 0.5,
            }),
        });
        run.intervals[0].server_cpu_s = Some(0.17);
        let back = RunFile::from_json(&run.to_json()).unwrap();
        assert_eq!(back, run);
        assert_eq!(back.server.unwrap().process.unwrap().cpu_s(), 1.75);
    }

    #[test]
    fn a_version_3_varnish_record_reads_as_a_stats_record() {
        // Version 3 kept Varnish's counters as server.varnish, with its instance and no
        // common counters or troubles: they are mapped on reading.
        let mut run = sample_run();
        run.schema_version = 3;
        let mut value: serde_json::Value = serde_json::from_str(&run.to_json()).unwrap();
        value["server"] = serde_json::json!({"varnish": {
            "instance": "v1", "covers": "measured", "layout": "counters", "gauges": {},
            "counters": {"client_req": 1000, "cache_hit": 900, "cache_miss": 100,
                         "vbe_req": 100, "n_lru_nuked": 4, "sess_conn": 10}
        }});
        let back = RunFile::from_json(&value.to_string()).unwrap();
        let stats = back.server.unwrap().stats.unwrap();
        assert_eq!(stats.source, "varnish");
        assert_eq!(stats.address, "v1");
        assert_eq!(stats.common.requests, Some(1000));
        assert_eq!(stats.common.hits, Some(900));
        assert_eq!(stats.common.origin_requests, Some(100));
        assert_eq!(stats.common.evictions, Some(4));
        assert_eq!(stats.common.passes, None, "s_pass was not kept");
        assert_eq!(stats.troubles.len(), 1);
        assert_eq!(stats.troubles[0].counter, "n_lru_nuked");
    }

    #[test]
    fn golden_file_round_trips_byte_for_byte() {
        if std::env::var_os("VLOAD_BLESS").is_some() {
            std::fs::write(GOLDEN, sample_run().to_json()).unwrap();
        }
        let text =
            std::fs::read_to_string(GOLDEN).expect("golden file exists (VLOAD_BLESS=1 writes it)");
        let run = RunFile::from_json(&text).expect("golden file parses");
        assert_eq!(
            run.to_json(),
            text,
            "parse + write must reproduce the file exactly"
        );
        // The fields match what the sample was built from, histograms included.
        let sample = sample_run();
        assert_eq!(run.totals, sample.totals);
        assert_eq!(run.plan, sample.plan);
        for (a, b) in [
            (&run.latency.service, &sample.latency.service),
            (
                run.latency.response.as_ref().unwrap(),
                sample.latency.response.as_ref().unwrap(),
            ),
        ] {
            assert_eq!(a.histogram.decode().unwrap(), b.histogram.decode().unwrap());
            assert_eq!(a.moments, b.moments);
        }
    }

    #[test]
    fn histogram_and_moments_in_the_file_agree() {
        let run = sample_run();
        let record = run.latency.primary();
        let h = record.histogram.decode().unwrap();
        assert_eq!(h.len(), record.moments.n);
        // HdrHistogram reports bucket edges; the exact max lies within 0.1% of it.
        let hmax = h.max() as f64;
        assert!((hmax - record.moments.max_ns as f64).abs() / hmax < 0.001);
    }
}

mod bad_input {
    use std::collections::BTreeMap;

    use vload_schema::{
        CheckVerdict, ErrorKind, RunCheck, RunFile, SchemaError, StageRecord, UntilStable,
    };

    use super::golden::sample_run;

    fn golden() -> String {
        std::fs::read_to_string("tests/data/golden-run.json").unwrap()
    }

    #[test]
    fn truncated_json_is_a_json_error() {
        let text = golden();
        let err = RunFile::from_json(&text[..text.len() / 2]).unwrap_err();
        assert!(matches!(err, SchemaError::Json(_)), "{err}");
    }

    #[test]
    fn json_without_schema_version_is_not_a_run() {
        let err = RunFile::from_json(r#"{"requests": 5}"#).unwrap_err();
        assert!(matches!(err, SchemaError::NotARun), "{err}");
        let err = RunFile::from_json("[1, 2]").unwrap_err();
        assert!(matches!(err, SchemaError::NotARun), "{err}");
    }

    #[test]
    fn newer_schema_is_refused_with_upgrade_advice() {
        let text = golden().replacen("\"schema_version\": 1", "\"schema_version\": 7", 1);
        let err = RunFile::from_json(&text).unwrap_err();
        assert!(err.to_string().contains("upgrade vload"), "{err}");
    }

    /// #59: a stampede event's own ledger: every request sent ends answered, failed or
    /// unfinished, checked whenever a file is read.
    #[test]
    fn a_stampede_event_that_loses_a_request_is_refused() {
        let mut run = sample_run();
        let event = vload_schema::StampedeEvent {
            at_s: 2.0,
            sent: 200,
            spread_ns: 300_000,
            leaders: 1,
            waiters: 199,
            unclassified: 0,
            server_errors: 0,
            errors: 0,
            unfinished: 0,
            origin_fetches: Some(1),
        };
        run.stampede = Some(vload_schema::StampedeRecord {
            requests: 200,
            every_s: 10.0,
            on: "expiry".into(),
            target: "/stampede?cache=max-age=10".into(),
            events: vec![event.clone()],
            leaders: None,
            waiters: None,
        });
        let back = RunFile::from_json(&run.to_json()).unwrap();
        assert_eq!(back.stampede, run.stampede);
        run.stampede.as_mut().unwrap().events[0].waiters = 198;
        let err = RunFile::from_json(&run.to_json()).unwrap_err();
        assert!(err.to_string().contains("stampede.events[0]"), "{err}");
    }

    #[test]
    fn missing_field_names_the_field() {
        let text = golden().replacen("\"run_id\"", "\"run_ident\"", 1);
        let err = RunFile::from_json(&text).unwrap_err();
        assert!(err.to_string().contains("run_id"), "{err}");
    }

    /// A breakdown of one group holding the whole window, as vload writes it.
    fn whole_window(run: &RunFile, by: &str) -> vload_schema::Breakdown {
        let mut classes = vload_schema::StatusClasses::default();
        for (code, n) in &run.totals.status_codes {
            classes.count_n(*code, *n);
        }
        let c = &run.cache;
        vload_schema::Breakdown {
            by: by.into(),
            folded: 0,
            groups: vec![vload_schema::Group {
                name: "all".into(),
                requests: run.totals.completed,
                errors: run.totals.errors.values().map(|e| e.count).sum(),
                status_classes: classes,
                cache: vload_schema::GroupCache {
                    hit: c.hit,
                    miss: c.miss,
                    unknown: c.unknown,
                    ..Default::default()
                },
                bytes_in: run.totals.bytes_in,
                latency: run.latency.primary().clone(),
                first_byte: None,
                transfer: None,
            }],
        }
    }

    #[test]
    fn breakdowns_that_do_not_add_up_to_the_totals_are_refused() {
        let mut run = sample_run();
        run.breakdowns = vec![whole_window(&run, "status")];
        run.validate()
            .expect("one group holding everything adds up");
        type Spoil = fn(&mut vload_schema::Group);
        let broken: [(&str, Spoil); 4] = [
            ("requests", |g| g.requests -= 1),
            ("errors", |g| g.errors += 1),
            ("cache", |g| {
                g.cache.hit -= 1;
                g.cache.pass += 1;
            }),
            ("bytes", |g| g.bytes_in += 1),
        ];
        for (what, spoil) in broken {
            let mut bad = run.clone();
            spoil(&mut bad.breakdowns[0].groups[0]);
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains("breakdowns[0]"), "{what}: {err}");
        }
        // Two breakdowns by the same thing, or two groups of one name, are refused too.
        let mut twice = run.clone();
        twice.breakdowns.push(whole_window(&run, "status"));
        assert!(
            twice
                .validate()
                .unwrap_err()
                .to_string()
                .contains("a second breakdown")
        );
        let mut same = run.clone();
        let group = same.breakdowns[0].groups[0].clone();
        same.breakdowns[0].groups.push(vload_schema::Group {
            requests: 0,
            errors: 0,
            bytes_in: 0,
            status_classes: Default::default(),
            cache: Default::default(),
            ..group
        });
        assert!(
            same.validate()
                .unwrap_err()
                .to_string()
                .contains("a second group")
        );
    }

    #[test]
    fn stages_that_contradict_themselves_are_refused() {
        let mut run = sample_run();
        let stage = StageRecord {
            index: 0,
            warmup: false,
            start_s: 0.0,
            duration_s: 1.0,
            from_rate_per_s: 5.0,
            to_rate_per_s: 5.0,
            intended: 5,
            sent: 5,
            completed: 5,
            unsent: 0,
            unfinished: 0,
            late_sends: 0,
            status_codes: BTreeMap::from([(200, 4)]),
            errors: BTreeMap::from([(ErrorKind::RequestTimeout, 1)]),
            bytes_in: 44,
            bytes_out: 0,
            hits: 0,
            misses: 0,
            stale: 0,
            stale_ages: None,
            throughput_per_s: 5.0,
            response: run.latency.service.clone(),
            service: run.latency.service.clone(),
            client_health: None,
            server_cpu_s: None,
            steady: None,
            upper_bounds: Vec::new(),
            origin_state: None,
            origin_requests: None,
        };
        run.stages = vec![stage.clone()];
        let text = run.to_json();
        assert_eq!(RunFile::from_json(&text).unwrap().stages, run.stages);
        let refuse = |bad: StageRecord, field: &str| {
            let mut run = run.clone();
            run.stages = vec![bad];
            let err = RunFile::from_json(&run.to_json()).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        };
        refuse(
            StageRecord {
                errors: BTreeMap::from([(ErrorKind::Reset, 6)]),
                ..stage.clone()
            },
            "stages[0].errors",
        );
        refuse(
            StageRecord {
                start_s: -1.0,
                ..stage.clone()
            },
            "stages[0].start_s",
        );
    }

    /// See #30: run files whose parts contradicted each other (sent 0 with 99,565
    /// completed; intervals that no longer sum to the totals) were accepted. From schema v3
    /// on every request due ends in exactly one place, and reading refuses a file that
    /// says otherwise, naming the field.
    #[test]
    fn a_run_file_whose_ledger_does_not_balance_is_refused() {
        let run = sample_run();
        assert!(RunFile::from_json(&run.to_json()).is_ok());
        let refuse = |change: &dyn Fn(&mut RunFile), field: &str| {
            let mut bad = run.clone();
            change(&mut bad);
            let err = RunFile::from_json(&bad.to_json()).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        };
        refuse(&|r| r.totals.sent = 0, "totals.intended");
        refuse(
            &|r| {
                r.totals.intended = 6;
                r.totals.sent = 6;
            },
            "totals.sent",
        );
        refuse(
            &|r| {
                r.totals.unfinished = 1;
                r.totals.sent = 6;
                r.totals.intended = 6;
            },
            "intervals[].intended",
        );
        refuse(&|r| r.intervals[0].completed = 4, "intervals[].completed");
        refuse(
            &|r| r.intervals[0].status_classes.s5xx = 1,
            "intervals[].status",
        );
        refuse(&|r| r.totals.queue_timeouts = 2, "totals.queue_timeouts");
        // A warm-up interval is the warm-up's: not in the sum.
        let mut warm = run.clone();
        let mut extra = warm.intervals[0].clone();
        extra.warmup = true;
        warm.intervals.insert(0, extra);
        assert!(RunFile::from_json(&warm.to_json()).is_ok());
        // Files written before the ledger (schema v1, v2) are read as they were.
        let mut old = run.clone();
        old.schema_version = 2;
        old.totals.sent = 0;
        assert!(RunFile::from_json(&old.to_json()).is_ok());
    }

    /// A change that fell is negative, and so is the low end of its interval: such checks
    /// are read back; a p-value outside [0, 1] and an until-stable target of 0 are not.
    #[test]
    fn checks_round_trip_with_negative_changes_and_refuse_nonsense() {
        let mut run = sample_run();
        let check = RunCheck {
            name: "stationarity:throughput".into(),
            verdict: CheckVerdict::Fail,
            statistic: Some(-0.79),
            p_value: Some(0.001),
            interval: Some((-1.2, -0.4)),
            batch_s: Some(2.0),
            message: "not stationary: throughput fell 79%".into(),
        };
        run.checks = vec![check.clone()];
        run.until_stable = Some(UntilStable {
            target: 0.05,
            max_duration_s: 30.0,
            converged_after_s: Some(12.0),
            half_width: Some(0.04),
        });
        let back = RunFile::from_json(&run.to_json()).unwrap();
        assert_eq!(
            (back.checks, back.until_stable),
            (run.checks.clone(), run.until_stable)
        );
        let mut bad = run.clone();
        bad.checks[0].p_value = Some(2.0);
        let err = RunFile::from_json(&bad.to_json()).unwrap_err().to_string();
        assert!(
            err.contains("checks[0]") && err.contains("p-value"),
            "{err}"
        );
        let mut bad = run.clone();
        bad.until_stable.as_mut().unwrap().target = 0.0;
        let err = RunFile::from_json(&bad.to_json()).unwrap_err().to_string();
        assert!(err.contains("until_stable.target"), "{err}");
    }
}

/// #58: the seconds law. The sample run (5/s for 1 s) keeps it; a second holding the next
/// one's due requests (a freeze filed in the second it began) breaks it, and so does a
/// second inside the window holding too few.
#[test]
fn each_second_holds_its_own_due_requests_and_no_early_timeout() {
    let run = golden::sample_run();
    run.check_seconds().unwrap();
    // Two seconds at 5/s, the first holding both seconds' requests.
    let mut doubled = run.clone();
    doubled.plan.duration_s = Some(2.0);
    doubled.window.measured_s = 2.0;
    let mut second = doubled.intervals[0].clone();
    second.start_s = 1.0;
    doubled.intervals[0].intended = 10;
    second.intended = 0;
    second.errors.clear();
    doubled.intervals.push(second);
    let err = doubled.check_seconds().unwrap_err();
    assert!(
        err.contains("intervals[0]") && err.contains("10 requests due"),
        "{err}"
    );
    // The same counts, but each in its second: kept.
    doubled.intervals[0].intended = 5;
    doubled.intervals[1].intended = 5;
    doubled.check_seconds().unwrap();
    // A second too empty inside the window is as wrong as one too full.
    doubled.intervals[0].intended = 0;
    let err = doubled.check_seconds().unwrap_err();
    assert!(err.contains("0 requests due"), "{err}");
    // Poisson arrivals vary from second to second: only the timeouts are checked.
    let mut poisson = doubled.clone();
    poisson.plan.arrival = vload_schema::Arrival::Poisson;
    poisson.check_seconds().unwrap();
}

//! Integration tests of the analyzer on run files built here with known distributions.

mod util {
    use vload_schema::*;

    pub(crate) fn golden() -> RunFile {
        RunFile::from_json(include_str!("../../schema/tests/data/golden-run.json")).unwrap()
    }

    /// A deterministic stream of uniform numbers in [0, 1).
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// An open-loop run of `seconds` intervals, `per_second` requests each, latencies around
    /// `median_ns` with a long tail; `scale` multiplies every latency.
    pub(crate) fn synthetic(
        label: &str,
        seconds: u32,
        per_second: u64,
        median_ns: f64,
        seed: u64,
    ) -> RunFile {
        let mut rng = Rng(seed | 1);
        let mut run = golden();
        run.label = Some(label.to_owned());
        run.run_id = format!("{label}-{seed}");
        let settings = HistogramSettings::default();
        let (mut total, mut total_m) = (new_histogram(&settings), Moments::new());
        let template = run.intervals[0].clone();
        run.intervals.clear();
        for s in 0..seconds {
            let (mut h, mut m) = (new_histogram(&settings), Moments::new());
            for _ in 0..per_second {
                let u = rng.next();
                // Log-logistic-ish tail: median at median_ns, p99 about 10x.
                let v = (median_ns * (u / (1.0 - u)).powf(0.5)).max(1_000.0) as u64;
                h.record(v).unwrap();
                m.record(v);
            }
            total.add(&h).unwrap();
            total_m.merge(&m);
            let mut interval = template.clone();
            interval.start_s = f64::from(s);
            interval.intended = per_second;
            interval.sent = per_second;
            interval.completed = per_second;
            interval.status_classes = StatusClasses {
                s2xx: per_second,
                ..Default::default()
            };
            interval.errors.clear();
            interval.hits = per_second;
            interval.misses = 0;
            interval.latency = LatencyRecord {
                histogram: EncodedHistogram::encode(&h).unwrap(),
                moments: m,
            };
            run.intervals.push(interval);
        }
        let n = u64::from(seconds) * per_second;
        run.totals.intended = n;
        run.totals.sent = n;
        run.totals.completed = n;
        run.totals.status_codes = [(200, n)].into();
        run.totals.errors.clear();
        run.totals.bytes_in = 11 * n;
        run.cache = CacheCounts {
            hit: n,
            miss: 0,
            unknown: 0,
            by_source: CacheSources {
                x_varnish: n,
                ..Default::default()
            },
        };
        run.window = Window {
            warmup_s: 0.0,
            measured_s: f64::from(seconds),
            wait_s: 0.001,
            start_offset_s: None,
        };
        run.plan.duration_s = Some(f64::from(seconds));
        run.plan.rate_per_s = Some(per_second as f64);
        let record = LatencyRecord {
            histogram: EncodedHistogram::encode(&total).unwrap(),
            moments: total_m,
        };
        run.latency.response = Some(record.clone());
        run.latency.service = record;
        run
    }
}

mod merge {
    use vload_analyze::merge::{MergeError, check_plans, merge};

    use super::util::*;

    #[test]
    fn shards_merge_exactly() {
        let a = synthetic("x", 10, 2_000, 200_000.0, 1);
        let mut b = synthetic("x", 10, 3_000, 250_000.0, 2);
        b.environment.hostname = "loadgen-2".into();
        let runs = vec![
            ("a.json".to_owned(), a.clone()),
            ("b.json".to_owned(), b.clone()),
        ];
        check_plans(&runs).expect_err("rates differ");
        b.plan.rate_per_s = a.plan.rate_per_s;
        let runs = vec![
            ("a.json".to_owned(), a.clone()),
            ("b.json".to_owned(), b.clone()),
        ];
        check_plans(&runs).unwrap();
        let m = merge(&runs).unwrap();
        assert_eq!(m.totals.completed, a.totals.completed + b.totals.completed);
        assert_eq!(m.totals.status_codes[&200], 50_000);
        // The merged histogram is the histogram of the union.
        let response = |run: &vload_schema::RunFile| {
            run.latency
                .response
                .as_ref()
                .unwrap()
                .histogram
                .decode()
                .unwrap()
        };
        let mut union = response(&a);
        union.add(response(&b)).unwrap();
        let merged = response(&m);
        assert_eq!(merged, union);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(merged.value_at_quantile(q), union.value_at_quantile(q));
        }
        // Exact moments merge by Chan's formula.
        let (ma, mb) = (
            a.latency.response.unwrap().moments,
            b.latency.response.unwrap().moments,
        );
        let mm = m.latency.response.as_ref().unwrap().moments;
        assert_eq!(mm.n, ma.n + mb.n);
        assert_eq!(mm.sum_ns, ma.sum_ns + mb.sum_ns);
        // Both started at the same time: intervals line up second by second.
        assert_eq!(m.intervals.len(), 10);
        assert_eq!(m.intervals[3].completed, 5_000);
        assert_eq!(m.window.measured_s, 10.0);
        assert_eq!(m.environment.hostname, "loadgen-1,loadgen-2");
    }

    #[test]
    fn differing_plans_are_refused_naming_the_field_and_files() {
        let a = synthetic("x", 3, 100, 1e5, 1);
        let mut b = a.clone();
        b.plan.connections = 7;
        let err = check_plans(&[("a.json".into(), a), ("b.json".into(), b)]).unwrap_err();
        assert!(matches!(
            err,
            MergeError::PlansDiffer {
                field: "connections",
                ..
            }
        ));
        let text = err.to_string();
        assert!(
            text.contains("a.json") && text.contains("b.json") && text.contains("--force"),
            "{text}"
        );
    }
}

mod compare {
    use vload_analyze::compare::{Method, Metric, Severity, Verdict};

    use super::util::*;

    fn group(label: &str, runs: u64, median_ns: f64, seed: u64) -> Vec<vload_schema::RunFile> {
        (0..runs)
            .map(|i| {
                synthetic(
                    label,
                    6,
                    2_000,
                    median_ns * (1.0 + 0.01 * i as f64),
                    seed + i,
                )
            })
            .collect()
    }

    fn row(c: &vload_analyze::Comparison, metric: Metric) -> &vload_analyze::compare::Row {
        c.rows.iter().find(|r| r.metric == metric).unwrap()
    }

    #[test]
    fn five_against_five_finds_a_20_percent_drop() {
        let (a, b) = (
            group("x86_64", 5, 250_000.0, 10),
            group("aarch64", 5, 200_000.0, 20),
        );
        let c = vload_analyze::compare(("x86_64", &a), ("aarch64", &b)).unwrap();
        let p50 = row(&c, Metric::P50);
        assert_eq!(p50.method, Method::MannWhitney);
        assert_eq!(p50.verdict, Verdict::BFaster, "{p50:?}");
        assert!(p50.primary);
        assert!((p50.delta.unwrap() + 20.0).abs() < 5.0, "{p50:?}");
        assert!(c.notes.iter().any(|n| n.contains("96.8%")), "{:?}", c.notes);
        let text = vload_analyze::render::compare::text(&c);
        assert!(
            text.contains("B faster") && text.contains("p50 *"),
            "{text}"
        );
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    }

    #[test]
    fn aa_groups_show_no_difference() {
        let (a, b) = (group("a", 5, 250_000.0, 100), group("b", 5, 250_000.0, 200));
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        for r in &c.rows {
            assert!(
                !matches!(
                    r.verdict,
                    Verdict::AFaster | Verdict::BFaster | Verdict::ABetter | Verdict::BBetter
                ),
                "{:?}: {:?}",
                r.metric,
                r.verdict
            );
        }
    }

    #[test]
    fn one_against_one_gives_within_run_intervals_and_the_plain_sentence() {
        let a = vec![synthetic("before", 20, 1_000, 250_000.0, 1)];
        let b = vec![synthetic("after", 20, 1_000, 300_000.0, 2)];
        let c = vload_analyze::compare(("before", &a), ("after", &b)).unwrap();
        let p50 = row(&c, Metric::P50);
        assert_eq!(p50.verdict, Verdict::Inconclusive);
        let (lo, hi) = p50
            .a
            .within_run
            .expect("20 s is long enough for batch means");
        assert!(
            lo <= p50.a.median.unwrap() && p50.a.median.unwrap() <= hi,
            "{p50:?}"
        );
        assert!(row(&c, Metric::Mean).a.within_run.is_some());
        assert_eq!(
            row(&c, Metric::Throughput).verdict,
            Verdict::Equal,
            "same request counts"
        );
        assert!(c.notes.iter().any(|n| {
            n.contains("run-to-run variation (restarts, placement, thermal) is unmeasured")
        }));
        assert!(
            p50.regressed(10.0),
            "+20% with one run a side trips a 10% CI threshold"
        );
    }

    #[test]
    fn cache_and_workload_differences_are_loud() {
        let a = group("a", 4, 250_000.0, 1);
        let mut b = group("b", 4, 250_000.0, 9);
        for run in &mut b {
            run.cache.hit = run.totals.completed * 97 / 100;
            run.cache.miss = run.totals.completed - run.cache.hit;
            run.workload_hash = "different".into();
        }
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        let warnings: Vec<&str> = c
            .checks
            .iter()
            .filter(|k| k.severity == Severity::Warning)
            .map(|k| k.message.as_str())
            .collect();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("cache behaviour differs")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("workload differs")),
            "{warnings:?}"
        );
    }

    #[test]
    fn json_and_markdown_carry_every_row() {
        let (a, b) = (group("a", 4, 250_000.0, 1), group("b", 4, 260_000.0, 5));
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&vload_analyze::render::compare::json(&c)).unwrap();
        assert_eq!(json["schema_version"], vload_schema::SCHEMA_VERSION);
        assert_eq!(json["comparison"]["rows"].as_array().unwrap().len(), 8);
        let md = vload_analyze::render::compare::markdown(&c);
        // Header, separator and one line per metric.
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| ")).count(),
            10,
            "{md}"
        );
    }
}

mod order {
    use vload_analyze::compare::Severity;

    use super::util::*;

    fn at(mut run: vload_schema::RunFile, minute: u32, address: &str) -> vload_schema::RunFile {
        run.started_at = format!("2026-11-22T10:{minute:02}:00.000Z");
        run.plan.server_address = Some(address.to_owned());
        run
    }

    fn warnings(c: &vload_analyze::Comparison) -> Vec<String> {
        c.checks
            .iter()
            .filter(|k| k.severity == Severity::Warning)
            .map(|k| k.message.clone())
            .collect()
    }

    /// See #17, case 8: with every A run before every B run on a drifting machine, an A/A
    /// comparison said "B faster" with correct statistics.
    #[test]
    fn groups_that_do_not_interleave_in_time_are_flagged() {
        let a: Vec<_> = (0..4)
            .map(|i| at(synthetic("a", 4, 500, 2e5, i + 1), i as u32, "127.0.0.1:1"))
            .collect();
        let b: Vec<_> = (0..4)
            .map(|i| {
                at(
                    synthetic("b", 4, 500, 2e5, i + 9),
                    10 + i as u32,
                    "127.0.0.1:1",
                )
            })
            .collect();
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        let w = warnings(&c);
        assert!(
            w.iter()
                .any(|m| m.contains("not interleaved") && m.contains("alternate")),
            "{w:?}"
        );
        // Alternated: A at even minutes, B at odd ones.
        let a: Vec<_> = (0..4)
            .map(|i| {
                at(
                    synthetic("a", 4, 500, 2e5, i + 1),
                    2 * i as u32,
                    "127.0.0.1:1",
                )
            })
            .collect();
        let b: Vec<_> = (0..4)
            .map(|i| {
                at(
                    synthetic("b", 4, 500, 2e5, i + 9),
                    2 * i as u32 + 1,
                    "127.0.0.1:1",
                )
            })
            .collect();
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        assert!(
            !warnings(&c).iter().any(|m| m.contains("interleaved")),
            "{:?}",
            c.checks
        );
    }

    /// See #17, case 22: two servers are not two workloads.
    #[test]
    fn different_servers_are_a_note_not_a_different_workload() {
        let a = vec![at(synthetic("a", 4, 500, 2e5, 1), 0, "127.0.0.1:40001")];
        let b = vec![at(synthetic("b", 4, 500, 2e5, 2), 1, "10.0.0.2:6081")];
        let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
        assert!(
            !warnings(&c).iter().any(|m| m.contains("workload differs")),
            "{:?}",
            c.checks
        );
        assert!(
            c.checks
                .iter()
                .any(|k| k.severity == Severity::Note && k.message.contains("different servers")),
            "{:?}",
            c.checks
        );
    }
}

mod formats {
    use super::util::*;

    #[test]
    fn hgrm_is_hdrhistograms_percentile_distribution() {
        let run = synthetic("x", 5, 2_000, 200_000.0, 3);
        let text = vload_analyze::render::report::hgrm(&run).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        assert!(header.contains("Value") && header.contains("1/(1-Percentile)"));
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
            .collect();
        assert!(rows.len() > 20);
        assert!(
            rows.windows(2)
                .all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1] && w[0][2] <= w[1][2])
        );
        let last = rows.last().unwrap();
        assert_eq!(last.len(), 3, "the last line has no 1/(1-p)");
        assert_eq!(last[1], 1.0);
        assert_eq!(last[2], 10_000.0);
        assert!(
            text.contains("#[Mean") && text.contains("Total count    =        10000"),
            "{text}"
        );
    }

    #[test]
    fn wrk_layout_has_wrks_lines() {
        let run = synthetic("x", 5, 2_000, 200_000.0, 3);
        let text = vload_analyze::render::report::wrk(&run).unwrap();
        for needle in [
            "Running 5s test @",
            "Thread Stats",
            "Latency Distribution",
            "10000 requests in",
            "Requests/sec:",
            "Transfer/sec:",
        ] {
            assert!(text.contains(needle), "missing {needle}:\n{text}");
        }
    }

    #[test]
    fn empty_runs_render_without_nan() {
        let mut run = synthetic("x", 0, 0, 1.0, 3);
        run.window.measured_s = 0.0;
        let summary = vload_analyze::Summary::of(&run).unwrap();
        for text in [
            vload_analyze::render::text::render(&summary),
            vload_analyze::render::report::markdown(&summary),
            vload_analyze::render::report::json(&summary),
            vload_analyze::render::report::hgrm(&run).unwrap(),
            vload_analyze::render::report::wrk(&run).unwrap(),
        ] {
            assert!(
                !text.contains("NaN") && !text.to_lowercase().contains("inf "),
                "{text}"
            );
        }
    }

    /// See #17, case 5: the report printed service p99.9 519.57 ms against a max of
    /// 519.51 ms (the histogram's bucket top).
    #[test]
    fn quantiles_never_exceed_the_exact_max_nor_fall_under_the_min() {
        use vload_schema::{EncodedHistogram, HistogramSettings, LatencyRecord, Moments};
        let mut run = synthetic("x", 2, 1_000, 200_000.0, 3);
        let (mut h, mut m) = (
            vload_schema::new_histogram(&HistogramSettings::default()),
            Moments::new(),
        );
        for v in [519_000_000u64, 519_510_000] {
            for _ in 0..10_000 {
                h.record(v).unwrap();
                m.record(v);
            }
        }
        assert!(
            h.value_at_quantile(0.999) > 519_510_000,
            "the bucket top lies above the max"
        );
        let record = LatencyRecord {
            histogram: EncodedHistogram::encode(&h).unwrap(),
            moments: m,
        };
        run.latency.response = Some(record.clone());
        run.latency.service = record;
        let summary = vload_analyze::Summary::of(&run).unwrap();
        for (name, value) in &summary.latency.quantiles {
            let value = value.expect("enough samples");
            assert!(value <= 519_510_000, "{name} {value} above the max");
            assert!(value >= 519_000_000, "{name} {value} under the min");
        }
        let hgrm = vload_analyze::render::report::hgrm(&run).unwrap();
        let above = hgrm
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<f64>().ok())
            .any(|ms| ms > 519.510_000_1);
        assert!(!above, "{hgrm}");
        let p999 = vload_analyze::compare::Metric::P999
            .of(&run)
            .unwrap()
            .unwrap();
        assert!(p999 <= 519_510_000.0, "{p999}");
    }

    /// See #17, case 18: labels and server bytes printed raw could retitle the terminal.
    #[test]
    fn control_characters_from_files_and_servers_are_escaped() {
        let mut run = synthetic("x", 2, 1_000, 200_000.0, 3);
        run.label = Some("\u{1b}]0;pwned\u{7}".into());
        run.totals.errors.insert(
            vload_schema::ErrorKind::Protocol,
            vload_schema::ErrorCount {
                count: 0,
                sample: "bad bytes \u{1b}[2J\r\u{9b}1m".into(),
            },
        );
        let summary = vload_analyze::Summary::of(&run).unwrap();
        for text in [
            vload_analyze::render::text::render(&summary),
            vload_analyze::render::report::markdown(&summary),
        ] {
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(text.contains("\\u{1b}]0;pwned"), "{text}");
        }
        let other = synthetic("y", 2, 1_000, 200_000.0, 4);
        let c = vload_analyze::compare(("\u{1b}[31mA", &[run.clone()]), ("B", &[other])).unwrap();
        let text = vload_analyze::render::compare::text(&c);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }
}

mod plot {
    use super::util::*;

    #[test]
    fn plot_is_well_formed_and_has_every_runs_series() {
        let runs = vec![
            (
                "x86_64".to_owned(),
                synthetic("x86_64", 8, 2_000, 250_000.0, 1),
            ),
            (
                "aarch64 <b&c>".to_owned(),
                synthetic("aarch64", 8, 2_000, 200_000.0, 2),
            ),
        ];
        let page = vload_analyze::render::plot::html(&runs).unwrap();
        assert!(
            !page.contains("<script")
                && !page.contains("src=\"http")
                && !page.contains("href=\"http"),
            "no network fetches"
        );
        let xml = page.trim_start_matches("<!DOCTYPE html>\n");
        let doc = roxmltree::Document::parse(xml).expect("the page is well-formed XML");
        let series: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.attribute("data-series"))
            .collect();
        for name in [
            "x86_64 p50",
            "x86_64 p99",
            "x86_64 max",
            "x86_64",
            "aarch64 <b&c> p50",
            "aarch64 <b&c>",
        ] {
            assert!(series.contains(&name), "missing series {name}: {series:?}");
        }
        assert_eq!(
            doc.descendants().filter(|n| n.has_tag_name("h2")).count(),
            4,
            "four charts"
        );
        let polylines = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .count();
        assert!(polylines >= 2 * 3 + 2 * 3, "{polylines}");
    }

    /// See #17, case 16: a run with no successful response made plot take log10(0) and
    /// allocate 17 GiB of ticks.
    #[test]
    fn runs_with_no_success_no_request_or_one_request_plot() {
        let empty = synthetic("empty", 0, 0, 1.0, 3);
        let silent = synthetic("silent", 3, 0, 1.0, 3);
        let one = synthetic("one", 1, 1, 250_000.0, 3);
        let mut label = synthetic("x", 2, 100, 250_000.0, 3);
        label.label = Some("\u{1b}]0;title\u{7}".into());
        for runs in [
            vec![("empty".to_owned(), empty.clone())],
            vec![("silent".to_owned(), silent)],
            vec![("one".to_owned(), one), ("empty".to_owned(), empty)],
            vec![("\u{1b}[2J".to_owned(), label)],
        ] {
            let page = vload_analyze::render::plot::html(&runs).unwrap();
            let xml = page.trim_start_matches("<!DOCTYPE html>\n");
            roxmltree::Document::parse(xml).expect("the page is well-formed XML");
            assert!(page.len() < 1_000_000, "{} bytes", page.len());
        }
    }
}

mod server {
    use vload_analyze::compare::{Metric, Verdict};
    use vload_schema::{ProcessRecord, RunFile, ServerRecord, VarnishRecord};

    use super::util::*;

    /// A run whose Varnish counted `hits` of `requests` and whose server used `cpu_s`.
    fn with_server(mut run: RunFile, requests: u64, hits: u64, cpu_s: f64) -> RunFile {
        let counters = [
            ("client_req", requests),
            ("cache_hit", hits),
            ("cache_miss", requests - hits),
            ("threads_limited", 0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let per_interval = cpu_s / run.intervals.len() as f64;
        for interval in &mut run.intervals {
            interval.server_cpu_s =
                Some(per_interval * (0.98 + 0.04 * interval.start_s.sin().abs()));
        }
        run.server = Some(ServerRecord {
            varnish: Some(VarnishRecord {
                instance: "v".into(),
                covers: "measured".into(),
                counters,
                gauges: Default::default(),
                layout: "counters".into(),
            }),
            process: Some(ProcessRecord {
                pid: 1,
                name: "varnishd".into(),
                processes: 2,
                user_s: cpu_s * 0.7,
                system_s: cpu_s * 0.3,
            }),
        });
        run
    }

    #[test]
    fn agreeing_counts_are_quiet_and_disagreements_are_named() {
        let mut run = synthetic("x", 6, 2_000, 200_000.0, 3);
        run.plan.connections = 50;
        let n = run.totals.completed;
        let summary = vload_analyze::Summary::of(&with_server(run.clone(), n, n, 1.2)).unwrap();
        let server = summary.server.as_ref().unwrap();
        assert!(server.findings.is_empty(), "{:?}", server.findings);
        assert_eq!(server.cpu_per_request_ns, Some(1.2e9 / n as f64));
        let text = vload_analyze::render::text::render(&summary);
        assert!(
            text.contains("Server CPU") && text.contains("100 µs"),
            "{text}"
        );

        // Varnish saw twice the requests and called a tenth of them misses.
        let mut other = with_server(run, 2 * n, 2 * n * 9 / 10, 1.2);
        other
            .server
            .as_mut()
            .unwrap()
            .varnish
            .as_mut()
            .unwrap()
            .counters
            .insert("threads_limited".into(), 7);
        let summary = vload_analyze::Summary::of(&other).unwrap();
        let findings = &summary.server.as_ref().unwrap().findings;
        assert_eq!(findings.len(), 3, "{findings:?}");
        assert!(findings[0].contains("another client"), "{findings:?}");
        assert!(findings[1].contains("hit ratio disagrees"), "{findings:?}");
        assert!(findings[2].contains("threads_limited 7"), "{findings:?}");
        assert!(vload_analyze::render::text::render(&summary).contains("! hit ratio disagrees"));
        let markdown = vload_analyze::render::report::markdown(&summary);
        assert!(
            markdown.contains("varnish cache_hit (measured)"),
            "{markdown}"
        );
        assert!(markdown.contains("server CPU per request"), "{markdown}");
    }

    #[test]
    fn server_cpu_per_request_is_compared_when_watched() {
        let runs = |label: &str, cpu: f64, seed: u64| -> Vec<RunFile> {
            (0..5)
                .map(|i| {
                    let run = synthetic(label, 6, 2_000, 200_000.0, seed + i);
                    let n = run.totals.completed;
                    with_server(run, n, n, cpu * (1.0 + 0.01 * i as f64))
                })
                .collect()
        };
        let (naive, split) = (runs("naive", 2.0, 10), runs("split", 1.0, 20));
        let c = vload_analyze::compare::compare(("naive", &naive), ("split", &split)).unwrap();
        let row = c
            .rows
            .iter()
            .find(|r| r.metric == Metric::ServerCpu)
            .unwrap();
        assert_eq!(row.verdict, Verdict::BBetter, "{row:?}");
        assert!((row.delta.unwrap() + 50.0).abs() < 2.0, "{row:?}");
        // Without --watch-pid on any run, no row at all.
        let plain = |label: &str| vec![synthetic(label, 6, 2_000, 200_000.0, 1)];
        let c = vload_analyze::compare::compare(("a", &plain("a")), ("b", &plain("b"))).unwrap();
        assert!(c.rows.iter().all(|r| r.metric != Metric::ServerCpu));
    }
}

use super::util::*;

#[test]
fn hgrm_is_hdrhistograms_percentile_distribution() {
    let run = synthetic("x", 5, 2_000, 200_000.0, 3);
    let text = vload_analyze::render::report::hgrm::render(&run).unwrap();
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
    // Which latency it carries, as a comment line like the footer's.
    assert!(
        text.lines()
            .any(|l| l == "#[Latency = response time from the intended send, open loop (free of coordinated omission)]"),
        "{text}"
    );
}

#[test]
fn wrk_layout_has_wrks_lines() {
    let run = synthetic("x", 5, 2_000, 200_000.0, 3);
    let text = vload_analyze::render::report::wrk::render(&run).unwrap();
    for needle in [
        "Running 5s test @",
        "Thread Stats",
        "Latency Distribution",
        "10000 requests in",
        "Requests/sec:",
        "Transfer/sec:",
        "Latency is response time from the intended send",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    // #48: Transfer/sec counts what wrk counts, heads included, when the client counted it;
    // a file that knows only the bodies says so.
    let mut run = run;
    run.totals.wire_bytes_in = None;
    let text = vload_analyze::render::report::wrk::render(&run).unwrap();
    assert!(text.contains("(bodies only"), "{text}");
    run.totals.wire_bytes_in = Some(run.totals.bytes_in + 1_000_000 * 5);
    let text = vload_analyze::render::report::wrk::render(&run).unwrap();
    assert!(!text.contains("(bodies only"), "{text}");
    let expected = format!("Transfer/sec: {:>10}", "");
    assert!(text.contains(expected.trim_end()), "{text}");
    // The connections opened, not an open loop's cap of 10,000.
    run.totals.connections_opened = 7;
    let text = vload_analyze::render::report::wrk::render(&run).unwrap();
    assert!(text.contains(" threads and 7 connections"), "{text}");
}

#[test]
fn empty_runs_render_without_nan() {
    let mut run = synthetic("x", 0, 0, 1.0, 3);
    run.window.measured_s = 0.0;
    let summary = vload_analyze::Summary::of(&run).unwrap();
    for text in [
        vload_analyze::render::report::text::render(&summary),
        vload_analyze::render::report::markdown::render(&summary),
        vload_analyze::render::report::json::render(&summary),
        vload_analyze::render::report::hgrm::render(&run).unwrap(),
        vload_analyze::render::report::wrk::render(&run).unwrap(),
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
    let hgrm = vload_analyze::render::report::hgrm::render(&run).unwrap();
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
        vload_analyze::render::report::text::render(&summary),
        vload_analyze::render::report::markdown::render(&summary),
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

#[test]
fn every_report_carries_the_runs_checks_of_itself() {
    let run = super::util::synthetic("x", 12, 2_000, 200_000.0, 5);
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let names: Vec<&str> = summary.checks.iter().map(|c| c.name.as_str()).collect();
    for name in [
        "convergence:p50",
        "convergence:throughput",
        "stationarity:p50",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(
        text.contains("Checks") && text.contains("p50 stationary"),
        "{text}"
    );
    let markdown = vload_analyze::render::report::markdown::render(&summary);
    assert!(markdown.contains("### Checks"), "{markdown}");
    let json = vload_analyze::render::report::json::render(&summary);
    assert!(json.contains("\"convergence:p99\""), "{json}");
}

/// A closed loop opens its connections in the warm-up: the measured window's bare 0 read as
/// if vload had opened none, beside Varnish's counters.
#[test]
fn connections_opened_in_the_warmup_are_shown_beside_the_window() {
    let mut run = golden();
    run.intervals[0].warmup = true;
    run.intervals[0].connections_opened = 50;
    for interval in &mut run.intervals[1..] {
        interval.connections_opened = 0;
    }
    run.totals.connections_opened = 0;
    let summary = vload_analyze::Summary::of(&run).unwrap();
    let text = vload_analyze::render::report::text::render(&summary);
    assert!(text.contains("0 (+50 in the warm-up)"), "{text}");
}

/// #58: `--brief`'s total is the requests due, as the full report's ledger counts them (a
/// request that never ended is still one), and its latencies carry p95 as vegeta prints it.
#[test]
fn brief_total_is_the_requests_due_and_it_shows_p95() {
    let mut run = synthetic("x", 5, 1_000, 200_000.0, 3);
    // 223 of the 5,000 due never ended: the ledger holds them as unfinished.
    run.totals.intended += 223;
    run.totals.sent += 223;
    run.totals.unfinished += 223;
    let s = vload_analyze::Summary::of(&run).unwrap();
    let text = vload_analyze::render::report::brief::render(&s);
    let first = text.lines().next().unwrap();
    assert!(first.contains("5,223, "), "{first}");
    let p95 = vload_analyze::units::duration_ns(s.latency.quantile("p95").unwrap() as f64);
    let latencies = text.lines().find(|l| l.starts_with("Latencies")).unwrap();
    assert!(
        latencies.contains("[min, mean, 50, 90, 95, 99, max]"),
        "{latencies}"
    );
    let values = latencies.split("]").nth(1).unwrap();
    assert_eq!(
        values.split(", ").nth(4).map(str::trim),
        Some(p95.as_str()),
        "{latencies}"
    );
}

/// #58: misses whose `Server-Timing` claimed more than their own wait are named in the
/// report, with what they may mean.
#[test]
fn origin_times_beyond_the_wait_are_named() {
    let mut run = synthetic("x", 5, 1_000, 200_000.0, 3);
    run.latency.first_byte = Some(run.latency.service.clone());
    run.latency.transfer = Some(run.latency.service.clone());
    let s = vload_analyze::Summary::of(&run).unwrap();
    let text = vload_analyze::render::report::text::render(&s);
    assert!(!text.contains("lying origin"), "{text}");
    run.totals.server_timing_beyond_wait = 1_234;
    let s = vload_analyze::Summary::of(&run).unwrap();
    let text = vload_analyze::render::report::text::render(&s);
    let line = text
        .lines()
        .find(|l| l.contains("[left out]"))
        .expect(&text);
    assert!(
        line.contains("1,234 misses") && line.contains("lying origin"),
        "{line}"
    );
}

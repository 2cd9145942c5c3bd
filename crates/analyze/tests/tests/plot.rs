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
        !page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"),
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
    let headings: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("h2"))
        .map(|n| n.text().unwrap_or_default().to_owned())
        .collect();
    // Latency, throughput, a heatmap for each run, the percentile curve; no errors chart,
    // since neither run had an error.
    assert_eq!(headings.len(), 5, "{headings:?}");
    assert!(
        !headings.iter().any(|h| h.starts_with("Errors")),
        "{headings:?}"
    );
    for run in ["x86_64", "aarch64 <b&c>"] {
        assert!(
            headings.iter().any(|h| h
                == &format!("Latency heatmap of {run}: response time from the intended send, each second's requests by latency")),
            "a heatmap headed by {run}: {headings:?}"
        );
    }
    let polylines = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .count();
    assert!(polylines >= 2 * 3 + 2, "{polylines}");
    // The heatmap's cells: each second's shares add up to the whole second.
    let cells: Vec<f64> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell"))
        .map(|n| {
            let share = n.children().find(|c| c.has_tag_name("title")).unwrap();
            share
                .text()
                .unwrap()
                .trim_end_matches('%')
                .parse::<f64>()
                .unwrap()
        })
        .collect();
    assert!(cells.len() > 2 * 8 * 3, "{} cells", cells.len());
    let total: f64 = cells.iter().sum();
    assert!(
        (total - 2.0 * 8.0 * 100.0).abs() < 2.0 * 8.0 * 0.5,
        "every second's cells add to 100%: {total}"
    );
}

/// Headings and the latency kind come from each run: a closed-loop run beside an open-loop
/// one is not labelled as the first one is. Errors get their chart when a run had some.
#[test]
fn each_run_names_its_own_latency_and_errors_get_a_chart_when_there_are_some() {
    let open = synthetic("open", 6, 500, 250_000.0, 1);
    let mut closed = synthetic("closed", 6, 500, 200_000.0, 2);
    closed.plan.mode = vload_schema::Mode::Closed;
    closed.latency.primary = vload_schema::LatencyKind::Service;
    closed.intervals[2]
        .errors
        .insert(vload_schema::ErrorKind::Reset, 5);
    let runs = vec![("open".to_owned(), open), ("closed".to_owned(), closed)];
    let page = vload_analyze::render::plot::html(&runs).unwrap();
    for heading in [
        "Latency heatmap of open: response time from the intended send",
        "Latency heatmap of closed: service time (closed loop)",
        "Latency over time: p50, p99 (dashed), max (dotted), each run&#39;s own latency, which differ",
        "Errors over time",
    ] {
        let heading = heading.replace("&#39;", "'");
        assert!(page.contains(&heading), "{heading}");
    }
    assert!(
        page.contains("<td>service time</td>") && page.contains("<td>response time</td>"),
        "the table names each run's latency"
    );
    assert!(page.contains("white-space: nowrap"), "cells do not wrap");
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

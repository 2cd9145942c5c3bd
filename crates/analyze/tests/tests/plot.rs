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

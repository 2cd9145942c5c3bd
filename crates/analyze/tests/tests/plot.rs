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
    // Latency, throughput, a heatmap for each run, the hit ratio (the synthetic runs'
    // responses say hit or miss), the percentile curve; no errors chart, since neither run
    // had an error, and no server CPU, since neither watched one.
    assert_eq!(headings.len(), 6, "{headings:?}");
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

/// See #35: docs/varnish.md's 5+5 recipe plotted as ten runs gave a title of ten names,
/// colours that wrapped and 30 legend entries. Runs whose labels repeat are grouped: one
/// colour a label, each run thin around the label's median, a legend of labels, and each
/// run's value by group.
#[test]
fn runs_grouped_by_label_get_a_colour_each_a_median_and_a_compare_view() {
    let mut runs = Vec::new();
    for i in 0..5 {
        for (label, base) in [("x86_64", 250_000.0), ("aarch64", 200_000.0)] {
            let run = synthetic(label, 6, 500, base * (1.0 + 0.02 * i as f64), 10 + i);
            runs.push((format!("{label}-{i}.json"), run));
        }
    }
    let page = vload_analyze::render::plot::html(&runs).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("well-formed");
    let h1 = doc.descendants().find(|n| n.has_tag_name("h1")).unwrap();
    assert_eq!(
        h1.text(),
        Some("vload: x86_64 (5 runs) vs aarch64 (5 runs)")
    );
    // Every run's series is there, thin, in its group.
    for (name, run) in &runs {
        let label = run.label.as_deref().unwrap();
        let line = doc
            .descendants()
            .find(|n| n.attribute("data-series") == Some(&format!("{name} p50")))
            .unwrap_or_else(|| panic!("{name} p50"));
        assert_eq!(line.attribute("data-group"), Some(label));
        assert_eq!(line.attribute("class"), Some("series thin"));
    }
    // Each label's median, thick.
    for label in ["x86_64", "aarch64"] {
        let median = doc
            .descendants()
            .find(|n| n.attribute("data-series") == Some(&format!("{label} p50")))
            .unwrap_or_else(|| panic!("{label} p50"));
        assert_eq!(median.attribute("class"), Some("series"));
    }
    // Two colours among the lines, whatever the count of runs.
    let mut colours: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series thin"))
        .filter_map(|n| n.attribute("stroke"))
        .collect();
    colours.sort_unstable();
    colours.dedup();
    assert_eq!(colours.len(), 2, "{colours:?}");
    // The latency legend names labels, not runs.
    let legend = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("legend"))
        .unwrap();
    let entries: Vec<String> = legend
        .children()
        .filter(|n| n.has_tag_name("span"))
        .map(|n| n.descendants().filter_map(|t| t.text()).collect())
        .collect();
    assert!(entries.iter().all(|e| !e.contains(".json")), "{entries:?}");
    assert!(entries.len() <= 2 * 3 + 1, "{entries:?}");
    // The compare view: five dots a label, and a median bar, in each of its charts (p50,
    // p99, throughput, and the hit ratio, as these runs classified their responses).
    let dots = |label: &str| {
        doc.descendants()
            .filter(|n| {
                n.attribute("class") == Some("run") && n.attribute("data-group") == Some(label)
            })
            .count()
    };
    assert_eq!(dots("x86_64"), 4 * 5);
    assert_eq!(dots("aarch64"), 4 * 5);
    let medians = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("median"))
        .count();
    assert_eq!(medians, 4 * 2);
}

/// See #35: a constant-rate run drew no line for the rate asked and no warm-up; a plan with
/// a ramp drew the ramp as a knee point at its mean rate; the latency axis's title was drawn
/// over its tick labels.
#[test]
fn the_rate_asked_the_warm_up_and_no_knee_for_a_ramp() {
    let mut run = synthetic("ramp", 8, 500, 250_000.0, 4);
    run.intervals[0].warmup = true;
    run.intervals[1].warmup = true;
    // Two stages: a ramp from 100/s to 500/s, then 500/s held.
    let mut ramp = vload_analyze::sweep::step_record(&run, 0, 2.0, &[]);
    ramp.from_rate_per_s = 100.0;
    ramp.to_rate_per_s = 500.0;
    let mut held = vload_analyze::sweep::step_record(&run, 1, 5.0, &[]);
    held.from_rate_per_s = 500.0;
    held.to_rate_per_s = 500.0;
    run.stages = vec![ramp, held];
    let page = vload_analyze::render::plot::html(&[("ramp".to_owned(), run)]).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("well-formed");
    assert!(
        doc.descendants()
            .any(|n| n.attribute("data-series") == Some("ramp asked")),
        "the rate asked, beside the rate achieved"
    );
    let band = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("band"))
        .expect("the warm-up shaded");
    assert_eq!(
        band.children()
            .find(|c| c.has_tag_name("title"))
            .unwrap()
            .text(),
        Some("warm-up")
    );
    assert!(
        !page.contains("Latency against"),
        "one constant stage and no sweep: no knee"
    );
    // Each y-axis title sits left of its widest tick label (about 6.4 px a character).
    for svg in doc
        .descendants()
        .filter(|n| n.has_tag_name("svg") && n.attribute("role").is_some())
    {
        let widest = svg
            .descendants()
            .filter(|n| n.attribute("text-anchor") == Some("end"))
            .filter_map(|n| n.text())
            .map(|t| t.chars().count())
            .max()
            .unwrap_or(0) as f64;
        let Some(title) = svg.descendants().find(|n| {
            n.attribute("transform")
                .is_some_and(|t| t.contains("rotate(-90)"))
        }) else {
            continue;
        };
        let t = title.attribute("transform").unwrap();
        let x: f64 = t["translate(".len()..t.find(',').unwrap()].parse().unwrap();
        assert!(
            -x >= 8.0 + widest * 6.4 || -x >= 80.0,
            "the axis title at {x} overlaps ticks {widest} characters wide"
        );
    }
}

/// A cache's hit ratio and a watched server's CPU get charts of their own over time, a line
/// a run, grouped by label like the rest; runs without them get none.
#[test]
fn the_servers_side_is_drawn_over_time_when_a_run_has_it() {
    let with_server = |label: &str, seed: u64, ratio: f64, cpu: f64| {
        let mut run = synthetic(label, 8, 2_000, 250_000.0, seed);
        for interval in &mut run.intervals {
            let n = interval.completed;
            interval.hits = (n as f64 * ratio) as u64;
            interval.misses = n - interval.hits;
            interval.server_cpu_s = Some(cpu * interval.duration_s);
        }
        run.cache.hit = run.intervals.iter().map(|i| i.hits).sum();
        run.cache.miss = run.intervals.iter().map(|i| i.misses).sum();
        run
    };
    let runs: Vec<(String, vload_schema::RunFile)> = [
        ("small-1", "small", 1, 0.6, 0.9),
        ("small-2", "small", 2, 0.62, 0.95),
        ("large-1", "large", 3, 0.9, 0.5),
        ("large-2", "large", 4, 0.91, 0.55),
    ]
    .into_iter()
    .map(|(name, label, seed, ratio, cpu)| (name.to_owned(), with_server(label, seed, ratio, cpu)))
    .collect();
    let page = vload_analyze::render::plot::html(&runs).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("the page is well-formed XML");
    let headings: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("h2"))
        .map(|n| n.text().unwrap_or_default().to_owned())
        .collect();
    for title in [
        "Hit ratio over time",
        "Server CPU over time",
        "Server CPU per request",
        // #48: beside each run's p50, p99 and throughput, the hit ratio that decides a cache
        // comparison (and the server's CPU a request, for runs that watched it).
        "Each run's hit ratio by group",
    ] {
        assert!(
            headings.iter().any(|h| h.starts_with(title)),
            "{title}: {headings:?}"
        );
    }
    // Each label's median and each run thin around it, in every chart of the server.
    let series: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    for name in ["small", "large", "small-1", "large-2"] {
        assert!(series.contains(&name), "{name}: {series:?}");
    }
    let mut run = synthetic("a", 8, 2_000, 250_000.0, 1);
    for interval in &mut run.intervals {
        (interval.hits, interval.misses) = (0, 0);
    }
    let plain = vec![("a".to_owned(), run)];
    let page = vload_analyze::render::plot::html(&plain).unwrap();
    assert!(!page.contains("Hit ratio over time") && !page.contains("Server CPU"));
}

/// #48: a stepped plan's knee put the throughput achieved on x, so at overload (the server
/// doing less than asked) its line folded back on itself, unlabelled. The rate asked is x,
/// and a stage that fell behind is marked, saying both rates.
#[test]
fn a_stepped_plans_knee_goes_by_the_rate_asked_and_marks_a_stage_that_fell_behind() {
    let mut run = synthetic("steps", 8, 500, 250_000.0, 4);
    let mut stages = Vec::new();
    for (i, (asked, achieved)) in [(500.0, 500.0), (1_000.0, 990.0), (2_000.0, 800.0)]
        .into_iter()
        .enumerate()
    {
        let mut stage = vload_analyze::sweep::step_record(&run, i as u32, 2.0 * i as f64, &[]);
        (stage.from_rate_per_s, stage.to_rate_per_s) = (asked, asked);
        stage.throughput_per_s = achieved;
        stages.push(stage);
    }
    run.stages = stages;
    let page = vload_analyze::render::plot::html(&[("steps".to_owned(), run)]).unwrap();
    let xml = page.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(xml).expect("well-formed");
    let knee = doc
        .descendants()
        .find(|n| {
            n.attribute("data-series") == Some("steps p50")
                && n.parent()
                    .and_then(|g| g.parent())
                    .and_then(|svg| svg.attribute("aria-label"))
                    .is_some_and(|t| t.starts_with("Latency against the rate asked"))
        })
        .expect("the knee's p50 line, against the rate asked");
    let xs: Vec<f64> = knee
        .attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        xs.len() == 3 && xs.windows(2).all(|w| w[0] < w[1]),
        "{xs:?}"
    );
    let behind: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("mark fell behind"))
        .filter_map(|n| n.children().find(|c| c.has_tag_name("title")))
        .filter_map(|t| t.text().map(str::to_owned))
        .collect();
    assert_eq!(behind, ["steps: asked 2,000/s, achieved 800/s: overload"]);
}

/// #59: an origin plan's phases are shaded and named over time, and stale answers get a
/// chart of their own when there are some.
#[test]
fn an_outage_is_shaded_and_stale_answers_are_charted() {
    let mut run = synthetic("grace", 10, 1_000, 200_000.0, 1);
    let base = vload_analyze::sweep::step_record(&run, 0, 0.0, &[]);
    let stage = |start_s: f64, state: &str| vload_schema::StageRecord {
        start_s,
        duration_s: 2.0,
        origin_state: Some(state.to_owned()),
        ..base.clone()
    };
    run.stages = vec![stage(0.0, "up"), stage(4.0, "refuse"), stage(6.0, "up")];
    let page = vload_analyze::render::plot::html(&[("grace".to_owned(), run.clone())]).unwrap();
    assert!(page.contains("origin refuse"), "the outage is named");
    assert!(!page.contains("origin up"), "only what is not up is shaded");
    assert!(!page.contains("Stale answers"), "no stale answer, no chart");
    for i in run.intervals.iter_mut() {
        i.hits = i.hits.max(10);
        i.stale = i.hits / 2;
    }
    let page = vload_analyze::render::plot::html(&[("grace".to_owned(), run)]).unwrap();
    assert!(
        page.contains("Stale answers over time"),
        "a chart of stale answers"
    );
}

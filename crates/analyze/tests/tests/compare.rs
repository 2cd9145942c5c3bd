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
    assert!((p50.coverage.unwrap() - 0.968).abs() < 5e-4, "{p50:?}");
    let text = vload_analyze::render::compare::text(&c);
    assert!(
        text.contains("B faster") && text.contains("p50 *"),
        "{text}"
    );
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    // The shift is named, the medians' own difference stands beside it, the interval's
    // header gives its true coverage, and every verdict word shown is explained.
    let header = text.lines().find(|l| l.starts_with("metric")).unwrap();
    for column in ["B vs A (medians)", "B vs A (HL shift)", "96.8% CI"] {
        assert!(header.contains(column), "{column} in {header}");
    }
    assert!(!header.contains(" 95% CI"), "{header}");
    assert!(
        text.contains("HL shift: the Hodges-Lehmann shift"),
        "{text}"
    );
    assert!(text.contains("its interval covers 96.8%"), "{text}");
    assert!(
        text.contains("A/B faster, A/B better: significant"),
        "{text}"
    );
    let (medians, shift) = (p50.medians_delta.unwrap(), p50.delta.unwrap());
    assert!(medians != shift, "two estimates: {medians} and {shift}");
    for verdict in c.rows.iter().map(|r| r.verdict) {
        let word = match verdict {
            Verdict::NoDifference => "~: ",
            Verdict::SmallButReal => "small but real: ",
            Verdict::Inconclusive => "inconclusive: ",
            Verdict::Equivalent { .. } => "equivalent (±M): ",
            _ => continue,
        };
        assert!(text.contains(word), "{word} explained: {text}");
    }
    // Markdown: a table a pull request renders, the legend as a list.
    let md = vload_analyze::render::compare::markdown(&c);
    assert!(md.contains("| metric |") && md.contains("| --- |"), "{md}");
    assert!(md.contains("\n- HL shift: "), "{md}");
    assert!(
        md.contains("\n- \\* primary metric"),
        "not a nested list: {md}"
    );
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
        n.contains("1 against 1 cannot decide")
            && n.contains("how much a re-run moves")
            && n.contains("4 runs a side")
    }));
    // Too short for a within-run interval: the cell says none, a line says why.
    let a = vec![synthetic("before", 2, 1_000, 250_000.0, 1)];
    let b = vec![synthetic("after", 2, 1_000, 300_000.0, 2)];
    let c2 = vload_analyze::compare(("before", &a), ("after", &b)).unwrap();
    let short = row(&c2, Metric::P50);
    assert_eq!(
        short.a.within_run_missing.as_deref(),
        Some("2 s measured, 5 needed")
    );
    let text = vload_analyze::render::compare::text(&c2);
    assert!(
        text.contains("[none]")
            && text.contains(
                "no within-run interval (A: 2 s measured, 5 needed; B: 2 s measured, 5 needed)"
            ),
        "{text}"
    );
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

/// #59: compare says which cache spared the origin in a stampede (origin fetches over the
/// stampede's requests, lower is better) and how long its waiters waited.
#[test]
fn compare_rows_read_a_stampede() {
    use vload_schema::{EncodedHistogram, HistogramSettings, LatencyRecord, Moments, RunFile};
    let stamped = |fetches: u64, wait_ns: u64, seed: u64| {
        let mut run = synthetic("x", 5, 1_000, 200_000.0, seed);
        let mut h = vload_schema::new_histogram(&HistogramSettings::default());
        let mut m = Moments::new();
        for i in 0..597 {
            let v = wait_ns + i * 1_000;
            h.record(v).unwrap();
            m.record(v);
        }
        let event = |at_s: f64| vload_schema::StampedeEvent {
            at_s,
            sent: 200,
            spread_ns: 500_000,
            leaders: fetches,
            waiters: 200 - fetches,
            unclassified: 0,
            server_errors: 0,
            errors: 0,
            unfinished: 0,
            origin_fetches: Some(fetches),
        };
        run.stampede = Some(vload_schema::StampedeRecord {
            requests: 200,
            every_s: 1.0,
            on: "purge".into(),
            target: "/stampede?cache=max-age=1".into(),
            events: vec![event(1.0), event(2.0), event(3.0)],
            leaders: None,
            waiters: Some(LatencyRecord {
                histogram: EncodedHistogram::encode(&h).unwrap(),
                moments: m,
            }),
        });
        run
    };
    let coalesced: Vec<RunFile> = (1..=3).map(|s| stamped(1, 50_000_000, s)).collect();
    let passed: Vec<RunFile> = (4..=6).map(|s| stamped(150, 60_000_000, s)).collect();
    let c = vload_analyze::compare(("coalesced", &coalesced), ("passed", &passed)).unwrap();
    let row = |m: vload_analyze::Metric| c.rows.iter().find(|r| r.metric == m).unwrap();
    let share = row(vload_analyze::Metric::StampedeOriginShare);
    assert_eq!(
        share.verdict,
        vload_analyze::compare::Verdict::ABetter,
        "{share:?}"
    );
    let wait = row(vload_analyze::Metric::StampedeWaitP50);
    assert_eq!(
        wait.verdict,
        vload_analyze::compare::Verdict::AFaster,
        "{wait:?}"
    );
    // Runs without a stampede have neither row.
    let plain: Vec<RunFile> = (7..=9)
        .map(|s| synthetic("y", 5, 1_000, 200_000.0, s))
        .collect();
    let c = vload_analyze::compare(("a", &plain), ("b", &plain)).unwrap();
    assert!(
        c.rows
            .iter()
            .all(|r| r.metric != vload_analyze::Metric::StampedeWaitP50)
    );
}

/// #59: compare reads the stale share (where the cache can say stale) and what a path of
/// caches forwards to the origin, each with its significance over several runs a side.
#[test]
fn compare_rows_read_stale_answers_and_tiers() {
    use vload_schema::{LayerCounts, RunFile};
    let tiered = |stale_per_s: u64, to_origin_per_s: u64, seed: u64| {
        let mut run = synthetic("x", 5, 1_000, 200_000.0, seed);
        let layer = |reached, hits| LayerCounts {
            reached,
            hits,
            misses: reached - hits,
        };
        for i in run.intervals.iter_mut() {
            let jitter = (seed + i.start_s as u64) % 3;
            i.stale = stale_per_s + jitter;
            let edge_misses = 400 + jitter;
            i.layers = vec![
                layer(i.hits + i.misses, i.hits + i.misses - edge_misses),
                layer(edge_misses, edge_misses - to_origin_per_s - jitter),
            ];
            i.stale = i.stale.min(i.hits);
        }
        let sum = |f: &dyn Fn(&vload_schema::Interval) -> LayerCounts| {
            run.intervals.iter().fold(LayerCounts::default(), |a, i| {
                let l = f(i);
                LayerCounts {
                    reached: a.reached + l.reached,
                    hits: a.hits + l.hits,
                    misses: a.misses + l.misses,
                }
            })
        };
        run.cache.layers = vec![sum(&|i| i.layers[0]), sum(&|i| i.layers[1])];
        run
    };
    let aged = |mean_s: u64, seed: u64| {
        let mut run = tiered(300, 100, seed);
        let mut ages = vload_schema::StaleAges::default();
        (0..100).for_each(|k| ages.add(mean_s - 1 + (k + seed) % 3));
        run.cache.stale_ages = Some(ages);
        run
    };
    let shielded: Vec<RunFile> = (1..=3).map(|s| aged(4, s)).collect();
    let bare: Vec<RunFile> = (4..=6).map(|s| tiered(10, 350, s)).collect();
    let c = vload_analyze::compare(("shielded", &shielded), ("bare", &bare)).unwrap();
    let row = |m: vload_analyze::Metric| c.rows.iter().find(|r| r.metric == m).unwrap();
    let origin = row(vload_analyze::Metric::TierOriginShare);
    assert_eq!(
        origin.verdict,
        vload_analyze::compare::Verdict::ABetter,
        "{origin:?}"
    );
    let stale = row(vload_analyze::Metric::StaleShare);
    assert_eq!(
        stale.verdict,
        vload_analyze::compare::Verdict::BBetter,
        "{stale:?}"
    );
    // Ages on one side only: the row is there, n/a on the side without.
    let age = row(vload_analyze::Metric::StaleAgeMean);
    assert!(
        age.a.median.is_some_and(|m| (m - 4e9).abs() < 0.1e9) && age.b.median.is_none(),
        "{age:?}"
    );
    // Runs whose headers cannot say stale, nor list a path, have neither row.
    let plain: Vec<RunFile> = (7..=9)
        .map(|s| synthetic("y", 5, 1_000, 200_000.0, s))
        .collect();
    let c = vload_analyze::compare(("a", &plain), ("b", &plain)).unwrap();
    assert!(c.rows.iter().all(|r| !matches!(
        r.metric,
        vload_analyze::Metric::StaleShare
            | vload_analyze::Metric::TierOriginShare
            | vload_analyze::Metric::StaleAgeMean
    )));
}

/// A run with a crawler beside its catalogue against runs without one: the human requests'
/// rows read the crawler run's class `human` and the other's whole run, so they say what
/// the crawler cost the people; runs without a crawler have no such rows.
#[test]
fn compare_rows_read_the_human_class_beside_a_crawler() {
    use vload_schema::{Breakdown, CatalogueRecord, Group, GroupCache, RunFile};
    let catalogue = |crawler: Option<&str>| CatalogueRecord {
        objects: 1_000,
        popularity: "zipf:0.8".into(),
        object_size: "4k".into(),
        ttl_s: None,
        one_hit_wonders: 0.0,
        hosts: 1,
        seed: 1,
        total_bytes: 4_096_000,
        churn_per_s: None,
        crawler: crawler.map(str::to_owned),
        variants: None,
        ranges: None,
    };
    // Without a crawler: 80% hits over all (and human) requests.
    let plain = |seed: u64| {
        let mut run = synthetic("plain", 5, 1_000, 200_000.0, seed);
        run.plan.catalogue = Some(catalogue(None));
        run.cache.hit = 4_000 - seed;
        run.cache.miss = 1_000 + seed;
        run
    };
    // With one: the human class hits 70%, the crawler's 20% (50% over all), and the human
    // requests are slower by half.
    let crawled = |seed: u64| {
        let slow = synthetic("crawled", 5, 1_000, 300_000.0, seed);
        let mut run = plain(seed);
        run.plan.catalogue = Some(catalogue(Some("30%:tail")));
        run.cache.hit = 2_500;
        run.cache.miss = 2_500;
        let group = |name: &str, hit: u64, miss: u64, run: &RunFile| Group {
            name: name.into(),
            requests: hit + miss,
            errors: 0,
            status_classes: Default::default(),
            cache: GroupCache {
                hit,
                miss,
                ..Default::default()
            },
            bytes_in: 0,
            latency: run.latency.response.clone().unwrap(),
            first_byte: None,
            transfer: None,
        };
        run.breakdowns = vec![Breakdown {
            by: "class".into(),
            folded: 0,
            groups: vec![
                group("human", 2_450 - seed, 1_050 + seed, &slow),
                group("crawler", 50 + seed, 1_450 - seed, &run),
            ],
        }];
        run
    };
    let with: Vec<RunFile> = (1..=5).map(crawled).collect();
    let without: Vec<RunFile> = (6..=10).map(plain).collect();
    let c = vload_analyze::compare(("crawler", &with), ("none", &without)).unwrap();
    let human = row(&c, Metric::HumanHitRatio);
    let (a, b) = (human.a.median.unwrap(), human.b.median.unwrap());
    assert!(
        (a - 0.70).abs() < 0.01 && (b - 0.80).abs() < 0.01,
        "{human:?}"
    );
    assert_eq!(human.verdict, vload_analyze::compare::Verdict::BBetter);
    let p50 = row(&c, Metric::HumanP50);
    assert!(
        p50.a.median.unwrap() > 1.3 * p50.b.median.unwrap(),
        "{p50:?}"
    );
    // Runs without a crawler have no human rows.
    let c = vload_analyze::compare(("a", &without), ("b", &without)).unwrap();
    assert!(c.rows.iter().all(|r| !r.metric.is_human()));
}

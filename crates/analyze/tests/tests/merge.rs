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

#[test]
fn shards_of_a_rate_plan_add_up_stage_by_stage() {
    let shard = |seed: u64| {
        let mut run = synthetic("shard", 4, 100, 1e5, seed);
        // Stale answers' ages: a sum and an oldest, which shards add and take the most of.
        let mut ages = vload_schema::StaleAges::default();
        (0..seed).for_each(|k| ages.add(10 * seed + k));
        run.cache.stale_ages = Some(ages);
        run.intervals[0].stale = seed;
        let stage = |i: u32| vload_analyze::sweep::step_record(&run, i, f64::from(i) * 2.0, &[]);
        run.stages = vec![stage(0), stage(1)];
        run
    };
    let (a, b) = (shard(1), shard(2));
    let merged =
        vload_analyze::merge::merge(&[("a".to_owned(), a.clone()), ("b".to_owned(), b.clone())])
            .unwrap();
    assert_eq!(merged.stages.len(), 2);
    // a: one answer aged 10 s; b: two aged 20 and 21 s.
    let ages = vload_schema::StaleAges {
        answers: 3,
        sum_s: 51,
        max_s: 21,
    };
    assert_eq!(merged.cache.stale_ages, Some(ages));
    assert_eq!(merged.stages[0].stale_ages, Some(ages));
    for (i, stage) in merged.stages.iter().enumerate() {
        assert_eq!(stage.intended, a.stages[i].intended + b.stages[i].intended);
        assert_eq!(
            stage.response.moments.n,
            a.stages[i].response.moments.n + b.stages[i].response.moments.n
        );
        let sum = a.stages[i].throughput_per_s + b.stages[i].throughput_per_s;
        assert!((stage.throughput_per_s - sum).abs() < 1e-9);
        assert!(
            stage.client_health.is_none(),
            "a shard's own verdict is not the whole's"
        );
    }
    merged.validate().expect("the merge is a valid run file");
}

#[test]
fn a_merge_pools_the_arrival_samples_and_leaves_the_checks_to_its_own_data() {
    let mut a = synthetic("x", 6, 1_000, 200_000.0, 1);
    let mut b = synthetic("x", 6, 1_000, 200_000.0, 2);
    a.arrivals = Some(vload_schema::ArrivalSample {
        sends: 6_000,
        gaps: vec![1.0; 2_000],
    });
    b.arrivals = Some(vload_schema::ArrivalSample {
        sends: 6_000,
        gaps: vec![0.5; 2_000],
    });
    a.checks = vload_analyze::selfcheck::run_checks(&a).unwrap();
    assert!(!a.checks.is_empty());
    let m = merge(&[("a.json".to_owned(), a), ("b.json".to_owned(), b)]).unwrap();
    let sample = m.arrivals.as_ref().unwrap();
    assert_eq!((sample.sends, sample.gaps.len()), (12_000, 2_000));
    assert_eq!(sample.gaps.iter().filter(|g| **g == 0.5).count(), 1_000);
    assert!(m.checks.is_empty(), "a's checks would stand for the merge");
    m.validate().unwrap();
}

/// #45: two shards started 2 s apart (`--start-at` T and T+2 s, 3 s each) merged without a
/// word into a 3 s report whose seconds spanned 5 s: the merged window is their union, and
/// the check says they did not start together.
#[test]
fn shards_started_apart_say_so_and_span_their_union() {
    let mut a = synthetic("x", 3, 1_000, 1e5, 1);
    let mut b = synthetic("x", 3, 1_000, 1e5, 2);
    a.started_at = "2026-11-27T10:00:00.000Z".into();
    b.started_at = "2026-11-27T10:00:02.000Z".into();
    b.environment.hostname = "loadgen-2".into();
    for (index, run) in [&mut a, &mut b].into_iter().enumerate() {
        run.plan.shard = Some(vload_schema::ShardRecord {
            index: index as u32,
            count: 2,
            connections: run.plan.connections,
            rate_per_s: None,
        });
    }
    let runs = vec![("a.json".to_owned(), a), ("b.json".to_owned(), b)];
    let findings = vload_analyze::merge::check_shards(&runs, false).unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f.contains("shards began 2.0 s apart ('b.json' after 'a.json')")),
        "{findings:?}"
    );
    let m = merge(&runs).unwrap();
    assert_eq!(m.intervals.len(), 5);
    assert!((m.window.measured_s - 5.0).abs() < 1e-9, "{:?}", m.window);
}

/// #59: stampedes merge. Shards' events fired together add up into one event of the whole,
/// their origin counts left unknown (each shard read the one origin around the same event);
/// consecutive runs' events follow one another, each keeping its own origin count.
#[test]
fn stampedes_merge_as_shards_and_as_consecutive_runs() {
    let stamped = |seed: u64, started: &str| {
        let mut run = synthetic("x", 3, 1_000, 1e5, seed);
        run.started_at = started.into();
        let event = |at_s: f64| vload_schema::StampedeEvent {
            at_s,
            sent: 100,
            spread_ns: 1_000 * seed,
            leaders: 1,
            waiters: 98,
            unclassified: 0,
            server_errors: 0,
            errors: 1,
            unfinished: 0,
            origin_fetches: Some(1),
        };
        run.stampede = Some(vload_schema::StampedeRecord {
            requests: 100,
            every_s: 1.0,
            on: "expiry".into(),
            target: "/stampede?cache=max-age=1".into(),
            events: vec![event(1.0), event(2.0)],
            leaders: None,
            waiters: None,
        });
        run
    };
    let shards = vec![
        ("a.json".to_owned(), stamped(1, "2026-11-27T10:00:00.000Z")),
        ("b.json".to_owned(), stamped(2, "2026-11-27T10:00:00.000Z")),
    ];
    let s = merge(&shards).unwrap().stampede.expect("merged stampede");
    assert_eq!(s.requests, 200);
    assert_eq!(s.events.len(), 2);
    for e in &s.events {
        assert!(e.balances(), "{e:?}");
        assert_eq!((e.sent, e.leaders, e.waiters, e.errors), (200, 2, 196, 2));
        assert_eq!(e.origin_fetches, None, "{e:?}");
        assert_eq!(e.spread_ns, 2_000);
    }
    let consecutive = vec![
        ("a.json".to_owned(), stamped(1, "2026-11-27T10:00:00.000Z")),
        ("b.json".to_owned(), stamped(2, "2026-11-27T10:00:10.000Z")),
    ];
    let s = merge(&consecutive)
        .unwrap()
        .stampede
        .expect("merged stampede");
    assert_eq!(s.requests, 100);
    let at: Vec<f64> = s.events.iter().map(|e| e.at_s).collect();
    assert_eq!(at, [1.0, 2.0, 11.0, 12.0]);
    assert!(
        s.events
            .iter()
            .all(|e| e.origin_fetches == Some(1) && e.balances())
    );
    // A merged file reads back: its stampede's ledger is checked when read.
    let text = serde_json::to_string(&merge(&shards).unwrap()).unwrap();
    vload_schema::RunFile::from_json(&text).unwrap();
}

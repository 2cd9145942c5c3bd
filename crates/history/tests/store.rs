//! The store and the gate, end to end: run files in, series and change points out.

use std::path::Path;

use vload_analyze::Metric;
use vload_history::{Added, Selection, Store, Strength, gate, histories};
use vload_schema::*;

fn golden() -> RunFile {
    RunFile::from_json(include_str!("../../schema/tests/data/golden-run.json")).unwrap()
}

/// A run of commit `commit` whose latencies are `median_ns` each side of nothing: 10 s of
/// 200 requests, every latency `median_ns` times a factor in [0.9, 1.1).
fn run(commit: &str, index: u32, median_ns: f64) -> RunFile {
    let mut run = golden();
    run.label = Some("test".into());
    run.run_id = format!("{commit}-{index}");
    run.started_at = format!("2026-11-27T10:{:02}:{:02}.000Z", index / 60, index % 60);
    run.provenance = Some(Provenance {
        commit: Some(commit.into()),
        branch: Some("main".into()),
        ..Provenance::default()
    });
    let settings = HistogramSettings::default();
    let (mut total, mut total_m) = (new_histogram(&settings), Moments::new());
    let template = run.intervals[0].clone();
    run.intervals.clear();
    let per_second = 200u64;
    let mut state = u64::from(index) * 7919 + 1;
    for s in 0..10 {
        let (mut h, mut m) = (new_histogram(&settings), Moments::new());
        for _ in 0..per_second {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let v = (median_ns * (0.9 + 0.2 * u)) as u64;
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
    let n = 10 * per_second;
    run.totals.intended = n;
    run.totals.sent = n;
    run.totals.completed = n;
    run.totals.status_codes = [(200, n)].into();
    run.totals.errors.clear();
    run.cache = CacheCounts {
        hit: n,
        miss: 0,
        unknown: 0,
        by_source: CacheSources {
            x_varnish: n,
            ..Default::default()
        },
        layers: Vec::new(),
        stale_ages: None,
    };
    run.window = Window {
        warmup_s: 0.0,
        measured_s: 10.0,
        wait_s: 0.001,
        start_offset_s: None,
    };
    run.plan.duration_s = Some(10.0);
    run.plan.rate_per_s = Some(per_second as f64);
    let record = LatencyRecord {
        histogram: EncodedHistogram::encode(&total).unwrap(),
        moments: total_m,
    };
    run.latency.response = Some(record.clone());
    run.latency.service = record;
    run.checks.clear();
    run.validate().unwrap();
    run
}

fn store(dir: &Path) -> Store {
    Store::open(&dir.join("h.db")).unwrap()
}

#[test]
fn adding_twice_stores_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    let text = run("c1", 0, 2e6).to_json();
    assert!(matches!(
        s.add(&text, "a.json").unwrap(),
        Added::New { excluded: None, .. }
    ));
    assert_eq!(
        s.add(&text, "a.json").unwrap(),
        Added::Already {
            run_id: "c1-0".into()
        }
    );
    assert_eq!(s.size().unwrap().0, 1);
    // The file comes back whole.
    assert_eq!(s.file("c1-0").unwrap().unwrap(), text);
}

#[test]
fn what_is_not_a_run_file_is_refused_and_a_newer_database_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    for bad in ["", "{", "[]", "{\"schema_version\": 99}", "garbage"] {
        assert!(s.add(bad, "bad.json").is_err(), "{bad:?} accepted");
    }
    assert_eq!(s.size().unwrap().0, 0);
    drop(s);
    // A newer vload's database, by its layout version: refused, named.
    let path = dir.path().join("h.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 9)
        .unwrap();
    let err = Store::open(&path)
        .err()
        .expect("a newer layout is refused")
        .to_string();
    assert!(err.contains("newer vload"), "{err}");
    // Not a database at all.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    assert!(Store::open(&junk).is_err());
}

#[test]
fn the_gate_keeps_bad_runs_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    let mut busy = run("c1", 1, 2e6);
    busy.client_health.verdict = HealthVerdict::MachineBusy;
    let mut bound = run("c1", 2, 2e6);
    bound.client_health.verdict = HealthVerdict::ClientBound;
    let mut stopped = run("c1", 3, 2e6);
    stopped.interrupted = true;
    let mut broken = run("c1", 4, 2e6);
    broken.totals.completed += 1;
    let mut all_404 = run("c1", 5, 2e6);
    all_404.totals.status_codes = [(404, all_404.totals.completed)].into();
    for i in &mut all_404.intervals {
        i.status_classes = StatusClasses {
            s4xx: i.completed,
            ..Default::default()
        };
    }
    let mut drifting = run("c1", 6, 2e6);
    drifting.checks.push(RunCheck {
        name: "stationarity:p50".into(),
        verdict: CheckVerdict::Fail,
        statistic: None,
        p_value: None,
        interval: None,
        batch_s: None,
        message: "drifted".into(),
    });
    let mut late = run("c1", 8, 2e6);
    late.checks.push(RunCheck {
        name: "arrivals".into(),
        ..drifting.checks[0].clone()
    });
    let mut wide = run("c1", 7, 2e6);
    wide.checks.push(RunCheck {
        name: "convergence:p99".into(),
        ..drifting.checks[0].clone()
    });
    let expect = [
        (busy, Some("MACHINE-BUSY")),
        (bound, Some("CLIENT-BOUND")),
        (stopped, Some("interrupted")),
        (broken, Some("ledger")),
        (all_404, Some("no request succeeded")),
        (drifting, Some("stationarity:p50")),
        (late, Some("arrivals")),
        (wide, None),
    ];
    for (r, why) in expect {
        let id = r.run_id.clone();
        match (s.add(&r.to_json(), "x").unwrap(), why) {
            (Added::New { excluded: None, .. }, None) => {}
            (
                Added::New {
                    excluded: Some(e), ..
                },
                Some(w),
            ) => assert!(e.contains(w), "{id}: {e}"),
            (other, _) => panic!("{id}: {other:?}, expected {why:?}"),
        }
    }
}

#[test]
fn a_series_is_what_makes_runs_comparable() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    let base = run("c1", 0, 2e6);
    let mut other_label = run("c1", 1, 2e6);
    other_label.label = Some("other".into());
    let mut other_cpu = run("c1", 2, 2e6);
    other_cpu.environment.cpu_model = "Another CPU".into();
    let mut other_rate = run("c1", 3, 2e6);
    other_rate.plan.rate_per_s = Some(1_000.0);
    let mut other_vcl = run("c1", 4, 2e6);
    other_vcl.provenance.as_mut().unwrap().config_files = vec![ConfigFile {
        path: "vcl/x.vcl".into(),
        sha256: "ab".repeat(32),
    }];
    let mut same = run("c2", 5, 2e6);
    same.environment.hostname = "another-runner".into();
    same.plan.server_address = Some("10.0.0.9:80".into());
    for r in [
        &base,
        &other_label,
        &other_cpu,
        &other_rate,
        &other_vcl,
        &same,
    ] {
        s.add(&r.to_json(), "x").unwrap();
    }
    assert_eq!(s.series().unwrap().len(), 5);
    let key = vload_history::SeriesKey::of(&base).key;
    assert_eq!(
        s.runs(&key).unwrap().len(),
        2,
        "hostname and address do not split a series"
    );
}

/// Ten commits at 2 ms then ten at 2.2 ms, three runs each, one busy run among them: the
/// change is named at c11, confirmed, +10%, and the busy run is out.
#[test]
fn a_step_is_found_at_its_commit_and_the_busy_run_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    let mut index = 0;
    for round in 0..3 {
        for c in 1..=20 {
            let median = if c <= 10 { 2e6 } else { 2.2e6 };
            let mut r = run(&format!("c{c:02}"), index, median);
            if round == 1 && c == 15 {
                // Busy, and slow with it: it must not count.
                r = run(&format!("c{c:02}"), index, 4e6);
                r.client_health.verdict = HealthVerdict::MachineBusy;
            }
            r.started_at = format!("2026-11-27T{:02}:{:02}:00.000Z", 10 + round, c);
            s.add(&r.to_json(), "x").unwrap();
            index += 1;
        }
    }
    let selection = Selection {
        metrics: vec![Metric::P50],
        ..Selection::default()
    };
    let h = histories(&s, &selection).unwrap();
    assert_eq!(h.len(), 1);
    let p50 = &h[0].metrics[0];
    assert_eq!(p50.changes.len(), 1, "{:?}", p50.changes);
    let change = &p50.changes[0];
    assert_eq!(change.commit, "c11");
    assert_eq!(change.strength, Strength::Confirmed);
    assert!((change.delta - 10.0).abs() < 1.0, "{}", change.delta);
    assert_eq!(h[0].excluded().count(), 1);
    // The newest commit continues the new level: nothing to fail.
    let g = gate(&h, Some(5.0), true);
    assert!(
        g.regressions.is_empty() && g.unjudged.is_empty(),
        "{:?}",
        g.regressions
    );
    let text = vload_history::render::show(&h, 20);
    assert!(
        text.contains("c11") && text.contains("MACHINE-BUSY"),
        "{text}"
    );
}

#[test]
fn the_gate_fails_a_newest_commit_that_regressed_and_does_not_judge_a_busy_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    for c in 1..=8 {
        for k in 0..3 {
            let r = run(&format!("c{c}"), c * 3 + k, 2e6);
            s.add(&r.to_json(), "x").unwrap();
        }
    }
    let selection = Selection {
        metrics: vec![Metric::P50],
        ..Selection::default()
    };
    let passed = gate(&histories(&s, &selection).unwrap(), Some(5.0), true);
    assert!(passed.regressions.is_empty() && passed.unjudged.is_empty());
    // One run of a slower commit: outside the runs' prediction interval, 8% worse.
    s.add(&run("c9", 100, 2.16e6).to_json(), "x").unwrap();
    let failed = gate(&histories(&s, &selection).unwrap(), Some(5.0), true);
    assert_eq!(failed.regressions.len(), 1, "{:?}", failed);
    assert!(
        gate(&histories(&s, &selection).unwrap(), Some(10.0), true)
            .regressions
            .is_empty()
    );
    // A busy newest commit is not judged: no pass.
    let mut busy = run("c10", 101, 2e6);
    busy.client_health.verdict = HealthVerdict::MachineBusy;
    s.add(&busy.to_json(), "x").unwrap();
    let unjudged = gate(&histories(&s, &selection).unwrap(), Some(5.0), true);
    assert_eq!(unjudged.unjudged.len(), 1);
}

#[test]
fn concurrent_adders_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<Vec<String>> = (0..4)
        .map(|t| {
            (0..8)
                .map(|i| run(&format!("c{t}"), t * 100 + i, 2e6).to_json())
                .collect()
        })
        .collect();
    // Five fresh databases: no one creates one first, the adders race to make it, as the
    // shards of an attack do (before the fix, about one race in four lost an adder).
    for round in 0..5 {
        let path = dir.path().join(format!("h{round}.db"));
        std::thread::scope(|scope| {
            for mine in &texts {
                let path = path.clone();
                scope.spawn(move || {
                    let mut s = Store::open(&path).unwrap();
                    for text in mine {
                        s.add(text, "x").unwrap();
                        // And the same again, as a retried shard would.
                        s.add(text, "x").unwrap();
                    }
                });
            }
        });
        assert_eq!(Store::open(&path).unwrap().size().unwrap().0, 32);
    }
}

#[test]
fn exports_carry_the_newest_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    for (i, c) in ["c1", "c1", "c2", "c2"].iter().enumerate() {
        s.add(
            &run(c, i as u32, if *c == "c1" { 2e6 } else { 3e6 }).to_json(),
            "x",
        )
        .unwrap();
    }
    let h = histories(&s, &Selection::default()).unwrap();
    let bmf = vload_history::export::bmf(&h, None);
    let series = bmf.as_object().unwrap().values().next().unwrap();
    let p50 = series["p50"]["value"].as_f64().unwrap();
    assert!((p50 / 3e6 - 1.0).abs() < 0.02, "{p50}");
    assert!(series["p50"]["lower_value"].as_f64().unwrap() <= p50);
    let older = vload_history::export::bmf(&h, Some("c1"));
    let p50 = older.as_object().unwrap().values().next().unwrap()["p50"]["value"]
        .as_f64()
        .unwrap();
    assert!((p50 / 2e6 - 1.0).abs() < 0.02, "{p50}");
    let smaller = vload_history::export::github_action_benchmark(&h, None, false);
    let names: Vec<&str> = smaller
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(" p50")), "{names:?}");
    assert!(
        !names.iter().any(|n| n.ends_with("throughput")),
        "throughput is bigger-is-better"
    );
    let bigger = vload_history::export::github_action_benchmark(&h, None, true);
    assert!(
        bigger
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"].as_str().unwrap().ends_with("throughput"))
    );
}

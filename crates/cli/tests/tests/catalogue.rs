//! `--catalogue` against the built-in origin: what is asked is what is served, the run file
//! keeps the catalogue and its model, and bad flags are one clear line.

use crate::util::{OriginConfig, Scratch, read_run, run, shared, spawn, stderr, stdout, vload};

#[test]
fn a_catalogue_is_served_as_it_says_and_recorded_with_its_model() {
    let _turn = shared();
    let dir = Scratch::new("catalogue");
    let out = |name: &str| dir.path(name);
    let attack = |seed: &str, file: &str| {
        run(
            vload().args([
                "attack",
                "--catalogue",
                "500",
                "--object-size",
                "4k",
                "--ttl",
                "1m-10m",
                "--one-hit-wonders",
                "5%",
                "--vhosts",
                "3",
                "--cache-size",
                "100obj",
                "--seed",
                seed,
                "-n",
                "2000",
                "-c",
                "4",
                "--no-progress",
                "--quiet",
                "-o",
                out(file).to_str().unwrap(),
            ]),
            0,
        )
    };
    attack("7", "a.json");
    attack("7", "b.json");
    attack("8", "c.json");
    let (a, b, c) = (
        read_run(&out("a.json")),
        read_run(&out("b.json")),
        read_run(&out("c.json")),
    );
    // The built-in origin served every object at the size its path asked.
    assert_eq!(a.totals.completed, 2_000);
    assert_eq!(a.totals.bytes_in, 2_000 * 4096);
    let catalogue = a.plan.catalogue.as_ref().unwrap();
    assert_eq!(
        (
            catalogue.objects,
            catalogue.hosts,
            catalogue.ttl_s,
            catalogue.seed
        ),
        (500, 3, Some([60, 600]), 7)
    );
    assert_eq!(catalogue.total_bytes, 500 * 4096);
    let model = a.cache_model.as_ref().unwrap();
    assert_eq!(model.capacity.as_deref(), Some("100 objects"));
    let lru = model.lru_hit_ratio.unwrap();
    assert!(
        0.0 < lru && lru < model.cold_bound.max(lru + 1e-9),
        "{model:?}"
    );
    assert!(model.ttl_bound.is_some());
    // The same seed is the same workload; another seed is another.
    assert_eq!(a.workload_hash, b.workload_hash);
    assert_ne!(a.workload_hash, c.workload_hash);
}

#[test]
fn bad_catalogue_flags_are_one_clear_line() {
    for (args, needle) in [
        (vec!["--catalogue", "0"], "--catalogue 0"),
        (
            vec!["--catalogue", "10", "--popularity", "pareto"],
            "--popularity 'pareto'",
        ),
        (
            vec!["--catalogue", "10", "--object-size", "64k-1k"],
            "MIN above MAX",
        ),
        (vec!["--catalogue", "10", "--ttl", "soon"], "--ttl 'soon'"),
        (
            vec!["--catalogue", "10", "--one-hit-wonders", "100%"],
            "below 100%",
        ),
        (
            vec!["--catalogue", "10", "--cache-size", "lots"],
            "--cache-size 'lots'",
        ),
        (
            vec!["--catalogue", "10", "--purge-every", "500ms"],
            "whole seconds",
        ),
        (
            vec![
                "--catalogue",
                "10",
                "--purge-every",
                "2s",
                "--purge-method",
                "P U",
            ],
            "is not a method",
        ),
        (
            vec![
                "--catalogue",
                "10",
                "--purge-every",
                "2s",
                "--purge-header",
                "nocolon",
            ],
            "is not one header",
        ),
        (vec!["--ttl", "60"], "--catalogue"),
    ] {
        let mut all = vec!["attack"];
        all.extend(&args);
        all.push("http://127.0.0.1:1/");
        let o = run(vload().args(&all), 2);
        let err: Vec<String> = stderr(&o)
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("vload: attacking"))
            .map(str::to_owned)
            .collect();
        assert!(err.iter().any(|l| l.contains(needle)), "{args:?}: {err:?}");
        assert!(
            err.len() == 1 || err[0].starts_with("error: the following required"),
            "{args:?}: {err:?}"
        );
    }
}

#[test]
fn a_warm_up_until_warm_refuses_a_server_that_never_says_hit_or_miss() {
    let _turn = shared();
    // The built-in origin sends no cache headers: after 5 s the warm-up says why it cannot
    // settle, in one line, and nothing is measured.
    let o = run(
        vload().args([
            "attack",
            "--catalogue",
            "100",
            "--warmup-until",
            "hit-ratio",
            "-d",
            "1s",
            "--no-progress",
        ]),
        2,
    );
    let err = stderr(&o);
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("said hit or miss") && errors[0].contains("--warmup"),
        "{err}"
    );
}

#[test]
fn a_warm_up_of_one_pass_asks_each_target_once_before_the_attack() {
    let _turn = shared();
    let dir = Scratch::new("warm-pass");
    let list = dir.path("list.txt");
    std::fs::write(
        &list,
        (0..40).map(|i| format!("/u/{i}\n")).collect::<String>(),
    )
    .unwrap();
    let origin = crate::util::origin();
    let out = dir.path("pass.json");
    run(
        vload().args([
            "attack",
            "--urls",
            list.to_str().unwrap(),
            "--warmup-until",
            "pass",
            "-n",
            "10",
            "-c",
            "3",
            "--no-progress",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
            &origin.url(),
        ]),
        0,
    );
    let run_file = read_run(&out);
    let warmed = run_file.warmed.as_ref().unwrap();
    assert!(warmed.reached && warmed.until == "pass", "{warmed:?}");
    assert_eq!(warmed.requests, 40);
    // Every URL once in the pass, then the attack's 10 from the list's start.
    let by_path = origin.stats().requests_by_path;
    assert_eq!(by_path.len(), 40);
    assert_eq!(by_path.values().sum::<u64>(), 50);
    assert!(by_path.values().all(|n| (1..=2).contains(n)), "{by_path:?}");
    for (args, needle) in [
        (
            vec!["--warmup-until", "pass"],
            "needs a --catalogue or a target list",
        ),
        (
            vec![
                "--warmup-until",
                "pass",
                "--mix",
                &format!("{}:1,{}:2", list.display(), list.display()),
            ],
            "walks one target list in order",
        ),
    ] {
        let o = run(
            vload()
                .arg("attack")
                .args(&args)
                .args(["-n", "1", "--no-progress", &origin.url()]),
            2,
        );
        let err = stderr(&o);
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        assert!(errors.len() == 1 && errors[0].contains(needle), "{err}");
    }
}

/// #45: a pass whose requests failed (an origin that resets every 10th connection's
/// request, or that is not yet listening) is not a warm cache: the objects without a
/// response are counted and named, and the pass is not marked reached.
#[test]
fn a_pass_with_failed_requests_is_not_complete() {
    let _turn = shared();
    let origin = spawn(OriginConfig {
        threads: Some(1),
        reset_every: Some(10),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let dir = Scratch::new("warm-pass-failed");
    let out = dir.path("pass.json");
    let o = run(
        vload().args([
            "attack",
            "--catalogue",
            "200",
            "--warmup-until",
            "pass",
            "-n",
            "10",
            "-c",
            "2",
            "--no-progress",
            "-o",
            out.to_str().unwrap(),
            &origin.url(),
        ]),
        0,
    );
    let run_file = read_run(&out);
    let warmed = run_file.warmed.as_ref().unwrap();
    assert!(!warmed.reached, "{warmed:?}");
    assert!(warmed.failed > 0, "{warmed:?}");
    let text = stdout(&o) + &stderr(&o);
    assert!(text.contains("one pass NOT complete"), "{text}");
}

/// #60: `--crawler` puts a crawler beside the catalogue's requests: its share of them, kept
/// apart as the class `crawler` (the rest `human`), the classes adding up to the run; its
/// new URLs are each asked once, as the origin's own count says; the run file keeps it.
#[test]
fn a_crawler_is_a_class_of_its_own() {
    let _turn = shared();
    let dir = Scratch::new("crawler");
    let out = dir.path("crawler.json");
    let origin = crate::util::origin();
    run(
        vload().args([
            "attack",
            "--catalogue",
            "1000",
            "--crawler",
            "30%:unique",
            "-n",
            "3000",
            "-c",
            "4",
            "--no-progress",
            "-o",
            out.to_str().unwrap(),
            &origin.url(),
        ]),
        0,
    );
    let run = read_run(&out);
    assert_eq!(
        run.plan.catalogue.as_ref().unwrap().crawler.as_deref(),
        Some("30%:unique")
    );
    let classes = run
        .breakdowns
        .iter()
        .find(|b| b.by == "class")
        .expect("a breakdown by class");
    let count = |name: &str| {
        classes
            .groups
            .iter()
            .find(|g| g.name == name)
            .map_or(0, |g| g.requests)
    };
    let (human, crawler) = (count("human"), count("crawler"));
    assert_eq!(human + crawler, run.totals.completed, "{classes:?}");
    let share = crawler as f64 / run.totals.completed as f64;
    assert!((share - 0.3).abs() < 0.04, "{share}");
    // Each new URL once: the origin saw as many paths past the catalogue as the crawler sent.
    let stats = origin.stats();
    let past: Vec<u64> = stats
        .requests_by_path
        .iter()
        .filter(|(path, _)| {
            path.strip_prefix("/c/")
                .and_then(|p| p.split('?').next())
                .and_then(|id| id.parse::<u64>().ok())
                .is_some_and(|id| id >= 1000)
        })
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(past.len() as u64, crawler, "one path each");
    assert!(past.iter().all(|n| *n == 1));
    // A bad crawler is one line naming the flag.
    let bad = run_bad(&["--crawler", "30%:deep"]);
    assert!(
        bad.contains("--crawler '30%:deep' is not a crawler"),
        "{bad}"
    );
}

fn run_bad(extra: &[&str]) -> String {
    let mut args = vec!["attack", "--catalogue", "10", "-n", "1"];
    args.extend(extra);
    let out = run(vload().args(&args), 2);
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    err
}

//! A `--catalogue` workload through a real varnishd whose cache is too small for it: vload,
//! Varnish and the origin agree on every hit and fetch, and the hit ratio is the model's.

use vload_cache::model::{Load, predict};
use vload_cache::{Capacity, Catalogue};

use super::stack::{Stack, counter, have_varnish, read_run, shared, vload, vload_span};

#[test]
fn a_zipf_catalogue_hits_what_an_lru_of_varnishs_size_would() {
    if !have_varnish("a_zipf_catalogue_hits_what_an_lru_of_varnishs_size_would") {
        return;
    }
    let _turn = shared();
    // 5,000 objects of 4 KiB (20 MiB) in 8 MiB of malloc storage: Varnish must evict.
    let stack = Stack::with_storage("catalogue.vcl", "8m");
    let out = stack.dir.join("catalogue.json");
    let report = vload(&[
        "attack",
        "--catalogue",
        "5000",
        "--popularity",
        "zipf:0.8",
        "--object-size",
        "4k",
        "--cache-size",
        "8M",
        "-c",
        "4",
        "--warmup",
        "8s",
        "-d",
        "8s",
        "--server-stats",
        &stack.server_stats(),
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    // The origin served each miss once; Varnish's count of fetches is the origin's.
    let origin = stack.origin.stats();
    assert!(origin.requests_by_path.keys().all(|p| p.starts_with("/c/")));
    // Varnish counts a lookup when it starts, vload a response when it ends, and a loaded
    // machine's Varnish publishes its workers' counts late (17 hits of 18,946 landed on the
    // other side of the warm-up's end beside stress-ng): the counts agree within the slack
    // the report allows (two per connection and 1%), the hit ratios within half a point.
    let (hits, completed) = vload_span(&run);
    let (their_hits, lookups) = (
        counter(&run, "cache_hit"),
        counter(&run, "cache_hit") + counter(&run, "cache_miss"),
    );
    let slack = 8 + completed / 100;
    assert!(
        lookups.abs_diff(completed) <= slack,
        "lookups {lookups}, vload {completed}"
    );
    let (theirs, ours) = (
        their_hits as f64 / lookups as f64,
        hits as f64 / completed as f64,
    );
    assert!(
        (theirs - ours).abs() < 0.005,
        "hit ratio: Varnish {theirs:.4}, vload {ours:.4}"
    );
    assert!(counter(&run, "n_lru_nuked") > 0, "the cache was too small");
    let measured = run.cache.hit as f64 / (run.cache.hit + run.cache.miss) as f64;

    // The model of the run file: an LRU of 8 MiB of bodies. Varnish keeps each object's
    // headers and its own structures beside the body (about 4.3 KB an object of 4 KiB
    // here), so it holds fewer objects than the bytes suggest and hits less: 2-6 points
    // under at 4-16 MiB on this machine (docs/caching.md).
    let model = run.cache_model.as_ref().unwrap();
    let lru = model.lru_hit_ratio.unwrap();
    assert!(
        measured < lru + 0.02 && measured > lru - 0.08,
        "measured {measured:.4} against an LRU of 8M {lru:.4}"
    );
    // Against an exact LRU of as many objects as Varnish held (its n_object), Varnish is a
    // few points under, never over: its LRU moves an object to the front at most every
    // lru_interval (2 s), so a hot object can be evicted between two of its hits. Seen: 3.8
    // points under at 8 MiB beside stress-ng.
    let held = run.server.as_ref().unwrap().stats.as_ref().unwrap().gauges["n_object"];
    let catalogue = Catalogue::from_record(run.plan.catalogue.as_ref().unwrap()).unwrap();
    let same = predict(
        Load {
            catalogue: &catalogue,
            rate_per_s: model.rate_per_s,
            before: model.requests_before,
            window: model.requests_window,
        },
        Some(Capacity::Objects(held)),
    );
    let by_objects = same.lru.unwrap().0;
    assert!(
        measured < by_objects + 0.01 && measured > by_objects - 0.06,
        "measured {measured:.4} against an LRU of {held} objects {by_objects:.4}"
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("Cache model"), "{text}");
    assert!(text.contains("LRU of 8M"), "{text}");
    assert!(text.contains("objects Varnish held"), "{text}");
}

#[test]
fn ten_purges_under_2000_a_second_cost_about_ten_fetches_not_a_thousand() {
    if !have_varnish("ten_purges_under_2000_a_second_cost_about_ten_fetches_not_a_thousand") {
        return;
    }
    let _turn = shared();
    // 100 objects fit the cache: after the warm-up every request hits, but for the purged.
    let stack = Stack::start("catalogue.vcl");
    let out = stack.dir.join("purges.json");
    let report = vload(&[
        "attack",
        "--catalogue",
        "100",
        "-r",
        "2000",
        "--warmup",
        "3s",
        "-d",
        "10s",
        "--purge-every",
        "3s",
        "--server-stats",
        &stack.server_stats(),
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    let purges = run.purges.as_ref().unwrap();
    // Bursts at 6 s, 9 s and 12 s (the last a second before the window's end at 13 s).
    assert_eq!(purges.bursts.len(), 3, "{purges:?}");
    for burst in &purges.bursts {
        assert_eq!(burst.sent, 10);
        assert_eq!(burst.status_codes.get(&200), Some(&10), "{burst:?}");
    }
    // Each burst empties the 10 hottest objects; Varnish coalesces the misses that follow
    // (one fetch an object however many ask at once): about 10 fetches a burst, where a
    // cache without coalescing would fetch once a request until the first copy is back.
    let effects = vload_analyze::purge::effects(&run);
    for e in &effects {
        let extra = e.extra_misses.unwrap();
        assert!((5.0..=20.0).contains(&extra), "{e:?}");
        // Counted on the objects purged themselves: each of the 10 refetched once (a
        // request that waited on Varnish's fetch is a hit by X-Varnish's two ids).
        let refetched = e.refetched.unwrap();
        assert!((10..=20).contains(&refetched), "{e:?}");
        assert!(
            e.hit_ratio_low.unwrap() < e.hit_ratio_before.unwrap(),
            "{e:?}"
        );
    }
    // The origin's count agrees: 30 purged objects fetched again, and the purges are not in
    // the load's counts.
    let fetched = counter(&run, "vbe_req");
    assert!((25..=40).contains(&fetched), "{fetched} backend requests");
    assert!(
        run.cache.miss.abs_diff(fetched) <= 5,
        "{} misses",
        run.cache.miss
    );
    // Every response said hit or miss; on a loaded machine a few requests may time out
    // instead (3 of 20,000 beside stress-ng at load 17), counted as errors, not responses.
    let errors: u64 = run.totals.errors.values().map(|e| e.count).sum();
    assert!(errors <= run.totals.completed / 1_000, "{errors} errors");
    assert_eq!(
        run.cache.hit + run.cache.miss + errors,
        run.totals.completed
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("Purges") && text.contains("misses on the 10 objects purged"),
        "{text}"
    );
    // One hit ratio: Varnish's own cache_hit / (cache_hit + cache_miss), though client_req
    // also counted the 30 PURGE requests; and no false disagreement with vload's count.
    let (hits, misses) = (counter(&run, "cache_hit"), counter(&run, "cache_miss"));
    let ratio = vload_analyze::units::percent(hits as f64 / (hits + misses) as f64);
    assert!(
        text.contains(&format!(
            "hit ratio = hits / (hits + misses): Varnish {ratio}"
        )),
        "{ratio}: {text}"
    );
    assert!(!text.contains("hit ratio disagrees"), "{text}");
}

#[test]
fn a_warm_up_until_the_hit_ratio_holds_still_ends_when_warm() {
    if !have_varnish("a_warm_up_until_the_hit_ratio_holds_still_ends_when_warm") {
        return;
    }
    let _turn = shared();
    let stack = Stack::start("catalogue.vcl");
    let out = stack.dir.join("warm.json");
    let report = vload(&[
        "attack",
        "--catalogue",
        "2000",
        "--warmup-until",
        "hit-ratio",
        "--warmup-max",
        "90s",
        "-c",
        "4",
        "-d",
        "3s",
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    let warmed = run.warmed.as_ref().unwrap();
    // 2,000 objects fit: the hit ratio climbs to nearly all hits and holds there, which takes
    // 10 s at least (5 still seconds after 5 others), and far less than the 90 s allowed.
    assert!(warmed.reached, "{warmed:?}");
    assert!((10.0..60.0).contains(&warmed.seconds), "{warmed:?}");
    let warm_ratio = warmed.hit_ratio.unwrap();
    assert!(warm_ratio > 0.95, "{warmed:?}");
    // The attack measured a warm cache, and the model counts the warm-up run's requests.
    let measured = run.cache.hit as f64 / (run.cache.hit + run.cache.miss) as f64;
    assert!(
        measured >= warm_ratio - 0.02,
        "measured {measured}, warm {warm_ratio}"
    );
    assert_eq!(
        run.cache_model.as_ref().unwrap().requests_before,
        warmed.requests
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("Warm-up run") && text.contains("held still"),
        "{text}"
    );
}

#[test]
fn a_warm_up_of_one_pass_asks_every_object_once() {
    if !have_varnish("a_warm_up_of_one_pass_asks_every_object_once") {
        return;
    }
    let _turn = shared();
    let stack = Stack::start("catalogue.vcl");
    let out = stack.dir.join("pass.json");
    let report = vload(&[
        "attack",
        "--catalogue",
        "2000",
        "--warmup-until",
        "pass",
        "-c",
        "4",
        "-n",
        "4000",
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    let warmed = run.warmed.as_ref().unwrap();
    assert!(warmed.reached, "{warmed:?}");
    assert_eq!(warmed.requests, 2_000);
    // The pass fetched every object once from the origin, so the attack after it only hits
    // (2,000 objects of 4 KiB fit in 256 MB, and Varnish's default TTL outlives the run).
    assert_eq!(stack.origin.stats().requests_total, 2_000);
    assert_eq!((run.cache.hit, run.cache.miss), (4_000, 0));
    // The model knows every first request is behind the cache: no cold misses are left.
    let model = run.cache_model.as_ref().unwrap();
    assert!(model.cold_bound > 0.9999, "{model:?}");
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("warmed by one pass"), "{text}");
}

/// #58: a freshly started Varnish big enough for the whole catalogue hits exactly what the
/// objects this run drew allow from empty (each object's first request misses, every other
/// hits), and the report does not say the cache "held objects before this attack": it
/// compared with the expectation for such a run (1 point off at 837 objects), not the run.
#[test]
fn an_empty_cache_hits_the_bound_of_the_objects_drawn() {
    if !have_varnish("an_empty_cache_hits_the_bound_of_the_objects_drawn") {
        return;
    }
    let _turn = shared();
    let stack = Stack::with_storage("catalogue.vcl", "64m");
    let out = stack.dir.join("empty.json");
    let report = vload(&[
        "attack",
        "--catalogue",
        "3000",
        "--popularity",
        "zipf:0.8",
        "--object-size",
        "1k",
        "-c",
        "2",
        "-n",
        "2000",
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    let model = run.cache_model.as_ref().unwrap();
    let realized = model
        .realized_cold_bound
        .expect("the bound of this run's draws");
    // The origin's distinct paths are the objects drawn (one host), each fetched once.
    let origin = stack.origin.stats();
    let distinct = origin.requests_by_path.len() as f64;
    assert!(
        (realized - (1.0 - distinct / 2_000.0)).abs() < 1e-9,
        "{realized} {distinct}"
    );
    let measured = run.cache.hit as f64 / (run.cache.hit + run.cache.miss) as f64;
    // Two connections may ask for an object's first time at once (Varnish's waiting list
    // then serves the second as a hit): a few requests of slack, no more.
    assert!(
        measured <= realized + 2.0 / 2_000.0 && measured >= realized - 0.005,
        "measured {measured:.4}, bound of the draws {realized:.4}"
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(!text.contains("held objects before"), "{text}");
    assert!(text.contains("for the objects this run drew"), "{text}");
}

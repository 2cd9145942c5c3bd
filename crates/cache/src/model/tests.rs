//! The model against the exact LRU simulator over the catalogue's own seeded draws.

use super::*;
use crate::lru;

/// The simulated hit ratio over `measured` requests after `warm` ones, at `rate` a second.
fn simulate(c: &Catalogue, capacity: Capacity, warm: u64, measured: u64, rate: f64) -> f64 {
    let mut sampler = c.sampler(0, 1);
    let mut cache = lru::Lru::new(capacity);
    let mut hits = 0;
    for i in 0..warm + measured {
        let id = sampler.next_id_at(i as f64 / rate);
        let ttl = c.ttl_of(id).map(|t| t as f64);
        let key = c.key(id, sampler.last_variant());
        let hit = cache.access(key, c.size_of(id), i as f64 / rate, ttl);
        if i >= warm && hit {
            hits += 1;
        }
    }
    hits as f64 / measured as f64
}

fn lru_ratio(c: &Catalogue, capacity: Capacity, rate: f64) -> f64 {
    let load = Load {
        catalogue: c,
        rate_per_s: rate,
        before: 0,
        window: 1,
    };
    predict(load, Some(capacity)).lru.unwrap().0
}

fn zipf(objects: u64, s: f64) -> Catalogue {
    Catalogue {
        objects,
        popularity: Popularity::Zipf(s),
        ..Catalogue::default()
    }
}

#[test]
fn che_agrees_with_an_exact_lru_on_objects() {
    // Che's approximation is within a point of the truth for catalogues of thousands
    // (Fricker et al.); the simulator's own noise over 400,000 requests is ~0.1 point.
    for (s, share) in [(0.8, 0.05), (0.8, 0.2), (1.0, 0.1), (0.6, 0.5)] {
        let c = zipf(10_000, s);
        let cap = Capacity::Objects((10_000.0 * share) as u64);
        let (model, sim) = (
            lru_ratio(&c, cap, 1.0),
            simulate(&c, cap, 100_000, 400_000, 1.0),
        );
        assert!(
            (model - sim).abs() < 0.01,
            "zipf:{s} {cap}: model {model:.4}, LRU {sim:.4}"
        );
    }
}

#[test]
fn che_agrees_on_bytes_with_sizes_that_vary() {
    let c = Catalogue {
        sizes: "lognormal:16k:1.0".parse().unwrap(),
        ..zipf(10_000, 0.9)
    };
    let total = c.total_bytes();
    for share in [0.05, 0.25] {
        let cap = Capacity::Bytes((total as f64 * share) as u64);
        let (model, sim) = (
            lru_ratio(&c, cap, 1.0),
            simulate(&c, cap, 100_000, 400_000, 1.0),
        );
        assert!(
            (model - sim).abs() < 0.015,
            "{cap}: model {model:.4}, LRU {sim:.4}"
        );
    }
}

#[test]
fn ttls_and_one_hit_wonders_agree_with_the_simulator() {
    // 1,000 requests a second; TTLs of 2-20 s against characteristic times of a few
    // seconds exercise both the TTL-bound and the eviction-bound regimes.
    let c = Catalogue {
        ttl: Some((2, 20)),
        one_hit_wonders: 0.1,
        ..zipf(5_000, 0.8)
    };
    for cap in [Capacity::Objects(250), Capacity::Objects(1_500)] {
        let (model, sim) = (
            lru_ratio(&c, cap, 1000.0),
            simulate(&c, cap, 100_000, 400_000, 1000.0),
        );
        assert!(
            (model - sim).abs() < 0.015,
            "{cap}: model {model:.4}, LRU {sim:.4}"
        );
    }
}

#[test]
fn churn_agrees_with_the_simulator() {
    // 1,000 requests a second over 5,000 objects, 500 of them replaced a second: each
    // object lives 10 s, against characteristic times of a few seconds (the small cache)
    // and beyond its life (the large one, and a cache that holds everything).
    let c = Catalogue {
        churn_per_s: Some(500.0),
        ..zipf(5_000, 0.8)
    };
    for cap in [
        Capacity::Objects(250),
        Capacity::Objects(1_500),
        Capacity::Objects(1_000_000),
    ] {
        let (model, sim) = (
            lru_ratio(&c, cap, 1000.0),
            simulate(&c, cap, 100_000, 400_000, 1000.0),
        );
        assert!(
            (model - sim).abs() < 0.015,
            "{cap}: model {model:.4}, LRU {sim:.4}"
        );
    }
    // Churn costs hits: the same cache without it hits more.
    let still = zipf(5_000, 0.8);
    let cap = Capacity::Objects(1_500);
    assert!(lru_ratio(&still, cap, 1000.0) > lru_ratio(&c, cap, 1000.0) + 0.02);
}

#[test]
fn a_round_of_replacements_renews_every_slot_once() {
    let c = Catalogue {
        churn_per_s: Some(1.0),
        ..zipf(1_000, 0.8)
    };
    let before: Vec<u64> = (0..1_000).map(|r| c.churned(r, 0)).collect();
    assert!(before.iter().enumerate().all(|(r, id)| *id == r as u64));
    let half: usize = (0..1_000).filter(|&r| c.churned(r, 500) != r).count();
    assert_eq!(half, 500, "500 replacements, 500 slots renewed");
    let round: Vec<u64> = (0..1_000).map(|r| c.churned(r, 1_000)).collect();
    let renewed: std::collections::HashSet<u64> = round.iter().copied().collect();
    assert_eq!(renewed.len(), 1_000);
    assert!(
        round
            .iter()
            .enumerate()
            .all(|(r, id)| *id != r as u64 && id & 0xff_ffff_ffff == r as u64)
    );
    // A renewed object has a path of its own, on its slot's host.
    assert_eq!(c.path(round[7]).split('?').next(), Some("/c/7.1"));
}

#[test]
fn a_catalogue_that_fits_hits_everything_but_what_expires() {
    let c = zipf(1_000, 0.8);
    let p = predict(
        Load {
            catalogue: &c,
            rate_per_s: 100.0,
            before: 0,
            window: 1,
        },
        Some(Capacity::Objects(1_000)),
    );
    let (ratio, time) = p.lru.unwrap();
    assert!((ratio - 1.0).abs() < 1e-9 && time.is_none(), "{:?}", p.lru);
    assert_eq!(p.ttl_bound, None);
}

#[test]
fn the_cold_bound_counts_first_requests() {
    let c = Catalogue {
        one_hit_wonders: 0.05,
        ..zipf(20_000, 0.8)
    };
    let (before, window) = (50_000u64, 100_000u64);
    let mut sampler = c.sampler(0, 1);
    let mut seen = std::collections::HashSet::new();
    let mut hits = 0u64;
    for i in 0..before + window {
        let fresh = seen.insert(sampler.next_id());
        if i >= before && !fresh {
            hits += 1;
        }
    }
    let sim = hits as f64 / window as f64;
    let load = Load {
        catalogue: &c,
        rate_per_s: 0.0,
        before,
        window,
    };
    let model = predict(load, None).cold_bound;
    assert!(
        (model - sim).abs() < 0.005,
        "model {model:.4}, infinite cache {sim:.4}"
    );
}

#[test]
fn the_hit_probability_joins_its_limits() {
    // TTL far beyond the characteristic time: plain LRU.
    let lru = hit_probability(2.0, 1.0, 1e6);
    assert!((lru - (1.0 - (-2.0f64).exp())).abs() < 1e-3, "{lru}");
    // TTL under it: the TTL cache.
    assert!((hit_probability(2.0, 5.0, 3.0) - 6.0 / 7.0).abs() < 1e-12);
    // Continuous where the two meet.
    let (below, above) = (
        hit_probability(2.0, 3.0, 3.0),
        hit_probability(2.0, 3.0, 3.0001),
    );
    assert!((below - above).abs() < 1e-3, "{below} {above}");
    // Rising with the TTL.
    let h: Vec<f64> = [4.0, 8.0, 16.0, 64.0]
        .iter()
        .map(|&ttl| hit_probability(0.5, 3.0, ttl))
        .collect();
    assert!(h.windows(2).all(|w| w[0] < w[1]), "{h:?}");
}

/// Variants keyed apart: each a cache object of its own at its share of the object's
/// requests. The LRU and the bound from empty against an exact LRU and an infinite cache of
/// the same draws, uniform and Zipf over the variants, the query's or the header's.
#[test]
fn variants_agree_with_the_simulator_keyed_on_each() {
    for variants in ["1", "4", "16", "16:vary", "8:query:zipf:1"] {
        let c = Catalogue {
            variants: Some(variants.parse().unwrap()),
            ..zipf(5_000, 0.8)
        };
        let cap = Capacity::Objects(2_000);
        let (model, sim) = (
            lru_ratio(&c, cap, 1.0),
            simulate(&c, cap, 100_000, 300_000, 1.0),
        );
        assert!(
            (model - sim).abs() < 0.01,
            "{variants}: model {model:.4}, LRU {sim:.4}"
        );
        let (before, window) = (20_000u64, 50_000u64);
        let mut sampler = c.sampler(0, 1);
        let mut seen = std::collections::HashSet::new();
        let mut hits = 0u64;
        for i in 0..before + window {
            let id = sampler.next_id();
            let fresh = seen.insert(c.key(id, sampler.last_variant()));
            hits += u64::from(i >= before && !fresh);
        }
        let sim = hits as f64 / window as f64;
        let load = Load {
            catalogue: &c,
            rate_per_s: 0.0,
            before,
            window,
        };
        let model = predict(load, None).cold_bound;
        assert!(
            (model - sim).abs() < 0.005,
            "{variants}: model {model:.4}, infinite cache {sim:.4}"
        );
    }
}

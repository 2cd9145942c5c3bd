//! What each burst of purges did, from a run's seconds whose misses are known.

use std::collections::BTreeMap;

use vload_analyze::purge::effects;
use vload_schema::{PurgeBurst, PurgeRecord};

use crate::util::synthetic;

fn burst(at_s: f64) -> PurgeBurst {
    PurgeBurst {
        at_s,
        took_s: 0.01,
        sent: 10,
        status_codes: BTreeMap::from([(200, 9), (405, 1)]),
        errors: 0,
        unsent: 0,
    }
}

#[test]
fn a_burst_shows_its_dip_its_extra_misses_and_its_refill() {
    // 1,000 requests a second, 2 misses a second at rest; bursts at 5 s and 8 s add 33 and
    // 46 misses, and the second burst never refills in what is seen.
    let mut run = synthetic("purges", 11, 1_000, 1e6, 7);
    let misses = [2, 2, 2, 2, 2, 22, 15, 2, 22, 15, 15];
    for (interval, m) in run.intervals.iter_mut().zip(misses) {
        interval.misses = m;
        interval.hits = interval.completed - m;
    }
    run.purges = Some(PurgeRecord {
        method: "PURGE".into(),
        header: None,
        every_s: 3.0,
        objects: 10,
        bursts: vec![burst(5.0), burst(8.0)],
    });
    let e = effects(&run);
    assert_eq!(e.len(), 2);
    assert_eq!((e[0].sent, e[0].ok), (10, 9));
    assert_eq!(e[0].hit_ratio_before, Some(0.998));
    assert_eq!(e[0].hit_ratio_low, Some(0.978));
    // 22 + 15 + 2 misses in the three seconds until the next burst, 2 a second at rest.
    assert!(
        (e[0].extra_misses.unwrap() - 33.0).abs() < 1e-9,
        "{:?}",
        e[0]
    );
    assert_eq!(e[0].refill_s, Some(3.0));
    // The second burst's baseline leaves out the seconds the first still disturbed (5 and
    // 6): it is second 7 alone.
    assert_eq!(e[1].hit_ratio_before, Some(0.998));
    assert!(
        (e[1].extra_misses.unwrap() - 46.0).abs() < 1e-9,
        "{:?}",
        e[1]
    );
    assert_eq!(e[1].refill_s, None);
    let text =
        vload_analyze::render::report::text::render(&vload_analyze::Summary::of(&run).unwrap());
    assert!(
        text.contains("2 of 20 purges were not answered 2xx"),
        "{text}"
    );
    assert!(text.contains("not within the seconds seen"), "{text}");
}

/// #45: while the cache still fills, misses above the rate before say little (they showed
/// 0, 0 and 18 extra misses for bursts of 50 objects all refetched): the misses on the
/// objects purged, counted on them, say each burst's 50 refetches.
#[test]
fn refetches_are_counted_on_the_objects_purged_while_the_cache_fills() {
    let mut run = synthetic("filling", 12, 1_000, 1e6, 7);
    // A cache filling: 400 misses a second falling by 30 a second; each burst's 50 purged
    // objects are refetched in the second after it (and are hits otherwise).
    for (i, interval) in run.intervals.iter_mut().enumerate() {
        interval.misses = 400 - 30 * i as u64;
        interval.hits = interval.completed - interval.misses;
        interval.purged_misses = if matches!(i, 3 | 6 | 9) { 50 } else { 0 };
        interval.purged_hits = 100 - interval.purged_misses;
    }
    run.purges = Some(PurgeRecord {
        method: "PURGE".into(),
        header: None,
        every_s: 3.0,
        objects: 50,
        bursts: [3.0, 6.0, 9.0]
            .into_iter()
            .map(|at| PurgeBurst {
                sent: 50,
                status_codes: BTreeMap::from([(200, 50)]),
                ..burst(at)
            })
            .collect(),
    });
    let e = effects(&run);
    assert_eq!(e.len(), 3);
    for effect in &e {
        assert_eq!(effect.extra_misses, Some(0.0), "{effect:?}");
        assert_eq!(effect.refetched, Some(50), "{effect:?}");
    }
    let text =
        vload_analyze::render::report::text::render(&vload_analyze::Summary::of(&run).unwrap());
    assert!(
        text.contains("50 misses on the 50 objects purged"),
        "{text}"
    );
}

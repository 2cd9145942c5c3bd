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

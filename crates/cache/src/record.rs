//! The catalogue and the model in a run file.

use vload_schema::{CacheModelRecord, CatalogueRecord, NormalisedModel, RunFile};

use crate::model::{Load, predict};
use crate::{Capacity, Catalogue, parse_capacity};

impl Catalogue {
    /// The catalogue a run file's record describes, from the record alone (a table of sizes
    /// is written out in its law; nothing is opened).
    ///
    /// # Errors
    /// A law that does not parse (an older run file's `file:PATH` law among them).
    pub fn from_record(r: &CatalogueRecord) -> Result<Catalogue, String> {
        let catalogue = Catalogue {
            objects: r.objects,
            popularity: r.popularity.parse()?,
            sizes: r.object_size.parse()?,
            ttl: r.ttl_s.map(|[lo, hi]| (lo, hi)),
            one_hit_wonders: r.one_hit_wonders,
            hosts: r.hosts,
            seed: r.seed,
            churn_per_s: r.churn_per_s,
            crawler: r.crawler.as_deref().map(str::parse).transpose()?,
            variants: r.variants.as_deref().map(str::parse).transpose()?,
            ranges: r.ranges.as_deref().map(str::parse).transpose()?,
        };
        catalogue.check()?;
        Ok(catalogue)
    }
}

/// What the model says a cache of `capacity` should have achieved in `run`'s measured
/// window: requests before it (its warm-up, and a warm-up run before it, `run.warmed`) warm
/// the cache, the window's rate drives the TTLs.
pub fn model_record(
    catalogue: &Catalogue,
    capacity: Option<Capacity>,
    run: &RunFile,
) -> CacheModelRecord {
    let before: u64 = run
        .intervals
        .iter()
        .filter(|i| i.warmup)
        .map(|i| i.sent)
        .sum::<u64>()
        + run.warmed.as_ref().map_or(0, |w| w.requests);
    let window = run.totals.sent;
    let rate = if run.window.measured_s > 0.0 {
        window as f64 / run.window.measured_s
    } else {
        0.0
    };
    // After a pass every object was asked once: for the cold bound that is as if the cache
    // had seen endless requests (each object's first request is behind it).
    let passed = run
        .warmed
        .as_ref()
        .is_some_and(|w| w.until == "pass" && w.reached);
    let load = Load {
        catalogue,
        rate_per_s: rate,
        before: if passed { u64::MAX >> 16 } else { before },
        window,
    };
    let prediction = predict(load, capacity);
    let record = CacheModelRecord {
        capacity: capacity.map(|c| c.to_string()),
        lru_hit_ratio: prediction.lru.map(|(h, _)| h),
        lru_characteristic_time_s: prediction.lru.and_then(|(_, t)| t),
        lru_human_hit_ratio: None,
        cold_bound: prediction.cold_bound,
        realized_cold_bound: None,
        ttl_bound: prediction.ttl_bound,
        normalised: None,
        rate_per_s: rate,
        requests_before: before,
        requests_window: window,
    };
    match (catalogue.crawler, catalogue.variants) {
        (Some(crawler), _) => with_crawler(record, catalogue, capacity, crawler),
        (None, Some(_)) => {
            let one = Catalogue {
                variants: None,
                ..catalogue.clone()
            };
            let normalised = predict(
                Load {
                    catalogue: &one,
                    ..load
                },
                capacity,
            );
            CacheModelRecord {
                normalised: Some(NormalisedModel {
                    lru_hit_ratio: normalised.lru.map(|(h, _)| h),
                    cold_bound: normalised.cold_bound,
                    ttl_bound: normalised.ttl_bound,
                }),
                ..record
            }
        }
        (None, None) => record,
    }
}

/// The model of a catalogue with a crawler beside it: the LRU's hit ratios from a sampled
/// simulation with the crawler (over all requests, and the human ones alone), and the bounds
/// of any cache with the crawler's share taken out (its new URLs never hit) or counted as
/// hits (a crawl may hit: the bound stays a bound).
fn with_crawler(
    mut record: CacheModelRecord,
    catalogue: &Catalogue,
    capacity: Option<Capacity>,
    crawler: crate::Crawler,
) -> CacheModelRecord {
    let lru = capacity.and_then(|cap| {
        let rate = record.rate_per_s.max(1.0);
        crate::policy::shards::predict(
            catalogue,
            rate,
            cap,
            &[crate::policy::Policy::Lru],
            Some(crawler),
        )
    });
    let lru = lru.and_then(|p| p.first().copied());
    record.lru_hit_ratio = lru.map(|p| p.hit_ratio);
    record.lru_human_hit_ratio = lru.map(|p| p.human_hit_ratio);
    record.lru_characteristic_time_s = None;
    let c = crawler.share;
    let crawl = if crawler.unique { 0.0 } else { c };
    record.cold_bound = record.cold_bound * (1.0 - c) + crawl;
    record.ttl_bound = record.ttl_bound.map(|b| b * (1.0 - c) + crawl);
    record
}

/// The model again for a run whose totals changed (a merge of shards), from what its
/// file records; `None` when the catalogue cannot be rebuilt (a size file that is gone).
pub fn remodel(run: &RunFile) -> Option<CacheModelRecord> {
    let catalogue = Catalogue::from_record(run.plan.catalogue.as_ref()?).ok()?;
    let capacity = run
        .cache_model
        .as_ref()
        .and_then(|m| m.capacity.as_deref())
        .and_then(|c| parse_capacity(c).ok());
    Some(model_record(&catalogue, capacity, run))
}

//! A catalogue's hit ratio under any replacement policy, before the run: a spatially sampled
//! simulation (SHARDS, Waldspurger et al., FAST 2015). The objects whose hashed id falls
//! under a rate R are kept, the cache is scaled to R of its capacity, and the requests for
//! the kept objects are drawn directly (an alias table over their probabilities, the crawl
//! over them in order, new ids for one-hit wonders at R of their share), so the cost is the
//! kept objects', not the catalogue's: R is chosen to keep about [`KEPT`] objects and at
//! least [`KEPT_CAPACITY`] of the cache's. The same seed gives the same figure.
//!
//! Stratified: the [`TOP`] most popular objects are all kept. Sampled alone, whether the few
//! objects that take most requests fell in the sample moved the figure by ten points (a
//! million objects of Zipf 0.9: 37.9% against the exact 48.0%). A kept-for-sure object
//! stands for itself, not for 1/R objects: it costs the scaled cache R of what a sampled one
//! costs, and its requests count 1 against a sampled one's 1/R.

use super::{Policy, Replacement};
use crate::hash::{mix, unit};
use crate::popularity::Popularity;
use crate::{Capacity, Catalogue, Crawler};

/// Objects a sampled catalogue keeps (about).
pub const KEPT: u64 = 32_768;
/// Of those, the sampled cache holds at least this many (where the catalogue allows).
pub const KEPT_CAPACITY: u64 = 2_048;
/// The most popular objects, all kept.
pub const TOP: u64 = 8_192;
/// A sampled object's cost in the scaled cache (a kept-for-sure one costs R of it).
const UNIT: f64 = 1_024.0;
/// Sampled requests before the hits are counted, and counted, at the least.
const LEAST: u64 = 200_000;
/// ... and at the most, each.
const MOST: u64 = 2_000_000;

/// What a policy should hit for a catalogue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyPrediction {
    /// The policy.
    pub policy: Policy,
    /// Hits over all the requests counted.
    pub hit_ratio: f64,
    /// Hits over the catalogue's own (human) requests, the crawler's left out.
    pub human_hit_ratio: f64,
}

/// The sampled workload: what was kept and how its requests come.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// The rate R objects beyond the [`TOP`] were kept at.
    pub rate: f64,
    /// Objects below this rank are all kept.
    pub top: u64,
    /// The kept objects' ids, by rank.
    pub kept: Vec<u64>,
    /// The scaled cache's capacity, in [`UNIT`]s of a sampled object's cost.
    scaled: u64,
    /// Whether costs are bytes (else one an object).
    bytes: bool,
    alias: Alias,
    /// Of a sampled request, cumulatively: the chance it is drawn by popularity, by the hot
    /// set's crawl in order, is a one-hit wonder, or (the rest) is the crawler's.
    mixture: [f64; 3],
    crawler: Option<Crawler>,
    /// Seconds between sampled requests.
    step_s: f64,
}

/// Predicts the steady hit ratio of each of `policies` for `catalogue` at `rate_per_s`
/// through a cache of `capacity`; `None` for a catalogue with churn (its objects change
/// under the simulation) or one the sample keeps nothing of.
pub fn predict(
    catalogue: &Catalogue,
    rate_per_s: f64,
    capacity: Capacity,
    policies: &[Policy],
    crawler: Option<Crawler>,
) -> Option<Vec<PolicyPrediction>> {
    let sampled = Sampled::new(catalogue, rate_per_s, capacity, crawler)?;
    let n = (20 * sampled.kept.len() as u64).clamp(LEAST, MOST);
    Some(
        policies
            .iter()
            .map(|&policy| {
                let mut cache = policy.cache(Capacity::Bytes(sampled.scaled));
                let [human, crawled] = sampled.run(catalogue, cache.as_mut(), n, n);
                let ratio = |hits: f64, total: f64| hits / total.max(f64::MIN_POSITIVE);
                PolicyPrediction {
                    policy,
                    hit_ratio: ratio(human.0 + crawled.0, human.1 + crawled.1),
                    human_hit_ratio: ratio(human.0, human.1),
                }
            })
            .collect(),
    )
}

impl Sampled {
    /// The sample of `catalogue` for a cache of `capacity`, with a crawler's share beside.
    pub fn new(
        catalogue: &Catalogue,
        rate_per_s: f64,
        capacity: Capacity,
        crawler: Option<Crawler>,
    ) -> Option<Sampled> {
        if catalogue.churn_per_s.is_some() || catalogue.objects == 0 {
            return None;
        }
        let n = catalogue.objects;
        let held = match capacity {
            Capacity::Objects(c) => c,
            Capacity::Bytes(b) => b / catalogue.sizes.mean().max(1.0) as u64,
        }
        .max(1);
        let top = if n > KEPT { TOP.min(n) } else { n };
        let rest = n - top;
        let rate = if rest == 0 {
            1.0
        } else {
            ((KEPT - TOP.min(KEPT)) as f64 / rest as f64)
                .max(KEPT_CAPACITY as f64 / held as f64)
                .min(1.0)
        };
        let seed = mix(catalogue.seed ^ 0x5a4d_5a4d);
        let kept: Vec<u64> = (0..n)
            .filter(|&id| id < top || rate >= 1.0 || unit(mix(seed ^ mix(id))) < rate)
            .collect();
        if kept.is_empty() {
            return None;
        }
        let (bytes, limit) = match capacity {
            Capacity::Objects(c) => (false, c),
            Capacity::Bytes(b) => (true, b),
        };
        let scaled = ((limit as f64 * rate * UNIT).round() as u64).max(1);
        let (weights, share, crawl_share) = popularity_weights(catalogue, &kept);
        let f = catalogue.one_hit_wonders;
        let c = crawler.map_or(0.0, |c| c.share);
        let kept_share = kept.len() as f64 / n as f64;
        let masses = [
            (1.0 - c) * (1.0 - f) * share * weights.iter().sum::<f64>(),
            (1.0 - c) * (1.0 - f) * crawl_share * kept_share,
            // New URLs are sampled like the rest.
            (1.0 - c) * f * rate,
            c * if crawler.is_some_and(|c| c.unique) {
                rate
            } else {
                kept_share
            },
        ];
        let total: f64 = masses.iter().sum();
        let cumulative = |k: usize| masses[..=k].iter().sum::<f64>() / total;
        Some(Sampled {
            rate,
            top,
            kept,
            scaled,
            bytes,
            alias: Alias::new(&weights),
            mixture: [cumulative(0), cumulative(1), cumulative(2)],
            crawler,
            step_s: 1.0 / (rate_per_s.max(1e-9) * total),
        })
    }

    /// `warm` sampled requests through `cache` (of [`Sampled::scaled`] bytes), then `counted`
    /// more: the human requests' hits and count, and the crawler's, each request weighted by
    /// the objects it stands for.
    pub fn run(
        &self,
        catalogue: &Catalogue,
        cache: &mut dyn Replacement,
        warm: u64,
        counted: u64,
    ) -> [(f64, f64); 2] {
        let mut state = mix(catalogue.seed ^ 0x0bad_cafe);
        let mut uniform = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            unit(mix(state))
        };
        let mut next = Next::default();
        let mut counts = [(0.0, 0.0); 2];
        for k in 0..warm + counted {
            let (id, class) = self.draw(catalogue, &mut next, &mut uniform);
            let now = k as f64 * self.step_s;
            let ttl = catalogue.ttl_of(id).map(|t| t as f64);
            // A sampled object stands for 1/R objects: it costs one unit of the scaled
            // cache and counts 1/R; one kept for sure costs R units and counts one.
            let (cost, weight) = if id < self.top {
                (self.rate, 1.0)
            } else {
                (1.0, 1.0 / self.rate)
            };
            let size = if self.bytes {
                catalogue.size_of(id) as f64
            } else {
                1.0
            };
            let units = ((size * cost * UNIT).round() as u64).max(1);
            let hit = cache.access(id, units, now, ttl);
            if k >= warm {
                counts[class].1 += weight;
                counts[class].0 += if hit { weight } else { 0.0 };
            }
        }
        counts
    }

    /// The next sampled request: its id, and 0 for a human request, 1 for the crawler's.
    fn draw(
        &self,
        catalogue: &Catalogue,
        next: &mut Next,
        uniform: &mut impl FnMut() -> f64,
    ) -> (u64, usize) {
        let u = uniform();
        let kept = self.kept.len();
        // New URLs: a one-hit wonder's id is even past the catalogue, the crawler's odd.
        let mut new = |odd: u64| {
            next.unique += 1;
            catalogue.objects + 2 * next.unique + odd
        };
        if u < self.mixture[0] {
            (self.kept[self.alias.draw(uniform(), uniform())], 0)
        } else if u < self.mixture[1] {
            next.crawled += 1;
            (self.kept[(next.crawled - 1) % kept], 0)
        } else if u < self.mixture[2] {
            (new(0), 0)
        } else if self.crawler.is_some_and(|c| c.unique) {
            (new(1), 1)
        } else {
            // The crawler walks the catalogue from its least popular object up.
            next.crawler += 1;
            (self.kept[kept - 1 - (next.crawler - 1) % kept], 1)
        }
    }
}

/// The popularity law's weight of each kept object, the share of the human requests drawn
/// by it, and the share that crawls the catalogue in order (a hot set's rest).
fn popularity_weights(catalogue: &Catalogue, kept: &[u64]) -> (Vec<f64>, f64, f64) {
    let n = catalogue.objects;
    let p = &catalogue.popularity;
    match *p {
        Popularity::Hot { objects, requests } => {
            let hot = Popularity::hot_objects(objects, n);
            let weights = kept
                .iter()
                .map(|&id| if id < hot { 1.0 / hot as f64 } else { 0.0 })
                .collect();
            (weights, requests, 1.0 - requests)
        }
        _ => {
            let norm = p.norm(n);
            let weights = kept.iter().map(|&id| p.probability(id, n, norm)).collect();
            (weights, 1.0, 0.0)
        }
    }
}

/// Where the sampled streams in order are.
#[derive(Debug, Default)]
struct Next {
    crawled: usize,
    crawler: usize,
    unique: u64,
}

/// Walker's alias method (Vose's construction): a draw from a discrete law in O(1).
#[derive(Debug, Clone)]
struct Alias {
    chance: Vec<f64>,
    alias: Vec<usize>,
}

impl Alias {
    fn new(weights: &[f64]) -> Alias {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        let mut scaled: Vec<f64> = weights
            .iter()
            .map(|w| {
                if total > 0.0 {
                    w * n as f64 / total
                } else {
                    1.0
                }
            })
            .collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| scaled[i] < 1.0);
        let mut chance = vec![1.0; n];
        let mut alias: Vec<usize> = (0..n).collect();
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            chance[s] = scaled[s];
            alias[s] = l;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        Alias { chance, alias }
    }

    /// An index, from two uniform numbers in [0, 1).
    fn draw(&self, a: f64, b: f64) -> usize {
        let i = ((a * self.chance.len() as f64) as usize).min(self.chance.len() - 1);
        if b < self.chance[i] { i } else { self.alias[i] }
    }
}

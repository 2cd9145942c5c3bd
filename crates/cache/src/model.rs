//! What a cache should achieve for a catalogue, under the independent reference model
//! (each request picks object i with probability p_i, independently).
//!
//! - **LRU, warm** (Che, Tung and Wang 2002; Fricker, Robert and Roberts 2012): an LRU of
//!   capacity C keeps an object for a characteristic time T after its last request, the
//!   root of Σ_i s_i·o_i(T) = C, and object i hits with probability h_i(T) = o_i(T).
//!   Without a TTL, h = 1 - e^(-λT). With the origin's max-age τ (set at a miss, not renewed
//!   by hits), each miss starts a cycle of λ·∫₀^τ R(t) dt hits on average, where R(t) is the
//!   chance that no gap between requests exceeds T in [0, t]; R = 1 up to T, drops by
//!   e^(-λT) there, and then follows R'(t) = -λ e^(-λT) R(t - T). So h = H / (1 + H)
//!   (for τ ≤ T, the TTL cache's λτ / (1 + λτ)); by PASTA the share of time an object is
//!   held is its hit probability, which closes the capacity equation. One-hit wonders hold
//!   min(T, τ) each and never hit.
//! - **Any cache, cold** (compulsory misses): over a window of n requests after m requests
//!   since the cache was empty, object i first appears in the window with probability
//!   (1 - p_i)^m - (1 - p_i)^(m + n): no cache, however large, hits those.
//! - **Any cache under the TTLs, warm**: an infinite cache whose objects expire hits
//!   λτ / (1 + λτ) of object i's requests.
//!
//! Ranks are grouped where their probabilities differ by under 1% (every rank alone at the
//! top), so a model of ten million objects costs a few thousand evaluations.

use crate::{Capacity, Catalogue, Popularity};

/// Ranks per group grow by this factor.
const GROUPING: f64 = 1.01;
/// Points of a TTL range the model averages over.
const TTL_POINTS: u64 = 8;

/// The workload a prediction is for.
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    /// The catalogue.
    pub catalogue: &'a Catalogue,
    /// Requests a second (only TTLs make time matter).
    pub rate_per_s: f64,
    /// Requests sent since the cache was (assumed) empty, before the window.
    pub before: u64,
    /// Requests in the window.
    pub window: u64,
}

/// What a cache should have achieved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// An LRU of the capacity asked, warm: hit ratio and characteristic time (seconds; none
    /// when the whole catalogue fits).
    pub lru: Option<(f64, Option<f64>)>,
    /// The most any cache can hit in the window, starting empty when the attack started.
    pub cold_bound: f64,
    /// The most any cache can hit once warm when objects expire at the origin's max-age.
    pub ttl_bound: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    /// Objects in the group.
    count: f64,
    /// Each one's probability (their mean).
    p: f64,
    /// Their bytes together.
    bytes: f64,
}

fn groups(c: &Catalogue) -> Vec<Group> {
    let n = c.objects;
    let norm = c.popularity.norm(n);
    let mut out = Vec::new();
    let mut start = 0u64;
    while start < n {
        let end = match c.popularity {
            Popularity::Zipf(_) => ((start as f64 * GROUPING).ceil() as u64).max(start + 1),
            Popularity::Uniform => n,
            Popularity::Hot { objects, .. } => {
                let hot = Popularity::hot_objects(objects, n);
                if start < hot { hot } else { n }
            }
        }
        .min(n);
        let (mut p, mut bytes) = (0.0, 0.0);
        for rank in start..end {
            p += c.popularity.probability(rank, n, norm);
            bytes += c.size_of(rank) as f64;
        }
        let count = (end - start) as f64;
        out.push(Group {
            count,
            p: p / count,
            bytes,
        });
        start = end;
    }
    match c.variants {
        Some(variants) => with_variants(&out, &variants.weights()),
        None => out,
    }
}

/// The groups of a cache that keys on each variant: every object's group once for each
/// group of its variants, each variant asked at its share of the object's probability and
/// as large as the object.
fn with_variants(groups: &[Group], weights: &[(f64, f64)]) -> Vec<Group> {
    groups
        .iter()
        .flat_map(|g| {
            weights.iter().map(move |&(count, share)| Group {
                count: g.count * count,
                p: g.p * share,
                bytes: g.bytes * count,
            })
        })
        .collect()
}

/// The TTLs the model averages over, each with its weight.
fn ttl_points(c: &Catalogue) -> Vec<(f64, f64)> {
    match c.ttl {
        None => vec![(f64::INFINITY, 1.0)],
        Some((lo, hi)) if lo == hi => vec![(lo as f64, 1.0)],
        Some((lo, hi)) => {
            let k = TTL_POINTS.min(hi - lo + 1);
            let step = (hi - lo) as f64 / k as f64;
            (0..k)
                .map(|j| (lo as f64 + step * (j as f64 + 0.5), 1.0 / k as f64))
                .collect()
        }
    }
}

/// The hit probability of an object asked at rate `lambda` in an LRU of characteristic
/// time `t` (infinite: never evicted) whose copies expire `ttl` after a miss.
pub fn hit_probability(lambda: f64, t: f64, ttl: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    if ttl.is_infinite() {
        return if t.is_infinite() {
            1.0
        } else {
            -(-lambda * t).exp_m1()
        };
    }
    if ttl <= t {
        return lambda * ttl / (1.0 + lambda * ttl);
    }
    let hits = lambda * held(lambda, t, ttl);
    hits / (1.0 + hits)
}

/// The hit probability of an object asked at rate `lambda` in an LRU of characteristic
/// time `t` (infinite: never evicted) whose slot gets a new object every `life` seconds, at
/// a phase of its own: a request `u` seconds into its object's life hits when the one
/// before it came within min(t, u), so h = (m - (1 - e^(-λm))/λ + (life - m)(1 - e^(-λm))) /
/// life with m = min(t, life). By PASTA it is also the share of time the object is held.
pub fn churn_hit_probability(lambda: f64, t: f64, life: f64) -> f64 {
    if lambda <= 0.0 || life <= 0.0 {
        return 0.0;
    }
    let m = t.min(life);
    let seen = -(-lambda * m).exp_m1();
    ((m - seen / lambda + (life - m) * seen) / life).clamp(0.0, 1.0)
}

/// How many replaced objects a slot has in the cache on average: each stays until `t` after
/// its last request, if it had one in its `life`; by Little's law, one death every `life`
/// seconds times the linger E[(t - A)⁺], A the age of its last request (A < life).
fn replaced_held(lambda: f64, t: f64, life: f64) -> f64 {
    if lambda <= 0.0 || life <= 0.0 {
        return 0.0;
    }
    if t.is_infinite() {
        return f64::INFINITY;
    }
    let m = t.min(life);
    let gone = (-lambda * m).exp();
    let seen = 1.0 - gone;
    let linger = t * seen - (seen / lambda - m * gone);
    linger.max(0.0) / life
}

/// ∫₀^τ R(t) dt: how long a copy stays after a miss, on average, when eviction comes after
/// a gap over `t` and expiry at `ttl` > `t`.
fn held(lambda: f64, t: f64, ttl: f64) -> f64 {
    const STEPS: usize = 32;
    const PERIODS: usize = 6;
    let a = lambda * t;
    let c = lambda * (-a).exp();
    let d = t / STEPS as f64;
    // R on a grid of step d: 1 up to t, then the delay equation by the trapezoid rule.
    let mut r = vec![1.0; STEPS + 1];
    r[STEPS] = -(-a).exp_m1();
    let mut integral = t;
    let mut now = t;
    let mut j = STEPS;
    while now < ttl && j < STEPS * PERIODS {
        let step = d.min(ttl - now);
        let lagged = (r[j - STEPS] + r[j + 1 - STEPS]) / 2.0;
        let next = (r[j] - c * step * lagged).max(0.0);
        integral += step * (r[j] + next) / 2.0;
        r.push(next);
        now += step;
        j += 1;
    }
    if now >= ttl {
        return integral;
    }
    // The tail decays as e^(-θt), θ·t the smallest root of x = a e^(-a) e^x.
    let k = a * (-a).exp();
    let mut x = 0.0f64;
    for _ in 0..500 {
        x = k * x.exp();
    }
    let theta = x / t;
    let rest = ttl - now;
    let tail = if theta * rest < 1e-12 {
        rest
    } else {
        -(-theta * rest).exp_m1() / theta
    };
    integral + r[j] * tail
}

/// What the caches should achieve for `load` (an LRU only when `capacity` is given).
pub fn predict(load: Load<'_>, capacity: Option<Capacity>) -> Prediction {
    let c = load.catalogue;
    let groups = groups(c);
    let ttls = ttl_points(c);
    let f = c.one_hit_wonders;
    let rate = if load.rate_per_s > 0.0 {
        load.rate_per_s
    } else {
        1.0
    };
    let irm = (1.0 - f) * rate;
    // With --churn a slot's object lives N / churn seconds.
    let life = c.churn_per_s.map(|churn| c.objects as f64 / churn);
    // Hit ratio over all requests, and bytes or objects held, at characteristic time t.
    let at = |t: f64| -> (f64, f64) {
        let (mut hits, mut held) = (0.0, 0.0);
        for g in &groups {
            let (h, dead) = match life {
                Some(life) => (
                    churn_hit_probability(irm * g.p, t, life),
                    replaced_held(irm * g.p, t, life),
                ),
                None => (
                    ttls.iter()
                        .map(|&(ttl, w)| w * hit_probability(irm * g.p, t, ttl))
                        .sum(),
                    0.0,
                ),
            };
            hits += g.count * g.p * h;
            held += (h + dead)
                * match capacity {
                    Some(Capacity::Objects(_)) => g.count,
                    _ => g.bytes,
                };
        }
        let lives: f64 = ttls.iter().map(|&(ttl, w)| w * t.min(ttl)).sum();
        let each = match capacity {
            Some(Capacity::Objects(_)) => 1.0,
            _ => c.sizes.mean(),
        };
        let wonders = if f > 0.0 {
            f * rate * lives * each
        } else {
            0.0
        };
        ((1.0 - f) * hits, held + wonders)
    };
    let lru = capacity.map(|cap| {
        let limit = match cap {
            Capacity::Bytes(b) | Capacity::Objects(b) => b as f64,
        };
        if at(f64::INFINITY).1 <= limit * (1.0 + 1e-9) {
            return (at(f64::INFINITY).0, None);
        }
        // Bisection on log t: what is held grows with t.
        let (mut lo, mut hi) = (1e-9f64, 1e12f64);
        for _ in 0..100 {
            let mid = (lo * hi).sqrt();
            if at(mid).1 > limit {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let t = (lo * hi).sqrt();
        (at(t).0, Some(t))
    });
    let warm_bound = (c.ttl.is_some() || life.is_some()).then(|| at(f64::INFINITY).0);
    let cold = cold_bound(&groups, f, load.before, load.window);
    Prediction {
        lru,
        // New objects are first requests too: from empty, no cache beats either bound.
        cold_bound: match (life, warm_bound) {
            (Some(_), Some(warm)) => cold.min(warm),
            _ => cold,
        },
        ttl_bound: warm_bound,
    }
}

/// The most any cache hits in a window of `window` requests after `before`, from empty.
fn cold_bound(groups: &[Group], f: f64, before: u64, window: u64) -> f64 {
    if window == 0 {
        return 0.0;
    }
    let (m, n) = ((1.0 - f) * before as f64, (1.0 - f) * window as f64);
    let first: f64 = groups
        .iter()
        .map(|g| {
            let stay = (1.0 - g.p).ln();
            g.count * ((stay * m).exp() - (stay * (m + n)).exp())
        })
        .sum();
    let misses = first + f * window as f64;
    (1.0 - misses / window as f64).max(0.0)
}

#[cfg(test)]
mod tests;

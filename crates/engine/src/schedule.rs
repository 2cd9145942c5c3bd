//! Open-loop due times: a rate plan's arrivals paced exactly, or a seeded Poisson process
//! that follows the plan's rate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rate::Curve;

/// The due times of one worker's share of an open-loop attack.
///
/// With W workers, worker w of a paced attack takes arrivals w, w + W, w + 2W, … of the
/// global sequence: arrival k is due at Λ⁻¹(k), where Λ counts the arrivals the plan makes
/// due by a time (k / rate for a plain rate), so together the workers send exactly that
/// sequence. A Poisson attack gives each worker an independent non-homogeneous Poisson
/// process of rate λ(t) / W (the superposition of independent Poisson processes is Poisson
/// with the summed rate): a unit-rate process's arrival times S, mapped through Λ⁻¹(W S).
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    t0: Instant,
    curve: Arc<Curve>,
    /// The piece of the curve the last due time fell in.
    cursor: usize,
    /// The next due time from t0, `None` once the plan has ended.
    next: Option<Duration>,
    /// The stage of the next due request.
    stage: u32,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Paced {
        k: u64,
        step: u64,
    },
    Poisson {
        rng: SplitMix64,
        workers: f64,
        /// The unit-rate process's time of the next arrival.
        s: f64,
    },
}

impl Schedule {
    /// Worker `worker` of `workers`' share of `curve`'s arrivals, paced exactly.
    pub(crate) fn paced(t0: Instant, curve: Arc<Curve>, worker: u32, workers: u32) -> Self {
        let kind = Kind::Paced {
            k: u64::from(worker),
            step: u64::from(workers),
        };
        Schedule::start(t0, curve, kind)
    }

    /// Worker `worker` of `workers`' Poisson process following `curve`, seeded.
    pub(crate) fn poisson(
        t0: Instant,
        curve: Arc<Curve>,
        seed: u64,
        worker: u32,
        workers: u32,
    ) -> Self {
        let mut rng = SplitMix64(seed ^ u64::from(worker).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let s = rng.exponential();
        let kind = Kind::Poisson {
            rng,
            workers: f64::from(workers),
            s,
        };
        Schedule::start(t0, curve, kind)
    }

    fn start(t0: Instant, curve: Arc<Curve>, kind: Kind) -> Self {
        let mut schedule = Schedule {
            t0,
            curve,
            cursor: 0,
            next: None,
            stage: 0,
            kind,
        };
        schedule.place();
        schedule
    }

    /// When the next request is due (far in the future once the plan has ended).
    #[inline]
    pub(crate) fn due(&self) -> Instant {
        // The cli bounds rates and durations; a schedule beyond the clock's range is "never".
        self.t0
            .checked_add(self.next.unwrap_or(NEVER))
            .or_else(|| self.t0.checked_add(NEVER))
            .unwrap_or(self.t0)
    }

    /// A Poisson schedule's position at `at` on the plan's clock: the arrivals due by then
    /// over the worker's share, Λ(t) / W; `None` for a paced schedule.
    #[inline]
    pub(crate) fn rescaled(&self, at: Instant) -> Option<f64> {
        match self.kind {
            Kind::Poisson { workers, .. } => {
                let t = at.saturating_duration_since(self.t0).as_secs_f64();
                Some(self.curve.at(t) / workers)
            }
            Kind::Paced { .. } => None,
        }
    }

    /// The plan's cumulative arrivals this schedule follows.
    pub(crate) fn curve(&self) -> Arc<Curve> {
        self.curve.clone()
    }

    /// The stage of the plan the next request belongs to (0 for a plain rate).
    #[inline]
    pub(crate) fn stage(&self) -> u32 {
        self.stage
    }

    /// Moves on to the request after.
    #[inline]
    pub(crate) fn advance(&mut self) {
        match &mut self.kind {
            Kind::Paced { k, step } => *k += *step,
            Kind::Poisson { rng, s, .. } => *s += rng.exponential(),
        }
        self.place();
    }

    /// The due time and stage of the current arrival.
    fn place(&mut self) {
        let n = match &self.kind {
            Kind::Paced { k, .. } => *k as f64,
            Kind::Poisson { workers, s, .. } => workers * s,
        };
        match self.curve.time_of(n, &mut self.cursor) {
            Some((t, stage)) => {
                self.next = Some(Duration::try_from_secs_f64(t).unwrap_or(NEVER));
                self.stage = stage;
            }
            None => self.next = None,
        }
    }

    /// Skips the requests due before `cutoff`, at most `limit` of them, and returns how
    /// many it skipped in each stage: the requests a frozen client can no longer send.
    pub(crate) fn skip_before(&mut self, cutoff: Instant, limit: u64) -> Vec<(u32, u64)> {
        let cutoff_s = cutoff.saturating_duration_since(self.t0).as_secs_f64();
        let mut skipped: Vec<(u32, u64)> = Vec::new();
        let mut left = limit;
        while left > 0 && self.next.is_some() && self.due() < cutoff {
            // One stage at a time, so each skipped request is counted in its own stage.
            let stage = self.stage;
            let until = cutoff_s.min(self.curve.stage_end(stage));
            let n = self.skip_within(until, left);
            if n == 0 {
                break;
            }
            left -= n;
            match skipped.last_mut() {
                Some((s, count)) if *s == stage => *count += n,
                _ => skipped.push((stage, n)),
            }
        }
        skipped
    }

    /// Skips the next `limit` requests (fewer if the plan ends first), whenever they fall
    /// due; returns how many it skipped in each stage.
    pub(crate) fn skip(&mut self, limit: u64) -> Vec<(u32, u64)> {
        let never = self.t0.checked_add(NEVER).unwrap_or(self.t0);
        self.skip_before(never, limit)
    }

    /// Skips the requests due before `until_s`, at most `limit`: a long freeze at a high
    /// rate is jumped over in one step, the last one or two settled one by one.
    fn skip_within(&mut self, until_s: f64, limit: u64) -> u64 {
        let mut skipped = 0;
        let target = self.curve.at(until_s);
        match &mut self.kind {
            Kind::Paced { k, step } => {
                let first_at = target.floor() as u64;
                if first_at > *k + *step {
                    let jump = ((first_at - *k) / *step).saturating_sub(1).min(limit);
                    *k += jump * *step;
                    skipped = jump;
                }
            }
            Kind::Poisson { rng, workers, s } => {
                let expected = target / *workers - *s;
                if expected > 10_000.0 {
                    // Arrivals in the gap are Poisson(expected) in unit time; the next one
                    // after it is an exponential gap past it (the process has no memory).
                    let n = (expected + expected.sqrt() * rng.normal()).round().max(0.0) as u64;
                    skipped = (1 + n).min(limit);
                    *s = target / *workers + rng.exponential();
                }
            }
        }
        self.place();
        let until = self.t0 + Duration::try_from_secs_f64(until_s).unwrap_or(NEVER);
        while skipped < limit && self.next.is_some() && self.due() < until {
            self.advance();
            skipped += 1;
        }
        skipped
    }
}

/// A due time this far ahead is never reached.
const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

/// SplitMix64: small, fast, and fixed here so a seed means the same schedule in every
/// vload version (a generator from a crate may change its stream between releases).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `ln` is finite.
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Exponential with mean 1.
    fn exponential(&mut self) -> f64 {
        -self.unit().ln()
    }

    /// Standard normal, by Box-Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::{RatePlan, RateStage};

    fn curve(rate: f64) -> Arc<Curve> {
        Arc::new(Curve::new(&RatePlan::constant(rate), Duration::ZERO))
    }

    fn constant(t0: Instant, rate: f64, worker: u32, workers: u32) -> Schedule {
        Schedule::paced(t0, curve(rate), worker, workers)
    }

    fn poisson(t0: Instant, rate: f64, seed: u64, worker: u32, workers: u32) -> Schedule {
        Schedule::poisson(t0, curve(rate), seed, worker, workers)
    }

    fn total(skipped: Vec<(u32, u64)>) -> u64 {
        skipped.iter().map(|(_, n)| n).sum()
    }

    fn offsets(mut s: Schedule, n: usize) -> Vec<f64> {
        let t0 = s.t0;
        (0..n)
            .map(|_| {
                let d = (s.due() - t0).as_secs_f64();
                s.advance();
                d
            })
            .collect()
    }

    #[test]
    fn constant_workers_interleave_into_the_global_schedule() {
        let t0 = Instant::now();
        let mut all: Vec<f64> = (0..3)
            .flat_map(|w| offsets(constant(t0, 100.0, w, 3), 10))
            .collect();
        all.sort_by(f64::total_cmp);
        for (k, t) in all.iter().enumerate() {
            assert!((t - k as f64 / 100.0).abs() < 1e-9, "request {k} at {t}");
        }
    }

    #[test]
    fn skipping_a_freeze_counts_what_fell_due() {
        let t0 = Instant::now();
        // 500/s over 2 workers, frozen from 1.2 s to 3.0 s: 900 due in the gap, 450 each.
        for w in 0..2 {
            let mut s = constant(t0, 500.0, w, 2);
            while s.due() < t0 + Duration::from_millis(1200) {
                s.advance();
            }
            let skipped = total(s.skip_before(t0 + Duration::from_secs(3), u64::MAX));
            assert_eq!(skipped, 450, "worker {w}");
            assert!(s.due() >= t0 + Duration::from_secs(3));
        }
        // A limit caps the count.
        let mut s = constant(t0, 500.0, 0, 1);
        assert_eq!(total(s.skip_before(t0 + Duration::from_secs(3), 7)), 7);
        // An hour at 10M/s is skipped at once, not one request at a time.
        let mut s = constant(t0, 1e7, 0, 1);
        let skipped = total(s.skip_before(t0 + Duration::from_secs(3600), u64::MAX));
        assert_eq!(skipped, 36_000_000_000);
        // Poisson: near the expected count, small and large.
        for (rate, secs) in [(500.0, 3u64), (1e6, 60)] {
            let mut s = poisson(t0, rate, 7, 0, 1);
            let n = total(s.skip_before(t0 + Duration::from_secs(secs), u64::MAX)) as f64;
            let expected = rate * secs as f64;
            assert!(
                (n - expected).abs() < 5.0 * expected.sqrt(),
                "{n} vs {expected}"
            );
            assert!(s.due() >= t0 + Duration::from_secs(secs));
        }
    }

    #[test]
    fn absurd_rates_give_far_due_times_not_panics() {
        let t0 = Instant::now();
        let mut s = constant(t0, 1e-19, 0, 1);
        s.advance();
        assert!(s.due() > t0 + Duration::from_secs(86_400 * 365));
        let mut s = poisson(t0, 1e-19, 1, 0, 1);
        s.advance();
        assert!(s.due() > t0);
    }

    #[test]
    fn poisson_is_seeded_and_has_the_right_mean_rate() {
        let t0 = Instant::now();
        let a = offsets(poisson(t0, 1000.0, 42, 0, 1), 20_000);
        let b = offsets(poisson(t0, 1000.0, 42, 0, 1), 20_000);
        assert_eq!(a, b, "same seed, same schedule");
        let c = offsets(poisson(t0, 1000.0, 43, 0, 1), 10);
        assert_ne!(a[..10], c[..]);
        let rate = a.len() as f64 / a.last().unwrap();
        assert!((rate - 1000.0).abs() < 30.0, "rate {rate}");
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    fn ramp() -> Arc<Curve> {
        let plan = RatePlan::staged(vec![
            RateStage {
                from_per_s: 0.0,
                to_per_s: 2_000.0,
                duration: Some(Duration::from_secs(2)),
            },
            RateStage {
                from_per_s: 2_000.0,
                to_per_s: 2_000.0,
                duration: Some(Duration::from_secs(2)),
            },
        ])
        .unwrap();
        Arc::new(Curve::new(&plan, Duration::ZERO))
    }

    #[test]
    fn poisson_arrivals_follow_a_ramp() {
        let t0 = Instant::now();
        let mut per_second = [0u32; 4];
        for w in 0..2 {
            let mut s = Schedule::poisson(t0, ramp(), 11, w, 2);
            while s.due() < t0 + Duration::from_secs(4) {
                per_second[(s.due() - t0).as_secs() as usize] += 1;
                s.advance();
            }
        }
        for (second, expected) in [500.0, 1_500.0, 2_000.0, 2_000.0].iter().enumerate() {
            let got = f64::from(per_second[second]);
            assert!(
                (got - expected).abs() < 5.0 * expected.sqrt(),
                "second {second}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn skipped_requests_are_counted_in_their_own_stages() {
        let t0 = Instant::now();
        let mut s = Schedule::paced(t0, ramp(), 0, 1);
        let skipped = s.skip_before(t0 + Duration::from_secs(3), u64::MAX);
        assert_eq!(skipped, [(0, 2_000), (1, 2_000)]);
        // The plan ends at 4 s: nothing is due after it.
        let skipped = s.skip_before(t0 + Duration::from_secs(10), u64::MAX);
        assert_eq!(total(skipped), 2_000);
        assert!(s.due() > t0 + Duration::from_secs(86_400));
    }
}

//! Open-loop due times: constant spacing or a seeded Poisson process.

use std::time::{Duration, Instant};

/// The due times of one worker's share of an open-loop attack.
///
/// With W workers, worker w of a constant-rate attack takes requests w, w + W, w + 2W, …
/// of the global schedule `t0 + k / rate`, so together they send exactly that schedule.
/// A Poisson attack gives each worker an independent Poisson process of rate `rate / W`
/// (the superposition of independent Poisson processes is Poisson with the summed rate).
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    t0: Instant,
    next: Duration,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Constant {
        k: u64,
        step: u64,
        rate_per_s: f64,
    },
    Poisson {
        rng: SplitMix64,
        rate_per_s: f64,
        elapsed_s: f64,
    },
}

impl Schedule {
    pub(crate) fn constant(t0: Instant, rate_per_s: f64, worker: u32, workers: u32) -> Self {
        let kind = Kind::Constant {
            k: u64::from(worker),
            step: u64::from(workers),
            rate_per_s,
        };
        let mut s = Schedule {
            t0,
            next: Duration::ZERO,
            kind,
        };
        s.next = s.offset();
        s
    }

    pub(crate) fn poisson(
        t0: Instant,
        rate_per_s: f64,
        seed: u64,
        worker: u32,
        workers: u32,
    ) -> Self {
        let rng = SplitMix64(seed ^ u64::from(worker).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let kind = Kind::Poisson {
            rng,
            rate_per_s: rate_per_s / f64::from(workers),
            elapsed_s: 0.0,
        };
        let mut s = Schedule {
            t0,
            next: Duration::ZERO,
            kind,
        };
        s.advance();
        s
    }

    /// When the next request is due.
    #[inline]
    pub(crate) fn due(&self) -> Instant {
        // The cli bounds rates and durations; a schedule beyond the clock's range is "never".
        self.t0
            .checked_add(self.next)
            .or_else(|| self.t0.checked_add(NEVER))
            .unwrap_or(self.t0)
    }

    /// Skips the requests due before `cutoff`, at most `limit` of them, and returns how
    /// many it skipped: the requests a frozen client can no longer send.
    pub(crate) fn skip_before(&mut self, cutoff: Instant, limit: u64) -> u64 {
        let mut skipped = 0;
        if let Kind::Constant {
            k,
            step,
            rate_per_s,
        } = &mut self.kind
        {
            // Jump close to the cutoff in one step (a long freeze at a high rate is many
            // requests); the loop below settles the last one or two.
            let cutoff_s = cutoff.saturating_duration_since(self.t0).as_secs_f64();
            let first_at_cutoff = (cutoff_s * *rate_per_s).floor() as u64;
            if first_at_cutoff > *k + *step {
                let jump = ((first_at_cutoff - *k) / *step)
                    .saturating_sub(1)
                    .min(limit);
                *k += jump * *step;
                skipped = jump;
                self.next = self.offset();
            }
        } else if let Kind::Poisson {
            rng,
            rate_per_s,
            elapsed_s,
        } = &mut self.kind
        {
            let cutoff_s = cutoff.saturating_duration_since(self.t0).as_secs_f64();
            let expected = (cutoff_s - *elapsed_s) * *rate_per_s;
            if expected > 10_000.0 {
                // Arrivals in the gap are Poisson(expected); the next one after the cutoff
                // is an exponential gap past it (the process has no memory).
                let n = (expected + expected.sqrt() * rng.normal()).round().max(0.0) as u64;
                skipped = (1 + n).min(limit);
                *elapsed_s = cutoff_s - rng.unit().ln() / *rate_per_s;
                self.next = self.offset();
                return skipped;
            }
        }
        while skipped < limit && self.due() < cutoff {
            self.advance();
            skipped += 1;
        }
        skipped
    }

    /// Moves on to the request after.
    #[inline]
    pub(crate) fn advance(&mut self) {
        if let Kind::Constant { k, step, .. } = &mut self.kind {
            *k += *step;
        }
        self.next = self.offset_after_advance();
    }

    fn offset(&self) -> Duration {
        let seconds = match &self.kind {
            Kind::Constant { k, rate_per_s, .. } => *k as f64 / rate_per_s,
            Kind::Poisson { elapsed_s, .. } => *elapsed_s,
        };
        Duration::try_from_secs_f64(seconds).unwrap_or(NEVER)
    }

    fn offset_after_advance(&mut self) -> Duration {
        if let Kind::Poisson {
            rng,
            rate_per_s,
            elapsed_s,
        } = &mut self.kind
        {
            *elapsed_s += -rng.unit().ln() / *rate_per_s;
        }
        self.offset()
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

    /// Standard normal, by Box-Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .flat_map(|w| offsets(Schedule::constant(t0, 100.0, w, 3), 10))
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
            let mut s = Schedule::constant(t0, 500.0, w, 2);
            while s.due() < t0 + Duration::from_millis(1200) {
                s.advance();
            }
            let skipped = s.skip_before(t0 + Duration::from_secs(3), u64::MAX);
            assert_eq!(skipped, 450, "worker {w}");
            assert!(s.due() >= t0 + Duration::from_secs(3));
        }
        // A limit caps the count.
        let mut s = Schedule::constant(t0, 500.0, 0, 1);
        assert_eq!(s.skip_before(t0 + Duration::from_secs(3), 7), 7);
        // An hour at 10M/s is skipped at once, not one request at a time.
        let mut s = Schedule::constant(t0, 1e7, 0, 1);
        let skipped = s.skip_before(t0 + Duration::from_secs(3600), u64::MAX);
        assert_eq!(skipped, 36_000_000_000);
        // Poisson: near the expected count, small and large.
        for (rate, secs) in [(500.0, 3u64), (1e6, 60)] {
            let mut s = Schedule::poisson(t0, rate, 7, 0, 1);
            let n = s.skip_before(t0 + Duration::from_secs(secs), u64::MAX) as f64;
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
        let mut s = Schedule::constant(t0, 1e-19, 0, 1);
        s.advance();
        assert!(s.due() > t0 + Duration::from_secs(86_400 * 365));
        let mut s = Schedule::poisson(t0, 1e-19, 1, 0, 1);
        s.advance();
        assert!(s.due() > t0);
    }

    #[test]
    fn poisson_is_seeded_and_has_the_right_mean_rate() {
        let t0 = Instant::now();
        let a = offsets(Schedule::poisson(t0, 1000.0, 42, 0, 1), 20_000);
        let b = offsets(Schedule::poisson(t0, 1000.0, 42, 0, 1), 20_000);
        assert_eq!(a, b, "same seed, same schedule");
        let c = offsets(Schedule::poisson(t0, 1000.0, 43, 0, 1), 10);
        assert_ne!(a[..10], c[..]);
        let rate = a.len() as f64 / a.last().unwrap();
        assert!((rate - 1000.0).abs() < 30.0, "rate {rate}");
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }
}

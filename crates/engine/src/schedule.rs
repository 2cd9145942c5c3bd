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
        self.t0 + self.next
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
        match &self.kind {
            Kind::Constant { k, rate_per_s, .. } => Duration::from_secs_f64(*k as f64 / rate_per_s),
            Kind::Poisson { elapsed_s, .. } => Duration::from_secs_f64(*elapsed_s),
        }
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

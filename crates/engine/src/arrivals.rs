//! A bounded sample of an open loop's achieved inter-send gaps, for the arrival test.
//!
//! Each gap is measured on the plan's own clock: the arrivals the plan makes due between two
//! consecutive sends of a worker, Λ(t₂) − Λ(t₁), over the worker's share. Under a faithful
//! Poisson process these are independent unit exponentials however the rate moves (the
//! time-rescaling theorem). Algorithm R keeps a uniform sample of fixed size, so a run of
//! any length costs the same memory.

/// A worker's reservoir of rescaled gaps.
#[derive(Debug, Clone)]
pub(crate) struct Reservoir {
    capacity: usize,
    last: Option<f64>,
    seen: u64,
    gaps: Vec<f64>,
    rng: u64,
}

impl Reservoir {
    /// Keeps at most `capacity` gaps; `seed` makes the sample repeatable.
    pub(crate) fn new(capacity: usize, seed: u64) -> Self {
        Reservoir {
            capacity,
            last: None,
            seen: 0,
            gaps: Vec::with_capacity(capacity.min(256)),
            rng: seed | 1,
        }
    }

    /// A send at `position` on the plan's clock (arrivals due so far, over the worker's
    /// share); `measured` is false in the warm-up, whose gaps are not kept.
    #[inline]
    pub(crate) fn send(&mut self, position: f64, measured: bool) {
        let last = self.last.replace(position);
        let (Some(last), true) = (last, measured) else {
            return;
        };
        let gap = (position - last).max(0.0);
        self.seen += 1;
        if self.gaps.len() < self.capacity {
            self.gaps.push(gap);
            return;
        }
        let slot = self.next() % self.seen;
        if let Some(kept) = self.gaps.get_mut(slot as usize) {
            *kept = gap;
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Gaps seen in the measured window, and the sample.
    pub(crate) fn into_parts(self) -> (u64, Vec<f64>) {
        (self.seen, self.gaps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reservoir_is_bounded_and_uniform() {
        let mut r = Reservoir::new(1_000, 7);
        for i in 0..100_000 {
            r.send(f64::from(i), true);
        }
        let (seen, gaps) = r.into_parts();
        assert_eq!((seen, gaps.len()), (99_999, 1_000));
        assert!(gaps.iter().all(|g| (*g - 1.0).abs() < 1e-9));
    }

    #[test]
    fn warm_up_gaps_are_not_kept() {
        let mut r = Reservoir::new(10, 7);
        r.send(0.0, false);
        r.send(1.0, false);
        r.send(3.0, true);
        let (seen, gaps) = r.into_parts();
        assert_eq!((seen, gaps), (1, vec![2.0]));
    }
}

//! Exact streaming moments: Welford's update and Chan's merge.

use serde::{Deserialize, Serialize};

/// Exact count, mean, sum of squared deviations, min, max and sum of a stream
/// of nanosecond values.
///
/// HdrHistogram's own mean and stdev are computed from bucket midpoints; these
/// are computed from the raw values, so a report can print an exact mean and
/// a sample standard deviation, and two partial results merge without loss
/// (Chan, Golub and LeVeque's parallel formula). `sum_ns` is an integer, so
/// `sum_ns / n` reproduces the mean exactly on any machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// Number of values recorded.
    pub n: u64,
    /// Arithmetic mean in nanoseconds (0 when `n` is 0).
    pub mean_ns: f64,
    /// Sum of squared deviations from the mean, in ns²: the sample variance is `m2_ns2 / (n - 1)`.
    pub m2_ns2: f64,
    /// Smallest value recorded in nanoseconds (0 when `n` is 0).
    pub min_ns: u64,
    /// Largest value recorded in nanoseconds (0 when `n` is 0).
    pub max_ns: u64,
    /// Exact integer sum of all values in nanoseconds.
    pub sum_ns: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Self::new()
    }
}

impl Moments {
    /// An empty accumulator.
    pub const fn new() -> Self {
        Moments {
            n: 0,
            mean_ns: 0.0,
            m2_ns2: 0.0,
            min_ns: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }

    /// `value` (a quantile read from a histogram of the same values) kept within the exact
    /// minimum and maximum. A histogram reports the highest value of a bucket, which can lie
    /// above the largest value recorded (p99.9 519.57 ms against a max of 519.51 ms): a
    /// quantile shown must never exceed the max nor fall under the min. A histogram's
    /// lowest value is 1, where it records a 0 (a transfer that took none): with a minimum
    /// of 0, a quantile of 1 is that 0.
    pub fn clamp(&self, value: u64) -> u64 {
        if self.n == 0 {
            value
        } else if value <= 1 && self.min_ns == 0 {
            0
        } else {
            value.clamp(self.min_ns, self.max_ns)
        }
    }

    /// Adds one value (Welford's online update).
    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        self.n += 1;
        let x = value_ns as f64;
        let delta = x - self.mean_ns;
        self.mean_ns += delta / self.n as f64;
        self.m2_ns2 += delta * (x - self.mean_ns);
        if self.n == 1 {
            self.min_ns = value_ns;
            self.max_ns = value_ns;
        } else {
            self.min_ns = self.min_ns.min(value_ns);
            self.max_ns = self.max_ns.max(value_ns);
        }
        self.sum_ns += u128::from(value_ns);
    }

    /// Adds `count` copies of one value (a batch recorded at once: requests that all timed
    /// out at the same limit).
    pub fn record_n(&mut self, value_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.merge(&Moments {
            n: count,
            mean_ns: value_ns as f64,
            m2_ns2: 0.0,
            min_ns: value_ns,
            max_ns: value_ns,
            sum_ns: u128::from(value_ns) * u128::from(count),
        });
    }

    /// Merges another accumulator into this one (Chan et al.'s parallel formula).
    pub fn merge(&mut self, other: &Moments) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n.saturating_add(other.n);
        let delta = other.mean_ns - self.mean_ns;
        let (na, nb, nf) = (self.n as f64, other.n as f64, n as f64);
        self.mean_ns += delta * nb / nf;
        self.m2_ns2 += other.m2_ns2 + delta * delta * na * nb / nf;
        self.n = n;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }

    /// Exact mean from the integer sum, or `None` when nothing was recorded.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_ns as f64 / self.n as f64)
    }

    /// Sample variance (divided by `n - 1`), or `None` with fewer than two values.
    pub fn variance(&self) -> Option<f64> {
        (self.n > 1).then(|| (self.m2_ns2 / (self.n - 1) as f64).max(0.0))
    }

    /// Sample standard deviation, or `None` with fewer than two values.
    pub fn stdev(&self) -> Option<f64> {
        self.variance().map(f64::sqrt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(values: &[u64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        (mean, var)
    }

    fn of(values: &[u64]) -> Moments {
        let mut m = Moments::new();
        values.iter().for_each(|&v| m.record(v));
        m
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
    }

    proptest! {
        #[test]
        fn welford_matches_two_pass(values in prop::collection::vec(1u64..60_000_000_000, 2..400)) {
            let m = of(&values);
            let (mean, var) = naive(&values);
            prop_assert_eq!(m.n, values.len() as u64);
            prop_assert!(close(m.mean_ns, mean, 1e-12), "mean {} vs {}", m.mean_ns, mean);
            prop_assert!(close(m.mean().unwrap(), mean, 1e-12));
            prop_assert!(close(m.variance().unwrap(), var, 1e-9), "var {} vs {}", m.variance().unwrap(), var);
            prop_assert_eq!(m.min_ns, *values.iter().min().unwrap());
            prop_assert_eq!(m.max_ns, *values.iter().max().unwrap());
            prop_assert_eq!(m.sum_ns, values.iter().map(|&v| u128::from(v)).sum::<u128>());
        }

        #[test]
        fn merge_of_partitions_equals_one_pass(
            values in prop::collection::vec(1u64..10_000_000_000, 2..400),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(values.len() + 1)).collect();
            bounds.push(0);
            bounds.push(values.len());
            bounds.sort_unstable();
            let mut merged = Moments::new();
            for w in bounds.windows(2) {
                merged.merge(&of(&values[w[0]..w[1]]));
            }
            let whole = of(&values);
            prop_assert_eq!(merged.n, whole.n);
            prop_assert_eq!(merged.sum_ns, whole.sum_ns);
            prop_assert_eq!((merged.min_ns, merged.max_ns), (whole.min_ns, whole.max_ns));
            prop_assert!(close(merged.mean_ns, whole.mean_ns, 1e-12));
            prop_assert!(close(merged.m2_ns2, whole.m2_ns2, 1e-9), "m2 {} vs {}", merged.m2_ns2, whole.m2_ns2);
        }
    }

    #[test]
    fn empty_and_single_value_have_no_variance() {
        let mut m = Moments::new();
        assert_eq!(m.mean(), None);
        assert_eq!(m.stdev(), None);
        m.record(7);
        assert_eq!(m.mean(), Some(7.0));
        assert_eq!(m.stdev(), None);
        assert_eq!((m.min_ns, m.max_ns), (7, 7));
    }

    #[test]
    fn long_tail_has_stdev_above_mean() {
        // The wrk "miscalculation" that was not one: 99 fast values and one slow
        // value give a sample stdev larger than the mean, with no negative values.
        let mut values = vec![1_000u64; 99];
        values.push(1_000_000);
        let m = of(&values);
        assert!(m.stdev().unwrap() > m.mean().unwrap());
    }
}

//! How often each object is asked: the popularity law and its sampler.

use std::str::FromStr;

/// A popularity law over a catalogue's objects, ranked 0 (most popular) to N-1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Popularity {
    /// Object of rank r is asked with probability proportional to (r+1)^-s.
    Zipf(f64),
    /// Every object alike.
    Uniform,
    /// A hot set, the first `objects` share of the catalogue, takes `requests` of the
    /// requests, uniformly; the rest crawl the whole catalogue in order, each worker its own
    /// stride, as a crawler or a cache-filling job would.
    Hot {
        /// Share of the catalogue in the hot set, in (0, 1].
        objects: f64,
        /// Share of the requests that go to the hot set, in [0, 1].
        requests: f64,
    },
}

impl Default for Popularity {
    fn default() -> Self {
        Popularity::Zipf(0.8)
    }
}

impl FromStr for Popularity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{text}' is not a popularity law: expected zipf:S (e.g. zipf:0.8), uniform, or hot:OBJECTS%:REQUESTS% (e.g. hot:10%:90%)"
            )
        };
        let share = |t: &str| -> Option<f64> {
            let v: f64 = t.trim().strip_suffix('%')?.parse().ok()?;
            (0.0..=100.0).contains(&v).then_some(v / 100.0)
        };
        let mut parts = text.trim().split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("uniform"), None, ..) => Ok(Popularity::Uniform),
            (Some("zipf"), Some(s), None, _) => match s.parse::<f64>() {
                Ok(s) if (0.0..=10.0).contains(&s) => Ok(if s == 0.0 {
                    Popularity::Uniform
                } else {
                    Popularity::Zipf(s)
                }),
                _ => Err(bad()),
            },
            (Some("hot"), Some(o), Some(r), None) => match (share(o), share(r)) {
                (Some(objects), Some(requests)) if objects > 0.0 => {
                    Ok(Popularity::Hot { objects, requests })
                }
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for Popularity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Popularity::Zipf(s) => write!(f, "zipf:{s}"),
            Popularity::Uniform => write!(f, "uniform"),
            Popularity::Hot { objects, requests } => {
                write!(f, "hot:{}%:{}%", objects * 100.0, requests * 100.0)
            }
        }
    }
}

impl Popularity {
    /// Objects in the hot set of a catalogue of `n` (at least one).
    pub(crate) fn hot_objects(objects: f64, n: u64) -> u64 {
        ((objects * n as f64).round() as u64).clamp(1, n)
    }

    /// The probability of rank `rank` of `n`; `norm` is [`Self::norm`]'s.
    pub(crate) fn probability(&self, rank: u64, n: u64, norm: f64) -> f64 {
        match *self {
            Popularity::Zipf(s) => ((rank + 1) as f64).powf(-s) / norm,
            Popularity::Uniform => 1.0 / n as f64,
            Popularity::Hot { objects, requests } => {
                let hot = Self::hot_objects(objects, n);
                let crawl = (1.0 - requests) / n as f64;
                if rank < hot {
                    requests / hot as f64 + crawl
                } else {
                    crawl
                }
            }
        }
    }

    /// Σ (r+1)^-s over the catalogue for Zipf (its normalising constant), 1 otherwise.
    pub(crate) fn norm(&self, n: u64) -> f64 {
        match *self {
            Popularity::Zipf(s) => (1..=n).map(|k| (k as f64).powf(-s)).sum(),
            _ => 1.0,
        }
    }
}

/// Zipf's law over ranks 1..=n by rejection-inversion (Hörmann and Derflinger, 1996, as in
/// Apache Commons Math): O(1) memory and time a draw, whatever n.
#[derive(Debug, Clone, Copy)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    threshold: f64,
}

impl Zipf {
    /// The law with exponent `s` > 0 over `n` ≥ 1 ranks.
    pub fn new(n: u64, s: f64) -> Zipf {
        assert!(n >= 1 && s > 0.0, "Zipf needs n >= 1 and s > 0");
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            threshold: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n as f64 + 0.5);
        z.threshold = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank in 1..=n, from uniform numbers in [0, 1) drawn by `uniform` as needed.
    pub fn sample(&self, mut uniform: impl FnMut() -> f64) -> u64 {
        loop {
            let u = self.h_n + uniform() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * x).exp()
    }
}

fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + x * 0.25))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pearson's chi-square of `draws` samples against the exact Zipf probabilities.
    fn chi_square(n: u64, s: f64, draws: u64) -> f64 {
        let zipf = Zipf::new(n, s);
        let mut state = 7u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = zipf.sample(|| {
                state = crate::hash::mix(state);
                crate::hash::unit(state)
            });
            counts[(k - 1) as usize] += 1;
        }
        let norm = Popularity::Zipf(s).norm(n);
        counts
            .iter()
            .enumerate()
            .map(|(r, &c)| {
                let expected = draws as f64 * Popularity::Zipf(s).probability(r as u64, n, norm);
                (c as f64 - expected).powi(2) / expected
            })
            .sum()
    }

    #[test]
    fn zipf_draws_follow_the_law() {
        // 49 degrees of freedom: the 99.9th percentile of chi-square is 85.4. Seeded, so the
        // figure is fixed; a sampler off by a rank's worth fails by thousands.
        for s in [0.5, 0.8, 1.0, 1.2, 2.0] {
            let x2 = chi_square(50, s, 200_000);
            assert!(x2 < 85.4, "zipf:{s} chi-square {x2}");
        }
    }

    #[test]
    fn laws_parse_and_print_back() {
        for text in ["zipf:0.8", "uniform", "hot:10%:90%"] {
            let law: Popularity = text.parse().unwrap();
            assert_eq!(law.to_string(), text);
        }
        assert_eq!("zipf:0".parse(), Ok(Popularity::Uniform));
        for bad in ["zipf", "zipf:-1", "hot:0%:50%", "hot:10:90", "pareto:1"] {
            let err = bad.parse::<Popularity>().unwrap_err();
            assert!(err.contains(bad) && err.contains("zipf:S"), "{err}");
        }
    }

    #[test]
    fn probabilities_sum_to_one() {
        let n = 1000;
        for law in [
            Popularity::Zipf(0.9),
            Popularity::Uniform,
            Popularity::Hot {
                objects: 0.1,
                requests: 0.9,
            },
        ] {
            let norm = law.norm(n);
            let total: f64 = (0..n).map(|r| law.probability(r, n, norm)).sum();
            assert!((total - 1.0).abs() < 1e-9, "{law}: {total}");
        }
    }
}

//! Goodness of fit and trend: the Kolmogorov-Smirnov test of a sample against the unit
//! exponential, and a least-squares slope with its t-interval.

use super::dist::{t_cdf, t_quantile};

/// A one-sample Kolmogorov-Smirnov test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsTest {
    /// The largest distance between the sample's and the reference's distribution functions.
    pub d: f64,
    /// The asymptotic p-value, P(K > √n D) of Kolmogorov's distribution (scipy's
    /// `kstest(..., method="asymp")`).
    pub p: f64,
    /// Sample size.
    pub n: usize,
}

/// Tests `sample` against the exponential of mean 1; `None` for fewer than 2 values.
pub fn ks_unit_exponential(sample: &[f64]) -> Option<KsTest> {
    if sample.len() < 2 {
        return None;
    }
    let mut sorted: Vec<f64> = sample.iter().map(|v| v.max(0.0)).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let d = sorted
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let cdf = 1.0 - (-x).exp();
            let i = i as f64;
            ((i + 1.0) / n - cdf).max(cdf - i / n)
        })
        .fold(0.0, f64::max);
    Some(KsTest {
        d,
        p: kolmogorov_sf(n.sqrt() * d),
        n: sorted.len(),
    })
}

/// P(K > x) for Kolmogorov's limiting distribution.
pub fn kolmogorov_sf(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x < 1.0 {
        // The series below converges slowly here; use the other form:
        // P(K <= x) = √(2π)/x Σ exp(-(2k-1)² π² / (8x²)).
        let mut sum = 0.0;
        for k in 1..=50 {
            let k = f64::from(k);
            sum += (-(2.0 * k - 1.0).powi(2) * std::f64::consts::PI.powi(2) / (8.0 * x * x)).exp();
        }
        return (1.0 - (2.0 * std::f64::consts::PI).sqrt() / x * sum).clamp(0.0, 1.0);
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let sign = if k as u32 % 2 == 1 { 1.0 } else { -1.0 };
        sum += sign * (-2.0 * k * k * x * x).exp();
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// A least-squares line through (x, y).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// Change of y per unit of x.
    pub slope: f64,
    /// Half width of the slope's two-sided interval at the asked confidence.
    pub half_width: f64,
    /// Two-sided p-value of the slope being 0 (Student's t, n - 2 degrees of freedom).
    pub p: f64,
    /// The line's value at the mean of x.
    pub mean_y: f64,
}

/// The least-squares slope of `y` on `x` with its t-interval; `None` below 3 points or when
/// x does not vary.
pub fn linear_trend(x: &[f64], y: &[f64], confidence: f64) -> Option<Trend> {
    let n = x.len().min(y.len());
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mx = x[..n].iter().sum::<f64>() / nf;
    let my = y[..n].iter().sum::<f64>() / nf;
    let sxx: f64 = x[..n].iter().map(|v| (v - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = x[..n]
        .iter()
        .zip(&y[..n])
        .map(|(a, b)| (a - mx) * (b - my))
        .sum();
    let slope = sxy / sxx;
    let sse: f64 = x[..n]
        .iter()
        .zip(&y[..n])
        .map(|(a, b)| (b - my - slope * (a - mx)).powi(2))
        .sum();
    let df = nf - 2.0;
    let se = (sse / df / sxx).sqrt();
    let p = if se > 0.0 {
        2.0 * (1.0 - t_cdf((slope / se).abs(), df))
    } else if slope == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Trend {
        slope,
        half_width: t_quantile(0.5 + confidence / 2.0, df) * se,
        p,
        mean_y: my,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // Reference values: scipy 1.x, `scipy.stats.kstest(x, "expon", method="asymp")`.
    #[test]
    fn ks_against_the_unit_exponential_matches_scipy() {
        let x = [
            0.1, 0.5, 1.2, 0.05, 2.3, 0.7, 0.9, 3.1, 0.2, 1.6, 0.33, 0.01, 1.1, 0.45, 2.0,
        ];
        let t = ks_unit_exponential(&x).unwrap();
        assert!(close(t.d, 0.104_837_418_035_959_57, 1e-12), "{t:?}");
        assert!(close(t.p, 0.996_527_624_825_051, 1e-9), "{t:?}");
        // Gaps far shorter than the plan's: a burst.
        let y: Vec<f64> = (1..=40).map(|i| 0.01 * f64::from(i)).collect();
        let t = ks_unit_exponential(&y).unwrap();
        assert!(close(t.d, 0.670_320_046_035_639_3, 1e-12), "{t:?}");
        assert!(close(t.p, 4.894_888_704_161_613e-16, 1e-6), "{t:?}");
    }

    // `scipy.stats.kstwobign.sf(x)`.
    #[test]
    fn kolmogorov_tail_matches_scipy() {
        for (x, p) in [
            (0.5, 0.963_945_243_664_875_1),
            (0.9, 0.392_730_707_940_654_3),
            (1.36, 0.049_485_876_755_377_876),
            (2.0, 0.000_670_925_255_779_654_3),
        ] {
            assert!(
                close(kolmogorov_sf(x), p, 1e-9),
                "{x}: {}",
                kolmogorov_sf(x)
            );
        }
    }

    // `scipy.stats.linregress(x, y)`; half width `t.ppf(0.975, n - 2) * stderr`.
    #[test]
    fn the_slope_and_its_interval_match_scipy() {
        let x: Vec<f64> = (0..10).map(f64::from).collect();
        let y = [3.1, 3.3, 3.2, 3.8, 3.9, 4.4, 4.1, 4.9, 5.2, 5.0];
        let t = linear_trend(&x, &y, 0.95).unwrap();
        assert!(close(t.slope, 0.244_242_424_242_424_26, 1e-12), "{t:?}");
        assert!(close(t.half_width, 0.057_300_708_814_164_16, 1e-6), "{t:?}");
        assert!(close(t.p, 9.651_323_269_481_077e-6, 1e-4), "{t:?}");
        let flat = [5.0, 4.8, 5.3, 4.9, 5.1, 5.0, 4.7, 5.2, 5.1, 4.9];
        let t = linear_trend(&x, &flat, 0.95).unwrap();
        assert!(t.slope.abs() < 1e-12 && t.p > 0.999, "{t:?}");
        assert!(
            close(t.half_width, 0.049_164_173_354_452_785, 1e-6),
            "{t:?}"
        );
    }

    // numpy: `((a[:-1]-m)*(a[1:]-m)).sum() / ((a-m)**2).sum()` (statsmodels' acf at lag 1).
    #[test]
    fn lag_one_autocorrelation_matches_numpy() {
        let a = [1.0, 2.0, 1.5, 3.0, 2.5, 3.5, 3.0, 4.0];
        let r = super::super::lag1_autocorrelation(&a);
        assert!(close(r, 0.272_186_147_186_147_2, 1e-12), "{r}");
    }
}

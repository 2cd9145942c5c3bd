//! Statistics of a sample of run values: median, mean and variance, Welch's t, Student's t
//! interval, lag-1 autocorrelation.

use super::dist::{t_cdf, t_quantile};

/// Median of sorted values.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Median of values in any order.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// Welch's t-test of `y` against `x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Difference of means, `mean(y) - mean(x)`.
    pub difference: f64,
    /// Confidence interval of the difference.
    pub interval: (f64, f64),
    /// Two-sided p-value.
    pub p: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
}

/// Welch's unequal-variance t-test and interval; needs at least two values a side.
pub fn welch(x: &[f64], y: &[f64], confidence: f64) -> Option<Welch> {
    if x.len() < 2 || y.len() < 2 {
        return None;
    }
    let (mx, vx) = mean_var(x);
    let (my, vy) = mean_var(y);
    let (nx, ny) = (x.len() as f64, y.len() as f64);
    let difference = my - mx;
    let se2 = vx / nx + vy / ny;
    if se2 <= 0.0 {
        // No spread on either side: the difference is what it is.
        let p = if difference == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            difference,
            interval: (difference, difference),
            p,
            df: nx + ny - 2.0,
        });
    }
    let df = se2 * se2 / ((vx / nx).powi(2) / (nx - 1.0) + (vy / ny).powi(2) / (ny - 1.0));
    let se = se2.sqrt();
    let t = difference / se;
    let q = t_quantile(0.5 + confidence / 2.0, df);
    Some(Welch {
        difference,
        interval: (difference - q * se, difference + q * se),
        p: 2.0 * (1.0 - t_cdf(t.abs(), df)),
        df,
    })
}

/// Mean and sample variance.
pub fn mean_var(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// A t-interval of the mean of `values` (batch means): `(mean, half width)`.
pub fn t_interval(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let (mean, var) = mean_var(values);
    let df = (values.len() - 1) as f64;
    Some((
        mean,
        t_quantile(0.5 + confidence / 2.0, df) * (var / values.len() as f64).sqrt(),
    ))
}

/// Lag-1 autocorrelation of a series (0 for constant or very short series).
pub fn lag1_autocorrelation(values: &[f64]) -> f64 {
    if values.len() < 3 {
        return 0.0;
    }
    let (mean, _) = mean_var(values);
    let denom: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    if denom == 0.0 {
        return 0.0;
    }
    values
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / denom
}

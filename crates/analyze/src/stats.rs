//! The statistics behind `vload compare`: exact Mann-Whitney U, Hodges-Lehmann intervals,
//! Welch's t on logs, Student's t, and batch means for single runs.
//!
//! Runs, not requests, are the unit of replication: every function here takes one value per
//! run (or per batch of a run), never per request.

/// Two-sided Mann-Whitney U test of `x` against `y`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UTest {
    /// U of `x`: pairs with x > y, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// True when the p-value is exact (distribution enumerated), false for the normal approximation.
    pub exact: bool,
}

/// Exact arrangement counts of U for sample sizes n and m without ties:
/// `counts[u]` = number of orderings with that U, out of C(n+m, n).
fn u_distribution(n: usize, m: usize) -> Vec<f64> {
    // f[j][u] for the current i: arrangements of i x's and j y's with statistic u.
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect(); // i = 0: only u = 0
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        for j in 0..=m {
            // The largest element is an x (adds j to U) or a y.
            let mut counts = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                counts[u + j] += c;
            }
            if j > 0 {
                for (u, c) in cur[j - 1].iter().enumerate() {
                    counts[u] += c;
                }
            }
            cur.push(counts);
        }
        prev = cur;
    }
    prev.pop().expect("m + 1 rows")
}

/// Midranks of the pooled values (1-based).
fn ranks(pool: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| pool[a].total_cmp(&pool[b]));
    let mut ranks = vec![0.0; pool.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && pool[order[j + 1]] == pool[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

fn u_of(ranks_x: impl Iterator<Item = f64>, n: usize) -> f64 {
    ranks_x.sum::<f64>() - (n * (n + 1)) as f64 / 2.0
}

/// Largest pool for which ties are handled by enumerating every relabelling.
const ENUMERATE_LIMIT: f64 = 200_000.0;

/// Exact two-sided Mann-Whitney U test; with ties, an exact permutation test over all
/// relabellings when there are at most 200,000 of them; otherwise the normal approximation
/// with tie and continuity corrections.
///
/// # Panics
/// If either sample is empty.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> UTest {
    assert!(!x.is_empty() && !y.is_empty(), "both samples need values");
    let (n, m) = (x.len(), y.len());
    let pool: Vec<f64> = x.iter().chain(y).copied().collect();
    let r = ranks(&pool);
    let u = u_of(r[..n].iter().copied(), n);
    let mean = (n * m) as f64 / 2.0;
    let deviation = (u - mean).abs() - 1e-9;
    let ties = {
        let mut sorted = pool.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.windows(2).any(|w| w[0] == w[1])
    };
    if !ties && n <= 50 && m <= 50 {
        let counts = u_distribution(n, m);
        let total: f64 = counts.iter().sum();
        let extreme: f64 = counts
            .iter()
            .enumerate()
            .filter(|(v, _)| (*v as f64 - mean).abs() >= deviation)
            .map(|(_, c)| c)
            .sum();
        return UTest {
            u,
            p: (extreme / total).min(1.0),
            exact: true,
        };
    }
    if ties && binomial(n + m, n) <= ENUMERATE_LIMIT {
        let mut extreme = 0u64;
        let mut total = 0u64;
        for_each_combination(n + m, n, &mut |chosen| {
            total += 1;
            if (u_of(chosen.iter().map(|&i| r[i]), n) - mean).abs() >= deviation {
                extreme += 1;
            }
        });
        return UTest {
            u,
            p: extreme as f64 / total as f64,
            exact: true,
        };
    }
    // Normal approximation with tie correction.
    let nm = (n * m) as f64;
    let big_n = (n + m) as f64;
    let tie_term: f64 = tie_groups(&pool).iter().map(|&t| t * t * t - t).sum();
    let variance = nm / 12.0 * ((big_n + 1.0) - tie_term / (big_n * (big_n - 1.0)));
    if variance <= 0.0 {
        return UTest {
            u,
            p: 1.0,
            exact: false,
        };
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    UTest {
        u,
        p: (2.0 * (1.0 - normal_cdf(z))).min(1.0),
        exact: false,
    }
}

fn tie_groups(pool: &[f64]) -> Vec<f64> {
    let mut sorted = pool.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut groups = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|v| **v == sorted[i]).count();
        groups.push(j as f64);
        i += j;
    }
    groups
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

fn for_each_combination(n: usize, k: usize, f: &mut dyn FnMut(&[usize])) {
    fn rec(start: usize, n: usize, k: usize, chosen: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if chosen.len() == k {
            f(chosen);
            return;
        }
        for i in start..=n - (k - chosen.len()) {
            chosen.push(i);
            rec(i + 1, n, k, chosen, f);
            chosen.pop();
        }
    }
    rec(0, n, k, &mut Vec::with_capacity(k), f);
}

/// A Hodges-Lehmann shift of `y` against `x` with its distribution-free interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShiftEstimate {
    /// Median of all pairwise differences `y_j - x_i`.
    pub estimate: f64,
    /// Interval `[D(k), D(nm - k + 1)]` of the sorted differences, if one exists at this level.
    pub interval: Option<(f64, f64)>,
    /// The 1-based order index k used for the interval.
    pub k: Option<usize>,
    /// Confidence the interval achieves (at least the one asked for).
    pub achieved_confidence: Option<f64>,
}

/// Hodges-Lehmann estimate and its confidence interval from the exact U distribution
/// (normal approximation above 50 per side). With 5 + 5 runs at 95% it is `[D(3), D(23)]`,
/// achieving 96.8%.
///
/// # Panics
/// If either sample is empty.
pub fn hodges_lehmann(x: &[f64], y: &[f64], confidence: f64) -> ShiftEstimate {
    assert!(!x.is_empty() && !y.is_empty(), "both samples need values");
    let mut d: Vec<f64> = y
        .iter()
        .flat_map(|yj| x.iter().map(move |xi| yj - xi))
        .collect();
    d.sort_by(f64::total_cmp);
    let nm = d.len();
    let estimate = median_sorted(&d);
    let alpha_half = (1.0 - confidence) / 2.0;
    let (n, m) = (x.len(), y.len());
    let (k, lower_tail) = if n <= 50 && m <= 50 {
        let counts = u_distribution(n, m);
        let total: f64 = counts.iter().sum();
        // k = largest integer with P(U <= k - 1) <= alpha / 2.
        let mut cumulative = 0.0;
        let mut k = 0;
        for (u, c) in counts.iter().enumerate() {
            if cumulative + c / total > alpha_half {
                break;
            }
            cumulative += c / total;
            k = u + 1;
        }
        (k, cumulative)
    } else {
        let mean = nm as f64 / 2.0;
        let sd = (nm as f64 * (n + m + 1) as f64 / 12.0).sqrt();
        let k = (mean - normal_quantile(1.0 - alpha_half) * sd)
            .floor()
            .max(0.0) as usize;
        (k, alpha_half)
    };
    if k == 0 || k > nm / 2 + 1 {
        return ShiftEstimate {
            estimate,
            interval: None,
            k: None,
            achieved_confidence: None,
        };
    }
    ShiftEstimate {
        estimate,
        interval: Some((d[k - 1], d[nm - k])),
        k: Some(k),
        achieved_confidence: Some(1.0 - 2.0 * lower_tail),
    }
}

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

/// Student's t cumulative distribution function.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, x);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// Student's t quantile, by bisection on the CDF.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    let (mut lo, mut hi) = (-1e6_f64, 1e6_f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2))
}

fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// erf via the regularized incomplete gamma function P(1/2, x²).
fn erf(x: f64) -> f64 {
    let value = incomplete_gamma_p(0.5, x * x);
    if x >= 0.0 { value } else { -value }
}

fn incomplete_gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let gln = ln_gamma(a);
    if x < a + 1.0 {
        let (mut sum, mut del, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        sum * (-x + a * x.ln() - gln).exp()
    } else {
        // Continued fraction for Q, Lentz's method.
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - (-x + a * x.ln() - gln).exp() * h
    }
}

/// Regularized incomplete beta I_x(a, b) (Numerical Recipes' continued fraction).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = if d.abs() < tiny { tiny } else { d };
    d = 1.0 / d;
    let mut h = d;
    for m in 1..1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x), Lanczos approximation (g = 7, n = 9), accurate to about 1e-15.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    fn seq(range: std::ops::Range<i32>) -> Vec<f64> {
        range.map(f64::from).collect()
    }

    // Reference p-values: scipy 1.11.4, stats.mannwhitneyu(x, y, alternative="two-sided",
    // method="exact"); they agree with benchstat's uTestMinP table.
    #[test]
    fn exact_u_test_matches_published_values() {
        let cases: [(Vec<f64>, Vec<f64>, f64, f64); 7] = [
            (seq(1..4), seq(4..7), 0.0, 0.1),
            (seq(1..5), seq(5..9), 0.0, 0.028_571_428_571_428_57),
            (seq(1..6), seq(6..11), 0.0, 0.007_936_507_936_507_936),
            (
                vec![1.0, 2.0, 3.0, 4.0, 6.0],
                vec![5.0, 7.0, 8.0, 9.0, 10.0],
                1.0,
                0.015_873_015_873_015_872,
            ),
            (seq(1..7), seq(7..13), 0.0, 0.002_164_502_164_502_164_5),
            (seq(0..10), seq(10..20), 0.0, 1.082_508_822_446_903e-5),
            (
                vec![1.0, 3.0, 5.0, 7.0, 9.0],
                vec![2.0, 4.0, 6.0, 8.0, 10.0],
                10.0,
                0.690_476_190_476_190_5,
            ),
        ];
        for (x, y, u, p) in cases {
            let t = mann_whitney(&x, &y);
            assert_eq!(t.u, u, "{x:?} {y:?}");
            assert!(t.exact);
            assert!(
                close(t.p, p, 1e-12),
                "{x:?} vs {y:?}: p {} expected {p}",
                t.p
            );
        }
    }

    #[test]
    fn ties_use_an_exact_permutation_test() {
        // Brute force over all 70 relabellings (Python itertools): 14 are as extreme, p = 0.2.
        let t = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0, 4.0]);
        assert_eq!(t.u, 2.5);
        assert!(t.exact);
        assert!(close(t.p, 0.2, 1e-12), "{}", t.p);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let x: Vec<f64> = (0..60).map(f64::from).collect();
        let y: Vec<f64> = (0..60).map(|v| f64::from(v) + 0.5).collect();
        let t = mann_whitney(&x, &y);
        assert!(!t.exact);
        assert!(t.p > 0.5, "heavily overlapping samples: {}", t.p);
    }

    #[test]
    fn hodges_lehmann_uses_the_published_order_indices() {
        for (n, k, achieved) in [
            (4usize, 1usize, 0.971),
            (5, 3, 0.968),
            (6, 6, 0.959),
            (10, 24, 0.957),
        ] {
            let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let y: Vec<f64> = (0..n).map(|i| i as f64 * 1.5 + 100.0).collect();
            let hl = hodges_lehmann(&x, &y, 0.95);
            assert_eq!(hl.k, Some(k), "n = {n}");
            assert!(
                (hl.achieved_confidence.unwrap() - achieved).abs() < 0.0005,
                "n = {n}: {:?}",
                hl.achieved_confidence
            );
            let mut d: Vec<f64> = y
                .iter()
                .flat_map(|b| x.iter().map(move |a| b - a))
                .collect();
            d.sort_by(f64::total_cmp);
            assert_eq!(hl.interval, Some((d[k - 1], d[n * n - k])));
        }
        // 3 + 3 has no 95% interval: the most extreme arrangement already has p = 0.05 a tail.
        assert_eq!(
            hodges_lehmann(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).interval,
            None
        );
    }

    #[test]
    fn hodges_lehmann_estimate_is_the_median_pairwise_difference() {
        let hl = hodges_lehmann(&[1.0, 2.0, 3.0], &[11.0, 12.0, 13.0], 0.9);
        assert_eq!(hl.estimate, 10.0);
    }

    // Reference: scipy 1.11.4 stats.ttest_ind(log(b), log(a), equal_var=False) and
    // stats.t.ppf(0.975, df) for the interval.
    #[test]
    fn welch_on_logs_matches_scipy() {
        let a: Vec<f64> = [100.0f64, 102.0, 98.0].iter().map(|v| v.ln()).collect();
        let b: Vec<f64> = [110.0f64, 111.0, 115.0].iter().map(|v| v.ln()).collect();
        let w = welch(&a, &b, 0.95).unwrap();
        assert!(close(w.p, 0.003_411_816_468_828_672_7, 1e-6), "p {}", w.p);
        assert!(close(w.df, 3.900_892_981_685_709_4, 1e-9), "df {}", w.df);
        assert!(
            close(w.interval.0, 0.063_319_237_506_725_02, 1e-6),
            "{:?}",
            w.interval
        );
        assert!(
            close(w.interval.1, 0.163_235_574_176_651_63, 1e-6),
            "{:?}",
            w.interval
        );
    }

    #[test]
    fn student_t_matches_tables() {
        assert!(close(t_quantile(0.975, 4.0), 2.776_445_105_197_798_7, 1e-9));
        assert!(close(
            t_quantile(0.975, 10.0),
            2.228_138_851_964_938_5,
            1e-9
        ));
        assert!(close(t_quantile(0.975, 2.5), 3.574_654_842_011_877_3, 1e-9));
        assert!(close(t_cdf(2.0, 5.0), 0.949_030_260_585_070_9, 1e-12));
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-12));
    }

    #[test]
    fn batch_means_interval_and_autocorrelation() {
        // Ten batches with mean 10 and sample sd sqrt(10/9 * 0.5): half width t(9) * sd / sqrt(10).
        let values = [9.0, 11.0, 9.5, 10.5, 10.0, 10.0, 9.0, 11.0, 9.5, 10.5];
        let (mean, half) = t_interval(&values, 0.95).unwrap();
        let (_, var) = mean_var(&values);
        assert_eq!(mean, 10.0);
        assert!(close(
            half,
            2.262_157_162_740_992 * (var / 10.0).sqrt(),
            1e-9
        ));
        assert!(lag1_autocorrelation(&values) < 0.2);
        let trend: Vec<f64> = (0..10).map(f64::from).collect();
        assert!(lag1_autocorrelation(&trend) > 0.6);
    }
}

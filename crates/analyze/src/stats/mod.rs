//! The statistics behind `vload compare`: exact Mann-Whitney U, Hodges-Lehmann intervals,
//! Welch's t on logs, Student's t, and batch means for single runs.
//!
//! Runs, not requests, are the unit of replication: every function here takes one value per
//! run (or per batch of a run), never per request.

mod dist;
mod fit;
mod rank;
mod sample;

pub use dist::{normal_cdf, t_cdf, t_quantile};
pub use fit::{KsTest, Trend, kolmogorov_sf, ks_unit_exponential, linear_trend};
pub use rank::{ShiftEstimate, UTest, hodges_lehmann, mann_whitney};
pub use sample::{Welch, lag1_autocorrelation, mean_var, median, median_sorted, t_interval, welch};

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

//! A run's checks of itself: arrival fidelity, convergence, independence, stationarity.

use serde::{Deserialize, Serialize};

/// Most inter-send gaps an open-loop run keeps for the arrival test.
pub const MAX_ARRIVAL_SAMPLE: usize = 2_000;

/// A bounded sample of a Poisson run's achieved inter-send gaps, each rescaled by the plan's
/// cumulative rate (the time-rescaling theorem): under a faithful Poisson process the values
/// are independent unit exponentials, whatever the plan's rate did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalSample {
    /// Sends in the measured window the sample was drawn from (reservoir sampling).
    pub sends: u64,
    /// The rescaled gaps, at most [`MAX_ARRIVAL_SAMPLE`].
    pub gaps: Vec<f64>,
}

impl ArrivalSample {
    /// Several samples (each `(sends, gaps)`, a uniform sample of its sends' gaps) as one of
    /// at most [`MAX_ARRIVAL_SAMPLE`] gaps, each contributing in proportion to the sends it
    /// saw; `None` when there are none.
    pub fn combine(parts: impl IntoIterator<Item = (u64, Vec<f64>)>) -> Option<ArrivalSample> {
        let parts: Vec<(u64, Vec<f64>)> = parts.into_iter().collect();
        if parts.is_empty() {
            return None;
        }
        let sends: u64 = parts.iter().map(|(n, _)| n).sum();
        let mut gaps = Vec::with_capacity(MAX_ARRIVAL_SAMPLE);
        for (n, sample) in parts {
            let share = if sends == 0 {
                0
            } else {
                (MAX_ARRIVAL_SAMPLE as f64 * n as f64 / sends as f64).round() as usize
            };
            gaps.extend(sample.into_iter().take(share));
        }
        gaps.truncate(MAX_ARRIVAL_SAMPLE);
        Some(ArrivalSample { sends, gaps })
    }
}

/// `--until-stable`: the attack ran until its p99's interval was within ± the target, or to
/// its longest duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UntilStable {
    /// The target half width of the p99's 95% interval, as a share of the p99 (0.05 = ±5%).
    pub target: f64,
    /// The longest the measured window could last, in seconds.
    pub max_duration_s: f64,
    /// Measured seconds after which the target was reached and the attack stopped; `None`
    /// when it never was.
    pub converged_after_s: Option<f64>,
    /// The p99 interval's half width (share of the p99) at the last check, if one could be
    /// made (5 measured seconds are needed).
    pub half_width: Option<f64>,
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckVerdict {
    /// The run passes it.
    Pass,
    /// It fails: the message says what went wrong and what to do.
    Fail,
    /// Not enough data to tell (a short run, a closed loop for the arrival test).
    Unknown,
}

/// One check of a run by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCheck {
    /// `arrivals`, `convergence:p50`, `convergence:p99`, `convergence:throughput`,
    /// `stationarity:p50`, `stationarity:throughput`, `stationarity:errors`,
    /// `stationarity:hit_ratio`, `until_stable`.
    pub name: String,
    /// The verdict.
    pub verdict: CheckVerdict,
    /// The test's statistic (KS D, relative CI half width, relative change over the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<f64>,
    /// Its p-value, where the test has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// A 95% interval, where the check has one (in the metric's unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// Seconds per batch for the batch-means checks (grown until the batches' lag-1
    /// autocorrelation is small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_s: Option<f64>,
    /// One line for the report.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_contribute_by_the_sends_they_saw() {
        let a =
            ArrivalSample::combine([(3_000, vec![1.0; 2_000]), (1_000, vec![2.0; 1_000])]).unwrap();
        assert_eq!(a.sends, 4_000);
        assert_eq!(a.gaps.iter().filter(|g| **g == 1.0).count(), 1_500);
        assert_eq!(a.gaps.iter().filter(|g| **g == 2.0).count(), 500);
        assert!(ArrivalSample::combine([]).is_none());
    }
}

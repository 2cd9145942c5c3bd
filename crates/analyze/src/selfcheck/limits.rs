//! The limits every check judges by, and a check's record.

use vload_schema::{CheckVerdict, RunCheck};

/// The time below which a sender's gaps are not resolved (its wake-up latency).
pub const RESOLUTION_S: f64 = 100e-6;
/// The p-value under which a test fails.
pub const ALPHA: f64 = 0.01;
/// A convergence interval wider than this (± share of the figure) has not converged.
pub const CONVERGED: f64 = 0.05;
/// A trend that moves a figure by more than this share across the window.
pub const DRIFT: f64 = 0.10;

/// A check's record: its name, verdict and message, no statistic.
pub(super) fn check(name: &str, verdict: CheckVerdict, message: String) -> RunCheck {
    RunCheck {
        name: name.to_owned(),
        verdict,
        statistic: None,
        p_value: None,
        interval: None,
        batch_s: None,
        message,
    }
}

//! The closed loop's job source: each connection sends its next request when the previous
//! one ends, within a budget when the attack counts its requests.

use std::cell::Cell;

use super::job::Job;

/// A budget of requests, if the attack counts them.
pub(super) struct Closed {
    budget: Cell<Option<u64>>,
    /// The time every closed-loop job carries: a closed loop has no intended send (its
    /// latency is service time from the write), so no clock is read for one (a third of
    /// the per-request clock reads, measured in a perf profile).
    issued: std::time::Instant,
}

impl Closed {
    pub(super) fn new(requests: Option<u64>) -> Self {
        Closed {
            budget: Cell::new(requests),
            issued: std::time::Instant::now(),
        }
    }

    /// The next request, unless the attack is `stopping` or the budget is spent.
    pub(super) fn next(&self, stopping: bool) -> Option<Job> {
        if stopping {
            return None;
        }
        match self.budget.get() {
            Some(0) => return None,
            Some(n) => self.budget.set(Some(n - 1)),
            None => {}
        }
        Some(Job::closed(self.issued))
    }
}

//! The closed loop's job source: each connection sends its next request when the previous
//! one ends, within a budget when the attack counts its requests.

use std::cell::Cell;
use std::time::Instant;

use super::job::Job;

/// A budget of requests, if the attack counts them.
pub(super) struct Closed {
    budget: Cell<Option<u64>>,
}

impl Closed {
    pub(super) fn new(requests: Option<u64>) -> Self {
        Closed {
            budget: Cell::new(requests),
        }
    }

    /// The next request, taken up at `now` (in the warm-up if `warmup`), unless the attack
    /// is `stopping` or the budget is spent.
    pub(super) fn next(&self, stopping: bool, now: Instant, warmup: bool) -> Option<Job> {
        if stopping {
            return None;
        }
        match self.budget.get() {
            Some(0) => return None,
            Some(n) => self.budget.set(Some(n - 1)),
            None => {}
        }
        Some(Job::closed(now, warmup))
    }
}

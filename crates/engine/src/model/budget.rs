//! The closed loop's budget: each lane sends its next request when the previous one ends,
//! within a count when the attack has one.

use std::cell::Cell;
use std::time::Instant;

use crate::job::Job;

/// A budget of requests, if the attack counts them.
pub(super) struct Budget {
    left: Cell<Option<u64>>,
}

impl Budget {
    pub(super) fn new(requests: Option<u64>) -> Self {
        Budget {
            left: Cell::new(requests),
        }
    }

    /// The next request, taken up at `now` (in the warm-up if `warmup`), unless the attack
    /// is `stopping` or the budget is spent.
    pub(super) fn next(&self, stopping: bool, now: Instant, warmup: bool) -> Option<Job> {
        if stopping {
            return None;
        }
        match self.left.get() {
            Some(0) => return None,
            Some(n) => self.left.set(Some(n - 1)),
            None => {}
        }
        Some(Job::closed(now, warmup))
    }
}

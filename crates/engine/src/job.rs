//! A job: one request's identity between the parts that handle it (the load model that makes
//! it due, the lane that sends it, the books that count it).

use std::time::{Duration, Instant};

use crate::breakdown::Tags;

/// A request to send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    /// Open loop: when it fell due. Closed loop: when a connection took it up (before its
    /// connect, if it needed one). Its deadline is this plus the request timeout.
    pub(crate) intended: Instant,
    /// Its response time is measured from `intended`, its due time (the open loop's primary
    /// latency); a closed loop's request has only its service time.
    pub(crate) timed_from_due: bool,
    /// Open loop: it waited in the queue for a connection (every connection busy or being
    /// made).
    pub(crate) queued: bool,
    /// The stage of the rate plan its intended send fell in (0 without a plan).
    pub(crate) stage: u32,
    /// It belongs to the warm-up: it fell due (open loop) or was taken up (closed loop)
    /// before the measured window began, and counts there wherever it ends.
    pub(crate) warmup: bool,
    /// Its target's groups in the breakdowns (none until a target is drawn).
    pub(crate) tags: Tags,
    /// Its target is a watched catalogue object.
    pub(crate) watched: bool,
}

impl Job {
    /// A closed loop's job, taken up at `at`.
    pub(crate) fn closed(at: Instant, warmup: bool) -> Job {
        Job {
            intended: at,
            timed_from_due: false,
            queued: false,
            stage: 0,
            warmup,
            tags: Tags::UNDRAWN,
            watched: false,
        }
    }

    /// An open loop's job, due at `due` in stage `stage`.
    pub(crate) fn due(due: Instant, stage: u32, warmup: bool) -> Job {
        Job {
            intended: due,
            timed_from_due: true,
            queued: false,
            stage,
            warmup,
            tags: Tags::UNDRAWN,
            watched: false,
        }
    }

    /// When it fails as timed out: `timeout` after it fell due or was taken up. In an open
    /// loop this bounds the response time (from the due time) that the report shows; in a
    /// closed loop, the connect (if any) and the exchange together.
    pub(crate) fn deadline(&self, timeout: Duration) -> Instant {
        self.intended + timeout
    }

    /// Its response time if it ends at `done`: from its due time, in an open loop.
    pub(crate) fn response_ns(&self, done: Instant) -> Option<u64> {
        self.timed_from_due
            .then(|| vload_timer::nanos_between(self.intended, done))
    }
}

//! What flows between a worker's parts: a job (one request to send), how its exchange ended,
//! and what a connection gets next.

use std::time::{Duration, Instant};

use crate::breakdown::Tags;

/// A request to send.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    /// Open loop: when it fell due. Closed loop: when a connection took it up (before its
    /// connect, if it needed one). Its deadline is this plus the request timeout.
    pub(super) intended: Instant,
    /// Open loop: it waited in the pool for a connection (every connection busy or being
    /// made).
    pub(super) queued: bool,
    /// The stage of the rate plan its intended send fell in (0 without a plan).
    pub(super) stage: u32,
    /// It belongs to the warm-up: it fell due (open loop) or was taken up (closed loop)
    /// before the measured window began, and counts there wherever it ends.
    pub(super) warmup: bool,
    /// Its target's groups in the breakdowns (none until a target is drawn).
    pub(super) tags: Tags,
}

impl Job {
    /// A closed loop's job, taken up at `at`.
    pub(super) fn closed(at: Instant, warmup: bool) -> Job {
        Job {
            intended: at,
            queued: false,
            stage: 0,
            warmup,
            tags: Tags::UNDRAWN,
        }
    }

    /// When it fails as timed out: `timeout` after it fell due or was taken up. In an open
    /// loop this bounds the response time (from the due time) that the report shows; in a
    /// closed loop, the connect (if any) and the exchange together.
    pub(super) fn deadline(&self, timeout: Duration) -> Instant {
        self.intended + timeout
    }
}

/// How a request ended, for the connection's next step.
pub(super) enum Flow {
    KeepAlive,
    Reconnect,
    /// The target files ran out for this worker: nothing was sent.
    Exhausted,
}

/// What a connection gets next from the job source.
pub(super) enum Next {
    Job(Job),
    /// The attack is over.
    Stop,
    /// The server closed the idle connection.
    Closed,
}

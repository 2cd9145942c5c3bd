//! What flows between a worker's parts: a job (one request to send), how its exchange ended,
//! and what a connection gets next.

use std::time::Instant;

/// A request to send. The times are the open loop's: a closed loop's jobs carry a fixed
/// time in them, never read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    pub(super) intended: Instant,
    /// Open loop: when it was handed to the pool, and whether it had to wait there for a
    /// connection (every connection busy or being made).
    pub(super) dispatched: Instant,
    pub(super) queued: bool,
    /// The stage of the rate plan its intended send fell in (0 without a plan).
    pub(super) stage: u32,
}

impl Job {
    /// A closed loop's job: it has no intended send time; `at` fills the fields.
    pub(super) fn closed(at: Instant) -> Job {
        Job {
            intended: at,
            dispatched: at,
            queued: false,
            stage: 0,
        }
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

//! What every client (the HTTP/1.1 decoder, the HTTP/2 connection, hyper's) hands back of a
//! response: all the engine keeps of it.

use std::time::Instant;

use vload_timer::nanos_between;

/// What the engine keeps of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body_bytes: u64,
    pub(crate) cache: crate::cache::Verdict,
    /// The server closes the connection after this response.
    pub(crate) close: bool,
    /// The origin's own time, from `Server-Timing` ([`crate::timing`]), in nanoseconds.
    pub(crate) origin: Option<u64>,
}

/// A response's two phases, in nanoseconds: from the write to its first byte, and from
/// there to its last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phases {
    pub(crate) first_byte: u64,
    pub(crate) transfer: u64,
}

impl Phases {
    /// The phases of an exchange begun at `start` and done at `done`, whose response began
    /// to arrive at `first_byte` (`None`: it came whole, at `done`).
    pub(crate) fn of(start: Instant, first_byte: Option<Instant>, done: Instant) -> Phases {
        let first = first_byte.map_or(done, |at| at.clamp(start, done));
        Phases {
            first_byte: nanos_between(start, first),
            transfer: nanos_between(first, done),
        }
    }
}

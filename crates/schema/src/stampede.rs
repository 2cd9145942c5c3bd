//! A stampede (`--stampede N`): N requests for one object sent at one instant, at each expiry
//! of the object (or right after a purge of it), beside the load and counted apart from it,
//! with its own ledger: every request of an event ends answered, failed or unfinished.

use serde::{Deserialize, Serialize};

use crate::LatencyRecord;

/// The stampedes of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StampedeRecord {
    /// Requests an event sends at once, one a connection.
    pub requests: u64,
    /// Seconds between events.
    pub every_s: f64,
    /// What each event follows: `expiry` (the object's max-age running out), `purge` (a
    /// purge of it sent just before) or `new` (each event asks an object never asked before:
    /// the target with `v=K` added to its query, K the event's number from 0).
    pub on: String,
    /// The object's request target, e.g. `/stampede?cache=max-age=10`.
    pub target: String,
    /// The events, in time order.
    pub events: Vec<StampedeEvent>,
    /// Over every event: the responses the cache forwarded to the origin (a miss or a
    /// pass: the leader of a coalesced stampede, every request of an uncoalesced one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaders: Option<LatencyRecord>,
    /// Over every event: the responses served from the cache (a hit or stale: the waiters
    /// of a coalesced stampede).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiters: Option<LatencyRecord>,
}

/// One event: its requests' fates and the origin fetches it caused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StampedeEvent {
    /// When its first request went out, seconds from the stampede's start (the attack's, to
    /// the few milliseconds between starting its thread and the attack's first send).
    pub at_s: f64,
    /// Requests written.
    pub sent: u64,
    /// From the first request's write to the last's, in ns: how nearly at once they went.
    pub spread_ns: u64,
    /// Answers the cache said it forwarded to the origin (miss, pass).
    pub leaders: u64,
    /// Answers the cache said it served itself (hit, stale).
    pub waiters: u64,
    /// Answers with no cache word (no cache header).
    pub unclassified: u64,
    /// Answers with a status of 5xx (within the three above).
    pub server_errors: u64,
    /// Requests that failed (reset, closed, not HTTP).
    pub errors: u64,
    /// Requests with neither an answer nor an error when the event's time ran out.
    pub unfinished: u64,
    /// Fetches of the object the origin counted between this event's start and the next's
    /// (`--stampede-origin`: `vload origin`'s own count of the path), the event's and any
    /// background refresh it caused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_fetches: Option<u64>,
}

impl StampedeEvent {
    /// The event's ledger: every request sent ended answered, failed or unfinished.
    pub fn balances(&self) -> bool {
        self.leaders + self.waiters + self.unclassified + self.errors + self.unfinished == self.sent
    }
}

//! Which of the loop's slots are idle, free or live, and where the schedule stands: the
//! bookkeeping the loop keeps beside its slots, without I/O.

use std::time::Instant;

use super::slot::Slot;
use crate::job::Job;
use crate::worker::lane::Phase;

/// The loop's slots, by what they are doing.
#[derive(Default)]
pub(super) struct Pool {
    /// Slots whose lane waits idle, the one used last on top: a request goes to a
    /// connection that is warm, and those left at the bottom are the ones reaped.
    idle: Vec<usize>,
    /// Slots without a lane, to reuse.
    free: Vec<usize>,
    /// Slots with a live lane.
    pub(super) live: usize,
    /// Requests a dispatch gave to idle slots, sent when it returns.
    pub(super) handed: Vec<(usize, Job)>,
    /// When the next request falls due.
    pub(super) next_due: Option<Instant>,
    /// Nothing more will be dispatched (at once, in a closed loop).
    pub(super) over: bool,
    /// A lane ended: requests waiting may want another.
    pub(super) grow: bool,
}

impl Pool {
    /// A lane starts: in a free slot, or `None` (the caller adds one).
    pub(super) fn reuse(&mut self) -> Option<usize> {
        self.live += 1;
        self.free.pop()
    }

    /// Slot `i`'s lane is done: the slot is free for another.
    pub(super) fn release(&mut self, i: usize) {
        self.idle.retain(|&idle| idle != i);
        self.live -= 1;
        self.free.push(i);
        self.grow = true;
    }

    /// Slot `i` waits idle.
    pub(super) fn idle(&mut self, i: usize) {
        self.idle.push(i);
    }

    /// Slot `i` no longer waits idle.
    pub(super) fn busy(&mut self, i: usize) {
        self.idle.retain(|&idle| idle != i);
    }

    /// The idle slot used last, if any.
    pub(super) fn take_idle(&mut self) -> Option<usize> {
        self.idle.pop()
    }

    /// Every idle slot.
    pub(super) fn take_all_idle(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.idle)
    }

    /// The idle slots unused since before `idle_since`: the oldest idle ones, at the bottom
    /// of the stack.
    pub(super) fn take_stale(&mut self, slots: &[Slot], idle_since: Instant) -> Vec<usize> {
        let stale = self
            .idle
            .iter()
            .take_while(|&&i| {
                matches!(slots[i].lane.phase(), Phase::Idle(since)
                    if *since < idle_since)
            })
            .count();
        self.idle.drain(..stale).collect()
    }
}

//! The open loop's connections on the epoll loop: dispatching what falls due to idle ones,
//! opening more while requests wait (up to the cap), reaping those idle too long.

use std::time::Instant;

use super::Direct;
use super::conn::{Connection, Phase};
use crate::h1::BUFFER;
use crate::worker::job::Job;
use crate::worker::open::{Due, IDLE_REAP};

/// The open loop's connections, by slot.
#[derive(Default)]
pub(super) struct OpenPool {
    /// Connections with an idle connection, the one used last on top: a request goes to a
    /// connection that is warm, and those left at the bottom are the ones reaped.
    pub(super) idle: Vec<usize>,
    /// Connections without a connection, to reuse.
    pub(super) free: Vec<usize>,
    /// Requests a dispatch gave to idle slots, sent when it returns.
    pub(super) handed: Vec<(usize, Job)>,
    /// When the next request falls due.
    pub(super) next_due: Option<Instant>,
    /// The schedule is over (always, in a closed loop).
    pub(super) over: bool,
    /// A connection ended: requests waiting may want another.
    pub(super) grow: bool,
}

impl Direct<'_> {
    /// True while the attack has work: connections in a closed loop; the schedule, a
    /// connection or a waiting request in an open loop.
    pub(super) fn running(&self) -> bool {
        match self.open {
            None => self.live > 0,
            Some(open) => !self.pool.over || self.live > 0 || open.waiting() > 0,
        }
    }

    /// Open loop, after each event: what fell due while responses were read goes out now
    /// (the last response's clock tells), and connections that ended are replaced if
    /// requests wait.
    pub(super) fn after_event(&mut self) {
        if self.open.is_none() {
            return;
        }
        if self.pool.next_due.is_some_and(|due| self.last_done >= due) {
            self.dispatch(Instant::now());
        } else if self.pool.grow {
            self.grow();
        }
    }

    /// Open loop, after each batch: dispatches what is due (or ends the schedule when the
    /// attack is stopping), and replaces connections that ended.
    pub(super) fn settle(&mut self, now: Instant) {
        if self.open.is_none() {
            return;
        }
        let due = self.pool.next_due.is_some_and(|due| now >= due);
        if !self.pool.over && (due || self.worker.stopping.get()) {
            self.dispatch(now);
        } else if self.pool.grow {
            self.grow();
        }
    }

    /// Open loop: sends every request due by `now` to idle connections, queues the rest,
    /// and opens connections for those that wait. Once the schedule is over, idle
    /// connections close.
    pub(super) fn dispatch(&mut self, now: Instant) {
        let Some(open) = self.open else {
            return;
        };
        if self.pool.over {
            return;
        }
        let mut handed = std::mem::take(&mut self.pool.handed);
        let idle = &mut self.pool.idle;
        let mut hand = |job| match idle.pop() {
            Some(i) => {
                handed.push((i, job));
                None
            }
            None => Some(job),
        };
        let stopping = self.worker.stopping.get();
        let due = open.dispatch_due_to(now, stopping, &self.worker.books, &mut hand);
        for (i, job) in handed.drain(..) {
            self.send(i, job, now);
        }
        self.pool.handed = handed;
        match due {
            Due::At(at) => self.pool.next_due = Some(at),
            Due::Over => {
                (self.pool.next_due, self.pool.over) = (None, true);
                self.worker.finish_dispatch();
                for i in std::mem::take(&mut self.pool.idle) {
                    self.release(i);
                }
            }
        }
        self.grow();
    }

    /// Open loop: opens connections while requests wait for one and the cap allows (at
    /// most a few connecting at once: [`Open::to_open`]).
    pub(super) fn grow(&mut self) {
        let Some(open) = self.open else {
            return;
        };
        self.pool.grow = false;
        // Each round either leaves connects under way (bounded) or settles a waiting
        // request (made, it sends one; failed, it fails one), so this ends.
        loop {
            let opening = open.to_open(1);
            if opening == 0 {
                break;
            }
            for _ in 0..opening {
                let i = match self.pool.free.pop() {
                    Some(i) => i,
                    None => {
                        self.conns.push(Connection::new());
                        self.conns.len() - 1
                    }
                };
                let slot = &mut self.conns[i];
                if slot.buf.is_empty() {
                    slot.buf = vec![0; BUFFER];
                }
                self.live += 1;
                self.connect(i, None);
            }
        }
    }

    /// Open loop: closes the connections idle longer than [`IDLE_REAP`], the oldest idle
    /// ones, at the bottom of the stack.
    pub(super) fn reap(&mut self, now: Instant) {
        let conns = &self.conns;
        let stale = self
            .pool
            .idle
            .iter()
            .take_while(|&&i| {
                matches!(conns[i].phase, Phase::Idle(since)
                    if now.saturating_duration_since(since) > IDLE_REAP)
            })
            .count();
        if stale > 0 {
            let stale: Vec<usize> = self.pool.idle.drain(..stale).collect();
            for i in stale {
                self.release(i);
            }
        }
    }

    /// Open loop: slot `i`'s connection is gone (closed, failed, reaped, or not wanted); the
    /// slot is free for another, and requests still waiting may get one.
    pub(super) fn release(&mut self, i: usize) {
        let slot = &mut self.conns[i];
        if matches!(slot.phase, Phase::Stopped) {
            return;
        }
        slot.socket = None;
        slot.phase = Phase::Stopped;
        // A buffer grown for a large body is not kept for a connection that may never come.
        slot.buf = Vec::new();
        self.live -= 1;
        self.pool.free.push(i);
        self.pool.grow = true;
        if let Some(open) = self.open {
            open.closed();
        }
    }
}

//! The tokio driver's idle lanes: each waits on a slot of its own for a request the
//! dispatch hands it, while its connection is watched for a close.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Instant;

use crate::job::Job;
use crate::protocol::{Conn, Link};

/// What an idle lane's wait gave it.
pub(super) enum Woken {
    /// A request, taken up by the dispatch; its connection may have closed meanwhile.
    Job(Job),
    /// Nothing more: the schedule is over, the attack stopping, or it was idle too long.
    Stop,
    /// The server closed its connection.
    Closed,
}

/// The idle lanes, the one used last on top: a request goes to a connection that is warm,
/// and those left at the bottom are the ones reaped.
#[derive(Default)]
pub(super) struct IdlePool {
    idle: RefCell<Vec<Rc<Waiting>>>,
}

/// One idle lane's slot.
#[derive(Default)]
struct Waiting {
    job: Cell<Option<Job>>,
    closed: Cell<bool>,
    /// When it became idle.
    since: Cell<Option<Instant>>,
    waker: RefCell<Option<Waker>>,
}

impl Waiting {
    fn fill(&self, job: Option<Job>) {
        match job {
            Some(job) => self.job.set(Some(job)),
            None => self.closed.set(true),
        }
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }
}

/// A lane's place in the idle list, kept across its waits.
#[derive(Default)]
pub(super) struct Spot(Rc<Waiting>);

impl IdlePool {
    /// Gives `job` to the idle lane used last, if there is one; returns it if not.
    pub(super) fn hand(&self, job: Job) -> Option<Job> {
        let waiting = self.idle.borrow_mut().pop();
        match waiting {
            Some(waiting) => {
                waiting.fill(Some(job));
                None
            }
            None => Some(job),
        }
    }

    /// Every idle lane stops waiting.
    pub(super) fn close_all(&self) {
        let idle = std::mem::take(&mut *self.idle.borrow_mut());
        for waiting in idle {
            waiting.fill(None);
        }
    }

    /// The lanes idle since before `idle_since` stop waiting: the oldest idle ones, at the
    /// bottom of the stack.
    pub(super) fn reap(&self, idle_since: Instant) {
        let stale = {
            let mut idle = self.idle.borrow_mut();
            let old = idle
                .iter()
                .take_while(|w| w.since.get().is_some_and(|t| t < idle_since))
                .count();
            idle.drain(..old).collect::<Vec<_>>()
        };
        for waiting in stale {
            waiting.fill(None);
        }
    }

    /// Waits idle at `spot` for the next request handed to it, unless `stopped`. The idle
    /// connection is driven meanwhile, so a server that closes it (an idle timeout) is
    /// noticed here and not by the next request.
    pub(super) async fn wait<L: Link>(
        &self,
        spot: &Spot,
        conn: &mut Conn<L>,
        stopped: bool,
    ) -> Woken {
        let slot = &spot.0;
        if stopped {
            return Woken::Stop;
        }
        slot.closed.set(false);
        slot.since.set(Some(Instant::now()));
        self.idle.borrow_mut().push(slot.clone());
        std::future::poll_fn(|cx| {
            if let Some(job) = slot.job.take() {
                return Poll::Ready(Woken::Job(job));
            }
            if slot.closed.get() {
                return Poll::Ready(Woken::Stop);
            }
            if conn.poll_closed(cx) {
                self.idle.borrow_mut().retain(|s| !Rc::ptr_eq(s, slot));
                return Poll::Ready(match slot.job.take() {
                    Some(job) => Woken::Job(job),
                    None => Woken::Closed,
                });
            }
            *slot.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

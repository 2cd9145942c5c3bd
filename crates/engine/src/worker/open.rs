//! Open loop: requests fall due on a schedule whatever the responses do; connections open on
//! demand up to a cap; a request that finds them all busy waits, and the wait counts.
//!
//! Any task may send what is due (a connection does after each response), so a busy thread
//! dispatches between task polls rather than only when the runtime gets round to the
//! timer; the dispatcher task's timer is the fallback for a quiet thread.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use vload_timer::{PreciseTimer, nanos_between};

use super::serve::{Job, Next, serve, spawn_streams};
use super::state::Worker;
use crate::conn::Conn;
use crate::schedule::Schedule;

/// A dispatch later than this counts as a late send.
pub(crate) const LATE_SEND: Duration = Duration::from_millis(1);
/// An idle connection unused this long is closed, so that connections opened for a burst do
/// not stay forever (the idle list is a stack: the busy ones stay on top).
const IDLE_REAP: Duration = Duration::from_secs(5);
/// The timer may wake this much after a request's due time, so that one wake-up sends a few
/// requests instead of one each (dispatch lag stays well under 200 µs).
const BATCH: Duration = Duration::from_micros(20);

/// The open loop's state: the schedule, the requests waiting for a connection, the idle
/// connections waiting for a request.
pub(super) struct Open {
    pool: RefCell<Pool>,
    /// The schedule, until it is done.
    dispatch: RefCell<Option<Dispatch>>,
    /// Wakes the dispatcher when another task finished the schedule.
    dispatch_notify: Notify,
    dispatch_done: Cell<bool>,
    max_connections: u32,
    connections: Cell<u32>,
    connecting: Cell<u32>,
}

/// The schedule and what is left of it.
struct Dispatch {
    schedule: Schedule,
    end: Option<Instant>,
    remaining: Option<u64>,
}

/// Requests waiting for a connection, and connections waiting for requests.
#[derive(Debug, Default)]
struct Pool {
    pending: VecDeque<Job>,
    idle: Vec<Rc<Slot>>,
}

/// An idle connection waiting for work.
#[derive(Debug, Default)]
struct Slot {
    job: Cell<Option<Job>>,
    closed: Cell<bool>,
    /// When it last became idle.
    idle_since: Cell<Option<Instant>>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
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

/// A connection's place in the idle list, kept across its requests.
#[derive(Debug, Default)]
pub(super) struct Idle(Rc<Slot>);

impl Open {
    pub(super) fn new(
        schedule: Schedule,
        end: Option<Instant>,
        remaining: Option<u64>,
        max_connections: u32,
    ) -> Self {
        Open {
            pool: RefCell::new(Pool::default()),
            dispatch: RefCell::new(Some(Dispatch {
                schedule,
                end,
                remaining,
            })),
            dispatch_notify: Notify::new(),
            dispatch_done: Cell::new(false),
            max_connections,
            connections: Cell::new(0),
            connecting: Cell::new(0),
        }
    }

    /// The attack is stopping: no more dispatches; idle connections close.
    pub(super) fn stop(&self) {
        self.dispatch_done.set(true);
        self.close_idle();
    }

    fn close_idle(&self) {
        let idle = std::mem::take(&mut self.pool.borrow_mut().idle);
        for slot in idle {
            slot.fill(None);
        }
    }

    /// Closes the connections that have been idle longer than [`IDLE_REAP`]: the oldest
    /// idle ones, at the bottom of the stack.
    pub(super) fn reap_idle(&self, now: Instant) {
        let stale = {
            let mut pool = self.pool.borrow_mut();
            let old = pool
                .idle
                .iter()
                .take_while(|slot| {
                    slot.idle_since
                        .get()
                        .is_some_and(|t| now.saturating_duration_since(t) > IDLE_REAP)
                })
                .count();
            pool.idle.drain(..old).collect::<Vec<_>>()
        };
        for slot in stale {
            slot.fill(None);
        }
    }

    /// Requests waiting for a connection.
    pub(super) fn waiting(&self) -> u64 {
        self.pool.borrow().pending.len() as u64
    }

    /// A job whose connection closed before sending it goes back in front of the queue.
    pub(super) fn requeue(&self, job: Job) {
        let job = Job {
            queued: true,
            ..job
        };
        self.pool.borrow_mut().pending.push_front(job);
    }

    /// The next due request for `conn`, waiting idle until one comes. The idle connection is
    /// driven meanwhile, so a server that closes it (an idle timeout) is noticed here and not
    /// by the next request.
    pub(super) async fn next(&self, worker: &Worker, idle: &mut Idle, conn: &mut Conn) -> Next {
        let slot = &idle.0;
        {
            let mut pool = self.pool.borrow_mut();
            if let Some(job) = pool.pending.pop_front() {
                drop(pool);
                worker.count_queue_wait(&job);
                return Next::Job(job);
            }
            if self.dispatch_done.get() {
                return Next::Stop;
            }
            slot.idle_since.set(Some(Instant::now()));
            pool.idle.push(slot.clone());
        }
        std::future::poll_fn(|cx| {
            if let Some(job) = slot.job.take() {
                return Poll::Ready(Next::Job(job));
            }
            if slot.closed.get() {
                return Poll::Ready(Next::Stop);
            }
            if conn.poll_closed(cx) {
                self.pool.borrow_mut().idle.retain(|s| !Rc::ptr_eq(s, slot));
                return Poll::Ready(match slot.job.take() {
                    Some(job) => Next::Job(job),
                    None => Next::Closed,
                });
            }
            *slot.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl Worker {
    /// A request that waited in the pool: how long, from its dispatch to now.
    fn count_queue_wait(&self, job: &Job) {
        if job.queued {
            let mut stats = self.stats.borrow_mut();
            stats.queued += 1;
            stats
                .queue_wait
                .record(nanos_between(job.dispatched, Instant::now()));
        }
    }

    /// Sends every request due by now; returns the next due time, or `None` once the
    /// schedule is done (then the attack's dispatching is over).
    pub(super) fn dispatch_due(self: &Rc<Self>, now: Instant) -> Option<Instant> {
        let open = self.open()?;
        let mut guard = open.dispatch.borrow_mut();
        let d = guard.as_mut()?;
        if let Some(end) = d.end
            && now >= end
        {
            self.count_unsent(d, end, now);
        }
        loop {
            let due = d.schedule.due();
            if d.remaining == Some(0) || d.end.is_some_and(|end| due >= end) || self.stopping.get()
            {
                drop(guard);
                self.finish_dispatch();
                return None;
            }
            if due > now {
                return Some(due);
            }
            let job = Job {
                intended: due,
                dispatched: now,
                queued: false,
            };
            self.dispatch(job, now);
            d.remaining = d.remaining.map(|n| n - 1);
            d.schedule.advance();
        }
    }

    /// The window is over: a request due in it that is not out yet could only go out after
    /// it, over 1 ms late. It is counted as due and never sent (a frozen client), whichever
    /// task notices the end first.
    fn count_unsent(&self, d: &mut Dispatch, end: Instant, now: Instant) {
        let cutoff = now.checked_sub(LATE_SEND).unwrap_or(now).min(end);
        let unsent = d
            .schedule
            .skip_before(cutoff, d.remaining.unwrap_or(u64::MAX));
        d.remaining = d.remaining.map(|n| n - unsent);
        if unsent > 0 {
            let mut stats = self.stats.borrow_mut();
            stats.intended += unsent;
            stats.unsent += unsent;
        }
    }

    fn finish_dispatch(&self) {
        let Some(open) = self.open() else { return };
        if open.dispatch.borrow_mut().take().is_none() {
            return;
        }
        open.dispatch_done.set(true);
        // An open loop's attack ends when dispatching ends.
        self.last_send.set(Some(Instant::now()));
        open.close_idle();
        open.dispatch_notify.notify_one();
    }

    /// Hands a due request to an idle connection, or queues it and opens one if allowed.
    fn dispatch(self: &Rc<Self>, job: Job, now: Instant) {
        let Some(open) = self.open() else { return };
        {
            let mut stats = self.stats.borrow_mut();
            stats.intended += 1;
            let lag = nanos_between(job.intended, now);
            stats.dispatch_lag.record(lag);
            if lag > LATE_SEND.as_nanos() as u64 {
                stats.late_sends += 1;
            }
        }
        let slot = open.pool.borrow_mut().idle.pop();
        match slot {
            Some(slot) => slot.fill(Some(job)),
            None => {
                let job = Job {
                    queued: true,
                    ..job
                };
                open.pool.borrow_mut().pending.push_back(job);
                self.grow();
            }
        }
    }

    /// Opens connections while requests wait for one and the cap allows.
    fn grow(self: &Rc<Self>) {
        let Some(open) = self.open() else { return };
        // A connection being made will take `streams` requests (HTTP/2) or one (HTTP/1.1).
        let per_connection = self.plan.protocol.streams() as usize;
        while open.pool.borrow().pending.len() > open.connecting.get() as usize * per_connection
            && open.connections.get() < open.max_connections
        {
            // Counted as connecting now, not when the task first runs: the loop reads it.
            open.connections.set(open.connections.get() + 1);
            open.connecting.set(open.connecting.get() + 1);
            self.spawn_task(connection(self.clone()));
        }
    }
}

/// The dispatcher task: sleeps on a microsecond timer until the next due time (a little
/// after, to batch) and dispatches everything due.
pub(super) async fn dispatcher(worker: Rc<Worker>) {
    let timer = PreciseTimer::new().ok();
    if let Some(open) = worker.open() {
        while let Some(due) = worker.dispatch_due(Instant::now()) {
            let wake = due + BATCH;
            let sleep = async {
                match &timer {
                    Some(timer) => timer.sleep_until(wake).await,
                    None => tokio::time::sleep_until(wake.into()).await,
                }
            };
            tokio::select! {
                () = sleep => {}
                () = worker.stop_notify.notified() => {}
                () = open.dispatch_notify.notified() => {}
            }
        }
    }
    worker.finish_dispatch();
    worker.task_ended();
}

/// An open-loop connection, made on demand: serves due requests until it closes or the
/// attack ends, then lets the pool open another if requests still wait.
async fn connection(worker: Rc<Worker>) {
    let connected = worker.connect().await;
    let Some(open) = worker.open() else {
        return worker.task_ended();
    };
    open.connecting.set(open.connecting.get() - 1);
    match connected {
        Err(failure) => {
            // The request that asked for this connection fails with it.
            let job = open.pool.borrow_mut().pending.pop_front();
            if job.is_some() {
                worker.fail_unsent(failure);
            }
        }
        Ok(mut conn) => {
            spawn_streams(&worker, &conn);
            serve(&worker, &mut conn, None).await;
        }
    }
    open.connections.set(open.connections.get() - 1);
    worker.grow();
    worker.task_ended();
}

//! The one serving loop: a connection takes jobs from the worker's job source (the closed
//! loop's budget or the open loop's pool) and sends them until it closes or the attack ends.

use std::rc::Rc;
use std::time::Instant;

use super::state::{Model, Worker};
use crate::conn::Conn;

/// A request to send. Closed loop: intended = when it was issued.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    pub(super) intended: Instant,
    /// Open loop: when it was handed to the pool, and whether it had to wait there for a
    /// connection (every connection busy or being made).
    pub(super) dispatched: Instant,
    pub(super) queued: bool,
}

impl Job {
    /// A job due now (the closed loop's).
    pub(super) fn now() -> Job {
        let now = Instant::now();
        Job {
            intended: now,
            dispatched: now,
            queued: false,
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

/// How serving a connection ended.
pub(super) enum Served {
    /// The attack is over for this connection.
    Stop,
    /// The connection closed or must be replaced; a job it took is handed back.
    Reconnect(Option<Job>),
}

/// Serves jobs on `conn`, starting with `first`, until it closes or the attack ends.
pub(super) async fn serve(worker: &Rc<Worker>, conn: &mut Conn, mut first: Option<Job>) -> Served {
    let mut idle = super::open::Idle::default();
    loop {
        if first.is_none() && !conn.is_open() {
            return Served::Reconnect(None);
        }
        let job = match first.take() {
            Some(job) => job,
            None => match worker.next_job(&mut idle, conn).await {
                Next::Job(job) => job,
                Next::Stop => return Served::Stop,
                Next::Closed => return Served::Reconnect(None),
            },
        };
        if !conn.is_open() {
            // Closed under us: the job waits for another connection.
            return Served::Reconnect(worker.hand_back(job));
        }
        let flow = worker.execute(conn, job).await;
        worker.after_exchange();
        match flow {
            Flow::KeepAlive => {}
            Flow::Reconnect => return Served::Reconnect(None),
            Flow::Exhausted => {
                worker.begin_stop();
                return Served::Stop;
            }
        }
    }
}

impl Worker {
    /// The next job for `conn`, from the load model's source.
    async fn next_job(&self, idle: &mut super::open::Idle, conn: &mut Conn) -> Next {
        match &self.model {
            Model::Closed(closed) => match closed.next(self) {
                Some(job) => Next::Job(job),
                None => Next::Stop,
            },
            Model::Open(open) => open.next(self, idle, conn).await,
        }
    }

    /// A job taken by a connection that then found itself closed: the closed loop keeps it
    /// for the next connection; the open loop puts it back in front of the queue.
    fn hand_back(&self, job: Job) -> Option<Job> {
        match &self.model {
            Model::Closed(_) => Some(job),
            Model::Open(open) => {
                open.requeue(job);
                None
            }
        }
    }

    /// After each response: the open loop sends whatever fell due meanwhile, now rather than
    /// when the timer is next polled.
    fn after_exchange(self: &Rc<Self>) {
        if self.open().is_some() {
            self.dispatch_due(Instant::now());
        }
    }
}

/// Starts the other streams of an HTTP/2 connection, each a task of its own that serves
/// until the connection closes (the connection's first stream reconnects).
pub(super) fn spawn_streams(worker: &Rc<Worker>, conn: &Conn) {
    for _ in 1..worker.plan.protocol.streams() {
        if let Some(stream) = conn.stream(worker.plan.timeout) {
            worker.spawn_task(stream_task(worker.clone(), stream));
        }
    }
}

async fn stream_task(worker: Rc<Worker>, mut conn: Conn) {
    serve(&worker, &mut conn, None).await;
    worker.task_ended();
}

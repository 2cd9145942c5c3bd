//! Closed loop: each connection sends its next request when the previous one ends.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use super::serve::{Job, Served, serve, spawn_streams};
use super::state::Worker;

/// Pause after a failed connect, so a dead server is not spun on.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// The closed loop's job source: a budget of requests, if the attack counts them.
pub(super) struct Closed {
    budget: Cell<Option<u64>>,
}

impl Closed {
    pub(super) fn new(requests: Option<u64>) -> Self {
        Closed {
            budget: Cell::new(requests),
        }
    }

    /// The next request, unless the attack is over.
    pub(super) fn next(&self, worker: &Worker) -> Option<Job> {
        if worker.stopping.get() {
            return None;
        }
        match self.budget.get() {
            Some(0) => return None,
            Some(n) => self.budget.set(Some(n - 1)),
            None => {}
        }
        Some(Job::now())
    }
}

impl Worker {
    /// The closed loop's next request (none under the open model).
    fn next_closed_job(&self) -> Option<Job> {
        match &self.model {
            super::state::Model::Closed(closed) => closed.next(self),
            super::state::Model::Open(_) => None,
        }
    }
}

/// One closed-loop connection task: takes its request before connecting (so no connection
/// opens for a request that is not there, and the accept counts of
/// --requests-per-connection stay exact), serves until the connection closes, reconnects.
/// Connections to other TLS hosts outlive a reconnect of the task's own.
pub(super) async fn connection(worker: Rc<Worker>) {
    let mut side = Vec::new();
    let mut first = None;
    while let Some(job) = first.take().or_else(|| worker.next_closed_job()) {
        let mut conn = match worker.connect().await {
            Ok(conn) => conn,
            Err(failure) => {
                worker.fail_unsent(failure);
                tokio::time::sleep(CONNECT_BACKOFF).await;
                continue;
            }
        };
        conn.side = std::mem::take(&mut side);
        spawn_streams(&worker, &conn);
        let served = serve(&worker, &mut conn, Some(job)).await;
        side = std::mem::take(&mut conn.side);
        match served {
            Served::Stop => break,
            Served::Reconnect(job) => first = job,
        }
    }
    worker.task_ended();
}

//! Serving: the one loop that feeds a connection from the worker's job source, and the tasks
//! that run it. Closed loop: a task per connection that takes its request before connecting,
//! serves, and reconnects. Open loop: a dispatcher that sends what falls due, and connections
//! opened on demand that serve until they close. Any task may dispatch (a connection does
//! after each response), so a busy thread dispatches between task polls rather than only
//! when the runtime gets round to the timer; the dispatcher's timer is the fallback for a
//! quiet thread.

use std::rc::Rc;
use std::time::Instant;

use vload_timer::PreciseTimer;

use super::CONNECT_BACKOFF;
use super::job::{Flow, Job, Next};
use super::open::{BATCH, Due, Idle};
use super::state::{Model, Worker};
use crate::conn::Conn;

/// How serving a connection ended.
enum Served {
    /// The attack is over for this connection.
    Stop,
    /// The connection closed or must be replaced; a job it took is handed back.
    Reconnect(Option<Job>),
}

/// Starts the load: `connections` closed-loop connections, or the open loop's dispatcher.
pub(super) fn start(worker: &Rc<Worker>, connections: u32) {
    match &worker.model {
        Model::Closed(_) => {
            for _ in 0..connections {
                worker.spawn_task(closed_connection(worker.clone()));
            }
        }
        Model::Open(_) => worker.spawn_task(dispatcher(worker.clone())),
    }
}

/// Serves jobs on `conn`, starting with `first`, until it closes or the attack ends.
async fn serve(worker: &Rc<Worker>, conn: &mut Conn, mut first: Option<Job>) -> Served {
    let idle = Idle::default();
    loop {
        if first.is_none() && !conn.is_open() {
            return Served::Reconnect(None);
        }
        let job = match first.take() {
            Some(job) => job,
            None => match next_job(worker, &idle, conn).await {
                Next::Job(job) => job,
                Next::Stop => return Served::Stop,
                Next::Closed => {
                    worker.note_stray(conn);
                    return Served::Reconnect(None);
                }
            },
        };
        if !conn.is_open() {
            // Closed under us: the job waits for another connection.
            return Served::Reconnect(hand_back(worker, job));
        }
        let flow = worker.execute(conn, job).await;
        if worker.open().is_some() {
            // Whatever fell due meanwhile goes out now, not when the timer is next polled.
            dispatch_due(worker, Instant::now());
        }
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

/// The next job for `conn`, from the load model's source, taken up.
async fn next_job(worker: &Worker, idle: &Idle, conn: &mut Conn) -> Next {
    let now = Instant::now();
    match &worker.model {
        Model::Closed(_) => match worker.next_closed(now) {
            Some(job) => Next::Job(job),
            None => Next::Stop,
        },
        Model::Open(open) => match worker.take_pending(now) {
            Some(job) => Next::Job(job),
            None => open.wait_idle(idle, conn).await,
        },
    }
}

/// A job taken by a connection that then found itself closed: the closed loop keeps it for
/// the next connection; the open loop puts it back in front of the queue.
fn hand_back(worker: &Worker, job: Job) -> Option<Job> {
    match &worker.model {
        Model::Closed(_) => Some(job),
        Model::Open(open) => {
            worker.books.put_back(&job);
            open.requeue(job);
            None
        }
    }
}

/// Starts the other streams of an HTTP/2 connection, each a task of its own that serves
/// until the connection closes (the connection's first stream reconnects).
fn spawn_streams(worker: &Rc<Worker>, conn: &Conn) {
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

/// One closed-loop connection task: takes its request before connecting (so no connection
/// opens for a request that is not there, and the accept counts of
/// --requests-per-connection stay exact), serves until the connection closes, reconnects.
/// Connections to other TLS hosts outlive a reconnect of the task's own.
async fn closed_connection(worker: Rc<Worker>) {
    let Model::Closed(_) = &worker.model else {
        return worker.task_ended();
    };
    let mut side = Vec::new();
    let mut first = None;
    while let Some(job) = first.take().or_else(|| worker.next_closed(Instant::now())) {
        // The request's deadline bounds its connection too: a connect or handshake that
        // hangs past it is the request's timeout, not a request lost.
        let deadline = job.deadline(worker.plan.timeout);
        let connected = tokio::time::timeout_at(deadline.into(), Box::pin(worker.connect()));
        let mut conn = match connected.await {
            Ok(Ok(conn)) => conn,
            Ok(Err(failure)) => {
                worker.fail_unsent(failure, &job);
                tokio::time::sleep(CONNECT_BACKOFF).await;
                continue;
            }
            Err(_) => {
                worker.fail_unconnected(&job);
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

/// Open loop: sends every request due by `now`, opens connections for those that wait;
/// returns the next due time, or `None` once the schedule is done.
pub(super) fn dispatch_due(worker: &Rc<Worker>, now: Instant) -> Option<Instant> {
    let open = worker.open()?;
    worker.expire_waiting(now);
    let due = open.dispatch_due(now, worker.stopping.get(), &worker.books);
    grow(worker);
    match due {
        Due::At(at) => Some(at),
        Due::Over => {
            worker.finish_dispatch();
            None
        }
    }
}

/// Opens connections while requests wait for one and the cap allows.
fn grow(worker: &Rc<Worker>) {
    let Some(open) = worker.open() else { return };
    for _ in 0..open.to_open(worker.plan.protocol.streams()) {
        worker.spawn_task(open_connection(worker.clone()));
    }
}

/// The open loop's dispatcher: sleeps on a microsecond timer until the next due time (a
/// little after, to batch) and dispatches everything due.
async fn dispatcher(worker: Rc<Worker>) {
    let timer = PreciseTimer::new().ok();
    if let Some(open) = worker.open() {
        // Made once, not at every wake-up: either ends the schedule, after which
        // `dispatch_due` says so and the loop is left.
        let mut stopped = std::pin::pin!(worker.stop_notify.notified());
        let mut done = std::pin::pin!(open.done_notify.notified());
        while let Some(due) = dispatch_due(&worker, Instant::now()) {
            let wake = due + BATCH;
            let sleep = async {
                match &timer {
                    Some(timer) => timer.sleep_until(wake).await,
                    None => tokio::time::sleep_until(wake.into()).await,
                }
            };
            tokio::select! {
                () = sleep => {}
                () = &mut stopped => {}
                () = &mut done => {}
            }
        }
    }
    worker.finish_dispatch();
    worker.task_ended();
}

/// An open-loop connection, made on demand: serves due requests until it closes or the
/// attack ends, then lets the pool open another if requests still wait.
async fn open_connection(worker: Rc<Worker>) {
    let connected = Box::pin(worker.connect()).await;
    let Some(open) = worker.open() else {
        return worker.task_ended();
    };
    open.connected();
    match connected {
        Err(failure) => {
            // The request waiting longest fails with it.
            if let Some(job) = worker.take_pending(Instant::now()) {
                worker.fail_unsent(failure, &job);
            }
        }
        Ok(mut conn) => {
            spawn_streams(&worker, &conn);
            serve(&worker, &mut conn, None).await;
        }
    }
    open.closed();
    grow(&worker);
    worker.task_ended();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an `async fn` of one argument returns, without calling it.
    fn future_size<A, F: Future>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    fn future_size2<A, B, F: Future>(_: fn(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Every connection carries its task's future for its whole life: at 10,000 connections
    /// each kilobyte of it is 10 MB. It was 3.2 KB while the connect, the path to other TLS
    /// hosts and hyper's response futures sat inline; a future that grows past this bound
    /// again wants one of them boxed (docs/ARCHITECTURE.md, "Memory per connection").
    #[test]
    fn a_connection_task_stays_small() {
        let closed = future_size(closed_connection);
        let open = future_size(open_connection);
        let stream = future_size2(stream_task);
        for (task, size) in [("closed", closed), ("open", open), ("stream", stream)] {
            assert!(size <= 1536, "the {task} connection task is {size} bytes");
        }
    }
}

//! What a worker holds whatever its load model, and how it sends and records one request.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use vload_schema::ErrorKind;
use vload_timer::nanos_between;

use super::WorkerSetup;
use super::backlog::Batch;
use super::books::Books;
use super::closed::Closed;
use super::job::{Flow, Job};
use super::open::Open;
use super::recording::{Ended, Outcome, Stages};
use crate::breakdown::{End, Tally};
use crate::cache::CacheClass;
use crate::conn::{Conn, Dialer};
use crate::failure::Failure;
use crate::plan::AttackPlan;
use crate::record::ERROR_KINDS;
use crate::workload::{Drawn, Form, Wire, Workload};

/// The load model, as data: where jobs come from.
pub(super) enum Model {
    /// Each connection sends its next request when the previous one ends.
    Closed(Closed),
    /// Requests fall due on a schedule; connections are opened on demand.
    Open(Box<Open>),
}

pub(super) struct Worker {
    pub(super) id: u32,
    pub(super) plan: Arc<AttackPlan>,
    pub(super) model: Model,
    /// What each request carries.
    pub(super) workload: Workload,
    dialer: Dialer,
    /// Every request's account, in the window it belongs to.
    pub(super) books: Books,
    /// With a rate plan: its stages, each request recorded in its own as well.
    pub(super) stages: Option<Stages>,
    /// The measured window's breakdowns, and their dimensions by target.
    pub(super) breakdown: Tally,
    /// TLS with target files: the URL's host, whose connections are the task's own;
    /// targets naming another host go over connections made with that host's SNI.
    tls_host: Option<Box<str>>,
    samples: RefCell<[Option<String>; ERROR_KINDS.len()]>,
    /// Connection tasks plus the dispatcher: the run is over when this reaches 0.
    live_tasks: Cell<u32>,
    pub(super) all_done: Notify,
    pub(super) stopping: Cell<bool>,
    pub(super) stop_notify: Notify,
    pub(super) last_send: Cell<Option<Instant>>,
}

impl Worker {
    /// The worker of `setup`; `end` is when its window ends, for a time-bounded attack.
    pub(super) fn new(setup: &mut WorkerSetup, end: Option<Instant>) -> Self {
        let plan = setup.plan.clone();
        let stages = setup
            .schedule
            .as_ref()
            .filter(|_| plan.is_staged())
            .map(|schedule| Stages {
                curve: schedule.curve(),
                t0: setup.t0,
                plan: plan.clone(),
            });
        let model = match setup.schedule.take() {
            Some(schedule) => Model::Open(Box::new(Open::new(
                schedule,
                (end, setup.t0 + plan.warmup),
                setup.requests,
                (setup.connections.max(1), plan.threads),
                stages.is_some(),
            ))),
            None => Model::Closed(Closed::new(setup.requests)),
        };
        let dialer = Dialer {
            addr: plan.connect_to,
            protocol: plan.protocol,
            connect_timeout: plan.connect_timeout,
            timeout: plan.timeout,
            tls: setup
                .tls
                .clone()
                .map(|(config, name)| (tokio_rustls::TlsConnector::from(config), name)),
        };
        Worker {
            id: setup.id,
            workload: Workload::new(
                &plan,
                setup.source.take().unwrap_or(crate::workload::Source::Own),
                setup.dimensions.clone(),
            ),
            model,
            dialer,
            books: Books::new(setup.t0 + plan.warmup, stages.is_some()),
            stages,
            breakdown: Tally::new(setup.dimensions.clone()),
            tls_host: (plan.tls.is_some() && plan.targets.is_some())
                .then(|| plan.tls.as_ref().map(|t| t.server_name.as_str().into()))
                .flatten(),
            samples: RefCell::new(Default::default()),
            live_tasks: Cell::new(0),
            all_done: Notify::new(),
            stopping: Cell::new(false),
            stop_notify: Notify::new(),
            last_send: Cell::new(None),
            plan,
        }
    }

    pub(super) fn open(&self) -> Option<&Open> {
        match &self.model {
            Model::Open(open) => Some(open),
            Model::Closed(_) => None,
        }
    }

    pub(super) fn spawn_task<F: Future<Output = ()> + 'static>(&self, task: F) {
        self.live_tasks.set(self.live_tasks.get() + 1);
        tokio::task::spawn_local(task);
    }

    pub(super) fn task_ended(&self) {
        let left = self.live_tasks.get() - 1;
        self.live_tasks.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

    pub(super) fn begin_stop(&self) {
        self.stopping.set(true);
        self.stop_notify.notify_one();
        if let Some(open) = self.open() {
            open.stop();
        }
    }

    /// The open loop's schedule is over: its attack's sending ends now.
    pub(super) fn finish_dispatch(&self) {
        if self.open().is_some_and(Open::finish) {
            self.last_send.set(Some(Instant::now()));
        }
    }

    /// The window ends at `at` (no later than planned): the open loop sends nothing due
    /// after it.
    pub(super) fn end_window(&self, at: Instant) {
        if let Some(open) = self.open() {
            open.end_at(at);
        }
    }

    /// Closes connections idle too long (open loop).
    pub(super) fn reap_idle(&self, now: Instant) {
        if let Some(open) = self.open() {
            open.reap_idle(now);
        }
    }

    /// The worker stops waiting: requests still waiting for a connection were never sent,
    /// requests taken up and not ended are unfinished. Returns how many requests fell due
    /// and did not complete (the backlog).
    pub(super) fn close_books(&self) -> u64 {
        let mut backlog = 0;
        if let Some(open) = self.open() {
            for batch in open.take_all_pending() {
                self.books.unsent(&batch.job(), batch.count);
                backlog += batch.count;
            }
        }
        backlog + self.books.close()
    }

    pub(super) fn sample(&self, kind: ErrorKind, message: impl FnOnce() -> String) {
        let mut samples = self.samples.borrow_mut();
        let slot = &mut samples[ERROR_KINDS
            .iter()
            .position(|k| *k == kind)
            .expect("every kind is listed")];
        if slot.is_none() {
            *slot = Some(message());
        }
    }

    /// The achieved gaps sampled (Poisson only): gaps seen, and the sample.
    pub(super) fn take_arrivals(&self) -> Option<(u64, Vec<f64>)> {
        match &self.model {
            Model::Open(open) => open.take_arrivals(),
            Model::Closed(_) => None,
        }
    }

    /// The first message of each error kind.
    pub(super) fn take_samples(&self) -> Vec<(ErrorKind, String)> {
        self.samples
            .borrow_mut()
            .iter_mut()
            .zip(ERROR_KINDS)
            .filter_map(|(s, k)| s.take().map(|s| (k, s)))
            .collect()
    }

    /// The closed loop's next request, taken up at `now`; `None` when the attack is
    /// stopping or the budget is spent.
    pub(super) fn next_closed(&self, now: Instant) -> Option<Job> {
        let Model::Closed(closed) = &self.model else {
            return None;
        };
        let job = closed.next(self.stopping.get(), now, self.books.is_warmup(now))?;
        self.books.take_up_closed(&job);
        Some(job)
    }

    /// The open loop's request waiting longest, taken up at `now`, its wait counted; those
    /// that waited past their deadline fail first, as timed out.
    pub(super) fn take_pending(&self, now: Instant) -> Option<Job> {
        let open = self.open()?;
        self.expire_waiting(now);
        let job = open.pop_pending()?;
        self.books.take_up(&job);
        if job.queued {
            let mut part = self.books.of(&job);
            part.queued += 1;
            part.queue_wait.record(nanos_between(job.intended, now));
        }
        Some(job)
    }

    /// Open loop: fails, as timed out, every waiting request whose deadline has passed: it
    /// could no longer be answered within --timeout of its due time.
    pub(super) fn expire_waiting(&self, now: Instant) {
        let Some(open) = self.open() else { return };
        let timeout = self.plan.timeout;
        if open.oldest_due().is_none_or(|due| due + timeout > now) {
            return;
        }
        let cutoff = now.checked_sub(timeout).unwrap_or(now);
        // Every one of them waited the whole timeout: recorded at it, in bulk.
        for batch in open.take_due_before(cutoff + Duration::from_nanos(1)) {
            self.expire(&batch);
        }
    }

    /// Records a batch of requests that waited in the queue until their deadline.
    fn expire(&self, batch: &Batch) {
        let timeout = self.plan.timeout;
        let ns = timeout.as_nanos() as u64;
        let job = batch.job();
        let n = batch.count;
        let mut part = self.books.of(&job);
        // Taken up and sent (failed trying) at once: they never held a connection.
        part.sent += n;
        part.completed += n;
        part.queued += n;
        part.queue_timeouts += n;
        part.queue_wait.record_n(ns, n);
        part.response.record_n(ns, n);
        part.errors[crate::record::kind_index(ErrorKind::RequestTimeout)] += n;
        if !job.warmup {
            let end = End {
                status: None,
                cache: CacheClass::Unknown,
                received: 0,
                latency: self.open().is_some().then_some(ns),
            };
            self.breakdown.count(job.tags, &end, n);
        }
        if self.stages.is_some() {
            let stage = part.stage(job.stage);
            stage.sent += n;
            stage.completed += n;
            stage.response.record_n(ns, n);
            stage.errors[crate::record::kind_index(ErrorKind::RequestTimeout)] += n;
        }
        drop(part);
        self.sample(ErrorKind::RequestTimeout, || {
            format!("waited {timeout:?} for a connection and was never sent (every connection busy or still being made)")
        });
    }

    /// A request that failed before it could be written (its connection could not be
    /// made): sent, in that vload tried.
    pub(super) fn fail_unsent(&self, failure: Failure, job: &Job) {
        let now = Instant::now();
        self.books.send(job);
        self.last_send.set(Some(now));
        let outcome = Outcome::Failed {
            failure,
            service: None,
            response: None,
        };
        self.books.end(job);
        self.record(job, now, 0, outcome);
    }

    /// A request taken up whose deadline passed before its connection was made.
    pub(super) fn fail_unconnected(&self, job: &Job) {
        let timeout = self.plan.timeout;
        self.books.send(job);
        self.books.end(job);
        let outcome = Outcome::Failed {
            failure: (
                ErrorKind::RequestTimeout,
                format!(
                    "no connection within {timeout:?}: the TCP connect, TLS handshake or HTTP/2 SETTINGS was still pending"
                ),
            ),
            service: Some(timeout.as_nanos() as u64),
            response: self.open().is_some().then_some(timeout.as_nanos() as u64),
        };
        self.record(job, Instant::now(), 0, outcome);
    }

    /// A request taken up will not be sent: no target is left for it.
    pub(super) fn withdraw(&self, job: &Job) {
        self.books.withdraw(job);
    }

    /// Callers box the future: a TCP connect and TLS handshake's state is large, and a
    /// connection task that held it inline would carry it for its whole life.
    pub(super) async fn connect(&self) -> Result<Conn, Failure> {
        self.connect_as(None).await
    }

    /// Connects, sending `server_name` as SNI instead of the URL's host when given.
    async fn connect_as(&self, server_name: Option<&str>) -> Result<Conn, Failure> {
        let connected = self.dialer.connect(server_name).await?;
        let mut part = self.books.at(Instant::now());
        part.connections_opened += 1;
        part.tcp_connect
            .record(connected.tcp_connect.as_nanos() as u64);
        if let Some(took) = connected.tls_handshake {
            part.tls_handshake.record(took.as_nanos() as u64);
        }
        Ok(connected.conn)
    }

    /// Sends the next request (the attack's, or the next target's) for `job` on `conn`.
    pub(super) async fn execute(&self, conn: &mut Conn, job: Job) -> Flow {
        let mut job = job;
        let Some(drawn) = self.workload.draw() else {
            self.withdraw(&job);
            return Flow::Exhausted;
        };
        job.tags = drawn.tags;
        match self.other_tls_host(&drawn) {
            None => self.exchange(conn, &drawn, job).await,
            Some(host) => {
                // Boxed: a rare path (targets on other TLS hosts) whose state would
                // otherwise sit beside the common one in every connection task.
                Box::pin(self.exchange_as(conn, &host, &drawn, job)).await;
                // The task's own connection is untouched.
                Flow::KeepAlive
            }
        }
    }

    /// Over TLS, a target naming a host other than the URL's: that host, its SNI.
    fn other_tls_host(&self, drawn: &Drawn) -> Option<Box<str>> {
        let primary = self.tls_host.as_deref()?;
        let authority = match &drawn.form {
            Form::Target(target) => target.authority.as_ref(),
            Form::Wire { authority, .. } => authority.as_ref(),
            Form::Own => None,
        };
        let host = authority?.host();
        (!host.eq_ignore_ascii_case(primary)).then(|| host.into())
    }

    /// Sends `drawn` over this task's connection with `host` as SNI, made if needed.
    async fn exchange_as(&self, conn: &mut Conn, host: &str, drawn: &Drawn, job: Job) {
        let found = conn.side.iter().position(|(name, _)| **name == *host);
        let reused = found
            .map(|i| conn.side.swap_remove(i))
            .and_then(|(name, mut side)| {
                // Notices a close by the server while the connection sat idle.
                side.poll_closed(&mut Context::from_waker(Waker::noop()));
                side.is_open().then_some((name, side))
            });
        let mut side = match reused {
            Some(side) => side,
            None => match Box::pin(self.connect_as(Some(host))).await {
                Ok(side) => (host.into(), side),
                Err(failure) => return self.fail_unsent(failure, &job),
            },
        };
        if let Flow::KeepAlive = self.exchange(&mut side.1, drawn, job).await
            && side.1.is_open()
        {
            conn.side.push(side);
        }
    }

    /// Sends `drawn` on `conn`, waits for the whole response, and records it.
    async fn exchange(&self, conn: &mut Conn, drawn: &Drawn, job: Job) -> Flow {
        let request = self.workload.request(drawn);
        let wire = match &drawn.form {
            Form::Wire { wire, .. } => Some(wire),
            _ => None,
        };
        let start = Instant::now();
        self.begin(&job, start);
        conn.served += 1;
        let last_on_connection = self.last_on_connection(conn.served);
        let deadline = job.deadline(self.plan.timeout);
        let result = if start >= deadline {
            None
        } else {
            conn.exchange(request, wire, deadline).await
        };
        // Counted whatever the outcome: an endless body that times out still arrived.
        let received = conn.take_received();
        let written = conn.take_written();
        self.note_stray(conn);
        // A failed or timed-out HTTP/1.1 exchange leaves its connection unusable; an HTTP/2
        // stream's failure (a reset, a timeout that cancelled it) leaves the connection and
        // its other streams as they were, so the stream goes on unless the connection died.
        let survives = conn.is_multiplexed() && conn.is_open();
        let ended = Ended {
            start,
            done: Instant::now(),
            received,
            written,
            last_on_connection,
            survives,
        };
        self.end(&job, result, ended)
    }

    /// The attack's own request as the lean HTTP/1.1 client writes it.
    pub(super) fn own_wire(&self) -> Wire {
        self.workload.own_wire()
    }

    /// Where and how connections are made.
    pub(super) fn dialer(&self) -> &Dialer {
        &self.dialer
    }
}

impl Batch {
    /// A job standing for the batch's window and stage (its times are not read).
    fn job(&self) -> Job {
        Job {
            intended: Instant::now(),
            queued: true,
            stage: self.stage,
            warmup: self.warmup,
            tags: crate::breakdown::Tags::UNDRAWN,
        }
    }
}

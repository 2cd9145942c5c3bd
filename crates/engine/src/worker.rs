//! One worker thread: a current-thread runtime, its connections, its recorder.
//!
//! Everything a worker touches per request is its own (`Rc`, `Cell`, `RefCell`):
//! no locks and no atomics on the hot path. Once a second the worker swaps its
//! [`IntervalStats`] for an empty one and sends the full one to the collector.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONNECTION;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use vload_schema::ErrorKind;

use crate::cache::{CacheClass, classify};
use crate::plan::AttackPlan;
use crate::record::{ERROR_KINDS, IntervalStats};
use crate::schedule::Schedule;
use crate::targets::{Target, TargetStream};
use crate::tls::Io;
use vload_timer::{PreciseTimer, nanos_between, tighten_timer_slack};

/// A dispatch later than this counts as a late send.
const LATE_SEND: Duration = Duration::from_millis(1);
/// Closed loop: pause after a failed connect so a dead server is not spun on.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// Open loop: an idle connection unused this long is closed, so that connections opened for
/// a burst do not stay forever (the idle list is a stack: the busy ones stay on top).
const IDLE_REAP: Duration = Duration::from_secs(5);
/// In-flight requests get this long to finish after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(1);

/// What a worker sends to the collector.
#[derive(Debug)]
pub(crate) enum WorkerMsg {
    /// Stats of interval `index` (second `index` after t0).
    Interval {
        worker: u32,
        index: u32,
        stats: Box<IntervalStats>,
    },
    /// The worker has finished; no more messages follow from it.
    Done(WorkerSummary),
}

/// A finished worker's account.
#[derive(Debug)]
pub(crate) struct WorkerSummary {
    pub(crate) worker: u32,
    pub(crate) cpu: Duration,
    /// Time the thread was neither parked (idle) nor on a CPU: runnable, waiting for one.
    pub(crate) waiting: Duration,
    pub(crate) samples: Vec<(ErrorKind, String)>,
    /// Requests due but never completed (open loop) or aborted in flight.
    pub(crate) backlog: u64,
    /// When the attack stopped sending (time bound, count bound or interrupt).
    pub(crate) attack_end: Instant,
    /// When the worker stopped (last response or grace deadline).
    pub(crate) end: Instant,
}

/// Everything one worker needs to start.
#[derive(Debug)]
pub(crate) struct WorkerSetup {
    pub(crate) id: u32,
    pub(crate) plan: Arc<AttackPlan>,
    pub(crate) t0: Instant,
    /// Closed loop: connections. Open loop: the cap for this worker.
    pub(crate) connections: u32,
    /// This worker's share of `--requests`.
    pub(crate) requests: Option<u64>,
    pub(crate) schedule: Option<Schedule>,
    pub(crate) targets: Option<TargetStream>,
    pub(crate) tls: Option<(
        std::sync::Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    pub(crate) to_collector: mpsc::Sender<WorkerMsg>,
    pub(crate) interrupt: watch::Receiver<bool>,
}

thread_local! {
    /// When the runtime parked (went idle) last, and the total time parked.
    static PARKED: Cell<(Option<Instant>, Duration)> = const { Cell::new((None, Duration::ZERO)) };
}

fn on_park() {
    PARKED.with(|p| p.set((Some(Instant::now()), p.get().1)));
}

fn on_unpark() {
    PARKED.with(|p| {
        if let (Some(since), total) = p.get() {
            p.set((None, total + since.elapsed()));
        }
    });
}

/// Runs a worker on the current thread until its share of the attack is done.
pub(crate) fn run(setup: WorkerSetup) {
    tighten_timer_slack();
    let (cpu_start, wall_start) = (thread_cpu_time(), Instant::now());
    let to_collector = setup.to_collector.clone();
    // Time not parked and not on a CPU is time spent runnable, waiting for a core: the
    // health verdict tells a thread starved by other processes from one that idled.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(on_park)
        .on_thread_unpark(on_unpark)
        .build()
        .expect("a current-thread runtime can always be built");
    let local = tokio::task::LocalSet::new();
    let mut summary = local.block_on(&runtime, worker_main(setup));
    drop(local); // cancels whatever is still in flight after the grace period
    summary.cpu = thread_cpu_time().saturating_sub(cpu_start);
    let parked = PARKED.with(|p| p.get().1);
    let awake = wall_start.elapsed().saturating_sub(parked);
    summary.waiting = awake.saturating_sub(summary.cpu);
    // The collector outlives every worker; a send error means it is gone and nobody listens.
    let _ = to_collector.send(WorkerMsg::Done(summary));
}

/// The request as sent, prepared once.
#[derive(Debug)]
pub(crate) struct Prepared {
    method: http::Method,
    /// Origin-form for HTTP/1.1, absolute for HTTP/2 (whose `:authority` replaces Host).
    path: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
    /// For HTTP/2: the authority of requests whose target names none.
    h2_authority: Option<String>,
    /// `http` or `https`.
    scheme: &'static str,
    /// The whole request as bytes, for the lean HTTP/1.1 client.
    raw: Option<Bytes>,
}

/// A request ready for a connection.
pub(crate) enum Outgoing {
    /// For hyper (HTTP/2, or `--http1-client hyper`).
    Hyper(Box<http::Request<Full<Bytes>>>),
    /// For the lean HTTP/1.1 client: the bytes to write.
    Raw { bytes: Bytes, head: bool },
}

/// True when HTTP/1.1 goes through vload's lean client.
fn lean(plan: &AttackPlan) -> bool {
    !plan.http2 && plan.http1_client == crate::plan::Http1Client::Lean
}

fn scheme(plan: &AttackPlan) -> &'static str {
    if plan.tls.is_some() { "https" } else { "http" }
}

impl Prepared {
    pub(crate) fn new(plan: &AttackPlan) -> Self {
        let template = &plan.request;
        let path = template.url.path_and_query().map_or("/", |pq| pq.as_str());
        let mut headers = template.headers.clone();
        let h2_authority = plan.http2.then(|| {
            let host = headers
                .remove(http::header::HOST)
                .and_then(|h| h.to_str().ok().map(str::to_owned));
            host.unwrap_or_else(|| {
                template
                    .url
                    .authority()
                    .map_or_else(String::new, |a| a.to_string())
            })
        });
        let path = match &h2_authority {
            Some(authority) => format!("{}://{authority}{path}", scheme(plan)),
            None => path.to_owned(),
        };
        let mut prepared = Prepared {
            method: template.method.clone(),
            path: path
                .parse()
                .expect("a path or URL taken from a valid URI parses"),
            headers,
            body: template.body.clone(),
            h2_authority,
            scheme: scheme(plan),
            raw: None,
        };
        if lean(plan) {
            // HTTP/1.1 needs a Host: the URL's, unless one was given (targets may override it).
            if let Some(host) = template
                .url
                .authority()
                .and_then(|a| http::HeaderValue::from_str(a.as_str()).ok())
            {
                prepared.headers.entry(http::header::HOST).or_insert(host);
            }
            prepared.raw = Some(Bytes::from(crate::h1::serialize(
                &prepared.method,
                &path,
                None,
                &prepared.headers,
                &http::HeaderMap::new(),
                &prepared.body,
            )));
        }
        prepared
    }

    /// The request of this attack (`target` from a file, or the URL), as the connection
    /// needs it; and its body.
    pub(crate) fn outgoing(&self, target: Option<&Target>) -> (Outgoing, Bytes) {
        let Some(raw) = &self.raw else {
            return match target {
                None => (Outgoing::Hyper(Box::new(self.build())), self.body.clone()),
                Some(t) => (
                    Outgoing::Hyper(Box::new(self.build_target(t))),
                    self.body_of(t),
                ),
            };
        };
        let head = |m: &http::Method| *m == http::Method::HEAD;
        match target {
            None => (
                Outgoing::Raw {
                    bytes: raw.clone(),
                    head: head(&self.method),
                },
                self.body.clone(),
            ),
            Some(t) => {
                let body = self.body_of(t);
                let method = t.method.as_ref().unwrap_or(&self.method);
                let bytes = Bytes::from(crate::h1::serialize(
                    method,
                    t.path.as_str(),
                    t.authority.as_ref().map(|a| a.as_str()),
                    &self.headers,
                    &t.headers,
                    &body,
                ));
                (
                    Outgoing::Raw {
                        bytes,
                        head: head(method),
                    },
                    body,
                )
            }
        }
    }

    fn body_of(&self, target: &Target) -> Bytes {
        if target.body.is_empty() {
            self.body.clone()
        } else {
            target.body.clone()
        }
    }

    /// The request for a target from a file: its method, path, Host and headers over the
    /// attack's defaults.
    fn build_target(&self, target: &Target) -> http::Request<Full<Bytes>> {
        let mut req = http::Request::new(Full::new(self.body_of(target)));
        *req.method_mut() = target.method.clone().unwrap_or_else(|| self.method.clone());
        let mut headers = self.headers.clone();
        *req.uri_mut() = match &self.h2_authority {
            None => http::Uri::from(target.path.clone()),
            Some(base) => {
                let authority = target
                    .authority
                    .as_ref()
                    .map_or(base.as_str(), |a| a.as_str());
                format!("{}://{authority}{}", self.scheme, target.path)
                    .parse()
                    .unwrap_or_else(|_| self.path.clone())
            }
        };
        if let Some(host) = target
            .authority
            .as_ref()
            .and_then(|a| http::HeaderValue::from_str(a.as_str()).ok())
        {
            headers.insert(http::header::HOST, host);
        }
        for (name, value) in &target.headers {
            headers.insert(name, value.clone());
        }
        if self.h2_authority.is_some() {
            headers.remove(http::header::HOST);
        }
        *req.headers_mut() = headers;
        req
    }

    #[inline]
    fn build(&self) -> http::Request<Full<Bytes>> {
        let mut req = http::Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.path.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// A request to send. Closed loop: intended = when it was issued.
#[derive(Debug, Clone, Copy)]
struct Job {
    intended: Instant,
    /// Open loop: when it was handed to the pool, and whether it had to wait there for a
    /// connection (every connection busy or being made).
    dispatched: Instant,
    queued: bool,
}

/// An idle open-loop connection waiting for work.
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

/// hyper's state machine of a connection.
enum Driver {
    /// HTTP/1.1: polled by the task that sends on it.
    H1(Pin<Box<http1::Connection<TokioIo<Io>, Full<Bytes>>>>),
    /// HTTP/2: its own task, since several streams share it.
    Spawned,
    /// The lean HTTP/1.1 client: no state machine apart from the connection itself.
    Lean,
}

/// The sending half of a connection.
enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
    Lean(Box<crate::h1::H1Conn>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
            Sender::Lean(c) => c.is_closed(),
        }
    }

    async fn send(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, hyper::Error> {
        match self {
            Sender::H1(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
            Sender::H2(s) => {
                s.ready().await?;
                s.send_request(request).await
            }
            Sender::Lean(_) => unreachable!("the lean client takes bytes, not a request"),
        }
    }
}

/// Runs hyper's HTTP/2 background work on the worker's own thread.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}

/// One HTTP/1.1 connection, driven inside the task that uses it: no second task and no
/// cross-task wake-up per request.
struct Conn {
    sender: Sender,
    /// hyper's connection state machine; `None` once the connection has closed.
    driver: Option<Driver>,
    /// The request timeout, re-armed per request rather than created anew.
    timeout: Pin<Box<tokio::time::Sleep>>,
    /// Requests sent on this connection.
    served: u32,
    /// TLS to several hosts at one address: this task's connections made with another
    /// host's server name (SNI), by that name. Empty otherwise.
    side: Vec<(Box<str>, Conn)>,
    /// hyper's clients: body bytes received by the current exchange, kept outside its
    /// future so that a timed-out or failed response still counts what arrived.
    received: Cell<u64>,
}

impl Conn {
    fn is_open(&self) -> bool {
        self.driver.is_some() && !self.sender.is_closed()
    }

    /// Body bytes received since the last call, from either client.
    fn take_received(&mut self) -> u64 {
        match &mut self.sender {
            Sender::Lean(c) => c.take_received(),
            _ => self.received.take(),
        }
    }

    /// Another stream on the same HTTP/2 connection.
    fn stream(&self, timeout: Duration) -> Option<Conn> {
        let Sender::H2(sender) = &self.sender else {
            return None;
        };
        Some(Conn {
            sender: Sender::H2(sender.clone()),
            driver: Some(Driver::Spawned),
            timeout: Box::pin(tokio::time::sleep(timeout)),
            served: 0,
            side: Vec::new(),
            received: Cell::new(0),
        })
    }

    /// While idle: true once the connection has closed (the server's idle timeout).
    fn poll_closed(&mut self, cx: &mut Context<'_>) -> bool {
        match &mut self.sender {
            Sender::Lean(c) => {
                if c.poll_idle(cx) {
                    self.driver = None;
                }
                self.driver.is_none()
            }
            _ => Conn::poll_driver(&mut self.driver, cx),
        }
    }

    /// Polls hyper's connection; returns true once it has closed.
    fn poll_driver(driver: &mut Option<Driver>, cx: &mut Context<'_>) -> bool {
        if let Some(Driver::H1(d)) = driver
            && d.as_mut().poll(cx).is_ready()
        {
            // Dropping the state machine fails any request still waiting on it.
            *driver = None;
        }
        driver.is_none()
    }

    /// Sends one request and reads the whole response; `None` when the deadline passed first.
    async fn exchange(
        &mut self,
        request: Outgoing,
        deadline: Instant,
    ) -> Option<Result<Exchange, Failure>> {
        // The timer is not re-armed per request: it keeps an earlier deadline, and when that
        // passes it is moved to this request's (one timer update per timeout period, not one
        // per request).
        let Conn {
            sender, timeout, ..
        } = self;
        let request = match (request, sender) {
            (Outgoing::Raw { bytes, head }, Sender::Lean(conn)) => {
                let mut response = std::pin::pin!(conn.exchange(&bytes, head));
                return std::future::poll_fn(|cx| {
                    if let Poll::Ready(result) = response.as_mut().poll(cx) {
                        return Poll::Ready(Some(result));
                    }
                    if timed_out(timeout.as_mut(), deadline, cx) {
                        return Poll::Ready(None);
                    }
                    Poll::Pending
                })
                .await;
            }
            (Outgoing::Hyper(request), _) => *request,
            (Outgoing::Raw { .. }, _) => unreachable!("lean requests go to lean connections"),
        };
        let sender = &mut self.sender;
        let driver = &mut self.driver;
        let timeout = &mut self.timeout;
        let received = &self.received;
        let mut response = std::pin::pin!(request_response(sender, request, received));
        std::future::poll_fn(|cx| {
            if let Poll::Ready(result) = response.as_mut().poll(cx) {
                return Poll::Ready(Some(result));
            }
            // The driver writes the request and reads the response; the response future
            // then completes in the same poll.
            Conn::poll_driver(driver, cx);
            if let Poll::Ready(result) = response.as_mut().poll(cx) {
                return Poll::Ready(Some(result));
            }
            if timed_out(timeout.as_mut(), deadline, cx) {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }
}

/// True once `deadline` has passed; re-arms `timer` when it fired for an earlier one.
fn timed_out(
    mut timer: Pin<&mut tokio::time::Sleep>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> bool {
    if timer.as_mut().poll(cx).is_pending() {
        return false;
    }
    if Instant::now() >= deadline {
        return true;
    }
    timer.as_mut().reset(deadline.into());
    timer.poll(cx).is_ready()
}

/// What an idle open-loop connection gets next.
enum Next {
    Job(Job),
    /// The attack is over.
    Stop,
    /// The server closed the idle connection.
    Closed,
}

/// Open loop: requests waiting for a connection, and connections waiting for requests.
#[derive(Debug, Default)]
struct Pool {
    pending: VecDeque<Job>,
    idle: Vec<Rc<Slot>>,
}

/// How a request ended, for the connection's next step.
enum Flow {
    KeepAlive,
    Reconnect,
    /// The target files ran out for this worker: nothing was sent.
    Exhausted,
}

/// A failed request: its kind and a message for a human.
type Failure = (ErrorKind, String);

/// A response as the engine keeps it, from either client.
type Exchange = crate::h1::Response;

struct Worker {
    id: u32,
    plan: Arc<AttackPlan>,
    request: Prepared,
    open_loop: bool,
    stats: RefCell<IntervalStats>,
    /// Target files, when the attack has them.
    targets: RefCell<Option<TargetStream>>,
    /// TLS for https targets.
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    /// TLS with target files: the URL's host, whose connections are the task's own;
    /// targets naming another host go over connections made with that host's SNI.
    tls_host: Option<Box<str>>,
    samples: RefCell<[Option<String>; ERROR_KINDS.len()]>,
    in_flight: Cell<u64>,
    /// Connection tasks plus the dispatcher: the run is over when this reaches 0.
    live_tasks: Cell<u32>,
    all_done: Notify,
    stopping: Cell<bool>,
    stop_notify: Notify,
    /// Closed loop: requests this worker may still issue.
    budget: Cell<Option<u64>>,
    pool: RefCell<Pool>,
    /// Open loop: the schedule, until it is done.
    dispatch: RefCell<Option<Dispatch>>,
    /// Wakes the dispatcher when another task finished the schedule.
    dispatch_notify: Notify,
    dispatch_done: Cell<bool>,
    max_connections: u32,
    connections: Cell<u32>,
    connecting: Cell<u32>,
    last_send: Cell<Option<Instant>>,
}

impl Worker {
    fn new(setup: &WorkerSetup) -> Self {
        let plan = setup.plan.clone();
        Worker {
            id: setup.id,
            request: Prepared::new(&plan),
            open_loop: plan.is_open_loop(),
            stats: RefCell::new(IntervalStats::new(
                &vload_schema::HistogramSettings::default(),
            )),
            targets: RefCell::new(None),
            tls: setup
                .tls
                .clone()
                .map(|(config, name)| (tokio_rustls::TlsConnector::from(config), name)),
            tls_host: (plan.tls.is_some() && plan.targets.is_some())
                .then(|| plan.tls.as_ref().map(|t| t.server_name.as_str().into()))
                .flatten(),
            samples: RefCell::new(Default::default()),
            in_flight: Cell::new(0),
            live_tasks: Cell::new(0),
            all_done: Notify::new(),
            stopping: Cell::new(false),
            stop_notify: Notify::new(),
            budget: Cell::new(if plan.is_open_loop() {
                None
            } else {
                setup.requests
            }),
            pool: RefCell::new(Pool::default()),
            dispatch: RefCell::new(None),
            dispatch_notify: Notify::new(),
            dispatch_done: Cell::new(false),
            max_connections: setup.connections.max(1),
            connections: Cell::new(0),
            connecting: Cell::new(0),
            last_send: Cell::new(None),
            plan,
        }
    }

    fn spawn_task<F: Future<Output = ()> + 'static>(&self, task: F) {
        self.live_tasks.set(self.live_tasks.get() + 1);
        tokio::task::spawn_local(task);
    }

    fn task_ended(&self) {
        let left = self.live_tasks.get() - 1;
        self.live_tasks.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

    fn begin_stop(&self) {
        self.stopping.set(true);
        self.stop_notify.notify_one();
        self.dispatch_done.set(true);
        self.close_idle();
    }

    fn close_idle(&self) {
        let idle = std::mem::take(&mut self.pool.borrow_mut().idle);
        for slot in idle {
            slot.fill(None);
        }
    }

    fn sample(&self, kind: ErrorKind, message: impl FnOnce() -> String) {
        let mut samples = self.samples.borrow_mut();
        let slot = &mut samples[ERROR_KINDS
            .iter()
            .position(|k| *k == kind)
            .expect("every kind is listed")];
        if slot.is_none() {
            *slot = Some(message());
        }
    }

    /// A request that failed before it could be written (connect failure).
    fn fail_unsent(&self, (kind, message): Failure) {
        let mut stats = self.stats.borrow_mut();
        stats.sent += 1;
        stats.completed += 1;
        stats.count_error(kind);
        drop(stats);
        self.last_send.set(Some(Instant::now()));
        self.sample(kind, || message);
    }

    async fn connect(&self) -> Result<Conn, Failure> {
        self.connect_as(None).await
    }

    /// Connects, sending `server_name` as SNI instead of the URL's host when given.
    async fn connect_as(&self, server_name: Option<&str>) -> Result<Conn, Failure> {
        let addr = self.plan.connect_to;
        let stream = match tokio::time::timeout(self.plan.connect_timeout, TcpStream::connect(addr))
            .await
        {
            Err(_) => {
                let message = format!(
                    "no connection to {addr} within {:?}",
                    self.plan.connect_timeout
                );
                return Err((ErrorKind::ConnectTimeout, message));
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err((
                    ErrorKind::ConnectRefused,
                    format!("connecting to {addr}: {e}"),
                ));
            }
            Ok(Err(e)) if is_client_limit(&e) => {
                return Err((
                    ErrorKind::ClientLimit,
                    format!("connecting to {addr}: {e} (a limit of this machine, not the server)"),
                ));
            }
            Ok(Err(e)) => return Err((ErrorKind::Connect, format!("connecting to {addr}: {e}"))),
            Ok(Ok(stream)) => stream,
        };
        // Small requests must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let stream = match &self.tls {
            None => Io::Plain(stream),
            Some((connector, name)) => {
                let name = match server_name {
                    None => name.clone(),
                    Some(other) => rustls::pki_types::ServerName::try_from(other.to_owned())
                        .map_err(|_| {
                            let message = format!("'{other}' is not a valid TLS server name");
                            (ErrorKind::Tls, message)
                        })?,
                };
                let start = Instant::now();
                let handshake = connector.connect(name, stream);
                match tokio::time::timeout(self.plan.connect_timeout, handshake).await {
                    Err(_) => {
                        let message = format!(
                            "no TLS handshake with {addr} within {:?}",
                            self.plan.connect_timeout
                        );
                        return Err((ErrorKind::ConnectTimeout, message));
                    }
                    Ok(Err(e)) => {
                        return Err((ErrorKind::Tls, format!("TLS handshake with {addr}: {e}")));
                    }
                    Ok(Ok(tls)) => {
                        self.stats
                            .borrow_mut()
                            .tls_handshake
                            .record(nanos_between(start, Instant::now()));
                        Io::Tls(Box::new(tls))
                    }
                }
            }
        };
        let handshake_error = |e: hyper::Error| {
            (
                ErrorKind::Connect,
                format!("HTTP handshake with {addr}: {e}"),
            )
        };
        let (sender, driver) = if self.plan.http2 {
            let (sender, connection) = http2::Builder::new(LocalExec)
                .handshake(TokioIo::new(stream))
                .await
                .map_err(handshake_error)?;
            tokio::task::spawn_local(async move {
                // Errors surface on the streams that see them.
                let _ = connection.await;
            });
            (Sender::H2(sender), Driver::Spawned)
        } else if lean(&self.plan) {
            (
                Sender::Lean(Box::new(crate::h1::H1Conn::new(stream))),
                Driver::Lean,
            )
        } else {
            let (sender, connection) = http1::Builder::new()
                .handshake(TokioIo::new(stream))
                .await
                .map_err(handshake_error)?;
            (Sender::H1(sender), Driver::H1(Box::pin(connection)))
        };
        self.stats.borrow_mut().connections_opened += 1;
        let timeout = Box::pin(tokio::time::sleep(self.plan.timeout));
        Ok(Conn {
            sender,
            driver: Some(driver),
            timeout,
            served: 0,
            side: Vec::new(),
            received: Cell::new(0),
        })
    }

    async fn execute(&self, conn: &mut Conn, job: Job) -> Flow {
        let ((request, body), other_host) = match self.targets.borrow_mut().as_mut() {
            None => (self.request.outgoing(None), None),
            Some(stream) => match stream.next() {
                Some(target) => (
                    self.request.outgoing(Some(&target)),
                    self.other_tls_host(&target),
                ),
                None => return Flow::Exhausted,
            },
        };
        let request = (request, body.len() as u64);
        match other_host {
            None => self.exchange(conn, request, job).await,
            Some(host) => {
                self.exchange_as(conn, &host, request, job).await;
                // The task's own connection is untouched.
                Flow::KeepAlive
            }
        }
    }

    /// Over TLS, a target naming a host other than the URL's: that host, its SNI.
    fn other_tls_host(&self, target: &Target) -> Option<Box<str>> {
        let primary = self.tls_host.as_deref()?;
        let host = target.authority.as_ref()?.host();
        (!host.eq_ignore_ascii_case(primary)).then(|| host.into())
    }

    /// Sends `request` over this task's connection with `host` as SNI, made if needed.
    async fn exchange_as(&self, conn: &mut Conn, host: &str, request: (Outgoing, u64), job: Job) {
        let found = conn.side.iter().position(|(name, _)| **name == *host);
        let mut side = match found {
            Some(i) => {
                let (name, mut side) = conn.side.swap_remove(i);
                // Notices a close by the server while the connection sat idle.
                side.poll_closed(&mut Context::from_waker(Waker::noop()));
                if side.is_open() {
                    (name, side)
                } else {
                    match self.connect_as(Some(host)).await {
                        Ok(side) => (name, side),
                        Err(failure) => return self.fail_unsent(failure),
                    }
                }
            }
            None => match self.connect_as(Some(host)).await {
                Ok(side) => (host.into(), side),
                Err(failure) => return self.fail_unsent(failure),
            },
        };
        if let Flow::KeepAlive = self.exchange(&mut side.1, request, job).await
            && side.1.is_open()
        {
            conn.side.push(side);
        }
    }

    /// Sends `request` on `conn`, waits for the whole response, and records it.
    async fn exchange(
        &self,
        conn: &mut Conn,
        (request, body_len): (Outgoing, u64),
        job: Job,
    ) -> Flow {
        let start = Instant::now();
        {
            let mut stats = self.stats.borrow_mut();
            stats.sent += 1;
            stats.bytes_out += body_len;
        }
        conn.served += 1;
        let last_on_connection = self
            .plan
            .requests_per_connection
            .is_some_and(|n| conn.served >= n);
        self.last_send.set(Some(start));
        self.in_flight.set(self.in_flight.get() + 1);
        let result = conn.exchange(request, start + self.plan.timeout).await;
        self.in_flight.set(self.in_flight.get() - 1);
        let done = Instant::now();
        let mut stats = self.stats.borrow_mut();
        stats.completed += 1;
        // Counted whatever the outcome: an endless body that times out still arrived.
        stats.bytes_in += conn.take_received();
        let failure = match result {
            Some(Ok(exchange)) => {
                let service = nanos_between(start, done);
                stats.service.record(service);
                let primary = if self.open_loop {
                    nanos_between(job.intended, done)
                } else {
                    service
                };
                if self.open_loop {
                    stats.response.record(primary);
                }
                match exchange.cache.0 {
                    CacheClass::Hit => stats.hit.record(primary),
                    CacheClass::Miss => stats.miss.record(primary),
                    CacheClass::Unknown => {}
                }
                stats.count_status(exchange.status);
                stats.count_cache(exchange.cache.0, exchange.cache.1);
                return if exchange.close || last_on_connection {
                    Flow::Reconnect
                } else {
                    Flow::KeepAlive
                };
            }
            Some(Err(failure)) => failure,
            None => {
                // Recorded at the timeout, so percentiles are never optimistic.
                let timeout = self.plan.timeout.as_nanos() as u64;
                stats.service.record(timeout);
                if self.open_loop {
                    stats
                        .response
                        .record(nanos_between(job.intended, start) + timeout);
                }
                let message = format!("no complete response within {:?}", self.plan.timeout);
                (ErrorKind::RequestTimeout, message)
            }
        };
        stats.count_error(failure.0);
        drop(stats);
        self.sample(failure.0, || failure.1);
        Flow::Reconnect
    }

    /// Closed loop: the next request, unless the attack is over.
    fn next_closed_job(&self) -> Option<Job> {
        if self.stopping.get() {
            return None;
        }
        match self.budget.get() {
            Some(0) => return None,
            Some(n) => self.budget.set(Some(n - 1)),
            None => {}
        }
        let now = Instant::now();
        Some(Job {
            intended: now,
            dispatched: now,
            queued: false,
        })
    }

    /// Open loop: the next due request, waiting idle until one comes. The idle connection
    /// is driven meanwhile, so a server that closes it (an idle timeout) is noticed here and
    /// not by the next request.
    async fn next_open_job(&self, slot: &Rc<Slot>, conn: &mut Conn) -> Next {
        {
            let mut pool = self.pool.borrow_mut();
            if let Some(job) = pool.pending.pop_front() {
                drop(pool);
                self.count_queue_wait(&job);
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

    fn dispatch(self: &Rc<Self>, job: Job, now: Instant) {
        {
            let mut stats = self.stats.borrow_mut();
            stats.intended += 1;
            let lag = nanos_between(job.intended, now);
            stats.dispatch_lag.record(lag);
            if lag > LATE_SEND.as_nanos() as u64 {
                stats.late_sends += 1;
            }
        }
        let slot = self.pool.borrow_mut().idle.pop();
        match slot {
            Some(slot) => slot.fill(Some(job)),
            None => {
                let job = Job {
                    queued: true,
                    ..job
                };
                self.pool.borrow_mut().pending.push_back(job);
                self.grow();
            }
        }
    }

    /// Opens connections while requests wait for one and the cap allows.
    fn grow(self: &Rc<Self>) {
        // A connection being made will take `streams` requests (HTTP/2) or one (HTTP/1.1).
        let per_connection = self.plan.streams.max(1) as usize;
        while self.pool.borrow().pending.len() > self.connecting.get() as usize * per_connection
            && self.connections.get() < self.max_connections
        {
            // Counted as connecting now, not when the task first runs: the loop reads it.
            self.connections.set(self.connections.get() + 1);
            self.connecting.set(self.connecting.get() + 1);
            self.spawn_task(open_connection(self.clone()));
        }
    }

    /// Closes the connections that have been idle longer than [`IDLE_REAP`]: the oldest
    /// idle ones, at the bottom of the stack.
    fn reap_idle(&self, now: Instant) {
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

    fn flush(&self, index: u32, to_collector: &mpsc::Sender<WorkerMsg>) {
        let mut stats = self.stats.borrow_mut().take();
        stats.in_flight = self.in_flight.get() + self.pool.borrow().pending.len() as u64;
        let _ = to_collector.send(WorkerMsg::Interval {
            worker: self.id,
            index,
            stats: Box::new(stats),
        });
    }
}

async fn request_response(
    sender: &mut Sender,
    request: http::Request<Full<Bytes>>,
    received: &Cell<u64>,
) -> Result<Exchange, Failure> {
    let response = sender
        .send(request)
        .await
        .map_err(|e| classify_error(&e, false))?;
    let status = response.status().as_u16();
    let cache = classify(response.headers());
    let close = response
        .headers()
        .get(CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    let mut body = response.into_body();
    let mut body_bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify_error(&e, true))?;
        if let Some(data) = frame.data_ref() {
            body_bytes += data.len() as u64;
            received.set(received.get() + data.len() as u64);
        }
    }
    Ok(Exchange {
        status,
        body_bytes,
        cache,
        close,
    })
}

/// Out of file descriptors, local ports or buffers: the client machine's limit.
fn is_client_limit(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// The first error of type `T` in `error`'s chain of sources.
fn find_source<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        source = e.source();
    }
    None
}

/// HTTP/2's own failures: a stream reset or a GOAWAY by the server, or a protocol error
/// (a server that does not speak HTTP/2 at all answers the preface with bytes that are
/// not frames).
fn h2_kind(error: &h2::Error) -> Option<ErrorKind> {
    if error.is_io() {
        return None;
    }
    Some(
        match (error.is_go_away(), error.is_reset(), error.is_remote()) {
            (true, _, true) => ErrorKind::Goaway,
            (false, true, true) => ErrorKind::StreamReset,
            _ => ErrorKind::Protocol,
        },
    )
}

/// Maps a hyper error onto a kind by its type, never by its wording.
fn classify_error(error: &hyper::Error, in_body: bool) -> Failure {
    let io_kind = find_source::<std::io::Error>(error).map(std::io::Error::kind);
    let h2 = find_source::<h2::Error>(error).and_then(h2_kind);
    use std::io::ErrorKind as Io;
    let kind = match io_kind {
        _ if h2.is_some() => h2.expect("checked"),
        Some(Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe) => ErrorKind::Reset,
        _ if error.is_parse() || error.is_parse_status() || error.is_parse_too_large() => {
            ErrorKind::Protocol
        }
        _ if error.is_timeout() => ErrorKind::RequestTimeout,
        _ if in_body => ErrorKind::Body,
        _ if error.is_incomplete_message() || error.is_canceled() || error.is_closed() => {
            ErrorKind::Reset
        }
        Some(_) => ErrorKind::Reset,
        None => ErrorKind::Other,
    };
    let mut message = error.to_string();
    if let Some(source) = std::error::Error::source(error) {
        message = format!("{message}: {source}");
    }
    (kind, message)
}

async fn closed_connection(worker: Rc<Worker>) {
    // The request is taken before the connection is made, so no connection opens for a
    // request that is not there (the accept counts of --requests-per-connection stay exact).
    // Connections to other TLS hosts outlive a reconnect of the task's own.
    let mut side = Vec::new();
    'connect: while let Some(first) = worker.next_closed_job() {
        let mut conn = match worker.connect().await {
            Ok(conn) => conn,
            Err(failure) => {
                worker.fail_unsent(failure);
                tokio::time::sleep(CONNECT_BACKOFF).await;
                continue;
            }
        };
        conn.side = std::mem::take(&mut side);
        spawn_streams(&worker, &conn, closed_stream);
        let mut job = first;
        loop {
            let flow = worker.execute(&mut conn, job).await;
            if !matches!(flow, Flow::KeepAlive) || !conn.is_open() {
                side = std::mem::take(&mut conn.side);
            }
            match flow {
                Flow::KeepAlive => {}
                Flow::Reconnect => continue 'connect,
                Flow::Exhausted => {
                    worker.begin_stop();
                    break 'connect;
                }
            }
            if !conn.is_open() {
                continue 'connect;
            }
            match worker.next_closed_job() {
                Some(next) => job = next,
                None => break 'connect,
            }
        }
    }
    worker.task_ended();
}

/// Starts the other streams of an HTTP/2 connection, each its own task.
fn spawn_streams<F, Fut>(worker: &Rc<Worker>, conn: &Conn, stream_task: F)
where
    F: Fn(Rc<Worker>, Conn) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    for _ in 1..worker.plan.streams {
        if let Some(stream) = conn.stream(worker.plan.timeout) {
            worker.spawn_task(stream_task(worker.clone(), stream));
        }
    }
}

/// Closed loop: one more stream of an HTTP/2 connection; it ends with the connection, whose
/// first stream reconnects.
async fn closed_stream(worker: Rc<Worker>, mut conn: Conn) {
    while conn.is_open() {
        let Some(job) = worker.next_closed_job() else {
            break;
        };
        match worker.execute(&mut conn, job).await {
            Flow::KeepAlive => {}
            Flow::Reconnect => break,
            Flow::Exhausted => {
                worker.begin_stop();
                break;
            }
        }
    }
    worker.task_ended();
}

/// Open loop: one more stream of an HTTP/2 connection, taking due requests like a connection.
async fn open_stream(worker: Rc<Worker>, mut conn: Conn) {
    serve_open(&worker, &mut conn).await;
    worker.task_ended();
}

/// Open loop: takes due requests on `conn` until the attack ends or the connection closes.
async fn serve_open(worker: &Rc<Worker>, conn: &mut Conn) {
    let slot = Rc::new(Slot::default());
    while let Next::Job(job) = worker.next_open_job(&slot, conn).await {
        if !conn.is_open() {
            // Closed under us: the request waits for another connection.
            let job = Job {
                queued: true,
                ..job
            };
            worker.pool.borrow_mut().pending.push_front(job);
            break;
        }
        let flow = worker.execute(conn, job).await;
        // Whatever fell due meanwhile goes out now, not when the timer is next polled.
        worker.dispatch_due(Instant::now());
        match flow {
            Flow::KeepAlive => {}
            Flow::Reconnect => break,
            Flow::Exhausted => {
                worker.begin_stop();
                break;
            }
        }
    }
}

async fn open_connection(worker: Rc<Worker>) {
    let connected = worker.connect().await;
    worker.connecting.set(worker.connecting.get() - 1);
    match connected {
        Err(failure) => {
            // The request that asked for this connection fails with it.
            let job = worker.pool.borrow_mut().pending.pop_front();
            if job.is_some() {
                worker.fail_unsent(failure);
            }
        }
        Ok(mut conn) => {
            spawn_streams(&worker, &conn, open_stream);
            serve_open(&worker, &mut conn).await;
        }
    }
    worker.connections.set(worker.connections.get() - 1);
    worker.grow();
    worker.task_ended();
}

/// Open loop: the schedule and what is left of it. Any task may send what is due (a
/// connection does after each response), so a busy thread dispatches between task polls
/// rather than only when the runtime gets round to the timer; the dispatcher task's timer is
/// the fallback for a quiet thread.
pub(crate) struct Dispatch {
    schedule: Schedule,
    end: Option<Instant>,
    remaining: Option<u64>,
}

/// Open loop: the timer may wake this much after a request's due time, so that one wake-up
/// sends a few requests instead of one each (dispatch lag stays well under 200 µs).
const BATCH: Duration = Duration::from_micros(20);

impl Worker {
    /// Sends every request due by now; returns the next due time, or `None` once the
    /// schedule is done (then the attack's dispatching is over).
    fn dispatch_due(self: &Rc<Self>, now: Instant) -> Option<Instant> {
        let mut guard = self.dispatch.borrow_mut();
        let d = guard.as_mut()?;
        if let Some(end) = d.end
            && now >= end
        {
            // The window is over: a request due in it that is not out yet could only go out
            // after it, over 1 ms late. It is counted as due and never sent (a frozen
            // client), whichever task notices the end first.
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
            self.dispatch(
                Job {
                    intended: due,
                    dispatched: now,
                    queued: false,
                },
                now,
            );
            d.remaining = d.remaining.map(|n| n - 1);
            d.schedule.advance();
        }
    }

    /// Open loop, at the window's end: every request due in the window is intended. Those
    /// still due within [`LATE_SEND`] go out now; older ones (a frozen client, a stalled
    /// machine) could only be sent after the window, so they are counted as never sent.
    fn close_window(self: &Rc<Self>, now: Instant) {
        self.dispatch_due(now);
    }

    fn finish_dispatch(&self) {
        if self.dispatch.borrow_mut().take().is_none() {
            return;
        }
        self.dispatch_done.set(true);
        // An open loop's attack ends when dispatching ends.
        self.last_send.set(Some(Instant::now()));
        self.close_idle();
        self.dispatch_notify.notify_one();
    }
}

async fn dispatcher(worker: Rc<Worker>) {
    let timer = PreciseTimer::new().ok();
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
            () = worker.dispatch_notify.notified() => {}
        }
    }
    worker.finish_dispatch();
    worker.task_ended();
}

/// Records how late a 1 ms sleep wakes: the runtime's own stalls (jHiccup's method).
async fn hiccup_probe(worker: Rc<Worker>) {
    let Ok(timer) = PreciseTimer::new() else {
        return;
    };
    let period = Duration::from_millis(1);
    loop {
        let expected = Instant::now() + period;
        timer.sleep_until(expected).await;
        let late = nanos_between(expected, Instant::now());
        worker.stats.borrow_mut().hiccup.record(late);
    }
}

async fn worker_main(mut setup: WorkerSetup) -> WorkerSummary {
    let worker = Rc::new(Worker::new(&setup));
    *worker.targets.borrow_mut() = setup.targets.take();
    let plan = setup.plan.clone();
    let mut interrupt = setup.interrupt.clone();
    // A Ctrl-C while waiting for --start-at ends the wait; the loop below then stops at once.
    tokio::select! {
        () = tokio::time::sleep_until(setup.t0.into()) => {}
        Ok(_) = interrupt.wait_for(|on| *on) => {}
    }
    tokio::task::spawn_local(hiccup_probe(worker.clone()));
    let end = plan.stop.duration.map(|d| setup.t0 + plan.warmup + d);
    match setup.schedule {
        Some(schedule) => {
            *worker.dispatch.borrow_mut() = Some(Dispatch {
                schedule,
                end,
                remaining: setup.requests,
            });
            worker.spawn_task(dispatcher(worker.clone()))
        }
        None => {
            for _ in 0..setup.connections {
                worker.spawn_task(closed_connection(worker.clone()));
            }
        }
    }
    let far = setup.t0 + Duration::from_secs(86_400 * 365);
    let (mut index, mut tick) = (0u32, setup.t0 + Duration::from_secs(1));
    let mut grace: Option<Instant> = None;
    let mut attack_end: Option<Instant> = None;
    let mut interrupted = false;
    loop {
        tokio::select! {
            biased;
            () = worker.all_done.notified() => break,
            () = tokio::time::sleep_until(tick.into()) => {
                worker.flush(index, &setup.to_collector);
                worker.reap_idle(Instant::now());
                index += 1;
                tick += Duration::from_secs(1);
            }
            () = tokio::time::sleep_until(end.unwrap_or(far).into()), if end.is_some() && grace.is_none() => {
                let (end, now) = (end.expect("guarded"), Instant::now());
                // The window ends at its planned end, however late this thread noticed it.
                attack_end = Some(end.min(now));
                worker.close_window(now);
                worker.begin_stop();
                grace = Some(Instant::now() + plan.timeout + Duration::from_millis(100));
            }
            // Resolves at once if Ctrl-C came before the workers started.
            triggered = interrupt.wait_for(|on| *on), if !interrupted => {
                interrupted = true;
                if triggered.is_ok() {
                    let now = Instant::now();
                    attack_end.get_or_insert(now);
                    worker.begin_stop();
                    grace = Some(grace.map_or(now + INTERRUPT_GRACE, |g| g.min(now + INTERRUPT_GRACE)));
                }
            }
            () = tokio::time::sleep_until(grace.unwrap_or(far).into()), if grace.is_some() => break,
        }
    }
    let end_instant = Instant::now();
    let attack_end = attack_end.unwrap_or_else(|| worker.last_send.get().unwrap_or(end_instant));
    let backlog = worker.pool.borrow().pending.len() as u64 + worker.in_flight.get();
    worker.flush(index, &setup.to_collector);
    let samples = worker
        .samples
        .borrow_mut()
        .iter_mut()
        .zip(ERROR_KINDS)
        .filter_map(|(s, k)| s.take().map(|s| (k, s)))
        .collect();
    WorkerSummary {
        worker: setup.id,
        cpu: Duration::ZERO,
        waiting: Duration::ZERO,
        samples,
        backlog,
        attack_end,
        end: end_instant,
    }
}

/// CPU time (user + system) of the calling thread.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes a timespec for the calling thread's CPU clock.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

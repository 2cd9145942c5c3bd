//! A connection of any protocol: made by a [`Dialer`], used for one exchange at a time
//! ([`Conn::exchange`]), and noticed when the server closes it while idle.
//!
//! One type, four clients behind it: vload's lean HTTP/1.1 client (the default), hyper's
//! HTTP/1.1 client connection (driven inside the task that uses it: no second task, no
//! cross-task wake-up per request), vload's lean HTTP/2 client (the default for HTTP/2) and
//! hyper's (each with its connection on a task of its own, since several streams share it). Each builds its request from the one
//! rule in [`crate::workload`], and every failure maps onto a kind by its type.

use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONNECTION;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use vload_schema::ErrorKind;

use crate::cache::classify as classify_headers;
use crate::failure::{Failure, io_kind, is_client_limit};
use crate::h1::H1Conn;
use crate::h2::H2Conn;
use crate::plan::{Client, Protocol};
use crate::response::Response;
use crate::tls::Io;
use crate::workload::{Request, Wire};

/// What a dialer makes connections with.
pub(crate) struct Dialer {
    pub(crate) addr: SocketAddr,
    pub(crate) protocol: Protocol,
    pub(crate) connect_timeout: Duration,
    /// The request timeout: each connection keeps one timer armed for it.
    pub(crate) timeout: Duration,
    /// TLS for https targets: the connector and the URL's server name (SNI).
    pub(crate) tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

/// A new connection, and how long its TLS handshake took.
pub(crate) struct Connected {
    pub(crate) conn: Conn,
    pub(crate) tls_handshake: Option<Duration>,
    /// How long the TCP connect took.
    pub(crate) tcp_connect: Duration,
}

/// One connection.
pub(crate) struct Conn {
    link: Link,
    /// The request timeout, moved only when an earlier deadline passes (one timer update per
    /// timeout period, not one per request).
    timeout: Pin<Box<tokio::time::Sleep>>,
    /// Requests sent on this connection.
    pub(crate) served: u32,
    /// TLS to several hosts at one address: this task's connections made with another
    /// host's server name (SNI), by that name. Empty otherwise.
    pub(crate) side: Vec<(Box<str>, Conn)>,
    /// hyper's clients: body bytes received by the current exchange, kept outside its
    /// future so that a timed-out or failed response still counts what arrived.
    received: Cell<u64>,
    /// hyper's clients: request body bytes written, counted when the response arrives
    /// (hyper does not say how much of a body went out before a failure).
    written: Cell<u64>,
}

/// hyper's HTTP/1.1 connection state machine; `None` once it has closed.
type Driver = Option<Pin<Box<http1::Connection<TokioIo<Io>, Full<Bytes>>>>>;

/// The client behind a connection.
enum Link {
    /// vload's lean HTTP/1.1 client.
    Lean(Box<H1Conn>),
    /// hyper's HTTP/1.1 client; `driver` is its state machine, `None` once closed.
    Hyper1 {
        sender: http1::SendRequest<Full<Bytes>>,
        driver: Driver,
    },
    /// vload's lean HTTP/2 client: a handle on one of the connection's streams.
    Lean2(H2Conn),
    /// hyper's HTTP/2: its state machine runs on a task of its own.
    Hyper2 {
        sender: http2::SendRequest<Full<Bytes>>,
    },
}

/// Runs hyper's HTTP/2 background work on the worker's own thread.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}

impl Dialer {
    /// Connects, sending `server_name` as SNI instead of the URL's host when given.
    pub(crate) async fn connect(&self, server_name: Option<&str>) -> Result<Connected, Failure> {
        let began = std::time::Instant::now();
        let stream = self.tcp().await?;
        let tcp_connect = began.elapsed();
        // Small requests must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let (io, tls_handshake) = match &self.tls {
            None => (Io::Plain(stream), None),
            Some((connector, name)) => {
                let (tls, took) = self.handshake(connector, name, server_name, stream).await?;
                (Io::Tls(Box::new(tls)), Some(took))
            }
        };
        let link = self.link(io).await?;
        Ok(Connected {
            conn: Conn::new(link, self.timeout),
            tcp_connect,
            tls_handshake,
        })
    }

    async fn tcp(&self) -> Result<TcpStream, Failure> {
        match tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
            Err(_) => Err(self.connect_timed_out()),
            Ok(Err(e)) => Err(self.connect_failed(&e)),
            Ok(Ok(stream)) => Ok(stream),
        }
    }

    /// A TCP connect that did not complete within the connect timeout.
    pub(crate) fn connect_timed_out(&self) -> Failure {
        let (addr, timeout) = (self.addr, self.connect_timeout);
        (
            ErrorKind::ConnectTimeout,
            format!("no connection to {addr} within {timeout:?}"),
        )
    }

    /// A TCP connect that failed with `e`: refused, a limit of this machine, or else.
    pub(crate) fn connect_failed(&self, e: &std::io::Error) -> Failure {
        let addr = self.addr;
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            (
                ErrorKind::ConnectRefused,
                format!("connecting to {addr}: {e}"),
            )
        } else if is_client_limit(e) {
            (
                ErrorKind::ClientLimit,
                format!("connecting to {addr}: {e} (a limit of this machine, not the server)"),
            )
        } else {
            (ErrorKind::Connect, format!("connecting to {addr}: {e}"))
        }
    }

    async fn handshake(
        &self,
        connector: &tokio_rustls::TlsConnector,
        name: &ServerName<'static>,
        other: Option<&str>,
        stream: TcpStream,
    ) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Duration), Failure> {
        let addr = self.addr;
        let name = match other {
            None => name.clone(),
            Some(other) => ServerName::try_from(other.to_owned()).map_err(|_| {
                (
                    ErrorKind::Tls,
                    format!("'{other}' is not a valid TLS server name"),
                )
            })?,
        };
        let start = Instant::now();
        let handshake = connector.connect(name, stream);
        match tokio::time::timeout(self.connect_timeout, handshake).await {
            Err(_) => Err((
                ErrorKind::ConnectTimeout,
                format!(
                    "no TLS handshake with {addr} within {:?}",
                    self.connect_timeout
                ),
            )),
            Ok(Err(e)) => Err((ErrorKind::Tls, format!("TLS handshake with {addr}: {e}"))),
            Ok(Ok(tls)) => Ok((tls, start.elapsed())),
        }
    }

    async fn link(&self, io: Io) -> Result<Link, Failure> {
        let addr = self.addr;
        let failed = |e: hyper::Error| {
            (
                ErrorKind::Connect,
                format!("HTTP handshake with {addr}: {e}"),
            )
        };
        Ok(match self.protocol {
            Protocol::Http1 {
                client: Client::Lean,
            } => Link::Lean(Box::new(H1Conn::new(io))),
            Protocol::Http1 {
                client: Client::Hyper,
            } => {
                let (sender, connection) = http1::Builder::new()
                    .handshake(TokioIo::new(io))
                    .await
                    .map_err(failed)?;
                Link::Hyper1 {
                    sender,
                    driver: Some(Box::pin(connection)),
                }
            }
            Protocol::Http2 {
                client: Client::Lean,
                ..
            } => {
                let handshake = H2Conn::handshake(io, addr);
                match tokio::time::timeout(self.connect_timeout, handshake).await {
                    Err(_) => {
                        return Err((
                            ErrorKind::ConnectTimeout,
                            format!(
                                "no HTTP/2 SETTINGS from {addr} within {:?}",
                                self.connect_timeout
                            ),
                        ));
                    }
                    Ok(conn) => Link::Lean2(conn?),
                }
            }
            Protocol::Http2 {
                client: Client::Hyper,
                ..
            } => {
                let (sender, connection) = http2::Builder::new(LocalExec)
                    .handshake(TokioIo::new(io))
                    .await
                    .map_err(failed)?;
                tokio::task::spawn_local(async move {
                    // Errors surface on the streams that see them.
                    let _ = connection.await;
                });
                Link::Hyper2 { sender }
            }
        })
    }
}

impl Conn {
    fn new(link: Link, timeout: Duration) -> Conn {
        Conn {
            link,
            timeout: Box::pin(tokio::time::sleep(timeout)),
            served: 0,
            side: Vec::new(),
            received: Cell::new(0),
            written: Cell::new(0),
        }
    }

    /// False once the server closed the connection or an exchange broke it.
    pub(crate) fn is_open(&self) -> bool {
        match &self.link {
            Link::Lean(c) => !c.is_closed(),
            Link::Hyper1 { sender, driver } => driver.is_some() && !sender.is_closed(),
            Link::Lean2(c) => c.is_open(),
            Link::Hyper2 { sender } => !sender.is_closed(),
        }
    }

    /// True for HTTP/2, whose streams fail one by one without the connection.
    pub(crate) fn is_multiplexed(&self) -> bool {
        matches!(self.link, Link::Lean2(_) | Link::Hyper2 { .. })
    }

    /// Another stream on the same HTTP/2 connection; `None` for HTTP/1.1.
    pub(crate) fn stream(&self, timeout: Duration) -> Option<Conn> {
        let link = match &self.link {
            Link::Lean2(c) => Link::Lean2(c.stream()),
            Link::Hyper2 { sender } => Link::Hyper2 {
                sender: sender.clone(),
            },
            _ => return None,
        };
        Some(Conn::new(link, timeout))
    }

    /// While idle: true once the connection has closed (the server's idle timeout).
    pub(crate) fn poll_closed(&mut self, cx: &mut Context<'_>) -> bool {
        match &mut self.link {
            Link::Lean(c) => {
                c.poll_idle(cx);
            }
            Link::Hyper1 { driver, .. } => {
                poll_driver(driver, cx);
            }
            Link::Lean2(c) => c.poll_closed(cx),
            Link::Hyper2 { .. } => {}
        }
        !self.is_open()
    }

    /// Body bytes received since the last call, whether the responses completed or not.
    pub(crate) fn take_received(&mut self) -> u64 {
        match &mut self.link {
            Link::Lean(c) => c.take_received(),
            Link::Lean2(c) => c.take_received(),
            _ => self.received.take(),
        }
    }

    /// Bytes the server sent unasked after a complete response since the last call (vload's
    /// HTTP/1.1 client; hyper's closes such a connection without saying why).
    pub(crate) fn take_stray(&mut self) -> usize {
        match &mut self.link {
            Link::Lean(c) => c.take_stray(),
            _ => 0,
        }
    }

    /// Request body bytes that reached the connection since the last call.
    pub(crate) fn take_written(&mut self) -> u64 {
        match &mut self.link {
            Link::Lean(c) => c.take_written(),
            Link::Lean2(c) => c.take_written(),
            _ => self.written.take(),
        }
    }

    /// Sends one request and reads the whole response; `None` when `deadline` passed first.
    /// The lean HTTP/1.1 client writes `wire` when it is given (a request prepared as
    /// bytes), the others build theirs from `request`.
    pub(crate) async fn exchange(
        &mut self,
        request: Request<'_>,
        wire: Option<&Wire>,
        deadline: Instant,
    ) -> Option<Result<Response, Failure>> {
        let Conn {
            link,
            timeout,
            received,
            written,
            ..
        } = self;
        let counts = (&*received, &*written);
        match link {
            Link::Lean(conn) => {
                let own;
                let wire = match wire {
                    Some(wire) => wire,
                    None => {
                        own = Wire {
                            bytes: request.lean_bytes(),
                            head: request.is_head(),
                            body: request.body().len() as u64,
                        };
                        &own
                    }
                };
                let response = conn.exchange(&wire.bytes, wire.head, wire.body);
                until(response, timeout, deadline, |_| false).await
            }
            Link::Hyper1 { sender, driver } => {
                // Boxed, as hyper's own futures are large and hyper allocates per request
                // anyway: the lean client's connections do not pay for their size.
                let response = Box::pin(send(Sender::H1(sender), request.hyper(false), counts));
                // The driver writes the request and reads the response; the response future
                // then completes in the same poll.
                until(response, timeout, deadline, |cx| poll_driver(driver, cx)).await
            }
            Link::Lean2(conn) => until(conn.exchange(request), timeout, deadline, |_| false).await,
            Link::Hyper2 { sender } => {
                let response = Box::pin(send(Sender::H2(sender), request.hyper(true), counts));
                until(response, timeout, deadline, |_| false).await
            }
        }
    }
}

/// Polls hyper's HTTP/1.1 state machine; true when it made progress or closed.
fn poll_driver(driver: &mut Driver, cx: &mut Context<'_>) -> bool {
    if let Some(d) = driver
        && d.as_mut().poll(cx).is_ready()
    {
        // Dropping the state machine fails any request still waiting on it.
        *driver = None;
    }
    true
}

/// Polls `future` until it finishes or `deadline` passes (`None`), calling `drive` between
/// polls for a state machine the future needs (hyper's HTTP/1.1 connection); `drive`
/// returns true when the future should be polled again.
///
/// A future of its own rather than an `async fn`: an `async fn` keeps its argument and the
/// pinned copy both in the connection task's state, and every connection pays for that.
fn until<F: Future, D: FnMut(&mut Context<'_>) -> bool>(
    future: F,
    timer: &mut Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
    drive: D,
) -> Until<'_, F, D> {
    Until {
        future,
        timer,
        deadline,
        drive,
    }
}

pin_project_lite::pin_project! {
    /// [`until`]'s future.
    struct Until<'t, F, D> {
        #[pin]
        future: F,
        timer: &'t mut Pin<Box<tokio::time::Sleep>>,
        deadline: Instant,
        drive: D,
    }
}

impl<F: Future, D: FnMut(&mut Context<'_>) -> bool> Future for Until<'_, F, D> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(output) = this.future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        if (this.drive)(cx)
            && let Poll::Ready(output) = this.future.as_mut().poll(cx)
        {
            return Poll::Ready(Some(output));
        }
        if timed_out(this.timer.as_mut(), *this.deadline, cx) {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

/// True once `deadline` has passed. The connection's one timer is re-armed when it would
/// fire after `deadline` (a request that waited in the queue before this connection was
/// made is due to time out before the timer the connection started with), and when it
/// fired for an earlier deadline; a request that follows the last in time, the usual case,
/// costs no re-arming until then.
fn timed_out(
    mut timer: Pin<&mut tokio::time::Sleep>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let at = tokio::time::Instant::from_std(deadline);
    if timer.deadline() > at {
        timer.as_mut().reset(at);
    }
    if timer.as_mut().poll(cx).is_pending() {
        return false;
    }
    if Instant::now() >= deadline {
        return true;
    }
    timer.as_mut().reset(at);
    timer.poll(cx).is_ready()
}

/// hyper's two senders, for [`send`].
enum Sender<'a> {
    H1(&'a mut http1::SendRequest<Full<Bytes>>),
    H2(&'a mut http2::SendRequest<Full<Bytes>>),
}

/// One request through hyper: the response head, then the body counted as it arrives.
async fn send(
    sender: Sender<'_>,
    request: http::Request<Full<Bytes>>,
    (received, written): (&Cell<u64>, &Cell<u64>),
) -> Result<Response, Failure> {
    let body = hyper::body::Body::size_hint(request.body())
        .exact()
        .unwrap_or(0);
    let sent = match sender {
        Sender::H1(s) => match s.ready().await {
            Ok(()) => s.send_request(request).await,
            Err(e) => Err(e),
        },
        Sender::H2(s) => match s.ready().await {
            Ok(()) => s.send_request(request).await,
            Err(e) => Err(e),
        },
    };
    let response = sent.map_err(|e| classify_error(&e, false))?;
    written.set(written.get() + body);
    let status = response.status().as_u16();
    let cache = classify_headers(response.headers());
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
    Ok(Response {
        status,
        body_bytes,
        cache,
        close,
    })
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
    let kind = if let Some(kind) = find_source::<h2::Error>(error).and_then(h2_kind) {
        kind
    } else if let Some(io) = find_source::<std::io::Error>(error) {
        io_kind(io, in_body)
    } else if error.is_parse() || error.is_parse_status() || error.is_parse_too_large() {
        ErrorKind::Protocol
    } else if error.is_timeout() {
        ErrorKind::RequestTimeout
    } else if in_body {
        ErrorKind::Body
    } else if error.is_incomplete_message() || error.is_canceled() || error.is_closed() {
        ErrorKind::Reset
    } else {
        ErrorKind::Other
    };
    let mut message = error.to_string();
    if let Some(source) = std::error::Error::source(error) {
        message = format!("{message}: {source}");
    }
    (kind, message)
}

//! hyper's client connections, HTTP/1.1 and HTTP/2, as links: for comparison with vload's
//! own clients (`--http1-client hyper`, `--http2-client hyper`). Each builds its request from
//! the one rule in [`crate::workload`], and every failure maps onto a kind by its type.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::CONNECTION;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use vload_schema::ErrorKind;

use super::dial::Dial;
use super::link::{Counts, Link, Opened, Refused};
use crate::cache::classify as classify_headers;
use crate::failure::{Failure, io_kind};
use crate::response::Response;
use crate::workload::{Request, Wire};

/// hyper's HTTP/1.1 client connection, driven inside the task that uses it (no second task,
/// no cross-task wake-up per request).
pub(crate) struct Hyper1 {
    sender: http1::SendRequest<Full<Bytes>>,
    /// Its state machine; `None` once it has closed.
    driver: Option<Driver>,
    /// Body bytes received and request body bytes written, kept outside the exchange's
    /// future so that a timed-out or failed response still counts what arrived (hyper does
    /// not say how much of a body went out before a failure: a request's counts when its
    /// response arrives).
    counts: Tally,
}

/// Body bytes received and written, and when the last response's head came if its body
/// followed (see [`Counts`]).
type Tally = (Cell<u64>, Cell<u64>, Cell<Option<std::time::Instant>>);

/// hyper's HTTP/1.1 state machine.
type Driver = Pin<Box<http1::Connection<TokioIo<crate::tls::Io>, Full<Bytes>>>>;

/// hyper's HTTP/2 client: its state machine runs on a task of its own, since several
/// streams share it.
pub(crate) struct Hyper2 {
    sender: http2::SendRequest<Full<Bytes>>,
    counts: Tally,
}

/// Runs hyper's HTTP/2 background work on the worker's own thread.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}

fn handshake_failed(dial: &Dial, e: &hyper::Error) -> Failure {
    let addr = dial.addr;
    (
        ErrorKind::Connect,
        format!("HTTP handshake with {addr}: {e}"),
    )
}

impl Link for Hyper1 {
    const MULTIPLEXED: bool = false;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let (io, connect, handshake) = dial.transport(server_name).await?;
        let (sender, connection) = http1::Builder::new()
            .handshake(TokioIo::new(io))
            .await
            .map_err(|e| Refused {
                failure: handshake_failed(dial, &e),
                transport: Some((connect, handshake)),
            })?;
        let link = Hyper1 {
            sender,
            driver: Some(Box::pin(connection)),
            counts: Default::default(),
        };
        Ok(Opened {
            link,
            connect,
            handshake,
        })
    }

    fn is_open(&self) -> bool {
        self.driver.is_some() && !self.sender.is_closed()
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) {
        poll_driver(&mut self.driver, cx);
    }

    fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        _wire: Option<&'a Wire>,
    ) -> impl Future<Output = Result<Response, Failure>> + 'a {
        let Hyper1 {
            sender,
            driver,
            counts,
        } = self;
        // Boxed, as hyper's own futures are large and hyper allocates per request anyway.
        let mut response = Box::pin(send(Sender::H1(sender), request.hyper(false), counts));
        // The driver writes the request and reads the response; the response future then
        // completes in the same poll.
        std::future::poll_fn(move |cx| {
            if let Poll::Ready(output) = response.as_mut().poll(cx) {
                return Poll::Ready(output);
            }
            poll_driver(driver, cx);
            response.as_mut().poll(cx)
        })
    }

    fn take_counts(&mut self) -> Counts {
        Counts {
            received: self.counts.0.take(),
            written: self.counts.1.take(),
            stray: 0,
            first_byte: self.counts.2.take(),
            wire: 0,
        }
    }
}

impl Link for Hyper2 {
    const MULTIPLEXED: bool = true;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let (io, connect, handshake) = dial.transport(server_name).await?;
        let (sender, connection) = http2::Builder::new(LocalExec)
            .handshake(TokioIo::new(io))
            .await
            .map_err(|e| Refused {
                failure: handshake_failed(dial, &e),
                transport: Some((connect, handshake)),
            })?;
        tokio::task::spawn_local(async move {
            // Errors surface on the streams that see them.
            let _ = connection.await;
        });
        let link = Hyper2 {
            sender,
            counts: Default::default(),
        };
        Ok(Opened {
            link,
            connect,
            handshake,
        })
    }

    fn stream(&self) -> Option<Self> {
        Some(Hyper2 {
            sender: self.sender.clone(),
            counts: Default::default(),
        })
    }

    fn is_open(&self) -> bool {
        !self.sender.is_closed()
    }

    fn poll_idle(&mut self, _cx: &mut Context<'_>) {}

    fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        _wire: Option<&'a Wire>,
    ) -> impl Future<Output = Result<Response, Failure>> + 'a {
        let Hyper2 { sender, counts } = self;
        Box::pin(send(Sender::H2(sender), request.hyper(true), counts))
    }

    fn take_counts(&mut self) -> Counts {
        Counts {
            received: self.counts.0.take(),
            written: self.counts.1.take(),
            stray: 0,
            first_byte: self.counts.2.take(),
            wire: 0,
        }
    }
}

/// Polls hyper's HTTP/1.1 state machine; drops it once it has closed.
fn poll_driver(driver: &mut Option<Driver>, cx: &mut Context<'_>) {
    if let Some(d) = driver
        && d.as_mut().poll(cx).is_ready()
    {
        // Dropping the state machine fails any request still waiting on it.
        *driver = None;
    }
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
    (received, written, first_byte): &Tally,
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
    let origin = response
        .headers()
        .get_all(&SERVER_TIMING)
        .iter()
        .find_map(|v| crate::timing::origin_ns(v.as_bytes()));
    let mut body = response.into_body();
    let whole = hyper::body::Body::is_end_stream(&body);
    first_byte.set((!whole).then(std::time::Instant::now));
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
        origin,
    })
}

static SERVER_TIMING: http::HeaderName = http::HeaderName::from_static("server-timing");

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

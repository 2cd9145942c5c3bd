//! [`H3Conn`]: one stream's handle on an HTTP/3 connection, as a [`Link`], and 0-RTT.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf as _, Bytes};
use http::Method;
use tokio::sync::watch;
use vload_schema::{ErrorKind, Handshakes};

use super::errors;
use super::gate::{Gate, Gated};
use crate::cache::classify as classify_headers;
use crate::failure::Failure;
use crate::protocol::quic::Made;
use crate::protocol::{Counts, Dial, Link, Opened, Refused};
use crate::response::Response;
use crate::workload::{Request, Wire};

type Sender = h3::client::SendRequest<Gated<h3_quinn::OpenStreams>, Bytes>;

/// Where a connection's early data stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Early {
    /// No early data: the handshake was complete before the first request.
    None,
    /// Sent early; the handshake has not said yet whether the server took it.
    Pending,
    /// The server took the early data.
    Accepted,
    /// The server refused it: HTTP/3 started again over the completed handshake, and the
    /// requests sent early are sent again.
    Refused,
}

/// What the handles of one connection share.
struct Shared {
    conn: quinn::Connection,
    /// h3's request sender, replaced when refused early data made HTTP/3 start again.
    sender: RefCell<Sender>,
    /// Set when the connection closed or the server sent GOAWAY: no new request.
    gone: Cell<bool>,
    /// The worker's count of handshake kinds and early requests.
    tally: Rc<Cell<Handshakes>>,
    /// The first HTTP/3's driver, ended when the server refuses the early data.
    driver: Cell<Option<tokio::task::AbortHandle>>,
}

impl Shared {
    fn count(&self, change: impl FnOnce(&mut Handshakes)) {
        let mut h = self.tally.get();
        change(&mut h);
        self.tally.set(h);
    }
}

/// One handle on an HTTP/3 connection: sends one request at a time on a stream of its own.
pub(crate) struct H3Conn {
    shared: Rc<Shared>,
    early: watch::Receiver<Early>,
    /// Resolves when the connection closes, polled while the lane is idle.
    closed: Option<Pin<Box<dyn Future<Output = ()>>>>,
    /// Body bytes received and written, and when the last response's head came.
    received: Cell<u64>,
    written: Cell<u64>,
    first_byte: Cell<Option<Instant>>,
}

impl H3Conn {
    fn handle(shared: Rc<Shared>, early: watch::Receiver<Early>) -> H3Conn {
        H3Conn {
            shared,
            early,
            closed: None,
            received: Cell::new(0),
            written: Cell::new(0),
            first_byte: Cell::new(None),
        }
    }
}

/// HTTP/3 over `conn` through `gate`: h3's SETTINGS out, its driver (the control stream)
/// on a task of its own, which marks the connection gone once QUIC's connection has closed.
async fn start(
    conn: &quinn::Connection,
    gate: Rc<Gate>,
    gone: Option<Rc<Shared>>,
) -> Result<(Sender, tokio::task::AbortHandle), Failure> {
    let addr = conn.remote_address();
    let gated = Gated {
        inner: h3_quinn::Connection::new(conn.clone()),
        gate,
    };
    let (mut driver, sender) = h3::client::new(gated)
        .await
        .map_err(|e| (ErrorKind::Protocol, format!("HTTP/3 with {addr}: {e}")))?;
    let task = tokio::task::spawn_local(async move {
        // Errors surface on the streams that see them.
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        if let Some(shared) = gone
            && shared.conn.close_reason().is_some()
        {
            shared.gone.set(true);
        }
    });
    Ok((sender, task.abort_handle()))
}

impl Link for H3Conn {
    const MULTIPLEXED: bool = true;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let made = dial
            .quic()?
            .handshake(dial.addr, server_name, dial.connect_timeout)
            .await?;
        let (conn, took, accepted) = match made {
            Made::Done { conn, took, full } => (conn, took, Err(full)),
            Made::Early {
                conn,
                took,
                accepted,
            } => (conn, took, Ok(accepted)),
        };
        // One handshake makes the connection, TLS 1.3 inside it: recorded as its connect
        // time (the report says "QUIC connect"), with no second TLS step. With early data,
        // the connection is usable at once: its connect time is that moment.
        let gate = match accepted {
            Err(_) => Gate::open(),
            Ok(_) => Rc::new(Gate::default()),
        };
        let (sender, driver) =
            start(&conn, gate.clone(), None)
                .await
                .map_err(|failure| Refused {
                    failure,
                    transport: Some((took, None)),
                })?;
        let shared = Rc::new(Shared {
            conn,
            sender: RefCell::new(sender),
            gone: Cell::new(false),
            tally: dial.handshakes.clone(),
            driver: Cell::new(Some(driver)),
        });
        let early = match accepted {
            Err(full) => {
                shared.count(|h| *if full { &mut h.full } else { &mut h.resumed } += 1);
                watch::channel(Early::None).1
            }
            Ok(accepted) => {
                let (tell, early) = watch::channel(Early::Pending);
                tokio::task::spawn_local(settle(shared.clone(), gate, accepted, tell));
                early
            }
        };
        Ok(Opened {
            link: H3Conn::handle(shared, early),
            connect: took,
            handshake: None,
        })
    }

    fn stream(&self) -> Option<Self> {
        Some(H3Conn::handle(self.shared.clone(), self.early.clone()))
    }

    fn is_open(&self) -> bool {
        !self.shared.gone.get() && self.shared.conn.close_reason().is_none()
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) {
        let closed = self.closed.get_or_insert_with(|| {
            let conn = self.shared.conn.clone();
            Box::pin(async move {
                conn.closed().await;
            })
        });
        if let Poll::Ready(()) = closed.as_mut().poll(cx) {
            self.shared.gone.set(true);
        }
    }

    fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        _wire: Option<&'a Wire>,
    ) -> impl Future<Output = Result<Response, Failure>> + 'a {
        // Boxed: h3's futures are large, and h3 allocates a request anyway.
        Box::pin(exchange(self, request))
    }

    fn take_counts(&mut self) -> Counts {
        Counts {
            received: self.received.take(),
            written: self.written.take(),
            stray: 0,
            first_byte: self.first_byte.take(),
            wire: 0,
        }
    }
}

/// Waits for the server's word on the early data: counted, and when refused, HTTP/3 is
/// started again over the completed handshake before the handles hear of it.
async fn settle(
    shared: Rc<Shared>,
    gate: Rc<Gate>,
    accepted: quinn::ZeroRttAccepted,
    tell: watch::Sender<Early>,
) {
    let taken = accepted.await;
    gate.said(taken);
    if taken {
        shared.count(|h| h.early_accepted += 1);
        let _ = tell.send(Early::Accepted);
        return;
    }
    if let Some(first) = shared.driver.take() {
        first.abort();
    }
    shared.count(|h| h.early_rejected += 1);
    // Mostly a server that could not resume (restarted, or its ticket keys rotated): a full
    // handshake, whose certificate was checked on this thread. Claimed here, or the next
    // resumed handshake would count as full. (A server that resumed and still refused checked
    // none: the claim then finds nothing, unless another handshake of this worker has a
    // certificate counted and not yet claimed at this very moment.)
    let _ = crate::tls::take_full_handshake();
    match start(&shared.conn, Gate::open(), Some(shared.clone())).await {
        Ok((sender, driver)) => {
            *shared.sender.borrow_mut() = sender;
            shared.driver.set(Some(driver));
        }
        Err(_) => shared.gone.set(true),
    }
    let _ = tell.send(Early::Refused);
}

/// Methods that may go out as early data (RFC 8470: replayable ones only).
fn safe(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// One request: sent early when the connection's handshake is still going and the method
/// is safe (an unsafe one waits for the handshake), and sent again if the server refused
/// the early data.
async fn exchange(link: &mut H3Conn, request: Request<'_>) -> Result<Response, Failure> {
    let mut early = *link.early.borrow() == Early::Pending;
    if early && !safe(request.method()) {
        let _ = link.early.wait_for(|e| *e != Early::Pending).await;
        early = false;
    }
    let result = once(link, request).await;
    if !early {
        return result;
    }
    link.shared.count(|h| h.early_requests += 1);
    if result.is_ok() {
        return result;
    }
    let settled = link
        .early
        .wait_for(|e| *e != Early::Pending)
        .await
        .ok()
        .map(|e| *e);
    if settled != Some(Early::Refused) || !link.is_open() {
        return result;
    }
    link.shared.count(|h| h.early_retried += 1);
    once(link, request).await
}

static SERVER_TIMING: http::HeaderName = http::HeaderName::from_static("server-timing");

/// One request on a new stream: the head and body out, the response's head, then its body
/// counted as it arrives.
async fn once(link: &H3Conn, request: Request<'_>) -> Result<Response, Failure> {
    let shared = &link.shared;
    let conn = &shared.conn;
    let addr = conn.remote_address();
    let fail = |e: &h3::error::StreamError, in_body: bool| {
        let failure = errors::stream(addr, e, conn.close_reason(), in_body);
        if matches!(failure.0, ErrorKind::Goaway) || conn.close_reason().is_some() {
            shared.gone.set(true);
        }
        failure
    };
    let body = request.body();
    let mut sender = shared.sender.borrow().clone();
    let mut stream = sender
        .send_request(request.head())
        .await
        .map_err(|e| fail(&e, false))?;
    if !body.is_empty() {
        let len = body.len() as u64;
        stream.send_data(body).await.map_err(|e| fail(&e, false))?;
        link.written.set(link.written.get() + len);
    }
    stream.finish().await.map_err(|e| fail(&e, false))?;
    let response = stream.recv_response().await.map_err(|e| fail(&e, false))?;
    link.first_byte.set(Some(Instant::now()));
    let status = response.status().as_u16();
    let cache = classify_headers(response.headers());
    let origin = response
        .headers()
        .get_all(&SERVER_TIMING)
        .iter()
        .find_map(|v| crate::timing::origin_ns(v.as_bytes()));
    let mut body_bytes = 0u64;
    while let Some(chunk) = stream.recv_data().await.map_err(|e| fail(&e, true))? {
        let n = chunk.remaining() as u64;
        body_bytes += n;
        link.received.set(link.received.get() + n);
    }
    Ok(Response {
        status,
        body_bytes,
        cache,
        close: false,
        origin,
    })
}

//! [`H3Conn`]: one stream's handle on an HTTP/3 connection, as a [`Link`], and 0-RTT.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::Method;
use quinn::{SendStream, VarInt};
use tokio::sync::watch;
use vload_schema::{ErrorKind, Handshakes};

use super::control;
use super::errors::{self, StreamFail};
use super::frames::{self, ReadFail, Reader};
use crate::failure::Failure;
use crate::h2::HeadFields;
use crate::protocol::quic::Made;
use crate::protocol::{Counts, Dial, Link, Opened, Refused};
use crate::response::Response;
use crate::workload::{Request, Wire};

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
    /// vload's control stream, kept open (its end is a connection error); opened again when
    /// refused early data made the server forget it.
    control: RefCell<Option<SendStream>>,
    /// Set when the connection closed or the server sent GOAWAY: no new request.
    gone: Rc<Cell<bool>>,
    /// The worker's count of handshake kinds and early requests.
    tally: Rc<Cell<Handshakes>>,
    /// The task reading the server's streams, ended with the last handle.
    driver: tokio::task::AbortHandle,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.driver.abort();
    }
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
    /// Bytes read off the request streams: frame headers, fields and bodies (not QUIC's
    /// packets, nor the control stream).
    wire: Cell<u64>,
    first_byte: Cell<Option<Instant>>,
    /// The request's field section and frames, and the response head's fields: buffers
    /// kept from one request to the next.
    block: Vec<u8>,
    out: Vec<u8>,
    head: HeadFields,
    scratch: Vec<u8>,
}

impl H3Conn {
    fn handle(shared: Rc<Shared>, early: watch::Receiver<Early>) -> H3Conn {
        H3Conn {
            shared,
            early,
            closed: None,
            received: Cell::new(0),
            written: Cell::new(0),
            wire: Cell::new(0),
            first_byte: Cell::new(None),
            block: Vec::new(),
            out: Vec::new(),
            head: HeadFields::default(),
            scratch: Vec::new(),
        }
    }
}

/// HTTP/3 over `conn`: vload's control stream out, and a task reading the server's
/// streams, which marks the connection gone on GOAWAY and once QUIC's connection closed.
async fn start(conn: &quinn::Connection, tally: &Rc<Cell<Handshakes>>) -> Result<Shared, Failure> {
    let addr = conn.remote_address();
    let control = control::open(conn)
        .await
        .map_err(|e| (ErrorKind::Protocol, format!("HTTP/3 with {addr}: {e}")))?;
    let gone = Rc::new(Cell::new(false));
    let driver = tokio::task::spawn_local(control::serve(conn.clone(), gone.clone()));
    Ok(Shared {
        conn: conn.clone(),
        control: RefCell::new(Some(control)),
        gone,
        tally: tally.clone(),
        driver: driver.abort_handle(),
    })
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
        let shared = start(&conn, &dial.handshakes)
            .await
            .map(Rc::new)
            .map_err(|failure| Refused {
                failure,
                transport: Some((took, None)),
            })?;
        let early = match accepted {
            Err(full) => {
                shared.count(|h| *if full { &mut h.full } else { &mut h.resumed } += 1);
                watch::channel(Early::None).1
            }
            Ok(accepted) => {
                let (tell, early) = watch::channel(Early::Pending);
                tokio::task::spawn_local(settle(shared.clone(), accepted, tell));
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
        exchange(self, request)
    }

    fn take_counts(&mut self) -> Counts {
        Counts {
            received: self.received.take(),
            written: self.written.take(),
            stray: 0,
            first_byte: self.first_byte.take(),
            wire: self.wire.take(),
        }
    }
}

/// Waits for the server's word on the early data: counted, and when refused, vload's
/// control stream is opened again (the server forgot every stream sent early) before the
/// handles hear of it.
async fn settle(shared: Rc<Shared>, accepted: quinn::ZeroRttAccepted, tell: watch::Sender<Early>) {
    if accepted.await {
        shared.count(|h| h.early_accepted += 1);
        let _ = tell.send(Early::Accepted);
        return;
    }
    shared.count(|h| h.early_rejected += 1);
    // Mostly a server that could not resume (restarted, or its ticket keys rotated): a full
    // handshake, whose certificate was checked on this thread. Claimed here, or the next
    // resumed handshake would count as full. (A server that resumed and still refused checked
    // none: the claim then finds nothing, unless another handshake of this worker has a
    // certificate counted and not yet claimed at this very moment.)
    let _ = crate::tls::take_full_handshake();
    match control::open(&shared.conn).await {
        Ok(control) => *shared.control.borrow_mut() = Some(control),
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
    if let Ok(response) = &result {
        if response.status == 425 {
            link.shared.count(|h| h.early_too_early += 1);
        }
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

/// One request on a new stream: the head and body out, the response's head, then its body
/// counted as it arrives.
async fn once(link: &mut H3Conn, request: Request<'_>) -> Result<Response, Failure> {
    let shared = link.shared.clone();
    let conn = &shared.conn;
    let fail = |e: StreamFail, in_body: bool| {
        if let StreamFail::Read(ReadFail::Protocol(code, what)) = &e {
            conn.close(
                VarInt::from_u64(*code).unwrap_or(VarInt::MAX),
                what.as_bytes(),
            );
        }
        let failure = errors::stream(conn.remote_address(), &e, conn.close_reason(), in_body);
        if matches!(failure.0, ErrorKind::Goaway) || conn.close_reason().is_some() {
            shared.gone.set(true);
        }
        failure
    };
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| fail(StreamFail::Open(e), false))?;
    let body = frames::encode_request(&request, &mut link.block, &mut link.out);
    send.write_all(&link.out)
        .await
        .map_err(|e| fail(StreamFail::Write(e), false))?;
    if !body.is_empty() {
        let len = body.len() as u64;
        send.write_chunk(body)
            .await
            .map_err(|e| fail(StreamFail::Write(e), false))?;
        link.written.set(link.written.get() + len);
    }
    // Only a stream already ended says no, and its reading says why.
    let _ = send.finish();
    let mut reader = Reader::counting(&mut recv, &link.wire);
    reader
        .head(&mut link.head, &mut link.scratch)
        .await
        .map_err(|e| fail(StreamFail::Read(e), false))?;
    link.first_byte.set(Some(Instant::now()));
    let status = link.head.status.unwrap_or_default();
    let cache = link.head.cache();
    let origin = link.head.origin;
    let mut body_bytes = 0u64;
    let received = &link.received;
    reader
        .body(|n| {
            body_bytes += n;
            received.set(received.get() + n);
        })
        .await
        .map_err(|e| fail(StreamFail::Read(e), true))?;
    Ok(Response {
        status,
        body_bytes,
        cache,
        close: false,
        origin,
    })
}

//! [`H3Conn`]: one stream's handle on an HTTP/3 connection, as a [`Link`].

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf as _, Bytes};
use vload_schema::ErrorKind;

use super::errors;
use crate::cache::classify as classify_headers;
use crate::failure::Failure;
use crate::protocol::{Counts, Dial, Link, Opened, Refused};
use crate::response::Response;
use crate::workload::{Request, Wire};

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One handle on an HTTP/3 connection: sends one request at a time on a stream of its own.
pub(crate) struct H3Conn {
    sender: Sender,
    conn: quinn::Connection,
    /// Set when h3's driver saw the connection end (a GOAWAY, a close): no new request.
    gone: Rc<Cell<bool>>,
    /// Resolves when the connection closes, polled while the lane is idle.
    closed: Option<Pin<Box<dyn Future<Output = ()>>>>,
    /// Body bytes received and written, and when the last response's head came.
    received: Cell<u64>,
    written: Cell<u64>,
    first_byte: Cell<Option<Instant>>,
}

impl H3Conn {
    fn handle(sender: Sender, conn: quinn::Connection, gone: Rc<Cell<bool>>) -> H3Conn {
        H3Conn {
            sender,
            conn,
            gone,
            closed: None,
            received: Cell::new(0),
            written: Cell::new(0),
            first_byte: Cell::new(None),
        }
    }
}

impl Link for H3Conn {
    const MULTIPLEXED: bool = true;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let (conn, handshake) = dial
            .quic()?
            .handshake(dial.addr, server_name, dial.connect_timeout)
            .await?;
        let addr = dial.addr;
        let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .map_err(|e| Refused {
                failure: (ErrorKind::Protocol, format!("HTTP/3 with {addr}: {e}")),
                transport: Some((handshake, None)),
            })?;
        let gone = Rc::new(Cell::new(false));
        tokio::task::spawn_local({
            let gone = gone.clone();
            async move {
                // Errors surface on the streams that see them; the connection is over.
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
                gone.set(true);
            }
        });
        // One handshake makes the connection, TLS 1.3 inside it: recorded as its connect
        // time (the report says "QUIC handshake"), with no second TLS step.
        Ok(Opened {
            link: H3Conn::handle(sender, conn, gone),
            connect: handshake,
            handshake: None,
        })
    }

    fn stream(&self) -> Option<Self> {
        Some(H3Conn::handle(
            self.sender.clone(),
            self.conn.clone(),
            self.gone.clone(),
        ))
    }

    fn is_open(&self) -> bool {
        !self.gone.get() && self.conn.close_reason().is_none()
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) {
        let closed = self.closed.get_or_insert_with(|| {
            let conn = self.conn.clone();
            Box::pin(async move {
                conn.closed().await;
            })
        });
        if let Poll::Ready(()) = closed.as_mut().poll(cx) {
            self.gone.set(true);
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

static SERVER_TIMING: http::HeaderName = http::HeaderName::from_static("server-timing");

/// One request on a new stream: the head and body out, the response's head, then its body
/// counted as it arrives.
async fn exchange(link: &mut H3Conn, request: Request<'_>) -> Result<Response, Failure> {
    let H3Conn {
        sender,
        conn,
        gone,
        received,
        written,
        first_byte,
        ..
    } = link;
    let addr = conn.remote_address();
    let fail = |e: &h3::error::StreamError, in_body: bool| {
        let failure = errors::stream(addr, e, conn.close_reason(), in_body);
        if matches!(failure.0, ErrorKind::Goaway) || conn.close_reason().is_some() {
            gone.set(true);
        }
        failure
    };
    let body = request.body();
    let mut stream = sender
        .send_request(request.head())
        .await
        .map_err(|e| fail(&e, false))?;
    if !body.is_empty() {
        let len = body.len() as u64;
        stream.send_data(body).await.map_err(|e| fail(&e, false))?;
        written.set(written.get() + len);
    }
    stream.finish().await.map_err(|e| fail(&e, false))?;
    let response = stream.recv_response().await.map_err(|e| fail(&e, false))?;
    first_byte.set(Some(Instant::now()));
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
        received.set(received.get() + n);
    }
    Ok(Response {
        status,
        body_bytes,
        cache,
        close: false,
        origin,
    })
}

//! The connection on tokio: [`H2Conn`], one stream's handle, and the driver task that owns the
//! socket.

use std::cell::RefCell;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use vload_schema::ErrorKind;

use super::frames::*;
use super::state::{Shared, Stream};
use crate::failure::{Failure, io_kind};
use crate::protocol::{Counts, Dial, Link, Opened, Refused};
use crate::response::Response;
use crate::tls::Io;
use crate::workload::{Request, Wire};

/// One stream's handle on a connection: sends one request at a time.
pub(crate) struct H2Conn {
    shared: Rc<RefCell<Shared>>,
    slot: usize,
}

impl H2Conn {
    /// Speaks HTTP/2 on `io`: the preface and vload's SETTINGS, then the server's SETTINGS,
    /// which must come first (anything else is not an HTTP/2 server). Starts the driver.
    async fn handshake(mut io: Io, addr: std::net::SocketAddr) -> Result<H2Conn, Failure> {
        let broke = |e: std::io::Error| {
            (
                ErrorKind::Connect,
                format!("HTTP/2 handshake with {addr}: {e}"),
            )
        };
        let mut hello = PREFACE.to_vec();
        // ENABLE_PUSH 0, INITIAL_WINDOW_SIZE; then the connection's window to the same.
        frame_head(&mut hello, 12, SETTINGS, 0, 0);
        hello.extend_from_slice(&[0, 2, 0, 0, 0, 0, 0, 4]);
        hello.extend_from_slice(&WINDOW.to_be_bytes());
        frame_head(&mut hello, 4, WINDOW_UPDATE, 0, 0);
        hello.extend_from_slice(&(WINDOW - 65_535).to_be_bytes());
        io.write_all(&hello).await.map_err(broke)?;
        io.flush().await.map_err(broke)?;

        let mut buf = vec![0u8; BUFFER];
        let mut len = 0;
        let frame_len = loop {
            if len >= 9 {
                let frame_len = u32_at(&[0, buf[0], buf[1], buf[2]]) as usize;
                if buf[3] != SETTINGS || buf[4] & ACK != 0 || frame_len > MAX_FRAME {
                    let shown = String::from_utf8_lossy(&buf[..len.min(24)])
                        .escape_debug()
                        .to_string();
                    return Err((
                        ErrorKind::Protocol,
                        format!(
                            "{addr} did not answer the HTTP/2 preface with SETTINGS but '{shown}': not an HTTP/2 server (h2c needs prior-knowledge support; https needs ALPN h2)"
                        ),
                    ));
                }
                if len >= 9 + frame_len {
                    break frame_len;
                }
                if buf.len() < 9 + frame_len {
                    buf.resize(9 + frame_len, 0);
                }
            }
            let n = io.read(&mut buf[len..]).await.map_err(broke)?;
            if n == 0 {
                return Err((
                    ErrorKind::Reset,
                    format!("{addr} closed the connection during the HTTP/2 handshake"),
                ));
            }
            len += n;
        };
        let mut shared = Shared::new();
        // Only the SETTINGS frame: its stream limit and table size count from the first
        // request; later frames (a GOAWAY, say) are the driver's, after requests went out.
        let used = shared.process(&buf[..9 + frame_len]);
        debug_assert_eq!(used, 9 + frame_len);
        if let Some(failure) = shared.failed.take() {
            return Err(failure);
        }
        shared.slots.push(Stream::default());
        shared.handles = 1;
        let shared = Rc::new(RefCell::new(shared));
        let driver = ConnTask {
            shared: shared.clone(),
            io,
            input: Input {
                buf,
                len,
                start: 9 + frame_len,
            },
        };
        tokio::task::spawn_local(driver);
        Ok(H2Conn { shared, slot: 0 })
    }

    /// Another stream on the same connection.
    fn another(&self) -> H2Conn {
        let mut s = self.shared.borrow_mut();
        s.slots.push(Stream::default());
        s.handles += 1;
        H2Conn {
            shared: self.shared.clone(),
            slot: s.slots.len() - 1,
        }
    }

    /// False once the connection failed or the server sent GOAWAY (or the stream ids ran out).
    fn alive(&self) -> bool {
        let s = self.shared.borrow();
        s.failed.is_none() && !s.going_away && s.next_id <= MAX_STREAM_ID
    }

    /// While idle: asks to be woken when the connection closes.
    fn wake_on_close(&self, cx: &mut Context<'_>) {
        let mut s = self.shared.borrow_mut();
        let slot = &mut s.slots[self.slot];
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
    }

    /// Sends `request` on a new stream and waits for the whole response.
    fn send<'a>(&'a self, request: Request<'a>) -> Exchange<'a> {
        Exchange {
            conn: self,
            request,
            phase: ExchangeState::Start,
        }
    }
}

impl Link for H2Conn {
    const MULTIPLEXED: bool = true;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let (io, connect, handshake) = dial.transport(server_name).await?;
        let addr = dial.addr;
        let transport = Some((connect, handshake));
        let link =
            match tokio::time::timeout(dial.connect_timeout, H2Conn::handshake(io, addr)).await {
                Err(_) => {
                    let within = dial.connect_timeout;
                    let message = format!("no HTTP/2 SETTINGS from {addr} within {within:?}");
                    return Err(Refused {
                        failure: (ErrorKind::ConnectTimeout, message),
                        transport,
                    });
                }
                Ok(conn) => conn.map_err(|failure| Refused { failure, transport })?,
            };
        Ok(Opened {
            link,
            connect,
            handshake,
        })
    }

    fn stream(&self) -> Option<Self> {
        Some(self.another())
    }

    fn is_open(&self) -> bool {
        self.alive()
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) {
        self.wake_on_close(cx);
    }

    fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        _wire: Option<&'a Wire>,
    ) -> impl Future<Output = Result<Response, Failure>> + 'a {
        self.send(request)
    }

    fn take_counts(&mut self) -> Counts {
        let mut shared = self.shared.borrow_mut();
        let wire = std::mem::take(&mut shared.wire);
        let slot = &mut shared.slots[self.slot];
        Counts {
            received: std::mem::take(&mut slot.received),
            written: std::mem::take(&mut slot.written),
            stray: 0,
            first_byte: slot.first_byte.take(),
            wire,
        }
    }
}

impl Drop for H2Conn {
    fn drop(&mut self) {
        let mut s = self.shared.borrow_mut();
        s.handles -= 1;
        if s.handles == 0 {
            // The driver ends and the socket closes.
            s.driver_woken = false;
            s.wake_driver();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ExchangeState {
    Start,
    /// Waiting for a stream the server allows.
    Queued,
    Sent,
    Done,
}

/// [`H2Conn::send`]'s future; dropped before its response (a timeout), it resets the
/// stream.
pub(crate) struct Exchange<'a> {
    conn: &'a H2Conn,
    request: Request<'a>,
    phase: ExchangeState,
}

impl Future for Exchange<'_> {
    type Output = Result<Response, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let slot = this.conn.slot;
        let mut s = this.conn.shared.borrow_mut();
        if matches!(this.phase, ExchangeState::Start | ExchangeState::Queued) {
            if let Some(failure) = &s.failed {
                this.phase = ExchangeState::Done;
                return Poll::Ready(Err(failure.clone()));
            }
            if s.going_away || s.next_id > MAX_STREAM_ID {
                this.phase = ExchangeState::Done;
                let message = "the connection takes no new streams (GOAWAY)".to_owned();
                return Poll::Ready(Err((ErrorKind::Goaway, message)));
            }
            if s.active.len() >= s.max_streams {
                if this.phase == ExchangeState::Start || !s.waiting.contains(&slot) {
                    s.waiting.push(slot);
                }
                this.phase = ExchangeState::Queued;
                s.slots[slot].waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            s.waiting.retain(|&x| x != slot);
            s.slots[slot].result = None;
            s.open(slot, this.request);
            this.phase = ExchangeState::Sent;
        }
        if this.phase != ExchangeState::Sent {
            return Poll::Pending;
        }
        let s = &mut *s;
        let slot = &mut s.slots[slot];
        if let Some(result) = slot.result.take() {
            this.phase = ExchangeState::Done;
            return Poll::Ready(result);
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        let slot = self.conn.slot;
        let mut s = self.conn.shared.borrow_mut();
        match self.phase {
            ExchangeState::Sent => {
                s.slots[slot].result = None;
                s.cancel(slot);
            }
            ExchangeState::Queued => s.waiting.retain(|&x| x != slot),
            ExchangeState::Start | ExchangeState::Done => {}
        }
    }
}

/// The connection's task: writes what the streams queued, reads and dispatches frames.
struct ConnTask {
    shared: Rc<RefCell<Shared>>,
    io: Io,
    input: Input,
}

/// What the server sent.
struct Input {
    buf: Vec<u8>,
    /// Bytes in `buf`, of which `buf[..start]` are handled.
    len: usize,
    start: usize,
}

impl Future for ConnTask {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut s = this.shared.borrow_mut();
        s.driver_woken = false;
        if !s.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.driver = Some(cx.waker().clone());
        }
        loop {
            if s.handles == 0 || write_out(&mut this.io, &mut s, cx).is_break() {
                return Poll::Ready(());
            }
            // Answers queued from here on want another pass of the write above.
            let before = s.out.len();
            // Frames left over from the handshake, or a partial frame (only its length is
            // looked at again).
            let input = &mut this.input;
            if input.start < input.len {
                input.start += s.process(&input.buf[input.start..input.len]);
            }
            if input.read_in(&mut this.io, &mut s, cx).is_break() {
                return Poll::Ready(());
            }
            if s.out.len() == before && s.failed.is_none() {
                return Poll::Pending;
            }
        }
    }
}

/// Writes everything queued; breaks when the connection is done (it failed, or vload's
/// GOAWAY went out).
fn write_out(io: &mut Io, s: &mut Shared, cx: &mut Context<'_>) -> ControlFlow<()> {
    while s.written < s.out.len() {
        match Pin::new(&mut *io).poll_write(cx, &s.out[s.written..]) {
            Poll::Ready(Ok(0)) => {
                let message = "the connection closed while writing".to_owned();
                s.fail(ErrorKind::Reset, ErrorKind::Body, message);
                return ControlFlow::Break(());
            }
            Poll::Ready(Ok(n)) => s.written += n,
            Poll::Ready(Err(e)) => {
                let message = format!("writing to the server: {e}");
                s.fail(io_kind(&e, false), io_kind(&e, true), message);
                return ControlFlow::Break(());
            }
            Poll::Pending => break,
        }
    }
    if s.written == s.out.len() {
        s.out.clear();
        s.written = 0;
        s.answers = 0;
        if let Io::Tls(_) = io {
            // rustls may hold records back until flushed.
            let _ = Pin::new(&mut *io).poll_flush(cx);
        }
    }
    if s.failed.is_some() {
        return ControlFlow::Break(());
    }
    ControlFlow::Continue(())
}

impl Input {
    /// Reads and handles everything that arrived; breaks when the connection failed.
    fn read_in(&mut self, io: &mut Io, s: &mut Shared, cx: &mut Context<'_>) -> ControlFlow<()> {
        loop {
            if self.len == self.buf.len() {
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.len, 0);
                    self.len -= self.start;
                    self.start = 0;
                } else {
                    let grown = (self.buf.len() * 2).clamp(MAX_FRAME + 9, MAX_BUFFER);
                    self.buf.resize(grown, 0);
                }
            }
            let mut read = ReadBuf::new(&mut self.buf[self.len..]);
            match Pin::new(&mut *io).poll_read(cx, &mut read) {
                Poll::Pending => return ControlFlow::Continue(()),
                Poll::Ready(Err(e)) => {
                    let message = format!("reading from the server: {e}");
                    s.fail(io_kind(&e, false), io_kind(&e, true), message);
                    return ControlFlow::Break(());
                }
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    let message = "the server closed the connection".to_owned();
                    s.fail(ErrorKind::Reset, ErrorKind::Body, message);
                    return ControlFlow::Break(());
                }
                Poll::Ready(Ok(())) => {
                    self.len += read.filled().len();
                    s.wire += read.filled().len() as u64;
                    self.start += s.process(&self.buf[self.start..self.len]);
                    if self.start == self.len {
                        (self.start, self.len) = (0, 0);
                    }
                    if s.failed.is_some() {
                        return ControlFlow::Continue(());
                    }
                }
            }
        }
    }
}

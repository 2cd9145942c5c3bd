//! One HTTP/1.1 connection on tokio, a [`Link`]: the request written from prepared bytes,
//! the response read through a [`Decoder`].

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, ReadBuf};

use super::buffer::{BUFFER, grow_if_filled, make_room};
use super::decode::{Decoder, Step};
use crate::failure::{Failure, io_failure};
use crate::protocol::{Counts, Dial, Link, Opened, Refused};
use crate::response::Response;
use crate::tls::Io;
use crate::workload::{Request, Wire};

/// One HTTP/1.1 connection.
pub(crate) struct H1Conn {
    io: Io,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    closed: bool,
    /// Body bytes received since it was last counted, whether or not the response completes:
    /// a server that streams an endless body is seen sending it.
    received: u64,
    /// Request body bytes written since they were last counted: a request counts once all
    /// of it reached the connection.
    written: u64,
    /// Bytes the server sent after a complete response, unasked (the connection is closed
    /// for them), since they were last counted.
    stray: usize,
    /// When the last response began to arrive, if a read left it incomplete.
    first_byte: Option<std::time::Instant>,
    /// Bytes read since they were last counted.
    wire: u64,
}

impl H1Conn {
    pub(crate) fn new(io: Io) -> Self {
        H1Conn {
            io,
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            closed: false,
            received: 0,
            written: 0,
            stray: 0,
            first_byte: None,
            wire: 0,
        }
    }

    /// While idle: true once the server has closed the connection (or sent bytes nobody
    /// asked for, which leaves it unusable: counted as stray).
    fn watch_idle(&mut self, cx: &mut Context<'_>) -> bool {
        if self.closed {
            return true;
        }
        self.start = 0;
        self.end = 0;
        let mut read = ReadBuf::new(&mut self.buf);
        match Pin::new(&mut self.io).poll_read(cx, &mut read) {
            Poll::Pending => false,
            Poll::Ready(result) => {
                // End of stream, an error, or unsolicited bytes: done with it either way.
                if result.is_ok() {
                    self.stray += read.filled().len();
                    self.wire += read.filled().len() as u64;
                }
                self.closed = true;
                true
            }
        }
    }

    /// Reads more into the buffer; 0 at the end of the stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        let room = make_room(&mut self.buf, &mut self.start, &mut self.end);
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        self.wire += n as u64;
        grow_if_filled(&mut self.buf, n, room);
        Ok(n)
    }

    /// Writes `request` (whose body is its last `body` bytes) and reads the whole response.
    async fn send(
        &mut self,
        request: &[u8],
        head_request: bool,
        body: u64,
    ) -> Result<Response, Failure> {
        let result = self.exchange_inner(request, head_request, body).await;
        if result.is_err() {
            self.closed = true;
        }
        result
    }

    async fn exchange_inner(
        &mut self,
        request: &[u8],
        head_request: bool,
        body: u64,
    ) -> Result<Response, Failure> {
        self.io
            .write_all(request)
            .await
            .map_err(|e| io_failure(&e, false))?;
        self.io.flush().await.map_err(|e| io_failure(&e, false))?;
        self.written += body;
        let mut decoder = Decoder::new(head_request);
        self.first_byte = None;
        loop {
            let before = decoder.body();
            let had = self.end > self.start;
            let fed = decoder.feed(&self.buf[self.start..self.end]);
            self.received += decoder.body() - before;
            let (used, step) = fed?;
            self.start += used;
            if let Step::Done(response) = step {
                if self.start < self.end {
                    // Bytes after the response nobody asked for (a body on a 204, a short
                    // Content-Length): the response stands; they would be read as the next
                    // one, so the connection is done.
                    self.stray += self.end - self.start;
                    self.closed = true;
                }
                if response.close {
                    self.closed = true;
                }
                return Ok(response);
            }
            if had && self.first_byte.is_none() {
                // Part of the response is here, the rest to come: its transfer begins.
                self.first_byte = Some(std::time::Instant::now());
            }
            let read = self.fill().await;
            if read.map_err(|e| io_failure(&e, decoder.in_body()))? == 0 {
                self.closed = true;
                return decoder.eof(self.end - self.start);
            }
        }
    }
}

impl Link for H1Conn {
    const MULTIPLEXED: bool = false;

    async fn open(dial: &Dial, server_name: Option<&str>) -> Result<Opened<Self>, Refused> {
        let (io, connect, handshake) = dial.transport(server_name).await?;
        Ok(Opened {
            link: H1Conn::new(io),
            connect,
            handshake,
        })
    }

    fn is_open(&self) -> bool {
        !self.closed
    }

    fn poll_idle(&mut self, cx: &mut Context<'_>) {
        self.watch_idle(cx);
    }

    async fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        wire: Option<&'a Wire>,
    ) -> Result<Response, Failure> {
        match wire {
            Some(wire) => self.send(&wire.bytes, wire.head, wire.body).await,
            None => {
                let bytes = request.lean_bytes();
                let body = request.body().len() as u64;
                self.send(&bytes, request.is_head(), body).await
            }
        }
    }

    fn take_counts(&mut self) -> Counts {
        Counts {
            received: std::mem::take(&mut self.received),
            written: std::mem::take(&mut self.written),
            stray: std::mem::take(&mut self.stray),
            first_byte: self.first_byte.take(),
            wire: std::mem::take(&mut self.wire),
        }
    }
}

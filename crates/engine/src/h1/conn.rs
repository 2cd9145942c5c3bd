//! One HTTP/1.1 connection on tokio: the request written from prepared bytes, the response
//! read through a [`Decoder`].

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, ReadBuf};

use super::{BUFFER, Decoder, Step, grow_if_filled, make_room};
use crate::failure::{Failure, io_failure};
use crate::response::Response;
use crate::tls::Io;

/// One HTTP/1.1 connection.
pub(crate) struct H1Conn {
    io: Io,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    closed: bool,
    /// Body bytes received since the last [`H1Conn::take_received`], whether or not the
    /// response completes: a server that streams an endless body is seen sending it.
    received: u64,
    /// Request body bytes written since the last [`H1Conn::take_written`]: a request counts
    /// once all of it reached the connection.
    written: u64,
    /// Bytes the server sent after a complete response, unasked (the connection is closed
    /// for them), until [`H1Conn::take_stray`].
    stray: usize,
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
        }
    }

    /// Bytes the server sent unasked after a complete response, since the last call.
    pub(crate) fn take_stray(&mut self) -> usize {
        std::mem::take(&mut self.stray)
    }

    /// Request body bytes written since the last call.
    pub(crate) fn take_written(&mut self) -> u64 {
        std::mem::take(&mut self.written)
    }

    /// Body bytes received since the last call.
    pub(crate) fn take_received(&mut self) -> u64 {
        std::mem::take(&mut self.received)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// While idle: true once the server has closed the connection (or sent bytes nobody
    /// asked for, which leaves it unusable: counted, see [`H1Conn::take_stray`]).
    pub(crate) fn poll_idle(&mut self, cx: &mut Context<'_>) -> bool {
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
        grow_if_filled(&mut self.buf, n, room);
        Ok(n)
    }

    /// Writes `request` (whose body is its last `body` bytes) and reads the whole response.
    pub(crate) async fn exchange(
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
        loop {
            let before = decoder.body();
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
            let read = self.fill().await;
            if read.map_err(|e| io_failure(&e, decoder.in_body()))? == 0 {
                self.closed = true;
                return decoder.eof(self.end - self.start);
            }
        }
    }
}

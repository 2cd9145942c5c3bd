//! vload's lean HTTP/1.1 client connection, the default for HTTP/1.1 (hyper's stays as
//! `--http1-client hyper`).
//!
//! A load generator sends the same few requests millions of times and only needs each
//! response's status, cache headers and body length. So the request is written from bytes
//! prepared once, the response head is parsed in place by `httparse` (hyper's own parser)
//! without building a `HeaderMap`, and the body is counted and dropped without a channel
//! or a task: one `write` and usually one `read` per request, no allocation. Framing follows
//! RFC 9112: no body for HEAD, 1xx, 204 and 304; chunked when the last transfer coding is
//! chunked; else Content-Length; else until the server closes.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, ReadBuf};
use vload_schema::ErrorKind;

use crate::cache::{CacheClass, CacheSource};
use crate::tls::Io;

/// A response head larger than this is refused.
const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per response; more is a protocol error.
const MAX_HEADERS: usize = 96;
/// The read buffer's starting size, enough for the head of a cache's usual small response:
/// every connection pays it (10,000 connections: 10 MB at 1 KB, 40 MB at 4 KB), and a
/// read that fills it doubles it.
pub(crate) const BUFFER: usize = 1024;
/// A read that fills the buffer doubles it, up to this, so large bodies take few reads.
const MAX_BUFFER: usize = 64 * 1024;
/// Longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4 * 1024;

pub(crate) use crate::failure::Failure;

/// What the engine keeps of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body_bytes: u64,
    pub(crate) cache: (CacheClass, Option<CacheSource>),
    /// The server closes the connection after this response.
    pub(crate) close: bool,
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// What the head says, owned (the parse borrows the buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) len: usize,
    pub(crate) status: u16,
    framing: Framing,
    close: bool,
    pub(crate) cache: (CacheClass, Option<CacheSource>),
}

/// Parses a response head at the start of `buf`: `Ok(None)` until it is complete.
pub(crate) fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, String> {
    // Slots httparse fills as it parses: initialising all 96 (3 KB of stores) for the seven or
    // so headers a response has was a quarter of a parse (190 against 144 ns, the
    // `response/parse_and_classify` microbench).
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = response.code.unwrap_or(0);
    let http10 = response.version == Some(0);
    let (mut length, mut chunked, mut encoded) = (None, false, false);
    let (mut close, mut keep_alive) = (false, false);
    // One pass over the headers for framing and cache status, each name tested only against
    // the names of its length (most headers are none of them).
    let (mut varnish, mut x_cache, mut age) = (None, None, None);
    for h in response.headers.iter() {
        let name = h.name.as_bytes();
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let value = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        format!(
                            "malformed Content-Length '{}'",
                            String::from_utf8_lossy(h.value)
                        )
                    })?;
                if length.is_some_and(|l| l != value) {
                    return Err("conflicting Content-Length headers".into());
                }
                length = Some(value);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                encoded = true;
                // Only the last coding decides: "gzip, chunked" is chunked.
                chunked = h
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in h.value.split(|b| *b == b',') {
                    let token = token.trim_ascii();
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            9 if name.eq_ignore_ascii_case(b"x-varnish") => varnish = Some(h.value),
            7 if name.eq_ignore_ascii_case(b"x-cache") => x_cache = Some(h.value),
            3 if name.eq_ignore_ascii_case(b"age") => age = Some(h.value),
            _ => {}
        }
    }
    let cache = crate::cache::decide(varnish, x_cache, age);
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if encoded {
        Framing::UntilClose
    } else {
        match length {
            Some(0) => Framing::Empty,
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    Ok(Some(Head {
        len,
        status,
        close: close || (http10 && !keep_alive) || framing == Framing::UntilClose,
        framing,
        cache,
    }))
}

/// An io error while reading or writing, by kind.
pub(crate) fn io_failure(error: &std::io::Error, in_body: bool) -> Failure {
    let kind = crate::failure::io_kind(error, in_body);
    (kind, format!("connection error: {error}"))
}

/// Where a [`Decoder`] is in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// Body bytes still to come: of a Content-Length body, or of a chunk (then its CRLF).
    Bytes {
        left: u64,
        chunk: bool,
    },
    ChunkSize,
    ChunkEnd,
    Trailers,
    UntilClose,
}

/// What [`Decoder::feed`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Everything given was consumed but what it cannot use yet (part of a head or of a
    /// chunk line): it wants more bytes, or the end of the stream.
    More,
    /// The response ended; bytes after it were not consumed.
    Done(Response),
}

/// One response, decoded from bytes as they arrive: no I/O of its own, so the same framing
/// serves the tokio connection ([`H1Conn`]) and the worker's own event loop.
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    head_request: bool,
    state: State,
    /// The final head, once parsed.
    head: Option<Head>,
    /// Body bytes consumed so far, whether or not the response completes.
    body: u64,
}

impl Decoder {
    /// A decoder for the response to a request, HEAD or not.
    pub(crate) fn new(head_request: bool) -> Self {
        Decoder {
            head_request,
            state: State::Head,
            head: None,
            body: 0,
        }
    }

    /// Body bytes consumed so far.
    pub(crate) fn body(&self) -> u64 {
        self.body
    }

    /// True once the head is in: a failure after it is a failure of the body.
    pub(crate) fn in_body(&self) -> bool {
        self.head.is_some()
    }

    /// Consumes what it can of `buf`; returns how much, and whether the response ended.
    pub(crate) fn feed(&mut self, buf: &[u8]) -> Result<(usize, Step), Failure> {
        let mut at = 0;
        loop {
            let rest = &buf[at..];
            match self.state {
                State::Head => {
                    let parsed = parse_head(rest, self.head_request)
                        .map_err(|m| (ErrorKind::Protocol, m))?;
                    match parsed {
                        // 100 Continue and other interim responses precede the real one.
                        Some(head) if (100..200).contains(&head.status) && head.status != 101 => {
                            at += head.len;
                        }
                        Some(head) => {
                            at += head.len;
                            self.head = Some(head);
                            self.state = match head.framing {
                                Framing::Empty => return Ok((at, self.done())),
                                Framing::Length(n) => State::Bytes {
                                    left: n,
                                    chunk: false,
                                },
                                Framing::Chunked => State::ChunkSize,
                                Framing::UntilClose => State::UntilClose,
                            };
                        }
                        None if rest.len() >= MAX_HEAD => {
                            return Err((
                                ErrorKind::Protocol,
                                format!("response head larger than {} KiB", MAX_HEAD / 1024),
                            ));
                        }
                        None => return Ok((at, Step::More)),
                    }
                }
                State::Bytes { left, chunk } => {
                    let take = left.min(rest.len() as u64);
                    (at, self.body) = (at + take as usize, self.body + take);
                    if take < left {
                        let left = left - take;
                        self.state = State::Bytes { left, chunk };
                        return Ok((at, Step::More));
                    }
                    if !chunk {
                        return Ok((at, self.done()));
                    }
                    self.state = State::ChunkEnd;
                }
                State::UntilClose => {
                    self.body += rest.len() as u64;
                    return Ok((buf.len(), Step::More));
                }
                State::ChunkSize | State::ChunkEnd | State::Trailers => {
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_LINE {
                            return Err((ErrorKind::Protocol, "chunk line too long".into()));
                        }
                        return Ok((at, Step::More));
                    };
                    let line = &rest[..end];
                    at += end + 2;
                    match self.state {
                        State::ChunkSize => match parse_chunk_size(line)? {
                            0 => self.state = State::Trailers,
                            size => {
                                self.state = State::Bytes {
                                    left: size,
                                    chunk: true,
                                }
                            }
                        },
                        State::ChunkEnd if line.is_empty() => self.state = State::ChunkSize,
                        State::ChunkEnd => {
                            return Err((ErrorKind::Protocol, "chunk not followed by CRLF".into()));
                        }
                        // Trailers, up to the empty line.
                        _ if line.is_empty() => return Ok((at, self.done())),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The stream ended with `left` bytes not consumed: the response if its body runs to
    /// the close, else why it is incomplete.
    pub(crate) fn eof(&mut self, left: usize) -> Result<Response, Failure> {
        let message = match self.state {
            State::UntilClose => {
                let mut response = self.response();
                response.close = true;
                return Ok(response);
            }
            State::Head if left > 0 => "connection closed in the middle of the response head",
            State::Head => "connection closed before a response",
            State::Bytes { left, chunk: false } => {
                return Err((
                    ErrorKind::Body,
                    format!("connection closed {left} bytes before the end of the body"),
                ));
            }
            _ => "connection closed inside a chunked body",
        };
        let kind = if self.in_body() {
            ErrorKind::Body
        } else {
            ErrorKind::Reset
        };
        Err((kind, message.into()))
    }

    fn response(&self) -> Response {
        let head = self.head.expect("a response ends after its head");
        Response {
            status: head.status,
            body_bytes: self.body,
            cache: head.cache,
            close: head.close,
        }
    }

    fn done(&self) -> Step {
        Step::Done(self.response())
    }
}

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

/// Makes room at the end of `buf[start..end]` for a read (moving or doubling); returns the
/// room.
pub(crate) fn make_room(buf: &mut Vec<u8>, start: &mut usize, end: &mut usize) -> usize {
    if *start == *end {
        (*start, *end) = (0, 0);
    } else if *end == buf.len() {
        if *start > 0 {
            buf.copy_within(*start..*end, 0);
            *end -= *start;
            *start = 0;
        } else {
            let grown = buf.len() * 2;
            buf.resize(grown, 0);
        }
    }
    buf.len() - *end
}

/// A read of `n` bytes that filled all the `room` there was doubles the buffer, up to
/// [`MAX_BUFFER`], so large bodies take few reads.
pub(crate) fn grow_if_filled(buf: &mut Vec<u8>, n: usize, room: usize) {
    if n == room && buf.len() < MAX_BUFFER {
        let grown = (buf.len() * 2).min(MAX_BUFFER);
        buf.resize(grown, 0);
    }
}

/// A chunk-size line: hex digits, then optional `;extensions`.
fn parse_chunk_size(line: &[u8]) -> Result<u64, Failure> {
    let digits = line
        .split(|b| *b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.len() <= 15)
        .and_then(|d| u64::from_str_radix(d, 16).ok())
        .ok_or_else(|| {
            (
                ErrorKind::Protocol,
                format!("malformed chunk size '{}'", String::from_utf8_lossy(line)),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes(), false).unwrap().unwrap()
    }

    #[test]
    fn framing_follows_rfc_9112() {
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n").framing,
            Framing::Length(11)
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").framing,
            Framing::Chunked
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").framing,
            Framing::UntilClose
        );
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        assert_eq!(
            head("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n").framing,
            Framing::Empty
        );
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Empty, "HEAD has no body");
        assert!(head("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n").close);
        assert!(head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").close);
        assert!(
            !head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").close
        );
    }

    #[test]
    fn partial_and_malformed_heads() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
        assert!(
            parse_head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false
            )
            .is_err()
        );
        assert!(parse_head(b"garbage\r\n\r\n", false).is_err());
    }

    /// The header slots are filled by the parser, not initialised first: every header up to
    /// the limit is seen (the framing header last of 96 still frames), one more is an error.
    #[test]
    fn header_slots_up_to_the_limit() {
        let with = |n: usize| {
            let mut head = String::from("HTTP/1.1 200 OK\r\n");
            for i in 0..n - 1 {
                head.push_str(&format!("X-Filler-{i}: {i}\r\n"));
            }
            head.push_str("Content-Length: 7\r\n\r\n");
            head
        };
        let full = with(MAX_HEADERS);
        let parsed = parse_head(full.as_bytes(), false).unwrap().unwrap();
        assert_eq!(parsed.framing, Framing::Length(7));
        assert_eq!(parsed.len, full.len());
        let over = with(MAX_HEADERS + 1);
        let error = parse_head(over.as_bytes(), false).unwrap_err();
        assert!(error.contains("too many headers"), "{error}");
        // The same head cut short is partial, not an error.
        assert_eq!(
            parse_head(&full.as_bytes()[..full.len() - 3], false),
            Ok(None)
        );
    }

    #[test]
    fn cache_headers_are_classified_in_place() {
        let h = head("HTTP/1.1 200 OK\r\nX-Varnish: 5 3\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.cache, (CacheClass::Hit, Some(CacheSource::XVarnish)));
    }

    /// Feeds `wire` to a decoder `step` bytes at a time, as reads would bring it; returns
    /// the response (or the failure at the end of the stream) and the bytes left after it.
    fn decode(wire: &[u8], step: usize, head_request: bool) -> (Result<Response, Failure>, usize) {
        let mut decoder = Decoder::new(head_request);
        let (mut start, mut end) = (0, 0);
        loop {
            match decoder.feed(&wire[start..end]) {
                Err(failure) => return (Err(failure), wire.len() - start),
                Ok((used, Step::Done(response))) => {
                    return (Ok(response), wire.len() - start - used);
                }
                Ok((used, Step::More)) => start += used,
            }
            if end == wire.len() {
                return (decoder.eof(end - start), 0);
            }
            end = (end + step).min(wire.len());
        }
    }

    /// Every framing decodes the same whether it arrives at once or a byte at a time.
    #[test]
    fn the_decoder_frames_whatever_the_reads() {
        let cases: [(&[u8], u64, usize); 5] = [
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP",
                5,
                4,
            ),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
                0,
                0,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n\
                  A\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\nX",
                13,
                1,
            ),
            (
                b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
                13,
                0,
            ),
            (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 0, 0),
        ];
        for (wire, body, left) in cases {
            for step in [1, 2, 7, wire.len()] {
                let (response, rest) = decode(wire, step, false);
                let response = response.unwrap_or_else(|f| panic!("step {step}: {f:?}"));
                assert_eq!((response.body_bytes, rest), (body, left), "step {step}");
            }
        }
        // HEAD: a Content-Length but no body.
        let (response, rest) = decode(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", 3, true);
        assert_eq!((response.unwrap().body_bytes, rest), (0, 0));
    }

    /// Each way a response can break names its kind and what was missing.
    #[test]
    fn the_decoder_names_each_broken_response() {
        let cases: [(&[u8], ErrorKind, &str); 7] = [
            (b"", ErrorKind::Reset, "before a response"),
            (
                b"HTTP/1.1 200 OK\r\nContent-",
                ErrorKind::Reset,
                "middle of the response head",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
                ErrorKind::Body,
                "6 bytes before the end",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                ErrorKind::Body,
                "inside a chunked body",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n",
                ErrorKind::Protocol,
                "not followed by CRLF",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                ErrorKind::Protocol,
                "malformed chunk size",
            ),
            (
                b"SSH-2.0-OpenSSH\r\n\r\n",
                ErrorKind::Protocol,
                "malformed response head",
            ),
        ];
        for (wire, kind, says) in cases {
            for step in [1, wire.len().max(1)] {
                let (response, _) = decode(wire, step, false);
                let (got, message) = response.expect_err("broken");
                assert_eq!(got, kind, "{message}");
                assert!(message.contains(says), "{message}");
            }
        }
        let endless_line = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" as &[u8],
            &[b'1'; MAX_LINE + 1],
        ]
        .concat();
        let (response, _) = decode(&endless_line, 512, false);
        assert!(response.unwrap_err().1.contains("chunk line too long"));
        let endless_head = [b"HTTP/1.1 200 OK\r\n" as &[u8], &[b'x'; MAX_HEAD]].concat();
        let (response, _) = decode(&endless_head, 4096, false);
        assert!(response.unwrap_err().1.contains("larger than 64 KiB"));
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1a"), Ok(26));
        assert_eq!(parse_chunk_size(b"0;name=value"), Ok(0));
        assert!(parse_chunk_size(b"").is_err());
        assert!(parse_chunk_size(b"zz").is_err());
    }
}

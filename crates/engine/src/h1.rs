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
const BUFFER: usize = 1024;
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
fn io_failure(error: &std::io::Error, in_body: bool) -> Failure {
    let kind = crate::failure::io_kind(error, in_body);
    (kind, format!("connection error: {error}"))
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
        }
    }

    /// Body bytes received since the last call.
    pub(crate) fn take_received(&mut self) -> u64 {
        std::mem::take(&mut self.received)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// While idle: true once the server has closed the connection (or sent bytes nobody
    /// asked for, which leaves it unusable).
    pub(crate) fn poll_idle(&mut self, cx: &mut Context<'_>) -> bool {
        if self.closed || self.start < self.end {
            self.closed = true;
            return true;
        }
        self.start = 0;
        self.end = 0;
        let mut read = ReadBuf::new(&mut self.buf);
        match Pin::new(&mut self.io).poll_read(cx, &mut read) {
            Poll::Pending => false,
            Poll::Ready(_) => {
                // End of stream, an error, or unsolicited bytes: done with it either way.
                self.closed = true;
                true
            }
        }
    }

    /// Reads more into the buffer; 0 at the end of the stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
        }
        let room = self.buf.len() - self.end;
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        if n == room && self.buf.len() < MAX_BUFFER {
            let grown = (self.buf.len() * 2).min(MAX_BUFFER);
            self.buf.resize(grown, 0);
        }
        Ok(n)
    }

    /// Writes `request` and reads the whole response.
    pub(crate) async fn exchange(
        &mut self,
        request: &[u8],
        head_request: bool,
    ) -> Result<Response, Failure> {
        let result = self.exchange_inner(request, head_request).await;
        if result.is_err() {
            self.closed = true;
        }
        result
    }

    async fn exchange_inner(
        &mut self,
        request: &[u8],
        head_request: bool,
    ) -> Result<Response, Failure> {
        if self.start < self.end {
            // Bytes nobody asked for would be read as this request's response.
            return Err((
                ErrorKind::Protocol,
                format!(
                    "{} unexpected bytes after the previous response",
                    self.end - self.start
                ),
            ));
        }
        self.io
            .write_all(request)
            .await
            .map_err(|e| io_failure(&e, false))?;
        self.io.flush().await.map_err(|e| io_failure(&e, false))?;
        let head = loop {
            match parse_head(&self.buf[self.start..self.end], head_request)
                .map_err(|m| (ErrorKind::Protocol, m))?
            {
                // 100 Continue and other interim responses precede the real one.
                Some(head) if (100..200).contains(&head.status) && head.status != 101 => {
                    self.start += head.len;
                }
                Some(head) => break head,
                None => {
                    if self.end - self.start >= MAX_HEAD {
                        return Err((
                            ErrorKind::Protocol,
                            format!("response head larger than {} KiB", MAX_HEAD / 1024),
                        ));
                    }
                    if self.fill().await.map_err(|e| io_failure(&e, false))? == 0 {
                        let message = if self.end > self.start {
                            "connection closed in the middle of the response head"
                        } else {
                            "connection closed before a response"
                        };
                        return Err((ErrorKind::Reset, message.into()));
                    }
                }
            }
        };
        self.start += head.len;
        let body_bytes = self.read_body(head.framing).await?;
        if head.close {
            self.closed = true;
        }
        Ok(Response {
            status: head.status,
            body_bytes,
            cache: head.cache,
            close: head.close,
        })
    }

    async fn read_body(&mut self, framing: Framing) -> Result<u64, Failure> {
        match framing {
            Framing::Empty => Ok(0),
            Framing::Length(n) => {
                self.skip(n).await?;
                Ok(n)
            }
            Framing::UntilClose => {
                let mut total = 0u64;
                loop {
                    let n = (self.end - self.start) as u64;
                    total += n;
                    self.received += n;
                    self.start = self.end;
                    if self.fill().await.map_err(|e| io_failure(&e, true))? == 0 {
                        self.closed = true;
                        return Ok(total);
                    }
                }
            }
            Framing::Chunked => {
                let mut total = 0u64;
                loop {
                    let size = self.line(parse_chunk_size).await??;
                    if size == 0 {
                        // Trailers, up to the empty line.
                        while !self.line(<[u8]>::is_empty).await? {}
                        return Ok(total);
                    }
                    self.skip(size).await?;
                    total += size;
                    if !self.line(<[u8]>::is_empty).await? {
                        return Err((ErrorKind::Protocol, "chunk not followed by CRLF".into()));
                    }
                }
            }
        }
    }

    /// Consumes `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), Failure> {
        loop {
            let take = n.min((self.end - self.start) as u64);
            self.start += take as usize;
            self.received += take;
            n -= take;
            if n == 0 {
                return Ok(());
            }
            if self.fill().await.map_err(|e| io_failure(&e, true))? == 0 {
                return Err((
                    ErrorKind::Body,
                    format!("connection closed {n} bytes before the end of the body"),
                ));
            }
        }
    }

    /// Consumes one CRLF-terminated line and returns `f` of it (without the CRLF).
    async fn line<T>(&mut self, f: impl Fn(&[u8]) -> T) -> Result<T, Failure> {
        loop {
            let window = &self.buf[self.start..self.end];
            if let Some(at) = window.windows(2).position(|w| w == b"\r\n") {
                let value = f(&window[..at]);
                self.start += at + 2;
                return Ok(value);
            }
            if window.len() > MAX_LINE {
                return Err((ErrorKind::Protocol, "chunk line too long".into()));
            }
            if self.fill().await.map_err(|e| io_failure(&e, true))? == 0 {
                return Err((
                    ErrorKind::Body,
                    "connection closed inside a chunked body".into(),
                ));
            }
        }
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

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1a"), Ok(26));
        assert_eq!(parse_chunk_size(b"0;name=value"), Ok(0));
        assert!(parse_chunk_size(b"").is_err());
        assert!(parse_chunk_size(b"zz").is_err());
    }
}

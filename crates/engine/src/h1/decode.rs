//! One response decoded from bytes as they arrive, with no I/O of its own.

use vload_schema::ErrorKind;

use super::head::{Framing, Head, MAX_HEAD, parse_head};
use crate::failure::Failure;
use crate::response::Response;

/// Longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4 * 1024;

/// Where a [`Decoder`] is in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
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
    state: Position,
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
            state: Position::Head,
            head: None,
            body: 0,
        }
    }

    /// Body bytes consumed so far.
    pub(crate) fn body(&self) -> u64 {
        self.body
    }

    /// True while nothing of the response has been consumed (an interim 1xx head aside).
    pub(crate) fn is_fresh(&self) -> bool {
        self.state == Position::Head && self.head.is_none()
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
                Position::Head => {
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
                                Framing::Length(n) => Position::Bytes {
                                    left: n,
                                    chunk: false,
                                },
                                Framing::Chunked => Position::ChunkSize,
                                Framing::UntilClose => Position::UntilClose,
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
                Position::Bytes { left, chunk } => {
                    let take = left.min(rest.len() as u64);
                    (at, self.body) = (at + take as usize, self.body + take);
                    if take < left {
                        let left = left - take;
                        self.state = Position::Bytes { left, chunk };
                        return Ok((at, Step::More));
                    }
                    if !chunk {
                        return Ok((at, self.done()));
                    }
                    self.state = Position::ChunkEnd;
                }
                Position::UntilClose => {
                    self.body += rest.len() as u64;
                    return Ok((buf.len(), Step::More));
                }
                Position::ChunkSize | Position::ChunkEnd | Position::Trailers => {
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_LINE {
                            return Err((ErrorKind::Protocol, "chunk line too long".into()));
                        }
                        return Ok((at, Step::More));
                    };
                    at += end + 2;
                    if self.line(&rest[..end])? {
                        return Ok((at, self.done()));
                    }
                }
            }
        }
    }

    /// Takes a chunk-size, chunk-end or trailer line; true when it ended the response.
    fn line(&mut self, line: &[u8]) -> Result<bool, Failure> {
        match self.state {
            Position::ChunkSize => match parse_chunk_size(line)? {
                0 => self.state = Position::Trailers,
                size => {
                    self.state = Position::Bytes {
                        left: size,
                        chunk: true,
                    }
                }
            },
            Position::ChunkEnd if line.is_empty() => self.state = Position::ChunkSize,
            Position::ChunkEnd => {
                return Err((ErrorKind::Protocol, "chunk not followed by CRLF".into()));
            }
            // Trailers, up to the empty line.
            _ => return Ok(line.is_empty()),
        }
        Ok(false)
    }

    /// The stream ended with `left` bytes not consumed: the response if its body runs to
    /// the close, else why it is incomplete.
    pub(crate) fn eof(&mut self, left: usize) -> Result<Response, Failure> {
        let message = match self.state {
            Position::UntilClose => {
                let mut response = self.response();
                response.close = true;
                return Ok(response);
            }
            Position::Head if left > 0 => "connection closed in the middle of the response head",
            Position::Head => "connection closed before a response",
            Position::Bytes { left, chunk: false } => {
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
            origin: head.origin_us.map(|us| u64::from(us.get() - 1) * 1_000),
        }
    }

    fn done(&self) -> Step {
        Step::Done(self.response())
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

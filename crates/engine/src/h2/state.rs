//! One connection's state without I/O: its streams, windows and header tables, and what it
//! queues to send. The driver ([`super::conn`]) moves bytes; [`super::receive`] reads the
//! server's frames into it.

use std::task::Waker;

use bytes::{Buf as _, Bytes};
use vload_schema::ErrorKind;

use super::frames::*;
use super::hpack::{HeaderDecoder, HeaderEncoder};

use crate::failure::Failure;
use crate::response::Response;
use crate::workload::Request;

/// The connection's state, shared by its streams and its driver.
pub(super) struct Shared {
    /// Frames not yet written: `out[written..]`.
    pub(super) out: Vec<u8>,
    pub(super) written: usize,
    /// A header block being encoded.
    pub(super) block: Vec<u8>,
    pub(super) encoder: HeaderEncoder,
    pub(super) decoder: HeaderDecoder,
    /// One per handle.
    pub(super) slots: Vec<Stream>,
    /// Streams in flight, by id (ascending, as they were opened): (id, slot).
    pub(super) active: Vec<(u32, usize)>,
    pub(super) next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(super) max_streams: usize,
    /// Slots waiting for a stream the server allows.
    pub(super) waiting: Vec<usize>,
    /// Slots whose request body waits for the server's window.
    pub(super) sending: Vec<usize>,
    /// The connection's send window, and the server's initial window for a stream.
    pub(super) send_window: i64,
    pub(super) initial_window: i64,
    /// The server's SETTINGS_MAX_FRAME_SIZE.
    pub(super) max_send_frame: usize,
    /// Bytes received on the connection since its last WINDOW_UPDATE.
    pub(super) unacked: u32,
    /// Bytes of vload's answers to the server's frames (acknowledgements, window updates,
    /// stream resets) queued since the output was last written out; request bytes do not
    /// count.
    pub(super) answers: usize,
    /// The server sent GOAWAY: no new streams.
    pub(super) going_away: bool,
    /// The connection failed: every stream ended with this.
    pub(super) failed: Option<Failure>,
    pub(super) driver: Option<Waker>,
    pub(super) driver_woken: bool,
    pub(super) handles: usize,
    /// A header block continued in CONTINUATION frames: its stream and END_STREAM.
    pub(super) partial: Option<(u32, bool)>,
    pub(super) partial_block: Vec<u8>,
    /// The response head fields of the block being decoded.
    pub(super) head: crate::h2::HeadFields,
    /// When the bytes being processed were read, taken at the first response head that
    /// needs it.
    pub(super) read_at: Option<std::time::Instant>,
    /// Bytes read off the connection since a handle last counted them.
    pub(super) wire: u64,
}

/// A handle's stream: the request in flight and what its response said so far.
#[derive(Default)]
pub(super) struct Stream {
    /// The stream in flight, 0 for none.
    pub(super) id: u32,
    /// The final response head arrived (1xx heads do not count).
    pub(super) head: bool,
    pub(super) status: u16,
    pub(super) cache: crate::cache::Verdict,
    /// The origin's own time (`Server-Timing`).
    pub(super) origin: Option<u64>,
    /// When the response's first bytes were read, if the read left it incomplete.
    pub(super) first_byte: Option<std::time::Instant>,
    pub(super) body_bytes: u64,
    /// Body bytes since `take_received`, whether the response completed or not.
    pub(super) received: u64,
    /// Request body bytes queued to go out since `take_written` (the windows let them).
    pub(super) written: u64,
    /// Bytes received on the stream since its last WINDOW_UPDATE.
    pub(super) unacked: u32,
    pub(super) send_window: i64,
    /// Request body not yet sent.
    pub(super) body: Bytes,
    pub(super) result: Option<Result<Response, Failure>>,
    pub(super) waker: Option<Waker>,
}

impl Shared {
    pub(super) fn new() -> Self {
        Shared {
            out: Vec::with_capacity(1024),
            written: 0,
            block: Vec::new(),
            encoder: HeaderEncoder::default(),
            decoder: HeaderDecoder::default(),
            slots: Vec::new(),
            active: Vec::new(),
            next_id: 1,
            // Until the server's SETTINGS say otherwise (the handshake waits for them).
            max_streams: 100,
            waiting: Vec::new(),
            sending: Vec::new(),
            send_window: 65_535,
            initial_window: 65_535,
            max_send_frame: MAX_FRAME,
            unacked: 0,
            answers: 0,
            going_away: false,
            failed: None,
            driver: None,
            driver_woken: false,
            handles: 0,
            partial: None,
            partial_block: Vec::new(),
            head: crate::h2::HeadFields::default(),
            read_at: None,
            wire: 0,
        }
    }

    /// Queues a frame answering the server's (counted toward `MAX_QUEUED`).
    pub(super) fn answer(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) {
        frame_head(&mut self.out, payload.len(), kind, flags, id);
        self.out.extend_from_slice(payload);
        self.answers += 9 + payload.len();
    }

    /// The server broke the protocol on one stream: it is reset and fails; the connection
    /// and its other streams go on.
    pub(super) fn stream_error(&mut self, slot: usize, message: &str) {
        let id = self.slots[slot].id;
        self.answer(RST_STREAM, 0, id, &PROTOCOL_ERROR.to_be_bytes());
        self.complete(slot, Err((ErrorKind::Protocol, message.to_owned())));
    }

    pub(super) fn wake_driver(&mut self) {
        if !self.driver_woken {
            self.driver_woken = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.active
            .binary_search_by_key(&id, |&(id, _)| id)
            .ok()
            .map(|i| self.active[i].1)
    }

    /// Opens a stream for `slot` and queues its request.
    pub(super) fn open(&mut self, slot: usize, request: Request<'_>) {
        let id = self.next_id;
        self.next_id += 2;
        let Shared {
            block,
            encoder,
            out,
            ..
        } = self;
        block.clear();
        encoder.begin(block);
        encoder.field(b":method", request.method().as_str().as_bytes(), block);
        encoder.field(b":scheme", request.scheme().as_bytes(), block);
        encoder.field(b":path", request.path().as_bytes(), block);
        encoder.field(b":authority", request.host().as_bytes(), block);
        let body = request.body();
        let mut has_length = false;
        for (name, value) in request.headers() {
            let name = name.as_str().as_bytes();
            if is_connection_specific(name, value.as_bytes()) {
                continue;
            }
            has_length |= name == b"content-length";
            encoder.field(name, value.as_bytes(), block);
        }
        if !has_length && (!body.is_empty() || request.expects_body()) {
            encoder.field(b"content-length", body.len().to_string().as_bytes(), block);
        }
        // HEADERS, then CONTINUATION frames for a block larger than a frame.
        let end_stream = if body.is_empty() { END_STREAM } else { 0 };
        let mut chunks = block.chunks(self.max_send_frame).peekable();
        let mut kind = HEADERS;
        while let Some(chunk) = chunks.next() {
            let last = chunks.peek().is_none();
            let flags =
                if last { END_HEADERS } else { 0 } | if kind == HEADERS { end_stream } else { 0 };
            frame_head(out, chunk.len(), kind, flags, id);
            out.extend_from_slice(chunk);
            kind = CONTINUATION;
        }
        let s = &mut self.slots[slot];
        *s = Stream {
            id,
            send_window: self.initial_window,
            body,
            waker: s.waker.take(),
            received: s.received,
            written: s.written,
            ..Stream::default()
        };
        self.active.push((id, slot));
        if !self.slots[slot].body.is_empty() {
            self.send_body(slot);
        }
        self.wake_driver();
    }

    /// Queues as much of `slot`'s request body as the windows allow.
    pub(super) fn send_body(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        while !s.body.is_empty() {
            let n = s
                .body
                .len()
                .min(self.max_send_frame)
                .min(s.send_window.max(0) as usize)
                .min(self.send_window.max(0) as usize);
            if n == 0 {
                if !self.sending.contains(&slot) {
                    self.sending.push(slot);
                }
                return;
            }
            let flags = if n == s.body.len() { END_STREAM } else { 0 };
            frame_head(&mut self.out, n, DATA, flags, s.id);
            self.out.extend_from_slice(&s.body[..n]);
            s.body.advance(n);
            s.written += n as u64;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
        }
    }

    pub(super) fn flush_bodies(&mut self) {
        for slot in std::mem::take(&mut self.sending) {
            self.send_body(slot);
        }
        if !self.out.is_empty() {
            self.wake_driver();
        }
    }

    /// Ends `slot`'s stream with `result`, and lets a waiting stream open.
    pub(super) fn complete(&mut self, slot: usize, result: Result<Response, Failure>) {
        self.close_stream(slot);
        let s = &mut self.slots[slot];
        s.result = Some(result);
        if let Some(w) = &s.waker {
            w.wake_by_ref();
        }
        self.free_capacity();
    }

    /// Takes `slot`'s stream out of flight; returns its id (0 if none was).
    pub(super) fn close_stream(&mut self, slot: usize) -> u32 {
        let id = std::mem::take(&mut self.slots[slot].id);
        if let Ok(i) = self.active.binary_search_by_key(&id, |&(id, _)| id) {
            self.active.remove(i);
        }
        self.slots[slot].body = Bytes::new();
        self.sending.retain(|&x| x != slot);
        id
    }

    pub(super) fn free_capacity(&mut self) {
        if self.active.len() < self.max_streams && !self.waiting.is_empty() {
            let slot = self.waiting.remove(0);
            if let Some(w) = &self.slots[slot].waker {
                w.wake_by_ref();
            }
        }
    }

    /// vload gave up on `slot`'s stream (its timeout): the server is told to stop.
    pub(super) fn cancel(&mut self, slot: usize) {
        let id = self.close_stream(slot);
        if id == 0 {
            return;
        }
        if self.failed.is_none() {
            frame_head(&mut self.out, 4, RST_STREAM, 0, id);
            self.out.extend_from_slice(&CANCEL.to_be_bytes());
            self.wake_driver();
        }
        self.free_capacity();
    }

    /// The connection is lost: every stream in flight fails with `kind`, or `body_kind` once
    /// its response head had arrived.
    pub(super) fn fail(&mut self, kind: ErrorKind, body_kind: ErrorKind, message: String) {
        if self.failed.is_some() {
            return;
        }
        self.failed = Some((kind, message.clone()));
        for (_, slot) in std::mem::take(&mut self.active) {
            let k = if self.slots[slot].head {
                body_kind
            } else {
                kind
            };
            self.slots[slot].id = 0;
            self.slots[slot].result = Some(Err((k, message.clone())));
        }
        // Every handle hears of it: those in flight for their result, idle ones to reconnect.
        for s in &self.slots {
            if let Some(w) = &s.waker {
                w.wake_by_ref();
            }
        }
        self.sending.clear();
    }

    /// A protocol violation by the server: GOAWAY, then every stream fails.
    pub(super) fn violation(&mut self, message: String) {
        if self.failed.is_none() {
            let last = self.active.last().map_or(0, |&(id, _)| id);
            frame_head(&mut self.out, 8, GOAWAY, 0, 0);
            self.out.extend_from_slice(&last.to_be_bytes());
            self.out.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
        }
        self.fail(ErrorKind::Protocol, ErrorKind::Protocol, message);
    }
}

/// Headers HTTP/2 forbids (RFC 9113 section 8.2.2), dropped as hyper drops them.
pub(crate) fn is_connection_specific(name: &[u8], value: &[u8]) -> bool {
    match name {
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        | b"host" => true,
        b"te" => !value.eq_ignore_ascii_case(b"trailers"),
        _ => false,
    }
}

/// The frame reader, driven by the property tests in `fuzz.rs` without a socket.
#[cfg(test)]
pub(crate) mod fuzzing {
    use super::{Bytes, Failure, Response, Shared, Stream};

    /// A connection with streams in flight.
    pub(crate) struct Frames(Shared);

    /// What a server's bytes did to a connection.
    #[derive(Debug, PartialEq)]
    pub(crate) struct Observed {
        pub(crate) failed: Option<Failure>,
        pub(crate) results: Vec<Option<Result<Response, Failure>>>,
        pub(crate) out: Vec<u8>,
    }

    impl Frames {
        /// Streams 1, 3, 5, ... in flight, one per slot, each with a 64 KiB request body
        /// waiting for the server's window.
        pub(crate) fn with_streams(n: u32) -> Self {
            let mut shared = Shared::new();
            for i in 0..n {
                let id = 1 + 2 * i;
                shared.slots.push(Stream {
                    id,
                    send_window: 0,
                    body: Bytes::from(vec![b'b'; 64 * 1024]),
                    ..Stream::default()
                });
                shared.active.push((id, i as usize));
                shared.sending.push(i as usize);
            }
            shared.next_id = 1 + 2 * n;
            Frames(shared)
        }

        /// Handles the whole frames at the start of `buf`; returns the bytes used.
        pub(crate) fn process(&mut self, buf: &[u8]) -> usize {
            self.0.process(buf)
        }

        /// Bytes queued to go out.
        pub(crate) fn queued(&self) -> usize {
            self.0.out.len() - self.0.written
        }

        pub(crate) fn observed(self) -> Observed {
            let Shared {
                failed, slots, out, ..
            } = self.0;
            Observed {
                failed,
                results: slots.into_iter().map(|s| s.result).collect(),
                out,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping(out: &mut Vec<u8>) {
        frame_head(out, 8, PING, 0, 0);
        out.extend_from_slice(b"12345678");
    }

    /// A server that sends PINGs and never reads their acknowledgements would grow the
    /// output without bound: past 1 MB of answers the connection is given up.
    #[test]
    fn answers_the_server_never_reads_end_the_connection() {
        let mut shared = Shared::new();
        let mut frames = Vec::new();
        for _ in 0..70_000 {
            ping(&mut frames);
        }
        for _ in 0..2 {
            let used = shared.process(&frames);
            assert!(used <= frames.len());
        }
        let (kind, message) = shared.failed.expect("the connection failed");
        assert_eq!(kind, ErrorKind::Protocol);
        assert!(message.contains("acknowledgements"), "{message}");
    }

    /// Request bytes waiting in the output (a large body) are not answers: a PING on top of
    /// them is answered, not taken for a flood.
    #[test]
    fn a_large_request_body_is_not_taken_for_a_flood() {
        let mut shared = Shared::new();
        shared.out.resize(3 << 20, b'b');
        let mut frames = Vec::new();
        ping(&mut frames);
        assert_eq!(shared.process(&frames), frames.len());
        assert!(shared.failed.is_none());
        assert_eq!(shared.out.len(), (3 << 20) + 17, "the PING is acknowledged");
    }

    /// A WINDOW_UPDATE that lets a waiting 3 MB request body go out queues 3 MB in one
    /// `process`: request bytes, not answers, so not a flood either.
    #[test]
    fn a_body_released_by_a_window_update_is_not_taken_for_a_flood() {
        let mut shared = Shared::new();
        shared.slots.push(Stream {
            id: 1,
            send_window: i64::from(MAX_STREAM_ID),
            body: Bytes::from(vec![b'b'; 3 << 20]),
            ..Stream::default()
        });
        shared.active.push((1, 0));
        shared.send_window = 0;
        shared.send_body(0);
        assert_eq!(
            shared.sending,
            [0],
            "the body waits for the connection's window"
        );
        let mut frames = Vec::new();
        frame_head(&mut frames, 4, WINDOW_UPDATE, 0, 0);
        frames.extend_from_slice(&(4u32 << 20).to_be_bytes());
        assert_eq!(shared.process(&frames), frames.len());
        assert!(shared.failed.is_none(), "{:?}", shared.failed);
        assert!(shared.slots[0].body.is_empty(), "the whole body is queued");
        assert!(shared.out.len() > 3 << 20);
    }

    /// A frame cut short waits for the rest; frames of unknown type are skipped.
    #[test]
    fn partial_and_unknown_frames() {
        let mut shared = Shared::new();
        let mut frames = Vec::new();
        frame_head(&mut frames, 3, 0xfa, 0, 0);
        frames.extend_from_slice(b"abc");
        ping(&mut frames);
        let whole = frames.len();
        assert_eq!(
            shared.process(&frames[..whole - 3]),
            12,
            "the unknown frame only"
        );
        assert_eq!(shared.process(&frames[12..]), whole - 12);
        assert!(shared.failed.is_none());
    }
}

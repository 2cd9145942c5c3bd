//! vload's lean HTTP/2 client, the default for HTTP/2 (hyper's stays as
//! `--http2-client hyper`, to cross-check).
//!
//! One connection is one task, the driver, which owns the socket: it writes whatever the
//! streams queued since it last ran in one `write`, reads every frame that arrived in one
//! `read`, and hands each stream its response. A stream is a handle onto a slot of the
//! connection's shared state (single-threaded: `Rc<RefCell>`, no channels, no atomics but
//! the wake-ups): sending a request is encoding its header block into the connection's
//! output and waking the driver once for all the streams that did so in the same turn.
//! Responses are decoded for `:status` and the cache headers only (see [`crate::hpack`]);
//! bodies are counted and dropped. Flow control: vload's windows are 2^30 - 1, as h2load's,
//! topped up when half is used; request bodies respect the server's windows.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf as _, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use vload_schema::ErrorKind;

use crate::cache::{CacheClass, CacheSource};
use crate::failure::{Failure, io_kind};
use crate::hpack::{Decoder, Encoder, MAX_BLOCK};
use crate::request::Request;
use crate::response::Response;
use crate::tls::Io;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PUSH_PROMISE: u8 = 5;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY_FLAG: u8 = 0x20;

/// RST_STREAM's code for a request vload gave up on (its timeout).
const CANCEL: u32 = 0x8;
const PROTOCOL_ERROR: u32 = 0x1;

/// The largest frame vload accepts: SETTINGS_MAX_FRAME_SIZE left at its default.
const MAX_FRAME: usize = 16_384;
/// vload's receive windows, each stream's and the connection's, as h2load's defaults: the
/// server is never held back by the client.
const WINDOW: u32 = (1 << 30) - 1;
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// The read buffer's starting size; a frame larger than it, or a read that fills it, grows
/// it (to at most `MAX_BUFFER`).
const BUFFER: usize = 4 * 1024;
const MAX_BUFFER: usize = 64 * 1024;
/// Output the server makes vload queue without reading it (acknowledgements of its PINGs
/// and SETTINGS): past this the connection is given up rather than grown without bound.
const MAX_QUEUED: usize = 1 << 20;

/// One stream's handle on a connection: sends one request at a time.
pub(crate) struct H2Conn {
    shared: Rc<RefCell<Shared>>,
    slot: usize,
}

/// The connection's state, shared by its streams and its driver.
struct Shared {
    /// Frames not yet written: `out[written..]`.
    out: Vec<u8>,
    written: usize,
    /// A header block being encoded.
    block: Vec<u8>,
    encoder: Encoder,
    decoder: Decoder,
    /// One per handle.
    slots: Vec<Slot>,
    /// Streams in flight, by id (ascending, as they were opened): (id, slot).
    active: Vec<(u32, usize)>,
    next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    max_streams: usize,
    /// Slots waiting for a stream the server allows.
    waiting: Vec<usize>,
    /// Slots whose request body waits for the server's window.
    sending: Vec<usize>,
    /// The connection's send window, and the server's initial window for a stream.
    send_window: i64,
    initial_window: i64,
    /// The server's SETTINGS_MAX_FRAME_SIZE.
    max_send_frame: usize,
    /// Bytes received on the connection since its last WINDOW_UPDATE.
    unacked: u32,
    /// Bytes of vload's answers to the server's frames (acknowledgements, window updates,
    /// stream resets) queued since the output was last written out; request bytes do not
    /// count.
    answers: usize,
    /// The server sent GOAWAY: no new streams.
    going_away: bool,
    /// The connection failed: every stream ended with this.
    failed: Option<Failure>,
    driver: Option<Waker>,
    driver_woken: bool,
    handles: usize,
    /// A header block continued in CONTINUATION frames: its stream and END_STREAM.
    partial: Option<(u32, bool)>,
    partial_block: Vec<u8>,
    /// The response head fields of the block being decoded.
    head: HeadFields,
}

#[derive(Default)]
struct HeadFields {
    status: Option<u16>,
    varnish: Kept,
    x_cache: Kept,
    age: Kept,
}

/// A header value kept from one header block to decide the cache status; its buffer is
/// reused, so a Varnish response (X-Varnish and Age on every one) allocates nothing.
#[derive(Default)]
struct Kept {
    value: Vec<u8>,
    seen: bool,
}

impl Kept {
    fn set(&mut self, value: &[u8]) {
        self.value.clear();
        self.value.extend_from_slice(value);
        self.seen = true;
    }

    fn get(&self) -> Option<&[u8]> {
        self.seen.then_some(&self.value[..])
    }
}

/// A handle's stream: the request in flight and what its response said so far.
#[derive(Default)]
struct Slot {
    /// The stream in flight, 0 for none.
    id: u32,
    /// The final response head arrived (1xx heads do not count).
    head: bool,
    status: u16,
    cache: (CacheClass, Option<CacheSource>),
    body_bytes: u64,
    /// Body bytes since `take_received`, whether the response completed or not.
    received: u64,
    /// Request body bytes queued to go out since `take_written` (the windows let them).
    written: u64,
    /// Bytes received on the stream since its last WINDOW_UPDATE.
    unacked: u32,
    send_window: i64,
    /// Request body not yet sent.
    body: Bytes,
    result: Option<Result<Response, Failure>>,
    waker: Option<Waker>,
}

/// Appends a frame header.
fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// An error code's name (RFC 9113 section 7).
fn reason(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("error code {code:#x}"), |n| (*n).to_owned())
}

/// A frame's payload without its padding.
fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], String> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload
        .split_first()
        .ok_or("a padded frame without its pad length")?;
    rest.len()
        .checked_sub(pad as usize)
        .map(|end| &rest[..end])
        .ok_or_else(|| "padding longer than its frame".to_owned())
}

impl Shared {
    fn new() -> Self {
        Shared {
            out: Vec::with_capacity(1024),
            written: 0,
            block: Vec::new(),
            encoder: Encoder::default(),
            decoder: Decoder::default(),
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
            head: HeadFields::default(),
        }
    }

    /// Queues a frame answering the server's (counted toward `MAX_QUEUED`).
    fn answer(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) {
        frame_head(&mut self.out, payload.len(), kind, flags, id);
        self.out.extend_from_slice(payload);
        self.answers += 9 + payload.len();
    }

    /// The server broke the protocol on one stream: it is reset and fails; the connection
    /// and its other streams go on.
    fn stream_error(&mut self, slot: usize, message: &str) {
        let id = self.slots[slot].id;
        self.answer(RST_STREAM, 0, id, &PROTOCOL_ERROR.to_be_bytes());
        self.complete(slot, Err((ErrorKind::Protocol, message.to_owned())));
    }

    fn wake_driver(&mut self) {
        if !self.driver_woken {
            self.driver_woken = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.active
            .binary_search_by_key(&id, |&(id, _)| id)
            .ok()
            .map(|i| self.active[i].1)
    }

    /// Opens a stream for `slot` and queues its request.
    fn open(&mut self, slot: usize, request: Request<'_>) {
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
        *s = Slot {
            id,
            send_window: self.initial_window,
            body,
            waker: s.waker.take(),
            received: s.received,
            written: s.written,
            ..Slot::default()
        };
        self.active.push((id, slot));
        if !self.slots[slot].body.is_empty() {
            self.send_body(slot);
        }
        self.wake_driver();
    }

    /// Queues as much of `slot`'s request body as the windows allow.
    fn send_body(&mut self, slot: usize) {
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

    fn flush_bodies(&mut self) {
        for slot in std::mem::take(&mut self.sending) {
            self.send_body(slot);
        }
        if !self.out.is_empty() {
            self.wake_driver();
        }
    }

    /// Ends `slot`'s stream with `result`, and lets a waiting stream open.
    fn complete(&mut self, slot: usize, result: Result<Response, Failure>) {
        self.close_stream(slot);
        let s = &mut self.slots[slot];
        s.result = Some(result);
        if let Some(w) = &s.waker {
            w.wake_by_ref();
        }
        self.free_capacity();
    }

    /// Takes `slot`'s stream out of flight; returns its id (0 if none was).
    fn close_stream(&mut self, slot: usize) -> u32 {
        let id = std::mem::take(&mut self.slots[slot].id);
        if let Ok(i) = self.active.binary_search_by_key(&id, |&(id, _)| id) {
            self.active.remove(i);
        }
        self.slots[slot].body = Bytes::new();
        self.sending.retain(|&x| x != slot);
        id
    }

    fn free_capacity(&mut self) {
        if self.active.len() < self.max_streams && !self.waiting.is_empty() {
            let slot = self.waiting.remove(0);
            if let Some(w) = &self.slots[slot].waker {
                w.wake_by_ref();
            }
        }
    }

    /// vload gave up on `slot`'s stream (its timeout): the server is told to stop.
    fn cancel(&mut self, slot: usize) {
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
    fn fail(&mut self, kind: ErrorKind, body_kind: ErrorKind, message: String) {
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
    fn violation(&mut self, message: String) {
        if self.failed.is_none() {
            let last = self.active.last().map_or(0, |&(id, _)| id);
            frame_head(&mut self.out, 8, GOAWAY, 0, 0);
            self.out.extend_from_slice(&last.to_be_bytes());
            self.out.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
        }
        self.fail(ErrorKind::Protocol, ErrorKind::Protocol, message);
    }

    /// Handles the whole frames at the start of `buf`; returns the bytes used.
    fn process(&mut self, buf: &[u8]) -> usize {
        let mut pos = 0;
        while buf.len() - pos >= 9 && self.failed.is_none() {
            let h = &buf[pos..pos + 9];
            let len = u32_at(&[0, h[0], h[1], h[2]]) as usize;
            if len > MAX_FRAME {
                self.violation(format!(
                    "a {len}-byte frame from the server, above the {MAX_FRAME} bytes vload allows"
                ));
                break;
            }
            if buf.len() - pos - 9 < len {
                break;
            }
            let (kind, flags, id) = (h[3], h[4], u32_at(&h[5..9]) & MAX_STREAM_ID);
            let payload = &buf[pos + 9..pos + 9 + len];
            pos += 9 + len;
            if let Err(message) = self.frame(kind, flags, id, payload) {
                self.violation(message);
            }
        }
        if self.answers > MAX_QUEUED {
            self.fail(
                ErrorKind::Protocol,
                ErrorKind::Protocol,
                "the server sends control frames without reading their acknowledgements".into(),
            );
        }
        pos
    }

    fn frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
        if self.partial.is_some() && kind != CONTINUATION {
            return Err("a frame other than CONTINUATION inside a header block".into());
        }
        let needs_stream = matches!(kind, DATA | HEADERS | RST_STREAM | CONTINUATION);
        if needs_stream && id == 0 {
            return Err(format!("a frame of type {kind} on stream 0"));
        }
        match kind {
            DATA => self.data(flags, id, payload)?,
            HEADERS => {
                let mut block = unpad(flags, payload)?;
                if flags & PRIORITY_FLAG != 0 {
                    block = block
                        .get(5..)
                        .ok_or("a HEADERS frame too short for its priority")?;
                }
                let end_stream = flags & END_STREAM != 0;
                if flags & END_HEADERS != 0 {
                    self.headers(id, block, end_stream)?;
                } else {
                    self.partial = Some((id, end_stream));
                    self.partial_block.clear();
                    self.partial_block.extend_from_slice(block);
                }
            }
            CONTINUATION => {
                let Some((stream, end_stream)) = self.partial else {
                    return Err("CONTINUATION without HEADERS".into());
                };
                if stream != id {
                    return Err("CONTINUATION of another stream's header block".into());
                }
                self.partial_block.extend_from_slice(payload);
                if self.partial_block.len() > MAX_BLOCK {
                    return Err(format!("a header block above {MAX_BLOCK} bytes"));
                }
                if flags & END_HEADERS != 0 {
                    self.partial = None;
                    let block = std::mem::take(&mut self.partial_block);
                    let done = self.headers(id, &block, end_stream);
                    self.partial_block = block;
                    done?;
                }
            }
            RST_STREAM => {
                if payload.len() != 4 {
                    return Err("an RST_STREAM frame not 4 bytes long".into());
                }
                if let Some(slot) = self.find(id) {
                    let message =
                        format!("the server reset the stream ({})", reason(u32_at(payload)));
                    self.complete(slot, Err((ErrorKind::StreamReset, message)));
                }
            }
            SETTINGS => self.settings(flags, id, payload)?,
            PUSH_PROMISE => return Err("PUSH_PROMISE, though vload disabled server push".into()),
            PING => {
                if payload.len() != 8 || id != 0 {
                    return Err("a PING frame not 8 bytes long, or on a stream".into());
                }
                if flags & ACK == 0 {
                    self.answer(PING, ACK, 0, payload);
                }
            }
            GOAWAY => {
                if payload.len() < 8 || id != 0 {
                    return Err("a GOAWAY frame shorter than 8 bytes, or on a stream".into());
                }
                self.goaway(
                    u32_at(payload) & MAX_STREAM_ID,
                    u32_at(&payload[4..]),
                    &payload[8..],
                );
            }
            WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err("a WINDOW_UPDATE frame not 4 bytes long".into());
                }
                let increment = i64::from(u32_at(payload) & MAX_STREAM_ID);
                if id == 0 {
                    self.send_window += increment;
                } else if let Some(slot) = self.find(id) {
                    self.slots[slot].send_window += increment;
                }
                self.flush_bodies();
            }
            // PRIORITY, and frame types this client does not know, are ignored (RFC 9113 4.1).
            _ => {}
        }
        Ok(())
    }

    fn data(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
        let data = unpad(flags, payload)?;
        let len = payload.len() as u32;
        // The connection's window counts every DATA frame, also those of cancelled streams.
        self.unacked += len;
        if self.unacked >= WINDOW / 2 {
            self.answer(WINDOW_UPDATE, 0, 0, &self.unacked.to_be_bytes());
            self.unacked = 0;
        }
        let Some(slot) = self.find(id) else {
            return Ok(());
        };
        let s = &mut self.slots[slot];
        if !s.head {
            self.stream_error(slot, "DATA before the response head");
            return Ok(());
        }
        s.body_bytes += data.len() as u64;
        s.received += data.len() as u64;
        s.unacked += len;
        if flags & END_STREAM != 0 {
            self.finish(slot);
        } else if s.unacked >= WINDOW / 2 {
            let unacked = std::mem::take(&mut s.unacked);
            self.answer(WINDOW_UPDATE, 0, id, &unacked.to_be_bytes());
        }
        Ok(())
    }

    fn finish(&mut self, slot: usize) {
        let s = &self.slots[slot];
        let response = Response {
            status: s.status,
            body_bytes: s.body_bytes,
            cache: s.cache,
            close: false,
        };
        self.complete(slot, Ok(response));
    }

    fn headers(&mut self, id: u32, block: &[u8], end_stream: bool) -> Result<(), String> {
        // Decoded whatever the stream: the server's table changes with every block.
        let Shared { decoder, head, .. } = self;
        head.status = None;
        head.varnish.seen = false;
        head.x_cache.seen = false;
        head.age.seen = false;
        let wanted = |n: &[u8]| matches!(n, b":status" | b"x-varnish" | b"x-cache" | b"age");
        decoder
            .decode(block, wanted, |name, value| match name {
                b":status" => {
                    head.status = std::str::from_utf8(value)
                        .ok()
                        .filter(|v| v.len() == 3)
                        .and_then(|v| v.parse().ok());
                }
                b"x-varnish" => head.varnish.set(value),
                b"x-cache" => head.x_cache.set(value),
                _ => head.age.set(value),
            })
            .map_err(|e| format!("the server's header block does not decode (HPACK: {})", e.0))?;
        let Some(slot) = self.find(id) else {
            return Ok(());
        };
        let s = &mut self.slots[slot];
        if s.head {
            // Trailers.
            if end_stream {
                self.finish(slot);
            }
            return Ok(());
        }
        let Some(status) = self.head.status.filter(|s| (100..600).contains(s)) else {
            self.stream_error(slot, "a response head without a valid :status");
            return Ok(());
        };
        if status < 200 {
            // Informational: the final head follows, unless the server ended the stream.
            if end_stream {
                self.stream_error(slot, "a stream ended by an informational (1xx) head");
            }
            return Ok(());
        }
        s.head = true;
        s.status = status;
        let h = &self.head;
        s.cache = crate::cache::decide(h.varnish.get(), h.x_cache.get(), h.age.get());
        if end_stream {
            self.finish(slot);
        }
        Ok(())
    }

    fn settings(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
        if id != 0 {
            return Err("SETTINGS on a stream".into());
        }
        if flags & ACK != 0 {
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err("a SETTINGS frame whose length is not a multiple of 6".into());
        }
        for setting in payload.chunks_exact(6) {
            let value = u32_at(&setting[2..]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                1 => self.encoder.set_max(value as usize),
                3 => {
                    self.max_streams = value as usize;
                    for _ in 0..self.waiting.len() {
                        self.free_capacity();
                    }
                }
                4 => {
                    if value > MAX_STREAM_ID {
                        return Err(format!(
                            "SETTINGS_INITIAL_WINDOW_SIZE {value}, above 2^31 - 1"
                        ));
                    }
                    let delta = i64::from(value) - self.initial_window;
                    self.initial_window = i64::from(value);
                    for &(_, slot) in &self.active {
                        self.slots[slot].send_window += delta;
                    }
                    self.flush_bodies();
                }
                5 => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(format!(
                            "SETTINGS_MAX_FRAME_SIZE {value}, outside 2^14 to 2^24 - 1"
                        ));
                    }
                    self.max_send_frame = value as usize;
                }
                _ => {}
            }
        }
        self.answer(SETTINGS, ACK, 0, &[]);
        Ok(())
    }

    fn goaway(&mut self, last: u32, code: u32, debug: &[u8]) {
        self.going_away = true;
        let debug = String::from_utf8_lossy(debug);
        let debug = debug.trim();
        let message = if debug.is_empty() {
            format!("the server sent GOAWAY ({}) before answering", reason(code))
        } else {
            format!(
                "the server sent GOAWAY ({}: {debug}) before answering",
                reason(code)
            )
        };
        let refused: Vec<usize> = self
            .active
            .iter()
            .filter(|&&(id, _)| id > last)
            .map(|&(_, slot)| slot)
            .collect();
        for slot in refused {
            self.complete(slot, Err((ErrorKind::Goaway, message.clone())));
        }
        // Idle handles hear of it, to reconnect.
        for s in &self.slots {
            if let Some(w) = &s.waker {
                w.wake_by_ref();
            }
        }
    }
}

/// Headers HTTP/2 forbids (RFC 9113 section 8.2.2), dropped as hyper drops them.
fn is_connection_specific(name: &[u8], value: &[u8]) -> bool {
    match name {
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        | b"host" => true,
        b"te" => !value.eq_ignore_ascii_case(b"trailers"),
        _ => false,
    }
}

impl H2Conn {
    /// Speaks HTTP/2 on `io`: the preface and vload's SETTINGS, then the server's SETTINGS,
    /// which must come first (anything else is not an HTTP/2 server). Starts the driver.
    pub(crate) async fn handshake(
        mut io: Io,
        addr: std::net::SocketAddr,
    ) -> Result<H2Conn, Failure> {
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
        shared.slots.push(Slot::default());
        shared.handles = 1;
        let shared = Rc::new(RefCell::new(shared));
        let driver = Driver {
            shared: shared.clone(),
            io,
            buf,
            len,
            start: 9 + frame_len,
        };
        tokio::task::spawn_local(driver);
        Ok(H2Conn { shared, slot: 0 })
    }

    /// Another stream on the same connection.
    pub(crate) fn stream(&self) -> H2Conn {
        let mut s = self.shared.borrow_mut();
        s.slots.push(Slot::default());
        s.handles += 1;
        H2Conn {
            shared: self.shared.clone(),
            slot: s.slots.len() - 1,
        }
    }

    /// False once the connection failed or the server sent GOAWAY (or the stream ids ran out).
    pub(crate) fn is_open(&self) -> bool {
        let s = self.shared.borrow();
        s.failed.is_none() && !s.going_away && s.next_id <= MAX_STREAM_ID
    }

    /// While idle: asks to be woken when the connection closes.
    pub(crate) fn poll_closed(&self, cx: &mut Context<'_>) {
        let mut s = self.shared.borrow_mut();
        let slot = &mut s.slots[self.slot];
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
    }

    pub(crate) fn take_received(&self) -> u64 {
        std::mem::take(&mut self.shared.borrow_mut().slots[self.slot].received)
    }

    /// Request body bytes the windows let out since the last call.
    pub(crate) fn take_written(&self) -> u64 {
        std::mem::take(&mut self.shared.borrow_mut().slots[self.slot].written)
    }

    /// Sends `request` on a new stream and waits for the whole response.
    pub(crate) fn exchange<'a>(&'a self, request: Request<'a>) -> Exchange<'a> {
        Exchange {
            conn: self,
            request,
            phase: Phase::Start,
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
enum Phase {
    Start,
    /// Waiting for a stream the server allows.
    Queued,
    Sent,
    Done,
}

/// [`H2Conn::exchange`]'s future; dropped before its response (a timeout), it resets the
/// stream.
pub(crate) struct Exchange<'a> {
    conn: &'a H2Conn,
    request: Request<'a>,
    phase: Phase,
}

impl Future for Exchange<'_> {
    type Output = Result<Response, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let slot = this.conn.slot;
        let mut s = this.conn.shared.borrow_mut();
        if matches!(this.phase, Phase::Start | Phase::Queued) {
            if let Some(failure) = &s.failed {
                this.phase = Phase::Done;
                return Poll::Ready(Err(failure.clone()));
            }
            if s.going_away || s.next_id > MAX_STREAM_ID {
                this.phase = Phase::Done;
                let message = "the connection takes no new streams (GOAWAY)".to_owned();
                return Poll::Ready(Err((ErrorKind::Goaway, message)));
            }
            if s.active.len() >= s.max_streams {
                if this.phase == Phase::Start || !s.waiting.contains(&slot) {
                    s.waiting.push(slot);
                }
                this.phase = Phase::Queued;
                s.slots[slot].waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            s.waiting.retain(|&x| x != slot);
            s.slots[slot].result = None;
            s.open(slot, this.request);
            this.phase = Phase::Sent;
        }
        if this.phase != Phase::Sent {
            return Poll::Pending;
        }
        let s = &mut *s;
        let slot = &mut s.slots[slot];
        if let Some(result) = slot.result.take() {
            this.phase = Phase::Done;
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
            Phase::Sent => {
                s.slots[slot].result = None;
                s.cancel(slot);
            }
            Phase::Queued => s.waiting.retain(|&x| x != slot),
            Phase::Start | Phase::Done => {}
        }
    }
}

/// The connection's task: writes what the streams queued, reads and dispatches frames.
struct Driver {
    shared: Rc<RefCell<Shared>>,
    io: Io,
    buf: Vec<u8>,
    /// Bytes in `buf`, of which `buf[..start]` are handled.
    len: usize,
    start: usize,
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut s = this.shared.borrow_mut();
        s.driver_woken = false;
        if !s.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.driver = Some(cx.waker().clone());
        }
        loop {
            if s.handles == 0 {
                return Poll::Ready(());
            }
            // Write everything queued.
            while s.written < s.out.len() {
                match Pin::new(&mut this.io).poll_write(cx, &s.out[s.written..]) {
                    Poll::Ready(Ok(0)) => {
                        let message = "the connection closed while writing".to_owned();
                        s.fail(ErrorKind::Reset, ErrorKind::Body, message);
                        return Poll::Ready(());
                    }
                    Poll::Ready(Ok(n)) => s.written += n,
                    Poll::Ready(Err(e)) => {
                        let message = format!("writing to the server: {e}");
                        s.fail(io_kind(&e, false), io_kind(&e, true), message);
                        return Poll::Ready(());
                    }
                    Poll::Pending => break,
                }
            }
            if s.written == s.out.len() {
                s.out.clear();
                s.written = 0;
                s.answers = 0;
                if let Io::Tls(_) = this.io {
                    // rustls may hold records back until flushed.
                    let _ = Pin::new(&mut this.io).poll_flush(cx);
                }
            }
            if s.failed.is_some() {
                // A GOAWAY of vload's went out (or could not): the connection is done.
                return Poll::Ready(());
            }
            // Answers queued from here on want another pass of the write above.
            let before = s.out.len();
            // Frames left over from the handshake, or a partial frame (only its length is
            // looked at again).
            if this.start < this.len {
                this.start += s.process(&this.buf[this.start..this.len]);
            }
            // Read and handle everything that arrived.
            loop {
                if this.len == this.buf.len() {
                    if this.start > 0 {
                        this.buf.copy_within(this.start..this.len, 0);
                        this.len -= this.start;
                        this.start = 0;
                    } else {
                        let grown = (this.buf.len() * 2).clamp(MAX_FRAME + 9, MAX_BUFFER);
                        this.buf.resize(grown, 0);
                    }
                }
                let mut read = ReadBuf::new(&mut this.buf[this.len..]);
                match Pin::new(&mut this.io).poll_read(cx, &mut read) {
                    Poll::Pending => break,
                    Poll::Ready(Err(e)) => {
                        let message = format!("reading from the server: {e}");
                        s.fail(io_kind(&e, false), io_kind(&e, true), message);
                        return Poll::Ready(());
                    }
                    Poll::Ready(Ok(())) if read.filled().is_empty() => {
                        let message = "the server closed the connection".to_owned();
                        s.fail(ErrorKind::Reset, ErrorKind::Body, message);
                        return Poll::Ready(());
                    }
                    Poll::Ready(Ok(())) => {
                        this.len += read.filled().len();
                        this.start += s.process(&this.buf[this.start..this.len]);
                        if this.start == this.len {
                            (this.start, this.len) = (0, 0);
                        }
                        if s.failed.is_some() {
                            break;
                        }
                    }
                }
            }
            if s.out.len() == before && s.failed.is_none() {
                return Poll::Pending;
            }
        }
    }
}

/// The frame reader, driven by the property tests in `fuzz.rs` without a socket.
#[cfg(test)]
pub(crate) mod fuzzing {
    use super::{Bytes, Failure, Response, Shared, Slot};

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
                shared.slots.push(Slot {
                    id,
                    send_window: 0,
                    body: Bytes::from(vec![b'b'; 64 * 1024]),
                    ..Slot::default()
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
        shared.slots.push(Slot {
            id: 1,
            send_window: i64::from(MAX_STREAM_ID),
            body: Bytes::from(vec![b'b'; 3 << 20]),
            ..Slot::default()
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

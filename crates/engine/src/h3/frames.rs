//! HTTP/3's frames (RFC 9114, section 7) on one QUIC stream: a request written as one
//! HEADERS frame (and a DATA frame for its body), a response read frame by frame from
//! quinn's chunks without copying its body.

use bytes::{Buf as _, Bytes};
use quinn::{ReadError, RecvStream};

use super::qpack::{FieldEncoder, Wanted};
use crate::h2::HeadFields;
use crate::workload::Request;

pub(super) const DATA: u64 = 0x00;
pub(super) const HEADERS: u64 = 0x01;
pub(super) const SETTINGS: u64 = 0x04;
pub(super) const GOAWAY: u64 = 0x07;

/// The largest response field section vload reads (as its HTTP/2 client's header block).
const MAX_FIELDS: u64 = crate::h2::hpack::MAX_BLOCK as u64;

/// Appends a QUIC variable-length integer (RFC 9000, 16).
pub(super) fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// `request`'s HEADERS frame into `out` (its field section built in `block`), and the DATA
/// frame's header when it has a body; the body itself is returned, to be written as it is.
pub(super) fn encode_request(
    request: &Request<'_>,
    block: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Bytes {
    block.clear();
    FieldEncoder::begin(block);
    FieldEncoder::field(b":method", request.method().as_str().as_bytes(), block);
    FieldEncoder::field(b":scheme", request.scheme().as_bytes(), block);
    FieldEncoder::field(b":authority", request.host().as_bytes(), block);
    FieldEncoder::field(b":path", request.path().as_bytes(), block);
    let body = request.body();
    let mut has_length = false;
    for (name, value) in request.headers() {
        let name = name.as_str().as_bytes();
        if crate::h2::is_connection_specific(name, value.as_bytes()) {
            continue;
        }
        has_length |= name == b"content-length";
        FieldEncoder::field(name, value.as_bytes(), block);
    }
    if !has_length && (!body.is_empty() || request.expects_body()) {
        FieldEncoder::field(b"content-length", body.len().to_string().as_bytes(), block);
    }
    out.clear();
    put_varint(out, HEADERS);
    put_varint(out, block.len() as u64);
    out.extend_from_slice(block);
    if !body.is_empty() {
        put_varint(out, DATA);
        put_varint(out, body.len() as u64);
    }
    body
}

/// Why a stream's frames could not be read.
#[derive(Debug)]
pub(super) enum ReadFail {
    /// QUIC's word: the stream reset, the connection lost, early data refused.
    Quic(ReadError),
    /// The server broke HTTP/3's rules: the connection error's code and what was wrong.
    Protocol(u64, &'static str),
}

impl From<ReadError> for ReadFail {
    fn from(e: ReadError) -> Self {
        ReadFail::Quic(e)
    }
}

pub(super) const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub(super) const H3_FRAME_ERROR: u64 = 0x106;
pub(super) const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub(super) const H3_ID_ERROR: u64 = 0x108;
pub(super) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// A stream's bytes as quinn hands them over, read as frames.
pub(super) struct Reader<'a> {
    pub(super) recv: &'a mut RecvStream,
    chunk: Bytes,
    /// Every byte read off the stream (frame headers, fields and bodies) is added here.
    wire: Option<&'a std::cell::Cell<u64>>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(recv: &'a mut RecvStream) -> Self {
        Reader {
            recv,
            chunk: Bytes::new(),
            wire: None,
        }
    }

    /// A reader that adds every byte it reads off the stream to `wire`.
    pub(super) fn counting(recv: &'a mut RecvStream, wire: &'a std::cell::Cell<u64>) -> Self {
        Reader {
            wire: Some(wire),
            ..Reader::new(recv)
        }
    }

    fn count(&self, n: usize) {
        if let Some(wire) = self.wire {
            wire.set(wire.get() + n as u64);
        }
    }

    /// Whether bytes are at hand; `false` at the stream's end.
    async fn fill(&mut self) -> Result<bool, ReadError> {
        while self.chunk.is_empty() {
            match self.recv.read_chunk(usize::MAX, true).await? {
                Some(chunk) => {
                    self.count(chunk.bytes.len());
                    self.chunk = chunk.bytes;
                }
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// A variable-length integer; `None` at the stream's end before its first byte.
    pub(super) async fn varint(&mut self) -> Result<Option<u64>, ReadFail> {
        if !self.fill().await? {
            return Ok(None);
        }
        let first = self.chunk.get_u8();
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for _ in 1..len {
            if !self.fill().await? {
                return Err(ReadFail::Protocol(
                    H3_FRAME_ERROR,
                    "a stream ends inside a number",
                ));
            }
            v = v << 8 | u64::from(self.chunk.get_u8());
        }
        Ok(Some(v))
    }

    /// A frame's type and length; `None` at the stream's end between frames.
    pub(super) async fn frame(&mut self) -> Result<Option<(u64, u64)>, ReadFail> {
        let Some(kind) = self.varint().await? else {
            return Ok(None);
        };
        match self.varint().await? {
            Some(len) => Ok(Some((kind, len))),
            None => Err(ReadFail::Protocol(
                H3_FRAME_ERROR,
                "a stream ends inside a frame header",
            )),
        }
    }

    /// The next `len` bytes whole: a field section.
    async fn payload(&mut self, len: u64) -> Result<Bytes, ReadFail> {
        if len > MAX_FIELDS {
            return Err(ReadFail::Protocol(
                H3_EXCESSIVE_LOAD,
                "a field section above 64 KiB",
            ));
        }
        let len = len as usize;
        if self.chunk.len() >= len {
            return Ok(self.chunk.split_to(len));
        }
        let mut whole = Vec::with_capacity(len);
        while whole.len() < len {
            if !self.fill().await? {
                return Err(ReadFail::Protocol(
                    H3_FRAME_ERROR,
                    "a stream ends inside a frame",
                ));
            }
            let n = (len - whole.len()).min(self.chunk.len());
            whole.extend_from_slice(&self.chunk.split_to(n));
        }
        Ok(whole.into())
    }

    /// Passes over the next `len` bytes, telling `seen` each piece's size as it arrives.
    pub(super) async fn skip(
        &mut self,
        mut len: u64,
        mut seen: impl FnMut(u64),
    ) -> Result<(), ReadFail> {
        while len > 0 {
            if !self.fill().await? {
                return Err(ReadFail::Protocol(
                    H3_FRAME_ERROR,
                    "a stream ends inside a frame",
                ));
            }
            let n = len.min(self.chunk.len() as u64);
            self.chunk.advance(n as usize);
            len -= n;
            seen(n);
        }
        Ok(())
    }

    /// Reads to the stream's end, keeping nothing.
    pub(super) async fn drain(&mut self) {
        while let Ok(Some(chunk)) = self.recv.read_chunk(usize::MAX, true).await {
            self.count(chunk.bytes.len());
        }
    }

    /// The response's head: interim (1xx) heads passed over, the final one's fields kept in
    /// `head`. Frames of unknown types are passed over, as RFC 9114 (9) asks.
    pub(super) async fn head(
        &mut self,
        head: &mut HeadFields,
        scratch: &mut Vec<u8>,
    ) -> Result<(), ReadFail> {
        static WANTED: Wanted = Wanted::new(&HeadFields::NAMES);
        loop {
            let Some((kind, len)) = self.frame().await? else {
                return Err(ReadFail::Protocol(
                    H3_FRAME_ERROR,
                    "the stream ended without a response",
                ));
            };
            if kind != HEADERS {
                unexpected(kind, "before the response's HEADERS")?;
                self.skip(len, |_| ()).await?;
                continue;
            }
            let block = self.payload(len).await?;
            head.clear();
            super::qpack::decode(&block, scratch, &WANTED, |n, v| head.keep(n, v))
                .map_err(|e| ReadFail::Protocol(QPACK_DECOMPRESSION_FAILED, e.0))?;
            match head.status {
                Some(100..=199) => continue,
                Some(_) => return Ok(()),
                None => {
                    return Err(ReadFail::Protocol(
                        H3_FRAME_ERROR,
                        "a response head without a valid :status",
                    ));
                }
            }
        }
    }

    /// The response's body, counted as it arrives (`seen`), trailers passed over; ends
    /// with the stream.
    pub(super) async fn body(&mut self, mut seen: impl FnMut(u64)) -> Result<(), ReadFail> {
        while let Some((kind, len)) = self.frame().await? {
            match kind {
                DATA => self.skip(len, &mut seen).await?,
                HEADERS => {
                    self.payload(len).await?;
                }
                _ => {
                    unexpected(kind, "in a response")?;
                    self.skip(len, |_| ()).await?;
                }
            }
        }
        Ok(())
    }
}

/// The frames a server may not send on a request stream (RFC 9114, 7.2): an error; DATA
/// before the head too. Other types are extensions, passed over.
fn unexpected(kind: u64, place: &'static str) -> Result<(), ReadFail> {
    match kind {
        DATA if place.starts_with("before") => Err(ReadFail::Protocol(
            H3_FRAME_UNEXPECTED,
            "DATA before the response's HEADERS",
        )),
        0x05 => Err(ReadFail::Protocol(
            H3_ID_ERROR,
            "a PUSH_PROMISE vload never allowed",
        )),
        0x02 | 0x03 | 0x04 | 0x06 | 0x07 | 0x08 | 0x09 | 0x0d => Err(ReadFail::Protocol(
            H3_FRAME_UNEXPECTED,
            "a control frame on a request stream",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::put_varint;

    #[test]
    fn varints_take_the_shortest_form() {
        let cases: [(u64, &[u8]); 4] = [
            (37, &[0x25]),
            (15_293, &[0x7b, 0xbd]),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d]),
            (
                151_288_809_941_952_652,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            ),
        ];
        for (v, want) in cases {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, want, "{v}");
        }
    }
}

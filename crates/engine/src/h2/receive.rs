//! The server's frames, read into a connection's state.

use vload_schema::ErrorKind;

use super::frames::*;
use super::hpack::MAX_BLOCK;
use super::state::Shared;
use crate::response::Response;

impl Shared {
    /// Handles the whole frames at the start of `buf`; returns the bytes used.
    pub(super) fn process(&mut self, buf: &[u8]) -> usize {
        // A response whose head and end come in one read has no transfer of its own: its
        // first byte is taken when it completes (see `finish`).
        self.read_at = None;
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

    pub(super) fn frame(
        &mut self,
        kind: u8,
        flags: u8,
        id: u32,
        payload: &[u8],
    ) -> Result<(), String> {
        if self.partial.is_some() && kind != CONTINUATION {
            return Err("a frame other than CONTINUATION inside a header block".into());
        }
        let needs_stream = matches!(kind, DATA | HEADERS | RST_STREAM | CONTINUATION);
        if needs_stream && id == 0 {
            return Err(format!("a frame of type {kind} on stream 0"));
        }
        match kind {
            DATA => self.data(flags, id, payload)?,
            HEADERS | CONTINUATION => self.header_frame(kind, flags, id, payload)?,
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

    /// A HEADERS frame, or a CONTINUATION of its block: the block is decoded once whole.
    fn header_frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
        if kind == HEADERS {
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
            return Ok(());
        }
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
        Ok(())
    }

    pub(super) fn data(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
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

    pub(super) fn finish(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if s.first_byte.is_some() && s.first_byte == self.read_at {
            // Head and end in one read: no transfer of its own.
            s.first_byte = None;
        }
        let response = Response {
            status: s.status,
            body_bytes: s.body_bytes,
            cache: s.cache,
            close: false,
            origin: s.origin,
        };
        self.complete(slot, Ok(response));
    }

    pub(super) fn headers(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
    ) -> Result<(), String> {
        // Decoded whatever the stream: the server's table changes with every block.
        self.decode_head(block)?;
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
        s.cache = self.head.cache();
        s.origin = self.head.origin;
        if end_stream {
            self.finish(slot);
        } else {
            s.first_byte = Some(*self.read_at.get_or_insert_with(std::time::Instant::now));
        }
        Ok(())
    }

    /// Decodes a header block into [`Shared::head`]: the fields vload keeps of it.
    fn decode_head(&mut self, block: &[u8]) -> Result<(), String> {
        let Shared { decoder, head, .. } = self;
        head.clear();
        decoder
            .decode(block, crate::h2::HeadFields::wanted, |name, value| {
                head.keep(name, value)
            })
            .map_err(|e| format!("the server's header block does not decode (HPACK: {})", e.0))?;
        Ok(())
    }

    pub(super) fn settings(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), String> {
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

    pub(super) fn goaway(&mut self, last: u32, code: u32, debug: &[u8]) {
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

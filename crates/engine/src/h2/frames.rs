//! HTTP/2 framing (RFC 9113 section 4 and 6): frame types, flags, error codes and limits.

pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(super) const DATA: u8 = 0;
pub(super) const HEADERS: u8 = 1;
pub(super) const RST_STREAM: u8 = 3;
pub(super) const SETTINGS: u8 = 4;
pub(super) const PUSH_PROMISE: u8 = 5;
pub(super) const PING: u8 = 6;
pub(super) const GOAWAY: u8 = 7;
pub(super) const WINDOW_UPDATE: u8 = 8;
pub(super) const CONTINUATION: u8 = 9;

pub(super) const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY_FLAG: u8 = 0x20;

/// RST_STREAM's code for a request vload gave up on (its timeout).
pub(super) const CANCEL: u32 = 0x8;
pub(super) const PROTOCOL_ERROR: u32 = 0x1;

/// The largest frame vload accepts: SETTINGS_MAX_FRAME_SIZE left at its default.
pub(super) const MAX_FRAME: usize = 16_384;
/// vload's receive windows, each stream's and the connection's, as h2load's defaults: the
/// server is never held back by the client.
pub(super) const WINDOW: u32 = (1 << 30) - 1;
pub(super) const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// The read buffer's starting size; a frame larger than it, or a read that fills it, grows
/// it (to at most `MAX_BUFFER`).
pub(super) const BUFFER: usize = 4 * 1024;
pub(super) const MAX_BUFFER: usize = 64 * 1024;
/// Output the server makes vload queue without reading it (acknowledgements of its PINGs
/// and SETTINGS): past this the connection is given up rather than grown without bound.
pub(super) const MAX_QUEUED: usize = 1 << 20;

/// Appends a frame header.
pub(super) fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
}

pub(super) fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// An error code's name (RFC 9113 section 7).
pub(super) fn reason(code: u32) -> String {
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
pub(super) fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], String> {
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

//! HPACK (RFC 7541) for vload's lean HTTP/2 client: an encoder that indexes what it sends,
//! so a request repeated on a connection becomes a few index bytes, and a decoder that keeps
//! the server's dynamic table but hands over only the fields the caller asks for (status and
//! cache headers). A value nobody asked for is skipped, not Huffman-decoded, unless the
//! server indexes it (its decoded length then sizes the table).

use std::collections::VecDeque;
use std::sync::OnceLock;

/// The dynamic table size vload's decoder allows (SETTINGS_HEADER_TABLE_SIZE), the default.
pub(crate) const TABLE_SIZE: usize = 4096;
/// A header block larger than this, across its frames, is refused.
pub(crate) const MAX_BLOCK: usize = 64 * 1024;

/// The static table (RFC 7541, Appendix A), index 1 first.
pub(crate) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The Huffman code (RFC 7541, Appendix B): (code, length in bits) of each symbol, EOS
/// (256) last. Taken from the h2 crate's generated table (MIT).
#[rustfmt::skip]
const HUFFMAN: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28),
    (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24),
    (0x3ffffffc, 30), (0xfffffe9, 28), (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28),
    (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), (0xffffff4, 28),
    (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
    (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), (0x3fa, 10), (0x3fb, 10), (0xf9, 8),
    (0x7fb, 11), (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6), (0x0, 5), (0x1, 5), (0x2, 5),
    (0x19, 6), (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7),
    (0xfb, 8), (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13), (0x21, 6),
    (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7), (0x63, 7), (0x64, 7),
    (0x65, 7), (0x66, 7), (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7), (0x6b, 7), (0x6c, 7),
    (0x6d, 7), (0x6e, 7), (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
    (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5), (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6),
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7), (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5),
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13),
    (0xffffffc, 28), (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23), (0x3fffd6, 22),
    (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23), (0x7fffdd, 23), (0x7fffde, 23),
    (0xffffeb, 24), (0x7fffdf, 23), (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22),
    (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23),
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23), (0x3fffd9, 22),
    (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24), (0x3fffda, 22), (0x1fffdd, 21),
    (0xfffe9, 20), (0x3fffdb, 22), (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23),
    (0x1fffde, 21), (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24),
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23), (0x1fffe0, 21),
    (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21), (0x7fffed, 23), (0x3fffe1, 22),
    (0x7fffee, 23), (0x7fffef, 23), (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22),
    (0x3fffe4, 22), (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), (0x3fffe7, 22),
    (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25), (0x3ffffe2, 26), (0x3ffffe3, 26),
    (0x3ffffe4, 26), (0x7ffffde, 27), (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24),
    (0x1ffffed, 25), (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27),
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24), (0x1fffe4, 21),
    (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), (0xffffffd, 28), (0x7ffffe3, 27),
    (0x7ffffe4, 27), (0x7ffffe5, 27), (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20),
    (0x1fffe6, 21), (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23),
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25), (0xfffff4, 24),
    (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23), (0x3ffffeb, 26), (0x7ffffe6, 27),
    (0x3ffffec, 26), (0x3ffffed, 26), (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27),
    (0x7ffffea, 27), (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26), (0x3fffffff, 30),
];

/// What went wrong in a header block: the connection's COMPRESSION_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HpackError(pub(crate) &'static str);

/// One step of the Huffman decoder: from a state (a node of the code tree), four bits lead
/// to `next`, perhaps completing a symbol on the way (at most one: no code is shorter than
/// five bits).
#[derive(Clone, Copy, Default)]
struct HuffmanStep {
    next: u8,
    /// The symbol completed, or `NONE`; `FAIL` for EOS, which must not appear in a string.
    symbol: u16,
}

const NONE: u16 = 0x100;
const FAIL: u16 = 0x200;

/// The decoder's tables, built once from the code: 256 states (the tree's inner nodes),
/// 16 steps each, and which states may end a string (padding is up to seven 1 bits).
struct Huffman {
    steps: Vec<[HuffmanStep; 16]>,
    accepting: [bool; 256],
}

fn huffman() -> &'static Huffman {
    static TABLES: OnceLock<Huffman> = OnceLock::new();
    TABLES.get_or_init(|| {
        // The tree: inner nodes by index (0 is the root), children either an inner node or
        // a leaf (`LEAF | symbol`).
        const LEAF: u16 = 0x8000;
        let mut children: Vec<[u16; 2]> = vec![[0, 0]];
        for (symbol, &(code, len)) in HUFFMAN.iter().enumerate() {
            let mut node = 0usize;
            for bit in (0..len).rev() {
                let b = ((code >> bit) & 1) as usize;
                if bit == 0 {
                    children[node][b] = LEAF | symbol as u16;
                } else {
                    if children[node][b] == 0 {
                        children.push([0, 0]);
                        children[node][b] = (children.len() - 1) as u16;
                    }
                    node = children[node][b] as usize;
                }
            }
        }
        debug_assert_eq!(children.len(), 256);
        // Padding: the states reached from the root by up to seven 1 bits.
        let mut accepting = [false; 256];
        let mut node = 0usize;
        accepting[0] = true;
        for _ in 0..7 {
            node = children[node][1] as usize;
            accepting[node] = true;
        }
        let steps = (0..children.len())
            .map(|state| {
                let mut row = [HuffmanStep::default(); 16];
                for (nibble, step) in row.iter_mut().enumerate() {
                    let (mut node, mut symbol) = (state, NONE);
                    for bit in (0..4).rev() {
                        let child = children[node][(nibble >> bit) & 1];
                        if child & LEAF != 0 {
                            let s = child & !LEAF;
                            symbol = if s == 256 { FAIL } else { s };
                            node = 0;
                        } else {
                            node = child as usize;
                        }
                    }
                    *step = HuffmanStep {
                        next: node as u8,
                        symbol,
                    };
                }
                row
            })
            .collect();
        Huffman { steps, accepting }
    })
}

/// Appends the Huffman decoding of `input` to `out`.
pub(crate) fn huffman_decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let tables = huffman();
    let mut state = 0u8;
    for byte in input {
        for nibble in [byte >> 4, byte & 0xf] {
            let step = tables.steps[state as usize][nibble as usize];
            if step.symbol == FAIL {
                return Err(HpackError("EOS inside a Huffman string"));
            }
            if step.symbol != NONE {
                out.push(step.symbol as u8);
            }
            state = step.next;
        }
    }
    if !tables.accepting[state as usize] {
        return Err(HpackError(
            "a Huffman string's padding is not a prefix of EOS",
        ));
    }
    Ok(())
}

/// Decodes an integer with an `n`-bit prefix at the start of `input`, advancing it.
pub(crate) fn integer(input: &mut &[u8], n: u8) -> Result<usize, HpackError> {
    let (&first, rest) = input
        .split_first()
        .ok_or(HpackError("a header block ends inside an integer"))?;
    *input = rest;
    let max = (1usize << n) - 1;
    let mut value = first as usize & max;
    if value < max {
        return Ok(value);
    }
    // At most four continuation bytes: 2^28, far above any length or index vload accepts.
    for shift in (0..28).step_by(7) {
        let (&b, rest) = input
            .split_first()
            .ok_or(HpackError("a header block ends inside an integer"))?;
        *input = rest;
        value += ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(HpackError("an integer too large"))
}

/// Splits a string literal off `input`: its bytes and whether they are Huffman-coded.
pub(crate) fn string<'a>(input: &mut &'a [u8]) -> Result<(&'a [u8], bool), HpackError> {
    let huffman = input.first().is_some_and(|b| b & 0x80 != 0);
    let len = integer(input, 7)?;
    if len > input.len() {
        return Err(HpackError("a string longer than its header block"));
    }
    let (s, rest) = input.split_at(len);
    *input = rest;
    Ok((s, huffman))
}

/// A string literal's text: `raw` itself, or its decoding into `scratch`.
pub(crate) fn text<'a>(
    (raw, huffman): (&'a [u8], bool),
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], HpackError> {
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    huffman_decode(raw, scratch)?;
    Ok(scratch)
}

/// A field's name and value, as a table keeps them.
type Field = (Box<[u8]>, Box<[u8]>);

/// A dynamic table: newest entry first, sized as RFC 7541 section 4.1 says.
#[derive(Debug, Default)]
struct Table {
    entries: VecDeque<Field>,
    size: usize,
    max: usize,
}

impl Table {
    fn with_max(max: usize) -> Self {
        Table {
            max,
            ..Table::default()
        }
    }

    fn entry_size(name: &[u8], value: &[u8]) -> usize {
        name.len() + value.len() + 32
    }

    fn insert(&mut self, name: Box<[u8]>, value: Box<[u8]>) {
        let size = Table::entry_size(&name, &value);
        // An entry larger than the table empties it and is not added.
        self.evict(self.max.saturating_sub(size));
        if size <= self.max {
            self.size += size;
            self.entries.push_front((name, value));
        }
    }

    fn evict(&mut self, to: usize) {
        while self.size > to {
            let Some((n, v)) = self.entries.pop_back() else {
                break;
            };
            self.size -= Table::entry_size(&n, &v);
        }
    }

    fn resize(&mut self, max: usize) {
        self.max = max;
        self.evict(max);
    }

    /// The entry at HPACK index `index` (1-61 static, then this table).
    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self
                .entries
                .get(index - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(HpackError("an index past the dynamic table")),
        }
    }
}

/// The response side: the server's dynamic table.
#[derive(Debug)]
pub(crate) struct HeaderDecoder {
    table: Table,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for HeaderDecoder {
    fn default() -> Self {
        HeaderDecoder {
            table: Table::with_max(TABLE_SIZE),
            name: Vec::new(),
            value: Vec::new(),
        }
    }
}

impl HeaderDecoder {
    /// The dynamic table's size, as RFC 7541 counts it.
    #[cfg(test)]
    pub(crate) fn table_size(&self) -> usize {
        self.table.size
    }

    /// Decodes a whole header block, calling `found` with each field whose name `wanted`
    /// accepts (names are lowercase, as HTTP/2 requires).
    pub(crate) fn decode(
        &mut self,
        mut block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        mut found: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                // Indexed field.
                let index = integer(&mut block, 7)?;
                let (name, value) = self.table.get(index)?;
                if wanted(name) {
                    found(name, value);
                }
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update, at most what vload allowed.
                let max = integer(&mut block, 5)?;
                if max > TABLE_SIZE {
                    return Err(HpackError("a table size above SETTINGS_HEADER_TABLE_SIZE"));
                }
                self.table.resize(max);
            } else {
                // A literal: with incremental indexing (01), or without (0000) or never
                // indexed (0001).
                let indexing = first & 0x40 != 0;
                let index = integer(&mut block, if indexing { 6 } else { 4 })?;
                let name: &[u8] = if index == 0 {
                    let literal = string(&mut block)?;
                    text(literal, &mut self.name)?
                } else {
                    self.table.get(index)?.0
                };
                let raw = string(&mut block)?;
                if indexing {
                    let name: Box<[u8]> = name.into();
                    let value: Box<[u8]> = text(raw, &mut self.value)?.into();
                    if wanted(&name) {
                        found(&name, &value);
                    }
                    self.table.insert(name, value);
                } else if wanted(name) {
                    found(name, text(raw, &mut self.value)?);
                }
            }
        }
        Ok(())
    }
}

/// The request side: what vload has told the server's decoder to index.
#[derive(Debug)]
pub(crate) struct HeaderEncoder {
    table: Table,
    /// A smaller table the server asked for, to announce at the start of the next block.
    resized: Option<usize>,
}

impl Default for HeaderEncoder {
    fn default() -> Self {
        HeaderEncoder {
            table: Table::with_max(TABLE_SIZE),
            resized: None,
        }
    }
}

/// Appends an integer with an `n`-bit prefix; `flags` are the first byte's other bits.
pub(crate) fn put_integer(out: &mut Vec<u8>, flags: u8, n: u8, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

impl HeaderEncoder {
    /// The server's SETTINGS_HEADER_TABLE_SIZE: the encoder uses at most that much (and
    /// never more than the default, so it needs no more memory than that).
    pub(crate) fn set_max(&mut self, max: usize) {
        let max = max.min(TABLE_SIZE);
        if max != self.table.max {
            self.table.resize(max);
            self.resized = Some(max);
        }
    }

    /// Starts a header block: announces a table size change, if any.
    pub(crate) fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some(max) = self.resized.take() {
            put_integer(out, 0x20, 5, max);
        }
    }

    /// Appends one field. Fields already in the dynamic table become their index; others go
    /// out literally and are indexed, unless larger than a quarter of the table (a long
    /// cookie or path would only evict the fields every request repeats).
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let mut name_index = 0;
        for (i, (n, v)) in self.table.entries.iter().enumerate() {
            if **n == *name {
                if **v == *value {
                    put_integer(out, 0x80, 7, 62 + i);
                    return;
                }
                if name_index == 0 {
                    name_index = 62 + i;
                }
            }
        }
        let dynamic_name = name_index;
        for (i, (n, v)) in STATIC.iter().enumerate() {
            if *n == name {
                if *v == value {
                    put_integer(out, 0x80, 7, 1 + i);
                    return;
                }
                if name_index == dynamic_name {
                    name_index = 1 + i;
                }
            }
        }
        let index = Table::entry_size(name, value) <= self.table.max / 4;
        let (flags, n) = if index { (0x40, 6) } else { (0x00, 4) };
        put_integer(out, flags, n, name_index);
        if name_index == 0 {
            put_string(out, name);
        }
        put_string(out, value);
        if index {
            self.table.insert(name.into(), value.into());
        }
    }
}

/// Huffman-encodes `input` the way RFC 7541 section 5.2 says (padding with 1 bits).
pub(crate) fn huffman_encode(input: &[u8]) -> Vec<u8> {
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
    for &b in input {
        let (code, len) = HUFFMAN[b as usize];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(
        decoder: &mut HeaderDecoder,
        block: &[u8],
    ) -> Result<Vec<(String, String)>, HpackError> {
        let mut fields = Vec::new();
        decoder.decode(
            block,
            |_| true,
            |n, v| {
                fields.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ))
            },
        )?;
        Ok(fields)
    }

    #[test]
    fn huffman_decodes_the_rfc_example_and_every_octet() {
        let mut out = Vec::new();
        let rfc = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        huffman_decode(&rfc, &mut out).unwrap();
        assert_eq!(out, b"www.example.com");
        let all: Vec<u8> = (0..=255).collect();
        for len in [0, 1, 2, 3, 7, 64, 256] {
            let input: Vec<u8> = all
                .iter()
                .copied()
                .cycle()
                .skip(len * 7)
                .take(len)
                .collect();
            out.clear();
            huffman_decode(&huffman_encode(&input), &mut out).unwrap();
            assert_eq!(out, input);
        }
    }

    #[test]
    fn huffman_refuses_bad_padding_and_eos() {
        let mut out = Vec::new();
        // 'a' is 00011: padded with 111 it is 0x1f; padded with 000 it is not a string.
        huffman_decode(&[0x1f], &mut out).unwrap();
        assert_eq!(out, b"a");
        assert!(huffman_decode(&[0x18], &mut out).is_err());
        // Eight 1 bits of padding: more than seven.
        assert!(huffman_decode(&[0x1f, 0xff], &mut out).is_err());
        // EOS itself: thirty 1 bits.
        assert!(huffman_decode(&[0xff, 0xff, 0xff, 0xfc], &mut out).is_err());
    }

    #[test]
    fn what_the_encoder_writes_the_decoder_reads_as_the_table_fills_and_evicts() {
        let (mut encoder, mut decoder) = (HeaderEncoder::default(), HeaderDecoder::default());
        let mut sizes = Vec::new();
        for round in 0..200 {
            let value = format!("value-{}", round % 37);
            let fields: Vec<(&[u8], &[u8])> = vec![
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":path", if round % 2 == 0 { b"/" } else { b"/a/b?c=d" }),
                (b":authority", b"cache.example:8080"),
                (b"user-agent", b"vload"),
                (b"x-round", value.as_bytes()),
                (b"x-big", &[b'z'; 1500]),
            ];
            if round == 100 {
                encoder.set_max(256);
            }
            let mut block = Vec::new();
            encoder.begin(&mut block);
            for (n, v) in &fields {
                encoder.field(n, v, &mut block);
            }
            sizes.push(block.len());
            let decoded = decode_all(&mut decoder, &block).unwrap();
            let want: Vec<(String, String)> = fields
                .iter()
                .map(|(n, v)| {
                    (
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect();
            assert_eq!(decoded, want, "round {round}");
            assert_eq!(decoder.table.size, encoder.table.size, "round {round}");
        }
        // A repeated request shrinks to its indexes and the 1.5 KB field it may not index.
        assert!(sizes[40] < 1530, "{}", sizes[40]);
        assert!(sizes[0] > sizes[40]);
    }

    #[test]
    fn the_decoder_hands_over_only_wanted_fields() {
        let mut encoder = HeaderEncoder::default();
        let mut block = Vec::new();
        encoder.field(b":status", b"200", &mut block);
        encoder.field(b"age", b"12", &mut block);
        encoder.field(b"x-other", b"skip", &mut block);
        let mut seen = Vec::new();
        HeaderDecoder::default()
            .decode(
                &block,
                |n| n != b"x-other",
                |n, v| seen.push((n.to_vec(), v.to_vec())),
            )
            .unwrap();
        assert_eq!(
            seen,
            [
                (b":status".to_vec(), b"200".to_vec()),
                (b"age".to_vec(), b"12".to_vec())
            ]
        );
    }

    #[test]
    fn a_hostile_block_is_an_error_not_a_panic() {
        let bad: [&[u8]; 7] = [
            &[0x80],                               // index 0
            &[0xff, 0x80],                         // an integer cut short
            &[0xbe],                               // index 62, the dynamic table is empty
            &[0x40, 0x05, b'a'],                   // a name longer than the block
            &[0x3f, 0xe2, 0x1f],                   // a table size of 4,097, above the limit
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], // an integer of five continuation bytes
            &[0x00, 0x81, 0x18, 0x00],             // a Huffman name with bad padding
        ];
        for block in bad {
            assert!(
                decode_all(&mut HeaderDecoder::default(), block).is_err(),
                "{block:02x?}"
            );
        }
        // A value of every length up to a few bytes past the end, and random bytes, never panic.
        let mut x = 0x9e37_79b9_u32;
        for len in 0..400 {
            let block: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = decode_all(&mut HeaderDecoder::default(), &block);
        }
    }
}

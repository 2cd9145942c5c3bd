//! Property tests of the three parsers that read a server's untrusted bytes: the HTTP/1.1
//! response decoder (heads and chunks), the HTTP/2 frame reader and the HPACK decoder.
//!
//! Each gets arbitrary bytes and valid input mutated at random, fed whole and split at every
//! byte: it must never panic, must decide the same whatever the split (a server chooses how
//! its bytes arrive), must read valid input as what it encodes, and must keep its memory
//! bounded (the HTTP/2 output a server can make vload queue; the HPACK table). The test
//! binary's allocator refuses any single allocation over 64 MiB, so a length field believed
//! without a bound aborts the test rather than passing it.
//!
//! `VLOAD_FUZZ_CASES` sets the cases per property (default 256, a few seconds in a debug
//! build on two cores).

use std::alloc::{GlobalAlloc, Layout, System};

use proptest::prelude::*;

/// The largest single allocation any parser may make on any input.
const LIMIT: usize = 64 << 20;

struct Guarded;

// SAFETY: forwards to the system allocator; refuses only sizes above the limit, which the
// caller then sees as an allocation failure (an abort of the test binary).
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout, as the caller guaranteed.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Guarded = Guarded;

fn config() -> ProptestConfig {
    let cases = std::env::var("VLOAD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Valid input with a few bytes flipped, inserted or removed.
fn mutated(valid: Vec<u8>, edits: Vec<(usize, u8, u8)>) -> Vec<u8> {
    let mut bytes = valid;
    for (at, op, byte) in edits {
        let at = if bytes.is_empty() {
            0
        } else {
            at % bytes.len()
        };
        match op % 3 {
            0 if !bytes.is_empty() => bytes[at] ^= byte | 1,
            1 => bytes.insert(at, byte),
            _ if !bytes.is_empty() => {
                bytes.remove(at);
            }
            _ => {}
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4)
}

/// The splits every input is fed in: whole, at every byte (for short inputs, else at 64
/// points spread over it), and in pieces of 1, 2, 3 and 7 bytes.
fn splits(len: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    let step = (len / 64).max(1);
    out.extend((1..len).step_by(step).map(|at| vec![at]));
    for piece in [1, 2, 3, 7] {
        out.push((piece..len).step_by(piece).collect());
    }
    out
}

fn pieces<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        out.push(&input[start..cut]);
        start = cut;
    }
    out.push(&input[start..]);
    out
}

mod http1 {
    use super::*;
    use crate::failure::Failure;
    use crate::h1::{Decoder, Step};
    use crate::response::Response;

    /// How a connection ended one response: decoded (and how many bytes it took), ended by
    /// the close, or failed.
    #[derive(Debug, PartialEq)]
    enum Outcome {
        Done(Response, usize),
        Closed(Response),
        Failed(Failure),
    }

    /// Feeds `input` in `cuts` as a connection does: unconsumed bytes stay in its buffer and
    /// the next read is appended to them; after the last piece the server closes.
    fn decode(input: &[u8], cuts: &[usize], head_request: bool) -> Outcome {
        let mut decoder = Decoder::new(head_request);
        let (mut buffer, mut consumed) = (Vec::new(), 0);
        for piece in pieces(input, cuts) {
            buffer.extend_from_slice(piece);
            match decoder.feed(&buffer) {
                Err(failure) => return Outcome::Failed(failure),
                Ok((used, step)) => {
                    assert!(used <= buffer.len(), "consumed more than it was given");
                    consumed += used;
                    buffer.drain(..used);
                    if let Step::Done(response) = step {
                        return Outcome::Done(response, consumed);
                    }
                }
            }
        }
        match decoder.eof(buffer.len()) {
            Ok(response) => Outcome::Closed(response),
            Err(failure) => Outcome::Failed(failure),
        }
    }

    fn same_whatever_the_split(input: &[u8], head_request: bool) -> Outcome {
        let whole = decode(input, &[], head_request);
        for cuts in splits(input.len()) {
            assert_eq!(
                decode(input, &cuts, head_request),
                whole,
                "split at {cuts:?} of {:?}",
                String::from_utf8_lossy(input)
            );
        }
        whole
    }

    /// A valid response: its bytes, its status and its body's length.
    fn response() -> impl Strategy<Value = (Vec<u8>, u16, u64)> {
        let status = prop_oneof![Just(200u16), Just(404), Just(503), 200u16..600];
        let body = prop::collection::vec(any::<u8>(), 0..300);
        let chunks = prop::collection::vec(1usize..40, 0..6);
        (status, body, chunks, any::<bool>(), any::<bool>()).prop_map(
            |(status, body, chunks, chunked, interim)| {
                let mut out = Vec::new();
                if interim {
                    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
                out.extend_from_slice(format!("HTTP/1.1 {status} X\r\nServer: t\r\n").as_bytes());
                let empty = status == 204 || status == 304;
                let body = if empty { Vec::new() } else { body };
                if chunked && !empty {
                    out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                    let mut rest = &body[..];
                    for size in chunks.into_iter().chain(std::iter::once(usize::MAX)) {
                        let take = size.min(rest.len());
                        if take == 0 {
                            break;
                        }
                        out.extend_from_slice(format!("{take:x}\r\n").as_bytes());
                        out.extend_from_slice(&rest[..take]);
                        out.extend_from_slice(b"\r\n");
                        rest = &rest[take..];
                    }
                    out.extend_from_slice(b"0\r\nTrailer: x\r\n\r\n");
                } else if !empty {
                    out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
                    );
                    out.extend_from_slice(&body);
                } else {
                    out.extend_from_slice(b"\r\n");
                }
                (out, status, body.len() as u64)
            },
        )
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn arbitrary_bytes_decide_the_same_whatever_the_split(
            input in prop::collection::vec(any::<u8>(), 0..400),
            head_request: bool,
        ) {
            same_whatever_the_split(&input, head_request);
        }

        #[test]
        fn arbitrary_bytes_after_a_valid_head(
            tail in prop::collection::vec(any::<u8>(), 0..300),
            chunked: bool,
        ) {
            let head: &[u8] = if chunked {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
            };
            same_whatever_the_split(&[head, &tail[..]].concat(), false);
        }

        #[test]
        fn a_valid_response_reads_as_what_it_encodes(
            (bytes, status, body) in response(),
            after in prop::collection::vec(any::<u8>(), 0..20),
        ) {
            let input = [&bytes[..], &after[..]].concat();
            match same_whatever_the_split(&input, false) {
                Outcome::Done(response, used) => {
                    prop_assert_eq!(response.status, status);
                    prop_assert_eq!(response.body_bytes, body);
                    prop_assert_eq!(used, bytes.len(), "the next response's bytes are left");
                }
                other => prop_assert!(false, "{other:?}"),
            }
        }

        #[test]
        fn a_mutated_response_never_panics((bytes, _, _) in response(), edits in edits()) {
            same_whatever_the_split(&mutated(bytes, edits), false);
        }
    }
}

mod http2 {
    use super::*;
    use crate::h2::fuzzing::{Frames, Observed};
    use crate::h2::hpack::HeaderEncoder;

    /// Feeds `input` in `cuts` to a connection with three streams in flight (1, 3, 5).
    fn read(input: &[u8], cuts: &[usize]) -> Observed {
        let mut frames = Frames::with_streams(3);
        let mut buffer = Vec::new();
        for piece in pieces(input, cuts) {
            buffer.extend_from_slice(piece);
            let used = frames.process(&buffer);
            assert!(used <= buffer.len(), "consumed more than it was given");
            buffer.drain(..used);
            // What a server can make vload queue stays bounded (1 MiB of answers, plus the
            // frame that crossed the line).
            assert!(frames.queued() <= (1 << 20) + 64 * 1024 + 9);
        }
        frames.observed()
    }

    fn same_whatever_the_split(input: &[u8]) -> Observed {
        let whole = read(input, &[]);
        for cuts in splits(input.len()) {
            assert_eq!(read(input, &cuts), whole, "split at {cuts:?}");
        }
        whole
    }

    fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, id: u32, payload: &[u8]) {
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// A valid server's answer to streams 1, 3 and 5: SETTINGS, a PING, then per stream a
    /// head (perhaps split into CONTINUATION, perhaps ending the stream) and DATA; the
    /// statuses and body lengths it should read as.
    fn answer() -> impl Strategy<Value = (Vec<u8>, Vec<(u16, u64)>)> {
        let stream = (
            prop_oneof![Just(200u16), Just(404), 200u16..600],
            prop::collection::vec(0usize..200, 0..3),
            any::<bool>(),
            any::<bool>(),
        );
        prop::collection::vec(stream, 3).prop_map(|streams| {
            let mut out = Vec::new();
            frame(&mut out, 4, 0, 0, &[0, 3, 0, 0, 0, 100]);
            frame(&mut out, 6, 0, 0, b"pingpong");
            let mut encoder = HeaderEncoder::default();
            let mut expected = Vec::new();
            for (i, (status, data, continued, padded)) in streams.into_iter().enumerate() {
                let id = 1 + 2 * i as u32;
                let mut block = Vec::new();
                encoder.begin(&mut block);
                encoder.field(b":status", status.to_string().as_bytes(), &mut block);
                encoder.field(b"x-varnish", b"32770 3", &mut block);
                encoder.field(b"age", b"12", &mut block);
                let end = if data.is_empty() { 0x1 } else { 0 };
                if continued && block.len() > 1 {
                    let (a, b) = block.split_at(block.len() / 2);
                    frame(&mut out, 1, end, id, a);
                    frame(&mut out, 9, 0x4, id, b);
                } else {
                    frame(&mut out, 1, end | 0x4, id, &block);
                }
                let body: u64 = data.iter().map(|&n| n as u64).sum();
                for (j, &n) in data.iter().enumerate() {
                    let last = if j + 1 == data.len() { 0x1 } else { 0 };
                    if padded {
                        let mut payload = vec![3u8];
                        payload.extend(std::iter::repeat_n(b'd', n));
                        payload.extend_from_slice(&[0, 0, 0]);
                        frame(&mut out, 0, last | 0x8, id, &payload);
                    } else {
                        frame(&mut out, 0, last, id, &vec![b'd'; n]);
                    }
                }
                expected.push((status, body));
            }
            (out, expected)
        })
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn arbitrary_frames_decide_the_same_whatever_the_split(
            input in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            same_whatever_the_split(&input);
        }

        #[test]
        fn frames_with_arbitrary_payloads(
            frames in prop::collection::vec(
                (0u8..11, any::<u8>(), 0u32..8, prop::collection::vec(any::<u8>(), 0..40)),
                0..8,
            ),
        ) {
            let mut input = Vec::new();
            for (kind, flags, id, payload) in frames {
                frame(&mut input, kind, flags, id, &payload);
            }
            same_whatever_the_split(&input);
        }

        #[test]
        fn a_valid_answer_reads_as_what_it_encodes((input, expected) in answer()) {
            let observed = same_whatever_the_split(&input);
            prop_assert!(observed.failed.is_none(), "{:?}", observed.failed);
            for (result, (status, body)) in observed.results.iter().zip(expected) {
                let response = result.as_ref().expect("answered").as_ref().expect("a response");
                prop_assert_eq!(response.status, status);
                prop_assert_eq!(response.body_bytes, body);
                prop_assert_eq!(response.cache.0, crate::cache::CacheClass::Hit);
            }
        }

        #[test]
        fn a_mutated_answer_never_panics((input, _) in answer(), edits in edits()) {
            same_whatever_the_split(&mutated(input, edits));
        }
    }
}

mod hpack {
    use std::collections::VecDeque;

    use super::*;
    use crate::h2::hpack::{HeaderDecoder, STATIC, TABLE_SIZE, huffman_encode};

    /// One representation of a field (RFC 7541 section 6).
    #[derive(Debug, Clone)]
    enum Op {
        /// An index into the static or the dynamic table (wrapped into range).
        Indexed(usize),
        /// A literal; `indexing` 0 = with incremental indexing, 1 = without, 2 = never
        /// indexed; the name from a table index (wrapped) or literal; strings raw or Huffman.
        Literal {
            indexing: u8,
            name_index: Option<usize>,
            name: Vec<u8>,
            value: Vec<u8>,
            huffman: bool,
        },
        /// A dynamic table size update.
        Resize(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = || prop::collection::vec(any::<u8>(), 0..120);
        prop_oneof![
            any::<usize>().prop_map(Op::Indexed),
            (
                0u8..3,
                prop::option::of(any::<usize>()),
                bytes(),
                bytes(),
                any::<bool>()
            )
                .prop_map(|(indexing, name_index, name, value, huffman)| Op::Literal {
                    indexing,
                    name_index,
                    name,
                    value,
                    huffman
                }),
            (0usize..=TABLE_SIZE).prop_map(Op::Resize),
        ]
    }

    /// Header fields: (name, value).
    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    /// An independent model of the decoder's dynamic table (RFC 7541 section 4).
    struct Model {
        entries: VecDeque<(Vec<u8>, Vec<u8>)>,
        max: usize,
    }

    impl Model {
        fn size(&self) -> usize {
            self.entries
                .iter()
                .map(|(n, v)| n.len() + v.len() + 32)
                .sum()
        }

        fn evict(&mut self) {
            while self.size() > self.max {
                self.entries.pop_back();
            }
        }

        fn len(&self) -> usize {
            STATIC.len() + self.entries.len()
        }

        fn get(&self, index: usize) -> (Vec<u8>, Vec<u8>) {
            if index <= STATIC.len() {
                let (n, v) = STATIC[index - 1];
                return (n.to_vec(), v.to_vec());
            }
            self.entries[index - STATIC.len() - 1].clone()
        }
    }

    fn integer(out: &mut Vec<u8>, flags: u8, n: u8, value: usize) {
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

    fn string(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
        if huffman {
            let coded = huffman_encode(s);
            integer(out, 0x80, 7, coded.len());
            out.extend_from_slice(&coded);
        } else {
            integer(out, 0, 7, s.len());
            out.extend_from_slice(s);
        }
    }

    /// Encodes `ops` into a block and says what the decoder must find in it.
    fn encode(ops: &[Op], model: &mut Model) -> (Vec<u8>, Fields) {
        let (mut block, mut fields) = (Vec::new(), Vec::new());
        for op in ops {
            match op {
                Op::Indexed(i) => {
                    let index = 1 + i % model.len();
                    integer(&mut block, 0x80, 7, index);
                    fields.push(model.get(index));
                }
                Op::Literal {
                    indexing,
                    name_index,
                    name,
                    value,
                    huffman,
                } => {
                    let (flags, n) = [(0x40, 6), (0x00, 4), (0x10, 4)][*indexing as usize];
                    let name = match name_index {
                        Some(i) => {
                            let index = 1 + i % model.len();
                            integer(&mut block, flags, n, index);
                            model.get(index).0
                        }
                        None => {
                            integer(&mut block, flags, n, 0);
                            string(&mut block, name, *huffman);
                            name.clone()
                        }
                    };
                    string(&mut block, value, !huffman);
                    if *indexing == 0 {
                        model.entries.push_front((name.clone(), value.clone()));
                        model.evict();
                    }
                    fields.push((name, value.clone()));
                }
                Op::Resize(max) => {
                    integer(&mut block, 0x20, 5, *max);
                    model.max = *max;
                    model.evict();
                }
            }
        }
        (block, fields)
    }

    fn decode(
        decoder: &mut HeaderDecoder,
        block: &[u8],
    ) -> Result<Fields, crate::h2::hpack::HpackError> {
        let mut fields = Vec::new();
        decoder.decode(
            block,
            |_| true,
            |n, v| fields.push((n.to_vec(), v.to_vec())),
        )?;
        Ok(fields)
    }

    proptest! {
        #![proptest_config(config())]

        /// Blocks of every representation, one after another on one connection (the table
        /// carries over), read as an independent model of the table says.
        #[test]
        fn blocks_read_as_the_table_model_says(
            blocks in prop::collection::vec(prop::collection::vec(op(), 0..24), 1..8),
        ) {
            let mut decoder = HeaderDecoder::default();
            let mut model = Model { entries: VecDeque::new(), max: TABLE_SIZE };
            for ops in &blocks {
                let (block, fields) = encode(ops, &mut model);
                prop_assert_eq!(decode(&mut decoder, &block), Ok(fields));
                prop_assert!(decoder.table_size() <= TABLE_SIZE);
            }
        }

        #[test]
        fn arbitrary_blocks_never_panic(
            blocks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..4),
        ) {
            let mut decoder = HeaderDecoder::default();
            for block in &blocks {
                let _ = decode(&mut decoder, block);
                prop_assert!(decoder.table_size() <= TABLE_SIZE);
            }
        }

        #[test]
        fn mutated_blocks_never_panic(ops in prop::collection::vec(op(), 1..12), edits in edits()) {
            let mut model = Model { entries: VecDeque::new(), max: TABLE_SIZE };
            let (block, _) = encode(&ops, &mut model);
            let mut decoder = HeaderDecoder::default();
            let _ = decode(&mut decoder, &mutated(block, edits));
            prop_assert!(decoder.table_size() <= TABLE_SIZE);
        }
    }
}

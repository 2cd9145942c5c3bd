//! A response head, parsed in place by `httparse`: status, framing, cache headers.

use std::cell::RefCell;

/// A response head larger than this is refused.
pub(super) const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per response; more is a protocol error.
const MAX_HEADERS: usize = 96;

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
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
    pub(super) framing: Framing,
    pub(super) close: bool,
    pub(crate) cache: crate::cache::Verdict,
    /// The origin's own time (`Server-Timing`), in microseconds plus one (what origins send;
    /// a head is kept in every connection's decoder, so it stays small: four bytes with its
    /// absence).
    pub(crate) origin_us: Option<std::num::NonZeroU32>,
}

/// What the headers say about framing and caching.
#[derive(Default)]
struct Fields<'a> {
    length: Option<u64>,
    chunked: bool,
    encoded: bool,
    close: bool,
    keep_alive: bool,
    varnish: Option<&'a [u8]>,
    x_cache: Option<&'a [u8]>,
    cache_status: Option<&'a [u8]>,
    /// The first field line of X-Cache and Cache-Status when either came in several (a line
    /// between the first and the last is not kept).
    x_cache_before: Option<&'a [u8]>,
    cache_status_before: Option<&'a [u8]>,
    age: Option<&'a [u8]>,
    warning: Option<&'a [u8]>,
    origin: Option<u64>,
}

/// One pass over the headers for framing and cache status.
#[inline]
fn scan<'a>(headers: &[httparse::Header<'a>]) -> Result<Fields<'a>, String> {
    let mut found = Fields::default();
    // One pass over the headers for framing and cache status, each name tested only against
    // the names of its length (most headers are none of them).
    for h in headers {
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
                if found.length.is_some_and(|l| l != value) {
                    return Err("conflicting Content-Length headers".into());
                }
                found.length = Some(value);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                found.encoded = true;
                // Only the last coding decides: "gzip, chunked" is chunked.
                found.chunked = h
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in h.value.split(|b| *b == b',') {
                    let token = token.trim_ascii();
                    found.close |= token.eq_ignore_ascii_case(b"close");
                    found.keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            9 if name.eq_ignore_ascii_case(b"x-varnish") => found.varnish = Some(h.value),
            7 if name.eq_ignore_ascii_case(b"x-cache") => {
                if let Some(first) = found.x_cache.replace(h.value) {
                    found.x_cache_before.get_or_insert(first);
                }
            }
            12 if name.eq_ignore_ascii_case(b"cache-status") => {
                if let Some(first) = found.cache_status.replace(h.value) {
                    found.cache_status_before.get_or_insert(first);
                }
            }
            3 if name.eq_ignore_ascii_case(b"age") => found.age = Some(h.value),
            // Several Warning fields: the one that says stale, if any does.
            7 if name.eq_ignore_ascii_case(b"warning") && crate::cache::says_stale(h.value) => {
                found.warning = Some(h.value);
            }
            13 if found.origin.is_none() && name.eq_ignore_ascii_case(b"server-timing") => {
                found.origin = crate::timing::origin_ns(h.value);
            }
            _ => {}
        }
    }
    Ok(found)
}

/// Heads longer than this are not remembered.
const MEMO_MAX: usize = 1024;

/// The last head parsed on this thread, with its bytes. The parse reads a head left to right
/// and stops at its end, so a response that starts with the same bytes has the same head:
/// it is taken from here without parsing (a server's responses to one request usually differ
/// only in `Date`, once a second). A server whose heads always differ (Varnish's
/// `X-Varnish` numbers each response) would pay a comparison and a copy every response for
/// nothing: after `COLD` misses in a row the memo is compared and stored only every 64th.
struct Memo {
    bytes: Vec<u8>,
    head_request: bool,
    head: Option<Head>,
    misses: u32,
}

/// Misses in a row before the memo is consulted only every 64th response.
const COLD: u32 = 4;

thread_local! {
    static MEMO: RefCell<Memo> = const {
        RefCell::new(Memo { bytes: Vec::new(), head_request: false, head: None, misses: 0 })
    };
}

/// Forgets this thread's last head: a worker starting an attack whose `Server-Timing` metric
/// may differ from the last one's calls it.
pub(crate) fn forget_memo() {
    MEMO.with_borrow_mut(|memo| {
        memo.head = None;
        memo.bytes.clear();
    });
}

/// Parses a response head at the start of `buf`: `Ok(None)` until it is complete.
pub(crate) fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, String> {
    MEMO.with_borrow_mut(|memo| {
        let probing = memo.misses < COLD || memo.misses % 64 == 0;
        if probing
            && let Some(head) = memo.head
            && memo.head_request == head_request
            && buf.starts_with(&memo.bytes)
        {
            memo.misses = 0;
            return Ok(Some(head));
        }
        let parsed = parse_fresh(buf, head_request)?;
        if let Some(head) = parsed {
            memo.misses = memo.misses.wrapping_add(1);
            if (memo.misses < COLD || memo.misses % 64 == 0) && head.len <= MEMO_MAX {
                memo.bytes.clear();
                memo.bytes.extend_from_slice(&buf[..head.len]);
                (memo.head, memo.head_request) = (Some(head), head_request);
            }
        }
        Ok(parsed)
    })
}

/// Parses a response head at the start of `buf` with no memo.
fn parse_fresh(buf: &[u8], head_request: bool) -> Result<Option<Head>, String> {
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
    let h = scan(response.headers)?;
    let (length, chunked, encoded) = (h.length, h.chunked, h.encoded);
    let cache = crate::cache::decide(crate::cache::CacheHeaders {
        varnish: h.varnish,
        status: h.cache_status,
        status_before: h.cache_status_before,
        x_cache: h.x_cache,
        x_cache_before: h.x_cache_before,
        age: h.age,
        warning: h.warning,
    });
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
        close: h.close || (http10 && !h.keep_alive) || framing == Framing::UntilClose,
        framing,
        cache,
        origin_us: h.origin.map(|ns| {
            let us = (ns / 1_000).min(u64::from(u32::MAX - 1)) as u32;
            std::num::NonZeroU32::MIN.saturating_add(us)
        }),
    }))
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
        use crate::cache::{CacheClass, CacheSource};
        assert_eq!(
            (h.cache.0, h.cache.1),
            (CacheClass::Hit, Some(CacheSource::XVarnish))
        );
    }

    /// The memo never changes an answer: heads that share the memo's bytes, that differ from
    /// them in one byte anywhere, that are cut short or are HEAD responses, in any order, are
    /// parsed as a parse with no memo parses them.
    mod memo {
        use super::*;
        use proptest::prelude::*;

        const BASE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 22 Nov 2026 04:50:00 \
GMT\r\nContent-Length: 11\r\nX-Cache: HIT\r\nConnection: keep-alive\r\n\r\nHello World";

        fn misses() -> u32 {
            MEMO.with_borrow(|m| m.misses)
        }

        proptest! {
            #[test]
            fn answers_as_a_fresh_parse(
                steps in proptest::collection::vec(
                    (0..BASE.len(), any::<u8>(), 0..4u8, any::<bool>(), 1..=BASE.len()), 1..200)
            ) {
                for (at, byte, kind, head_request, cut) in steps {
                    let mut buf = BASE.to_vec();
                    match kind {
                        0 => {}
                        1 => buf[at] = byte,
                        2 => buf.truncate(cut),
                        _ => buf.insert(at, byte),
                    }
                    prop_assert_eq!(parse_head(&buf, head_request), parse_fresh(&buf, head_request));
                }
            }
        }

        #[test]
        fn a_changed_length_is_a_changed_head() {
            let eleven = parse_head(BASE, false).unwrap().unwrap();
            let twelve = String::from_utf8_lossy(BASE).replace("Length: 11", "Length: 12");
            let twelve = parse_head(twelve.as_bytes(), false).unwrap().unwrap();
            assert_eq!(
                (eleven.framing, twelve.framing),
                (Framing::Length(11), Framing::Length(12))
            );
            assert_eq!(
                parse_head(BASE, true).unwrap().unwrap().framing,
                Framing::Empty
            );
        }

        /// After heads that all differ the memo is consulted every 64th response, and a
        /// server that then repeats itself is found again within that.
        #[test]
        fn a_cold_memo_warms_again() {
            for i in 0..200 {
                let varnish = String::from_utf8_lossy(BASE)
                    .replace("X-Cache: HIT", &format!("X-Varnish: {i}"));
                parse_head(varnish.as_bytes(), false).unwrap().unwrap();
            }
            assert!(misses() >= 200, "{}", misses());
            for _ in 0..=65 {
                assert_eq!(parse_head(BASE, false), parse_fresh(BASE, false));
            }
            assert_eq!(misses(), 0, "the repeated head was not remembered");
        }
    }
}

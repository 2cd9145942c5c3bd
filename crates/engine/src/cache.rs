//! Cache state classification from response headers.
//!
//! The evidence, in order: `Cache-Status` when it lists a path of caches (its last member is
//! the nearest, whatever a deeper varnishd's `X-Varnish` says), then `X-Varnish` (two ids =
//! hit, one id = not a hit), then the standard
//! `Cache-Status` of RFC 9211 (its last member, the cache nearest the client), then
//! `X-Cache` (the last layer's `HIT`, `MISS`, `PASS`, or nginx's `$upstream_cache_status`
//! words), then `Age > 0` (hit). A later source refines an earlier one's hit into stale or
//! its miss into pass, never a hit into a miss; a hit with a stale `Warning` (110, 111, 112:
//! Squid's) is stale. Without any of these a response is
//! `Unknown`, never silently a miss. `Age: 0` is no evidence: an object cached less than a
//! second ago is a hit with age 0.

use std::borrow::Cow;

use http::{HeaderMap, HeaderName, header::AGE};

// Parsed once, not per response.
static X_VARNISH: HeaderName = HeaderName::from_static("x-varnish");
static X_CACHE: HeaderName = HeaderName::from_static("x-cache");
static CACHE_STATUS: HeaderName = HeaderName::from_static("cache-status");
static WARNING: HeaderName = HeaderName::from_static("warning");

/// What a response says about the cache. `Hit` and `Stale` count as hits (served from the
/// cache), `Miss` and `Pass` as misses (forwarded to the origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CacheClass {
    Hit = 0,
    Miss = 1,
    #[default]
    Unknown = 2,
    /// Not looked up in the cache: the server was told to pass it (`X-Cache: PASS`,
    /// nginx's `BYPASS`, `Cache-Status` `fwd=bypass|method|request`).
    Pass = 3,
    /// Served from the cache past its freshness (`Cache-Status` hit with a negative `ttl`,
    /// nginx's `STALE` and `UPDATING`).
    Stale = 4,
}

impl CacheClass {
    /// Every state, in the order of its index.
    pub(crate) const ALL: [CacheClass; 5] = [
        CacheClass::Hit,
        CacheClass::Miss,
        CacheClass::Unknown,
        CacheClass::Pass,
        CacheClass::Stale,
    ];

    /// Served from the cache.
    pub(crate) fn is_hit(self) -> bool {
        matches!(self, CacheClass::Hit | CacheClass::Stale)
    }

    /// Forwarded to the origin.
    pub(crate) fn is_miss(self) -> bool {
        matches!(self, CacheClass::Miss | CacheClass::Pass)
    }

    /// Its index among the hit, miss and unknown counts.
    pub(crate) fn coarse(self) -> usize {
        if self.is_hit() {
            0
        } else if self.is_miss() {
            1
        } else {
            2
        }
    }

    /// Its name in the run file's breakdown by cache state.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CacheClass::Hit => "hit",
            CacheClass::Miss => "miss",
            CacheClass::Unknown => "unknown",
            CacheClass::Pass => "pass",
            CacheClass::Stale => "stale",
        }
    }
}

/// Which header the classification rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheSource {
    XVarnish = 0,
    XCache = 1,
    Age = 2,
    CacheStatus = 3,
}

/// The cache headers of one response, as the clients find them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CacheHeaders<'a> {
    pub(crate) varnish: Option<&'a [u8]>,
    pub(crate) status: Option<&'a [u8]>,
    /// `Cache-Status`'s first field line when it came in more than one (each cache of a path
    /// adding its own line, as nginx's `add_header` does): the list is this, then `status`.
    pub(crate) status_before: Option<&'a [u8]>,
    pub(crate) x_cache: Option<&'a [u8]>,
    /// `X-Cache`'s first field line when it came in more than one.
    pub(crate) x_cache_before: Option<&'a [u8]>,
    pub(crate) age: Option<&'a [u8]>,
    /// RFC 7234's `Warning`, kept only when it says stale ([`says_stale`]: a 110, 111 or
    /// 112, as Squid marks a stale hit).
    pub(crate) warning: Option<&'a [u8]>,
}

/// Classifies one response.
pub(crate) fn classify(headers: &HeaderMap) -> Verdict {
    // Several field lines of one header: the first and the last, as the clients keep them.
    let lines = |name: &HeaderName| {
        let mut all = headers.get_all(name).iter().map(|v| v.as_bytes());
        let first = all.next();
        let last = all.next_back();
        match last {
            Some(last) => (first, Some(last)),
            None => (None, first),
        }
    };
    let (status_before, status) = lines(&CACHE_STATUS);
    let (x_cache_before, x_cache) = lines(&X_CACHE);
    decide(CacheHeaders {
        varnish: headers.get(&X_VARNISH).map(|v| v.as_bytes()),
        status,
        status_before,
        x_cache,
        x_cache_before,
        age: headers.get(AGE).map(|v| v.as_bytes()),
        // Any of its Warning fields saying stale.
        warning: headers
            .get_all(&WARNING)
            .iter()
            .map(|v| v.as_bytes())
            .find(|v| says_stale(v)),
    })
}

/// What a response says of the caches it passed: the class of the one nearest the client,
/// the header that says so, every layer's when its headers list two or more, and a stale
/// answer's `Age` in seconds (how long past its fetch the cache served it).
pub(crate) type Verdict = (CacheClass, Option<CacheSource>, Layers, Option<StaleAge>);

/// A stale answer's `Age` in seconds, kept in four bytes with its absence (a head is kept in
/// every connection's slot, which stays within 256 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StaleAge(std::num::NonZeroU32);

impl StaleAge {
    fn new(seconds: u32) -> StaleAge {
        StaleAge(std::num::NonZeroU32::MIN.saturating_add(seconds))
    }

    /// The age in seconds (at most `u32::MAX - 1`).
    pub(crate) fn seconds(self) -> u32 {
        self.0.get() - 1
    }
}

/// The cache state from the headers that can tell it, in order of trust, and the layers.
pub(crate) fn decide(h: CacheHeaders<'_>) -> Verdict {
    // A header in two field lines is one list, the earlier line first (RFC 9110, 5.3): a
    // copy only for such a response.
    let status = joined(h.status_before, h.status);
    let x_cache = joined(h.x_cache_before, h.x_cache);
    let h = CacheHeaders {
        status: status.as_deref(),
        x_cache: x_cache.as_deref(),
        ..h
    };
    let (class, source) = nearest(h);
    // A hit with a stale warning (Squid's `110 Response is stale`, `111 Revalidation failed`)
    // was served stale.
    let class = if class == CacheClass::Hit && h.warning.is_some() {
        CacheClass::Stale
    } else {
        class
    };
    // The age of a stale answer, the figure a grace or stale-if-error setting bounds.
    let age = if class == CacheClass::Stale {
        text(h.age)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map(StaleAge::new)
    } else {
        None
    };
    (class, source, layers(h, class), age)
}

/// One header's field lines as one list.
fn joined<'a>(before: Option<&'a [u8]>, last: Option<&'a [u8]>) -> Option<Cow<'a, [u8]>> {
    match (before, last) {
        (Some(before), Some(last)) => Some(Cow::Owned([before, b", ", last].concat())),
        (_, last) => last.map(Cow::Borrowed),
    }
}

/// `Warning`'s codes that mean the response was stale: 110 (Response is stale), 111
/// (Revalidation failed), 112 (Disconnected operation).
pub(crate) fn says_stale(value: &[u8]) -> bool {
    value
        .split(|b| *b == b',')
        .any(|w| matches!(w.trim_ascii().get(..3), Some(b"110" | b"111" | b"112")))
}

fn text(v: Option<&[u8]>) -> Option<&str> {
    v.and_then(|v| std::str::from_utf8(v).ok())
}

/// The class of the cache nearest the client.
fn nearest(h: CacheHeaders<'_>) -> (CacheClass, Option<CacheSource>) {
    let standard = text(h.status).and_then(cache_status);
    // A path of caches, one member each (RFC 9211): the last is the nearest, whatever a
    // deeper Varnish's stored `X-Varnish` says (nginx in front of a varnishd passes it on).
    let path = text(h.status)
        .is_some_and(|v| v.contains(',') && split_outside_quotes(v, b',').count() > 1);
    if let Some(class) = standard.filter(|_| path) {
        return (class, Some(CacheSource::CacheStatus));
    }
    let x_cache = text(h.x_cache).and_then(x_cache);
    let finer = standard.or(x_cache);
    if let Some(ids) = text(h.varnish) {
        let class = match (ids.split_ascii_whitespace().count(), finer) {
            (2, Some(CacheClass::Stale)) => CacheClass::Stale,
            (2, _) => CacheClass::Hit,
            (_, Some(CacheClass::Pass)) => CacheClass::Pass,
            _ => CacheClass::Miss,
        };
        return (class, Some(CacheSource::XVarnish));
    }
    if let Some(class) = standard {
        return (class, Some(CacheSource::CacheStatus));
    }
    if let Some(class) = x_cache {
        return (class, Some(CacheSource::XCache));
    }
    let age = text(h.age).and_then(|v| v.trim().parse::<u64>().ok());
    if age.is_some_and(|age| age > 0) {
        return (CacheClass::Hit, Some(CacheSource::Age));
    }
    (CacheClass::Unknown, None)
}

/// `X-Cache`: layered caches append, so the last word is the layer nearest the client
/// ("MISS, HIT" is a hit). nginx's `$upstream_cache_status` words are understood.
fn x_cache(value: &str) -> Option<CacheClass> {
    x_cache_word(value.rsplit(',').next().unwrap_or(""))
}

/// One layer's `X-Cache` word.
fn x_cache_word(word: &str) -> Option<CacheClass> {
    let last = word.trim().to_ascii_uppercase();
    if last.contains("STALE") || last.contains("UPDATING") {
        Some(CacheClass::Stale)
    } else if last.contains("HIT") {
        Some(CacheClass::Hit)
    } else if last.contains("PASS") || last.contains("BYPASS") {
        Some(CacheClass::Pass)
    } else if last.contains("MISS") || last.contains("EXPIRED") || last.contains("REVALIDATED") {
        Some(CacheClass::Miss)
    } else {
        None
    }
}

/// RFC 9211 `Cache-Status`: a list whose last member is the cache nearest the client,
/// e.g. `Origin; fwd=uri-miss; stored, CDN; hit; ttl=30`. `hit` is a hit (stale when its
/// `ttl` is negative); `fwd=bypass|method|request` is a pass; any other `fwd` a miss. A
/// member without either says nothing.
fn cache_status(value: &str) -> Option<CacheClass> {
    status_member(last_member(value)?)
}

/// One member of `Cache-Status`: one cache's word.
fn status_member(last: &str) -> Option<CacheClass> {
    let mut hit = false;
    let mut stale = false;
    let mut forward = None;
    // The first item is the cache's name; its parameters follow, each `;`-separated.
    for param in split_outside_quotes(last, b';').skip(1) {
        let (key, value) = match param.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (param.trim(), None),
        };
        match (key, value) {
            ("hit", None | Some("?1")) => hit = true,
            ("ttl", Some(ttl)) => stale = ttl.starts_with('-'),
            ("fwd", Some(reason)) => forward = Some(reason.trim_matches('"')),
            _ => {}
        }
    }
    if hit {
        return Some(if stale {
            CacheClass::Stale
        } else {
            CacheClass::Hit
        });
    }
    forward.map(|reason| match reason {
        "bypass" | "method" | "request" => CacheClass::Pass,
        _ => CacheClass::Miss,
    })
}

/// The caches a response passed, nearest the client first, as its headers list them
/// (`Cache-Status`'s members, else `X-Cache`'s words) when they list two or more: up to
/// [`Layers::MOST`], each one's class in 3 bits, the count in the lowest 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Layers(u16);

impl Layers {
    /// The most layers counted (the nearest the client first).
    pub(crate) const MOST: usize = 4;

    /// How many layers the headers listed (0 for one cache or none).
    pub(crate) fn len(self) -> usize {
        usize::from(self.0 & 0b111)
    }

    /// Layer `i`'s class (0: nearest the client).
    pub(crate) fn get(self, i: usize) -> CacheClass {
        CacheClass::ALL[usize::from((self.0 >> (3 + 3 * i)) & 0b111)]
    }

    fn push(&mut self, class: CacheClass) {
        let n = self.len();
        if n < Self::MOST {
            self.0 = (self.0 & !0b111) | (class as u16) << (3 + 3 * n) | (n as u16 + 1);
        }
    }

    /// The layers the request reached, from the client: each one after a miss or a pass of
    /// the one before (what a hit answered, the layers behind it never saw, whatever the
    /// stored headers say of them).
    pub(crate) fn reached(self) -> impl Iterator<Item = (usize, CacheClass)> {
        let mut go = true;
        (0..self.len()).map_while(move |i| {
            let class = self.get(i);
            let this = go.then_some((i, class));
            go = class.is_miss();
            this
        })
    }
}

/// The layers `h` lists, the nearest's class `nearest` (the most trusted word on it).
fn layers(h: CacheHeaders<'_>, nearest: CacheClass) -> Layers {
    let mut words: [&str; 8] = [""; 8];
    let mut out = Layers::default();
    fn keep<'a>(words: &mut [&'a str; 8], listed: impl Iterator<Item = &'a str>) -> usize {
        let mut n = 0;
        for word in listed.map(str::trim).filter(|w| !w.is_empty()).take(8) {
            words[n] = word;
            n += 1;
        }
        n
    }
    let (found, status) = match text(h.status).filter(|v| v.contains(',')) {
        Some(v) => (keep(&mut words, split_outside_quotes(v, b',')), true),
        None => match text(h.x_cache).filter(|v| v.contains(',')) {
            Some(v) => (keep(&mut words, v.split(',')), false),
            None => (0, false),
        },
    };
    if found < 2 {
        return out;
    }
    out.push(nearest);
    for word in words[..found - 1].iter().rev() {
        let class = if status {
            status_member(word)
        } else {
            x_cache_word(word)
        };
        out.push(class.unwrap_or(CacheClass::Unknown));
    }
    out
}

/// The last non-empty `,`-separated member of a structured-field list (commas inside quoted
/// strings do not separate).
fn last_member(value: &str) -> Option<&str> {
    split_outside_quotes(value, b',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .last()
}

/// `value` split at `sep` where it is not inside a quoted string (no allocation: a server
/// may send this on every response).
fn split_outside_quotes(value: &str, sep: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let text = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, &b) in text.as_bytes().iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                _ if b == sep && !quoted => {
                    rest = Some(&text[i + 1..]);
                    return Some(&text[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
            .collect()
    }

    // The fixtures of analysis-methods.md D7.7.
    #[test]
    fn classifies_every_documented_case() {
        use CacheClass::*;
        use CacheSource::*;
        let cases: [(&[(&str, &str)], _); 19] = [
            (&[("x-varnish", "32770")], (Miss, Some(XVarnish))),
            (&[("x-varnish", "32773 32771")], (Hit, Some(XVarnish))),
            (
                &[("x-varnish", "32773 32771"), ("age", "0")],
                (Hit, Some(XVarnish)),
            ),
            (&[("age", "5")], (Hit, Some(Age))),
            (&[("x-cache", "HIT")], (Hit, Some(XCache))),
            (&[("x-cache", "MISS, HIT")], (Hit, Some(XCache))),
            (&[("x-cache", "HIT, MISS")], (Miss, Some(XCache))),
            (&[], (Unknown, None)),
            // nginx's $upstream_cache_status and Varnish VCLs' PASS.
            (&[("x-cache", "PASS")], (Pass, Some(XCache))),
            (&[("x-cache", "BYPASS")], (Pass, Some(XCache))),
            (&[("x-cache", "STALE")], (Stale, Some(XCache))),
            (&[("x-cache", "EXPIRED")], (Miss, Some(XCache))),
            // X-Varnish decides hit or not; the others refine it.
            (
                &[("x-varnish", "32770"), ("x-cache", "PASS")],
                (Pass, Some(XVarnish)),
            ),
            (
                &[("x-varnish", "32770"), ("x-cache", "HIT")],
                (Miss, Some(XVarnish)),
            ),
            // RFC 9211's examples (section 4) and layered caches: the last member counts.
            (
                &[("cache-status", "ExampleCache; hit")],
                (Hit, Some(CacheStatus)),
            ),
            (
                &[("cache-status", "ExampleCache; fwd=uri-miss; stored")],
                (Miss, Some(CacheStatus)),
            ),
            (
                &[("cache-status", "ExampleCache; hit; ttl=-412")],
                (Stale, Some(CacheStatus)),
            ),
            (
                &[(
                    "cache-status",
                    "Origin; hit, CDN; fwd=bypass; detail=\"a, b\"",
                )],
                (Pass, Some(CacheStatus)),
            ),
            (
                &[(
                    "cache-status",
                    "OriginCache; fwd=uri-miss, CDN; hit; ttl=30",
                )],
                (Hit, Some(CacheStatus)),
            ),
        ];
        for (pairs, expected) in cases {
            let got = classify(&headers(pairs));
            assert_eq!((got.0, got.1), expected, "{pairs:?}");
            // The same from a raw response head, names in any case, as the HTTP/1.1
            // client parses it.
            let mut head = String::from("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n");
            for (k, v) in pairs {
                head.push_str(&format!("{}: {v}\r\n", k.to_ascii_uppercase()));
            }
            head.push_str("\r\n");
            let parsed = crate::h1::parse_head(head.as_bytes(), false)
                .unwrap()
                .unwrap();
            assert_eq!((parsed.cache.0, parsed.cache.1), expected, "{pairs:?}");
            assert_eq!(parsed.cache.2, got.2, "{pairs:?}");
        }
    }

    /// Squid says a stale answer with `Warning: 110` (and `111` when revalidation failed):
    /// a hit so marked is stale; the same warning on a miss changes nothing.
    #[test]
    fn a_stale_warning_makes_a_hit_stale() {
        use CacheClass::*;
        let class = |pairs: &[(&'static str, &'static str)]| {
            let h: HeaderMap = pairs
                .iter()
                .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
                .collect();
            classify(&h).0
        };
        let squid = [
            ("x-cache", "HIT from vload-squid"),
            ("warning", "110 squid/5.7 \"Response is stale\""),
        ];
        assert_eq!(class(&squid), Stale);
        assert_eq!(
            class(&[
                ("x-cache", "HIT"),
                ("warning", "111 - \"Revalidation failed\"")
            ]),
            Stale
        );
        assert_eq!(
            class(&[("x-cache", "HIT"), ("warning", "199 - \"misc\"")]),
            Hit
        );
        assert_eq!(
            class(&[("x-cache", "MISS"), ("warning", "110 - \"stale\"")]),
            Miss
        );
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Cache: HIT from s\r\nWarning: 199 - \"x\"\r\nWarning: 110 s \"Response is stale\"\r\n\r\n";
        let parsed = crate::h1::parse_head(head.as_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed.cache.0, Stale,
            "one of several Warning fields says stale"
        );
    }

    /// A stale answer carries its `Age`, the figure a grace setting bounds; a fresh hit's
    /// age and a malformed one are not kept.
    #[test]
    fn a_stale_answer_keeps_its_age() {
        let verdict = |pairs: &[(&'static str, &'static str)]| {
            let h: HeaderMap = pairs
                .iter()
                .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
                .collect();
            classify(&h)
        };
        let stale = [("cache-status", "varnish; hit; ttl=-3"), ("age", "5")];
        assert_eq!(verdict(&stale).3.map(StaleAge::seconds), Some(5));
        assert_eq!(
            verdict(&[("cache-status", "varnish; hit; ttl=3"), ("age", "5")]).3,
            None
        );
        assert_eq!(
            verdict(&[("x-cache", "STALE"), ("age", "-1")]),
            (
                CacheClass::Stale,
                Some(CacheSource::XCache),
                Layers::default(),
                None
            )
        );
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Varnish: 5 3\r\nAge: 71\r\nCache-Status: varnish; hit; ttl=-11\r\n\r\n";
        let parsed = crate::h1::parse_head(head.as_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (parsed.cache.0, parsed.cache.3.map(StaleAge::seconds)),
            (CacheClass::Stale, Some(71))
        );
    }

    /// A cache that adds its own field line of `Cache-Status` (nginx's `add_header`) after
    /// the one it got from behind: the lines are one list, the earlier first.
    #[test]
    fn field_lines_of_one_list_are_read_as_one() {
        use CacheClass::*;
        let two = [
            ("cache-status", "shield; fwd=miss"),
            ("cache-status", "edge; fwd=miss"),
        ];
        let got = classify(&headers(&two));
        assert_eq!(got.0, Miss);
        assert_eq!(got.2.reached().collect::<Vec<_>>(), [(0, Miss), (1, Miss)]);
        let hit = classify(&headers(&[
            ("cache-status", "shield; fwd=miss"),
            ("cache-status", "edge; hit"),
        ]));
        assert_eq!(
            (hit.0, hit.2.reached().collect::<Vec<_>>()),
            (Hit, vec![(0, Hit)])
        );
        // The same from a raw head, and X-Cache's lines the same way.
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Status: shield; hit\r\nX-Cache: MISS\r\nCache-Status: edge; fwd=miss\r\n\r\n";
        let parsed = crate::h1::parse_head(head.as_bytes(), false)
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed.cache.2.reached().collect::<Vec<_>>(),
            [(0, Miss), (1, Hit)]
        );
        // nginx in front of a varnishd: the shield's stored X-Varnish (one id, its miss)
        // does not make the edge's hit a miss, nor its two ids the edge's miss a hit.
        let nginx_hit = classify(&headers(&[
            ("x-varnish", "32770"),
            ("cache-status", "shield; fwd=miss"),
            ("cache-status", "edge; hit"),
        ]));
        assert_eq!(nginx_hit.0, Hit);
        let nginx_miss = classify(&headers(&[
            ("x-varnish", "32773 32771"),
            ("cache-status", "shield; hit"),
            ("cache-status", "edge; fwd=miss"),
        ]));
        assert_eq!(
            (nginx_miss.0, nginx_miss.2.reached().collect::<Vec<_>>()),
            (Miss, vec![(0, Miss), (1, Hit)])
        );
        let x_cache = classify(&headers(&[("x-cache", "HIT"), ("x-cache", "MISS")]));
        assert_eq!(
            x_cache.2.reached().collect::<Vec<_>>(),
            [(0, Miss), (1, Hit)]
        );
    }

    /// Each layer a response lists, from the client; the layers a request reached stop at
    /// the first that answered it, whatever the stored headers say of the ones behind.
    #[test]
    fn layers_are_read_from_the_client_inward() {
        use CacheClass::*;
        let reached = |pairs: &[(&'static str, &'static str)]| {
            classify(&headers(pairs)).2.reached().collect::<Vec<_>>()
        };
        assert_eq!(
            reached(&[("cache-status", "shield; fwd=miss, edge; fwd=miss")]),
            [(0, Miss), (1, Miss)]
        );
        assert_eq!(
            reached(&[("cache-status", "shield; hit, edge; fwd=miss")]),
            [(0, Miss), (1, Hit)]
        );
        // An edge hit on an object the shield once fetched: the shield never saw this one.
        assert_eq!(
            reached(&[("cache-status", "shield; fwd=miss, edge; hit")]),
            [(0, Hit)]
        );
        assert_eq!(
            reached(&[("cache-status", "shield; hit; ttl=-3, edge; fwd=stale")]),
            [(0, Miss), (1, Stale)]
        );
        assert_eq!(reached(&[("x-cache", "HIT, MISS")]), [(0, Miss), (1, Hit)]);
        assert_eq!(
            reached(&[("x-cache", "MISS, MISS, PASS")]),
            [(0, Pass), (1, Miss), (2, Miss)]
        );
        // The nearest layer's word is the most trusted one (here X-Varnish's two ids).
        assert_eq!(
            reached(&[("x-varnish", "5 3"), ("x-cache", "MISS, MISS")]),
            [(0, Hit)]
        );
        // One cache, or none: no layers.
        assert!(reached(&[("cache-status", "edge; hit")]).is_empty());
        assert!(reached(&[("x-cache", "HIT")]).is_empty());
        assert!(reached(&[("cache-status", "a; detail=\"x, y\"")]).is_empty());
    }

    #[test]
    fn age_zero_alone_is_no_evidence() {
        assert_eq!(
            classify(&headers(&[("age", "0")])),
            (CacheClass::Unknown, None, Layers::default(), None)
        );
        assert_eq!(
            classify(&headers(&[("x-cache", "weird")])),
            (CacheClass::Unknown, None, Layers::default(), None)
        );
    }
}

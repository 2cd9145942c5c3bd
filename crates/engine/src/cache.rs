//! Cache hit classification from response headers.
//!
//! The evidence, in order: `X-Varnish` (two ids = hit, one id = not a hit), then
//! `X-Cache` (the last layer's `HIT` or `MISS`/`PASS`), then `Age > 0` (hit). Without
//! any of these a response is `Unknown`, never silently a miss. `Age: 0` is no
//! evidence: an object cached less than a second ago is a hit with age 0.

use http::{HeaderMap, HeaderName, header::AGE};

// Parsed once, not per response.
static X_VARNISH: HeaderName = HeaderName::from_static("x-varnish");
static X_CACHE: HeaderName = HeaderName::from_static("x-cache");

/// What a response says about the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CacheClass {
    Hit = 0,
    Miss = 1,
    #[default]
    Unknown = 2,
}

/// Which header the classification rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheSource {
    XVarnish = 0,
    XCache = 1,
    Age = 2,
}

/// Classifies one response.
pub(crate) fn classify(headers: &HeaderMap) -> (CacheClass, Option<CacheSource>) {
    decide(
        headers.get(&X_VARNISH).map(|v| v.as_bytes()),
        headers.get(&X_CACHE).map(|v| v.as_bytes()),
        headers.get(AGE).map(|v| v.as_bytes()),
    )
}

/// The cache status from the three headers that can tell it, in order of trust.
pub(crate) fn decide(
    varnish: Option<&[u8]>,
    cache: Option<&[u8]>,
    age: Option<&[u8]>,
) -> (CacheClass, Option<CacheSource>) {
    fn text(v: Option<&[u8]>) -> Option<&str> {
        v.and_then(|v| std::str::from_utf8(v).ok())
    }
    if let Some(ids) = text(varnish) {
        let class = match ids.split_ascii_whitespace().count() {
            2 => CacheClass::Hit,
            _ => CacheClass::Miss,
        };
        return (class, Some(CacheSource::XVarnish));
    }
    if let Some(value) = text(cache) {
        // Layered caches append: "MISS, HIT" is a hit at the layer nearest the client.
        let last = value
            .rsplit(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_uppercase();
        if last.contains("HIT") {
            return (CacheClass::Hit, Some(CacheSource::XCache));
        }
        if last.contains("MISS") || last.contains("PASS") {
            return (CacheClass::Miss, Some(CacheSource::XCache));
        }
    }
    let age = text(age).and_then(|v| v.trim().parse::<u64>().ok());
    if age.is_some_and(|age| age > 0) {
        return (CacheClass::Hit, Some(CacheSource::Age));
    }
    (CacheClass::Unknown, None)
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
        let cases: [(&[(&str, &str)], _); 8] = [
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
        ];
        for (pairs, expected) in cases {
            assert_eq!(classify(&headers(pairs)), expected, "{pairs:?}");
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
            assert_eq!(parsed.cache, expected, "{pairs:?}");
        }
    }

    #[test]
    fn age_zero_alone_is_no_evidence() {
        assert_eq!(
            classify(&headers(&[("age", "0")])),
            (CacheClass::Unknown, None)
        );
        assert_eq!(
            classify(&headers(&[("x-cache", "weird")])),
            (CacheClass::Unknown, None)
        );
    }
}

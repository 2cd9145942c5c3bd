//! QPACK (RFC 9204) as vload needs it: no dynamic table either way (vload's decoder
//! allows none, its encoder uses none), so a field section is the static table's entries
//! and literals; Huffman and integers are HPACK's ([`crate::h2::hpack`]).

use std::sync::OnceLock;

use crate::h2::hpack::{HpackError, huffman_encode, integer, put_integer, string, text};

/// The static table (RFC 9204, Appendix A).
const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// A request's field section: its prefix (no dynamic table: Required Insert Count and Base
/// 0), each field as the static table's entry where name and value are there, its name's
/// entry and a literal value where the name is, else both literal; no Huffman (the server
/// decodes what it gets; vload spends no time encoding).
#[derive(Debug, Default)]
pub(crate) struct FieldEncoder;

impl FieldEncoder {
    pub(crate) fn begin(out: &mut Vec<u8>) {
        out.extend_from_slice(&[0, 0]);
    }

    pub(crate) fn field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        // The pseudo-fields every request has, without a walk through the table.
        let known = match (name, value) {
            (b":method", b"GET") => Some((17, true)),
            (b":scheme", b"https") => Some((23, true)),
            (b":path", b"/") => Some((1, true)),
            (b":authority", _) => Some((0, false)),
            (b":path", _) => Some((1, false)),
            _ => None,
        };
        if let Some((i, whole)) = known {
            if whole {
                put_integer(out, 0xc0, 6, i);
            } else {
                put_integer(out, 0x50, 4, i);
                put_integer(out, 0, 7, value.len());
                out.extend_from_slice(value);
            }
            return;
        }
        let mut by_name = None;
        for (i, (n, v)) in STATIC.iter().enumerate() {
            if *n == name {
                if *v == value {
                    // Indexed field line, static: 11xxxxxx.
                    put_integer(out, 0xc0, 6, i);
                    return;
                }
                by_name.get_or_insert(i);
            }
        }
        match by_name {
            // Literal with name reference, static, not "never indexed": 0101xxxx.
            Some(i) => put_integer(out, 0x50, 4, i),
            None => {
                // Literal with literal name: 0010xxxx (H = 0, 3-bit length).
                put_integer(out, 0x20, 3, name.len());
                out.extend_from_slice(name);
            }
        }
        put_integer(out, 0, 7, value.len());
        out.extend_from_slice(value);
    }
}

/// The field names a decoder hands over, with their Huffman codings: a Huffman-coded literal
/// name (a server's own field, `server-timing` on every response of vload's origin) is
/// matched as it came, without decoding it. A string has one Huffman coding (RFC 7541, 5.2:
/// the padding is fixed), so a name whose coding is none of these is not wanted.
pub(crate) struct Wanted {
    names: &'static [&'static [u8]],
    huffman: OnceLock<Vec<Vec<u8>>>,
}

impl Wanted {
    pub(crate) const fn new(names: &'static [&'static [u8]]) -> Wanted {
        Wanted {
            names,
            huffman: OnceLock::new(),
        }
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.names.contains(&name)
    }

    /// The wanted name `raw` is the Huffman coding of, if any.
    fn huffman(&self, raw: &[u8]) -> Option<&'static [u8]> {
        let codings = self
            .huffman
            .get_or_init(|| self.names.iter().map(|n| huffman_encode(n)).collect());
        let i = codings.iter().position(|coding| coding == raw)?;
        Some(self.names[i])
    }
}

/// Decodes a response's field section, calling `found` with each field `wanted` names.
/// Anything that needs a dynamic table is an error: vload allowed none.
pub(crate) fn decode(
    mut block: &[u8],
    scratch: &mut Vec<u8>,
    wanted: &Wanted,
    mut found: impl FnMut(&[u8], &[u8]),
) -> Result<(), HpackError> {
    if integer(&mut block, 8)? != 0 {
        return Err(HpackError("a field section that needs a dynamic table"));
    }
    // Delta Base: meaningless without a dynamic table, but it must be there.
    integer(&mut block, 7)?;
    let values = scratch;
    while let Some(&first) = block.first() {
        if first & 0x80 != 0 {
            // Indexed field line: 1Txxxxxx.
            if first & 0x40 == 0 {
                return Err(HpackError("a reference into a dynamic table"));
            }
            let (name, value) = entry(integer(&mut block, 6)?)?;
            if wanted.contains(name) {
                found(name, value);
            }
        } else if first & 0x40 != 0 {
            // Literal with name reference: 01NTxxxx.
            if first & 0x10 == 0 {
                return Err(HpackError("a reference into a dynamic table"));
            }
            let name = entry(integer(&mut block, 4)?)?.0;
            let value = string(&mut block)?;
            if wanted.contains(name) {
                found(name, text(value, values)?);
            }
        } else if first & 0x20 != 0 {
            // Literal with literal name: 001NHxxx.
            let huffman = first & 0x08 != 0;
            let len = integer(&mut block, 3)?;
            if len > block.len() {
                return Err(HpackError("a name longer than its field section"));
            }
            let (raw, rest) = block.split_at(len);
            block = rest;
            let value = string(&mut block)?;
            let name = if huffman {
                wanted.huffman(raw)
            } else {
                wanted.contains(raw).then_some(raw)
            };
            if let Some(name) = name {
                found(name, text(value, values)?);
            }
        } else {
            // 0001xxxx and 0000xxxx: post-base references, dynamic only.
            return Err(HpackError("a reference into a dynamic table"));
        }
    }
    Ok(())
}

fn entry(index: usize) -> Result<(&'static [u8], &'static [u8]), HpackError> {
    STATIC
        .get(index)
        .copied()
        .ok_or(HpackError("an index beyond the static table"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name these tests write but `x-other`.
    static ALL: Wanted = Wanted::new(&[
        b":method",
        b":path",
        b":authority",
        b":scheme",
        b":status",
        b"x-vload",
        b"x-cache",
        b"accept",
    ]);

    fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut seen = Vec::new();
        decode(block, &mut Vec::new(), &ALL, |n, v| {
            seen.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ));
        })?;
        Ok(seen)
    }

    #[test]
    fn what_the_encoder_writes_decodes_to_the_same_fields() {
        let fields: [(&[u8], &[u8]); 5] = [
            (b":method", b"GET"),
            (b":path", b"/a/b?c=1"),
            (b":authority", b"127.0.0.1:8443"),
            (b"x-vload", b"1"),
            (b"accept", b"*/*"),
        ];
        let mut block = Vec::new();
        FieldEncoder::begin(&mut block);
        for (n, v) in fields {
            FieldEncoder::field(n, v, &mut block);
        }
        // GET and accept: */* are one byte each, their static entries.
        assert_eq!(block[2], 0xc0 | 17);
        let seen = decoded(&block).unwrap();
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        assert_eq!(seen, want);
    }

    /// The pseudo-fields encoded without the table's walk are the table's own entries.
    #[test]
    fn the_known_pseudo_fields_are_the_tables_entries() {
        assert_eq!(STATIC[17], (&b":method"[..], &b"GET"[..]));
        assert_eq!(STATIC[23], (&b":scheme"[..], &b"https"[..]));
        assert_eq!(STATIC[1], (&b":path"[..], &b"/"[..]));
        assert_eq!(STATIC[0].0, b":authority");
        for (n, v) in [
            (&b":path"[..], &b"/"[..]),
            (b":path", b"/x"),
            (b":authority", b"a:1"),
        ] {
            let mut block = Vec::new();
            FieldEncoder::begin(&mut block);
            FieldEncoder::field(n, v, &mut block);
            let seen = decoded(&block).unwrap();
            assert_eq!(seen[0].0.as_bytes(), n);
            assert_eq!(seen[0].1.as_bytes(), v);
        }
    }

    /// RFC 9204, B.1: a literal with a name reference, `:path /index.html`.
    #[test]
    fn the_rfc_example_decodes() {
        let block = [
            0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d,
            0x6c,
        ];
        assert_eq!(
            decoded(&block).unwrap(),
            [(":path".to_owned(), "/index.html".to_owned())]
        );
    }

    /// A Huffman-coded literal name and value (as Caddy's and quic-go's encoders write
    /// them), and a status from the static table.
    #[test]
    fn huffman_names_and_values_decode() {
        let name = crate::h2::hpack::huffman_encode(b"x-cache");
        let value = crate::h2::hpack::huffman_encode(b"HIT");
        let mut block = vec![0, 0, 0xc0 | 25];
        put_integer(&mut block, 0x28, 3, name.len());
        block.extend_from_slice(&name);
        put_integer(&mut block, 0x80, 7, value.len());
        block.extend_from_slice(&value);
        assert_eq!(
            decoded(&block).unwrap(),
            [
                (":status".to_owned(), "200".to_owned()),
                ("x-cache".to_owned(), "HIT".to_owned())
            ]
        );
    }

    /// Names not wanted are passed over, Huffman-coded or not, and a Huffman-coded name is
    /// told from its coding alone; the head's own names are all kept.
    #[test]
    fn only_wanted_names_are_handed_over() {
        let mut block = vec![0, 0];
        for (name, value, huffman) in [
            (&b"x-other"[..], &b"1"[..], true),
            (b"x-other", b"2", false),
            (b"x-cache", b"MISS", false),
            (b"x-cachf", b"3", true),
            (b"x-cache", b"HIT", true),
        ] {
            let name = if huffman {
                huffman_encode(name)
            } else {
                name.to_vec()
            };
            put_integer(&mut block, if huffman { 0x28 } else { 0x20 }, 3, name.len());
            block.extend_from_slice(&name);
            put_integer(&mut block, 0, 7, value.len());
            block.extend_from_slice(value);
        }
        let seen = decoded(&block).unwrap();
        assert_eq!(
            seen,
            [
                ("x-cache".to_owned(), "MISS".to_owned()),
                ("x-cache".to_owned(), "HIT".to_owned())
            ]
        );
        for name in crate::h2::HeadFields::NAMES {
            assert!(crate::h2::HeadFields::wanted(name));
        }
        assert!(!crate::h2::HeadFields::wanted(b"date"));
    }

    #[test]
    fn a_dynamic_reference_or_a_short_block_is_an_error() {
        assert!(decoded(&[0x02, 0x00, 0xc1]).is_err(), "insert count 2");
        assert!(decoded(&[0x00, 0x00, 0x80]).is_err(), "dynamic indexed");
        assert!(decoded(&[0x00, 0x00, 0x10]).is_err(), "post-base");
        assert!(
            decoded(&[0x00, 0x00, 0xc0 | 0x3f, 0x7f]).is_err(),
            "index 190"
        );
        assert!(
            decoded(&[0x00, 0x00, 0x51, 0x0b, 0x2f]).is_err(),
            "value cut short"
        );
        assert!(decoded(&[0x00]).is_err(), "no base");
    }
}

//! The histogram codec: HdrHistogram V2 + DEFLATE, base64-encoded.
//!
//! Decoding trusts nothing in the blob: a run file may come from anywhere. The lengths a
//! blob claims are checked against what the run's histogram layout can need before anything
//! is allocated, and the DEFLATE stream is inflated through a bounded reader, so a 56-byte
//! blob claiming a 4 GiB payload or a real DEFLATE bomb is refused, not allocated.

use std::io::Read as _;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer as _, V2DeflateSerializer,
};
use serde::{Deserialize, Serialize};

use crate::error::SchemaError;
use crate::plan::HistogramSettings;

/// Cookie of an uncompressed V2 histogram.
const V2_COOKIE: u32 = 0x1c84_9313;
/// Cookie of a DEFLATE-compressed V2 histogram.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Header of an uncompressed V2 histogram: cookie, payload length, normalizing offset,
/// significant digits, lowest, highest, integer-to-double ratio.
const V2_HEADER: usize = 4 + 4 + 4 + 4 + 8 + 8 + 8;
/// A count is a zig-zag LEB128 varint of at most 9 bytes.
const MAX_VARINT: usize = 9;

/// A histogram in HdrHistogram's compressed V2 format (cookie `0x1c849314`),
/// base64-encoded as every HdrHistogram implementation and `.hlog` file does.
///
/// The string starts with `HISTF`; Java's `Histogram.decodeFromCompressedByteBuffer`,
/// HdrHistogram_c's `hdr_log_decode` and the Rust crate's `Deserializer` read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EncodedHistogram(pub String);

impl EncodedHistogram {
    /// Encodes a histogram.
    ///
    /// # Errors
    /// Only if compression fails, which does not happen for in-memory buffers.
    pub fn encode(histogram: &Histogram<u64>) -> Result<Self, SchemaError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(histogram, &mut bytes)
            .map_err(|e| SchemaError::Histogram(format!("cannot encode histogram: {e:?}")))?;
        Ok(EncodedHistogram(STANDARD.encode(bytes)))
    }

    /// Decodes a histogram of the run file's layout ([`HistogramSettings::default`]), the
    /// only one vload writes.
    ///
    /// # Errors
    /// [`SchemaError::Histogram`] if the text is not base64, not an HdrHistogram, has another
    /// layout, or claims more data than that layout can hold.
    pub fn decode(&self) -> Result<Histogram<u64>, SchemaError> {
        let bad = |why: String| SchemaError::Histogram(why);
        let limit = max_payload();
        // Base64 is 4 characters for 3 bytes; the compressed form is never much larger than
        // the uncompressed payload it holds.
        if self.0.len() > (limit + V2_HEADER + 64) * 2 {
            return Err(bad(format!(
                "histogram of {} characters is larger than any histogram of this layout",
                self.0.len()
            )));
        }
        let bytes = STANDARD
            .decode(self.0.as_bytes())
            .map_err(|e| bad(format!("histogram is not base64 ({e})")))?;
        let raw = inflate(&bytes, limit)?;
        check_header(&raw, &HistogramSettings::default(), limit)?;
        Deserializer::new()
            .deserialize(&mut raw.as_slice())
            .map_err(|e| bad(format!("histogram does not decode: {}", describe(&e))))
    }
}

/// The largest uncompressed payload a histogram of the default layout can have.
fn max_payload() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let h = new_histogram(&HistogramSettings::default());
        h.distinct_values() * MAX_VARINT
    })
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// The uncompressed V2 histogram inside a compressed one, inflated no further than `limit`
/// plus the header allows.
fn inflate(bytes: &[u8], limit: usize) -> Result<Vec<u8>, SchemaError> {
    let bad = |why: &str| SchemaError::Histogram(format!("histogram does not decode: {why}"));
    match u32_at(bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {}
        Some(V2_COOKIE) => return Ok(bytes.to_vec()),
        Some(_) => return Err(bad("not an HdrHistogram V2 blob (wrong cookie)")),
        None => return Err(bad("shorter than a histogram header")),
    }
    let length = u32_at(bytes, 4).ok_or_else(|| bad("shorter than a histogram header"))? as usize;
    let body = &bytes[8..];
    if length > body.len() {
        return Err(bad(&format!(
            "claims {length} compressed bytes but holds {}",
            body.len()
        )));
    }
    let cap = (limit + V2_HEADER) as u64;
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&body[..length])
        .take(cap + 1)
        .read_to_end(&mut raw)
        .map_err(|e| bad(&format!("DEFLATE stream is broken ({e})")))?;
    if raw.len() as u64 > cap {
        return Err(bad(&format!(
            "inflates beyond the {} bytes a histogram of this layout can need",
            cap
        )));
    }
    Ok(raw)
}

/// Checks an uncompressed V2 header against the expected layout and the size it allows.
fn check_header(raw: &[u8], layout: &HistogramSettings, limit: usize) -> Result<(), SchemaError> {
    let bad = |why: String| SchemaError::Histogram(format!("histogram does not decode: {why}"));
    if raw.len() < V2_HEADER || u32_at(raw, 0) != Some(V2_COOKIE) {
        return Err(bad("no V2 histogram inside the compressed blob".into()));
    }
    let payload = u32_at(raw, 4).unwrap_or(0) as usize;
    let sigfig = u32_at(raw, 12).unwrap_or(0);
    let (lowest, highest) = (u64_at(raw, 16).unwrap_or(0), u64_at(raw, 24).unwrap_or(0));
    if (lowest, highest, sigfig)
        != (
            layout.lowest_ns,
            layout.highest_ns,
            u32::from(layout.sigfig),
        )
    {
        return Err(SchemaError::Histogram(format!(
            "histogram layout {lowest}..{highest} ns at {sigfig} digits is not the run's ({}..{} ns at {} digits)",
            layout.lowest_ns, layout.highest_ns, layout.sigfig
        )));
    }
    if payload > limit || payload > raw.len() - V2_HEADER {
        return Err(bad(format!(
            "claims a {payload}-byte payload but holds {} (a histogram of this layout needs at most {limit})",
            raw.len() - V2_HEADER
        )));
    }
    Ok(())
}

fn describe(e: &DeserializeError) -> &'static str {
    match e {
        DeserializeError::IoError(_) => "the payload ends early",
        DeserializeError::InvalidCookie => "not an HdrHistogram V2 blob (wrong cookie)",
        DeserializeError::UnsupportedFeature => "uses a feature vload does not write",
        DeserializeError::UnsuitableCounterType => "a count is out of range",
        DeserializeError::InvalidParameters => "its layout is invalid",
        DeserializeError::UsizeTypeTooSmall => "a length is out of range",
        DeserializeError::EncodedArrayTooLong => "it holds more counts than its layout has",
    }
}

/// Creates an empty histogram with the run file's standard layout.
pub fn new_histogram(settings: &HistogramSettings) -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(
        settings.lowest_ns,
        settings.highest_ns,
        settings.sigfig,
    )
    .expect("HistogramSettings hold valid bounds")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard() -> Histogram<u64> {
        new_histogram(&HistogramSettings::default())
    }

    fn compressed(inner: &[u8]) -> EncodedHistogram {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(inner).unwrap();
        let deflated = z.finish().unwrap();
        let mut blob = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        blob.extend((deflated.len() as u32).to_be_bytes());
        blob.extend(deflated);
        EncodedHistogram(STANDARD.encode(blob))
    }

    fn header(payload: u32, lowest: u64, highest: u64, sigfig: u32) -> Vec<u8> {
        let mut h = V2_COOKIE.to_be_bytes().to_vec();
        h.extend(payload.to_be_bytes());
        h.extend(0u32.to_be_bytes());
        h.extend(sigfig.to_be_bytes());
        h.extend(lowest.to_be_bytes());
        h.extend(highest.to_be_bytes());
        h.extend(1f64.to_be_bytes());
        h
    }

    #[test]
    fn round_trips_and_uses_the_compressed_v2_cookie() {
        let mut h = standard();
        for v in [1u64, 250_000, 1_000_000, 59_999_999_999] {
            h.record_n(v, 3).unwrap();
        }
        let enc = EncodedHistogram::encode(&h).unwrap();
        assert!(enc.0.starts_with("HISTF"), "{}", enc.0);
        let raw = STANDARD.decode(&enc.0).unwrap();
        assert_eq!(&raw[..4], &[0x1c, 0x84, 0x93, 0x14]);
        let back = enc.decode().unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 12);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn rejects_garbage_with_a_clear_error() {
        let err = EncodedHistogram("not base64!".into()).decode().unwrap_err();
        assert!(err.to_string().contains("not base64"), "{err}");
        let err = EncodedHistogram(STANDARD.encode(b"abcdefgh"))
            .decode()
            .unwrap_err();
        assert!(err.to_string().contains("does not decode"), "{err}");
        assert!(
            !err.to_string().contains("Error"),
            "no Rust Debug text: {err}"
        );
    }

    #[test]
    fn a_blob_claiming_a_4_gib_payload_is_refused_before_allocating() {
        // See #17: 56 bytes that claimed a 4 GiB payload made report allocate 4 GB.
        let blob = compressed(&header(u32::MAX, 1, 60_000_000_000, 3));
        let err = blob.decode().unwrap_err().to_string();
        assert!(err.contains("claims a 4294967295-byte payload"), "{err}");
    }

    #[test]
    fn a_deflate_bomb_is_refused() {
        // 64 MiB of zeros compress to a few kilobytes.
        let mut inner = header(64 << 20, 1, 60_000_000_000, 3);
        inner.resize(inner.len() + (64 << 20), 0);
        let blob = compressed(&inner);
        assert!(blob.0.len() < 200_000, "{}", blob.0.len());
        let err = blob.decode().unwrap_err().to_string();
        assert!(err.contains("inflates beyond"), "{err}");
    }

    #[test]
    fn another_layout_is_refused() {
        let blob = compressed(&header(0, 1, u64::MAX / 2, 5));
        let err = blob.decode().unwrap_err().to_string();
        assert!(err.contains("is not the run's"), "{err}");
    }
}

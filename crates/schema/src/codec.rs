//! The histogram codec: HdrHistogram V2 + DEFLATE, base64-encoded.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::SchemaError;

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

    /// Decodes the histogram.
    ///
    /// # Errors
    /// [`SchemaError::Histogram`] if the text is not base64 or not an HdrHistogram.
    pub fn decode(&self) -> Result<Histogram<u64>, SchemaError> {
        let bytes = STANDARD
            .decode(self.0.as_bytes())
            .map_err(|e| SchemaError::Histogram(format!("histogram is not base64: {e}")))?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| SchemaError::Histogram(format!("histogram does not decode: {e:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_uses_the_compressed_v2_cookie() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
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
    }
}

//! Cache workloads and what a cache should achieve for them.
//!
//! A [`Catalogue`] is a seeded, reproducible set of objects: N paths (optionally spread
//! over virtual hosts), a popularity law over them ([`Popularity`]: Zipf, uniform, or a hot
//! set beside a crawl), a size and a TTL for each object derived from its id, and a share
//! of one-hit wonders (objects asked once). Each worker draws from it with its own
//! [`Sampler`]; every object's path carries its size and TTL as `vload origin` reads them
//! (`/c/17?size=5120&cache=max-age=300`), so the built-in origin serves the catalogue
//! behind any cache with no files.
//!
//! [`model::predict`] says what a cache should have achieved for the catalogue: the hit
//! ratio of an LRU cache of a given capacity (Che's approximation, with the origin's TTL
//! folded in), and the most any cache can hit over a run that starts cold (compulsory
//! misses). [`lru::simulate`] is the exact oracle the approximation is tested against.
//!
//! ```
//! use vload_cache::{Catalogue, Popularity, SizeLaw};
//! let catalogue = Catalogue {
//!     objects: 10_000,
//!     popularity: Popularity::Zipf(0.8),
//!     sizes: SizeLaw::Fixed(4096),
//!     ..Catalogue::default()
//! };
//! let mut sampler = catalogue.sampler(0, 1);
//! let first = sampler.next_id();
//! assert!(first < 10_000);
//! assert_eq!(catalogue.path(first), format!("/c/{first}?size=4096"));
//! ```

mod catalogue;
pub mod lru;
pub mod model;
mod parse;
mod popularity;
mod record;
mod size;

pub use catalogue::{Catalogue, Sampler};
pub use parse::{parse_bytes, parse_capacity, parse_ttl};
pub use popularity::{Popularity, Zipf};
pub use record::{model_record, remodel};
pub use size::SizeLaw;

/// How much a cache holds: bytes of bodies, or a number of objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    /// Bytes of object bodies.
    Bytes(u64),
    /// Objects, whatever their size.
    Objects(u64),
}

impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capacity::Bytes(b) => write!(f, "{}", parse::bytes_text(*b)),
            Capacity::Objects(n) => write!(f, "{n} objects"),
        }
    }
}

/// splitmix64: a well-mixed 64-bit hash of `x`, used to derive every per-object property
/// from the catalogue's seed and the object's id.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) from 53 bits of `x`.
pub(crate) fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

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

mod capacity;
mod catalogue;
mod crawler;
mod hash;
pub mod lru;
pub mod model;
mod parse;
pub mod policy;
mod popularity;
mod ranges;
mod record;
mod sampler;
mod size;
mod variants;

pub use capacity::{Capacity, parse_capacity};
pub use catalogue::Catalogue;
pub use crawler::Crawler;
pub use parse::{parse_bytes, parse_ttl};
pub use popularity::{Popularity, Zipf};
pub use ranges::{ByteRange, RangeKind, Ranges};
pub use record::{model_record, remodel};
pub use sampler::Sampler;
pub use size::{SizeLaw, TABLE_SIZES};
pub use variants::{MOST_VARIANTS, QUERY_PARAMETER, VARY_HEADER, VARY_NAME, VariantKind, Variants};

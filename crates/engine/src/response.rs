//! What every client (the HTTP/1.1 decoder, the HTTP/2 connection, hyper's) hands back of a
//! response: all the engine keeps of it.

use crate::cache::{CacheClass, CacheSource};

/// What the engine keeps of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body_bytes: u64,
    pub(crate) cache: (CacheClass, Option<CacheSource>),
    /// The server closes the connection after this response.
    pub(crate) close: bool,
}

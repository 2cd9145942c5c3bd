//! The fields of a response head vload keeps (`:status`, the cache headers, the origin's
//! `Server-Timing`), decoded by HTTP/2's and HTTP/3's clients alike.

use crate::cache::CacheHeaders;

#[derive(Default)]
pub(crate) struct HeadFields {
    pub(crate) status: Option<u16>,
    varnish: Kept,
    x_cache: Kept,
    cache_status: Kept,
    age: Kept,
    warning: Kept,
    /// The origin's own time (`Server-Timing`).
    pub(crate) origin: Option<u64>,
}

impl HeadFields {
    /// Forgets the last head's fields (keeping their buffers).
    pub(crate) fn clear(&mut self) {
        self.status = None;
        self.varnish.seen = false;
        self.x_cache.seen = false;
        self.cache_status.seen = false;
        self.age.seen = false;
        self.warning.seen = false;
        self.origin = None;
    }

    /// The (lowercase) names of the fields vload keeps.
    pub(crate) const NAMES: [&'static [u8]; 7] = [
        b":status",
        b"x-varnish",
        b"x-cache",
        b"cache-status",
        b"age",
        b"server-timing",
        b"warning",
    ];

    /// Whether a field of this (lowercase) name is one vload keeps ([`HeadFields::NAMES`]).
    pub(crate) fn wanted(name: &[u8]) -> bool {
        matches!(
            name,
            b":status"
                | b"x-varnish"
                | b"x-cache"
                | b"cache-status"
                | b"age"
                | b"server-timing"
                | b"warning"
        )
    }

    /// Keeps a field [`HeadFields::wanted`] accepted.
    pub(crate) fn keep(&mut self, name: &[u8], value: &[u8]) {
        match name {
            b":status" => {
                self.status = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| v.len() == 3)
                    .and_then(|v| v.parse().ok());
            }
            b"x-varnish" => self.varnish.set(value),
            // Several field lines of a list are one list.
            b"x-cache" => self.x_cache.append(value),
            b"cache-status" => self.cache_status.append(value),
            b"server-timing" => {
                self.origin = self.origin.or_else(|| crate::timing::origin_ns(value));
            }
            b"warning" => {
                if crate::cache::says_stale(value) {
                    self.warning.set(value);
                }
            }
            _ => self.age.set(value),
        }
    }

    /// What the head said of the cache.
    pub(crate) fn cache(&self) -> crate::cache::Verdict {
        crate::cache::decide(CacheHeaders {
            varnish: self.varnish.get(),
            status: self.cache_status.get(),
            x_cache: self.x_cache.get(),
            age: self.age.get(),
            warning: self.warning.get(),
            // Appended to the lists above as they came.
            ..CacheHeaders::default()
        })
    }
}

/// A header value kept from one header block to decide the cache status; its buffer is
/// reused, so a Varnish response (X-Varnish and Age on every one) allocates nothing.
#[derive(Default)]
struct Kept {
    value: Vec<u8>,
    seen: bool,
}

impl Kept {
    fn set(&mut self, value: &[u8]) {
        self.value.clear();
        self.value.extend_from_slice(value);
        self.seen = true;
    }

    /// Adds a field line to the list kept, after a comma.
    fn append(&mut self, value: &[u8]) {
        if !self.seen {
            return self.set(value);
        }
        self.value.extend_from_slice(b", ");
        self.value.extend_from_slice(value);
    }

    fn get(&self) -> Option<&[u8]> {
        self.seen.then_some(&self.value[..])
    }
}

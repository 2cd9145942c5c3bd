//! What every policy shares: the trait the simulations answer to, and the store of entries
//! (the limit, the index, the slab) with its lookup that drops an expired entry.

use std::collections::HashMap;

use super::queue::{Queue, Slab};
use crate::Capacity;

/// A cache that says whether each access hit.
pub trait Replacement {
    /// One access at `now` (seconds) to object `id` of `size` bytes; an object stored on a
    /// miss expires `ttl` seconds later. True for a hit.
    fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool;
}

/// What every policy shares: the limit, the index and the entries.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    bytes: bool,
    pub(crate) limit: u64,
    pub(crate) map: HashMap<u64, usize>,
    pub(crate) slab: Slab,
}

/// What an access found.
pub(crate) enum Found {
    /// Held and fresh: the slot.
    Fresh(usize),
    /// Not held, or held past its expiry (now dropped): the cost it would take.
    Missing(u64),
    /// Larger than the whole cache: never stored.
    TooLarge,
}

impl Store {
    pub(crate) fn new(capacity: Capacity) -> Store {
        let (bytes, limit) = match capacity {
            Capacity::Bytes(b) => (true, b),
            Capacity::Objects(n) => (false, n),
        };
        Store {
            bytes,
            limit,
            map: HashMap::new(),
            slab: Slab::default(),
        }
    }

    pub(crate) fn cost(&self, size: u64) -> u64 {
        if self.bytes { size } else { 1 }
    }

    /// Looks `id` up; an expired entry is unlinked from `queues` and freed.
    pub(crate) fn find(&mut self, id: u64, size: u64, now: f64, queues: &mut [Queue]) -> Found {
        let cost = self.cost(size);
        match self.map.get(&id).copied() {
            Some(i) if now < self.slab[i].expires => Found::Fresh(i),
            Some(i) => {
                self.drop_entry(i, queues);
                Found::Missing(cost)
            }
            None if cost > self.limit => Found::TooLarge,
            None => Found::Missing(cost),
        }
    }

    /// Unlinks slot `i` from its queue and forgets it.
    pub(crate) fn drop_entry(&mut self, i: usize, queues: &mut [Queue]) {
        let q = usize::from(self.slab[i].queue);
        queues[q].unlink(&mut self.slab, i);
        self.map.remove(&self.slab[i].id);
        self.slab.release(i);
    }

    /// A new entry in queue `q`, at its front.
    pub(crate) fn store(&mut self, id: u64, cost: u64, expires: f64, q: u8, queues: &mut [Queue]) {
        let i = self.slab.insert(id, cost, expires, q);
        queues[usize::from(q)].push_front(&mut self.slab, i);
        self.map.insert(id, i);
    }
}

/// When an object stored at `now` expires.
pub(crate) fn expiry(now: f64, ttl: Option<f64>) -> f64 {
    ttl.map_or(f64::INFINITY, |t| now + t)
}

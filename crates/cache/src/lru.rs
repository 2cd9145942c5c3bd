//! An exact LRU cache, the oracle the model is tested against: objects of a size, a
//! capacity in bytes or objects, and an optional expiry set when an object is stored
//! (the origin's max-age, not renewed by hits).

use std::collections::HashMap;

use crate::Capacity;

const NONE: usize = usize::MAX;

#[derive(Debug, Clone)]
struct Node {
    id: u64,
    size: u64,
    expires: f64,
    prev: usize,
    next: usize,
}

/// An LRU cache of object ids.
#[derive(Debug, Clone)]
pub struct Lru {
    capacity: Capacity,
    used: u64,
    map: HashMap<u64, usize>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
}

impl Lru {
    /// An empty cache.
    pub fn new(capacity: Capacity) -> Lru {
        Lru {
            capacity,
            used: 0,
            map: HashMap::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
        }
    }

    fn cost(&self, size: u64) -> u64 {
        match self.capacity {
            Capacity::Bytes(_) => size,
            Capacity::Objects(_) => 1,
        }
    }

    fn limit(&self) -> u64 {
        match self.capacity {
            Capacity::Bytes(b) | Capacity::Objects(b) => b,
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        match prev {
            NONE => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NONE => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NONE;
        self.nodes[i].next = self.head;
        if self.head != NONE {
            self.nodes[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NONE {
            self.tail = i;
        }
    }

    fn remove(&mut self, i: usize) {
        self.unlink(i);
        self.used -= self.cost(self.nodes[i].size);
        self.map.remove(&self.nodes[i].id);
        self.free.push(i);
    }

    /// One request for object `id` of `size` bytes at `now` seconds; a miss stores it with
    /// an expiry `ttl` seconds on. True for a hit.
    pub fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool {
        if let Some(&i) = self.map.get(&id) {
            if self.nodes[i].expires > now {
                self.unlink(i);
                self.push_front(i);
                return true;
            }
            self.remove(i);
        }
        let cost = self.cost(size);
        if cost > self.limit() {
            return false;
        }
        while self.used + cost > self.limit() {
            self.remove(self.tail);
        }
        let node = Node {
            id,
            size,
            expires: ttl.map_or(f64::INFINITY, |t| now + t),
            prev: NONE,
            next: NONE,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.map.insert(id, i);
        self.used += cost;
        self.push_front(i);
        false
    }
}

/// Hits among `requests` of (id, size, time in seconds, TTL) through an LRU cache of
/// `capacity` that starts empty.
pub fn simulate(
    requests: impl IntoIterator<Item = (u64, u64, f64, Option<f64>)>,
    capacity: Capacity,
) -> u64 {
    let mut cache = Lru::new(capacity);
    requests
        .into_iter()
        .filter(|&(id, size, now, ttl)| cache.access(id, size, now, ttl))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut c = Lru::new(Capacity::Objects(2));
        assert!(!c.access(1, 10, 0.0, None));
        assert!(!c.access(2, 10, 0.0, None));
        assert!(c.access(1, 10, 0.0, None));
        assert!(!c.access(3, 10, 0.0, None), "evicts 2, the least recent");
        assert!(c.access(1, 10, 0.0, None));
        assert!(!c.access(2, 10, 0.0, None));
    }

    #[test]
    fn bytes_evict_as_many_as_needed_and_too_large_is_never_stored() {
        let mut c = Lru::new(Capacity::Bytes(100));
        for id in 0..4 {
            c.access(id, 25, 0.0, None);
        }
        assert!(!c.access(9, 60, 0.0, None), "evicts 0, 1 and 2");
        assert!(c.access(3, 25, 0.0, None));
        assert!(!c.access(0, 25, 0.0, None));
        assert!(!c.access(7, 101, 0.0, None));
        assert!(
            !c.access(7, 101, 0.0, None),
            "larger than the cache: never stored"
        );
    }

    #[test]
    fn an_expired_object_misses_and_hits_do_not_renew_it() {
        let mut c = Lru::new(Capacity::Objects(10));
        assert!(!c.access(1, 1, 0.0, Some(10.0)));
        assert!(c.access(1, 1, 9.0, Some(10.0)));
        assert!(!c.access(1, 1, 10.5, Some(10.0)));
        assert!(c.access(1, 1, 20.0, Some(10.0)));
    }
}

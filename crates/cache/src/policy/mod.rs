//! Replacement policies beyond LRU, each an exact simulation: FIFO, SIEVE (Zhang et al.,
//! NSDI 2024), S3-FIFO (Yang et al., SOSP 2023) and W-TinyLFU (Einziger, Friedman and Manes,
//! 2017; Caffeine's policy), beside [`crate::lru::Lru`]. Each takes the same accesses (an id,
//! its size, the time and the origin's max-age, set when stored and not renewed by hits)
//! and says whether each hit. [`shards`] predicts a catalogue's hit ratio under any of them
//! from a spatially sampled simulation (SHARDS, Waldspurger et al., FAST 2015).

mod queue;
mod s3fifo;
pub mod shards;
mod store;
mod tinylfu;

use std::str::FromStr;

use queue::Queue;
pub use store::Replacement;
use store::{Found, Store, expiry};

use crate::Capacity;
use crate::lru::Lru;

/// A replacement policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Least recently used: a hit moves the object to the front (Varnish, nginx).
    Lru,
    /// First in, first out: hits change nothing.
    Fifo,
    /// A FIFO with a visited bit and a hand that moves from the oldest toward the newest,
    /// sparing (and clearing) the visited.
    Sieve,
    /// A small FIFO (10%) that new objects enter, a main FIFO with 2-bit frequencies, and a
    /// ghost FIFO of ids recently evicted from the small one.
    S3Fifo,
    /// A window LRU (1%) before a segmented LRU (20% probation, 80% protected), admission by
    /// a count-min frequency sketch: the window's oldest enters only if asked more often
    /// than the victim it would replace.
    WTinyLfu,
}

impl Policy {
    /// Every policy, in table order.
    pub const ALL: [Policy; 5] = [
        Policy::Lru,
        Policy::Fifo,
        Policy::Sieve,
        Policy::S3Fifo,
        Policy::WTinyLfu,
    ];

    /// Its name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Lru => "lru",
            Policy::Fifo => "fifo",
            Policy::Sieve => "sieve",
            Policy::S3Fifo => "s3-fifo",
            Policy::WTinyLfu => "w-tinylfu",
        }
    }

    /// An empty cache of this policy.
    pub fn cache(self, capacity: Capacity) -> Box<dyn Replacement> {
        match self {
            Policy::Lru => Box::new(Lru::new(capacity)),
            Policy::Fifo => Box::new(Fifo::new(capacity, false)),
            Policy::Sieve => Box::new(Fifo::new(capacity, true)),
            Policy::S3Fifo => Box::new(s3fifo::S3Fifo::new(capacity)),
            Policy::WTinyLfu => Box::new(tinylfu::WTinyLfu::new(capacity)),
        }
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim().to_ascii_lowercase();
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| {
                format!("'{text}' is not a replacement policy: expected lru, fifo, sieve, s3-fifo or w-tinylfu")
            })
    }
}

impl Replacement for Lru {
    fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool {
        Lru::access(self, id, size, now, ttl)
    }
}

/// Hits among `requests` of (id, size, time in seconds, TTL) through a cache of `policy` and
/// `capacity` that starts empty.
pub fn simulate(
    policy: Policy,
    requests: impl IntoIterator<Item = (u64, u64, f64, Option<f64>)>,
    capacity: Capacity,
) -> u64 {
    let mut cache = policy.cache(capacity);
    requests
        .into_iter()
        .filter(|&(id, size, now, ttl)| cache.access(id, size, now, ttl))
        .count() as u64
}

/// FIFO, and SIEVE when `sieve`: one queue, the newest at the front.
#[derive(Debug, Clone)]
struct Fifo {
    store: Store,
    queue: [Queue; 1],
    sieve: bool,
    /// SIEVE's hand: the next entry looked at for eviction (the oldest when none).
    hand: Option<usize>,
}

impl Fifo {
    fn new(capacity: Capacity, sieve: bool) -> Fifo {
        Fifo {
            store: Store::new(capacity),
            queue: [Queue::default()],
            sieve,
            hand: None,
        }
    }

    fn evict(&mut self) {
        let q = &mut self.queue[0];
        let slab = &mut self.store.slab;
        let Some(mut at) = self.hand.or(q.back()) else {
            return;
        };
        if self.sieve {
            // Spare the visited, clearing their bit, until one was not: the hand stays there.
            while slab[at].freq > 0 {
                slab[at].freq = 0;
                at = q
                    .newer(slab, at)
                    .or(q.back())
                    .expect("a queue with entries");
            }
            self.hand = q.newer(slab, at);
        }
        self.store.drop_entry(at, &mut self.queue);
    }
}

impl Replacement for Fifo {
    fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool {
        if self
            .hand
            .is_some_and(|h| self.store.map.get(&id) == Some(&h))
        {
            // The entry under the hand may expire and leave: the hand moves on first.
            let h = self.hand.expect("checked");
            if now >= self.store.slab[h].expires {
                self.hand = self.queue[0].newer(&self.store.slab, h);
            }
        }
        let cost = match self.store.find(id, size, now, &mut self.queue) {
            Found::Fresh(i) => {
                self.store.slab[i].freq = 1;
                return true;
            }
            Found::TooLarge => return false,
            Found::Missing(cost) => cost,
        };
        while self.queue[0].cost + cost > self.store.limit {
            self.evict();
        }
        self.store
            .store(id, cost, expiry(now, ttl), 0, &mut self.queue);
        false
    }
}

#[cfg(test)]
mod tests;

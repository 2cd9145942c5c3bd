//! S3-FIFO (Yang et al., SOSP 2023), as libCacheSim's original `S3FIFOv0`: a small FIFO of
//! a tenth of the capacity that new objects enter, a main FIFO with a 2-bit frequency
//! (a hit adds one, up to 3), and a ghost FIFO of the ids evicted from the small one, as
//! large as the main one. An object leaving the small FIFO moves to the main one if it was
//! asked again while there, else its id goes to the ghost; an object asked while a ghost
//! enters the main FIFO directly. The main FIFO's oldest is reinserted with one less while
//! its frequency is above zero, else evicted.

use std::collections::{HashMap, VecDeque};

use super::queue::Queue;
use super::store::{Found, Replacement, Store, expiry};
use crate::Capacity;

const SMALL: u8 = 0;
const MAIN: u8 = 1;

#[derive(Debug, Clone)]
pub(crate) struct S3Fifo {
    store: Store,
    queues: [Queue; 2],
    small_limit: u64,
    /// Ids evicted from the small FIFO, oldest first, with their costs and the number of
    /// their eviction.
    ghost: VecDeque<(u64, u64, u64)>,
    /// The ghost's live ids, each with the number of its latest entry: an older entry of the
    /// same id, or one taken back to the main FIFO, ages out uncounted.
    ghosts: HashMap<u64, u64>,
    /// The cost of the live entries.
    ghost_cost: u64,
    evictions: u64,
    ghost_limit: u64,
}

impl S3Fifo {
    pub(crate) fn new(capacity: Capacity) -> S3Fifo {
        let store = Store::new(capacity);
        let small_limit = (store.limit / 10).max(1);
        let ghost_limit = store.limit - store.limit / 10;
        S3Fifo {
            store,
            queues: [Queue::default(); 2],
            small_limit,
            ghost: VecDeque::new(),
            ghosts: HashMap::new(),
            ghost_cost: 0,
            ghost_limit,
            evictions: 0,
        }
    }

    fn used(&self) -> u64 {
        self.queues[0].cost + self.queues[1].cost
    }

    fn evict(&mut self) {
        let small = self.queues[usize::from(SMALL)];
        if small.cost > self.small_limit || self.queues[usize::from(MAIN)].back().is_none() {
            self.evict_small();
        } else {
            self.evict_main();
        }
    }

    fn evict_small(&mut self) {
        let Some(t) = self.queues[usize::from(SMALL)].back() else {
            return;
        };
        let slab = &mut self.store.slab;
        if slab[t].freq >= 1 {
            self.queues[usize::from(SMALL)].unlink(slab, t);
            slab[t].freq = 0;
            slab[t].queue = MAIN;
            self.queues[usize::from(MAIN)].push_front(slab, t);
            return;
        }
        let (id, cost) = (slab[t].id, slab[t].cost);
        self.store.drop_entry(t, &mut self.queues);
        self.remember(id, cost);
    }

    fn evict_main(&mut self) {
        let main = usize::from(MAIN);
        let Some(t) = self.queues[main].back() else {
            return;
        };
        let slab = &mut self.store.slab;
        if slab[t].freq > 0 {
            slab[t].freq -= 1;
            self.queues[main].touch(slab, t);
        } else {
            self.store.drop_entry(t, &mut self.queues);
        }
    }

    /// Puts an id evicted from the small FIFO in the ghost, dropping the oldest beyond its
    /// limit.
    fn remember(&mut self, id: u64, cost: u64) {
        self.evictions += 1;
        if self.ghosts.insert(id, self.evictions).is_some() {
            // Still a ghost (a miss revives it, so this does not happen): one live entry.
            self.ghost_cost -= cost;
        }
        self.ghost.push_back((id, cost, self.evictions));
        self.ghost_cost += cost;
        while self.ghost_cost > self.ghost_limit {
            let Some((old, c, n)) = self.ghost.pop_front() else {
                break;
            };
            if self.ghosts.get(&old) == Some(&n) {
                self.ghosts.remove(&old);
                self.ghost_cost -= c;
            }
        }
    }

    /// Takes `id` out of the ghost if it is there.
    fn revive(&mut self, id: u64, cost: u64) -> bool {
        let live = self.ghosts.remove(&id).is_some();
        if live {
            self.ghost_cost -= cost;
        }
        live
    }
}

impl Replacement for S3Fifo {
    fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool {
        let cost = match self.store.find(id, size, now, &mut self.queues) {
            Found::Fresh(i) => {
                let e = &mut self.store.slab[i];
                e.freq = (e.freq + 1).min(3);
                return true;
            }
            Found::TooLarge => return false,
            Found::Missing(cost) => cost,
        };
        while self.used() + cost > self.store.limit {
            self.evict();
        }
        // A ghost's id goes to the main FIFO (its entry ages out of the ghost's queue
        // uncounted).
        let q = if self.revive(id, cost) { MAIN } else { SMALL };
        self.store
            .store(id, cost, expiry(now, ttl), q, &mut self.queues);
        false
    }
}

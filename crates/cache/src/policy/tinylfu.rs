//! W-TinyLFU (Einziger, Friedman and Manes, ACM TOS 2017), as Caffeine builds it with a
//! fixed window: a window LRU of 1% of the capacity that every new object enters, and a
//! segmented LRU for the rest (probation 20%, protected 80%). Every access counts in a
//! count-min sketch of 4-bit counters (four rows), halved after ten accesses per object the
//! cache holds. When the window overflows its oldest becomes a candidate for the main part:
//! if the cache is full, it is admitted only when the sketch says it was asked more often
//! than probation's oldest, the victim; otherwise the candidate itself is evicted. A hit in
//! probation promotes to protected, whose overflow goes back to probation. (Caffeine's hill
//! climber, which resizes the window, and its doorkeeper are left out.)

use super::queue::Queue;
use super::store::{Found, Replacement, Store, expiry};
use crate::Capacity;
use crate::hash::mix;

const WINDOW: u8 = 0;
const PROBATION: u8 = 1;
const PROTECTED: u8 = 2;

#[derive(Debug, Clone)]
pub(crate) struct WTinyLfu {
    store: Store,
    queues: [Queue; 3],
    window_limit: u64,
    protected_limit: u64,
    sketch: Option<Sketch>,
}

impl WTinyLfu {
    pub(crate) fn new(capacity: Capacity) -> WTinyLfu {
        let store = Store::new(capacity);
        let window_limit = (store.limit / 100).max(1);
        let main = store.limit - window_limit.min(store.limit);
        WTinyLfu {
            store,
            queues: [Queue::default(); 3],
            window_limit,
            protected_limit: main - main / 5,
            sketch: None,
        }
    }

    fn used(&self) -> u64 {
        self.queues.iter().map(|q| q.cost).sum()
    }

    fn q(&mut self, q: u8) -> &mut Queue {
        &mut self.queues[usize::from(q)]
    }

    /// Moves slot `i` from its queue to the front of `to`.
    fn shift(&mut self, i: usize, to: u8) {
        let from = self.store.slab[i].queue;
        let slab = &mut self.store.slab;
        self.queues[usize::from(from)].unlink(slab, i);
        slab[i].queue = to;
        self.queues[usize::from(to)].push_front(slab, i);
    }

    fn hit(&mut self, i: usize) {
        match self.store.slab[i].queue {
            PROBATION => {
                self.shift(i, PROTECTED);
                while self.queues[usize::from(PROTECTED)].cost > self.protected_limit {
                    let Some(old) = self.queues[usize::from(PROTECTED)].back() else {
                        break;
                    };
                    self.shift(old, PROBATION);
                }
            }
            q => {
                let slab = &mut self.store.slab;
                self.queues[usize::from(q)].touch(slab, i);
            }
        }
    }

    /// The window's overflow enters probation; while the cache is over its limit, each
    /// candidate faces probation's oldest (else protected's) and the less asked leaves.
    fn admit(&mut self) {
        while self.queues[usize::from(WINDOW)].cost > self.window_limit {
            let Some(candidate) = self.q(WINDOW).back() else {
                break;
            };
            self.shift(candidate, PROBATION);
            while self.used() > self.store.limit {
                let victim = self
                    .q(PROBATION)
                    .back()
                    .filter(|v| *v != candidate)
                    .or_else(|| self.queues[usize::from(PROTECTED)].back());
                let sketch = self.sketch.as_ref().expect("made at the first access");
                let leaves = match victim {
                    Some(v)
                        if sketch.estimate(self.store.slab[candidate].id)
                            > sketch.estimate(self.store.slab[v].id) =>
                    {
                        v
                    }
                    _ => candidate,
                };
                self.store.drop_entry(leaves, &mut self.queues);
                if leaves == candidate {
                    break;
                }
            }
        }
        // The main part took more than its share while the window was not full: it gives
        // back its oldest.
        while self.used() > self.store.limit {
            let Some(old) = [PROBATION, PROTECTED, WINDOW]
                .into_iter()
                .find_map(|q| self.queues[usize::from(q)].back())
            else {
                break;
            };
            self.store.drop_entry(old, &mut self.queues);
        }
    }
}

impl Replacement for WTinyLfu {
    fn access(&mut self, id: u64, size: u64, now: f64, ttl: Option<f64>) -> bool {
        let cost = self.store.cost(size);
        let sketch = self.sketch.get_or_insert_with(|| {
            // Sized for the objects the cache can hold, guessed from the first one's cost.
            Sketch::new(self.store.limit / cost.max(1))
        });
        sketch.increment(id);
        let cost = match self.store.find(id, size, now, &mut self.queues) {
            Found::Fresh(i) => {
                self.hit(i);
                return true;
            }
            Found::TooLarge => return false,
            Found::Missing(cost) => cost,
        };
        self.store
            .store(id, cost, expiry(now, ttl), WINDOW, &mut self.queues);
        self.admit();
        false
    }
}

/// A count-min sketch of 4-bit counters, four rows, aged by halving.
#[derive(Debug, Clone)]
struct Sketch {
    rows: [Vec<u8>; 4],
    mask: u64,
    additions: u64,
    /// Additions before every counter is halved.
    sample: u64,
}

impl Sketch {
    fn new(objects: u64) -> Sketch {
        let width = objects.max(16).next_power_of_two();
        Sketch {
            rows: std::array::from_fn(|_| vec![0; width as usize]),
            mask: width - 1,
            additions: 0,
            sample: 10 * objects.max(16),
        }
    }

    fn slots(&self, id: u64) -> [usize; 4] {
        let h = mix(id);
        std::array::from_fn(|r| {
            (mix(h ^ (r as u64 + 1).wrapping_mul(0x9e37_79b9)) & self.mask) as usize
        })
    }

    fn increment(&mut self, id: u64) {
        for (row, at) in self.slots(id).into_iter().enumerate() {
            let c = &mut self.rows[row][at];
            *c = (*c + 1).min(15);
        }
        self.additions += 1;
        if self.additions >= self.sample {
            self.additions /= 2;
            self.rows.iter_mut().flatten().for_each(|c| *c /= 2);
        }
    }

    fn estimate(&self, id: u64) -> u8 {
        self.slots(id)
            .into_iter()
            .enumerate()
            .map(|(row, at)| self.rows[row][at])
            .min()
            .unwrap_or(0)
    }
}

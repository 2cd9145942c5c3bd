//! The entries of the policies' queues: one slab of nodes, and queues that link some of them
//! (a FIFO, a window, a probation segment), each keeping its own cost.

const NONE: usize = usize::MAX;

/// One cached object.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) id: u64,
    /// What it costs the capacity: its bytes, or one.
    pub(crate) cost: u64,
    /// When it expires (seconds; infinite without a TTL).
    pub(crate) expires: f64,
    /// A policy's bits: SIEVE's visited bit, S3-FIFO's 2-bit frequency.
    pub(crate) freq: u8,
    /// Which of the policy's queues holds it.
    pub(crate) queue: u8,
    prev: usize,
    next: usize,
}

/// Every entry of a cache, wherever it is queued; freed slots are reused.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slab {
    nodes: Vec<Entry>,
    free: Vec<usize>,
}

impl Slab {
    /// A new entry, linked nowhere yet.
    pub(crate) fn insert(&mut self, id: u64, cost: u64, expires: f64, queue: u8) -> usize {
        let entry = Entry {
            id,
            cost,
            expires,
            freq: 0,
            queue,
            prev: NONE,
            next: NONE,
        };
        match self.free.pop() {
            Some(i) => {
                self.nodes[i] = entry;
                i
            }
            None => {
                self.nodes.push(entry);
                self.nodes.len() - 1
            }
        }
    }

    /// Frees slot `i` (already unlinked).
    pub(crate) fn release(&mut self, i: usize) {
        self.free.push(i);
    }
}

impl std::ops::Index<usize> for Slab {
    type Output = Entry;
    fn index(&self, i: usize) -> &Entry {
        &self.nodes[i]
    }
}

impl std::ops::IndexMut<usize> for Slab {
    fn index_mut(&mut self, i: usize) -> &mut Entry {
        &mut self.nodes[i]
    }
}

/// A doubly linked queue over a [`Slab`]: the front is the newest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queue {
    head: usize,
    tail: usize,
    /// The cost of its entries together.
    pub(crate) cost: u64,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            head: NONE,
            tail: NONE,
            cost: 0,
        }
    }
}

impl Queue {
    /// The oldest entry.
    pub(crate) fn back(&self) -> Option<usize> {
        (self.tail != NONE).then_some(self.tail)
    }

    /// The entry before `i` (toward the front), if any.
    pub(crate) fn newer(&self, slab: &Slab, i: usize) -> Option<usize> {
        let p = slab[i].prev;
        (p != NONE).then_some(p)
    }

    pub(crate) fn push_front(&mut self, slab: &mut Slab, i: usize) {
        slab[i].prev = NONE;
        slab[i].next = self.head;
        if self.head != NONE {
            slab[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NONE {
            self.tail = i;
        }
        self.cost += slab[i].cost;
    }

    pub(crate) fn unlink(&mut self, slab: &mut Slab, i: usize) {
        let (prev, next) = (slab[i].prev, slab[i].next);
        if prev == NONE {
            self.head = next;
        } else {
            slab[prev].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            slab[next].prev = prev;
        }
        self.cost -= slab[i].cost;
    }

    /// Moves `i` (in this queue) to the front.
    pub(crate) fn touch(&mut self, slab: &mut Slab, i: usize) {
        self.unlink(slab, i);
        self.push_front(slab, i);
    }
}

//! Which catalogue objects a worker drew, in the warm-up and in the measured window: with
//! every worker's, the objects whose first request fell in the window, so the bound "from
//! empty" is the run's own (the distinct objects it actually drew), not the expectation of
//! a run like it (#58: an empty Varnish was told it "held objects before this attack" at
//! 58.15%, the bound of the 837 objects the run drew).

/// The largest catalogue whose draws are kept: two bits an object, 16 MiB a worker.
const MOST_OBJECTS: u64 = 1 << 26;

/// One worker's draws (or several workers', merged).
#[derive(Debug, Clone)]
pub(crate) struct ObjectDraws {
    /// The catalogue's objects; a draw at or above it is a one-hit wonder, unique.
    objects: u64,
    /// Bit per object: drawn in the warm-up.
    warm: Vec<u64>,
    /// Bit per object: drawn in the measured window.
    window: Vec<u64>,
    /// One-hit wonders drawn in the window: each a first request.
    wonders: u64,
    /// Requests of the window that drew an object (a request that failed before its draw,
    /// or expired in the queue, drew none).
    drawn: u64,
}

impl ObjectDraws {
    /// Draws of a catalogue of `objects`; `None` when it is too large to keep, or when
    /// `churn` replaces objects (a replaced object is a new one under the same rank).
    pub(crate) fn new(catalogue: &vload_cache::Catalogue) -> Option<ObjectDraws> {
        // A cache that keys on variants stores each apart: the run's keys are its objects.
        let objects = catalogue.keys();
        if objects > MOST_OBJECTS || catalogue.churn_per_s.is_some() {
            return None;
        }
        let words = objects.div_ceil(64) as usize;
        Some(ObjectDraws {
            objects,
            warm: vec![0; words],
            window: vec![0; words],
            wonders: 0,
            drawn: 0,
        })
    }

    /// Object `id` drawn for a request of the warm-up (`warmup`) or of the window.
    pub(crate) fn drew(&mut self, id: u64, warmup: bool) {
        self.drawn += u64::from(!warmup);
        if id >= self.objects {
            self.wonders += u64::from(!warmup);
            return;
        }
        let set = if warmup {
            &mut self.warm
        } else {
            &mut self.window
        };
        set[(id / 64) as usize] |= 1 << (id % 64);
    }

    /// Another worker's draws added.
    pub(crate) fn merge(&mut self, other: &ObjectDraws) {
        for (a, b) in self.warm.iter_mut().zip(&other.warm) {
            *a |= b;
        }
        for (a, b) in self.window.iter_mut().zip(&other.window) {
            *a |= b;
        }
        self.wonders += other.wonders;
        self.drawn += other.drawn;
    }

    /// The bound from empty for these draws: one minus the window's first requests of an
    /// object over the window's requests that drew one; `None` before any.
    pub(crate) fn cold_bound(&self) -> Option<f64> {
        let first = self.first_in_window().min(self.drawn);
        (self.drawn > 0).then(|| 1.0 - first as f64 / self.drawn as f64)
    }

    /// Requests of the window that were an object's first of the run: the misses no cache
    /// that was empty at the start can avoid.
    pub(crate) fn first_in_window(&self) -> u64 {
        let fresh: u64 = self
            .window
            .iter()
            .zip(&self.warm)
            .map(|(w, m)| u64::from((w & !m).count_ones()))
            .sum();
        fresh + self.wonders
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_requests_of_the_window_are_counted_once_across_workers() {
        let catalogue = vload_cache::Catalogue {
            objects: 1000,
            ..vload_cache::Catalogue::default()
        };
        let (mut a, mut b) = (
            ObjectDraws::new(&catalogue).unwrap(),
            ObjectDraws::new(&catalogue).unwrap(),
        );
        a.drew(3, true);
        a.drew(3, false);
        a.drew(5, false);
        a.drew(999, false);
        b.drew(5, false);
        b.drew(64, false);
        b.drew(1000, false);
        b.drew(1001, true);
        a.merge(&b);
        // 5, 999, 64 and the wonder 1000: 3 was warm, 1001 a wonder of the warm-up; 6 of
        // the 8 draws were the window's.
        assert_eq!(a.first_in_window(), 4);
        assert_eq!(a.cold_bound(), Some(1.0 - 4.0 / 6.0));
    }
}

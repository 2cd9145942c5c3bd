//! `--concurrency N`: a queue of N service slots, first come first served, whose service
//! times run on a virtual clock, so that the server's capacity is exactly N / D.
//!
//! A request takes the slot that frees first; its service starts when it arrived or when
//! that slot freed, whichever is later, and lasts D (`--delay` or `delay=`), or, with
//! `--service exponential`, a seeded exponential time of mean D. Its response is written
//! when its service ends. A timer that wakes late delays that response, never the next
//! request's service: the slots free on the virtual clock, so a loaded machine cannot
//! lower the capacity below N / D (a server that made each slot wait for its timer lost
//! 5-6% of it to the timer's lateness). A test of a capacity sweep then knows its truth:
//! N / D sustained, and above it a queue that grows without bound. With exponential
//! service the queue is M/M/N under Poisson arrivals, whose response time has a closed form.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long each request holds its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Service {
    /// Exactly the delay.
    #[default]
    Constant,
    /// Exponential with the delay as its mean, from a generator seeded with `seed`.
    Exponential {
        /// The generator's seed: the same seed, the same service times in order.
        seed: u64,
    },
}

/// The slots and the service-time generator.
#[derive(Debug)]
pub(crate) struct Queue {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// When each slot frees, on the virtual clock (a min-heap).
    free_at: BinaryHeap<Reverse<Instant>>,
    service: Service,
    rng: u64,
}

impl Queue {
    pub(crate) fn new(slots: usize, service: Service) -> Queue {
        let now = Instant::now();
        let rng = match service {
            Service::Constant => 0,
            Service::Exponential { seed } => seed,
        };
        Queue {
            state: Mutex::new(State {
                free_at: (0..slots.max(1)).map(|_| Reverse(now)).collect(),
                service,
                rng,
            }),
        }
    }

    /// Admits a request that arrived at `arrival` with mean service `mean`; returns when
    /// its service ends (when its response goes out).
    pub(crate) fn admit(&self, arrival: Instant, mean: Duration) -> Instant {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let service = match state.service {
            Service::Constant => mean,
            Service::Exponential { .. } => mean.mul_f64(exponential(&mut state.rng)),
        };
        let Reverse(free) = state.free_at.pop().expect("a queue has a slot");
        let done = free.max(arrival) + service;
        state.free_at.push(Reverse(done));
        done
    }
}

/// An exponential draw of mean 1 from SplitMix64 (the engine's Poisson arrivals use the same
/// generator, so one seed names one sequence in every version).
fn exponential(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let unit = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    -unit.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_slots_of_d_serve_n_over_d_whatever_the_arrivals() {
        let queue = Queue::new(3, Service::Constant);
        let t0 = Instant::now();
        let d = Duration::from_millis(4);
        // 3,000 requests all at once: the last leaves after 1,000 services of 4 ms.
        let last = (0..3_000).map(|_| queue.admit(t0, d)).max().unwrap();
        let took = last.duration_since(t0);
        assert!(took >= Duration::from_secs(4), "{took:?}");
        assert!(took < Duration::from_millis(4_010), "{took:?}");
        // Arrivals spaced wider than D/N wait for nothing.
        let queue = Queue::new(2, Service::Constant);
        let t1 = Instant::now();
        for k in 0..100u32 {
            let at = t1 + Duration::from_millis(3) * k;
            assert_eq!(queue.admit(at, d), at + d);
        }
    }

    #[test]
    fn exponential_service_is_seeded_with_the_right_mean() {
        let draw = |seed| {
            let queue = Queue::new(1, Service::Exponential { seed });
            let t0 = Instant::now();
            let mut at = t0;
            (0..20_000)
                .map(|_| {
                    // Far apart: each service is its own, with no wait.
                    at += Duration::from_secs(1);
                    queue
                        .admit(at, Duration::from_millis(10))
                        .duration_since(at)
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (draw(7), draw(7));
        assert_eq!(a, b, "same seed, same service times");
        assert_ne!(a[..10], draw(8)[..10]);
        let mean = a.iter().map(Duration::as_secs_f64).sum::<f64>() / a.len() as f64;
        assert!((mean - 0.010).abs() < 0.0004, "mean {mean}");
    }
}

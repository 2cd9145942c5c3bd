//! The open loop's queue of requests that fell due and wait for a connection, in memory that
//! does not grow with its length.
//!
//! Requests join the queue in schedule order, so the queue is a run of consecutive positions
//! of the schedule, and a copy of the schedule standing at the first of them gives back
//! every request's due time and stage as it is taken. A run broken by requests skipped
//! while the client was frozen starts a new segment, so a queue is a handful of segments
//! (a copy of the schedule and a count each), however many millions it holds: a server far
//! slower than the rate asked costs vload no memory for its backlog. Requests a connection
//! took and handed back before sending (it closed under them) are kept as they are, in
//! front; there are at most as many as connections.

use std::collections::VecDeque;
use std::time::Instant;

use crate::schedule::Schedule;

use crate::job::Job;

/// Requests waiting for a connection, oldest first.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    handed_back: VecDeque<Job>,
    segments: VecDeque<Segment>,
    len: u64,
}

/// `count` consecutive requests of the schedule, the first at `cursor`'s position.
#[derive(Debug)]
struct Segment {
    cursor: Schedule,
    /// The schedule position of the first request.
    start: u64,
    count: u64,
}

/// Requests taken from the front of the queue in one step, all of one window and stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Batch {
    pub(crate) warmup: bool,
    pub(crate) stage: u32,
    pub(crate) count: u64,
}

impl Batch {
    /// A job standing for the batch's window and stage (its times are not read).
    pub(crate) fn job(&self) -> Job {
        Job {
            queued: true,
            ..Job::due(Instant::now(), self.stage, self.warmup)
        }
    }
}

impl Backlog {
    /// Requests waiting.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Adds the request at `schedule`'s current position (`position` in the schedule).
    pub(super) fn push(&mut self, schedule: &Schedule, position: u64) {
        match self.segments.back_mut() {
            Some(last) if last.start + last.count == position => last.count += 1,
            _ => self.segments.push_back(Segment {
                cursor: schedule.clone(),
                start: position,
                count: 1,
            }),
        }
        self.len += 1;
    }

    /// Puts a request a connection took and could not send back in front.
    pub(super) fn push_front(&mut self, job: Job) {
        self.handed_back.push_front(job);
        self.len += 1;
    }

    /// When the request waiting longest fell due.
    pub(super) fn oldest_due(&self) -> Option<Instant> {
        match self.handed_back.front() {
            Some(job) => Some(job.intended),
            None => self.segments.front().map(|s| s.cursor.due()),
        }
    }

    /// Takes the request waiting longest; `measure_from` tells the warm-up's from the
    /// measured window's.
    pub(super) fn pop(&mut self, measure_from: Instant) -> Option<Job> {
        if let Some(job) = self.handed_back.pop_front() {
            self.len -= 1;
            return Some(job);
        }
        let segment = self.segments.front_mut()?;
        let intended = segment.cursor.due();
        let job = Job {
            queued: true,
            ..Job::due(intended, segment.cursor.stage(), intended < measure_from)
        };
        segment.cursor.advance();
        segment.start += 1;
        segment.count -= 1;
        if segment.count == 0 {
            self.segments.pop_front();
        }
        self.len -= 1;
        Some(job)
    }

    /// Takes every request that fell due before `cutoff` from the front, in batches of one
    /// window and stage (a long queue at a high rate is jumped over, not walked).
    pub(super) fn take_before(&mut self, cutoff: Instant, measure_from: Instant) -> Vec<Batch> {
        let mut batches = Vec::new();
        while let Some(job) = self.handed_back.front().copied() {
            if job.intended >= cutoff {
                return batches;
            }
            self.handed_back.pop_front();
            self.len -= 1;
            add(&mut batches, job.warmup, job.stage, 1);
        }
        while let Some(segment) = self.segments.front_mut() {
            // The warm-up's requests first, then the measured window's.
            for (until, warmup) in [(cutoff.min(measure_from), true), (cutoff, false)] {
                for (stage, n) in segment.cursor.skip_before(until, segment.count) {
                    segment.start += n;
                    segment.count -= n;
                    self.len -= n;
                    add(&mut batches, warmup, stage, n);
                }
            }
            if segment.count > 0 {
                break;
            }
            self.segments.pop_front();
        }
        batches
    }

    /// Takes every request, in batches of one window and stage.
    pub(super) fn take_all(&mut self, measure_from: Instant) -> Vec<Batch> {
        let mut batches = Vec::new();
        while let Some(job) = self.handed_back.pop_front() {
            add(&mut batches, job.warmup, job.stage, 1);
        }
        // Walk only what may straddle the warm-up's end; the rest is one count.
        while let Some(mut segment) = self.segments.pop_front() {
            for (stage, n) in segment.cursor.skip_before(measure_from, segment.count) {
                segment.count -= n;
                add(&mut batches, true, stage, n);
            }
            for (stage, n) in segment.cursor.skip(segment.count) {
                add(&mut batches, false, stage, n);
            }
        }
        self.len = 0;
        batches
    }
}

fn add(batches: &mut Vec<Batch>, warmup: bool, stage: u32, count: u64) {
    if count == 0 {
        return;
    }
    match batches.last_mut() {
        Some(b) if b.warmup == warmup && b.stage == stage => b.count += count,
        _ => batches.push(Batch {
            warmup,
            stage,
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::rate::{Curve, RatePlan};

    fn schedule(t0: Instant, rate: f64) -> Schedule {
        let curve = Arc::new(Curve::new(&RatePlan::constant(rate), Duration::ZERO));
        Schedule::paced(t0, curve, 0, 1)
    }

    /// Queues the first `n` requests of `s` (which advances past them).
    fn queue(backlog: &mut Backlog, s: &mut Schedule, position: &mut u64, n: u64) {
        for _ in 0..n {
            backlog.push(s, *position);
            s.advance();
            *position += 1;
        }
    }

    #[test]
    fn a_queue_of_millions_is_one_segment_and_gives_back_each_due_time() {
        let t0 = Instant::now();
        let (mut s, mut position) = (schedule(t0, 1e6), 0);
        let mut backlog = Backlog::default();
        queue(&mut backlog, &mut s, &mut position, 3_000_000);
        assert_eq!(backlog.len(), 3_000_000);
        assert_eq!(backlog.segments.len(), 1, "no memory per request");
        let first = backlog.pop(t0).expect("queued");
        assert_eq!(first.intended, t0);
        let second = backlog.pop(t0).expect("queued");
        assert_eq!(second.intended, t0 + Duration::from_micros(1));
        assert!(second.queued && !second.warmup);
        // Past 1.5 s, 1.5 M requests have been due: taken in one step, not walked.
        let cutoff = t0 + Duration::from_millis(1500);
        let taken: u64 = backlog
            .take_before(cutoff, t0)
            .iter()
            .map(|b| b.count)
            .sum();
        assert_eq!(taken, 1_500_000 - 2);
        assert_eq!(backlog.oldest_due(), Some(cutoff));
        assert_eq!(backlog.len(), 1_500_000);
    }

    #[test]
    fn a_gap_starts_a_segment_and_handed_back_requests_go_first() {
        let t0 = Instant::now();
        let (mut s, mut position) = (schedule(t0, 1000.0), 0);
        let mut backlog = Backlog::default();
        queue(&mut backlog, &mut s, &mut position, 3);
        // Requests skipped while frozen: the queue is no longer one run.
        let skipped: u64 = s
            .skip_before(t0 + Duration::from_millis(10), u64::MAX)
            .iter()
            .map(|(_, n)| n)
            .sum();
        position += skipped;
        queue(&mut backlog, &mut s, &mut position, 2);
        assert_eq!(backlog.segments.len(), 2);
        let back = Job::closed(t0 + Duration::from_secs(5), false);
        backlog.push_front(back);
        assert_eq!(backlog.len(), 6);
        let order: Vec<u128> = std::iter::from_fn(|| backlog.pop(t0))
            .map(|j| (j.intended - t0).as_millis())
            .collect();
        assert_eq!(order, [5000, 0, 1, 2, 10, 11]);
    }

    #[test]
    fn taking_everything_splits_the_warm_up_from_the_window() {
        let t0 = Instant::now();
        let (mut s, mut position) = (schedule(t0, 1000.0), 0);
        let mut backlog = Backlog::default();
        queue(&mut backlog, &mut s, &mut position, 2_500);
        let batches = backlog.take_all(t0 + Duration::from_secs(1));
        assert_eq!(
            batches,
            [
                Batch {
                    warmup: true,
                    stage: 0,
                    count: 1_000
                },
                Batch {
                    warmup: false,
                    stage: 0,
                    count: 1_500
                }
            ]
        );
        assert_eq!(backlog.len(), 0);
    }
}

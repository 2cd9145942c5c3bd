//! Rate plans: how an open loop's rate changes over an attack, in stages that hold a rate or
//! ramp linearly from one rate to another.
//!
//! A plan is turned into its cumulative arrivals Λ(t), the number of requests due by time t
//! (piecewise quadratic: linear in a hold, quadratic in a ramp). Request k is due at Λ⁻¹(k):
//! exact counts per second, however the rate moves. A Poisson plan time-transforms a
//! unit-rate Poisson process through the same Λ⁻¹ (the standard construction of a
//! non-homogeneous Poisson process, exact and without the rejected draws of thinning).

use std::time::Duration;

/// One stage of a rate plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStage {
    /// Requests per second at the stage's start.
    pub from_per_s: f64,
    /// Requests per second at its end (equal to `from_per_s` for a hold).
    pub to_per_s: f64,
    /// How long it lasts; `None` only for a plain rate, which holds until the attack ends.
    pub duration: Option<Duration>,
}

/// How an open loop's rate changes over the attack: a plain rate, or stages.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePlan {
    stages: Vec<RateStage>,
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RatePlanError(String);

impl RatePlan {
    /// A plain rate, held until the attack ends.
    pub fn constant(rate_per_s: f64) -> Self {
        RatePlan {
            stages: vec![RateStage {
                from_per_s: rate_per_s,
                to_per_s: rate_per_s,
                duration: None,
            }],
        }
    }

    /// Stages, each with a duration, run in order; the attack ends with the last.
    ///
    /// # Errors
    /// No stage, a stage without a duration or of zero length, a rate that is negative or not
    /// finite, or no rate above zero anywhere.
    pub fn staged(stages: Vec<RateStage>) -> Result<Self, RatePlanError> {
        let bad = |why: String| Err(RatePlanError(why));
        if stages.is_empty() {
            return bad("a rate plan needs at least one stage".into());
        }
        for (i, s) in stages.iter().enumerate() {
            let n = i + 1;
            if !(s.from_per_s.is_finite() && s.to_per_s.is_finite())
                || s.from_per_s < 0.0
                || s.to_per_s < 0.0
            {
                return bad(format!("stage {n}: rates must be finite and not negative"));
            }
            match s.duration {
                None => return bad(format!("stage {n} has no duration: write RATE:DURATION")),
                Some(d) if d.is_zero() => return bad(format!("stage {n} lasts 0s")),
                Some(_) => {}
            }
        }
        if stages
            .iter()
            .all(|s| s.from_per_s == 0.0 && s.to_per_s == 0.0)
        {
            return bad("every stage's rate is 0: nothing would be sent".into());
        }
        Ok(RatePlan { stages })
    }

    /// The stages, in order.
    pub fn stages(&self) -> &[RateStage] {
        &self.stages
    }

    /// True for a plan of stages (with durations), false for a plain rate.
    pub fn is_staged(&self) -> bool {
        self.stages.iter().all(|s| s.duration.is_some())
    }

    /// The plan's length, when its stages have durations.
    pub fn duration(&self) -> Option<Duration> {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The rate at the plan's start (a warm-up holds it).
    pub fn first_rate(&self) -> f64 {
        self.stages[0].from_per_s
    }

    /// The highest rate anywhere in the plan.
    pub fn peak_rate(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.from_per_s.max(s.to_per_s))
            .fold(0.0, f64::max)
    }

    /// The same plan with a stage boundary at each of `cuts` (times from its start) that
    /// falls inside a stage: a ramp is split where its rate is at that time, so the requests
    /// due are the same, only counted in more stages. A plain rate becomes one stage of
    /// `length` first; cuts at or past the plan's end are left out.
    pub fn split_at(&self, cuts: &[Duration], length: Duration) -> RatePlan {
        let stages: Vec<RateStage> = if self.is_staged() {
            self.stages.clone()
        } else {
            vec![RateStage {
                duration: Some(length),
                ..self.stages[0]
            }]
        };
        let mut out = Vec::with_capacity(stages.len() + cuts.len());
        let mut start = Duration::ZERO;
        for stage in stages {
            let length = stage.duration.unwrap_or(length);
            let end = start + length;
            let mut from = (start, stage.from_per_s);
            let rate_at = |t: Duration| {
                let share = (t - start).as_secs_f64() / length.as_secs_f64();
                stage.from_per_s + (stage.to_per_s - stage.from_per_s) * share
            };
            let mut inside: Vec<Duration> = cuts
                .iter()
                .copied()
                .filter(|c| *c > start && *c < end)
                .collect();
            inside.sort_unstable();
            inside.dedup();
            for cut in inside.into_iter().chain([end]) {
                let to = if cut == end {
                    stage.to_per_s
                } else {
                    rate_at(cut)
                };
                out.push(RateStage {
                    from_per_s: from.1,
                    to_per_s: to,
                    duration: Some(cut - from.0),
                });
                from = (cut, to);
            }
            start = end;
        }
        RatePlan { stages: out }
    }

    /// The same plan at `factor` times the rate (a shard's share).
    pub fn scaled(&self, factor: f64) -> RatePlan {
        RatePlan {
            stages: self
                .stages
                .iter()
                .map(|s| RateStage {
                    from_per_s: s.from_per_s * factor,
                    to_per_s: s.to_per_s * factor,
                    duration: s.duration,
                })
                .collect(),
        }
    }
}

/// One piece of Λ: from `start_s`, for `length_s`, at rate `a + b τ` (τ from the piece's
/// start), with `before` arrivals due before it.
#[derive(Debug, Clone, Copy)]
struct Piece {
    start_s: f64,
    length_s: f64,
    a: f64,
    b: f64,
    before: f64,
    /// The stage it belongs to (0 is the warm-up when there is one).
    stage: u32,
}

impl Piece {
    /// Arrivals due within the first `tau` seconds of the piece.
    fn count(&self, tau: f64) -> f64 {
        let tau = tau.clamp(0.0, self.length_s);
        self.a * tau + self.b * tau * tau / 2.0
    }

    fn total(&self) -> f64 {
        if self.length_s.is_infinite() {
            if self.a > 0.0 || self.b > 0.0 {
                f64::INFINITY
            } else {
                0.0
            }
        } else {
            self.count(self.length_s)
        }
    }

    /// The time into the piece by which `m` arrivals are due (`m` within the piece).
    fn time_of(&self, m: f64) -> f64 {
        if m <= 0.0 {
            // The first arrival of a ramp from 0 is due at its start (not 0 / 0).
            return 0.0;
        }
        if self.b == 0.0 {
            return m / self.a;
        }
        // a τ + b τ² / 2 = m, in the form that stays exact when a ≫ b τ.
        2.0 * m / (self.a + (self.a * self.a + 2.0 * self.b * m).max(0.0).sqrt())
    }
}

/// The cumulative arrivals Λ of a plan, its warm-up included, for one attack.
#[derive(Debug, Clone)]
pub(crate) struct Curve {
    pieces: Vec<Piece>,
}

impl Curve {
    /// Λ of `plan` after a warm-up of `warmup` that holds the plan's first rate.
    pub(crate) fn new(plan: &RatePlan, warmup: Duration) -> Self {
        let mut pieces = Vec::new();
        let (mut start_s, mut before) = (0.0, 0.0);
        let warm = !warmup.is_zero() && plan.is_staged();
        let stages = warm
            .then(|| RateStage {
                from_per_s: plan.first_rate(),
                to_per_s: plan.first_rate(),
                duration: Some(warmup),
            })
            .into_iter()
            .chain(plan.stages().iter().copied());
        for (i, stage) in stages.enumerate() {
            let length_s = stage.duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
            let b = if length_s.is_finite() {
                (stage.to_per_s - stage.from_per_s) / length_s
            } else {
                0.0
            };
            let piece = Piece {
                start_s,
                length_s,
                a: stage.from_per_s,
                b,
                before,
                stage: i as u32,
            };
            before += piece.total();
            start_s += length_s;
            pieces.push(piece);
        }
        Curve { pieces }
    }

    /// Λ(t): arrivals due before `t` seconds from the start.
    pub(crate) fn at(&self, t: f64) -> f64 {
        let i = self
            .pieces
            .partition_point(|p| p.start_s <= t)
            .saturating_sub(1);
        let p = &self.pieces[i];
        p.before + p.count(t - p.start_s)
    }

    /// Λ⁻¹(n): when the `n`-th arrival is due, and its stage; `None` past the plan's end.
    /// `cursor` remembers the piece of the last answer: queries only move forward.
    pub(crate) fn time_of(&self, n: f64, cursor: &mut usize) -> Option<(f64, u32)> {
        while let Some(p) = self.pieces.get(*cursor) {
            let total = p.total();
            if n < p.before + total {
                let tau = p.time_of(n - p.before);
                return Some((p.start_s + tau, p.stage));
            }
            *cursor += 1;
        }
        None
    }

    /// The stage in force at `t` seconds from the start.
    pub(crate) fn stage_at(&self, t: f64) -> u32 {
        let i = self
            .pieces
            .partition_point(|p| p.start_s <= t)
            .saturating_sub(1);
        self.pieces[i].stage
    }

    /// The stage running at `t` seconds from the start; `None` once the plan has ended.
    pub(crate) fn stage_during(&self, t: f64) -> Option<u32> {
        let last = self.pieces.last()?;
        (t < last.start_s + last.length_s).then(|| self.stage_at(t))
    }

    /// Where each stage ends, in seconds from the start (infinite for an unbounded one).
    pub(crate) fn stage_end(&self, stage: u32) -> f64 {
        self.pieces
            .iter()
            .find(|p| p.stage == stage)
            .map_or(f64::INFINITY, |p| p.start_s + p.length_s)
    }

    /// The stages as run: (start s, length s, from rate, to rate), warm-up first if any.
    pub(crate) fn stages(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        self.pieces
            .iter()
            .map(|p| (p.start_s, p.length_s, p.a, p.a + p.b * p.length_s))
    }
}

#[cfg(test)]
mod tests {
    /// Cuts add stages and change no request's due time: a hold stays a hold, a ramp is cut
    /// where its rate is.
    #[test]
    fn a_cut_plan_is_due_the_same_requests() {
        let s = Duration::from_secs;
        let plain = RatePlan::constant(100.0).split_at(&[s(10), s(20), s(40)], s(30));
        let lengths: Vec<_> = plain.stages().iter().map(|st| st.duration).collect();
        assert_eq!(lengths, [Some(s(10)), Some(s(10)), Some(s(10))]);
        assert!(
            plain
                .stages()
                .iter()
                .all(|st| st.from_per_s == 100.0 && st.to_per_s == 100.0)
        );
        let ramp = RatePlan::staged(vec![RateStage {
            from_per_s: 0.0,
            to_per_s: 100.0,
            duration: Some(s(10)),
        }])
        .unwrap();
        let cut = ramp.split_at(&[s(5)], s(0));
        assert_eq!(cut.stages().len(), 2);
        assert_eq!(
            (cut.stages()[0].to_per_s, cut.stages()[1].from_per_s),
            (50.0, 50.0)
        );
        let due = |p: &RatePlan| {
            let curve = Curve::new(p, Duration::ZERO);
            (0..=100)
                .map(|t| curve.at(f64::from(t) / 10.0))
                .collect::<Vec<_>>()
        };
        let (a, b) = (due(&ramp), due(&cut));
        assert!(
            a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6),
            "{a:?} {b:?}"
        );
    }

    use super::*;

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn a_ramp_then_a_hold_due_exact_counts_per_second() {
        // 0->2k over 2 s, then 2k for 2 s: 500, 1500, 2000, 2000 requests in the four seconds.
        let plan = RatePlan::staged(vec![
            RateStage {
                from_per_s: 0.0,
                to_per_s: 2_000.0,
                duration: secs(2),
            },
            RateStage {
                from_per_s: 2_000.0,
                to_per_s: 2_000.0,
                duration: secs(2),
            },
        ])
        .unwrap();
        let curve = Curve::new(&plan, Duration::ZERO);
        for (t, expected) in [(1.0, 500.0), (2.0, 2_000.0), (3.0, 4_000.0), (4.0, 6_000.0)] {
            assert!(
                (curve.at(t) - expected).abs() < 1e-6,
                "Λ({t}) = {}",
                curve.at(t)
            );
        }
        let mut cursor = 0;
        let mut per_second = [0u32; 4];
        let mut k = 0.0;
        while let Some((t, _)) = curve.time_of(k, &mut cursor) {
            per_second[t as usize] += 1;
            k += 1.0;
        }
        assert_eq!(per_second, [500, 1_500, 2_000, 2_000]);
        assert_eq!(curve.stage_at(1.5), 0);
        assert_eq!(curve.stage_at(2.5), 1);
        assert_eq!(curve.stage_during(3.9), Some(1));
        assert_eq!(
            curve.stage_during(4.1),
            None,
            "after the plan, no stage is running"
        );
        assert_eq!(curve.time_of(6_000.0, &mut 0), None, "the plan ends");
    }

    #[test]
    fn a_plain_rate_is_k_over_rate_forever() {
        let curve = Curve::new(&RatePlan::constant(250.0), Duration::from_secs(5));
        let mut cursor = 0;
        for k in [0u64, 1, 999, 1_000_000] {
            let (t, stage) = curve.time_of(k as f64, &mut cursor).unwrap();
            assert!((t - k as f64 / 250.0).abs() < 1e-9, "{k}: {t}");
            assert_eq!(stage, 0);
        }
    }

    #[test]
    fn a_warm_up_holds_the_first_rate_as_stage_zero() {
        let plan = RatePlan::staged(vec![RateStage {
            from_per_s: 100.0,
            to_per_s: 300.0,
            duration: secs(10),
        }])
        .unwrap();
        let curve = Curve::new(&plan, Duration::from_secs(2));
        assert!((curve.at(2.0) - 200.0).abs() < 1e-9);
        assert_eq!(curve.stage_at(1.0), 0);
        assert_eq!(curve.stage_at(3.0), 1);
        assert!((curve.stage_end(1) - 12.0).abs() < 1e-9);
        let stages: Vec<_> = curve.stages().collect();
        assert_eq!(stages[1], (2.0, 10.0, 100.0, 300.0));
    }

    #[test]
    fn impossible_plans_are_refused() {
        let stage = |from: f64, to: f64, d: Option<Duration>| RateStage {
            from_per_s: from,
            to_per_s: to,
            duration: d,
        };
        assert!(RatePlan::staged(vec![]).is_err());
        assert!(RatePlan::staged(vec![stage(1.0, 1.0, None)]).is_err());
        assert!(RatePlan::staged(vec![stage(0.0, 0.0, secs(3))]).is_err());
        assert!(RatePlan::staged(vec![stage(-1.0, 5.0, secs(3))]).is_err());
        assert!(RatePlan::staged(vec![stage(1.0, 5.0, Some(Duration::ZERO))]).is_err());
        // A pause between two stages is a plan.
        let plan = RatePlan::staged(vec![
            stage(100.0, 100.0, secs(1)),
            stage(0.0, 0.0, secs(1)),
            stage(100.0, 100.0, secs(1)),
        ])
        .unwrap();
        let curve = Curve::new(&plan, Duration::ZERO);
        let (t, stage) = curve.time_of(100.0, &mut 0).unwrap();
        assert!((t - 2.0).abs() < 1e-9 && stage == 2, "{t} {stage}");
    }
}

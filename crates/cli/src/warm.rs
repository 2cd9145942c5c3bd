//! `--warmup-until hit-ratio`: before the attack, a warm-up run of the same load until the
//! cache is warm, that is until the hit ratio of the last 5 seconds holds still, or until
//! `--warmup-max`. `--warmup-until pass`: a warm-up run that asks every object of the
//! catalogue (or every target of the list) once, in order, at the same load. It is a run of its own (its own connections, not in the run file's
//! intervals); the run file keeps what it did (`warmed`), and the cache model counts its
//! requests as warming the cache.

use std::time::Duration;

use anyhow::bail;
use vload_engine::{AttackPlan, Interrupt, Observer, Pick, Progress, Stop, TargetPlan};
use vload_schema::{Interval, WarmRecord};

/// Seconds whose hit ratios must hold still.
const STILL_S: usize = 5;
/// Each of them within this of their mean.
const WITHIN: f64 = 0.01;
/// And their mean no more than this above the 5 seconds before.
const RISING: f64 = 0.005;

/// Whether the hit ratios, one a second, hold still: the last 5 each within a point of
/// their mean, and that mean not half a point above the 5 before.
pub(crate) fn held_still(ratios: &[Option<f64>]) -> bool {
    if ratios.len() < 2 * STILL_S {
        return false;
    }
    let last: Option<Vec<f64>> = ratios[ratios.len() - STILL_S..].iter().copied().collect();
    let before: Option<Vec<f64>> = ratios[ratios.len() - 2 * STILL_S..ratios.len() - STILL_S]
        .iter()
        .copied()
        .collect();
    let (Some(last), Some(before)) = (last, before) else {
        return false;
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let m = mean(&last);
    last.iter().all(|r| (r - m).abs() <= WITHIN) && m - mean(&before) <= RISING
}

/// Watches the warm-up run's seconds and ends it once warm.
struct WarmWatch {
    session: Interrupt,
    warm: Interrupt,
    ratios: Vec<Option<f64>>,
    classified: u64,
    reached: bool,
}

impl Observer for WarmWatch {
    fn on_interval(&mut self, _: &Progress) {
        // Ctrl-C reaches the warm-up run through the session's trigger.
        if self.session.is_triggered() {
            self.warm.trigger();
        }
    }

    fn on_record(&mut self, interval: &Interval) {
        let classified = interval.hits + interval.misses;
        self.classified += classified;
        self.ratios
            .push((classified > 0).then(|| interval.hits as f64 / classified as f64));
        if held_still(&self.ratios) || (self.ratios.len() >= STILL_S && self.classified == 0) {
            self.reached = self.classified > 0;
            self.warm.end_window();
        }
    }
}

/// The warm-up run of one pass over `plan`'s catalogue or target list, at most `max`.
fn pass_plan(plan: &AttackPlan, max: Duration) -> anyhow::Result<AttackPlan> {
    let mut warm = plan.clone();
    warm.warmup = Duration::ZERO;
    warm.hlog = None;
    warm.start_at = None;
    if let Some(c) = &plan.catalogue {
        // A crawl of the whole catalogue: worker w of W asks objects w, w + W, ...
        warm.catalogue = Some(vload_cache::Catalogue {
            popularity: vload_cache::Popularity::Hot {
                objects: 1.0,
                requests: 0.0,
            },
            one_hit_wonders: 0.0,
            churn_per_s: None,
            crawler: None,
            ..c.clone()
        });
        warm.stop = Stop {
            duration: Some(max),
            requests: Some(c.objects),
        };
    } else if let Some(t) = &plan.targets {
        if t.sets.len() != 1 || matches!(t.pick, Pick::Random { .. }) {
            bail!(
                "--warmup-until pass walks one target list in order, not a --mix or --pick random; give --warmup-until hit-ratio"
            );
        }
        warm.targets = Some(TargetPlan {
            passes: Some(1),
            pick: Pick::Sequential,
            ..t.clone()
        });
        warm.stop = Stop {
            duration: Some(max),
            requests: None,
        };
    } else {
        bail!("--warmup-until pass needs a --catalogue or a target list to pass over");
    }
    Ok(warm)
}

/// Runs one pass over the catalogue or the target list before the attack.
fn warm_by_pass(
    plan: &AttackPlan,
    max: Duration,
    session: &Interrupt,
    quiet: bool,
) -> anyhow::Result<WarmRecord> {
    let warm_plan = pass_plan(plan, max)?;
    if !quiet {
        crate::paint::say!("vload: warming up with one pass over every object");
    }
    let run = vload_engine::run(warm_plan, &mut (), session)?;
    let classified = run.cache.hit + run.cache.miss;
    let t = &run.totals;
    // Done when every object was answered: a request that failed (the origin not yet
    // listening, a reset, a timeout) or was never sent fetched nothing into the cache.
    let answered: u64 = t.status_codes.values().sum();
    let asked = t.intended.max(t.sent);
    let failed = asked.saturating_sub(answered);
    let record = WarmRecord {
        until: "pass".into(),
        // Ended by its count, not by --warmup-max or Ctrl-C, every object answered.
        reached: !run.interrupted
            && run.window.measured_s < max.as_secs_f64() - 1e-3
            && failed == 0,
        seconds: run.window.measured_s,
        max_s: max.as_secs_f64(),
        requests: run.totals.sent,
        hit_ratio: (classified > 0).then(|| run.cache.hit as f64 / classified as f64),
        failed,
    };
    if !quiet {
        crate::paint::say!(
            "vload: {}",
            vload_analyze::render::report::text::warmed_line(&record)
        );
    }
    Ok(record)
}

/// Runs the warm-up of `plan`: one pass over its objects (`pass`), or until warm; at most
/// `max`.
///
/// # Errors
/// No response said hit or miss in its first 5 seconds, a pass with nothing to pass over,
/// or the engine refused the plan.
pub(crate) fn warm_up(
    plan: &AttackPlan,
    pass: bool,
    max: Duration,
    session: &Interrupt,
    quiet: bool,
) -> anyhow::Result<WarmRecord> {
    if pass {
        return warm_by_pass(plan, max, session, quiet);
    }
    let mut warm_plan = plan.clone();
    warm_plan.warmup = Duration::ZERO;
    warm_plan.stop = Stop {
        duration: Some(max),
        requests: None,
    };
    warm_plan.hlog = None;
    warm_plan.start_at = None;
    if !quiet {
        crate::paint::say!(
            "vload: warming up until the hit ratio holds still, at most {}",
            humantime::format_duration(max)
        );
    }
    let mut watch = WarmWatch {
        session: session.clone(),
        warm: Interrupt::new(),
        ratios: Vec::new(),
        classified: 0,
        reached: false,
    };
    let warm = watch.warm.clone();
    let run = vload_engine::run(warm_plan, &mut watch, &warm)?;
    if watch.classified == 0 && !session.is_triggered() {
        anyhow::bail!(
            "--warmup-until hit-ratio: no response of the first {STILL_S} s said hit or miss (X-Varnish, X-Cache, Age): the hit ratio cannot settle; give a fixed --warmup instead"
        );
    }
    let tail = &watch.ratios[watch.ratios.len().saturating_sub(STILL_S)..];
    let known: Vec<f64> = tail.iter().flatten().copied().collect();
    let record = WarmRecord {
        until: "hit-ratio".into(),
        reached: watch.reached,
        seconds: run.window.measured_s,
        max_s: max.as_secs_f64(),
        requests: run.totals.sent,
        hit_ratio: (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64),
        failed: 0,
    };
    if !quiet {
        crate::paint::say!(
            "vload: {}",
            vload_analyze::render::report::text::warmed_line(&record)
        );
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_holds_still_when_flat_and_no_longer_rising() {
        let flat: Vec<Option<f64>> = vec![Some(0.9); 10];
        assert!(held_still(&flat));
        assert!(!held_still(&flat[..9]), "ten seconds are needed");
        let mut rising: Vec<Option<f64>> =
            (0..10).map(|i| Some(0.5 + 0.04 * f64::from(i))).collect();
        assert!(!held_still(&rising));
        // Rising slowly inside a point, but over half a point above the 5 s before.
        rising = (0..10).map(|i| Some(0.9 + 0.0015 * f64::from(i))).collect();
        assert!(!held_still(&rising));
        let mut gap = flat.clone();
        gap[7] = None;
        assert!(
            !held_still(&gap),
            "a second with nothing classified is not still"
        );
        let mut jumpy = flat;
        jumpy[9] = Some(0.87);
        assert!(!held_still(&jumpy));
    }
}

//! `--outage` and `--slowdown`: `vload origin` follows a plan of states during the run (down
//! from one moment to another, slow, back up), driven from the attack so both keep one clock,
//! and each phase of it is a stage of the run (#59). The plan is posted to the origin's
//! `/plan` just before the attack starts, offsets counted from then; at the end its `/stats`
//! says the requests it received in each phase and how late it began each.
//!
//! Bounded like every side channel: the post and the read each end within 2 s. A post that
//! fails stops the attack before it starts (a plan the origin never heard of would make
//! every phase a lie); a read that fails leaves the origin's counts unknown.

use std::time::Duration;

use anyhow::bail;
use vload_engine::{AttackPlan, Load};
use vload_origin::OriginState;
use vload_schema::{OriginPlanRecord, RunFile};

use crate::server::fetch::HttpUrl;
use crate::side::Deadline;

/// The post of the plan, and the read of the origin's counts, each end by then.
const SIDE_BOUND: Duration = Duration::from_secs(2);

/// The flags of an origin plan.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct OutageArgs {
    /// An origin outage from FROM to TO of the measured window, e.g. 10s-20s: the origin
    /// refuses connections, or :reset resets them, :hang holds every request, :503 (any
    /// 5xx) answers with that status; repeatable. Needs --origin (default: none).
    #[arg(long, value_name = "FROM-TO[:HOW]", requires = "origin")]
    pub(crate) outage: Vec<String>,
    /// The origin answers DELAY later from FROM to TO of the measured window, e.g.
    /// 10s-20s:200ms; repeatable. Needs --origin (default: none).
    #[arg(long, value_name = "FROM-TO:DELAY", requires = "origin")]
    pub(crate) slowdown: Vec<String>,
    /// `vload origin`'s URL, e.g. http://127.0.0.1:8081/, which follows --outage and
    /// --slowdown (posted to its /plan) and counts each phase's requests (its /stats).
    #[arg(long, value_name = "URL")]
    pub(crate) origin: Option<String>,
}

/// One phase the user asked for, from the measured window's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phase {
    pub(crate) from: Duration,
    pub(crate) to: Duration,
    pub(crate) state: OriginState,
}

/// A checked origin plan.
#[derive(Debug, Clone)]
pub(crate) struct OriginPlan {
    /// The phases asked for, in time order, none overlapping.
    pub(crate) phases: Vec<Phase>,
    /// The origin's authority, `host:port`.
    authority: String,
    shown: String,
}

impl OutageArgs {
    /// The plan asked for against a window of `measured` after `warmup`, checked.
    pub(crate) fn plan(
        &self,
        load: &Load,
        measured: Option<Duration>,
        shard: bool,
    ) -> anyhow::Result<Option<OriginPlan>> {
        let Some(origin) = &self.origin else {
            return Ok(None);
        };
        if self.outage.is_empty() && self.slowdown.is_empty() {
            bail!("--origin drives --outage and --slowdown: give one of them, or drop --origin");
        }
        if shard {
            bail!(
                "--outage and --slowdown drive one origin from one process: run them without --shard"
            );
        }
        if !matches!(load, Load::Open { .. }) {
            bail!(
                "--outage and --slowdown need an open loop (--rate): each phase is a stage of its rate plan"
            );
        }
        let Some(measured) = measured else {
            bail!(
                "--outage and --slowdown need a measured window of known length: give -d/--duration"
            );
        };
        let url = HttpUrl::parse(origin).map_err(|why| {
            anyhow::anyhow!("--origin {why}: give vload origin's URL, e.g. http://127.0.0.1:8081/")
        })?;
        let mut phases = self.phases()?;
        phases.sort_by_key(|p| p.from);
        for pair in phases.windows(2) {
            if pair[1].from < pair[0].to {
                bail!(
                    "the origin's phases {} and {} overlap: give each moment one state",
                    show(&pair[0]),
                    show(&pair[1])
                );
            }
        }
        if let Some(last) = phases.last().filter(|p| p.to > measured) {
            bail!(
                "{} ends past the measured window ({}): end it within -d, or run longer",
                show(last),
                humantime::format_duration(measured)
            );
        }
        if phases.len() * 2 + 1 > vload_origin::MOST_STEPS {
            bail!("{} origin phases: give at most 30", phases.len());
        }
        Ok(Some(OriginPlan {
            phases,
            authority: url.authority.clone(),
            shown: vload_engine::url::hide_passwords(origin),
        }))
    }
}

impl OutageArgs {
    /// The phases of `--outage` and `--slowdown`, each checked alone.
    fn phases(&self) -> anyhow::Result<Vec<Phase>> {
        let mut phases = Vec::new();
        for text in &self.outage {
            let (from, to, how) = span("--outage", text)?;
            let state = match how.unwrap_or("refuse") {
                "up" => bail!(
                    "--outage {text}: 'up' is no outage: give refuse, reset, hang or a status 500-599"
                ),
                s if s.starts_with("slow:") => {
                    bail!("--outage {text}: a slow origin is --slowdown FROM-TO:DELAY")
                }
                s => s
                    .parse::<OriginState>()
                    .map_err(|e| anyhow::anyhow!("--outage {text}: {e}"))?,
            };
            phases.push(Phase { from, to, state });
        }
        for text in &self.slowdown {
            let (from, to, delay) = span("--slowdown", text)?;
            let delay = delay
                .and_then(|d| humantime::parse_duration(d).ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    anyhow::anyhow!("--slowdown {text}: give FROM-TO:DELAY, e.g. 10s-20s:200ms")
                })?;
            phases.push(Phase {
                from,
                to,
                state: OriginState::Slow(delay),
            });
        }
        Ok(phases)
    }
}

/// `FROM-TO[:REST]` of `flag`.
fn span<'a>(flag: &str, text: &'a str) -> anyhow::Result<(Duration, Duration, Option<&'a str>)> {
    let (times, rest) = match text.split_once(':') {
        Some((times, rest)) => (times, Some(rest)),
        None => (text, None),
    };
    let parsed = times.split_once('-').and_then(|(a, b)| {
        Some((
            humantime::parse_duration(a).ok()?,
            humantime::parse_duration(b).ok()?,
        ))
    });
    match parsed {
        Some((from, to)) if from < to => Ok((from, to, rest)),
        Some(_) => bail!("{flag} {text}: it must end after it begins"),
        None => bail!(
            "{flag} {text}: give FROM-TO with durations from the measured window's start, e.g. 10s-20s"
        ),
    }
}

fn show(p: &Phase) -> String {
    format!(
        "{}-{} ({})",
        humantime::format_duration(p.from),
        humantime::format_duration(p.to),
        p.state
    )
}

impl OriginPlan {
    /// The window's cuts, from the attack's start: each phase's edges.
    pub(crate) fn cuts(&self, warmup: Duration) -> Vec<Duration> {
        self.phases
            .iter()
            .flat_map(|p| [warmup + p.from, warmup + p.to])
            .collect()
    }

    /// The steps posted to the origin, offsets from the attack's start: up again when the
    /// window begins (so the warm-up is a phase of its own), each phase, and up after it.
    pub(crate) fn steps(&self, warmup: Duration) -> String {
        let mut steps: Vec<(Duration, OriginState)> = Vec::new();
        if !warmup.is_zero() {
            steps.push((warmup, OriginState::Up));
        }
        for p in &self.phases {
            match steps.last_mut() {
                // A phase that begins where the last ended takes its place.
                Some(last) if last.0 == warmup + p.from => last.1 = p.state,
                _ => steps.push((warmup + p.from, p.state)),
            }
            steps.push((warmup + p.to, OriginState::Up));
        }
        steps
            .iter()
            .map(|(at, state)| format!("{}ms:{state}", at.as_millis()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Cuts `plan`'s rate plan at the phases' edges, so that each phase is a stage.
    pub(crate) fn apply(&self, plan: &mut AttackPlan) {
        let length = plan.stop.duration.unwrap_or_default();
        if let Load::Open { rate, .. } = &mut plan.load {
            *rate = rate.split_at(&self.cuts(Duration::ZERO), length);
        }
    }

    /// Posts the plan to the origin, to begin now: the attack's start.
    pub(crate) fn post(&self, warmup: Duration) -> anyhow::Result<String> {
        let steps = self.steps(warmup);
        let url = HttpUrl::parse(&format!("http://{}/plan?steps={steps}", self.authority))
            .map_err(|why| anyhow::anyhow!("--origin {why}"))?;
        url.post(&[], &[], Deadline::after(SIDE_BOUND)).map_err(|e| {
            anyhow::anyhow!(
                "--origin {}: the origin did not take the plan ({e:#}): is it vload origin, listening there?",
                self.shown
            )
        })?;
        Ok(steps)
    }

    /// The run's record, and each stage's origin state and the origin's own count of it.
    pub(crate) fn finish(&self, steps: String, warmup: Duration, run: &mut RunFile) {
        let stats = HttpUrl::parse(&format!("http://{}/stats", self.authority))
            .ok()
            .and_then(|url| url.get_page(Deadline::after(SIDE_BOUND)).ok())
            .and_then(|(page, _)| serde_json::from_str::<vload_origin::StatsSnapshot>(&page).ok())
            .map(|s| s.plan)
            .filter(|phases| !phases.is_empty());
        let asked = asked_steps(&steps);
        let late_us = stats.as_ref().map(|phases| {
            let shift = usize::from(asked.first() != Some(&Duration::ZERO));
            phases
                .iter()
                .skip(shift)
                .zip(&asked)
                .map(|(got, due)| got.at_us.saturating_sub(due.as_micros() as u64))
                .max()
                .unwrap_or(0)
        });
        for stage in &mut run.stages {
            let start = Duration::from_secs_f64(stage.start_s.max(0.0));
            let state = if stage.warmup {
                OriginState::Up
            } else {
                self.state_at(start.saturating_sub(warmup))
            };
            stage.origin_state = Some(state.to_string());
            // The origin's phase that began at this stage's start: phase 0 is up from the
            // plan's receipt, or the first step when it was due at once.
            let shift = usize::from(asked.first() != Some(&Duration::ZERO));
            let phase = asked
                .iter()
                .position(|at| at.abs_diff(start) < Duration::from_millis(1))
                .map(|i| i + shift)
                .or((start.is_zero()).then_some(0));
            stage.origin_requests = phase
                .zip(stats.as_ref())
                .and_then(|(i, phases)| phases.get(i))
                .map(|p| p.requests);
        }
        run.origin_plan = Some(OriginPlanRecord {
            origin: self.shown.clone(),
            steps,
            late_us,
        });
    }

    /// The state asked for at `t` of the measured window.
    fn state_at(&self, t: Duration) -> OriginState {
        self.phases
            .iter()
            .find(|p| p.from <= t && t < p.to)
            .map_or(OriginState::Up, |p| p.state)
    }
}

/// A plan the origin took: what finishes the run's record of it.
pub(crate) struct Posted {
    plan: OriginPlan,
    steps: String,
    warmup: Duration,
}

impl Posted {
    /// Posts `plan` (if any) to begin now, with an attack warming up for `warmup` first.
    pub(crate) fn post(
        plan: Option<OriginPlan>,
        warmup: Duration,
    ) -> anyhow::Result<Option<Posted>> {
        let Some(plan) = plan else {
            return Ok(None);
        };
        let steps = plan.post(warmup)?;
        Ok(Some(Posted {
            plan,
            steps,
            warmup,
        }))
    }

    /// Adds the plan's record to `run`, and each stage's origin state and count (nothing
    /// without a plan).
    pub(crate) fn finish(posted: Option<Posted>, run: &mut RunFile) {
        if let Some(p) = posted {
            p.plan.finish(p.steps, p.warmup, run);
        }
    }
}

/// The offsets of the steps posted.
fn asked_steps(steps: &str) -> Vec<Duration> {
    steps
        .split(',')
        .filter_map(|s| s.split_once("ms:"))
        .filter_map(|(ms, _)| ms.parse().ok().map(Duration::from_millis))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(outage: &[&str], slowdown: &[&str]) -> OutageArgs {
        OutageArgs {
            outage: outage.iter().map(|s| (*s).to_owned()).collect(),
            slowdown: slowdown.iter().map(|s| (*s).to_owned()).collect(),
            origin: Some("http://127.0.0.1:8081/".into()),
        }
    }

    fn open() -> Load {
        Load::Open {
            rate: vload_engine::RatePlan::constant(100.0),
            arrival: vload_engine::Arrival::Constant,
            max_connections: 100,
        }
    }

    fn plan(outage: &[&str], slowdown: &[&str]) -> anyhow::Result<Option<OriginPlan>> {
        args(outage, slowdown).plan(&open(), Some(Duration::from_secs(40)), false)
    }

    #[test]
    fn phases_become_steps_from_the_attacks_start() {
        let p = plan(&["10s-20s"], &["25s-30s:200ms"]).unwrap().unwrap();
        assert_eq!(
            p.steps(Duration::ZERO),
            "10000ms:refuse,20000ms:up,25000ms:slow:200ms,30000ms:up"
        );
        assert_eq!(
            p.steps(Duration::from_secs(5)),
            "5000ms:up,15000ms:refuse,25000ms:up,30000ms:slow:200ms,35000ms:up"
        );
        let back_to_back = plan(&["10s-20s:503", "20s-30s:hang"], &[])
            .unwrap()
            .unwrap();
        assert_eq!(
            back_to_back.steps(Duration::ZERO),
            "10000ms:503,20000ms:hang,30000ms:up"
        );
        assert_eq!(
            back_to_back.state_at(Duration::from_secs(25)),
            OriginState::Hang
        );
        assert_eq!(
            back_to_back.state_at(Duration::from_secs(30)),
            OriginState::Up
        );
    }

    #[test]
    fn impossible_plans_say_what_to_do() {
        for (outage, slowdown, needle) in [
            (&["10s-5s"][..], &[][..], "end after"),
            (&["ten-20s"], &[], "FROM-TO"),
            (&["10s-20s:down"], &[], "no origin state"),
            (&["10s-20s:up"], &[], "no outage"),
            (&["10s-20s", "15s-25s"], &[], "overlap"),
            (&["30s-50s"], &[], "past the measured window"),
            (&[], &["10s-20s"], "FROM-TO:DELAY"),
        ] {
            let err = plan(outage, slowdown).unwrap_err().to_string();
            assert!(err.contains(needle), "{outage:?} {slowdown:?}: {err}");
        }
        let closed = Load::Closed { connections: 10 };
        let err = args(&["1s-2s"], &[])
            .plan(&closed, Some(Duration::from_secs(5)), false)
            .unwrap_err();
        assert!(err.to_string().contains("open loop"), "{err}");
        let err = args(&["1s-2s"], &[])
            .plan(&open(), None, false)
            .unwrap_err();
        assert!(err.to_string().contains("-d/--duration"), "{err}");
        let err = args(&["1s-2s"], &[])
            .plan(&open(), Some(Duration::from_secs(5)), true)
            .unwrap_err();
        assert!(err.to_string().contains("--shard"), "{err}");
    }
}

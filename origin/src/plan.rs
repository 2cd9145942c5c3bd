//! An origin plan: what the origin does with requests from one moment to the next, so a run
//! can stage an outage or a slowdown behind a cache (#59).
//!
//! `POST /plan?steps=10s:refuse,20s:up` starts a plan at once: up from then on, refusing
//! connections 10 s later, up again at 20 s (offsets from the plan's receipt). A new plan
//! replaces the one under way; its first phase is up, or its first step's state when that is
//! due at once (`0s:hang`: an origin that hangs is never up in between, so a request it
//! holds stays held). Each phase's requests are counted (`/stats`' `plan`), with
//! when the phase really began. The states:
//!
//! | state | what the origin does |
//! | --- | --- |
//! | `up` | answers as configured |
//! | `503` (any status 500-599) | answers every request with that status |
//! | `reset` | resets the connection of every request (a TCP RST, no answer) |
//! | `refuse` | closes its listening sockets, so a connect is refused, and resets every request on a connection already open (as a crashed process's kernel does) |
//! | `hang` | holds every request without an answer until the state changes |
//! | `slow:DELAY` | answers DELAY later than configured |
//!
//! The state is one atomic word read per request; the serve loops and held requests hear of
//! a change on a watch channel. HTTP/3 does not follow the plan.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// What the origin does with requests in one phase of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OriginState {
    /// Answers as configured.
    #[default]
    Up,
    /// Answers every request with this status (500-599).
    Status(u16),
    /// Resets the connection of every request.
    Reset,
    /// Refuses connections, and resets requests on connections already open.
    Refuse,
    /// Holds every request without an answer until the state changes.
    Hang,
    /// Answers this much later than configured.
    Slow(Duration),
}

impl OriginState {
    /// One word, for the atomic the requests read.
    fn encode(self) -> u64 {
        let (kind, value) = match self {
            OriginState::Up => (0, 0),
            OriginState::Status(code) => (1, u64::from(code)),
            OriginState::Reset => (2, 0),
            OriginState::Refuse => (3, 0),
            OriginState::Hang => (4, 0),
            OriginState::Slow(d) => (5, (d.as_nanos() as u64).min((1 << 56) - 1)),
        };
        (kind << 56) | value
    }

    fn decode(word: u64) -> OriginState {
        let value = word & ((1 << 56) - 1);
        match word >> 56 {
            1 => OriginState::Status(value as u16),
            2 => OriginState::Reset,
            3 => OriginState::Refuse,
            4 => OriginState::Hang,
            5 => OriginState::Slow(Duration::from_nanos(value)),
            _ => OriginState::Up,
        }
    }
}

impl fmt::Display for OriginState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginState::Up => f.write_str("up"),
            OriginState::Status(code) => write!(f, "{code}"),
            OriginState::Reset => f.write_str("reset"),
            OriginState::Refuse => f.write_str("refuse"),
            OriginState::Hang => f.write_str("hang"),
            OriginState::Slow(d) => write!(f, "slow:{}", humantime::format_duration(*d)),
        }
    }
}

impl FromStr for OriginState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let state = match s {
            "up" => OriginState::Up,
            "reset" => OriginState::Reset,
            "refuse" => OriginState::Refuse,
            "hang" => OriginState::Hang,
            _ => match s.strip_prefix("slow:") {
                Some(delay) => {
                    OriginState::Slow(humantime::parse_duration(delay).map_err(|_| {
                        format!("'{s}': give slow:DELAY with a duration, e.g. slow:200ms")
                    })?)
                }
                None => match s.parse::<u16>() {
                    Ok(code) if (500..=599).contains(&code) => OriginState::Status(code),
                    _ => {
                        return Err(format!(
                            "'{s}' is no origin state: give up, refuse, reset, hang, a status 500-599 or slow:DELAY"
                        ));
                    }
                },
            },
        };
        Ok(state)
    }
}

/// One step of a plan: from `at` after the plan's receipt, `state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanStep {
    /// When, from the plan's receipt.
    pub at: Duration,
    /// The state from then on.
    pub state: OriginState,
}

/// The most steps a plan may have.
pub const MOST_STEPS: usize = 64;

/// Parses `10s:refuse,20s:up`: steps in time order, at most [`MOST_STEPS`].
///
/// # Errors
/// A step without a time or a state, a bad one, steps out of order, or too many.
pub fn parse_steps(text: &str) -> Result<Vec<PlanStep>, String> {
    let mut steps = Vec::new();
    for step in text.split(',').filter(|s| !s.is_empty()) {
        let (at, state) = step
            .split_once(':')
            .ok_or_else(|| format!("step '{step}': give AT:STATE, e.g. 10s:refuse"))?;
        let at = humantime::parse_duration(at)
            .map_err(|_| format!("step '{step}': '{at}' is not a duration, e.g. 10s"))?;
        let state = state.parse().map_err(|e| format!("step '{step}': {e}"))?;
        if steps.last().is_some_and(|s: &PlanStep| s.at >= at) {
            return Err(format!("step '{step}': steps go in time order"));
        }
        steps.push(PlanStep { at, state });
    }
    if steps.len() > MOST_STEPS {
        return Err(format!("{} steps: give at most {MOST_STEPS}", steps.len()));
    }
    Ok(steps)
}

/// One phase of the plan under way, as `/stats` serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanPhase {
    /// When the phase began, µs from the plan's receipt (as it happened, not as asked).
    pub at_us: u64,
    /// The origin's state in it (`up`, `refuse`, `503`, `slow:200ms`...).
    pub state: String,
    /// Requests the origin received in it (answered, refused or held alike).
    pub requests: u64,
}

/// The plan under way, shared by the server's threads.
#[derive(Debug)]
pub(crate) struct Plans {
    word: AtomicU64,
    notify: watch::Sender<OriginState>,
    /// Bumped by each new plan: a plan's thread stops when it is no longer the latest.
    generation: AtomicU64,
    phase: AtomicUsize,
    counts: [AtomicU64; MOST_STEPS + 1],
    phases: Mutex<Vec<(u64, OriginState)>>,
}

impl Default for Plans {
    fn default() -> Self {
        Plans {
            word: AtomicU64::new(OriginState::Up.encode()),
            notify: watch::channel(OriginState::Up).0,
            generation: AtomicU64::new(0),
            phase: AtomicUsize::new(0),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            phases: Mutex::new(Vec::new()),
        }
    }
}

impl Plans {
    /// The state now.
    pub(crate) fn now(&self) -> OriginState {
        OriginState::decode(self.word.load(Relaxed))
    }

    /// Hears of each change of state.
    pub(crate) fn subscribe(&self) -> watch::Receiver<OriginState> {
        self.notify.subscribe()
    }

    /// Counts a request in the phase under way.
    pub(crate) fn count(&self) {
        self.counts[self.phase.load(Relaxed)].fetch_add(1, Relaxed);
    }

    /// The phases of the plan under way, with their requests.
    pub(crate) fn snapshot(&self) -> Vec<PlanPhase> {
        let phases = self.phases.lock().unwrap_or_else(|p| p.into_inner());
        phases
            .iter()
            .enumerate()
            .map(|(i, (at_us, state))| PlanPhase {
                at_us: *at_us,
                state: state.to_string(),
                requests: self.counts[i].load(Relaxed),
            })
            .collect()
    }

    fn enter(&self, index: usize, at_us: u64, state: OriginState) {
        let mut phases = self.phases.lock().unwrap_or_else(|p| p.into_inner());
        if index == 0 {
            phases.clear();
            for c in &self.counts {
                c.store(0, Relaxed);
            }
        }
        phases.push((at_us, state));
        self.phase.store(index, Relaxed);
        self.word.store(state.encode(), Relaxed);
        drop(phases);
        self.notify.send_replace(state);
    }
}

/// Starts `steps` now, in place of any plan under way: up at once, then each step on time.
pub(crate) fn start(plans: &std::sync::Arc<Plans>, steps: Vec<PlanStep>) {
    let received = Instant::now();
    let generation = plans.generation.fetch_add(1, Relaxed) + 1;
    // A step due at once is the first phase itself: no instant of up before it.
    let (first, steps) = match steps.split_first() {
        Some((step, rest)) if step.at.is_zero() => (step.state, rest.to_vec()),
        _ => (OriginState::Up, steps),
    };
    plans.enter(0, 0, first);
    let plans = plans.clone();
    // A thread of its own: the steps keep time whatever the server's runtimes do.
    let _ = std::thread::Builder::new()
        .name("vload-origin-plan".into())
        .spawn(move || {
            for (i, step) in steps.iter().enumerate() {
                let due = received + step.at;
                loop {
                    if plans.generation.load(Relaxed) != generation {
                        return;
                    }
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    std::thread::sleep((due - now).min(Duration::from_millis(50)));
                }
                let at_us = received.elapsed().as_micros() as u64;
                plans.enter(i + 1, at_us, step.state);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_and_write_the_same_words() {
        for text in ["up", "503", "599", "reset", "refuse", "hang", "slow:200ms"] {
            let state: OriginState = text.parse().unwrap();
            assert_eq!(state.to_string(), text);
            assert_eq!(OriginState::decode(state.encode()), state);
        }
        for bad in ["404", "down", "slow:soon", ""] {
            assert!(bad.parse::<OriginState>().is_err(), "{bad}");
        }
    }

    #[test]
    fn steps_parse_in_order_and_say_what_is_wrong() {
        let steps = parse_steps("10s:refuse,20s:up").unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].at, Duration::from_secs(10));
        assert_eq!(steps[1].state, OriginState::Up);
        for (bad, needle) in [
            ("10s", "AT:STATE"),
            ("soon:up", "duration"),
            ("10s:down", "no origin state"),
            ("20s:up,10s:503", "time order"),
        ] {
            let err = parse_steps(bad).unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }
}

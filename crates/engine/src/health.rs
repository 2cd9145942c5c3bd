//! Was the client the bottleneck? The signals, what each points at, and the verdict.
//!
//! A verdict that cries wolf is ignored when it matters, so the signals are kept apart by
//! what they point at:
//!
//! - **vload itself saturated**: a worker thread busy (on a CPU) nearly all the time, or
//!   never idle (busy plus waiting for a CPU), the schedule slipping while the thread was
//!   busy, client resources running out. These call a run `client_bound`: its numbers
//!   measure vload.
//! - **the machine paused everyone**: hiccups (a 1 ms timer waking late) while the worker
//!   threads were mostly idle. Another process or the hypervisor took the CPU; the server
//!   on the same machine may have paused too. That is a warning, never `client_bound` on
//!   its own: the results include those pauses.
//! - **the load was not applied**: requests that fell due but were sent more than 1 ms
//!   late, or never sent, beyond a small share. Whatever the cause, the server did not see
//!   the planned load, so the run is `client_bound`; the cause picks the sentence.
//! - **requests queued because every allowed connection was busy** (`--max-connections`
//!   reached; not those that waited only while a new connection was made): a warning.

use vload_schema::{Cause, ClientHealth, HealthSignal, HealthVerdict};

/// The measurements the verdict rests on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HealthInputs {
    pub(crate) cpu_s: f64,
    pub(crate) wall_s: f64,
    pub(crate) cores: u32,
    /// The busiest worker thread's CPU time over wall time.
    pub(crate) max_thread_busy: f64,
    /// The same thread's time neither running nor idle (runnable, waiting for a CPU) over
    /// wall time.
    pub(crate) max_thread_waiting: Option<f64>,
    pub(crate) open_loop: bool,
    pub(crate) intended: u64,
    pub(crate) late_sends: u64,
    pub(crate) unsent: u64,
    pub(crate) dispatch_lag_p99_ns: Option<u64>,
    pub(crate) hiccup_p99_ns: Option<u64>,
    pub(crate) service_p50_ns: Option<u64>,
    /// Open loop: requests that fell due with every connection vload may open in use.
    pub(crate) capped: u64,
    pub(crate) queue_wait_p99_ns: Option<u64>,
    pub(crate) max_connections: u32,
    pub(crate) client_limit_errors: u64,
    pub(crate) fd_limit: u64,
    pub(crate) fd_needed: u64,
}

/// Levels: (warn above, client-bound above).
const CPU_UTIL: (f64, f64) = (0.70, 0.90);
/// A thread busy (or never idle) above 90% of the time set the pace: measured on this kind
/// of machine, a closed loop against a fast origin keeps its thread 93-98% busy.
const THREAD_BUSY: (f64, f64) = (0.75, 0.90);
/// Share of due requests sent over 1 ms late or never sent: warn above the first, client-bound
/// above the second when vload itself fell behind.
const LATE_RATIO: (f64, f64) = (0.005, 0.05);
/// Above this share, the offered load was not the plan's whatever the cause: client-bound
/// even when the machine paused vload (a gentle run on a loaded 2-core machine measured 5%
/// late; an impossible rate 30-35%; a client frozen past the window's end 60% never sent).
const LATE_RATIO_ANY_CAUSE: f64 = 0.20;
/// Share of due requests never sent above which the load was not applied.
const UNSENT_RATIO: f64 = 0.005;
/// Fewer late sends than this are the operating system's doing, not a trend.
const LATE_MIN: u64 = 10;
/// A 1 ms timer waking this late, at the 99th percentile, is a pause of the machine (or of a
/// busy runtime): measured here, an idle 2-core VM shows 60-200 µs, a loaded one 1-30 ms.
const HICCUP_WARN_NS: u64 = 1_000_000;
/// Share of due requests that waited for a free connection.
const QUEUED_RATIO: f64 = 0.01;
/// A thread busier than this is the likelier cause of its own runtime's lateness.
const BUSY_FOR_CAUSE: f64 = 0.5;

struct Assessment {
    signals: Vec<HealthSignal>,
}

impl Assessment {
    fn flag(&mut self, signal: &str, level: HealthVerdict, cause: Cause, message: String) {
        self.signals.push(HealthSignal {
            signal: signal.to_owned(),
            level,
            cause,
            message,
        });
    }

    fn verdict(&self) -> HealthVerdict {
        self.signals
            .iter()
            .map(|s| s.level)
            .max()
            .unwrap_or(HealthVerdict::Ok)
    }
}

fn level(value: f64, (warn, bound): (f64, f64)) -> Option<HealthVerdict> {
    match value {
        v if v > bound => Some(HealthVerdict::ClientBound),
        v if v > warn => Some(HealthVerdict::Warn),
        _ => None,
    }
}

pub(crate) fn assess(x: &HealthInputs) -> ClientHealth {
    let mut a = Assessment {
        signals: Vec::new(),
    };
    let cpu_util = if x.wall_s > 0.0 {
        x.cpu_s / (x.wall_s * f64::from(x.cores.max(1)))
    } else {
        0.0
    };
    saturation(&mut a, x, cpu_util);
    if x.open_loop {
        schedule(&mut a, x);
        queueing(&mut a, x);
    }
    if let Some(hiccup) = x.hiccup_p99_ns
        && hiccup > HICCUP_WARN_NS
    {
        let (cause, message) = if x.max_thread_busy > BUSY_FOR_CAUSE {
            (
                Cause::Client,
                format!(
                    "vload's runtime woke late (hiccup p99 {} on a 1 ms timer) while its busiest thread was {:.0}% busy",
                    micros(hiccup),
                    x.max_thread_busy * 100.0
                ),
            )
        } else {
            (
                Cause::Machine,
                format!(
                    "the machine, not vload, paused: a 1 ms timer woke {} late (p99) while vload's threads were mostly idle; results include those pauses",
                    micros(hiccup)
                ),
            )
        };
        a.flag("hiccups", HealthVerdict::Warn, cause, message);
    }
    if x.client_limit_errors > 0 {
        a.flag(
            "client_limit",
            HealthVerdict::ClientBound,
            Cause::Client,
            format!(
                "{} requests failed for lack of client resources (file descriptors or local ports): vload's failures, not the server's",
                x.client_limit_errors
            ),
        );
    }
    if x.fd_needed > x.fd_limit {
        a.flag(
            "fd_limit",
            HealthVerdict::Warn,
            Cause::Client,
            format!(
                "{} connections need about {} file descriptors but the limit is {}: raise it with ulimit -n",
                x.fd_needed.saturating_sub(64),
                x.fd_needed,
                x.fd_limit
            ),
        );
    }
    ClientHealth {
        cpu_s: x.cpu_s,
        cpu_util,
        max_thread_busy: x.max_thread_busy,
        dispatch_lag_p99_ns: x.dispatch_lag_p99_ns,
        late_sends: x.late_sends,
        hiccup_p99_ns: x.hiccup_p99_ns,
        fd_limit: x.fd_limit,
        fd_needed: x.fd_needed,
        verdict: a.verdict(),
        reasons: a.signals.iter().map(|s| s.message.clone()).collect(),
        max_thread_waiting: x.max_thread_waiting,
        signals: a.signals,
    }
}

/// The client's own CPU: a thread that never idled, or all cores busy.
fn saturation(a: &mut Assessment, x: &HealthInputs, cpu_util: f64) {
    let waiting = x.max_thread_waiting.unwrap_or(0.0);
    let demand = x.max_thread_busy + waiting;
    if let Some(l) = level(demand, THREAD_BUSY) {
        let busy = x.max_thread_busy * 100.0;
        let (cause, message) = if x.max_thread_busy >= waiting {
            let pace = if l == HealthVerdict::ClientBound {
                ": vload, not the server, set the pace"
            } else {
                ""
            };
            (
                Cause::Client,
                format!("a worker thread was busy {busy:.0}% of the time{pace}"),
            )
        } else {
            (
                Cause::Machine,
                format!(
                    "a worker thread was busy {busy:.0}% and waited for a CPU {:.0}% of the time: other processes took the cores, and vload, never idle, set the pace",
                    waiting * 100.0
                ),
            )
        };
        a.flag("thread_busy", l, cause, message);
    }
    if let Some(l) = level(cpu_util, CPU_UTIL) {
        a.flag(
            "cpu",
            l,
            Cause::Client,
            format!(
                "client CPU at {:.0}% of all {} cores",
                cpu_util * 100.0,
                x.cores
            ),
        );
    }
}

/// Open loop: was the planned load applied on time?
fn schedule(a: &mut Assessment, x: &HealthInputs) {
    // A thread that idled half the time or more had time to send on schedule: lateness then
    // came from outside it (the scheduler waking it late, a pause), not from its own work.
    let idle = x.max_thread_busy + x.max_thread_waiting.unwrap_or(0.0) <= BUSY_FOR_CAUSE;
    let cause = if idle { Cause::Machine } else { Cause::Client };
    let behind = x.late_sends + x.unsent;
    let late = if x.intended > 0 {
        behind as f64 / x.intended as f64
    } else {
        0.0
    };
    let unsent_share = if x.intended > 0 {
        x.unsent as f64 / x.intended as f64
    } else {
        0.0
    };
    // The machine pausing vload delays its sends; the latencies include that lateness. Only a
    // gross distortion, or requests never sent, means the load was not applied.
    let not_applied =
        late > LATE_RATIO_ANY_CAUSE || (x.unsent >= LATE_MIN && unsent_share > UNSENT_RATIO);
    let level_for = |late: f64| match level(late, LATE_RATIO) {
        _ if not_applied => Some(HealthVerdict::ClientBound),
        Some(_) if cause == Cause::Machine => Some(HealthVerdict::Warn),
        l => l,
    };
    if let Some(l) = level_for(late).filter(|_| behind >= LATE_MIN) {
        let why = match (cause, l) {
            (Cause::Machine, HealthVerdict::ClientBound) => {
                "vload was paused (by the machine, a VM pause, or SIGSTOP); the planned load was not applied"
            }
            (Cause::Machine, _) => {
                "the machine paused vload's dispatching; their lateness is in their response time"
            }
            _ => "vload could not keep up with its schedule; the planned load was not applied",
        };
        let unsent = if x.unsent > 0 {
            format!(
                ", {} of them never sent because the window ended first",
                x.unsent
            )
        } else {
            String::new()
        };
        a.flag(
            if x.unsent > 0 { "unsent" } else { "late_sends" },
            l,
            cause,
            format!(
                "{:.2}% of due requests were sent more than 1 ms late or not at all{unsent}: {why}",
                late * 100.0
            ),
        );
    }
    if let Some(lag) = x.dispatch_lag_p99_ns {
        // Lag matters relative to what is measured: 100 µs is a lot for a 200 µs cache hit.
        let p50 = x.service_p50_ns.unwrap_or(0) as f64;
        let warn = (100_000f64).max(0.05 * p50);
        let bound = (1_000_000f64).max(0.20 * p50);
        // A paused machine delays dispatches too; that is the hiccup signal's to report.
        let l = level(lag as f64, (warn, bound)).map(|l| {
            if cause == Cause::Machine {
                HealthVerdict::Warn
            } else {
                l
            }
        });
        if let Some(l) = l {
            a.flag(
                "dispatch_lag",
                l,
                cause,
                format!(
                    "dispatch lag p99 {} (limit {} for this latency)",
                    micros(lag),
                    micros(warn as u64)
                ),
            );
        }
    }
}

/// Open loop: requests that waited because every connection vload may open was busy. A
/// request that waits only while a new connection is made is the open loop growing to
/// meet demand, not a limit of the client's: it is not counted here.
fn queueing(a: &mut Assessment, x: &HealthInputs) {
    if x.intended == 0 || x.capped < LATE_MIN {
        return;
    }
    let share = x.capped as f64 / x.intended as f64;
    if share > QUEUED_RATIO {
        let wait = x
            .queue_wait_p99_ns
            .map_or_else(String::new, |w| format!(" (p99 {})", micros(w)));
        a.flag(
            "queue_wait",
            HealthVerdict::Warn,
            Cause::ConnectionCap,
            format!(
                "{} requests ({:.1}%) waited for a free connection{wait}: all {} connections (--max-connections) were busy; the wait is part of their response time",
                x.capped,
                share * 100.0,
                x.max_connections
            ),
        );
    }
}

fn micros(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.0} ms", ns as f64 / 1e6)
    } else {
        format!("{:.0} µs", ns as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> HealthInputs {
        HealthInputs {
            cpu_s: 2.0,
            wall_s: 10.0,
            cores: 2,
            max_thread_busy: 0.2,
            max_thread_waiting: Some(0.01),
            open_loop: true,
            intended: 10_000,
            late_sends: 0,
            unsent: 0,
            dispatch_lag_p99_ns: Some(30_000),
            hiccup_p99_ns: Some(50_000),
            service_p50_ns: Some(200_000),
            capped: 0,
            queue_wait_p99_ns: None,
            max_connections: 10_000,
            client_limit_errors: 0,
            fd_limit: 1_048_576,
            fd_needed: 114,
        }
    }

    fn signal(h: &ClientHealth, name: &str) -> HealthSignal {
        h.signals
            .iter()
            .find(|s| s.signal == name)
            .unwrap_or_else(|| panic!("no {name} signal in {:?}", h.signals))
            .clone()
    }

    #[test]
    fn a_healthy_run_is_ok() {
        let h = assess(&healthy());
        assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
        assert!((h.cpu_util - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_saturated_thread_makes_the_client_the_bottleneck() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.99,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
        assert!(h.reasons[0].contains("99%"), "{:?}", h.reasons);
        assert_eq!(signal(&h, "thread_busy").cause, Cause::Client);
    }

    #[test]
    fn a_thread_93_percent_busy_is_client_bound() {
        // See #17, case 24: a thread 93% busy at 124k/s got only WARN.
        let h = assess(&HealthInputs {
            max_thread_busy: 0.93,
            open_loop: false,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
    }

    #[test]
    fn a_hiccup_alone_is_a_machine_warning_never_client_bound() {
        // See #17, cases 3 and 24: hiccup p99 1-30 ms with the thread 7-30% busy.
        for (busy, hiccup) in [(0.07, 1_400_000), (0.3, 30_000_000), (0.08, 5_000_000)] {
            let h = assess(&HealthInputs {
                max_thread_busy: busy,
                hiccup_p99_ns: Some(hiccup),
                open_loop: false,
                ..healthy()
            });
            assert_eq!(h.verdict, HealthVerdict::Warn, "{:?}", h.reasons);
            let s = signal(&h, "hiccups");
            assert_eq!(s.cause, Cause::Machine);
            assert!(
                s.message.contains("the machine, not vload, paused"),
                "{}",
                s.message
            );
        }
    }

    #[test]
    fn a_thread_starved_by_other_processes_is_client_bound_by_the_machine() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.35,
            max_thread_waiting: Some(0.62),
            open_loop: false,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        let s = signal(&h, "thread_busy");
        assert_eq!(s.cause, Cause::Machine);
        assert!(s.message.contains("waited for a CPU 62%"), "{}", s.message);
    }

    #[test]
    fn late_sends_and_lag_trip_the_gate() {
        // A thread busy 70% of the time that falls behind: vload's own doing.
        let h = assess(&HealthInputs {
            late_sends: 500,
            dispatch_lag_p99_ns: Some(5_000_000),
            max_thread_busy: 0.7,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
        assert_eq!(h.reasons.len(), 2, "{:?}", h.reasons);
        let h = assess(&HealthInputs {
            dispatch_lag_p99_ns: Some(150_000),
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Warn, "{:?}", h.reasons);
    }

    #[test]
    fn a_frozen_client_that_never_sent_is_client_bound() {
        // See #17, case 2: frozen past the end, 900 of 1,500 due requests never sent.
        let h = assess(&HealthInputs {
            intended: 1_500,
            unsent: 900,
            max_thread_busy: 0.02,
            hiccup_p99_ns: Some(3_000_000_000),
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        let s = signal(&h, "unsent");
        assert_eq!(s.cause, Cause::Machine);
        assert!(
            s.message.contains("900 of them never sent"),
            "{}",
            s.message
        );
    }

    #[test]
    fn late_sends_on_a_paused_machine_warn_until_the_load_is_not_applied() {
        // A gentle run on a loaded machine: 5-10% late by a few ms, the thread mostly idle.
        let paused = HealthInputs {
            max_thread_busy: 0.05,
            hiccup_p99_ns: Some(3_000_000),
            late_sends: 800,
            ..healthy()
        };
        let h = assess(&paused);
        assert_eq!(h.verdict, HealthVerdict::Warn, "{:?}", h.reasons);
        assert_eq!(signal(&h, "late_sends").cause, Cause::Machine);
        // A third of the requests late: the offered load was not the plan's.
        let h = assess(&HealthInputs {
            late_sends: 3_500,
            ..paused
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        // Requests never sent beyond 0.5%: the load was not applied.
        let h = assess(&HealthInputs {
            late_sends: 100,
            unsent: 100,
            ..paused
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
    }

    #[test]
    fn a_few_late_sends_are_the_machine_not_the_client() {
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 3,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
        // 10% late with the thread mostly idle: the scheduler woke it late, a warning.
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 20,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Warn, "{:?}", h.reasons);
        assert_eq!(signal(&h, "late_sends").cause, Cause::Machine);
        // The same with the thread working most of the time: vload fell behind.
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 20,
            max_thread_busy: 0.7,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        assert_eq!(signal(&h, "late_sends").cause, Cause::Client);
    }

    #[test]
    fn requests_queued_for_a_connection_are_a_warning_with_their_wait() {
        // See #17, case 9: 969 of 1,000 requests waited for one of 10 connections.
        let h = assess(&HealthInputs {
            intended: 1_000,
            capped: 969,
            queue_wait_p99_ns: Some(480_000_000),
            max_connections: 10,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Warn, "{:?}", h.reasons);
        // Waiting only while connections were being made is the open loop growing.
        let growing = assess(&HealthInputs {
            intended: 1_000,
            capped: 0,
            max_connections: 10_000,
            ..healthy()
        });
        assert_eq!(growing.verdict, HealthVerdict::Ok, "{:?}", growing.reasons);
        let s = signal(&h, "queue_wait");
        assert_eq!(s.cause, Cause::ConnectionCap);
        assert!(s.message.contains("969 requests (96.9%)"), "{}", s.message);
        assert!(s.message.contains("all 10 connections"), "{}", s.message);
    }

    #[test]
    fn client_resource_failures_are_client_bound() {
        let h = assess(&HealthInputs {
            client_limit_errors: 5,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
    }

    #[test]
    fn warn_never_downgrades_client_bound() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.99,
            cpu_s: 15.0,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
        let h = assess(&HealthInputs {
            max_thread_busy: 0.80,
            fd_needed: 2_000_000,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Warn);
        assert_eq!(h.reasons.len(), 2);
    }
}

//! What limited the load a run applied: one causal model, one word per cause, each backed
//! by the signal that proves it.
//!
//! The question is whether the load reached the server as planned, and if not, why. The
//! causes, and the only evidence that names each:
//!
//! - **vload's own threads** (`CLIENT-BOUND`): the busiest worker thread was on a CPU
//!   nearly all the time (in a closed loop it then set the pace; in an open loop, only if
//!   the schedule slipped too), or, in an open loop, the schedule slipped while that thread
//!   was busier working than waiting; all cores busy with vload; the client's own resources
//!   (file descriptors, local ports) running out. Nothing else is called `CLIENT-BOUND`.
//! - **the machine** (`MACHINE-BUSY`): the load was not applied on time (requests sent late
//!   or never, or a closed loop's thread never idle) while vload's busiest thread was idle
//!   or waiting for a CPU more than working: other processes, or a pause of the machine,
//!   took the cores.
//! - **the connection cap** (`CONNECTION-CAPPED`): requests waited because every connection
//!   vload was allowed to open (`--max-connections`) was busy.
//! - **the server** (`SERVER-LIMITED`): requests waited for connections being made, the cap
//!   not reached: the server accepted too slowly, or answered so slowly that the open loop
//!   kept opening connections for it. The numbers are then the server's.
//! - otherwise the load was applied as planned: `ok`.
//!
//! A signal below its cause's threshold is a note: printed, never the word. When several
//! causes are proven, the one that puts the numbers furthest from the server's wins
//! (vload's own threads, then the machine, the cap, the server).

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
    /// Open loop: requests that waited for a connection, for any reason.
    pub(crate) queued: u64,
    pub(crate) queue_wait_p99_ns: Option<u64>,
    pub(crate) max_connections: u32,
    /// Open loop: the most connections open at once.
    pub(crate) peak_connections: Option<u64>,
    pub(crate) client_limit_errors: u64,
    pub(crate) fd_limit: u64,
    pub(crate) fd_needed: u64,
}

/// A thread on a CPU this share of the time is saturated: measured on this kind of machine,
/// a closed loop against a fast origin keeps its thread 93-98% busy.
const SATURATED: f64 = 0.90;
/// A thread busy this much, and more working than waiting for a CPU, is the likelier cause
/// of its own lateness; one less busy had time to send on schedule.
const BUSY_FOR_CAUSE: f64 = 0.5;
/// A closed loop's thread waiting for a CPU this share of the time, never idle, was held
/// back by other processes.
const STARVED: f64 = 0.25;
/// Share of due requests sent over 1 ms late or never sent above which the planned load
/// was not applied (a gentle run on a loaded 2-core machine measured 5%; an impossible rate
/// 30-35%; a client frozen past the window's end 60% never sent); above the note level,
/// a note.
const LATE_SHARE: (f64, f64) = (0.005, 0.05);
/// Share of due requests never sent above which the load was not applied.
const UNSENT_SHARE: f64 = 0.005;
/// Fewer late or waiting requests than this are the operating system's doing, not a trend.
const MIN_COUNT: u64 = 10;
/// All cores busy with vload.
const CPU_UTIL: (f64, f64) = (0.70, 0.90);
/// A 1 ms timer waking this late, at the 99th percentile, is a pause worth a note: an idle
/// 2-core VM shows 60-200 µs, sometimes 1 ms; a loaded one 1-30 ms.
const HICCUP_NOTE_NS: u64 = 1_000_000;
/// Share of due requests that waited for a connection above which the wait limited the load.
const WAITED_SHARE: f64 = 0.01;

struct Assessment {
    signals: Vec<HealthSignal>,
}

impl Assessment {
    /// A signal that limited the load: its cause's word.
    fn limited(&mut self, signal: &str, cause: Cause, message: String) {
        self.push(signal, HealthVerdict::of(cause), cause, message);
    }

    /// A note: printed, the verdict left as it is.
    fn note(&mut self, signal: &str, cause: Cause, message: String) {
        self.push(signal, HealthVerdict::Ok, cause, message);
    }

    fn push(&mut self, signal: &str, level: HealthVerdict, cause: Cause, message: String) {
        self.signals.push(HealthSignal {
            signal: signal.to_owned(),
            level,
            cause,
            message,
        });
    }

    /// The word of the cause that puts the numbers furthest from the server's.
    fn verdict(&self) -> HealthVerdict {
        self.signals
            .iter()
            .map(|s| s.level)
            .max()
            .unwrap_or(HealthVerdict::Ok)
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
    threads(&mut a, x, cpu_util);
    if x.open_loop {
        schedule(&mut a, x);
        waiting(&mut a, x);
        saturated_open_loop(&mut a, x);
    }
    notes(&mut a, x);
    // The decisive signals first, so `reasons[0]` says what limited the load.
    a.signals.sort_by_key(|s| std::cmp::Reverse(s.level));
    ClientHealth {
        cpu_s: x.cpu_s,
        cpu_util,
        max_thread_busy: x.max_thread_busy,
        peak_connections: x.peak_connections,
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

/// How the busiest thread spent the run, in one phrase every signal shares.
fn thread_phrase(x: &HealthInputs) -> String {
    let waiting = x.max_thread_waiting.unwrap_or(0.0);
    let idle = (1.0 - x.max_thread_busy - waiting).max(0.0);
    format!(
        "vload's busiest thread was on a CPU {:.0}%, waiting for one {:.0}% and idle {:.0}% of the time",
        x.max_thread_busy * 100.0,
        waiting * 100.0,
        idle * 100.0
    )
}

/// The worker threads and the cores: vload saturated, or starved by other processes.
fn threads(a: &mut Assessment, x: &HealthInputs, cpu_util: f64) {
    let waiting = x.max_thread_waiting.unwrap_or(0.0);
    let phrase = thread_phrase(x);
    if x.max_thread_busy >= SATURATED {
        // A closed loop sends the next request as soon as its thread can: a saturated
        // thread set the pace. An open loop's saturated thread that kept its schedule
        // applied the load as planned (the schedule signal says when it did not).
        if x.open_loop {
            a.note(
                "thread_busy",
                Cause::Client,
                format!("{phrase}: near its limit, though it kept its schedule"),
            );
        } else {
            a.limited(
                "thread_busy",
                Cause::Client,
                format!("{phrase}: vload, not the server, set the pace"),
            );
        }
    } else if !x.open_loop && waiting >= STARVED && x.max_thread_busy + waiting >= SATURATED {
        a.limited(
            "cpu_wait",
            Cause::Machine,
            format!(
                "{phrase}: other processes took the cores, and vload, on a CPU or waiting for one nearly all the time, could not send as fast as the server answered"
            ),
        );
    }
    if cpu_util > CPU_UTIL.1 {
        a.limited(
            "cpu",
            Cause::Client,
            format!(
                "vload used {:.0}% of all {} cores",
                cpu_util * 100.0,
                x.cores
            ),
        );
    } else if cpu_util > CPU_UTIL.0 {
        a.note(
            "cpu",
            Cause::Client,
            format!(
                "vload used {:.0}% of all {} cores: near the machine's limit",
                cpu_util * 100.0,
                x.cores
            ),
        );
    }
    if x.client_limit_errors > 0 {
        a.limited(
            "client_limit",
            Cause::Client,
            format!(
                "{} requests failed for lack of vload's own resources (file descriptors or local ports): vload's failures, not the server's",
                x.client_limit_errors
            ),
        );
    }
}

/// Open loop: was the planned load sent on time, and if not, whose doing was it?
fn schedule(a: &mut Assessment, x: &HealthInputs) {
    if x.intended == 0 {
        return;
    }
    let behind = x.late_sends + x.unsent;
    let share = behind as f64 / x.intended as f64;
    let unsent_share = x.unsent as f64 / x.intended as f64;
    if behind < MIN_COUNT || share <= LATE_SHARE.0 {
        return;
    }
    let waiting = x.max_thread_waiting.unwrap_or(0.0);
    // A thread that worked more than it idled or waited made itself late; one that idled
    // or waited for a CPU was held back from outside (other processes, a pause, SIGSTOP).
    let cause = if x.max_thread_busy >= BUSY_FOR_CAUSE && x.max_thread_busy >= waiting {
        Cause::Client
    } else {
        Cause::Machine
    };
    let unsent = if x.unsent > 0 {
        format!(", {} of them never sent", x.unsent)
    } else {
        String::new()
    };
    let lag = x.dispatch_lag_p99_ns.map_or_else(String::new, |l| {
        format!(" (dispatch lag p99 {})", micros(l))
    });
    let what = format!(
        "{:.2}% of due requests were sent more than 1 ms late or not at all{unsent}{lag}",
        share * 100.0
    );
    let signal = if x.unsent > 0 { "unsent" } else { "late_sends" };
    let not_applied =
        share > LATE_SHARE.1 || (x.unsent >= MIN_COUNT && unsent_share > UNSENT_SHARE);
    let phrase = thread_phrase(x);
    match (not_applied, cause) {
        (true, Cause::Client) => a.limited(
            signal,
            cause,
            format!("{what}: vload could not keep up with its schedule ({phrase}); the planned load was not applied"),
        ),
        (true, _) => a.limited(
            signal,
            cause,
            format!("{what}: something outside vload held it back ({phrase}: other processes, a pause of the machine, or SIGSTOP); the planned load was not applied"),
        ),
        (false, _) => a.note(
            signal,
            cause,
            format!("{what}: their lateness is in their response time"),
        ),
    }
}

/// Open loop: requests that waited for a connection: for the cap the user set, or for
/// connections the server was slow to take.
fn waiting(a: &mut Assessment, x: &HealthInputs) {
    if x.intended == 0 {
        return;
    }
    let wait = x
        .queue_wait_p99_ns
        .map_or_else(String::new, |w| format!(", p99 {}", micros(w)));
    let share = |n: u64| n as f64 / x.intended as f64;
    if x.capped >= MIN_COUNT && share(x.capped) > WAITED_SHARE {
        a.limited(
            "queue_wait",
            Cause::ConnectionCap,
            format!(
                "{} requests ({:.1}%) waited for a free connection{wait}: all {} connections vload may open (--max-connections) were busy; the wait is part of their response time",
                x.capped,
                share(x.capped) * 100.0,
                x.max_connections
            ),
        );
    }
    // Requests that waited while the cap was not reached: for connections being made.
    let growing = x.queued.saturating_sub(x.capped);
    if growing >= MIN_COUNT && share(growing) > WAITED_SHARE {
        let open = x.peak_connections.map_or_else(String::new, |p| {
            format!(
                ", connections grew to {p} of the {} allowed",
                x.max_connections
            )
        });
        a.limited(
            "connect_wait",
            Cause::Server,
            format!(
                "{growing} requests ({:.1}%) waited for a connection being made{wait}{open}: the server answered or accepted too slowly for the planned load (each request holds its connection until answered)",
                share(growing) * 100.0
            ),
        );
    }
}

/// Open loop: when requests went out late or waited for connections while vload's busiest
/// thread never idled, the thread is why: its connections were slow because it could not
/// serve them faster (raising the cap would not help). Its own work (on a CPU more than
/// waiting for one) makes it vload's limit; waiting for a CPU more, the machine's. The
/// other signals are the consequences.
fn saturated_open_loop(a: &mut Assessment, x: &HealthInputs) {
    let waiting = x.max_thread_waiting.unwrap_or(0.0);
    if x.max_thread_busy + waiting < SATURATED {
        return;
    }
    let cause = if x.max_thread_busy >= waiting {
        Cause::Client
    } else {
        Cause::Machine
    };
    let held_back = a
        .signals
        .iter()
        .any(|s| s.level != HealthVerdict::Ok && s.signal != "thread_busy");
    if !held_back {
        return;
    }
    let why = match cause {
        Cause::Client => "vload could not serve its connections faster",
        _ => "other processes took the cores vload needed to serve its connections",
    };
    a.signals.retain(|s| s.signal != "thread_busy");
    a.limited(
        "thread_busy",
        cause,
        format!(
            "{}: requests waited or went out late because {why}",
            thread_phrase(x)
        ),
    );
}

/// What is worth knowing and limited nothing: pauses, the dispatch lag, descriptors.
fn notes(a: &mut Assessment, x: &HealthInputs) {
    if let Some(hiccup) = x.hiccup_p99_ns
        && hiccup > HICCUP_NOTE_NS
    {
        let cause = if x.max_thread_busy > BUSY_FOR_CAUSE {
            Cause::Client
        } else {
            Cause::Machine
        };
        let whose = match cause {
            Cause::Client => "vload's busy runtime woke late",
            _ => "the machine held vload's threads back (their own work was light)",
        };
        a.note(
            "hiccups",
            cause,
            format!(
                "{whose}: a 1 ms timer woke {} late (p99); results include those pauses",
                micros(hiccup)
            ),
        );
    }
    if let Some(lag) = x.dispatch_lag_p99_ns {
        // Lag matters relative to what is measured: 100 µs is a lot for a 200 µs cache hit.
        let limit = (100_000f64).max(0.05 * x.service_p50_ns.unwrap_or(0) as f64);
        if lag as f64 > limit && !a.signals.iter().any(|s| s.signal == "late_sends") {
            a.note(
                "dispatch_lag",
                Cause::Client,
                format!(
                    "dispatch lag p99 {} (above {} for this latency): sends went out a little late; the lag is in their response time",
                    micros(lag),
                    micros(limit as u64)
                ),
            );
        }
    }
    if x.fd_needed > x.fd_limit {
        a.note(
            "fd_limit",
            Cause::Client,
            format!(
                "{} connections need about {} file descriptors but the limit is {}: raise it with ulimit -n",
                x.fd_needed.saturating_sub(64),
                x.fd_needed,
                x.fd_limit
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
            queued: 0,
            queue_wait_p99_ns: None,
            max_connections: 10_000,
            peak_connections: Some(20),
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
        assert!(h.signals.is_empty());
        assert!((h.cpu_util - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_saturated_closed_loop_thread_is_client_bound() {
        // See #17, case 24: a thread 93% busy at 124k/s got only WARN.
        let h = assess(&HealthInputs {
            max_thread_busy: 0.93,
            open_loop: false,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        let s = signal(&h, "thread_busy");
        assert_eq!(s.cause, Cause::Client);
        assert!(s.message.contains("on a CPU 93%"), "{}", s.message);
    }

    #[test]
    fn a_saturated_open_loop_thread_that_kept_its_schedule_applied_the_load() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.97,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
        assert_eq!(signal(&h, "thread_busy").level, HealthVerdict::Ok);
    }

    /// See #48: one report said the thread was "never idle" (on a CPU or waiting for one)
    /// and, two lines down, that the machine paused "while vload's threads idled".
    #[test]
    fn a_starved_closed_loop_is_not_said_to_idle_and_not_to_be_never_idle() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.3,
            max_thread_waiting: Some(0.65),
            open_loop: false,
            hiccup_p99_ns: Some(8_000_000),
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
        let said: Vec<&str> = h.signals.iter().map(|s| s.message.as_str()).collect();
        assert!(said.len() >= 2, "{said:?}");
        for message in said {
            assert!(
                !message.contains("never idle") && !message.contains("idled"),
                "{message}"
            );
        }
    }

    /// See #30: `stress-ng --cpu 4` beside `vload attack -r 2000` was called CLIENT-BOUND
    /// with vload's busiest thread 5.7% busy (20.9% of sends over 1 ms late).
    #[test]
    fn lateness_while_vload_idled_is_the_machine_never_client_bound() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.057,
            max_thread_waiting: Some(0.3),
            hiccup_p99_ns: Some(8_000_000),
            late_sends: 2_090,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
        assert!(
            h.signals.iter().all(|s| s.cause == Cause::Machine),
            "{:?}",
            h.signals
        );
        assert!(
            h.reasons[0].contains("20.90% of due requests"),
            "{}",
            h.reasons[0]
        );
        // The phrase is one and the same wherever the thread is described.
        assert!(h.reasons[0].contains("on a CPU 6%, waiting for one 30% and idle 64%"));
    }

    #[test]
    fn lateness_of_a_working_thread_is_vloads_own() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.8,
            late_sends: 3_000,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        assert_eq!(signal(&h, "late_sends").cause, Cause::Client);
        // Busy, but more waiting for a CPU than working: the machine.
        let h = assess(&HealthInputs {
            max_thread_busy: 0.55,
            max_thread_waiting: Some(0.6),
            late_sends: 3_000,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
    }

    #[test]
    fn a_little_lateness_is_a_note() {
        let h = assess(&HealthInputs {
            late_sends: 200,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
        assert_eq!(signal(&h, "late_sends").level, HealthVerdict::Ok);
        // A few are the operating system's.
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 3,
            ..healthy()
        });
        assert!(h.signals.is_empty(), "{:?}", h.signals);
    }

    #[test]
    fn a_frozen_client_that_never_sent_is_the_machine() {
        // See #17, case 2: frozen past the end, 900 of 1,500 due requests never sent.
        let h = assess(&HealthInputs {
            intended: 1_500,
            unsent: 900,
            max_thread_busy: 0.02,
            hiccup_p99_ns: Some(3_000_000_000),
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
        let s = signal(&h, "unsent");
        assert!(
            s.message.contains("900 of them never sent"),
            "{}",
            s.message
        );
        assert!(s.message.contains("SIGSTOP"), "{}", s.message);
        // 0.5% never sent is enough, whatever the lateness.
        let h = assess(&HealthInputs {
            unsent: 60,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
    }

    #[test]
    fn a_starved_closed_loop_thread_is_the_machine() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.35,
            max_thread_waiting: Some(0.62),
            open_loop: false,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
        assert_eq!(signal(&h, "cpu_wait").cause, Cause::Machine);
    }

    #[test]
    fn a_hiccup_alone_is_a_note_never_a_verdict() {
        // See #17, cases 3 and 24: hiccup p99 1-30 ms with the thread 7-30% busy.
        for (busy, hiccup) in [(0.07, 1_400_000), (0.3, 30_000_000), (0.08, 5_000_000)] {
            let h = assess(&HealthInputs {
                max_thread_busy: busy,
                hiccup_p99_ns: Some(hiccup),
                open_loop: false,
                ..healthy()
            });
            assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
            let s = signal(&h, "hiccups");
            assert_eq!((s.cause, s.level), (Cause::Machine, HealthVerdict::Ok));
        }
    }

    #[test]
    fn the_cap_and_a_slow_accept_are_told_apart() {
        // See #17, case 9: 969 of 1,000 requests waited for one of 10 connections.
        let h = assess(&HealthInputs {
            intended: 1_000,
            capped: 969,
            queued: 969,
            queue_wait_p99_ns: Some(480_000_000),
            max_connections: 10,
            peak_connections: Some(10),
            ..healthy()
        });
        assert_eq!(
            h.verdict,
            HealthVerdict::ConnectionCapped,
            "{:?}",
            h.reasons
        );
        let s = signal(&h, "queue_wait");
        assert!(s.message.contains("969 requests (96.9%)"), "{}", s.message);
        assert!(s.message.contains("all 10 connections"), "{}", s.message);
        // See #30: "waited for a free connection" when no cap was reached; a starved
        // server that accepted slowly, with 104 of 10,000 connections open, was blamed on
        // vload.
        let h = assess(&HealthInputs {
            intended: 10_000,
            queued: 4_000,
            peak_connections: Some(104),
            queue_wait_p99_ns: Some(90_000_000),
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ServerLimited, "{:?}", h.reasons);
        let s = signal(&h, "connect_wait");
        assert!(
            s.message.contains("grew to 104 of the 10000"),
            "{}",
            s.message
        );
        assert!(!h.reasons.iter().any(|r| r.contains("free connection")));
        // A few waiting while the first connections are made is the open loop growing.
        let h = assess(&HealthInputs {
            intended: 10_000,
            queued: 8,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::Ok, "{:?}", h.reasons);
    }

    #[test]
    fn the_cause_furthest_from_the_server_names_the_run() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.99,
            open_loop: false,
            client_limit_errors: 3,
            fd_needed: 2_000_000,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
        assert_eq!(
            h.signals[0].level,
            HealthVerdict::ClientBound,
            "decisive first"
        );
        assert_eq!(
            h.signals.last().unwrap().level,
            HealthVerdict::Ok,
            "notes last"
        );
        let h = assess(&HealthInputs {
            intended: 1_000,
            capped: 500,
            queued: 500,
            late_sends: 300,
            max_thread_busy: 0.1,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::MachineBusy, "{:?}", h.reasons);
    }

    /// A saturated thread whose connections were all busy: the connections were slow
    /// because vload could not serve them, so vload, not the cap, limited the load.
    #[test]
    fn a_saturated_thread_explains_the_waits_it_caused() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.98,
            intended: 400_000,
            capped: 397_489,
            queued: 397_489,
            max_connections: 50,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
        assert_eq!(h.signals[0].signal, "thread_busy");
    }

    #[test]
    fn client_resource_failures_are_client_bound() {
        let h = assess(&HealthInputs {
            client_limit_errors: 5,
            ..healthy()
        });
        assert_eq!(h.verdict, HealthVerdict::ClientBound);
    }
}

//! Was the client the bottleneck? The signals and the verdict.

use vload_schema::{ClientHealth, Verdict};

/// The measurements the verdict rests on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HealthInputs {
    pub(crate) cpu_s: f64,
    pub(crate) wall_s: f64,
    pub(crate) cores: u32,
    pub(crate) max_thread_busy: f64,
    pub(crate) open_loop: bool,
    pub(crate) intended: u64,
    pub(crate) late_sends: u64,
    pub(crate) dispatch_lag_p99_ns: Option<u64>,
    pub(crate) hiccup_p99_ns: Option<u64>,
    pub(crate) service_p50_ns: Option<u64>,
    pub(crate) fd_limit: u64,
    pub(crate) fd_needed: u64,
}

/// Levels: (warn above, client-bound above).
const CPU_UTIL: (f64, f64) = (0.70, 0.90);
const THREAD_BUSY: (f64, f64) = (0.85, 0.95);
const LATE_RATIO: (f64, f64) = (0.005, 0.05);
/// Fewer late sends than this are the operating system's doing (the hiccup probe shows it),
/// not a sign that the client cannot keep up.
const LATE_MIN: u64 = 10;
const HICCUP_NS: (u64, u64) = (200_000, 1_000_000);

pub(crate) fn assess(x: &HealthInputs) -> ClientHealth {
    let mut verdict = Verdict::Ok;
    let mut reasons = Vec::new();
    let mut flag = |level: Verdict, reason: String| {
        if level == Verdict::ClientBound || verdict == Verdict::Ok {
            verdict = level;
        }
        reasons.push(reason);
    };
    let level = |value: f64, (warn, bound): (f64, f64)| match value {
        v if v > bound => Some(Verdict::ClientBound),
        v if v > warn => Some(Verdict::Warn),
        _ => None,
    };
    let cpu_util = if x.wall_s > 0.0 {
        x.cpu_s / (x.wall_s * f64::from(x.cores.max(1)))
    } else {
        0.0
    };
    if let Some(l) = level(cpu_util, CPU_UTIL) {
        flag(
            l,
            format!(
                "client CPU at {:.0}% of all {} cores",
                cpu_util * 100.0,
                x.cores
            ),
        );
    }
    if let Some(l) = level(x.max_thread_busy, THREAD_BUSY) {
        let pace = if l == Verdict::ClientBound {
            ": the client, not the server, set the pace"
        } else {
            ""
        };
        flag(
            l,
            format!(
                "a worker thread was busy {:.0}% of the time{pace}",
                x.max_thread_busy * 100.0
            ),
        );
    }
    if x.open_loop {
        let late = if x.intended > 0 {
            x.late_sends as f64 / x.intended as f64
        } else {
            0.0
        };
        if let Some(l) = level(late, LATE_RATIO).filter(|_| x.late_sends >= LATE_MIN) {
            flag(
                l,
                format!(
                    "{:.2}% of requests were dispatched more than 1 ms late",
                    late * 100.0
                ),
            );
        }
        if let Some(lag) = x.dispatch_lag_p99_ns {
            // Lag matters relative to what is measured: 100 µs is a lot for a 200 µs cache hit.
            let p50 = x.service_p50_ns.unwrap_or(0) as f64;
            let warn = (100_000f64).max(0.05 * p50);
            let bound = (1_000_000f64).max(0.20 * p50);
            if let Some(l) = level(lag as f64, (warn, bound)) {
                flag(
                    l,
                    format!(
                        "dispatch lag p99 {} (limit {} for this latency)",
                        micros(lag),
                        micros(warn as u64)
                    ),
                );
            }
        }
    }
    if let Some(hiccup) = x.hiccup_p99_ns
        && let Some(l) = level(hiccup as f64, (HICCUP_NS.0 as f64, HICCUP_NS.1 as f64))
    {
        flag(
            l,
            format!(
                "runtime hiccups: p99 {} late on a 1 ms timer",
                micros(hiccup)
            ),
        );
    }
    if x.fd_needed > x.fd_limit {
        flag(
            Verdict::Warn,
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
        verdict,
        reasons,
    }
}

fn micros(ns: u64) -> String {
    format!("{:.0} µs", ns as f64 / 1000.0)
}

/// Raises the soft limit on open files to the hard limit; returns the limit now in force.
pub(crate) fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit for this process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    #[allow(clippy::unnecessary_cast, reason = "rlim_t is not u64 on every target")]
    let limit = limit.rlim_cur as u64;
    limit
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
            open_loop: true,
            intended: 10_000,
            late_sends: 0,
            dispatch_lag_p99_ns: Some(30_000),
            hiccup_p99_ns: Some(50_000),
            service_p50_ns: Some(200_000),
            fd_limit: 1_048_576,
            fd_needed: 114,
        }
    }

    #[test]
    fn a_healthy_run_is_ok() {
        let h = assess(&healthy());
        assert_eq!(h.verdict, Verdict::Ok, "{:?}", h.reasons);
        assert!((h.cpu_util - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_saturated_thread_makes_the_client_the_bottleneck() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.99,
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::ClientBound);
        assert!(h.reasons[0].contains("99%"), "{:?}", h.reasons);
    }

    #[test]
    fn late_sends_and_lag_trip_the_gate() {
        let h = assess(&HealthInputs {
            late_sends: 500,
            dispatch_lag_p99_ns: Some(5_000_000),
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::ClientBound);
        assert_eq!(h.reasons.len(), 2, "{:?}", h.reasons);
        let h = assess(&HealthInputs {
            dispatch_lag_p99_ns: Some(150_000),
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::Warn, "{:?}", h.reasons);
    }

    #[test]
    fn a_few_late_sends_are_the_machine_not_the_client() {
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 3,
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::Ok, "{:?}", h.reasons);
        let h = assess(&HealthInputs {
            intended: 200,
            late_sends: 20,
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::ClientBound, "{:?}", h.reasons);
    }

    #[test]
    fn warn_never_downgrades_client_bound() {
        let h = assess(&HealthInputs {
            max_thread_busy: 0.99,
            cpu_s: 15.0,
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::ClientBound);
        let h = assess(&HealthInputs {
            max_thread_busy: 0.90,
            fd_needed: 2_000_000,
            ..healthy()
        });
        assert_eq!(h.verdict, Verdict::Warn);
        assert_eq!(h.reasons.len(), 2);
    }

    #[test]
    fn raising_the_fd_limit_never_lowers_it() {
        let before = raise_fd_limit();
        assert!(raise_fd_limit() >= before);
    }
}

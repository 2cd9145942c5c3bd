use vload_schema::HealthVerdict;

use super::util::*;

/// One worker thread cannot serve 400,000 requests a second: the run must say that
/// vload, not the origin, was the limit (analysis-methods.md D7.4). Dispatching is cheap,
/// so the client shows it as a saturated thread (and late sends, when it falls behind).
#[test]
fn an_impossible_rate_is_called_client_bound() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/", open(400_000.0, 50), secs(1.0));
    // hyper's client costs more per request than the origin does, so the client is
    // surely the limit; vload's lean client can outrun this origin on two shared cores.
    p.protocol = vload_engine::Protocol::Http1 {
        client: vload_engine::Client::Hyper,
    };
    let run = attack(p);
    let h = &run.client_health;
    // Saturated, or (on a loaded machine, where the thread gets a share of a core) behind
    // its schedule, late sends or a dispatch lag far over the limit: either way the
    // planned load was not applied.
    assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.reasons);
    assert!(
        h.signals
            .iter()
            .any(|s| s.level == HealthVerdict::ClientBound
                && ["thread_busy", "late_sends", "unsent", "dispatch_lag"]
                    .contains(&s.signal.as_str())),
        "{:?}",
        h.signals
    );
    assert!(
        h.reasons
            .iter()
            .any(|r| r.contains("busy") || r.contains("ms late")),
        "{:?}",
        h.reasons
    );
    assert!(
        run.window.wait_s > 0.5,
        "the queue took long to drain: {:?}",
        run.window
    );
}

/// Threads that keep both cores busy until dropped: another process's load.
struct Burners(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Vec<std::thread::JoinHandle<()>>,
);

impl Burners {
    fn start(n: usize) -> Burners {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Burners(stop, threads)
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        self.1.drain(..).for_each(|t| drop(t.join()));
    }
}

/// See #17, cases 3 and 24: on a loaded host every run was called CLIENT-BOUND with the
/// busiest thread at 8-30%, because a hiccup alone triggered it.
#[test]
fn a_machine_loaded_by_others_is_not_called_client_bound() {
    let origin = origin();
    let burners = Burners::start(2);
    let run = attack(plan(origin.addr(), "/?delay=10ms", closed(20), secs(2.0)));
    drop(burners);
    let h = &run.client_health;
    assert_ne!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.signals);
    assert!(
        h.signals
            .iter()
            .all(|s| s.cause == vload_schema::Cause::Machine),
        "only the machine is blamed: {:?}",
        h.signals
    );
}

/// ... while a thread that never idles, against a fast origin, is.
#[test]
fn one_thread_against_a_fast_origin_is_client_bound() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/", closed(50), secs(1.5));
    // hyper's client costs more per request than the origin does: the client is the
    // limit (vload's lean client and the origin are close to even on two cores).
    p.protocol = vload_engine::Protocol::Http1 {
        client: vload_engine::Client::Hyper,
    };
    let run = attack(p);
    let h = &run.client_health;
    let demand = h.max_thread_busy + h.max_thread_waiting.unwrap_or(0.0);
    if demand > 0.9 {
        // The thread never idled: vload set the pace.
        assert_eq!(h.verdict, HealthVerdict::ClientBound, "{:?}", h.signals);
        assert!(
            h.signals.iter().any(|s| s.signal == "thread_busy"),
            "{:?}",
            h.signals
        );
    } else {
        // Other processes took the cores (the suite also runs beside stress-ng): the
        // thread idled while the origin, slowed too, answered. The client is not blamed.
        assert!(h.max_thread_busy < 0.9, "{h:?}");
        assert!(
            h.signals
                .iter()
                .all(|s| s.level != HealthVerdict::ClientBound
                    || s.cause == vload_schema::Cause::Machine),
            "{:?}",
            h.signals
        );
    }
}

#[test]
fn a_gentle_run_is_healthy_and_says_how_busy_the_client_was() {
    let origin = origin();
    let run = attack(plan(origin.addr(), "/", open(200.0, 50), secs(1.0)));
    let h = &run.client_health;
    // The client's own load signals stay quiet; a busy machine may still be flagged, as
    // the machine's (hiccups, sends it delayed).
    assert!(
        h.signals
            .iter()
            .all(|s| s.cause == vload_schema::Cause::Machine && s.level == HealthVerdict::Warn),
        "{:?}",
        h.signals
    );
    assert!(h.cpu_s > 0.0 && h.cpu_util < 0.5, "{h:?}");
    assert!(h.hiccup_p99_ns.is_some() && h.dispatch_lag_p99_ns.is_some());
    assert!(h.fd_limit >= h.fd_needed);
}

use std::time::Duration;

use vload_schema::{LatencyKind, Mode};

use super::util::*;

on_both_drivers! {
    #[test]
    fn closed_loop_runs_clean_against_a_healthy_origin() {
        let origin = origin();
        let run = attack_alone(plan(origin.addr(), "/", closed(10), secs(1.5)));
        let t = &run.totals;
        assert!(t.completed > 100, "{t:?}");
        assert_eq!(t.errors.len(), 0, "{:?}", t.errors);
        assert_eq!(t.status_codes.get(&200), Some(&t.completed));
        assert_eq!(t.bytes_in, 11 * t.completed);
        assert_eq!(t.connections_opened, 10);
        assert_eq!(run.plan.mode, Mode::Closed);
        assert_eq!(run.latency.primary, LatencyKind::Service);
        assert!(run.latency.response.is_none());
        assert_eq!(run.latency.service.moments.n, t.completed);
        assert!(!run.interrupted);
        assert!(
            (run.window.measured_s - 1.5).abs() < 0.1,
            "{:?}",
            run.window
        );
        assert_eq!(run.intervals.len(), 2);
        let per_interval: u64 = run.intervals.iter().map(|i| i.completed).sum();
        assert_eq!(per_interval, t.completed);
        // The origin saw every request the client counted.
        assert_eq!(origin.stats().requests_total, t.completed);
    }
}

on_both_drivers! {
    #[test]
    fn open_loop_sends_the_planned_number_of_requests() {
        let origin = origin();
        let run = attack_alone(plan(origin.addr(), "/", open(2_000.0, 1_000), secs(4.0)));
        let t = &run.totals;
        let sent = t.sent as f64;
        assert!(
            (sent - 8_000.0).abs() <= 80.0,
            "8,000 ± 1% requests, sent {sent}"
        );
        // Every due request was sent, or is counted as never sent (a machine that stalled
        // at the window's end), or was still waiting for a connection at the end.
        assert!(t.sent + t.unsent <= t.intended, "{t:?}");
        assert!(t.intended <= t.sent + t.unsent + t.backlog, "{t:?}");
        // A quiet machine leaves none unsent; beside stress-ng at load 16, 26 of 8,000.
        assert!(t.unsent <= 80, "{t:?}");
        assert_eq!(t.errors.len(), 0, "{:?}", t.errors);
        assert_eq!(run.latency.primary, LatencyKind::Response);
        let response = run.latency.response.as_ref().unwrap();
        assert_eq!(response.moments.n, t.completed);
        // Response time from the intended send is never shorter than service time.
        assert!(response.moments.mean_ns >= run.latency.service.moments.mean_ns);
        let lag = run.latency.dispatch_lag.as_ref().unwrap();
        assert_eq!(
            lag.moments.n,
            t.intended - t.unsent,
            "every dispatch has its lag"
        );
        // Connections open on demand: a fast origin at 2,000/s needs a few (more after a stall
        // of the machine, when late requests go out together: 315 beside stress-ng at load
        // 16), never the cap of 1,000.
        assert!(
            t.connections_opened < 1_000,
            "opened {} connections",
            t.connections_opened
        );
        assert!(run.client_health.dispatch_lag_p99_ns.is_some());
    }
}

on_both_drivers! {
    #[test]
    fn request_bodies_are_sent_and_counted() {
        let origin = origin();
        let mut p = plan(origin.addr(), "/upload", closed(2), count(10));
        p.request.method = http::Method::POST;
        p.request.body = bytes::Bytes::from_static(b"hello");
        let run = attack_alone(p);
        assert_eq!(run.totals.bytes_out, 50);
        assert_eq!(run.plan.body_bytes, 5);
        assert_eq!(run.plan.method, "POST");
        assert_eq!(origin.stats().requests_by_path["/upload"], 10);
    }
}

on_both_drivers! {
    #[test]
    fn request_count_bounds_the_attack_exactly() {
        let origin = origin();
        let run = attack_alone(plan(origin.addr(), "/", closed(7), count(500)));
        assert_eq!(run.totals.completed, 500);
        assert_eq!(origin.stats().requests_total, 500);
        let run = attack_alone(plan(origin.addr(), "/", open(5_000.0, 100), count(300)));
        assert_eq!(run.totals.completed, 300);
    }
}

on_both_drivers! {
    /// A budget smaller than the connections: the connections left without a request stop at
    /// once and the attack ends by itself. (It once waited forever: a slot made without a
    /// request was taken for one already stopped.) An interrupt 60 s on is the backstop that
    /// turns a hang into a failure.
    #[test]
    fn fewer_requests_than_connections_end_by_themselves() {
        let origin = origin();
        let _turn = serial();
        let interrupt = vload_engine::Interrupt::new();
        let backstop = interrupt.clone();
        let (done, ended) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if ended.recv_timeout(Duration::from_secs(60)).is_err() {
                backstop.trigger();
            }
        });
        let plan = plan(origin.addr(), "/", closed(50), count(10));
        let run = vload_engine::run(plan, &mut (), &interrupt).expect("attack runs");
        let _ = done.send(());
        assert!(!run.interrupted, "the attack did not end by itself");
        assert_eq!(run.totals.completed, 10);
        assert_eq!(origin.stats().requests_total, 10);
    }
}

on_both_drivers! {
    /// A 10 ms server delay is measured as 10 ms plus what this machine's scheduling costs,
    /// never less. The bound follows the machine: on a loaded one, both the origin's timer and
    /// vload's wake-up run late by about what the hiccup probe saw. (See #17, case 21: a fixed
    /// 11 ms bound failed at 11.04 ms on a loaded 2-core machine. The 1 ms precision on a
    /// quiet machine is a benchmark: benches/peers/precision.sh.)
    ///
    /// The origin's timer is another thread's, so the machine's lateness is also measured by
    /// a thread of the test's own beside the attack: beside `stress-ng --cpu 8` vload's probe
    /// once saw 0.16 ms while the origin's 10 ms came out at 11.48 ms by the median.
    #[test]
    fn fixed_origin_delay_is_measured_within_the_machines_own_lateness() {
        let origin = origin();
        let (stop, probe) = lateness_probe();
        let run = attack_alone(plan(origin.addr(), "/?delay=10ms", closed(20), secs(2.0)));
        let _ = stop.send(());
        let beside = probe.join().unwrap();
        let p50 = ms(quantile_ns(&run.latency.service, 0.5));
        let hiccup = ms(run.client_health.hiccup_p99_ns.unwrap_or(0)).max(beside);
        let bound = 11.0 + 2.0 * hiccup;
        assert!(
            (10.0..=bound).contains(&p50),
            "p50 {p50} ms, bound {bound} ms (hiccup p99 {hiccup} ms, vload's or a thread beside)"
        );
        assert!(run.latency.service.moments.min_ns >= 10_000_000);
    }
}

on_both_drivers! {
    #[test]
    fn closed_loop_obeys_littles_law() {
        // connections = throughput x mean service time, when the client adds no think time.
        let origin = origin();
        let run = attack_alone(plan(origin.addr(), "/?delay=20ms", closed(10), secs(2.0)));
        let throughput = run.totals.completed as f64 / (run.window.measured_s + run.window.wait_s);
        let mean_s = run.latency.service.moments.mean().unwrap() / 1e9;
        let l = throughput * mean_s;
        assert!((l - 10.0).abs() / 10.0 < 0.05, "L = {l}");
    }
}

#[test]
fn poisson_arrivals_are_seeded_and_keep_the_rate() {
    let origin = origin();
    let load = vload_engine::Load::Open {
        rate: vload_engine::RatePlan::constant(1_000.0),
        arrival: vload_engine::Arrival::Poisson { seed: 7 },
        max_connections: 100,
    };
    let run = attack_alone(plan(origin.addr(), "/", load, secs(2.0)));
    assert!(
        (run.totals.intended as f64 - 2_000.0).abs() < 200.0,
        "{}",
        run.totals.intended
    );
    assert_eq!(run.plan.seed, Some(7));
}

#[test]
fn warmup_is_recorded_in_intervals_but_excluded_from_totals() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/", open(500.0, 100), secs(1.0));
    p.warmup = Duration::from_secs(1);
    let run = attack_alone(p);
    assert!(
        run.intervals[0].warmup && !run.intervals[1].warmup,
        "{:?}",
        run.intervals.iter().map(|i| i.warmup).collect::<Vec<_>>()
    );
    let measured: u64 = run
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.completed)
        .sum();
    assert_eq!(run.totals.completed, measured);
    assert!(run.intervals[0].completed > 400);
    assert!(origin.stats().requests_total > run.totals.completed + 400);
    assert!((run.window.warmup_s - 1.0).abs() < 1e-9);
}

on_both_drivers! {
    #[test]
    fn two_threads_split_the_work() {
        let origin = origin();
        let mut p = plan(origin.addr(), "/", closed(4), count(400));
        p.threads = 2;
        let run = attack_alone(p);
        assert_eq!(run.totals.completed, 400);
        assert_eq!(run.totals.connections_opened, 4);
        assert_eq!(run.plan.threads, 2);
    }
}

/// A thread that sleeps 1 ms at a time until told to stop, and returns how late its wake-ups
/// were at the 99th percentile, in ms: the machine's own lateness as another thread sees it.
fn lateness_probe() -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<f64>) {
    let (stop, told) = std::sync::mpsc::channel::<()>();
    let probe = std::thread::spawn(move || {
        let mut late = Vec::new();
        while told.try_recv().is_err() && late.len() < 100_000 {
            let asked = Duration::from_millis(1);
            let began = std::time::Instant::now();
            std::thread::sleep(asked);
            late.push(began.elapsed().saturating_sub(asked).as_secs_f64() * 1e3);
        }
        late.sort_by(f64::total_cmp);
        late.get(late.len() * 99 / 100).copied().unwrap_or(0.0)
    });
    (stop, probe)
}

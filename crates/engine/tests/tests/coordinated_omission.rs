use std::time::Duration;

use super::util::*;

fn stalling_origin() -> OriginHandle {
    // Stalls during [5 s, 6 s) after start: once in a 10 s run.
    let stall = Stall {
        every: Duration::from_secs(6),
        length: Duration::from_secs(1),
    };
    spawn(OriginConfig {
        threads: Some(1),
        stall: Some(stall),
        ..OriginConfig::loopback()
    })
    .unwrap()
}

on_both_drivers! {
    #[test]
    fn open_loop_sees_the_stall_that_service_time_hides() {
        let origin = stalling_origin();
        let run = attack(plan(origin.addr(), "/", open(1_000.0, 10), secs(10.0)));
        let response_p99 = ms(quantile_ns(run.latency.response.as_ref().unwrap(), 0.99));
        let service_p99 = ms(quantile_ns(&run.latency.service, 0.99));
        assert!(
            response_p99 >= 500.0,
            "response p99 {response_p99} ms must show the 1 s stall"
        );
        assert!(service_p99 < 50.0, "service p99 {service_p99} ms hides it");
        // The client kept its schedule: its own lateness is small beside the 1 s stall. When
        // the stall ends, ten connections drain a second's queue at once, and the dispatcher's
        // timer can wait behind that burst (tokio's LocalSet polls up to 61 tasks between I/O
        // checks): on a busy two-core machine up to a few percent of sends are > 1 ms late.
        let late = run.totals.late_sends as f64 / run.totals.intended as f64;
        assert!(late < 0.10, "the client kept its schedule: {late:.4} late");
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        let lag_p99 = ms(quantile_ns(
            run.latency.dispatch_lag.as_ref().unwrap(),
            0.99,
        ));
        assert!(
            lag_p99 < 50.0,
            "dispatch lag p99 {lag_p99} ms, far below the stall"
        );
    }
}

on_both_drivers! {
    /// The same stall in closed loop looks small: during the stall each connection has one
    /// request waiting, so only a handful of samples carry it (coordinated omission).
    #[test]
    fn closed_loop_hides_the_same_stall() {
        let origin = stalling_origin();
        let run = attack(plan(origin.addr(), "/", closed(10), secs(10.0)));
        let service_p99 = ms(quantile_ns(&run.latency.service, 0.99));
        let max = ms(run.latency.service.moments.max_ns);
        assert!(
            service_p99 < 50.0,
            "closed-loop p99 {service_p99} ms looks healthy"
        );
        assert!(max >= 500.0, "only the max ({max} ms) betrays the stall");
    }
}

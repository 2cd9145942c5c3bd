use std::time::Duration;

use super::util::*;

fn stalling_origin() -> OriginHandle {
    // Stalls during [2 s, 3 s) after start: once in a 4 s run begun at once. A stall of a
    // second in four shows the property as well as one in ten did.
    let stall = Stall {
        every: Duration::from_secs(3),
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
        let _turn = serial();
        let origin = stalling_origin();
        let run = attack_in_turn(plan(origin.addr(), "/", open(1_000.0, 10), secs(4.0)));
        let response_p99 = ms(quantile_ns(run.latency.response.as_ref().unwrap(), 0.99));
        let service_p99 = ms(quantile_ns(&run.latency.service, 0.99));
        assert!(
            response_p99 >= 500.0,
            "response p99 {response_p99} ms must show the 1 s stall"
        );
        assert!(service_p99 < 50.0, "service p99 {service_p99} ms hides it");
        // The stall is the server's, not the client's: the client's own lateness is far below
        // it. (How many sends are a little late depends on the machine: on a quiet one a few
        // percent over 1 ms, when ten connections drain a second's queue at once; beside
        // stress-ng 15%. It is not asserted: the lag's tail against the stall is.)
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        let lag_p99 = ms(quantile_ns(
            run.latency.dispatch_lag.as_ref().unwrap(),
            0.99,
        ));
        assert!(
            lag_p99 < response_p99 / 4.0,
            "dispatch lag p99 {lag_p99} ms, far below the stall's {response_p99} ms"
        );
    }
}

on_both_drivers! {
    /// The same stall in closed loop looks small: during the stall each connection has one
    /// request waiting, so only a handful of samples carry it (coordinated omission).
    #[test]
    fn closed_loop_hides_the_same_stall() {
        let _turn = serial();
        let origin = stalling_origin();
        let run = attack_in_turn(plan(origin.addr(), "/", closed(10), secs(4.0)));
        let service_p99 = ms(quantile_ns(&run.latency.service, 0.99));
        let max = ms(run.latency.service.moments.max_ns);
        assert!(
            service_p99 < 50.0,
            "closed-loop p99 {service_p99} ms looks healthy"
        );
        assert!(max >= 500.0, "only the max ({max} ms) betrays the stall");
    }
}

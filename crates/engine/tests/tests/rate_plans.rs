use std::time::Duration;

use vload_engine::{Arrival, Interrupt, Load, RatePlan, RateStage, Shard};

use super::util::*;

fn stage(from: f64, to: f64, seconds: f64) -> RateStage {
    RateStage {
        from_per_s: from,
        to_per_s: to,
        duration: Some(Duration::from_secs_f64(seconds)),
    }
}

fn staged(stages: Vec<RateStage>, max_connections: u32) -> Load {
    Load::Open {
        rate: RatePlan::staged(stages).expect("a valid plan"),
        arrival: Arrival::Constant,
        max_connections,
    }
}

fn ramp_then_hold() -> Load {
    staged(
        vec![stage(0.0, 2_000.0, 2.0), stage(2_000.0, 2_000.0, 2.0)],
        1_000,
    )
}

on_both_drivers! {
    #[test]
    fn a_ramp_then_a_hold_sends_what_the_plan_makes_due() {
        let origin = origin();
        let run = attack_alone(plan(origin.addr(), "/", ramp_then_hold(), secs(4.0)));
        // Each stage's requests are counted by their intended send: exact, however late sent.
        assert_eq!(run.stages.len(), 2, "{:?}", run.stages);
        assert_eq!(run.stages[0].intended, 2_000);
        assert_eq!(run.stages[1].intended, 4_000);
        for s in &run.stages {
            assert_eq!(s.sent + s.unsent, s.intended, "{s:?}");
            assert_eq!(s.completed, s.sent, "{s:?}");
            assert!(s.errors.is_empty(), "{:?}", s.errors);
            assert_eq!(s.response.moments.n, s.completed);
        }
        assert_eq!(run.totals.intended, 6_000);
        // Per second, 500, 1,500, 2,000, 2,000 (a dispatch late across a second's edge counts
        // in the next second, so this holds only on a machine that did not stall).
        let lag_max = run.latency.dispatch_lag.as_ref().unwrap().moments.max_ns;
        if lag_max < 5_000_000 {
            for (interval, expected) in run.intervals.iter().zip([500.0, 1_500.0, 2_000.0, 2_000.0]) {
                let got = interval.intended as f64;
                assert!(
                    (got - expected).abs() <= expected / 100.0,
                    "second {}: {got} intended, expected {expected} ± 1%",
                    interval.start_s
                );
            }
        }
        // Throughput is what arrived during each stage: the ramp's average, then the hold
        // (again only on a machine that did not stall: beside stress-ng at load 17 the hold
        // sent 2,056 of its 4,000 requests late and 1,248/s arrived during it).
        if lag_max < 5_000_000 {
            assert!(
                (run.stages[0].throughput_per_s - 1_000.0).abs() < 50.0,
                "{:?}",
                run.stages[0]
            );
            assert!(
                (run.stages[1].throughput_per_s - 2_000.0).abs() < 100.0,
                "{:?}",
                run.stages[1]
            );
        }
        // Connections carry on across the stage's edge: none is reopened for the new rate.
        let accepted = origin.stats().connections_accepted;
        assert_eq!(accepted, run.totals.connections_opened);
        // How many a rate needs depends on how fast the machine answers (Little's law: up to
        // 50 quiet, 60 beside stress-ng at load 13); a connection a request would be 6,000.
        // Beside stress-ng at load 15 the origin once stalled long enough for the 1,000 the
        // cap allows: the bound follows the longest response, as Little's law says.
        let slowest_s = run.latency.primary().moments.max_ns as f64 / 1e9;
        let bound = 300f64.max(2_000.0 * slowest_s * 1.5);
        assert!(
            accepted as f64 <= bound,
            "{accepted} connections for 2,000/s of 11-byte responses, the slowest in {slowest_s} s"
        );
        let planned = run.plan.rate_plan.as_ref().expect("the plan is recorded");
        assert_eq!(planned.len(), 2);
        assert_eq!(
            (planned[0].from_rate_per_s, planned[0].to_rate_per_s),
            (0.0, 2_000.0)
        );
        assert_eq!(run.plan.rate_per_s, Some(2_000.0));
    }
}

#[test]
fn a_warm_up_holds_the_first_rate_in_a_stage_of_its_own() {
    let origin = origin();
    let mut p = plan(
        origin.addr(),
        "/",
        staged(
            vec![stage(500.0, 500.0, 1.0), stage(500.0, 1_000.0, 1.0)],
            100,
        ),
        secs(2.0),
    );
    p.warmup = Duration::from_secs(1);
    let run = attack_alone(p);
    let warm: Vec<bool> = run.stages.iter().map(|s| s.warmup).collect();
    assert_eq!(warm, [true, false, false]);
    let intended: Vec<u64> = run.stages.iter().map(|s| s.intended).collect();
    assert_eq!(intended, [500, 500, 750]);
    assert!((run.stages[1].start_s - 1.0).abs() < 1e-9);
    // The run's totals leave the warm-up out (by the second a request was dispatched in:
    // the one due on the warm-up's last instant may fall on either side).
    assert!(run.totals.intended.abs_diff(1_250) <= 2, "{:?}", run.totals);
}

#[test]
fn an_overloaded_stage_keeps_its_slow_requests_and_shows_the_throughput_achieved() {
    // One request at a time, 10 ms each: the server holds 100/s.
    let origin = spawn(OriginConfig {
        threads: Some(1),
        concurrency: Some(1),
        delay: Some(Duration::from_millis(10)),
        ..OriginConfig::loopback()
    })
    .expect("origin starts");
    let load = staged(
        vec![stage(50.0, 50.0, 2.0), stage(200.0, 200.0, 2.0)],
        1_000,
    );
    let run = attack_alone(plan(origin.addr(), "/", load, secs(4.0)));
    let (calm, overloaded) = (&run.stages[0], &run.stages[1]);
    assert!((calm.throughput_per_s - 50.0).abs() < 5.0, "{calm:?}");
    assert!(
        overloaded.throughput_per_s < 130.0,
        "a 100/s server cannot do {} during the 200/s stage",
        overloaded.throughput_per_s
    );
    // Every request due in the overloaded stage is its own, answered after it ended or not.
    assert_eq!(overloaded.intended, 400);
    let slow = |s: &vload_schema::StageRecord| quantile_ns(&s.response, 0.9);
    assert!(
        slow(overloaded) > 10 * slow(calm),
        "{} vs {}",
        ms(slow(overloaded)),
        ms(slow(calm))
    );
}

#[test]
fn an_interrupted_plan_records_the_stages_it_reached() {
    let origin = origin();
    let load = staged(
        vec![
            stage(500.0, 500.0, 1.0),
            stage(500.0, 500.0, 1.0),
            stage(500.0, 500.0, 1.0),
        ],
        100,
    );
    let p = plan(origin.addr(), "/", load, secs(3.0));
    let interrupt = Interrupt::new();
    let trigger = interrupt.clone();
    let _turn = serial();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1_500));
        trigger.trigger();
    });
    let run = vload_engine::run(p, &mut (), &interrupt).expect("attack runs");
    stopper.join().unwrap();
    assert!(run.interrupted);
    assert_eq!(
        run.stages.len(),
        2,
        "the third stage never began: {:?}",
        run.stages
    );
    let cut = &run.stages[1];
    assert!(cut.duration_s < 0.9, "{cut:?}");
    assert!(cut.intended < 450, "{cut:?}");
}

#[test]
fn a_shard_takes_its_share_of_every_stage() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/", ramp_then_hold(), secs(4.0));
    p.shard = Some(Shard { index: 1, count: 2 });
    let run = attack_alone(p);
    let intended: Vec<u64> = run.stages.iter().map(|s| s.intended).collect();
    assert_eq!(intended, [1_000, 2_000]);
    // Stages record the whole attack's rates; the shard record says its share.
    assert_eq!(run.stages[1].from_rate_per_s, 2_000.0);
}

use std::net::SocketAddr;
use std::time::Duration;

use std::cell::Cell;

use vload_engine::{AttackPlan, Driver, Interrupt, Load, RequestTemplate, Stop, run};
use vload_schema::RunFile;

pub(crate) use vload_origin::{OriginConfig, OriginHandle, Stall, spawn};

pub(crate) fn origin() -> OriginHandle {
    spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .expect("origin starts")
}

pub(crate) fn plan(addr: SocketAddr, target: &str, load: Load, stop: Stop) -> AttackPlan {
    let url: http::Uri = format!("http://{addr}{target}").parse().unwrap();
    let mut plan = AttackPlan::new(RequestTemplate::get(url), addr, load, stop);
    plan.timeout = Duration::from_secs(5);
    plan.connect_timeout = Duration::from_secs(2);
    plan.label = Some("test".into());
    plan
}

pub(crate) fn closed(connections: u32) -> Load {
    Load::Closed { connections }
}

pub(crate) fn open(rate_per_s: f64, max_connections: u32) -> Load {
    Load::Open {
        rate: vload_engine::RatePlan::constant(rate_per_s),
        arrival: vload_engine::Arrival::Constant,
        max_connections,
    }
}

pub(crate) fn secs(s: f64) -> Stop {
    Stop {
        duration: Some(Duration::from_secs_f64(s)),
        requests: None,
    }
}

pub(crate) fn count(n: u64) -> Stop {
    Stop {
        duration: None,
        requests: Some(n),
    }
}

thread_local! {
    /// The driver this test's attacks run on ([`on_driver`]).
    static DRIVER: Cell<Driver> = const { Cell::new(Driver::Auto) };
}

/// Runs `test` with its attacks on `driver`.
pub(crate) fn on_driver(driver: Driver, test: impl FnOnce()) {
    DRIVER.set(driver);
    test();
    DRIVER.set(Driver::Auto);
}

/// Load tests take turns: on a two-core machine, parallel attacks would measure each other.
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the plan and checks that the run file survives a round trip.
pub(crate) fn attack(plan: AttackPlan) -> RunFile {
    let _turn = serial();
    attack_in_turn(plan)
}

/// [`attack`] for a caller that already holds the [`serial`] turn (so that what it times
/// around the attack starts with it, not while another test's attack runs).
pub(crate) fn attack_in_turn(mut plan: AttackPlan) -> RunFile {
    if plan.driver == Driver::Auto {
        plan.driver = DRIVER.get();
    }
    let run = run(plan, &mut (), &Interrupt::new()).expect("attack runs");
    let text = run.to_json();
    let back = RunFile::from_json(&text).expect("run file parses");
    assert!(
        back.to_json() == text,
        "the run file must survive a round trip unchanged"
    );
    run
}

pub(crate) fn quantile_ns(record: &vload_schema::LatencyRecord, q: f64) -> u64 {
    record.histogram.decode().unwrap().value_at_quantile(q)
}

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

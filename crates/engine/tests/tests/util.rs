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

/// The driver this thread's attacks run on: a test that attacks from threads of its own
/// sets it on their plans.
pub(crate) fn driver() -> Driver {
    DRIVER.get()
}

/// Runs `test` with its attacks on `driver`.
pub(crate) fn on_driver(driver: Driver, test: impl FnOnce()) {
    DRIVER.set(driver);
    test();
    DRIVER.set(Driver::Auto);
}

static TURNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A turn alone: a test that times something (a latency, a rate kept, the health word) holds
/// it while it runs, so that no other attack of the suite shares the two cores with it.
pub(crate) fn serial() -> std::sync::RwLockWriteGuard<'static, ()> {
    TURNS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A shared turn: attacks whose checks hold whatever else runs (counts, the ledger, framing,
/// errors) run side by side, and never beside a test in [`serial`]'s turn.
fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TURNS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the plan beside other tests' attacks and checks that the run file survives a round
/// trip.
pub(crate) fn attack(plan: AttackPlan) -> RunFile {
    let _turn = shared();
    attack_in_turn(plan)
}

/// [`attack`] alone: for a test whose checks time something.
pub(crate) fn attack_alone(plan: AttackPlan) -> RunFile {
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

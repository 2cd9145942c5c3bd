//! An origin plan, state by state against a live origin: 503s, a refused connect and a reset
//! keep-alive connection, a held request, a slow answer, and back up, each phase's requests
//! counted. Each state is entered at once (`OriginHandle::follow`) and awaited, so no check
//! rests on how soon this thread runs; the timed plan of `POST /plan` is checked for what a
//! busy machine cannot change: a phase never begins early.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use vload_origin::{OriginConfig, OriginHandle, OriginState, PlanStep, spawn};

/// One request on `stream`; the status, or None when the connection ended without one.
fn ask(stream: &mut TcpStream, method: &str, target: &str) -> Option<u16> {
    let request = format!("{method} {target} HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).ok()?;
    head.split(' ').nth(1)?.parse().ok()
}

fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    TcpStream::connect_timeout(&addr, Duration::from_secs(5))
}

/// Waits (at most 30 s) until `until` holds of the origin's phases.
fn wait(origin: &OriginHandle, until: impl Fn(&[vload_origin::PlanPhase]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !until(&origin.stats().plan) {
        assert!(Instant::now() < deadline, "{:?}", origin.stats().plan);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What `f` gives once it gives something, tried every 5 ms for at most 30 s.
fn eventually<T>(f: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "not within 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Puts the origin in `state` at once, and waits until it is.
fn enter(origin: &OriginHandle, state: &str) {
    let state: OriginState = state.parse().unwrap();
    origin.follow(vec![PlanStep {
        at: Duration::ZERO,
        state,
    }]);
    let name = state.to_string();
    wait(origin, |p| p.last().is_some_and(|last| last.state == name));
}

/// The requests the origin counted in the phase under way.
fn counted(origin: &OriginHandle) -> u64 {
    origin.stats().plan.last().map_or(0, |p| p.requests)
}

#[test]
fn an_origin_follows_its_plan_state_by_state() {
    let origin = spawn(OriginConfig {
        threads: Some(2),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let addr = origin.addr();
    let mut kept = connect(addr).unwrap();
    assert_eq!(ask(&mut kept, "GET", "/"), Some(200));

    enter(&origin, "503");
    assert_eq!(ask(&mut kept, "GET", "/"), Some(503), "503 phase");
    assert_eq!(counted(&origin), 1);

    enter(&origin, "refuse");
    assert_eq!(
        ask(&mut kept, "GET", "/"),
        None,
        "an open connection is reset"
    );
    assert_eq!(counted(&origin), 1);
    // The serve loops close their listening sockets when they next run: a connect made
    // before that is accepted (and its request reset), then every connect is refused.
    let refused = eventually(|| connect(addr).err());
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );

    enter(&origin, "hang");
    let mut held = eventually(|| connect(addr).ok());
    let asked = std::thread::spawn(move || {
        let status = ask(&mut held, "GET", "/");
        (status, Instant::now(), held)
    });
    // The request arrived (it is counted on arrival) and is held: no answer while it hangs.
    wait(&origin, |p| p.last().is_some_and(|last| last.requests == 1));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!asked.is_finished(), "a held request has no answer");
    let released = Instant::now();
    enter(&origin, "slow:100ms");
    let (status, answered, mut held) = asked.join().unwrap();
    assert_eq!(status, Some(200), "held, then answered");
    assert!(
        answered.duration_since(released) >= Duration::from_millis(100),
        "answered the slow phase's 100 ms after the hang ended"
    );

    enter(&origin, "up");
    assert_eq!(ask(&mut held, "GET", "/"), Some(200), "up again");
    assert_eq!(counted(&origin), 1);
}

/// A timed plan: each phase in order, none begun before it was due.
#[test]
fn a_timed_plan_never_begins_a_phase_early() {
    let origin = spawn(OriginConfig::loopback()).unwrap();
    let mut control = connect(origin.addr()).unwrap();
    let steps = "200ms:503,400ms:slow:10ms,600ms:up";
    assert_eq!(
        ask(&mut control, "POST", &format!("/plan?steps={steps}")),
        Some(200)
    );
    wait(&origin, |p| p.len() == 4);
    let phases = origin.stats().plan;
    let states: Vec<&str> = phases.iter().map(|p| p.state.as_str()).collect();
    assert_eq!(states, ["up", "503", "slow:10ms", "up"], "{phases:?}");
    for (phase, due_us) in phases.iter().zip([0, 200_000, 400_000, 600_000]) {
        assert!(
            phase.at_us >= due_us,
            "a phase never begins early: {phase:?}"
        );
    }
}

#[test]
fn a_bad_plan_is_refused_with_its_reason() {
    let origin = spawn(OriginConfig::loopback()).unwrap();
    let mut control = connect(origin.addr()).unwrap();
    assert_eq!(ask(&mut control, "POST", "/plan?steps=10s:down"), Some(400));
    assert_eq!(ask(&mut control, "GET", "/"), Some(200), "still up");
    assert!(origin.stats().plan.is_empty());
}

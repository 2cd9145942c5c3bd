//! An origin plan (`POST /plan`), state by state against a live origin: 503s, a refused
//! connect and a reset keep-alive connection, a held request, a slow answer, and back up,
//! each phase's requests counted.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use vload_origin::{OriginConfig, spawn};

/// One request on `stream`; the status, or None when the connection ended without one.
fn ask(stream: &mut TcpStream, method: &str, target: &str) -> Option<u16> {
    let request = format!("{method} {target} HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
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
    TcpStream::connect_timeout(&addr, Duration::from_secs(2))
}

fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
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
    let mut control = connect(addr).unwrap();
    let steps = "500ms:503,1s:refuse,1500ms:hang,2s:slow:100ms,2500ms:up";
    let start = Instant::now();
    assert_eq!(
        ask(&mut control, "POST", &format!("/plan?steps={steps}")),
        Some(200)
    );
    drop(control);

    sleep_until(start + Duration::from_millis(750));
    assert_eq!(ask(&mut kept, "GET", "/"), Some(503), "503 phase");

    sleep_until(start + Duration::from_millis(1250));
    let refused = connect(addr).map(|_| ()).unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
    assert_eq!(
        ask(&mut kept, "GET", "/"),
        None,
        "an open connection is reset"
    );

    sleep_until(start + Duration::from_millis(1750));
    let mut held = connect(addr).expect("listening again after refuse");
    let asked = Instant::now();
    assert_eq!(ask(&mut held, "GET", "/"), Some(200), "held, then answered");
    let answered = start.elapsed();
    assert!(
        answered >= Duration::from_millis(2_100),
        "held until the hang ended (2 s) and answered 100 ms later: {answered:?} ({:?} after asking)",
        asked.elapsed()
    );

    sleep_until(start + Duration::from_millis(2_750));
    assert_eq!(ask(&mut held, "GET", "/"), Some(200), "up again");

    let phases = origin.stats().plan;
    let states: Vec<&str> = phases.iter().map(|p| p.state.as_str()).collect();
    assert_eq!(
        states,
        ["up", "503", "refuse", "hang", "slow:100ms", "up"],
        "{phases:?}"
    );
    let requests: Vec<u64> = phases.iter().map(|p| p.requests).collect();
    assert_eq!(requests, [0, 1, 1, 1, 0, 1], "{phases:?}");
    for (phase, asked_us) in phases
        .iter()
        .zip([0, 500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000])
    {
        assert!(
            phase.at_us >= asked_us,
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

//! HTTP/3 over QUIC against the origin's own HTTP/3 (#46): counts equal the server's, the
//! ledger's law holds, QUIC's failures land under their kinds.

use std::time::Duration;

use vload_engine::{Protocol, TlsOptions, Verify};
use vload_schema::{ErrorKind, RunFile};

use super::util::*;

/// An origin serving HTTP/3 (and https over TCP) with a certificate for localhost, and the
/// PEM file of that certificate.
pub(crate) fn h3_origin(
    config: impl FnOnce(&mut OriginConfig),
) -> (OriginHandle, std::path::PathBuf) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    h3_origin_with(&cert, config)
}

/// An origin serving HTTP/3 with `cert` (several origins, one certificate).
pub(crate) fn h3_origin_with(
    cert: &rcgen::CertifiedKey,
    config: impl FnOnce(&mut OriginConfig),
) -> (OriginHandle, std::path::PathBuf) {
    let mut c = OriginConfig {
        threads: Some(1),
        tls: Some(vload_origin::TlsIdentity {
            cert_pem: cert.cert.pem().into_bytes(),
            key_pem: cert.key_pair.serialize_pem().into_bytes(),
        }),
        http3: true,
        ..OriginConfig::loopback()
    };
    config(&mut c);
    let origin = spawn(c).unwrap();
    let path = std::env::temp_dir().join(format!(
        "vload-h3-ca-{}-{}.pem",
        std::process::id(),
        origin.addr().port()
    ));
    std::fs::write(&path, cert.cert.pem()).unwrap();
    (origin, path)
}

/// An HTTP/3 attack on `addr` (localhost's name, verified against `ca`).
pub(crate) fn h3_plan(
    addr: std::net::SocketAddr,
    target: &str,
    ca: &std::path::Path,
    load: vload_engine::Load,
    stop: vload_engine::Stop,
    streams: u32,
) -> vload_engine::AttackPlan {
    let mut p = plan(addr, target, load, stop);
    p.request.url = format!("https://localhost:{}{target}", addr.port())
        .parse()
        .unwrap();
    p.request.headers.insert(
        http::header::HOST,
        format!("localhost:{}", addr.port()).parse().unwrap(),
    );
    p.tls = Some(TlsOptions {
        server_name: "localhost".into(),
        verify: Verify::CaFile(ca.to_owned()),
    });
    p.protocol = Protocol::Http3 {
        streams,
        early_data: false,
    };
    p
}

/// Every request due ends in exactly one place, as the run file's own check says.
pub(crate) fn balanced(run: &RunFile) {
    run.validate().expect("the ledger balances");
    let t = &run.totals;
    let errors: u64 = t.errors.values().map(|e| e.count).sum();
    let answered: u64 = t.status_codes.values().sum();
    assert_eq!(answered + errors, t.completed, "{t:?}");
    assert_eq!(t.completed + t.unfinished + t.unsent, t.intended, "{t:?}");
}

#[test]
fn streams_share_each_connection_and_counts_equal_the_servers() {
    let (origin, ca) = h3_origin(|_| {});
    let p = h3_plan(
        origin.addr(),
        "/h3?size=1000",
        &ca,
        closed(2),
        count(600),
        4,
    );
    let run = attack(p);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    balanced(&run);
    assert_eq!(run.totals.completed, 600);
    assert_eq!(run.totals.bytes_in, 600_000);
    // #58: the bytes read off the request streams, each response's HEADERS frame and DATA
    // framing beside its 1,000 bytes of body (a few dozen bytes a response, QPACK-coded).
    let wire = run
        .totals
        .wire_bytes_in
        .expect("HTTP/3 counts what it reads");
    assert!(
        wire > 600_000 + 600 * 4 && wire < 600_000 + 600 * 200,
        "{wire}"
    );
    let per_second: u64 = run.intervals.iter().map(|i| i.bytes_in).sum();
    assert_eq!(per_second, 600_000);
    assert_eq!(
        run.totals.connections_opened, 2,
        "two connections, 8 streams"
    );
    let stats = origin.stats();
    assert_eq!(stats.connections_accepted, 2);
    assert_eq!(stats.requests_by_path["/h3?size=1000"], 600);
    assert_eq!(
        stats.requests_by_host[&format!("localhost:{}", origin.addr().port())],
        600,
        ":authority carries the host"
    );
    assert_eq!(
        (run.plan.http_version.as_str(), run.plan.streams),
        ("3", Some(4))
    );
    // One QUIC handshake a connection, in the connect record; no second TLS step.
    let connect = run.latency.tcp_connect.as_ref().expect("handshakes timed");
    assert_eq!(connect.moments.n, 2);
    assert!(connect.moments.min_ns > 10_000, "{:?}", connect.moments);
    assert!(run.latency.tls_handshake.is_none());
    assert_eq!(stats.tls_connections_by_server_name["localhost"], 2);
}

#[test]
fn an_open_loop_sends_on_schedule_and_a_body_goes_out() {
    let (origin, ca) = h3_origin(|_| {});
    let mut p = h3_plan(origin.addr(), "/post", &ca, open(400.0, 8), secs(2.0), 2);
    p.request.method = http::Method::POST;
    p.request.body = bytes::Bytes::from_static(b"0123456789");
    let run = attack(p);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    balanced(&run);
    let t = &run.totals;
    assert_eq!(t.intended, 800);
    // On a loaded machine a few due at the window's end may stay unsent or unfinished (each
    // in its bucket, as `balanced` checked); every one answered was served, body and all.
    assert!(t.completed >= 760, "{t:?}");
    let served = origin.stats().requests_by_path["/post"];
    assert!(
        (t.completed..=t.completed + t.unfinished).contains(&served),
        "{served}: {t:?}"
    );
    assert!((10 * t.completed..=8_000).contains(&t.bytes_out), "{t:?}");
}

/// Streams the server resets are errors of their own, the connection goes on; a server that
/// never answers QUIC's Initial is a connect timeout; a certificate that does not verify is
/// TLS's failure. Each request in one place.
#[test]
fn quic_failures_land_under_their_kinds() {
    let (origin, ca) = h3_origin(|_| {});
    let run = attack(h3_plan(
        origin.addr(),
        "/x?reset=before",
        &ca,
        closed(1),
        count(20),
        2,
    ));
    balanced(&run);
    assert_eq!(run.totals.errors[&ErrorKind::StreamReset].count, 20);
    assert_eq!(run.totals.connections_opened, 1, "a reset stream keeps it");

    // A UDP port nobody reads: the Initial is never answered.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut p = h3_plan(
        silent.local_addr().unwrap(),
        "/",
        &ca,
        closed(1),
        count(3),
        1,
    );
    p.connect_timeout = Duration::from_millis(300);
    let began = std::time::Instant::now();
    let run = attack(p);
    balanced(&run);
    assert!(began.elapsed() < Duration::from_secs(20), "bounded");
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(
        kinds,
        [ErrorKind::ConnectTimeout],
        "{:?}",
        run.totals.errors
    );
    assert!(
        run.totals.errors[&ErrorKind::ConnectTimeout]
            .sample
            .contains("QUIC"),
        "{:?}",
        run.totals.errors
    );

    // A UDP port nobody listens on: the kernel answers each Initial with ICMP's "port
    // unreachable", which ends the handshake at once as a refused connect (as TCP's RST),
    // long before its timeout.
    let nobody = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = nobody.local_addr().unwrap();
    drop(nobody);
    let mut p = h3_plan(port, "/", &ca, closed(1), count(3), 1);
    p.connect_timeout = Duration::from_secs(30);
    let began = std::time::Instant::now();
    let run = attack(p);
    balanced(&run);
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(
        kinds,
        [ErrorKind::ConnectRefused],
        "{:?}",
        run.totals.errors
    );
    assert_eq!(run.totals.errors[&ErrorKind::ConnectRefused].count, 3);
    assert!(
        run.totals.errors[&ErrorKind::ConnectRefused]
            .sample
            .contains("ICMP"),
        "{:?}",
        run.totals.errors
    );
    assert!(began.elapsed() < Duration::from_secs(20), "not its timeout");

    // The system's roots do not know the origin's certificate.
    let mut p = h3_plan(origin.addr(), "/", &ca, closed(1), count(3), 1);
    p.tls = Some(TlsOptions {
        server_name: "localhost".into(),
        verify: Verify::SystemRoots,
    });
    let run = attack(p);
    balanced(&run);
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(kinds, [ErrorKind::Tls], "{:?}", run.totals.errors);
}

/// Handshake kinds add up to the connections opened. With `--0rtt`, connections after the
/// first resume with early data the origin takes (its count equal to the requests sent);
/// against an origin whose tickets allow no early data, they resume without it, cleanly.
#[test]
fn zero_rtt_is_taken_where_allowed_and_falls_back_where_not() {
    for refuse in [false, true] {
        let (origin, ca) = h3_origin(|c| c.refuse_early_data = refuse);
        let mut p = h3_plan(origin.addr(), "/e", &ca, closed(1), count(40), 1);
        p.protocol = Protocol::Http3 {
            streams: 1,
            early_data: true,
        };
        // A new connection every 4 requests: 10 handshakes, the first one full.
        p.requests_per_connection = Some(4);
        let run = attack(p);
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        balanced(&run);
        assert_eq!(run.totals.completed, 40);
        assert_eq!(origin.stats().requests_by_path["/e"], 40);
        let h = run.totals.handshakes.expect("HTTP/3 counts its handshakes");
        assert_eq!(h.total(), run.totals.connections_opened, "{h:?}");
        assert_eq!(origin.stats().connections_accepted, h.total(), "{h:?}");
        assert_eq!(h.full, 1, "only the first has no ticket: {h:?}");
        if refuse {
            assert_eq!((h.early_accepted, h.early_requests), (0, 0), "{h:?}");
            assert_eq!(h.resumed, h.total() - 1, "{h:?}");
        } else {
            assert_eq!(h.early_accepted, h.total() - 1, "{h:?}");
            assert_eq!(h.early_rejected, 0, "{h:?}");
            assert!(h.early_requests >= h.early_accepted, "{h:?}");
        }
    }
}

/// #58: the early-data 425 column counts the 425s of requests sent as early data only: an
/// origin that answers every request 425 gave a column of every 425 in the run.
#[test]
fn only_early_requests_count_as_too_early() {
    let (origin, ca) = h3_origin(|_| {});
    let mut p = h3_plan(origin.addr(), "/t?status=425", &ca, closed(1), count(40), 1);
    p.protocol = Protocol::Http3 {
        streams: 1,
        early_data: true,
    };
    p.requests_per_connection = Some(4);
    let run = attack(p);
    balanced(&run);
    assert_eq!(run.totals.status_codes.get(&425), Some(&40));
    let h = run.totals.handshakes.expect("HTTP/3 counts its handshakes");
    assert!(h.early_requests > 0 && h.early_requests < 40, "{h:?}");
    assert_eq!(h.early_too_early, h.early_requests, "{h:?}");
}

/// An unsafe method never goes out as early data: with `--0rtt`, POSTs wait for the
/// handshake, though the connections still resume with early data (h3's own SETTINGS).
#[test]
fn an_unsafe_method_waits_for_the_handshake() {
    let (origin, ca) = h3_origin(|_| {});
    let mut p = h3_plan(origin.addr(), "/p", &ca, closed(1), count(12), 1);
    p.protocol = Protocol::Http3 {
        streams: 1,
        early_data: true,
    };
    p.request.method = http::Method::POST;
    p.request.body = bytes::Bytes::from_static(b"x");
    p.requests_per_connection = Some(3);
    let run = attack(p);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(origin.stats().requests_by_path["/p"], 12);
    let h = run.totals.handshakes.expect("counted");
    assert_eq!(h.total(), 4, "{h:?}");
    assert_eq!(h.early_requests, 0, "no POST early: {h:?}");
}

/// Without `--0rtt`, a second connection resumes from the first's ticket: no certificate
/// checked, counted as resumed.
#[test]
fn a_reconnection_resumes_its_session() {
    let (origin, ca) = h3_origin(|_| {});
    let mut p = h3_plan(origin.addr(), "/r", &ca, closed(1), count(6), 1);
    p.requests_per_connection = Some(2);
    let run = attack(p);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    let h = run.totals.handshakes.expect("counted");
    assert_eq!((h.full, h.resumed, h.total()), (1, 2, 3), "{h:?}");
}

/// A path that drops every `n`th datagram each way, between vload and `server`: a relay on
/// loopback (the test's own thread, ended when `stop` is set). Its address.
fn lossy_relay(
    server: std::net::SocketAddr,
    n: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::net::SocketAddr {
    use std::sync::atomic::Ordering::Relaxed;
    let front = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let back = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    back.connect(server).unwrap();
    for s in [&front, &back] {
        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    }
    let addr = front.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut client, mut seen, mut buf) = (None, 0u64, vec![0u8; 65_536]);
        while !stop.load(Relaxed) {
            if let Ok((len, from)) = front.recv_from(&mut buf) {
                client = Some(from);
                seen += 1;
                if seen % n != 0 {
                    let _ = back.send(&buf[..len]);
                }
            }
            if let (Ok(len), Some(to)) = (back.recv(&mut buf), client) {
                seen += 1;
                if seen % n != 0 {
                    let _ = front.send_to(&buf[..len], to);
                }
            }
        }
    });
    addr
}

/// Every 20th datagram lost, each way: QUIC recovers, every request ends once, answered.
#[test]
fn a_path_that_drops_every_20th_datagram_loses_no_request() {
    let (origin, ca) = h3_origin(|_| {});
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let relay = lossy_relay(origin.addr(), 20, stop.clone());
    let mut p = h3_plan(relay, "/l?size=20000", &ca, closed(2), count(200), 2);
    p.request.headers.insert(
        http::header::HOST,
        format!("localhost:{}", origin.addr().port())
            .parse()
            .unwrap(),
    );
    let run = attack(p);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    balanced(&run);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.completed, 200);
    assert_eq!(run.totals.bytes_in, 200 * 20_000);
    assert_eq!(origin.stats().requests_by_path["/l?size=20000"], 200);
}

//! QUIC's fault matrix beyond loss (#46): a server that closes with an error, one that asks
//! for a Retry first, one that no longer knows the connection (a stateless reset), and one
//! that refuses the early data an earlier server's ticket allowed. Every request ends in
//! one place.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use vload_engine::Protocol;
use vload_schema::ErrorKind;

use super::http3::{balanced, h3_origin, h3_origin_with, h3_plan};
use super::util::*;

/// When the relay turns from the first server to the second.
#[derive(Clone, Copy)]
enum Switch {
    /// At the first datagram of the client's `n`th connection (0-based): the connections
    /// before it stay whole on the first server.
    AtConnection(usize),
    /// After `n` of the client's 1-RTT datagrams (short header: the handshake is done), a
    /// live connection's next packets reach a server that never made it. Counting every
    /// datagram, a loaded machine's handshake retransmissions once moved the switch into the
    /// handshake: the connection failed before any request went out, the next was made with
    /// the second server, and no request was in flight to see a reset.
    AfterDatagrams(u64),
}

/// Whether `d` is a QUIC long-header packet of type Initial (RFC 9000, 17.2.2), and its
/// destination and source connection IDs.
fn initial_ids(d: &[u8]) -> Option<(&[u8], &[u8])> {
    let long = d.len() > 7 && d[0] & 0x80 != 0 && d[1..5] != [0; 4];
    if !long {
        return None;
    }
    let dcid_len = usize::from(d[5]);
    let dcid = d.get(6..6 + dcid_len)?;
    let scid_len = usize::from(*d.get(6 + dcid_len)?);
    let scid = d.get(7 + dcid_len..7 + dcid_len + scid_len)?;
    (d[0] & 0x30 == 0).then_some((dcid, scid))
}

/// A relay on loopback between vload and two servers: the client's datagrams go to `first`
/// until `switch`, then to `second`; both servers' datagrams come back. A connection's
/// first Initial is told by a destination ID no server has used as its own (RFC 9000, 7.2).
/// Ends when `stop` is set. Its address.
fn switching_relay(
    first: SocketAddr,
    second: SocketAddr,
    switch: Switch,
    stop: Arc<AtomicBool>,
) -> SocketAddr {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let backs = [first, second].map(|server| {
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(server).unwrap();
        back.set_nonblocking(true).unwrap();
        back
    });
    front
        .set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let addr = front.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        let (mut client, mut sent, mut connections, mut to) = (None, 0u64, 0usize, 0usize);
        let mut server_ids: Vec<Vec<u8>> = Vec::new();
        while !stop.load(Relaxed) {
            if let Ok((len, from)) = front.recv_from(&mut buf) {
                client = Some(from);
                let d = &buf[..len];
                sent += u64::from(d.first().is_some_and(|b| b & 0x80 == 0));
                let new =
                    initial_ids(d).is_some_and(|(dcid, _)| !server_ids.iter().any(|s| s == dcid));
                match switch {
                    Switch::AtConnection(n) if new => {
                        to = usize::from(connections >= n);
                        connections += 1;
                    }
                    Switch::AfterDatagrams(n) if sent > n => to = 1,
                    _ => {}
                }
                let _ = backs[to].send(d);
            }
            for back in &backs {
                while let Ok(len) = back.recv(&mut buf) {
                    if let Some((_, scid)) = initial_ids(&buf[..len])
                        && !server_ids.iter().any(|s| s == scid)
                    {
                        server_ids.push(scid.to_vec());
                    }
                    if let Some(to) = client {
                        let _ = front.send_to(&buf[..len], to);
                    }
                }
            }
        }
    });
    addr
}

/// A plan through `relay` whose requests name `port` (the servers' own) as their host.
fn via(
    relay: SocketAddr,
    port: u16,
    target: &str,
    ca: &std::path::Path,
) -> vload_engine::AttackPlan {
    let mut p = h3_plan(relay, target, ca, closed(1), count(12), 1);
    p.request.headers.insert(
        http::header::HOST,
        format!("localhost:{port}").parse().unwrap(),
    );
    p
}

/// A server that closes the connection with HTTP/3's internal error instead of answering:
/// each request is a `reset` (the connection closed on it), none a graceful `goaway`, and
/// vload reconnects for the next.
#[test]
fn a_close_with_an_error_is_a_reset_of_its_requests() {
    let (origin, ca) = h3_origin(|_| {});
    let run = attack(h3_plan(
        origin.addr(),
        "/c?close=error",
        &ca,
        closed(1),
        count(10),
        2,
    ));
    balanced(&run);
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(kinds, [ErrorKind::Reset], "{:?}", run.totals.errors);
    assert_eq!(run.totals.errors[&ErrorKind::Reset].count, 10);
    let sample = &run.totals.errors[&ErrorKind::Reset].sample;
    assert!(
        sample.contains("0x102") || sample.contains("258"),
        "{sample}"
    );
    assert!(
        run.totals.connections_opened >= 5,
        "a connection closed is made again"
    );
    // The same origin, asked nothing odd, answers on the connections that follow.
    let run = attack(h3_plan(origin.addr(), "/c", &ca, closed(1), count(10), 2));
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
}

/// A server that validates addresses first: every handshake takes a Retry round trip,
/// counted apart (within the kinds, which still add up to the connections), every request
/// answered; with 0-RTT too.
#[test]
fn a_retry_round_trip_is_counted_for_each_handshake() {
    let (origin, ca) = h3_origin(|c| c.quic_retry = true);
    for early_data in [false, true] {
        let mut p = h3_plan(origin.addr(), "/rt", &ca, closed(1), count(20), 1);
        p.requests_per_connection = Some(4);
        p.protocol = Protocol::Http3 {
            streams: 1,
            early_data,
        };
        let run = attack(p);
        balanced(&run);
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        assert_eq!(run.totals.completed, 20);
        let h = run.totals.handshakes.expect("counted");
        assert_eq!(h.total(), 5, "{h:?}");
        assert_eq!(h.retried, 5, "one Retry a handshake: {h:?}");
    }
    assert_eq!(origin.stats().requests_by_path["/rt"], 40);
    // A server that asks for none: none counted.
    let (plain, ca) = h3_origin(|_| {});
    let run = attack(h3_plan(plain.addr(), "/", &ca, closed(1), count(4), 1));
    assert_eq!(run.totals.handshakes.expect("counted").retried, 0);
}

/// A server restarted behind the same address (two origins, one reset key): the live
/// connection's next packet reaches a server that never made it, which answers with a
/// stateless reset; the request in flight is a `stateless_reset`, the next connection is
/// made with the new server, and every request is in one place.
#[test]
fn a_stateless_reset_ends_the_requests_in_flight_and_the_next_connection_goes_on() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = Some([7u8; 32]);
    let (a, ca) = h3_origin_with(&cert, |c| c.quic_reset_key = key);
    let (b, _) = h3_origin_with(&cert, |c| c.quic_reset_key = key);
    let stop = Arc::new(AtomicBool::new(false));
    let relay = switching_relay(a.addr(), b.addr(), Switch::AfterDatagrams(20), stop.clone());
    let mut p = via(relay, a.addr().port(), "/sr", &ca);
    p.stop = count(200);
    // Four streams: requests are always in flight when the reset comes.
    p.protocol = Protocol::Http3 {
        streams: 4,
        early_data: false,
    };
    let run = attack(p);
    stop.store(true, Relaxed);
    balanced(&run);
    let errors = &run.totals.errors;
    let kinds: Vec<_> = errors.keys().copied().collect();
    assert_eq!(kinds, [ErrorKind::StatelessReset], "{errors:?}");
    let reset = errors[&ErrorKind::StatelessReset].count;
    assert!((1..=4).contains(&reset), "those in flight: {errors:?}");
    let served = |o: &vload_origin::OriginHandle| o.stats().requests_by_path.get("/sr").copied();
    let (by_a, by_b) = (served(&a).unwrap_or(0), served(&b).unwrap_or(0));
    assert!(by_a > 0 && by_b > 0, "{by_a} + {by_b}");
    // A request reset may have been served by the first server before its answer was lost.
    let answered: u64 = run.totals.status_codes.values().sum();
    assert_eq!(answered + reset, 200);
    assert!(
        (answered..=answered + reset).contains(&(by_a + by_b)),
        "{by_a} + {by_b}"
    );
    assert_eq!(run.totals.connections_opened, 2);
}

/// 0-RTT on a ticket of a server that is no longer there: the new server cannot resume, so
/// it refuses the early data and makes a full handshake; the early request is sent again
/// over it and answered once. Counted as one refused handshake, the one certificate it
/// checked claimed by it (the connections after it resume from the new server's tickets).
#[test]
fn early_data_a_new_server_refuses_is_sent_again_and_answered_once() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (a, ca) = h3_origin_with(&cert, |_| {});
    let (b, _) = h3_origin_with(&cert, |_| {});
    let stop = Arc::new(AtomicBool::new(false));
    let relay = switching_relay(a.addr(), b.addr(), Switch::AtConnection(2), stop.clone());
    let mut p = via(relay, a.addr().port(), "/er", &ca);
    p.protocol = Protocol::Http3 {
        streams: 1,
        early_data: true,
    };
    // Six connections of two requests: two with the first server, four with the second.
    p.requests_per_connection = Some(2);
    let run = attack(p);
    stop.store(true, Relaxed);
    balanced(&run);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.completed, 12);
    let h = run.totals.handshakes.expect("counted");
    assert_eq!(h.total(), 6, "{h:?}");
    assert_eq!(
        (h.full, h.early_accepted, h.early_rejected, h.resumed),
        (1, 4, 1, 0),
        "{h:?}"
    );
    assert_eq!(
        h.early_retried, 1,
        "the refused early request, sent again: {h:?}"
    );
    let served = |o: &vload_origin::OriginHandle| o.stats().requests_by_path["/er"];
    assert_eq!((served(&a), served(&b)), (4, 8), "each request served once");
}

/// A server that speaks no QUIC version vload does: it answers each Initial with a Version
/// Negotiation packet (RFC 9000, 17.2.1) offering only a version nobody speaks. Each request
/// is a `quic_version`, at once, not a handshake timeout.
#[test]
fn a_server_of_another_quic_version_is_a_version_error() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let addr = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        while !done.load(Relaxed) {
            let Ok((len, from)) = server.recv_from(&mut buf) else {
                continue;
            };
            let Some((dcid, scid)) = initial_ids(&buf[..len]) else {
                continue;
            };
            // Its destination ID is the client's source ID, and the other way round.
            let mut answer = vec![0xc0, 0, 0, 0, 0, scid.len() as u8];
            answer.extend_from_slice(scid);
            answer.push(dcid.len() as u8);
            answer.extend_from_slice(dcid);
            answer.extend_from_slice(&[0x0a, 0x1a, 0x2a, 0x3a]);
            let _ = server.send_to(&answer, from);
        }
    });
    let ca = std::env::temp_dir().join(format!("vload-h3-vn-{}.pem", std::process::id()));
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let mut p = h3_plan(addr, "/", &ca, closed(1), count(3), 1);
    p.connect_timeout = Duration::from_secs(5);
    let began = std::time::Instant::now();
    let run = attack(p);
    stop.store(true, Relaxed);
    balanced(&run);
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(kinds, [ErrorKind::QuicVersion], "{:?}", run.totals.errors);
    assert_eq!(run.totals.errors[&ErrorKind::QuicVersion].count, 3);
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "no wait for a timeout"
    );
}

/// #58: a QUIC server that refuses new connections (CONNECTION_REFUSED, as a closing one
/// does) was filed as `reset`: its requests are `connect_refused`, named so.
#[test]
fn a_server_refusing_connections_is_a_refused_connect() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca = std::env::temp_dir().join(format!("vload-h3-refuse-{}.pem", std::process::id()));
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
            tx.send(endpoint.local_addr().unwrap()).unwrap();
            while !done.load(Relaxed) {
                let next = tokio::time::timeout(Duration::from_millis(50), endpoint.accept());
                if let Ok(Some(incoming)) = next.await {
                    incoming.refuse();
                }
            }
        });
    });
    let addr = rx.recv().unwrap();
    let p = h3_plan(addr, "/", &ca, closed(1), count(3), 1);
    let run = attack(p);
    stop.store(true, Relaxed);
    balanced(&run);
    let kinds: Vec<_> = run.totals.errors.keys().copied().collect();
    assert_eq!(
        kinds,
        [ErrorKind::ConnectRefused],
        "{:?}",
        run.totals.errors
    );
    let sample = &run.totals.errors[&ErrorKind::ConnectRefused].sample;
    assert!(sample.contains("refused the QUIC connection"), "{sample}");
}

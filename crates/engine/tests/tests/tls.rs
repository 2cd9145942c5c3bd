use vload_engine::{TlsOptions, Verify};
use vload_schema::ErrorKind;

use super::util::*;

/// An https origin with a certificate for "localhost" made here, and its PEM file.
fn tls_origin() -> (OriginHandle, std::path::PathBuf) {
    tls_origin_for(&["localhost"])
}

/// An https origin with one certificate for all of `names`, and its PEM file.
fn tls_origin_for(names: &[&str]) -> (OriginHandle, std::path::PathBuf) {
    let names = names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let cert = rcgen::generate_simple_self_signed(names).unwrap();
    let identity = vload_origin::TlsIdentity {
        cert_pem: cert.cert.pem().into_bytes(),
        key_pem: cert.key_pair.serialize_pem().into_bytes(),
    };
    let origin = spawn(OriginConfig {
        threads: Some(1),
        tls: Some(identity),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let path = std::env::temp_dir().join(format!(
        "vload-ca-{}-{}.pem",
        std::process::id(),
        origin.addr().port()
    ));
    std::fs::write(&path, cert.cert.pem()).unwrap();
    (origin, path)
}

fn https_plan(origin: &OriginHandle, verify: Verify) -> vload_engine::AttackPlan {
    let mut p = plan(origin.addr(), "/", closed(2), count(50));
    p.request.url = format!("https://localhost:{}/", origin.addr().port())
        .parse()
        .unwrap();
    p.request.headers.insert(
        http::header::HOST,
        format!("localhost:{}", origin.addr().port())
            .parse()
            .unwrap(),
    );
    p.tls = Some(TlsOptions {
        server_name: "localhost".into(),
        verify,
    });
    p
}

#[test]
fn https_with_a_ca_file_verifies_and_times_the_handshake() {
    let (origin, ca) = tls_origin();
    let run = attack(https_plan(&origin, Verify::CaFile(ca)));
    assert_eq!(run.totals.completed, 50);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    let handshake = run
        .latency
        .tls_handshake
        .as_ref()
        .expect("handshakes are recorded");
    assert_eq!(handshake.moments.n, run.totals.connections_opened);
    assert!(
        handshake.moments.min_ns > 10_000,
        "a handshake takes time: {:?}",
        handshake.moments
    );
    assert_eq!(run.plan.tls.as_ref().unwrap().server_name, "localhost");
    assert_eq!(origin.stats().requests_total, 50);
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_unless_insecure() {
    let (origin, _) = tls_origin();
    let mut p = https_plan(&origin, Verify::SystemRoots);
    p.stop.requests = Some(5);
    let run = attack(p);
    assert_eq!(
        run.totals.errors.keys().copied().collect::<Vec<_>>(),
        [ErrorKind::Tls]
    );
    assert!(
        run.totals.errors[&ErrorKind::Tls]
            .sample
            .contains("certificate"),
        "{:?}",
        run.totals.errors
    );
    let run = attack(https_plan(&origin, Verify::Insecure));
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.plan.tls.unwrap().verify, "insecure (not verified)");
}

#[test]
fn http2_over_tls_by_alpn() {
    let (origin, ca) = tls_origin();
    let mut p = https_plan(&origin, Verify::CaFile(ca));
    p.protocol = vload_engine::Protocol::http2(4);
    let run = attack(p);
    assert_eq!(run.totals.completed, 50);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(origin.stats().connections_accepted, 2);
}

#[test]
fn each_host_gets_its_own_sni_at_one_address() {
    use vload_engine::{Pick, TargetFormat, TargetPlan, TargetSet};
    let (origin, ca) = tls_origin_for(&["localhost", "a.test", "b.test"]);
    let port = origin.addr().port();
    let list = format!("https://a.test:{port}/x\nhttps://b.test:{port}/y\n/z\n");
    let file = std::env::temp_dir().join(format!("vload-sni-{}-{port}.txt", std::process::id()));
    std::fs::write(&file, list).unwrap();
    for open_loop in [false, true] {
        let mut p = https_plan(&origin, Verify::CaFile(ca.clone()));
        p.stop.requests = Some(60);
        if open_loop {
            p.load = open(600.0, 4);
        }
        p.connect_to_set = true;
        p.targets = Some(TargetPlan {
            sets: vec![TargetSet {
                path: file.clone(),
                format: TargetFormat::Urls,
                weight: 1,
            }],
            pick: Pick::RoundRobin,
            passes: None,
            skip_bad_lines: false,
        });
        let before = origin.stats();
        let run = attack(p);
        assert_eq!(run.totals.completed, 60);
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        let after = origin.stats();
        let grew = |name: &str| {
            let count = |s: &vload_origin::StatsSnapshot| {
                s.tls_connections_by_server_name
                    .get(name)
                    .copied()
                    .unwrap_or(0)
            };
            count(&after) - count(&before)
        };
        // Connections are kept per host: a handful each, not one per request.
        for name in ["a.test", "b.test", "localhost"] {
            assert!(
                (1..=4).contains(&grew(name)),
                "open loop {open_loop}: {name}: {:?}",
                after.tls_connections_by_server_name
            );
        }
        assert_eq!(
            after.connections_accepted - before.connections_accepted,
            run.totals.connections_opened
        );
        let host = |h: &str| {
            after.requests_by_host.get(h).copied().unwrap_or(0)
                - before.requests_by_host.get(h).copied().unwrap_or(0)
        };
        assert_eq!(
            (
                host(&format!("a.test:{port}")),
                host(&format!("b.test:{port}"))
            ),
            (20, 20),
            "{:?}",
            after.requests_by_host
        );
    }
}

/// A TLS server that completes the handshake and then sends a record that does not
/// decrypt (a corrupted application-data record), after reading each request.
fn corrupting_tls_server() -> (std::net::SocketAddr, std::path::PathBuf) {
    use std::io::{Read, Write};
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca = std::env::temp_dir().join(format!("vload-ca-corrupt-{}.pem", std::process::id()));
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let chain = vec![cert.cert.der().clone()];
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(20) {
            let Ok(mut tcp) = stream else { continue };
            let config = config.clone();
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut tls = rustls::ServerConnection::new(config).unwrap();
                // The handshake and the request, through rustls.
                let mut buf = [0u8; 4096];
                let mut stream = rustls::Stream::new(&mut tls, &mut tcp);
                if stream.read(&mut buf).unwrap_or(0) == 0 {
                    return;
                }
                // Then a record of application data whose bytes were tampered with.
                let _ = tcp.write_all(&[0x17, 0x03, 0x03, 0x00, 0x20]);
                let _ = tcp.write_all(&[0xa5; 0x20]);
                std::thread::sleep(std::time::Duration::from_millis(200));
            });
        }
    });
    (addr, ca)
}

/// See #30: a TLS record failure after the handshake was counted as a reset or a body
/// error, never as TLS.
#[test]
fn a_record_that_does_not_decrypt_is_a_tls_error() {
    let (addr, ca) = corrupting_tls_server();
    for client in [vload_engine::Client::Lean, vload_engine::Client::Hyper] {
        let mut p = plan(addr, "/", closed(1), count(3));
        p.request.url = format!("https://localhost:{}/", addr.port())
            .parse()
            .unwrap();
        p.tls = Some(TlsOptions {
            server_name: "localhost".into(),
            verify: Verify::CaFile(ca.clone()),
        });
        p.protocol = vload_engine::Protocol::Http1 { client };
        let run = attack(p);
        assert_eq!(run.totals.completed, 3, "{client:?}");
        assert_eq!(
            run.totals.errors.keys().copied().collect::<Vec<_>>(),
            [ErrorKind::Tls],
            "{client:?}: {:?}",
            run.totals.errors
        );
    }
}

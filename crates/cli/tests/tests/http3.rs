//! `vload attack --http3` end to end (#46): against `vload origin --http3` (its own
//! self-signed certificate), and with a target list against an origin whose counts are read
//! back, every request in the server's count and the report naming the protocol.

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use super::util::*;

/// `vload origin --http3` says how to attack it, and `vload attack --http3 --insecure` does;
/// with `--quic-retry`, each handshake takes a Retry round trip, and the report says so.
#[test]
fn the_origins_http3_takes_an_attack_as_it_says() {
    let _turn = shared();
    let mut child = vload()
        .args([
            "origin",
            "--http3",
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--quic-retry",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.contains("vload attack --http3 --insecure"),
        "says how: {line}"
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .expect("an https URL")
        .to_owned();
    let dir = Scratch::new("h3-origin");
    let out = dir.path("run.json");
    let o = run(
        vload()
            .args([
                "attack",
                "--http3",
                "--insecure",
                "-c",
                "2",
                "--streams",
                "4",
            ])
            .args(["-n", "500", "--no-progress", "-o"])
            .arg(&out)
            .arg(&url),
        0,
    );
    let report = stdout(&o);
    assert!(report.contains("HTTP/3 (QUIC v1)"), "{report}");
    assert!(report.contains("QUIC connect"), "{report}");
    assert!(report.contains("Retry round trips"), "{report}");
    let run = read_run(&out);
    let h = run.totals.handshakes.expect("HTTP/3 counts its handshakes");
    assert_eq!((h.total(), h.retried), (2, 2), "{h:?}");
    assert_eq!(run.totals.completed, 500);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.plan.http_version, "3");
    signal(&child, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
}

/// A target list over HTTP/3, open loop, --connect-to and --cacert: every request due is
/// answered, and the statuses by path equal what the origin served, exactly.
#[test]
fn a_target_list_over_http3_counts_what_the_origin_counts() {
    let _turn = shared();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let origin = spawn(OriginConfig {
        threads: Some(1),
        tls: Some(vload_origin::TlsIdentity {
            cert_pem: cert.cert.pem().into_bytes(),
            key_pem: cert.key_pair.serialize_pem().into_bytes(),
        }),
        http3: true,
        ..OriginConfig::loopback()
    })
    .unwrap();
    let dir = Scratch::new("h3-targets");
    let ca = dir.path("ca.pem");
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let port = origin.addr().port();
    let urls = dir.path("urls.txt");
    std::fs::write(
        &urls,
        format!("https://localhost:{port}/a?size=100\nhttps://localhost:{port}/b?status=404\n"),
    )
    .unwrap();
    let out = dir.path("run.json");
    run(
        vload()
            .args(["attack", "--http3", "--streams", "2", "--cacert"])
            .arg(&ca)
            .args(["--connect-to", &origin.addr().to_string(), "--urls"])
            .arg(&urls)
            .args(["-r", "300", "-d", "2s", "--no-progress", "--quiet", "-o"])
            .arg(&out),
        0,
    );
    let run = read_run(&out);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.intended, 600);
    assert_eq!(run.totals.completed, 600);
    let stats = origin.stats();
    let served = |path: &str| stats.requests_by_path.get(path).copied().unwrap_or(0);
    assert_eq!(served("/a?size=100") + served("/b?status=404"), 600);
    assert_eq!(run.totals.status_codes[&200], served("/a?size=100"));
    assert_eq!(run.totals.status_codes[&404], served("/b?status=404"));
}

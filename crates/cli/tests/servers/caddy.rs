//! HTTP/3 through a real QUIC terminator (#46): Debian's Caddy, set up from
//! `servers/Caddyfile` in front of vload origin on loopback. Every request vload counts is
//! one the origin served, exactly; the handshake kinds add up to the connections opened;
//! with `--0rtt` and a new connection every 50 requests, Caddy's answer to early data is
//! counted and no request is lost either way; and with varnishd between Caddy and the
//! origin, vload's counts equal Varnish's own. Skipped with a line when Caddy is not
//! installed, failed under CI (VLOAD_REQUIRE_CADDY).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vload_origin::{OriginConfig, OriginHandle, spawn};

use crate::common::{installed, read_run, root, vload};

/// Caddy in front of an origin (its own, or another server's address); stopped (by its
/// PID) on drop.
struct Caddy {
    origin: Option<OriginHandle>,
    child: Child,
    dir: std::path::PathBuf,
    url: String,
}

impl Caddy {
    /// In front of an origin of its own.
    fn start() -> Caddy {
        let origin = spawn(OriginConfig {
            threads: Some(1),
            ..OriginConfig::loopback()
        })
        .unwrap();
        let mut caddy = Caddy::in_front_of(&origin.addr().to_string());
        caddy.origin = Some(origin);
        caddy
    }

    /// In front of the server at `upstream` (HOST:PORT).
    fn in_front_of(upstream: &str) -> Caddy {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let dir = std::env::temp_dir().join(format!("vload-caddy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(root().join("servers/Caddyfile")).unwrap();
        let text = text
            .replace("@PORT@", &port.to_string())
            .replace("@ORIGIN@", upstream)
            .replace("@WORK@", dir.to_str().unwrap());
        let conf = dir.join("Caddyfile");
        std::fs::write(&conf, text).unwrap();
        let child = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&conf)
            .env("HOME", &dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let caddy = Caddy {
            origin: None,
            child,
            dir,
            url: format!("https://localhost:{port}/"),
        };
        let began = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "caddy did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        caddy
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An HTTP/3 attack on 4 connections of `streams` streams, certificate unchecked (Caddy's
/// own CA).
fn h3_attack(streams: &str) -> Vec<&str> {
    vec![
        "attack",
        "--http3",
        "--insecure",
        "-c",
        "4",
        "--streams",
        streams,
    ]
}

#[test]
fn http3_through_caddy_counts_what_the_origin_served() {
    let test = "http3_through_caddy_counts_what_the_origin_served";
    if !installed("caddy", "version", "VLOAD_REQUIRE_CADDY", "caddy", test) {
        return;
    }
    let caddy = Caddy::start();
    let origin = caddy.origin.as_ref().expect("its own origin");
    for early in [false, true] {
        let before = origin.stats().requests_total;
        let out = caddy.dir.join(format!("run-{early}.json"));
        let mut args = h3_attack("4");
        args.extend(["-n", "2000", "--requests-per-connection", "50"]);
        if early {
            args.push("--0rtt");
        }
        args.extend(["-o", out.to_str().unwrap(), &caddy.url]);
        let report = String::from_utf8_lossy(&vload(&args).stdout).into_owned();
        assert!(report.contains("HTTP/3 (QUIC v1)"), "{report}");
        let run = read_run(&out);
        assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
        assert_eq!(run.totals.completed, 2000);
        assert_eq!(run.totals.status_codes[&200], 2000);
        assert_eq!(
            origin.stats().requests_total - before,
            2000,
            "every request vload counts went through Caddy to the origin"
        );
        let h = run.totals.handshakes.expect("HTTP/3 counts its handshakes");
        assert_eq!(h.total(), run.totals.connections_opened, "{h:?}");
        assert!(h.full >= 1, "the first connections had no ticket: {h:?}");
        assert!(h.resumed + h.early_accepted + h.early_rejected > 0, "{h:?}");
        if early {
            // Caddy may take early data or refuse it; either way each request ended once.
            assert_eq!(h.resumed, 0, "every resumption offered early data: {h:?}");
        } else {
            assert_eq!((h.early_accepted, h.early_requests), (0, 0), "{h:?}");
        }
    }
}

/// HTTP/3 through Caddy and varnishd (`vcl/hello.vcl`) to the origin: 1,000 URLs three
/// times. vload's count equals Varnish's own (`client_req`, its hits and misses) and the
/// origin's (one fetch a URL), exactly; the handshake kinds add up to the connections.
#[test]
fn http3_through_caddy_and_varnishd_counts_equal_varnishs_own() {
    use crate::varnish::stack::{Stack, counter, have_varnish};
    let test = "http3_through_caddy_and_varnishd_counts_equal_varnishs_own";
    if !installed("caddy", "version", "VLOAD_REQUIRE_CADDY", "caddy", test) || !have_varnish(test) {
        return;
    }
    let _turn = crate::varnish::stack::shared();
    let stack = Stack::start("hello.vcl");
    let caddy = Caddy::in_front_of(&stack.addr);
    let urls = caddy.dir.join("urls.txt");
    let list: String = (0..1000).map(|i| format!("/obj/{i}\n")).collect();
    std::fs::write(&urls, list).unwrap();
    let out = caddy.dir.join("run.json");
    let stats = stack.server_stats();
    let mut args = h3_attack("2");
    args.extend(["--requests-per-connection", "100", "--urls"]);
    args.extend([
        urls.to_str().unwrap(),
        "--passes",
        "3",
        "--server-stats",
        &stats,
    ]);
    args.extend(["-o", out.to_str().unwrap(), &caddy.url]);
    vload(&args);
    let run = read_run(&out);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.completed, 3_000);
    assert_eq!(counter(&run, "client_req"), 3_000, "Varnish's own count");
    assert_eq!(
        stack.origin.stats().requests_total,
        1_000,
        "one fetch a URL"
    );
    assert_eq!(counter(&run, "vbe_req"), 1_000);
    assert_eq!((run.cache.hit, run.cache.miss), (2_000, 1_000));
    assert_eq!(counter(&run, "cache_hit"), run.cache.hit);
    let h = run.totals.handshakes.expect("HTTP/3 counts its handshakes");
    assert_eq!(h.total(), run.totals.connections_opened, "{h:?}");
}

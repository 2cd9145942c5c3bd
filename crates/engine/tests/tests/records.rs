use std::time::Duration;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use vload_engine::{Interrupt, run};

use super::util::*;

on_both_drivers! {
    #[test]
    fn interrupt_before_the_start_stops_at_once() {
        let _turn = serial();
        let origin = origin();
        let interrupt = Interrupt::new();
        interrupt.trigger();
        let started = std::time::Instant::now();
        let run = run(
            plan(origin.addr(), "/", open(100.0, 10), secs(30.0)),
            &mut (),
            &interrupt,
        )
        .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(run.interrupted);
    }
}

on_both_drivers! {
    #[test]
    fn interrupt_ends_the_attack_with_a_valid_partial_run() {
        let _turn = serial();
        let origin = origin();
        let interrupt = Interrupt::new();
        let trigger = interrupt.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1200));
            trigger.trigger();
        });
        let started = std::time::Instant::now();
        let run = run(
            plan(origin.addr(), "/", closed(4), secs(30.0)),
            &mut (),
            &interrupt,
        )
        .unwrap();
        stopper.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "stopped early");
        assert!(run.interrupted);
        assert!(run.totals.completed > 0);
        assert!(run.window.measured_s < 3.0, "{:?}", run.window);
        vload_schema::RunFile::from_json(&run.to_json()).unwrap();
    }
}

#[test]
fn interval_log_is_standard_and_sums_to_the_run() {
    let origin = origin();
    // One directory a test thread: the test runs once a driver, side by side.
    let dir = std::env::temp_dir().join(format!(
        "vload-hlog-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.hlog");
    let mut p = plan(origin.addr(), "/", open(1_000.0, 50), secs(2.5));
    p.hlog = Some(path.clone());
    // See #17, case 7: warm-up intervals were written untagged, so the log summed to
    // more than the run, and the last, partial interval was written 1 s long.
    p.warmup = Duration::from_secs(1);
    let run = attack_alone(p);
    let text = std::fs::read(&path).unwrap();
    let mut sum = vload_schema::new_histogram(&Default::default());
    let mut tags = std::collections::BTreeSet::new();
    let mut resp_lengths = Vec::new();
    for entry in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(h) = entry.expect("every line parses") {
            let tag = h.tag().map(|t| t.as_str().to_owned()).unwrap_or_default();
            if tag == "resp" {
                resp_lengths.push(h.duration().as_secs_f64());
                assert!(
                    h.start_timestamp().as_secs_f64() >= 1.0,
                    "warm-up left out: {:?}",
                    h.start_timestamp()
                );
            }
            let bytes = base64_decode(h.encoded_histogram());
            assert_eq!(
                &bytes[..4],
                &[0x1c, 0x84, 0x93, 0x14],
                "compressed V2 cookie"
            );
            let decoded: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            if tag == "resp" {
                sum.add(&decoded).unwrap();
            }
            tags.insert(tag);
        }
    }
    assert_eq!(
        tags.into_iter().collect::<Vec<_>>(),
        ["hiccup", "lag", "resp", "svc"]
    );
    assert_eq!(
        sum,
        run.latency.response.unwrap().histogram.decode().unwrap()
    );
    let last = run.intervals.last().unwrap().duration_s;
    assert!(last < 0.99, "the run ends mid-second: {last}");
    assert_eq!(resp_lengths.len(), 3, "{resp_lengths:?}");
    assert!(
        resp_lengths[..2].iter().all(|l| *l == 1.0),
        "{resp_lengths:?}"
    );
    assert!(
        (resp_lengths[2] - last).abs() < 0.0015,
        "the last interval is {last} s long, the log says {}",
        resp_lengths[2]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn base64_decode(s: &str) -> Vec<u8> {
    // The run file's own codec reads the log's payloads too.
    assert!(
        vload_schema::EncodedHistogram(s.to_owned())
            .decode()
            .is_ok()
    );
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[test]
fn memory_stays_flat_because_intervals_hold_histograms_not_samples() {
    // 10x the requests must not make the run file 10x larger.
    let origin = origin();
    let small = attack_alone(plan(origin.addr(), "/", open(200.0, 50), secs(2.0)))
        .to_json()
        .len();
    let large = attack_alone(plan(origin.addr(), "/", open(2_000.0, 50), secs(2.0)))
        .to_json()
        .len();
    // Samples would make it about 10x; histograms grow only with the latencies' spread,
    // which a loaded machine widens (2.0x beside stress-ng at load 13, under 2x quiet).
    assert!(
        (large as f64) < small as f64 * 5.0,
        "{small} vs {large} bytes"
    );
}

on_both_drivers! {
    /// See #32 (item 6): each connection's TCP connect time in its own histogram, beside
    /// the TLS handshake, as ab's "Connect" row: one a connection opened, on both drivers.
    #[test]
    fn each_connection_records_its_tcp_connect_time() {
        let _turn = serial();
        let origin = origin();
        let mut p = plan(origin.addr(), "/", closed(3), count(60));
        p.requests_per_connection = Some(1);
        let run = run(p, &mut (), &Interrupt::new()).unwrap();
        assert_eq!(run.totals.completed, 60);
        let connect = run
            .latency
            .tcp_connect
            .as_ref()
            .expect("connects are recorded");
        assert_eq!(connect.moments.n, run.totals.connections_opened);
        assert!(connect.moments.n >= 60, "a connection a request: {}", connect.moments.n);
        assert!(connect.moments.min_ns > 0, "{:?}", connect.moments);
        // It goes through the run file and back.
        let back = vload_schema::RunFile::from_json(&run.to_json()).unwrap();
        assert_eq!(back.latency.tcp_connect, run.latency.tcp_connect);
    }
}

/// A server that lets `wait` pass before it accepts anything, with an accept queue of one:
/// the kernel drops the SYNs of the connects beyond it, and they retry after about a second.
/// Then it accepts everything and answers each request with a small 200, until `stop`.
fn slow_to_accept(
    wait: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::Ordering;
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
    socket.listen(1).unwrap();
    let listener: std::net::TcpListener = socket.into();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue first (non-blocking connects, not waited for): from then on,
    // every SYN is dropped until the server accepts.
    let fillers: Vec<socket2::Socket> = (0..4)
        .map(|_| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            let _ = s.connect(&addr.into());
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let server = std::thread::spawn(move || {
        std::thread::sleep(wait);
        drop(fillers);
        listener.set_nonblocking(true).unwrap();
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut conn, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            std::thread::spawn(move || {
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(20)))
                    .unwrap();
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    }
                }
            });
        }
    });
    (addr, server)
}

on_both_drivers! {
    /// See #32 (item 6): ab showed a 6.2 s "Connect" max at -c 1000 behind a busy Varnish
    /// and vload showed nothing. A full accept queue drops SYNs, and the connects that
    /// retried wait a second or more: the TCP connect histogram shows it.
    #[test]
    fn a_full_accept_queue_shows_in_the_connect_time() {
        let _turn = serial();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (addr, server) = slow_to_accept(Duration::from_millis(1500), stop.clone());
        let mut p = plan(addr, "/", closed(8), count(16));
        p.requests_per_connection = Some(1);
        let run = run(p, &mut (), &Interrupt::new()).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        server.join().unwrap();
        assert_eq!(run.totals.completed, 16, "{:?}", run.totals.errors);
        let connect = run.latency.tcp_connect.as_ref().unwrap();
        assert_eq!(connect.moments.n, run.totals.connections_opened);
        assert!(
            connect.moments.max_ns >= 900_000_000,
            "a retried SYN waits about a second: {:?}",
            connect.moments
        );
    }
}

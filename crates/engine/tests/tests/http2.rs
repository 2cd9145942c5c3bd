use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use vload_engine::{Client, Protocol};

use super::util::*;

const CLIENTS: [Client; 2] = [Client::Lean, Client::Hyper];

fn http2(streams: u32, client: Client) -> Protocol {
    Protocol::Http2 { streams, client }
}

fn no_errors(run: &vload_schema::RunFile, client: Client) {
    assert!(
        run.totals.errors.is_empty(),
        "{client:?}: {:?}",
        run.totals.errors
    );
}

#[test]
fn h2c_streams_share_each_connection() {
    for client in CLIENTS {
        streams_share_each_connection(client);
    }
}

fn streams_share_each_connection(client: Client) {
    let origin = origin();
    let mut p = plan(origin.addr(), "/h2?size=100", closed(2), count(400));
    p.protocol = http2(4, client);
    let run = attack(p);
    assert_eq!(run.totals.completed, 400);
    no_errors(&run, client);
    assert_eq!(run.totals.bytes_in, 40_000);
    assert_eq!(
        run.totals.connections_opened, 2,
        "two connections, eight streams"
    );
    let stats = origin.stats();
    assert_eq!(stats.connections_accepted, 2);
    assert_eq!(stats.requests_by_path["/h2?size=100"], 400);
    assert_eq!(
        stats.requests_by_host[&origin.addr().to_string()],
        400,
        ":authority carries the host"
    );
    assert_eq!(
        (run.plan.http_version.as_str(), run.plan.streams),
        ("2", Some(4))
    );
}

/// What the test's own HTTP/2 server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicU64,
    body_bytes: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    /// Streams the client reset (CANCEL) before their response.
    cancelled: AtomicU64,
}

/// An HTTP/2 server of the test's own, made with the h2 crate, that treats every stream
/// as `behave` says, allowing `max_streams` at once. Serves `connections` connections, then
/// stops.
fn h2_server(connections: usize, behave: Behave) -> std::net::SocketAddr {
    h2_server_with(connections, None, behave).0
}

fn h2_server_with(
    connections: usize,
    max_streams: Option<u32>,
    behave: Behave,
) -> (std::net::SocketAddr, Arc<Seen>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let seen = Arc::new(Seen::default());
    let server_seen = seen.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            for _ in 0..connections {
                let accepted =
                    tokio::time::timeout(std::time::Duration::from_secs(20), listener.accept());
                let Ok(Ok((socket, _))) = accepted.await else {
                    return;
                };
                // A second handle keeps the connection open after h2 lets go of it, so
                // the client reads the GOAWAY or RST_STREAM instead of a closed socket.
                let socket = socket.into_std().unwrap();
                let keep = socket.try_clone().unwrap();
                let socket = tokio::net::TcpStream::from_std(socket).unwrap();
                let seen = server_seen.clone();
                tokio::spawn(async move {
                    serve_h2(socket, max_streams, behave, seen).await;
                    tokio::task::spawn_blocking(move || drain(keep));
                });
            }
            // The connections' tasks live as long as the runtime.
            tokio::time::sleep(std::time::Duration::from_secs(20)).await;
        });
    });
    (addr, seen)
}

#[derive(Clone, Copy)]
enum Behave {
    /// RST_STREAM on every request.
    Reset,
    /// Request n is answered with cache evidence by n % 3 (X-Varnish hit and Age, X-Cache
    /// MISS, none), a 20 KB header on every fifth if `long` (CONTINUATION frames; above
    /// hyper's 16 KB limit), a body of `body` bytes in 5,000-byte DATA frames, and trailers
    /// on every fourth.
    Cache { body: usize, long: bool },
    /// Reads the whole request body, then answers 200 with no body.
    Drain,
    /// Never answers requests 10, 20 and 30 (the client's timeout cancels them); answers the
    /// rest.
    HangSome,
    /// Opens no window for request bodies (initial window 0, no WINDOW_UPDATE) and never
    /// answers.
    Shut,
}

async fn serve_h2(
    socket: tokio::net::TcpStream,
    max_streams: Option<u32>,
    behave: Behave,
    seen: Arc<Seen>,
) {
    let mut builder = h2::server::Builder::new();
    if let Some(max) = max_streams {
        builder.max_concurrent_streams(max);
    }
    if let Behave::Shut = behave {
        builder.initial_window_size(0);
    }
    let Ok(mut conn) = builder.handshake(socket).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let n = seen.requests.fetch_add(1, Relaxed);
        let seen = seen.clone();
        let now = seen.in_flight.fetch_add(1, Relaxed) + 1;
        seen.max_in_flight.fetch_max(now, Relaxed);
        tokio::spawn(async move {
            answer(n, request, &mut respond, behave, &seen).await;
            seen.in_flight.fetch_sub(1, Relaxed);
        });
    }
}

async fn answer(
    n: u64,
    request: http::Request<h2::RecvStream>,
    respond: &mut h2::server::SendResponse<bytes::Bytes>,
    behave: Behave,
    seen: &Seen,
) {
    use bytes::Bytes;
    let ok = |builder: http::response::Builder| builder.status(200).body(()).unwrap();
    match behave {
        Behave::Reset => respond.send_reset(h2::Reason::INTERNAL_ERROR),
        Behave::Cache { body, long } => {
            let mut head = http::Response::builder().header("date", format!("n{n}"));
            head = match n % 3 {
                0 => head
                    .header("x-varnish", format!("{n} 7"))
                    .header("age", "3"),
                1 => head.header("x-cache", "MISS"),
                _ => head,
            };
            if long && n.is_multiple_of(5) {
                head = head.header("x-long", "a".repeat(20_000));
            }
            let end = body == 0 && !n.is_multiple_of(4);
            let Ok(mut stream) = respond.send_response(ok(head), end) else {
                return;
            };
            for chunk in (0..body).step_by(5_000) {
                let len = 5_000.min(body - chunk);
                stream.reserve_capacity(len);
                let last = chunk + len == body && !n.is_multiple_of(4);
                let _ = stream.send_data(Bytes::from(vec![b'x'; len]), last);
            }
            if n.is_multiple_of(4) {
                let mut trailers = http::HeaderMap::new();
                trailers.insert("x-trailer", http::HeaderValue::from_static("1"));
                let _ = stream.send_trailers(trailers);
            }
        }
        Behave::Drain => {
            let mut body = request.into_body();
            while let Some(Ok(data)) = body.data().await {
                seen.body_bytes.fetch_add(data.len() as u64, Relaxed);
                let _ = body.flow_control().release_capacity(data.len());
            }
            let _ = respond.send_response(ok(http::Response::builder()), true);
        }
        Behave::Shut => {
            let _held = request;
            std::future::pending::<()>().await;
        }
        Behave::HangSome => {
            if [9, 19, 29].contains(&n) {
                let reset = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
                if reset.is_ok_and(|r| r == h2::Reason::CANCEL) {
                    seen.cancelled.fetch_add(1, Relaxed);
                }
            } else {
                let _ = respond.send_response(ok(http::Response::builder()), true);
            }
        }
    }
}

/// Reads until the client closes (at most 20 s), then closes.
fn drain(mut socket: std::net::TcpStream) {
    use std::io::Read;
    socket.set_nonblocking(false).unwrap();
    let _ = socket.set_read_timeout(Some(std::time::Duration::from_secs(20)));
    let mut buf = [0u8; 4096];
    while matches!(socket.read(&mut buf), Ok(n) if n > 0) {}
}

/// A server that answers the client's preface with its SETTINGS and a GOAWAY that
/// processes no stream (last stream id 0, REFUSED_STREAM), written frame by frame so
/// that the client surely reads it before the connection closes.
fn goaway_server(connections: usize) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let settings = [0, 0, 0, 4, 0, 0, 0, 0, 0];
                let ack = [0, 0, 0, 4, 1, 0, 0, 0, 0];
                let goaway = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
                let _ = s.write_all(&[&settings[..], &ack, &goaway].concat());
                drain(s);
            });
        }
    });
    addr
}

/// See #17, case 20: HTTP/2 failures all landed in `other`.
#[test]
fn http2_failures_get_their_own_kinds() {
    for client in CLIENTS {
        failures_get_their_own_kinds(client);
    }
}

fn failures_get_their_own_kinds(client: Client) {
    use vload_schema::ErrorKind;
    let kinds = |run: &vload_schema::RunFile| -> Vec<ErrorKind> {
        run.totals.errors.keys().copied().collect()
    };
    let mut p = plan(h2_server(8, Behave::Reset), "/", closed(1), count(6));
    p.protocol = http2(1, client);
    let run = attack(p);
    assert_eq!(
        kinds(&run),
        [ErrorKind::StreamReset],
        "{:?}",
        run.totals.errors
    );

    let mut p = plan(goaway_server(8), "/", closed(1), count(4));
    p.protocol = http2(2, client);
    let run = attack(p);
    assert_eq!(kinds(&run), [ErrorKind::Goaway], "{:?}", run.totals.errors);

    // An HTTP/1.1 server answering the HTTP/2 preface.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            // Kept open until the client leaves, so it reads the answer, not a broken pipe.
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        }
    });
    let mut p = plan(addr, "/", closed(1), count(2));
    p.protocol = http2(1, client);
    let run = attack(p);
    assert_eq!(
        kinds(&run),
        [ErrorKind::Protocol],
        "{:?}",
        run.totals.errors
    );
}

#[test]
fn h2c_open_loop_keeps_its_schedule() {
    for client in CLIENTS {
        open_loop_keeps_its_schedule(client);
    }
}

fn open_loop_keeps_its_schedule(client: Client) {
    let origin = origin();
    let mut p = plan(origin.addr(), "/", open(1_000.0, 20), secs(1.0));
    p.protocol = http2(8, client);
    let run = attack(p);
    // The schedule is exact; how many are answered within the second, and how many
    // connections the in-flight streams need, are the machine's (a loaded one answers later,
    // so more streams are in flight at once). A connection a request would be 1,000.
    assert!(
        (run.totals.intended as i64 - 1_000).abs() <= 10,
        "{}",
        run.totals.intended
    );
    assert!(run.totals.completed >= 900, "{}", run.totals.completed);
    no_errors(&run, client);
    assert!(
        run.totals.connections_opened <= 20,
        "streams are reused: {}",
        run.totals.connections_opened
    );
}

/// Cache evidence, a header block over CONTINUATION frames, bodies over several DATA frames,
/// trailers, and responses that are a head alone: both clients read them all the same.
#[test]
fn h2_responses_are_read_whole_whatever_their_framing() {
    for client in CLIENTS {
        for body in [0, 12_345] {
            let long = client == Client::Lean;
            let (addr, seen) = h2_server_with(2, None, Behave::Cache { body, long });
            let mut p = plan(addr, "/", closed(1), count(90));
            p.protocol = http2(4, client);
            let run = attack(p);
            no_errors(&run, client);
            assert_eq!(run.totals.status_codes[&200], 90, "{client:?}");
            assert_eq!(run.totals.bytes_in, 90 * body as u64, "{client:?}");
            let c = &run.cache;
            assert_eq!((c.hit, c.miss, c.unknown), (30, 30, 30), "{client:?}");
            assert_eq!(
                (c.by_source.x_varnish, c.by_source.x_cache),
                (30, 30),
                "{client:?}"
            );
            assert_eq!(seen.requests.load(Relaxed), 90);
        }
    }
}

/// A request body larger than the server's window (h2's 64 KB default) goes out as the
/// server opens its window, all of it.
#[test]
fn h2_request_bodies_wait_for_the_servers_window() {
    for client in CLIENTS {
        let (addr, seen) = h2_server_with(2, None, Behave::Drain);
        let mut p = plan(addr, "/", closed(1), count(20));
        p.request.method = http::Method::POST;
        p.request.body = bytes::Bytes::from(vec![b'b'; 200_000]);
        p.protocol = http2(2, client);
        let run = attack(p);
        no_errors(&run, client);
        assert_eq!(run.totals.status_codes[&200], 20, "{client:?}");
        assert_eq!(seen.body_bytes.load(Relaxed), 20 * 200_000, "{client:?}");
    }
}

/// See #30: a request body waiting for a window the server never opened was counted as
/// sent (1.5 GB to a server whose window stayed 0). Bytes out are the bytes that went out.
#[test]
fn h2_a_body_the_server_never_lets_out_is_not_counted_as_sent() {
    for client in CLIENTS {
        let (addr, _) = h2_server_with(4, None, Behave::Shut);
        let mut p = plan(addr, "/", closed(1), count(2));
        p.request.method = http::Method::POST;
        p.request.body = bytes::Bytes::from(vec![b'b'; 1 << 20]);
        p.timeout = std::time::Duration::from_millis(300);
        p.protocol = http2(2, client);
        let run = attack(p);
        assert_eq!(run.totals.completed, 2, "{client:?}");
        assert_eq!(run.totals.bytes_out, 0, "{client:?}");
    }
}

/// More streams than the server allows at once: the extra ones wait their turn instead of
/// being refused. Only the lean client: it reads the server's SETTINGS before its first
/// request, where hyper's opens streams at once and has the first few over the limit
/// refused (REFUSED_STREAM, counted as `stream_reset`).
#[test]
fn h2_streams_wait_for_the_servers_limit() {
    let client = Client::Lean;
    let cache = Behave::Cache {
        body: 100,
        long: false,
    };
    let (addr, seen) = h2_server_with(1, Some(2), cache);
    let mut p = plan(addr, "/", closed(1), count(200));
    p.protocol = http2(8, client);
    let run = attack(p);
    no_errors(&run, client);
    assert_eq!(run.totals.status_codes[&200], 200, "{client:?}");
    assert!(seen.max_in_flight.load(Relaxed) <= 2, "{client:?}");
}

/// A stream that times out is cancelled (RST_STREAM CANCEL, which the server sees) and
/// counted at the timeout; the connection and its other streams go on. (The attack runs on
/// past the timeouts: at its end the connection closes, and a reset queued then may not go
/// out.)
#[test]
fn h2_a_timed_out_stream_is_cancelled_and_the_connection_goes_on() {
    use vload_schema::ErrorKind;
    for client in CLIENTS {
        let (addr, seen) = h2_server_with(4, None, Behave::HangSome);
        let mut p = plan(addr, "/", closed(1), secs(0.8));
        p.timeout = std::time::Duration::from_millis(300);
        p.protocol = http2(4, client);
        let run = attack(p);
        let errors = &run.totals.errors;
        assert_eq!(
            errors.keys().collect::<Vec<_>>(),
            [&ErrorKind::RequestTimeout],
            "{client:?}"
        );
        assert_eq!(errors[&ErrorKind::RequestTimeout].count, 3, "{client:?}");
        assert!(run.totals.status_codes[&200] >= 100, "{client:?}");
        assert_eq!(run.totals.connections_opened, 1, "{client:?}");
        let waited = std::time::Instant::now();
        while seen.cancelled.load(Relaxed) < 3 && waited.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(seen.cancelled.load(Relaxed), 3, "{client:?}");
    }
}

/// A server that breaks the protocol after a valid SETTINGS: each case is a protocol error
/// on the lean client, never a panic or a hang.
#[test]
fn h2_a_hostile_server_is_a_protocol_error() {
    use vload_schema::ErrorKind;
    let settings: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
    // (case, frames after SETTINGS, whether it ends the connection or only the stream).
    let cases: [(&str, Vec<u8>, bool); 6] = [
        (
            "a frame above the maximum size",
            vec![0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1],
            true,
        ),
        // HEADERS on stream 1 with an HPACK index of 0.
        (
            "an undecodable header block",
            vec![0, 0, 1, 1, 5, 0, 0, 0, 1, 0x80],
            true,
        ),
        (
            "PUSH_PROMISE",
            vec![0, 0, 4, 5, 4, 0, 0, 0, 1, 0, 0, 0, 2],
            true,
        ),
        // HEADERS whose one field is content-type (static index 31).
        (
            "a response without :status",
            vec![0, 0, 1, 1, 5, 0, 0, 0, 1, 0x9f],
            false,
        ),
        (
            "DATA before the head",
            vec![0, 0, 2, 0, 1, 0, 0, 0, 1, b'h', b'i'],
            false,
        ),
        // HEADERS with END_STREAM whose one field is ":status: 100" (a literal, name index 8).
        (
            "a stream ended by a 1xx head",
            vec![0, 0, 5, 1, 5, 0, 0, 0, 1, 0x08, 3, b'1', b'0', b'0'],
            false,
        ),
    ];
    for (case, frames, connection) in cases {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reply = [settings, &frames].concat();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            for stream in listener.incoming().take(3) {
                let Ok(mut s) = stream else { continue };
                let reply = reply.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(&reply);
                    drain(s);
                });
            }
        });
        // The server answers once a connection: a stream error leaves the connection open,
        // and a second request on it would wait for its timeout.
        let requests = if connection { 2 } else { 1 };
        let mut p = plan(addr, "/", closed(1), count(requests));
        p.protocol = http2(1, Client::Lean);
        let run = attack(p);
        assert_eq!(
            run.totals.errors.keys().collect::<Vec<_>>(),
            [&ErrorKind::Protocol],
            "{case}: {:?}",
            run.totals.errors
        );
        assert_eq!(
            run.totals.errors[&ErrorKind::Protocol].count,
            requests,
            "{case}"
        );
    }
}

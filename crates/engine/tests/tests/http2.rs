use super::util::*;

#[test]
fn h2c_streams_share_each_connection() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/h2?size=100", closed(2), count(400));
    p.protocol = vload_engine::Protocol::Http2 { streams: 4 };
    let run = attack(p);
    assert_eq!(run.totals.completed, 400);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
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

/// An HTTP/2 server of the test's own, made with the h2 crate, that treats every stream
/// as `behave` says. Serves `connections` connections, then stops.
fn h2_server(connections: usize, behave: Behave) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
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
                tokio::spawn(async move {
                    serve_h2(socket, behave).await;
                    tokio::task::spawn_blocking(move || drain(keep));
                });
            }
        });
    });
    addr
}

#[derive(Clone, Copy)]
enum Behave {
    /// RST_STREAM on every request.
    Reset,
}

async fn serve_h2(socket: tokio::net::TcpStream, behave: Behave) {
    let Ok(mut conn) = h2::server::handshake(socket).await else {
        return;
    };
    while let Some(Ok((_request, mut respond))) = conn.accept().await {
        match behave {
            Behave::Reset => respond.send_reset(h2::Reason::INTERNAL_ERROR),
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
    use vload_schema::ErrorKind;
    let kinds = |run: &vload_schema::RunFile| -> Vec<ErrorKind> {
        run.totals.errors.keys().copied().collect()
    };
    let mut p = plan(h2_server(8, Behave::Reset), "/", closed(1), count(6));
    p.protocol = vload_engine::Protocol::Http2 { streams: 1 };
    let run = attack(p);
    assert_eq!(
        kinds(&run),
        [ErrorKind::StreamReset],
        "{:?}",
        run.totals.errors
    );

    let mut p = plan(goaway_server(8), "/", closed(1), count(4));
    p.protocol = vload_engine::Protocol::Http2 { streams: 2 };
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
    p.protocol = vload_engine::Protocol::Http2 { streams: 1 };
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
    let origin = origin();
    let mut p = plan(origin.addr(), "/", open(1_000.0, 20), secs(1.0));
    p.protocol = vload_engine::Protocol::Http2 { streams: 8 };
    let run = attack(p);
    assert!(
        (run.totals.completed as i64 - 1_000).abs() <= 10,
        "{}",
        run.totals.completed
    );
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert!(
        run.totals.connections_opened <= 10,
        "streams are reused: {}",
        run.totals.connections_opened
    );
}

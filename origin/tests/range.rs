//! `Range` on a sized body: one range answered 206 with its part, past the end 416, several
//! ignored (the whole body), and a body of 100 MB streamed whole.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use vload_origin::{OriginConfig, spawn};

/// The status, the `Content-Range` and the body's length of one request with `range`.
fn ask(
    addr: std::net::SocketAddr,
    target: &str,
    range: Option<&str>,
) -> (u16, Option<String>, u64) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: origin.test\r\n{range}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "a whole head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
    };
    let body = std::io::copy(&mut stream, &mut std::io::sink()).unwrap();
    assert_eq!(
        header("content-length").map(|l| l.parse::<u64>().unwrap()),
        Some(body)
    );
    (status, header("content-range"), body)
}

#[test]
fn a_range_of_a_sized_body_is_answered_with_its_part() {
    let origin = spawn(OriginConfig::loopback()).unwrap();
    let addr = origin.addr();
    let part = |r| ask(addr, "/r?size=1000", Some(r));
    assert_eq!(
        part("bytes=10-19"),
        (206, Some("bytes 10-19/1000".into()), 10)
    );
    assert_eq!(
        part("bytes=-100"),
        (206, Some("bytes 900-999/1000".into()), 100)
    );
    assert_eq!(
        part("bytes=990-"),
        (206, Some("bytes 990-999/1000".into()), 10)
    );
    assert_eq!(part("bytes=1000-"), (416, Some("bytes */1000".into()), 0));
    assert_eq!(part("bytes=0-1,5-6"), (200, None, 1000));
    // Not a sized body, or not a 200: the Range is not for it.
    assert_eq!(ask(addr, "/", Some("bytes=0-1")).0, 200);
    assert_eq!(
        ask(addr, "/r?size=10&status=404", Some("bytes=0-1")),
        (404, None, 10)
    );
    // 100 MB, streamed from one static buffer.
    assert_eq!(
        ask(addr, "/big?size=104857600", None),
        (200, None, 104_857_600)
    );
    origin.shutdown();
}

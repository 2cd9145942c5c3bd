//! The small HTTP/1.1 server of vload's side pages (`--metrics-listen`, `--dashboard`, `plot
//! --serve`): one thread, every connection non-blocking and served in turn, one request a
//! connection, each within a bound, so that no reader holds up another nor the exit.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Readers held at once; a newer one pushes out the oldest.
const READERS: usize = 64;

/// The whole of one scrape, the request's first byte to the answer's last: a reader that
/// trickles its request (or never reads the answer) is dropped then, and never holds up
/// another reader nor the exit, since every connection is served without blocking.
const BOUND: Duration = Duration::from_secs(2);

/// One reader's connection: its request so far, then the answer left to write.
struct Reader {
    stream: TcpStream,
    head: Vec<u8>,
    answer: Option<(Vec<u8>, usize)>,
    deadline: std::time::Instant,
}

/// Answers requests with `answer` (given each request's head) until `stop`: every connection
/// non-blocking, served in turn, each within [`BOUND`].
pub(crate) fn serve(listener: &TcpListener, stop: &AtomicBool, answer: &dyn Fn(&str) -> Vec<u8>) {
    let mut readers: Vec<Reader> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let mut moved = false;
        while let Ok((stream, _)) = listener.accept() {
            moved = true;
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if readers.len() >= READERS {
                readers.remove(0);
            }
            readers.push(Reader {
                stream,
                head: Vec::new(),
                answer: None,
                deadline: std::time::Instant::now() + BOUND,
            });
        }
        let now = std::time::Instant::now();
        readers.retain_mut(|s| {
            let (keep, busy) = step(s, answer);
            moved |= busy;
            keep && now < s.deadline
        });
        if !moved {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Reads what a reader sent, answers once its request is whole, writes what the socket
/// takes: (whether to keep it, whether anything moved).
fn step(s: &mut Reader, answer: &dyn Fn(&str) -> Vec<u8>) -> (bool, bool) {
    use std::io::{ErrorKind, Read as _, Write as _};
    let mut moved = false;
    if s.answer.is_none() {
        let mut buf = [0u8; 2048];
        loop {
            match s.stream.read(&mut buf) {
                Ok(0) => return (false, true),
                Ok(n) => {
                    moved = true;
                    s.head.extend_from_slice(&buf[..n]);
                    if s.head.len() > 16 * 1024 {
                        return (false, true);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return (false, true),
            }
        }
        if !s.head.windows(4).any(|w| w == b"\r\n\r\n") {
            return (true, moved);
        }
        s.answer = Some((answer(&String::from_utf8_lossy(&s.head)), 0));
    }
    let Some((bytes, at)) = &mut s.answer else {
        return (true, moved);
    };
    while *at < bytes.len() {
        match s.stream.write(&bytes[*at..]) {
            Ok(0) => return (false, true),
            Ok(n) => {
                *at += n;
                moved = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return (true, moved),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return (false, true),
        }
    }
    (false, true)
}

/// A whole response: `status` (e.g. `200 OK`), its type and body, the connection closed after.
pub(crate) fn response(status: &str, kind: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The method and path of a request's head.
pub(crate) fn request_line(head: &str) -> (&str, &str) {
    let mut words = head.split_whitespace();
    (
        words.next().unwrap_or_default(),
        words.next().unwrap_or("/"),
    )
}

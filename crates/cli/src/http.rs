//! The small HTTP/1.1 server of vload's side pages (`--metrics-listen`, `--dashboard`, `plot
//! --serve`): one thread, every connection non-blocking and served in turn, one request a
//! connection, each within a bound, so that no reader holds up another nor the exit.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Readers held at once. When all are held, a new connection takes the place of the oldest
/// that has sent nothing yet; a reader whose request has begun (or is being answered) is
/// never pushed out, so a flood of idle local connections costs the flood, not the readers.
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
/// non-blocking, served in turn, each within [`BOUND`]. The readers held are served before
/// new connections are taken, so one that has sent its request is answered first.
pub(crate) fn serve(listener: &TcpListener, stop: &AtomicBool, answer: &dyn Fn(&str) -> Vec<u8>) {
    let mut readers: Vec<Reader> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        let mut moved = false;
        readers.retain_mut(|s| {
            let (keep, busy) = step(s, answer);
            moved |= busy;
            keep && now < s.deadline
        });
        // At most one round of new readers at a time: a flood waits in the kernel's queue.
        for _ in 0..READERS {
            let Ok((stream, _)) = listener.accept() else {
                break;
            };
            moved = true;
            if stream.set_nonblocking(true).is_err() || !admit(&mut readers) {
                continue;
            }
            let mut reader = Reader {
                stream,
                head: Vec::new(),
                answer: None,
                deadline: std::time::Instant::now() + BOUND,
            };
            // A browser or a scraper has sent its request by now: read at once, it is no
            // longer idle, and the connections behind it cannot push it out.
            if step(&mut reader, answer).0 {
                readers.push(reader);
            }
        }
        if !moved {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Makes room for a new reader: none needed below [`READERS`]; else the oldest that has
/// sent nothing is let go. `false`: every reader held has a request under way, and the new
/// connection is the one let go.
fn admit(readers: &mut Vec<Reader>) -> bool {
    if readers.len() < READERS {
        return true;
    }
    match readers.iter().position(|r| r.head.is_empty()) {
        Some(idle) => {
            readers.remove(idle);
            true
        }
        None => false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    /// #58: a flood of idle local connections pushed out a real reader of the dashboard and
    /// /metrics: the readers who sent a request are answered, the idle ones let go.
    #[test]
    fn a_flood_of_idle_connections_pushes_out_no_reader() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let server = std::thread::spawn({
            let stop = stop.clone();
            move || {
                serve(&listener, &stop, &|_| {
                    response("200 OK", "text/plain", b"ok")
                })
            }
        });
        let mut readers = Vec::new();
        let mut flood = Vec::new();
        for round in 0..4 {
            let mut reader = TcpStream::connect(addr).unwrap();
            reader.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
            readers.push(reader);
            for _ in 0..(100 + round) {
                flood.push(TcpStream::connect(addr).unwrap());
            }
        }
        for mut reader in readers {
            reader
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut answer = String::new();
            let _ = reader.read_to_string(&mut answer);
            assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer:?}");
        }
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap();
        drop(flood);
    }
}

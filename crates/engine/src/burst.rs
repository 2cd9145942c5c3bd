//! Bursts: one request for one object on each of N connections of their own, written one
//! after another as fast as the kernel takes them (a stampede on a cache, #59), then every
//! answer read and classified by the cache's word, within a bound. Blocking, on the calling
//! thread, apart from the attack's workers: a side channel with its own ledger (every
//! request written ends answered, failed or unfinished).

use std::io::{ErrorKind as IoKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::cache::{CacheHeaders, decide};

/// The most a response head and its body may hold before the answer is a failure: a
/// stampede's object is small (a large one is the cache lab's part two).
const MOST: usize = 8 << 20;

/// What became of one request of a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BurstFate {
    /// A whole answer.
    Answered {
        /// Its status.
        status: u16,
        /// The cache's word on it.
        cache: BurstCache,
        /// From its request's write to its last byte, in ns.
        ns: u64,
    },
    /// The connection closed, reset or sent what is not HTTP before a whole answer.
    Failed,
    /// Neither when the burst's time ran out.
    Unfinished,
}

/// The cache's word on one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BurstCache {
    /// Forwarded to the origin: a miss or a pass.
    Origin,
    /// Served from the cache: a hit, or stale.
    Cache,
    /// No cache header said.
    Unknown,
}

/// A burst's outcome.
#[derive(Debug, Clone)]
pub struct Fired {
    /// When the first request was written.
    pub at: Instant,
    /// From the first request's write to the last's.
    pub spread: Duration,
    /// One fate per request written.
    pub fates: Vec<BurstFate>,
}

/// One connection of a burst and what its answer has brought so far.
struct Conn {
    stream: TcpStream,
    read: Vec<u8>,
    written_at: Instant,
    fate: Option<BurstFate>,
    /// The answer asked for the connection to close, or it failed: made again before the
    /// next burst.
    spent: bool,
}

/// N connections to one server, kept between bursts.
pub struct Burst {
    addr: SocketAddr,
    connect_timeout: Duration,
    conns: Vec<Conn>,
}

impl Burst {
    /// Opens `n` connections to `addr`, each within `connect_timeout`, all of them by
    /// `deadline`.
    ///
    /// # Errors
    /// A connection that cannot be made, or not all of them by the deadline.
    pub fn open(
        addr: SocketAddr,
        n: usize,
        connect_timeout: Duration,
        deadline: Instant,
    ) -> std::io::Result<Burst> {
        let mut burst = Burst {
            addr,
            connect_timeout,
            conns: Vec::with_capacity(n),
        };
        for made in 0..n {
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    IoKind::TimedOut,
                    format!("{made} of {n} made before the deadline"),
                ));
            }
            let conn = burst.connect()?;
            burst.conns.push(conn);
        }
        Ok(burst)
    }

    fn connect(&self) -> std::io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&self.addr, self.connect_timeout)?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(Conn {
            stream,
            read: Vec::new(),
            written_at: Instant::now(),
            fate: None,
            spent: false,
        })
    }

    /// Makes again the connections the last burst spent and those the server closed while
    /// idle (Varnish after `timeout_idle`, 5 s): call it shortly before a burst, so that the
    /// server's accepts are not in the burst's time.
    /// No connect starts after `deadline` (a server that stopped accepting): the
    /// connections not made again stay spent, and their requests fail in the burst.
    pub fn refresh(&mut self, deadline: Instant) {
        for i in 0..self.conns.len() {
            if Instant::now() >= deadline {
                return;
            }
            if (self.conns[i].spent || self.conns[i].closed())
                && let Ok(conn) = self.connect()
            {
                self.conns[i] = conn;
            }
        }
    }

    /// Writes `request` on every connection, one after another, then reads every answer
    /// until all have one, `bound` has passed since the first write, or `stop` is set. A
    /// connection still spent (see [`Burst::refresh`]) fails its request.
    pub fn fire(&mut self, request: &[u8], bound: Duration, stop: &AtomicBool) -> Fired {
        let at = Instant::now();
        let mut last = at;
        for conn in &mut self.conns {
            conn.read.clear();
            conn.fate = None;
            conn.written_at = Instant::now();
            last = conn.written_at;
            if conn.spent || !write_whole(&mut conn.stream, request, at + bound) {
                conn.fate = Some(BurstFate::Failed);
                conn.spent = true;
            }
        }
        let spread = last.saturating_duration_since(at);
        self.read_all(at + bound, stop);
        let fates = self
            .conns
            .iter_mut()
            .map(|c| match c.fate {
                Some(fate) => fate,
                None => {
                    c.spent = true;
                    BurstFate::Unfinished
                }
            })
            .collect();
        Fired { at, spread, fates }
    }

    /// Reads every connection without a fate until each has one, `deadline` passes or
    /// `stop` is set (the run ends: what has no answer yet is unfinished).
    fn read_all(&mut self, deadline: Instant, stop: &AtomicBool) {
        loop {
            let waiting: Vec<usize> = (0..self.conns.len())
                .filter(|&i| self.conns[i].fate.is_none())
                .collect();
            let now = Instant::now();
            if waiting.is_empty() || now >= deadline || stop.load(Ordering::Relaxed) {
                return;
            }
            let mut fds: Vec<libc::pollfd> = waiting
                .iter()
                .map(|&i| libc::pollfd {
                    fd: self.conns[i].stream.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let ms = deadline
                .saturating_duration_since(now)
                .as_millis()
                .clamp(1, 100) as i32;
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for this call.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if ready < 0 && std::io::Error::last_os_error().kind() != IoKind::Interrupted {
                return;
            }
            for (fd, &i) in fds.iter().zip(&waiting) {
                if fd.revents != 0 {
                    self.conns[i].take_in();
                }
            }
        }
    }
}

impl Conn {
    /// True when the server closed the idle connection (or sent what nobody asked for).
    fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        !matches!(self.stream.read(&mut byte), Err(e) if e.kind() == IoKind::WouldBlock)
    }

    /// Reads what the socket holds and, once the answer is whole, gives it its fate.
    fn take_in(&mut self) {
        let mut buf = [0u8; 16 << 10];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    // Closed: an answer without a length ends here, anything else failed.
                    self.fate = Some(self.answer(true).unwrap_or(BurstFate::Failed));
                    self.spent = true;
                    return;
                }
                Ok(n) => self.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == IoKind::WouldBlock => break,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(_) => {
                    self.fate = Some(BurstFate::Failed);
                    self.spent = true;
                    return;
                }
            }
            if self.read.len() > MOST {
                self.fate = Some(BurstFate::Failed);
                self.spent = true;
                return;
            }
        }
        if let Some(fate) = self.answer(false) {
            self.fate = Some(fate);
        }
    }

    /// The fate of what was read, if it is a whole answer (`closed`: the server closed the
    /// connection, which ends a body without a length).
    fn answer(&mut self, closed: bool) -> Option<BurstFate> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let head = match response.parse(&self.read) {
            Ok(httparse::Status::Complete(head)) => head,
            Ok(httparse::Status::Partial) => return None,
            Err(_) => return Some(BurstFate::Failed),
        };
        let status = response.code.unwrap_or(0);
        let mut length = None;
        let (mut chunked, mut close) = (false, false);
        let mut cache = CacheHeaders::default();
        for h in response.headers.iter() {
            let name = h.name.to_ascii_lowercase();
            match name.as_str() {
                "content-length" => {
                    length = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse::<usize>().ok());
                }
                "transfer-encoding" => chunked = h.value.eq_ignore_ascii_case(b"chunked"),
                "connection" => close = h.value.eq_ignore_ascii_case(b"close"),
                "x-varnish" => cache.varnish = Some(h.value),
                "cache-status" => cache.status = Some(h.value),
                "x-cache" => cache.x_cache = Some(h.value),
                "age" => cache.age = Some(h.value),
                "warning" if crate::cache::says_stale(h.value) => cache.warning = Some(h.value),
                _ => {}
            }
        }
        let body = &self.read[head..];
        let whole = if status == 204 || status == 304 || (100..200).contains(&status) {
            true
        } else if chunked {
            chunked_end(body).is_some()
        } else if let Some(length) = length {
            body.len() >= length
        } else {
            closed
        };
        if !whole {
            return None;
        }
        let cache = match decide(cache).0 {
            c if c.is_miss() => BurstCache::Origin,
            c if c.is_hit() => BurstCache::Cache,
            _ => BurstCache::Unknown,
        };
        self.spent |= close || closed;
        let ns = self.written_at.elapsed().as_nanos() as u64;
        Some(BurstFate::Answered { status, cache, ns })
    }
}

/// Writes all of `bytes` on a non-blocking stream before `deadline`; false when it failed.
fn write_whole(stream: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> bool {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == IoKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::yield_now();
            }
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Where a chunked body ends in `body`, if it has: after the last chunk (size 0) and the
/// empty line that ends the trailers.
fn chunked_end(body: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line = body[at..].windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[at..at + line]).ok()?;
        let size_text = size_text.split(';').next()?.trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        at += line + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let end = body[at..].windows(2).position(|w| w == b"\r\n")?;
                at += end + 2;
                if end == 0 {
                    return Some(at);
                }
            }
        }
        at = at.checked_add(size + 2)?;
        if at > body.len() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_ends_after_its_last_chunk_and_trailers() {
        assert_eq!(chunked_end(b"3\r\nabc\r\n0\r\n\r\n"), Some(13));
        assert_eq!(chunked_end(b"3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"), Some(21));
        assert_eq!(chunked_end(b"3\r\nabc\r\n"), None);
        assert_eq!(chunked_end(b"3\r\nab"), None);
        assert_eq!(chunked_end(b"zz\r\n"), None);
    }
}

//! The side channels' one rule: an exchange with a side peer (a stats page, a stats socket,
//! varnishstat, a purge target, a remote-write receiver, a scraper) has one deadline for the
//! whole of it — connect, write, every read, the peer's last byte — never a timeout per
//! `read()`, which a peer that trickles one byte at a time resets for ever. A [`Deadline`]
//! is that bound; the functions here are the only way the side channels touch a socket or a
//! child process, so none of them can hold a run past its bound.

use std::io::{self, Read as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// When an exchange must be over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    at: Instant,
    /// The bound as asked, for errors: "took longer than 2 s".
    bound: Duration,
}

impl Deadline {
    /// `bound` from now.
    pub(crate) fn after(bound: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + bound,
            bound,
        }
    }

    /// The earlier of two deadlines.
    pub(crate) fn min(self, other: Deadline) -> Deadline {
        if other.at < self.at { other } else { self }
    }

    /// The time left, or a `TimedOut` error naming the bound once there is none.
    pub(crate) fn left(&self) -> io::Result<Duration> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no complete answer within {} (the peer is silent or trickles)",
                    vload_analyze::units::seconds(self.bound.as_secs_f64())
                ),
            ));
        }
        Ok(left)
    }

    /// True once the deadline has passed.
    pub(crate) fn passed(&self) -> bool {
        self.left().is_err()
    }
}

/// A socket whose reads and writes can be bounded in time.
pub(crate) trait Timed: io::Read + io::Write {
    fn bound_reads(&self, left: Duration) -> io::Result<()>;
    fn bound_writes(&self, left: Duration) -> io::Result<()>;
}

impl Timed for TcpStream {
    fn bound_reads(&self, left: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(left))
    }
    fn bound_writes(&self, left: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(left))
    }
}

impl Timed for std::os::unix::net::UnixStream {
    fn bound_reads(&self, left: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(left))
    }
    fn bound_writes(&self, left: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(left))
    }
}

/// Connects to `to` before `deadline`.
pub(crate) fn connect(to: &SocketAddr, deadline: Deadline) -> io::Result<TcpStream> {
    TcpStream::connect_timeout(to, deadline.left()?)
}

/// Writes all of `bytes` before `deadline`.
pub(crate) fn write_all(
    stream: &mut impl Timed,
    bytes: &[u8],
    deadline: Deadline,
) -> io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        stream.bound_writes(deadline.left()?)?;
        match stream.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => deadline.left().map(drop)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until the peer closes, `done` says the bytes so far are complete, or `limit` bytes
/// came (an error: the answer is too large), all before `deadline`.
pub(crate) fn read_until(
    stream: &mut impl Timed,
    limit: usize,
    deadline: Deadline,
    done: impl Fn(&[u8]) -> bool,
) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if done(&bytes) {
            return Ok(bytes);
        }
        stream.bound_reads(deadline.left()?)?;
        match stream.read(&mut buf) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                if bytes.len() + n > limit {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "the answer is larger than {}",
                            vload_analyze::units::bytes(limit as u64)
                        ),
                    ));
                }
                bytes.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => deadline.left().map(drop)?,
            Err(e) => return Err(e),
        }
    }
}

/// Reads until the peer closes (at most `limit` bytes) before `deadline`.
pub(crate) fn read_to_end(
    stream: &mut impl Timed,
    limit: usize,
    deadline: Deadline,
) -> io::Result<Vec<u8>> {
    read_until(stream, limit, deadline, |_| false)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Runs `command` to its end before `deadline`, its output bounded by `limit` bytes a
/// stream; past the deadline the child is killed (it is vload's own) and reaped.
pub(crate) fn output(
    command: &mut Command,
    limit: usize,
    deadline: Deadline,
) -> io::Result<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let readers = [
        child.stdout.take().map(|s| drain(s, limit)),
        child.stderr.take().map(|s| drain(s, limit)),
    ];
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if deadline.passed() {
            end(&mut child);
            return Err(deadline.left().expect_err("passed"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let [stdout, stderr] = readers.map(|r| r.and_then(|r| r.join().ok()).unwrap_or_default());
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Reads a child's stream on a thread of its own, keeping the first `limit` bytes (and
/// reading the rest away, so the child never blocks on a full pipe).
fn drain(
    mut from: impl io::Read + Send + 'static,
    limit: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut from).take(limit as u64).read_to_end(&mut kept);
        let _ = io::copy(&mut from, &mut io::sink());
        kept
    })
}

/// Kills and reaps a child vload started.
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::net::TcpListener;

    /// A peer that sends one byte every 50 ms for ever is cut at the deadline, where a
    /// timeout per read would wait for ever.
    #[test]
    fn a_trickling_peer_is_cut_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            for _ in 0..200 {
                if s.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let began = Instant::now();
        let deadline = Deadline::after(Duration::from_millis(400));
        let mut stream = connect(&addr, deadline).unwrap();
        let err = read_to_end(&mut stream, 1 << 20, deadline).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("400"), "{err}");
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn an_answer_past_the_limit_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.write_all(&[b'y'; 100_000]);
        });
        let deadline = Deadline::after(Duration::from_secs(10));
        let mut stream = connect(&addr, deadline).unwrap();
        let err = read_to_end(&mut stream, 10_000, deadline).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    #[test]
    fn a_child_past_the_deadline_is_killed() {
        let began = Instant::now();
        let err = output(
            Command::new("sleep").arg("30"),
            1024,
            Deadline::after(Duration::from_millis(200)),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(began.elapsed() < Duration::from_secs(5));
        let done = output(
            Command::new("sh").args(["-c", "echo hello; echo oops >&2"]),
            1024,
            Deadline::after(Duration::from_secs(10)),
        )
        .unwrap();
        assert_eq!(done.stdout, b"hello\n");
        assert_eq!(done.stderr, b"oops\n");
    }
}

//! The side channels' one rule: an exchange with a side peer (a stats page, a stats socket,
//! varnishstat, a purge target, a remote-write receiver, a scraper) has one deadline for the
//! whole of it — connect, write, every read, the peer's last byte — never a timeout per
//! `read()`, which a peer that trickles one byte at a time resets for ever. A [`Deadline`]
//! is that bound; the functions here are the only way the side channels touch a socket or a
//! child process, so none of them can hold a run past its bound.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Output, Stdio};
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

/// Connects to the Unix socket at `path` before `deadline`. A listener whose accept queue is
/// full (a HAProxy stopped by a signal, a process that stopped accepting) makes connect(2)
/// wait for room, for ever; Linux bounds that wait by the socket's send timeout, so the
/// timeout is set before the connect, on a socket made by hand (std's `connect` has none).
pub(crate) fn connect_unix(
    path: &std::path::Path,
    deadline: Deadline,
) -> io::Result<std::os::unix::net::UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    let address = SockAddr::unix(path)?;
    loop {
        socket.set_write_timeout(Some(deadline.left()?))?;
        match socket.connect(&address) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A connect that ran out of its send timeout says EAGAIN (or EINPROGRESS).
            Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::EINPROGRESS) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the socket accepts no connection (its queue is full: is the server stopped?)",
                ));
            }
            Err(e) => return Err(e),
        }
    }
    socket.set_write_timeout(None)?;
    Ok(std::os::unix::net::UnixStream::from(
        std::os::fd::OwnedFd::from(socket),
    ))
}

/// The system's resolver (getaddrinfo): the first address of `HOST:PORT`.
fn system_lookup(authority: &str) -> io::Result<SocketAddr> {
    use std::net::ToSocketAddrs as _;
    authority
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the name has no address"))
}

/// A host name resolved once, on a thread of its own that is waited for only until each
/// caller's deadline: getaddrinfo(3) has no timeout, and a resolver that stops answering
/// would otherwise hold a side exchange (and the run's end) for its own 30 s or more. The
/// first address found is kept for every later exchange; a lookup still under way when a
/// deadline passes is not started again, the next caller waits for the same one. Callers
/// wait without holding the resolver's lock, each until its own deadline.
#[derive(Debug, Clone)]
pub(crate) struct Resolver {
    /// `HOST:PORT`.
    authority: String,
    state: std::sync::Arc<std::sync::Mutex<Lookup>>,
    /// The lookup itself (the system's resolver; a stand-in in tests).
    lookup: fn(&str) -> io::Result<SocketAddr>,
}

#[derive(Debug)]
enum Lookup {
    Idle,
    Pending(std::sync::Arc<Answer>),
    Done(SocketAddr),
}

/// The answer of a lookup under way, for every caller waiting on it (each until its own
/// deadline, none holding the resolver's lock meanwhile).
#[derive(Debug, Default)]
struct Answer {
    found: std::sync::Mutex<Option<Result<SocketAddr, (io::ErrorKind, String)>>>,
    ready: std::sync::Condvar,
}

impl Resolver {
    /// A resolver of `authority` (`HOST:PORT`; an address literal needs no lookup).
    pub(crate) fn new(authority: &str) -> Resolver {
        let state = match authority.parse::<SocketAddr>() {
            Ok(address) => Lookup::Done(address),
            Err(_) => Lookup::Idle,
        };
        Resolver {
            authority: authority.to_owned(),
            state: std::sync::Arc::new(std::sync::Mutex::new(state)),
            lookup: system_lookup,
        }
    }

    /// The address, resolved before `deadline` (or earlier, and kept).
    pub(crate) fn resolve(&self, deadline: Deadline) -> io::Result<SocketAddr> {
        let answer = match &mut *self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            Lookup::Done(address) => return Ok(*address),
            Lookup::Pending(answer) => answer.clone(),
            state @ Lookup::Idle => {
                let answer = std::sync::Arc::new(Answer::default());
                let (to, authority, lookup) = (answer.clone(), self.authority.clone(), self.lookup);
                std::thread::Builder::new()
                    .name("vload-resolve".into())
                    .spawn(move || {
                        let found = lookup(&authority).map_err(|e| (e.kind(), e.to_string()));
                        *to.found.lock().unwrap_or_else(|e| e.into_inner()) = Some(found);
                        to.ready.notify_all();
                    })?;
                *state = Lookup::Pending(answer.clone());
                answer
            }
        };
        let mut found = answer.found.lock().unwrap_or_else(|e| e.into_inner());
        while found.is_none() {
            let (now_found, _) = answer
                .ready
                .wait_timeout(found, deadline.left().map_err(|_| self.silent(deadline))?)
                .unwrap_or_else(|e| e.into_inner());
            found = now_found;
        }
        let result = found.clone().expect("found");
        drop(found);
        // The first caller back keeps the address, or lets the next one look again.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(&*state, Lookup::Pending(pending) if std::sync::Arc::ptr_eq(pending, &answer)) {
            *state = match result {
                Ok(address) => Lookup::Done(address),
                Err(_) => Lookup::Idle,
            };
        }
        result.map_err(|(kind, why)| io::Error::new(kind, why))
    }

    /// The error of a caller whose deadline passed while the lookup went on.
    fn silent(&self, deadline: Deadline) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the resolver gave no answer within {} (the lookup goes on, once)",
                vload_analyze::units::seconds(deadline.bound.as_secs_f64())
            ),
        )
    }
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
///
/// The child leads a process group of its own, and the group is what is killed: a wrapper
/// script's children go with it. A child that leaves a process behind holding its stdout or
/// stderr (a wrapper that backgrounds a helper) never holds vload either: once the child has
/// exited, its output is in the pipe and read at once; the readers wait for the pipes' end
/// only a moment ([`LEFT_OVER`]) beyond that, then the group is killed and what the child
/// wrote is kept. A reader still held by a process outside the group is left behind.
pub(crate) fn output(
    command: &mut Command,
    limit: usize,
    deadline: Deadline,
) -> io::Result<Output> {
    use std::os::unix::process::CommandExt as _;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let group = child.id() as libc::pid_t;
    let (done, finished) = std::sync::mpsc::channel();
    let streams = [
        child.stdout.take().map(|s| drain(s, limit, done.clone())),
        child.stderr.take().map(|s| drain(s, limit, done.clone())),
    ];
    drop(done);
    // The child is watched without being reaped (WNOWAIT), so its pid, the group's id, stays
    // its own until the group is dealt with below and cannot name another process's group.
    while !exited(group)? {
        if deadline.passed() {
            kill_group(group);
            let _ = child.wait();
            return Err(deadline.left().expect_err("passed"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // The child is gone: what it wrote is in the pipes. A pipe still open after a moment is
    // held by a process it left behind.
    let open = streams.iter().flatten().count();
    let wait_until = Instant::now() + LEFT_OVER;
    let mut ended = 0;
    while ended < open {
        let left = wait_until.saturating_duration_since(Instant::now());
        match finished.recv_timeout(left) {
            Ok(()) => ended += 1,
            Err(_) => break,
        }
    }
    if ended < open {
        kill_group(group);
        // The group's end closes the pipes it held: a last moment to see their end.
        while ended < open && finished.recv_timeout(Duration::from_millis(50)).is_ok() {
            ended += 1;
        }
    }
    let status = child.wait()?;
    let [stdout, stderr] = streams.map(|s| {
        s.map(|kept| std::mem::take(&mut *kept.lock().unwrap_or_else(|e| e.into_inner())))
            .unwrap_or_default()
    });
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// How long the output of a child that has exited may take to reach its end: the child
/// wrote it all before exiting, so only a process it left behind makes this wait.
const LEFT_OVER: Duration = Duration::from_millis(200);

/// Reads a child's stream on a thread of its own, keeping the first `limit` bytes (and
/// reading the rest away, so the child never blocks on a full pipe); says `done` at the
/// stream's end. The bytes are shared, so a reader held past its child's end is not waited
/// for.
fn drain(
    mut from: impl io::Read + Send + 'static,
    limit: usize,
    done: std::sync::mpsc::Sender<()>,
) -> std::sync::Arc<std::sync::Mutex<Vec<u8>>> {
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = kept.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        let mut room = limit;
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let keep = n.min(room);
                    room -= keep;
                    into.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&buf[..keep]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    kept
}

/// True once the child `pid` has exited, leaving it unreaped.
fn exited(pid: libc::pid_t) -> io::Result<bool> {
    // SAFETY: waitid(2) on vload's own child, into a zeroed siginfo_t it owns.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: as above; WNOWAIT leaves the child to be reaped by `Child::wait`.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // SAFETY: waitid filled `info`; si_pid is 0 while the child runs.
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Kills the process group a child of vload's leads (the child and whatever it started
/// that stayed in its group).
fn kill_group(group: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals the process group `group`, which vload made
    // for its own child (`process_group(0)`); no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
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

    /// A wrapper that prints its answer and exits, leaving a child behind that holds its
    /// stdout and stderr for 30 s: the answer is had at once, and the orphan (in the
    /// wrapper's group) is killed.
    #[test]
    fn an_orphan_holding_the_pipes_holds_nothing() {
        let began = Instant::now();
        let done = output(
            Command::new("sh").args(["-c", "sleep 30 & echo answer; echo note >&2"]),
            1024,
            Deadline::after(Duration::from_secs(20)),
        )
        .unwrap();
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
        assert!(done.status.success());
        assert_eq!(done.stdout, b"answer\n");
        assert_eq!(done.stderr, b"note\n");
        // Past the deadline, a wrapper's children go with it.
        let began = Instant::now();
        let err = output(
            Command::new("sh").args(["-c", "sleep 30; true"]),
            1024,
            Deadline::after(Duration::from_millis(200)),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(began.elapsed() < Duration::from_secs(5));
    }

    /// A Unix socket whose accept queue is full: connect(2) would wait for ever; it ends at
    /// the deadline with a word on why.
    #[test]
    fn a_socket_that_accepts_nothing_is_left_at_the_deadline() {
        let dir = std::env::temp_dir().join(format!("vload-side-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("full.sock");
        let _ = std::fs::remove_file(&path);
        let listener =
            socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
        listener
            .bind(&socket2::SockAddr::unix(&path).unwrap())
            .unwrap();
        listener.listen(0).unwrap();
        // Fill the queue: connections nobody accepts, until one would wait.
        let mut held = Vec::new();
        let began = Instant::now();
        let err = loop {
            match connect_unix(&path, Deadline::after(Duration::from_millis(300))) {
                Ok(s) => held.push(s),
                Err(e) => break e,
            }
            assert!(held.len() < 1000, "the queue never filled");
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("queue is full"), "{err}");
        assert!(began.elapsed() < Duration::from_secs(5));
        drop(listener);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A name resolved once is kept; an address literal needs no lookup.
    #[test]
    fn a_name_is_resolved_once() {
        let literal = Resolver::new("127.0.0.1:81");
        assert_eq!(
            literal
                .resolve(Deadline::after(Duration::from_secs(1)))
                .unwrap(),
            "127.0.0.1:81".parse::<SocketAddr>().unwrap()
        );
        let named = Resolver::new("localhost:82");
        let deadline = Deadline::after(Duration::from_secs(20));
        let first = named.resolve(deadline).unwrap();
        assert_eq!(first.port(), 82);
        assert!(matches!(
            *named.state.lock().unwrap(),
            Lookup::Done(address) if address == first
        ));
    }

    /// A resolver that does not answer: each caller waits until its own deadline only, and
    /// the one lookup under way is not started again.
    #[test]
    fn a_silent_resolver_holds_no_caller_past_its_deadline() {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        fn silent(_: &str) -> io::Result<SocketAddr> {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_secs(3));
            Err(io::Error::other("gave up"))
        }
        let mut resolver = Resolver::new("silent.invalid:80");
        resolver.lookup = silent;
        for _ in 0..3 {
            let began = Instant::now();
            let err = resolver
                .resolve(Deadline::after(Duration::from_millis(100)))
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
            assert!(err.to_string().contains("no answer within"), "{err}");
            assert!(began.elapsed() < Duration::from_secs(2));
        }
        // A caller with a long deadline waiting holds up no other caller.
        let patient = resolver.clone();
        let waiting =
            std::thread::spawn(move || patient.resolve(Deadline::after(Duration::from_secs(10))));
        std::thread::sleep(Duration::from_millis(50));
        let began = Instant::now();
        let err = resolver
            .resolve(Deadline::after(Duration::from_millis(100)))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(began.elapsed() < Duration::from_secs(2));
        // The lookup's own answer (an error after 3 s) reaches the patient caller.
        let answer = waiting.join().unwrap().unwrap_err();
        assert_eq!(answer.to_string(), "gave up");
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}

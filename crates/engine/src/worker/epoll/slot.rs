//! One connection slot of the epoll loop: its lane and its socket's I/O (connect, write,
//! read and decode). What the lane decides is the loop's to carry out; a slot only moves
//! bytes and says what came of it.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use socket2::{Domain, Protocol as TcpProtocol, SockAddr, Socket, Type};
use vload_schema::ErrorKind;

use super::sys::{Epoll, recv, send, unasked_bytes};
use crate::failure::{Failure, connect_failure, io_failure};
use crate::h1::{BUFFER, Decoder, Step, grow_if_filled, make_room};
use crate::response::Response;
use crate::worker::lane::Lane;
use crate::workload::Wire;

/// One slot of the loop, made again whenever its connection closes.
pub(super) struct Slot {
    pub(super) lane: Lane,
    socket: Option<Socket>,
    /// While it connects: when its connect began (ab's "Connect" runs from here). In an
    /// exchange: when its response began to arrive, if a read left it incomplete. One field
    /// for both, as no slot needs them at once (a slot is kept small: see the test below).
    stamp: Instant,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    pub(super) decoder: Decoder,
    /// Counts the slot's sockets: an event of a socket closed earlier in the same batch is
    /// not taken for its successor's.
    generation: u32,
    /// The request out, when it is not the attack's own (a target's, a catalogue object's).
    out: Option<Wire>,
    /// Bytes of the request out written so far.
    written: usize,
}

/// What an exchange left behind.
pub(super) struct Settled {
    /// Body bytes received, whether the response completed or not.
    pub(super) received: u64,
    /// Request body bytes written.
    pub(super) written: u64,
    /// The connection can carry another request.
    pub(super) usable: bool,
    /// The server sent bytes after a complete response that nobody asked for: the response
    /// stands, the connection cannot be used again (they would be read as the next response).
    pub(super) stray: bool,
}

/// How a connect began.
pub(super) enum Connect {
    /// Under way: the socket reports writable once it is made.
    Pending,
    /// Made at once.
    Made,
}

/// What a read found.
pub(super) enum Read {
    /// Nothing yet, or part of a response.
    More,
    /// The response ended, or the exchange failed; with when the response began to arrive
    /// if an earlier read brought part of it (`None`: it came whole in this one).
    Done(Result<Response, Failure>, Option<Instant>),
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            lane: Lane::new(),
            socket: None,
            stamp: Instant::now(),
            buf: Vec::new(),
            start: 0,
            end: 0,
            decoder: Decoder::new(false),
            generation: 0,
            out: None,
            written: 0,
        }
    }

    /// The epoll token of slot `i`'s current socket.
    pub(super) fn token(&self, i: usize) -> u64 {
        (u64::from(self.generation) << 32) | i as u64
    }

    /// True when `token` names this slot's current socket.
    pub(super) fn owns(&self, token: u64) -> bool {
        self.generation == (token >> 32) as u32
    }

    /// Drops its connection, if any.
    pub(super) fn close(&mut self) {
        self.socket = None;
        self.out = None;
    }

    /// Drops its socket, keeping what the exchange under way counted (it timed out).
    pub(super) fn disconnect(&mut self) {
        self.socket = None;
    }

    /// Drops its connection and its buffer: the slot may stay free a long time, and a buffer
    /// grown for a large body is not kept for a connection that may never come.
    pub(super) fn free(&mut self) {
        self.close();
        self.buf = Vec::new();
    }

    /// Starts a connect to `addr` as slot `i`, watched by `epoll`.
    pub(super) fn connect(
        &mut self,
        epoll: &Epoll,
        addr: &SockAddr,
        i: usize,
    ) -> Result<Connect, Failure> {
        self.close();
        (self.start, self.end) = (0, 0);
        if self.buf.is_empty() {
            self.buf = vec![0; BUFFER];
        }
        self.generation = self.generation.wrapping_add(1);
        let target = addr.as_socket().expect("vload connects to IP addresses");
        let failed = |e: &io::Error| connect_failure(target, e);
        let socket = Socket::new(
            Domain::for_address(target),
            Type::STREAM.nonblocking().cloexec(),
            Some(TcpProtocol::TCP),
        )
        .and_then(|socket| socket.set_tcp_nodelay(true).map(|()| socket))
        .map_err(|e| failed(&e))?;
        self.stamp = Instant::now();
        let pending = match socket.connect(addr) {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
            Err(e) => return Err(failed(&e)),
        };
        // A connect under way is waited for as writable; a made one reads.
        let interest = if pending {
            libc::EPOLLOUT
        } else {
            libc::EPOLLIN
        };
        let fd = socket.as_raw_fd();
        if let Err(e) = epoll.control(libc::EPOLL_CTL_ADD, fd, interest, self.token(i)) {
            return Err((
                ErrorKind::ClientLimit,
                format!("epoll_ctl: {e} (a limit of this machine, not the server)"),
            ));
        }
        self.socket = Some(socket);
        Ok(if pending {
            Connect::Pending
        } else {
            Connect::Made
        })
    }

    /// How the connect under way came out, now that the socket reported: made (it reads from
    /// now on) or failed; `None` without a socket.
    pub(super) fn connect_result(
        &mut self,
        epoll: &Epoll,
        addr: &SockAddr,
        i: usize,
    ) -> Option<Result<(), Failure>> {
        let socket = self.socket.as_ref()?;
        let target = addr.as_socket().expect("vload connects to IP addresses");
        match socket.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => return Some(Err(connect_failure(target, &e))),
        }
        let watched = epoll.control(
            libc::EPOLL_CTL_MOD,
            socket.as_raw_fd(),
            libc::EPOLLIN,
            self.token(i),
        );
        // Cannot happen for a registered descriptor; the read side would never wake.
        Some(watched.map_err(|_| {
            (
                ErrorKind::Other,
                "epoll_ctl could not watch a connection".into(),
            )
        }))
    }

    /// When its connect began (asked while it connects).
    pub(super) fn began(&self) -> Instant {
        self.stamp
    }

    /// Begins an exchange of `out` (the attack's own request when `None`).
    pub(super) fn begin(&mut self, out: Option<Wire>, own: &Wire) {
        self.decoder = Decoder::new(out.as_ref().unwrap_or(own).head);
        self.out = out;
        self.written = 0;
    }

    /// The request out: its own, or the attack's.
    fn request<'a>(&'a self, own: &'a Wire) -> &'a Wire {
        self.out.as_ref().unwrap_or(own)
    }

    /// True while part of the request is still to be written.
    pub(super) fn writing(&self, own: &Wire) -> bool {
        self.written < self.request(own).bytes.len()
    }

    /// Writes what is left of the request; waits for writability if the socket takes only
    /// part (and only then reads, as the tokio connection does).
    pub(super) fn write(&mut self, epoll: &Epoll, own: &Wire, i: usize) -> Result<(), Failure> {
        let Some(fd) = self.socket.as_ref().map(Socket::as_raw_fd) else {
            return Ok(());
        };
        let request = &self.out.as_ref().unwrap_or(own).bytes;
        let before = self.written;
        let outcome = loop {
            match send(fd, &request[self.written..]) {
                Ok(n) => {
                    self.written += n;
                    if self.written == request.len() {
                        break Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                Err(e) => break Err(e),
            }
        };
        match outcome {
            Err(e) => Err(io_failure(&e, false)),
            // All out at once, as nearly always: nothing to change.
            Ok(true) if before == 0 => Ok(()),
            Ok(done) => self.watch(epoll, fd, done, i),
        }
    }

    /// Watches the socket for reading (`done` writing) or for writing.
    fn watch(&self, epoll: &Epoll, fd: RawFd, done: bool, i: usize) -> Result<(), Failure> {
        let interest = if done { libc::EPOLLIN } else { libc::EPOLLOUT };
        epoll
            .control(libc::EPOLL_CTL_MOD, fd, interest, self.token(i))
            .map_err(|_| {
                (
                    ErrorKind::Other,
                    "epoll_ctl could not watch a connection".into(),
                )
            })
    }

    /// Reads what the connection has and decodes it; with the bytes read.
    pub(super) fn read(&mut self) -> (Read, usize) {
        let Some(fd) = self.socket.as_ref().map(Socket::as_raw_fd) else {
            return (Read::More, 0);
        };
        // Nothing of the response came before this read.
        let fresh = self.start == self.end && self.decoder.is_fresh();
        let room = make_room(&mut self.buf, &mut self.start, &mut self.end);
        let end = self.end + room;
        let mut read = 0;
        let result = match recv(fd, &mut self.buf[self.end..end]) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (Read::More, 0),
            Err(e) => Err(io_failure(&e, self.decoder.in_body())),
            Ok(0) => {
                let left = self.end - self.start;
                self.socket = None; // closed: never reused
                self.decoder.eof(left)
            }
            Ok(n) => {
                read = n;
                self.end += n;
                grow_if_filled(&mut self.buf, n, room);
                match self.decoder.feed(&self.buf[self.start..self.end]) {
                    Err(failure) => Err(failure),
                    Ok((used, Step::More)) => {
                        self.start += used;
                        if fresh {
                            // Part of the response is here, the rest to come.
                            self.stamp = Instant::now();
                        }
                        return (Read::More, read);
                    }
                    Ok((used, Step::Done(response))) => {
                        self.start += used;
                        Ok(response)
                    }
                }
            }
        };
        (Read::Done(result, (!fresh).then_some(self.stamp)), read)
    }

    /// The exchange is over, `kept` when its response lets the connection go on: what
    /// crossed the connection and whether it can carry another request. The request's bytes
    /// go back to their arena.
    pub(super) fn settle(&mut self, own: &Wire, kept: bool) -> Settled {
        let out = self.out.take();
        let request = out.as_ref().unwrap_or(own);
        let head = request.bytes.len() - request.body as usize;
        let stray = kept && self.end > self.start;
        Settled {
            received: self.decoder.body(),
            written: self.written.saturating_sub(head) as u64,
            usable: kept && self.socket.is_some() && !stray,
            stray,
        }
    }

    /// While idle: bytes the server sent that nobody asked for, if any (none: it closed).
    pub(super) fn unasked(&self) -> Option<usize> {
        self.socket.as_ref().and_then(unasked_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection of the loop is a slot beside its 1 KB buffer and its socket: at
    /// 10,000 connections each 100 bytes of slot is a megabyte. A tokio connection task was
    /// 1.3 KB of future (`serve::tests::a_connection_task_stays_small`).
    #[test]
    fn a_slot_stays_small() {
        let size = std::mem::size_of::<Slot>();
        assert!(size <= 256, "a slot is {size} bytes");
    }
}

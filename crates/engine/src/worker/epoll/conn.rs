//! One connection's life on the epoll loop: connect, send, read and decode, finish, and
//! again; and the sweep that times out what waited too long.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use socket2::{Domain, Protocol as TcpProtocol, Socket, Type};
use vload_schema::ErrorKind;

use super::Direct;
use super::sys::{recv, unasked_bytes};
use crate::failure::{Failure, io_failure};
use crate::h1::{BUFFER, Decoder, Step, grow_if_filled, make_room};
use crate::worker::CONNECT_BACKOFF;
use crate::worker::job::{Flow, Job};
use crate::worker::recording::Ended;
use crate::workload::Wire;

/// Where a connection slot is.
pub(super) enum Phase {
    /// Closed loop, after a failed connect: waits until then, then takes the next job.
    Backoff(Instant),
    /// A non-blocking connect is under way, for `job` (closed loop) or for whatever waits
    /// when it is made (open loop: `None`).
    Connecting { job: Option<Job>, since: Instant },
    /// A request is out: `written` of its bytes so far (all of them once it is being read).
    Exchange {
        job: Job,
        start: Instant,
        written: usize,
        last: bool,
    },
    /// Open loop: connected, waiting for a request since then.
    Idle(Instant),
    /// Closed loop: the attack is over for this slot. Open loop: no connection; free.
    Stopped,
}

/// One connection of the loop, made again whenever it closes.
pub(super) struct Connection {
    pub(super) socket: Option<Socket>,
    pub(super) phase: Phase,
    pub(super) buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) decoder: Decoder,
    /// Requests sent on the current connection.
    pub(super) served: u32,
    /// Counts the slot's sockets: an event of a socket closed earlier in the same batch is
    /// not taken for its successor's.
    pub(super) generation: u32,
    /// The request out, when it is not the attack's own (a target's, a catalogue object's).
    pub(super) out: Option<Wire>,
}

impl Connection {
    pub(super) fn new() -> Connection {
        Connection {
            socket: None,
            phase: Phase::Stopped,
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            decoder: Decoder::new(false),
            served: 0,
            generation: 0,
            out: None,
        }
    }

    pub(super) fn token(&self, i: usize) -> u64 {
        (u64::from(self.generation) << 32) | i as u64
    }
}

impl Direct<'_> {
    /// The socket of `token` reported `flags`.
    pub(super) fn ready(&mut self, token: u64, flags: u32) {
        let i = (token & u64::from(u32::MAX)) as usize;
        let Some(slot) = self.conns.get_mut(i) else {
            return;
        };
        if slot.generation != (token >> 32) as u32 {
            return; // a socket closed earlier in this batch
        }
        match slot.phase {
            Phase::Connecting { job, since } => {
                let error = match slot.socket.as_ref().map(Socket::take_error) {
                    Some(Ok(None)) => None,
                    Some(Ok(Some(e)) | Err(e)) => Some(e),
                    None => return,
                };
                match error {
                    Some(e) => {
                        let failure = self.worker.dialer().connect_failed(&e);
                        self.connect_failed(i, failure, job);
                    }
                    None => self.connected(i, job, since),
                }
            }
            Phase::Exchange { written, .. }
                if written < slot.out.as_ref().unwrap_or(&self.own).bytes.len() =>
            {
                if flags & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 {
                    self.write(i);
                }
            }
            Phase::Exchange { .. } => self.read(i),
            Phase::Idle(_) => {
                // The server closed an idle connection (an idle timeout), or sent what
                // nobody asked for: done with it either way, as the tokio pool is; bytes
                // are the server's fault and counted.
                if let Some(stray) = slot.socket.as_ref().and_then(unasked_bytes) {
                    self.worker.count_stray(Instant::now(), stray);
                }
                self.pool.idle.retain(|&idle| idle != i);
                self.release(i);
            }
            Phase::Backoff(_) | Phase::Stopped => {}
        }
    }

    /// Closed loop: takes slot `i`'s next job and connects for it, or stops the slot.
    pub(super) fn next_connection(&mut self, i: usize, now: Instant) {
        self.conns[i].socket = None;
        match self.closed_job(now) {
            Some(job) => self.connect(i, Some(job)),
            None => self.stop(i),
        }
    }

    /// Connects slot `i` for `job` (closed loop) or for the queue (open loop).
    pub(super) fn connect(&mut self, i: usize, job: Option<Job>) {
        let slot = &mut self.conns[i];
        slot.socket = None;
        (slot.start, slot.end, slot.served) = (0, 0, 0);
        slot.generation = slot.generation.wrapping_add(1);
        let socket = match self.socket() {
            Ok(socket) => socket,
            Err(failure) => return self.connect_failed(i, failure, job),
        };
        // The connect's time (ab's "Connect") runs from here.
        let began = Instant::now();
        let connecting = match socket.connect(&self.addr) {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
            Err(e) => {
                let failure = self.worker.dialer().connect_failed(&e);
                return self.connect_failed(i, failure, job);
            }
        };
        // A connect under way is waited for as writable; a made one reads.
        let interest = if connecting {
            libc::EPOLLOUT
        } else {
            libc::EPOLLIN
        };
        if let Err(e) = self.control(libc::EPOLL_CTL_ADD, socket.as_raw_fd(), interest, i) {
            let failure = (
                ErrorKind::ClientLimit,
                format!("epoll_ctl: {e} (a limit of this machine, not the server)"),
            );
            return self.connect_failed(i, failure, job);
        }
        let slot = &mut self.conns[i];
        slot.socket = Some(socket);
        if connecting {
            slot.phase = Phase::Connecting { job, since: began };
        } else {
            self.connected(i, job, began);
        }
    }

    /// A non-blocking TCP socket for the target, without Nagle's delay.
    pub(super) fn socket(&self) -> Result<Socket, Failure> {
        let made = Socket::new(
            Domain::for_address(self.worker.dialer().addr),
            Type::STREAM.nonblocking().cloexec(),
            Some(TcpProtocol::TCP),
        )
        .and_then(|socket| socket.set_tcp_nodelay(true).map(|()| socket));
        made.map_err(|e| self.worker.dialer().connect_failed(&e))
    }

    pub(super) fn closed_job(&self, now: Instant) -> Option<Job> {
        self.worker.next_closed(now)
    }

    /// Connection `i`'s connect failed. Closed loop: its job fails unsent, and it waits before
    /// the next. Open loop: the request that asked for a connection fails with it.
    pub(super) fn connect_failed(&mut self, i: usize, failure: Failure, job: Option<Job>) {
        match job {
            Some(job) => {
                self.worker.fail_unsent(failure, &job);
                let slot = &mut self.conns[i];
                slot.socket = None;
                slot.phase = Phase::Backoff(Instant::now() + CONNECT_BACKOFF);
            }
            None => {
                if let Some(open) = self.open {
                    open.connected();
                    // The request waiting longest fails with it.
                    if let Some(job) = self.worker.take_pending(Instant::now()) {
                        self.worker.fail_unsent(failure, &job);
                    }
                }
                self.release(i);
            }
        }
    }

    /// Connection `i` connected: it reads from now on, and sends `job`, or (open loop) the request
    /// waiting longest, or waits idle.
    pub(super) fn connected(&mut self, i: usize, job: Option<Job>, since: Instant) {
        let now = Instant::now();
        self.worker
            .count_connection(now, now.saturating_duration_since(since));
        let slot = &self.conns[i];
        if let Some(fd) = slot.socket.as_ref().map(Socket::as_raw_fd)
            && self
                .control(libc::EPOLL_CTL_MOD, fd, libc::EPOLLIN, i)
                .is_err()
        {
            // Cannot happen for a registered descriptor; the read side would never wake.
            let failure = (
                ErrorKind::Other,
                "epoll_ctl could not watch a connection".into(),
            );
            return self.connect_failed(i, failure, job);
        }
        let now = Instant::now();
        match job {
            Some(job) => self.send(i, job, now),
            None => {
                if let Some(open) = self.open {
                    open.connected();
                }
                self.serve_next(i, now);
            }
        }
    }

    /// Connection `i`'s connection is free for its next request: in a closed loop the next of the
    /// budget; in an open loop the request waiting longest, or none yet (it waits idle), or
    /// none ever (the schedule is over: it closes).
    pub(super) fn serve_next(&mut self, i: usize, now: Instant) {
        let Some(open) = self.open else {
            return match self.closed_job(now) {
                // The clock read at the end of the last exchange starts the next: the send
                // follows at once (its recording is all that lies between).
                Some(job) => self.send(i, job, now),
                None => self.stop(i),
            };
        };
        if let Some(job) = self.worker.take_pending(now) {
            return self.send(i, job, now);
        }
        if open.dispatch_done() {
            return self.release(i);
        }
        let slot = &mut self.conns[i];
        slot.phase = Phase::Idle(now);
        self.pool.idle.push(i);
    }

    /// The request slot `i` sends: its own, or the attack's.
    fn wire(&self, i: usize) -> &Wire {
        self.conns[i].out.as_ref().unwrap_or(&self.own)
    }

    /// Sends `job`'s request on slot `i`'s connection, timed from `start`: the attack's own,
    /// or the next one its workload draws (none left: the attack is over).
    pub(super) fn send(&mut self, i: usize, mut job: Job, start: Instant) {
        if !self.own_only {
            let Some(drawn) = self.worker.workload.draw() else {
                self.worker.withdraw(&job);
                self.worker.begin_stop();
                return self.stop(i);
            };
            job.tags = drawn.tags;
            self.conns[i].out = drawn.into_wire();
        }
        self.worker.begin(&job, start);
        let head = self.wire(i).head;
        let slot = &mut self.conns[i];
        slot.served += 1;
        let last = self.worker.last_on_connection(slot.served);
        slot.decoder = Decoder::new(head);
        slot.phase = Phase::Exchange {
            job,
            start,
            written: 0,
            last,
        };
        if start >= job.deadline(self.timeout) {
            // Its time ran out before a connection could take it.
            self.conns[i].socket = None;
            return self.finish(i, None);
        }
        self.write(i);
    }

    /// Writes what is left of slot `i`'s request; waits for writability if the socket
    /// takes only part (and only then reads, as the tokio connection does).
    pub(super) fn write(&mut self, i: usize) {
        let slot = &mut self.conns[i];
        let (Phase::Exchange { written, .. }, Some(socket)) = (&mut slot.phase, &slot.socket)
        else {
            return;
        };
        let request = &slot.out.as_ref().unwrap_or(&self.own).bytes;
        let before = *written;
        let outcome = loop {
            match super::sys::send(socket.as_raw_fd(), &request[*written..]) {
                Ok(n) => {
                    *written += n;
                    if *written == request.len() {
                        break Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                Err(e) => break Err(e),
            }
        };
        let fd = socket.as_raw_fd();
        match outcome {
            Err(e) => self.finish(i, Some(Err(io_failure(&e, false)))),
            // All out at once, as nearly always: nothing to change.
            Ok(true) if before == 0 => {}
            Ok(done) => {
                let interest = if done { libc::EPOLLIN } else { libc::EPOLLOUT };
                if self.control(libc::EPOLL_CTL_MOD, fd, interest, i).is_err() {
                    let failure = (
                        ErrorKind::Other,
                        "epoll_ctl could not watch a connection".into(),
                    );
                    self.finish(i, Some(Err(failure)));
                }
            }
        }
    }

    /// Reads what slot `i`'s connection has and decodes it.
    pub(super) fn read(&mut self, i: usize) {
        let slot = &mut self.conns[i];
        let Some(fd) = slot.socket.as_ref().map(Socket::as_raw_fd) else {
            return;
        };
        let room = make_room(&mut slot.buf, &mut slot.start, &mut slot.end);
        let end = slot.end + room;
        let read = recv(fd, &mut slot.buf[slot.end..end]);
        let result = match read {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) => Err(io_failure(&e, slot.decoder.in_body())),
            Ok(0) => {
                let left = slot.end - slot.start;
                let ended = slot.decoder.eof(left);
                slot.socket = None; // closed: never reused
                ended
            }
            Ok(n) => {
                slot.end += n;
                grow_if_filled(&mut slot.buf, n, room);
                match slot.decoder.feed(&slot.buf[slot.start..slot.end]) {
                    Err(failure) => Err(failure),
                    Ok((used, Step::More)) => {
                        slot.start += used;
                        return;
                    }
                    Ok((used, Step::Done(response))) => {
                        slot.start += used;
                        Ok(response)
                    }
                }
            }
        };
        self.finish(i, Some(result));
    }

    /// Records how slot `i`'s exchange ended (`None`: it timed out) and moves the slot on:
    /// the next request on the same connection, a new connection, or the end.
    pub(super) fn finish(
        &mut self,
        i: usize,
        result: Option<Result<crate::response::Response, Failure>>,
    ) {
        let done = Instant::now();
        self.last_done = done;
        let slot = &mut self.conns[i];
        let Phase::Exchange {
            job,
            start,
            last,
            written,
        } = slot.phase
        else {
            return;
        };
        let mut usable = matches!(&result, Some(Ok(response)) if !response.close);
        let stray = slot.end - slot.start;
        if usable && stray > 0 {
            // Bytes after a complete response nobody asked for: the response stands, the
            // connection cannot be used again (they would be read as the next response).
            usable = false;
            self.worker.count_stray(done, stray);
        }
        // The request is done with: its bytes go back to its arena.
        let wire = slot.out.take();
        let wire = wire.as_ref().unwrap_or(&self.own);
        let head = wire.bytes.len() - wire.body as usize;
        let ended = Ended {
            start,
            done,
            received: slot.decoder.body(),
            written: written.saturating_sub(head) as u64,
            last_on_connection: last,
            survives: false,
        };
        slot.phase = Phase::Backoff(done);
        let flow = self.worker.end(&job, result, ended);
        match flow {
            Flow::KeepAlive if usable && self.conns[i].socket.is_some() => {
                self.serve_next(i, done);
            }
            Flow::Exhausted => {
                self.worker.begin_stop();
                self.stop(i);
            }
            Flow::KeepAlive | Flow::Reconnect => match self.open {
                None => self.next_connection(i, done),
                Some(_) => self.release(i),
            },
        }
    }

    /// The attack is over for slot `i`.
    pub(super) fn stop(&mut self, i: usize) {
        if self.open.is_some() {
            return self.release(i);
        }
        let slot = &mut self.conns[i];
        if !matches!(slot.phase, Phase::Stopped) {
            slot.socket = None;
            slot.phase = Phase::Stopped;
            self.live -= 1;
        }
    }

    /// Times out what has waited too long, and ends back-offs that are over.
    pub(super) fn sweep(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            match self.conns[i].phase {
                Phase::Backoff(until) if now >= until && self.open.is_none() => {
                    self.next_connection(i, now);
                }
                Phase::Connecting { job: Some(job), .. } if now >= job.deadline(self.timeout) => {
                    // The request's time ran out before its connection was made.
                    self.worker.fail_unconnected(&job);
                    let slot = &mut self.conns[i];
                    slot.socket = None;
                    slot.phase = Phase::Backoff(now + CONNECT_BACKOFF);
                }
                Phase::Connecting { job, since } if now >= since + self.connect_timeout => {
                    let failure = self.worker.dialer().connect_timed_out();
                    self.connect_failed(i, failure, job);
                }
                Phase::Exchange { job, .. } if now >= job.deadline(self.timeout) => {
                    self.conns[i].socket = None;
                    self.finish(i, None);
                }
                _ => {}
            }
        }
        // Requests that waited for a connection past their deadline.
        self.worker.expire_waiting(now);
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
        let size = std::mem::size_of::<Connection>();
        assert!(size <= 256, "a slot is {size} bytes");
    }
}

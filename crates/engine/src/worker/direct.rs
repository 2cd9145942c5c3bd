//! The plain HTTP/1.1 closed loop on the worker's own epoll loop, without tokio.
//!
//! The default attack (HTTP/1.1, closed loop, no TLS, no target files) spends most of its
//! user time on the runtime's machinery around two syscalls a request: waking a task per
//! response, polling its future, registering its waker, polling its timeout. This loop does
//! what the floor client in `benches/peers/floor` does, with vload's recording: one
//! `epoll_wait` for every connection that is ready, and for each a `recv`, the response
//! decoded in place ([`Decoder`], the same framing as the tokio connection's), the result
//! recorded, and the next request written with one `send`. Timeouts are found by a sweep
//! every [`SWEEP`] rather than a timer a request; the worker's clock (intervals, the end of
//! the window, interrupts, the grace period) and the stall probe run between batches. See
//! docs/ARCHITECTURE.md, "The plain HTTP/1.1 closed loop runs on its own epoll loop".

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use socket2::{Domain, Protocol as TcpProtocol, SockAddr, Socket, Type};
use tokio::sync::watch;
use vload_schema::ErrorKind;
use vload_timer::nanos_between;

use super::job::{Flow, Job};
use super::state::{Ended, Model, Worker};
use super::{CONNECT_BACKOFF, Clock, WorkerMsg, WorkerSetup, on_park, on_unpark};
use crate::failure::Failure;
use crate::h1::{BUFFER, Decoder, Step, grow_if_filled, io_failure, make_room, unexpected};
use crate::observe::Stop;
use crate::plan::{Client, Protocol};

/// How often timeouts, connect back-offs and interrupts are looked at. A timed-out request
/// is recorded at the timeout whenever it is noticed; this only bounds how long after it its
/// connection is replaced.
const SWEEP: Duration = Duration::from_millis(10);
/// The stall probe's period: how late a 1 ms timer is noticed is the loop's own stall.
const PROBE: Duration = Duration::from_millis(1);
/// Events taken from the kernel a wait.
const EVENTS: usize = 256;
/// The probe timer's token; connections are tokened by their index.
const TIMER: u64 = u64::MAX;

/// True when `setup` is an attack this loop serves: plain HTTP/1.1 with the lean client, a
/// closed loop, no target files.
pub(super) fn serves(setup: &WorkerSetup) -> bool {
    setup.schedule.is_none()
        && setup.targets.is_none()
        && setup.tls.is_none()
        && setup.plan.tls.is_none()
        && matches!(
            setup.plan.protocol,
            Protocol::Http1 {
                client: Client::Lean
            }
        )
}

/// Where a connection slot is.
enum Phase {
    /// After a failed connect: waits until then, then takes the next job.
    Backoff(Instant),
    /// A non-blocking connect is under way for `job`.
    Connecting { job: Job, since: Instant },
    /// A request is out: `written` of its bytes so far (all of them once it is being read).
    Exchange {
        job: Job,
        start: Instant,
        written: usize,
        last: bool,
    },
    /// Done: the attack is over for this slot.
    Stopped,
}

/// One connection of the loop, made again whenever it closes.
struct Slot {
    socket: Option<Socket>,
    phase: Phase,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    decoder: Decoder,
    /// Requests sent on the current connection.
    served: u32,
}

/// The loop's state.
struct Direct<'w> {
    worker: &'w Worker,
    epoll: OwnedFd,
    slots: Vec<Slot>,
    /// Slots not stopped: the attack is over when none is left.
    live: usize,
    request: Bytes,
    head: bool,
    body: u64,
    addr: SockAddr,
    timeout: Duration,
    connect_timeout: Duration,
}

/// Runs the closed loop of `connections` connections until it is over or the grace period
/// ends; returns the index of the interval still open and when the attack stopped sending.
pub(super) fn run(
    worker: &Rc<Worker>,
    connections: u32,
    clock: &Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
    interrupt: watch::Receiver<Stop>,
) -> (u32, Option<Instant>) {
    let epoll = match epoll() {
        Ok(epoll) => epoll,
        Err(e) => {
            // Without an epoll there is no loop: every connection's first request fails.
            let failure = (ErrorKind::ClientLimit, format!("epoll_create1: {e}"));
            if let Model::Closed(closed) = &worker.model {
                for _ in 0..connections {
                    if let Some(job) = closed.next(false) {
                        worker.fail_unsent(failure.clone(), &job);
                    }
                }
            }
            return (0, Some(Instant::now()));
        }
    };
    let (request, head, body) = worker.lean_request();
    let dialer = worker.dialer();
    let mut direct = Direct {
        worker,
        epoll,
        slots: Vec::with_capacity(connections as usize),
        live: 0,
        request,
        head,
        body,
        addr: dialer.addr.into(),
        timeout: worker.plan.timeout,
        connect_timeout: dialer.connect_timeout,
    };
    let probe = Probe::new(direct.epoll.as_raw_fd());
    let (mut grace, mut attack_end): (Option<Instant>, Option<Instant>) = (None, None);
    let mut interrupts = Interrupts {
        receiver: interrupt,
        seen: Stop::Running,
    };
    let now = Instant::now();
    // A Ctrl-C before the start stops the attack before any connection is made.
    interrupts.check(worker, clock, &mut grace, &mut attack_end);
    for i in 0..connections as usize {
        direct.slots.push(Slot {
            socket: None,
            phase: Phase::Backoff(now),
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            decoder: Decoder::new(head),
            served: 0,
        });
        direct.live += 1;
        direct.next_connection(i, now);
    }
    let (mut index, mut tick) = (0u32, clock.t0 + Duration::from_secs(1));
    let mut sweep = now + SWEEP;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    while direct.live > 0 {
        // The probe's timer wakes the loop every millisecond; without it (no timerfd, or one
        // that could not be re-armed), a 1 ms timeout does.
        let wait_ms = if probe.as_ref().is_some_and(|p| p.armed.get()) {
            SWEEP.as_millis() as i32
        } else {
            1
        };
        on_park();
        // SAFETY: `events` has room for EVENTS entries; the epoll descriptor is ours.
        let ready = unsafe {
            libc::epoll_wait(
                direct.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                EVENTS as i32,
                wait_ms,
            )
        };
        on_unpark();
        for event in &events[..usize::try_from(ready).unwrap_or(0)] {
            let (token, flags) = (event.u64, event.events);
            if token == TIMER {
                if let Some(probe) = &probe {
                    probe.fired(worker, direct.epoll.as_raw_fd());
                }
            } else {
                direct.ready(token as usize, flags);
            }
        }
        let now = Instant::now();
        if now >= tick {
            worker.flush(index, to_collector);
            index += 1;
            tick += Duration::from_secs(1);
        }
        if let Some(end) = clock.end
            && now >= end
            && grace.is_none()
        {
            // The window ends at its planned end, however late the loop noticed it.
            clock.end_window(worker, end, &mut attack_end, &mut grace);
        }
        if now >= sweep {
            sweep = now + SWEEP;
            direct.sweep(now);
            interrupts.check(worker, clock, &mut grace, &mut attack_end);
        }
        if grace.is_some_and(|grace| now >= grace) {
            break;
        }
    }
    (index, attack_end)
}

/// What the run was told (an interrupt, the end of the window), read without awaiting.
struct Interrupts {
    receiver: watch::Receiver<Stop>,
    seen: Stop,
}

impl Interrupts {
    /// Hands anything new to the clock, as its tokio loop does.
    fn check(
        &mut self,
        worker: &Rc<Worker>,
        clock: &Clock,
        grace: &mut Option<Instant>,
        attack_end: &mut Option<Instant>,
    ) {
        let stop = match self.receiver.has_changed() {
            // Nobody can end the run once the sender is gone: read as an interrupt.
            Err(_) => Stop::Interrupt,
            Ok(_) => *self.receiver.borrow_and_update(),
        };
        if stop > self.seen {
            self.seen = stop;
            clock.on_stop(worker, stop, attack_end, grace);
        }
    }
}

impl Direct<'_> {
    /// Slot `i`'s socket reported `flags`.
    fn ready(&mut self, i: usize, flags: u32) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        match slot.phase {
            Phase::Connecting { job, .. } => {
                let error = match slot.socket.as_ref().map(Socket::take_error) {
                    Some(Ok(None)) => None,
                    Some(Ok(Some(e)) | Err(e)) => Some(e),
                    None => return,
                };
                match error {
                    Some(e) => {
                        let failure = self.worker.dialer().connect_failed(&e);
                        self.connect_failed(i, failure, &job);
                    }
                    None => self.connected(i, job),
                }
            }
            Phase::Exchange { written, .. } if written < self.request.len() => {
                if flags & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 {
                    self.write(i);
                }
            }
            Phase::Exchange { .. } => self.read(i),
            Phase::Backoff(_) | Phase::Stopped => {}
        }
    }

    /// Takes slot `i`'s next job and connects for it, or stops the slot.
    fn next_connection(&mut self, i: usize, now: Instant) {
        let slot = &mut self.slots[i];
        slot.socket = None;
        (slot.start, slot.end, slot.served) = (0, 0, 0);
        let Some(job) = self.next_job() else {
            return self.stop(i);
        };
        let socket = match self.socket() {
            Ok(socket) => socket,
            Err(failure) => return self.connect_failed(i, failure, &job),
        };
        let connecting = match socket.connect(&self.addr) {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
            Err(e) => {
                let failure = self.worker.dialer().connect_failed(&e);
                return self.connect_failed(i, failure, &job);
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
            return self.connect_failed(i, failure, &job);
        }
        let slot = &mut self.slots[i];
        slot.socket = Some(socket);
        if connecting {
            slot.phase = Phase::Connecting { job, since: now };
        } else {
            self.connected(i, job);
        }
    }

    /// A non-blocking TCP socket for the target, without Nagle's delay.
    fn socket(&self) -> Result<Socket, Failure> {
        let made = Socket::new(
            Domain::for_address(self.worker.dialer().addr),
            Type::STREAM.nonblocking().cloexec(),
            Some(TcpProtocol::TCP),
        )
        .and_then(|socket| socket.set_tcp_nodelay(true).map(|()| socket));
        made.map_err(|e| self.worker.dialer().connect_failed(&e))
    }

    fn next_job(&self) -> Option<Job> {
        match &self.worker.model {
            Model::Closed(closed) => closed.next(self.worker.stopping.get()),
            Model::Open(_) => None,
        }
    }

    /// Slot `i`'s connect failed: its job fails unsent, and it waits before the next.
    fn connect_failed(&mut self, i: usize, failure: Failure, job: &Job) {
        self.worker.fail_unsent(failure, job);
        let slot = &mut self.slots[i];
        slot.socket = None;
        slot.phase = Phase::Backoff(Instant::now() + CONNECT_BACKOFF);
    }

    /// Slot `i` connected: it reads from now on, and sends `job`.
    fn connected(&mut self, i: usize, job: Job) {
        self.worker.count_connection();
        if let Some(fd) = self.slots[i].socket.as_ref().map(Socket::as_raw_fd)
            && self
                .control(libc::EPOLL_CTL_MOD, fd, libc::EPOLLIN, i)
                .is_err()
        {
            // Cannot happen for a registered descriptor; the read side would never wake.
            let failure = (
                ErrorKind::Other,
                "epoll_ctl could not watch a connection".into(),
            );
            return self.connect_failed(i, failure, &job);
        }
        self.send(i, job, Instant::now());
    }

    /// Sends `job`'s request on slot `i`'s connection, timed from `start`.
    fn send(&mut self, i: usize, job: Job, start: Instant) {
        self.worker.begin(&job, self.body, start);
        let slot = &mut self.slots[i];
        slot.served += 1;
        let last = self.worker.last_on_connection(slot.served);
        slot.decoder = Decoder::new(self.head);
        slot.phase = Phase::Exchange {
            job,
            start,
            written: 0,
            last,
        };
        if slot.start < slot.end {
            // Bytes nobody asked for would be read as this request's response.
            let failure = unexpected(slot.end - slot.start);
            return self.finish(i, Some(Err(failure)));
        }
        self.write(i);
    }

    /// Writes what is left of slot `i`'s request; waits for writability if the socket
    /// takes only part (and only then reads, as the tokio connection does).
    fn write(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let (Phase::Exchange { written, .. }, Some(socket)) = (&mut slot.phase, &slot.socket)
        else {
            return;
        };
        let before = *written;
        let outcome = loop {
            match socket.send_with_flags(&self.request[*written..], libc::MSG_NOSIGNAL) {
                Ok(n) => {
                    *written += n;
                    if *written == self.request.len() {
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
    fn read(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let Some(fd) = slot.socket.as_ref().map(Socket::as_raw_fd) else {
            return;
        };
        let room = make_room(&mut slot.buf, &mut slot.start, &mut slot.end);
        let read = loop {
            // SAFETY: the pointer and length are the buffer's unused tail, initialised bytes.
            let n = unsafe { libc::recv(fd, slot.buf[slot.end..].as_mut_ptr().cast(), room, 0) };
            if n >= 0 {
                break Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                break Err(e);
            }
        };
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
    fn finish(&mut self, i: usize, result: Option<Result<crate::h1::Response, Failure>>) {
        let done = Instant::now();
        let slot = &mut self.slots[i];
        let Phase::Exchange {
            job, start, last, ..
        } = slot.phase
        else {
            return;
        };
        let usable = matches!(&result, Some(Ok(response)) if !response.close);
        let ended = Ended {
            start,
            done,
            received: slot.decoder.body(),
            last_on_connection: last,
            survives: false,
        };
        slot.phase = Phase::Backoff(done);
        let flow = self.worker.end(&job, result, ended);
        match flow {
            Flow::KeepAlive if usable && self.slots[i].socket.is_some() => {
                match self.next_job() {
                    // The clock read at the end of the last exchange starts the next: the
                    // send follows at once (its recording is all that lies between).
                    Some(job) => self.send(i, job, done),
                    None => self.stop(i),
                }
            }
            Flow::Exhausted => {
                self.worker.begin_stop();
                self.stop(i);
            }
            Flow::KeepAlive | Flow::Reconnect => self.next_connection(i, done),
        }
    }

    fn stop(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if !matches!(slot.phase, Phase::Stopped) {
            slot.socket = None;
            slot.phase = Phase::Stopped;
            self.live -= 1;
        }
    }

    /// Times out what has waited too long, and ends back-offs that are over.
    fn sweep(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            match self.slots[i].phase {
                Phase::Backoff(until) if now >= until => self.next_connection(i, now),
                Phase::Connecting { job, since } if now >= since + self.connect_timeout => {
                    let failure = self.worker.dialer().connect_timed_out();
                    self.connect_failed(i, failure, &job);
                }
                Phase::Exchange { start, .. } if now >= start + self.timeout => {
                    self.slots[i].socket = None;
                    self.finish(i, None);
                }
                _ => {}
            }
        }
    }

    /// Registers or changes `fd`'s interest, tokened by slot `i`.
    fn control(&self, op: i32, fd: RawFd, interest: i32, i: usize) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: interest as u32,
            u64: i as u64,
        };
        // SAFETY: both descriptors are open; `event` lives across the call.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn epoll() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the descriptor is checked before use.
    let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The stall probe: a 1 ms timerfd in the loop's epoll; how late the loop sees it is
/// recorded as the worker's hiccup, as the tokio loop's probe does (jHiccup's method).
struct Probe {
    fd: OwnedFd,
    expected: Cell<Instant>,
    /// False once the timer could not be re-armed (and left the epoll).
    armed: Cell<bool>,
}

impl Probe {
    fn new(epoll: RawFd) -> Option<Probe> {
        let fd = vload_timer::timerfd().ok()?;
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: TIMER,
        };
        // SAFETY: both descriptors are open; `event` lives across the call.
        if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut event) } != 0 {
            return None;
        }
        let probe = Probe {
            fd,
            expected: Cell::new(Instant::now()),
            armed: Cell::new(true),
        };
        probe.arm().then_some(probe)
    }

    /// Arms the timer one period from now (which also stops the level-triggered epoll
    /// reporting the expiry just seen, without a read).
    fn arm(&self) -> bool {
        self.expected.set(Instant::now() + PROBE);
        vload_timer::arm_timerfd(self.fd.as_fd(), PROBE).is_ok()
    }

    fn fired(&self, worker: &Worker, epoll: RawFd) {
        if !self.armed.get() {
            return;
        }
        let late = nanos_between(self.expected.get(), Instant::now());
        worker.stats.borrow_mut().hiccup.record(late);
        if !self.arm() {
            // An expired timer left in a level-triggered epoll would be reported at every
            // wait: it leaves, and the loop falls back to a 1 ms wait.
            self.armed.set(false);
            // SAFETY: both descriptors are open; DEL ignores the event.
            unsafe {
                libc::epoll_ctl(
                    epoll,
                    libc::EPOLL_CTL_DEL,
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                )
            };
        }
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

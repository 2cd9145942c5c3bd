//! Plain HTTP/1.1, closed or open loop, on the worker's own epoll loop, without tokio.
//!
//! The plain HTTP/1.1 attack (no TLS, no target files) spent most of its user time on the
//! runtime's machinery around two syscalls a request: waking a task per response, polling
//! its future, registering its waker, polling its timeout. This loop does what the floor
//! client in `benches/peers/floor` does, with vload's recording: one wait for every
//! connection that is ready, and for each a `recv`, the response decoded in place
//! ([`Decoder`], the same framing as the tokio connection's), the result recorded, and the
//! next request written with one `send`. Timeouts are found by a sweep every [`SWEEP`]
//! rather than a timer a request; the worker's clock (intervals, the end of the window,
//! interrupts, the grace period) and the stall probe run between batches.
//!
//! The open loop's schedule is the same [`Open`] the tokio path uses; only its connections
//! are this loop's slots. Its timer is the wait's own timeout (`epoll_pwait2`, in
//! nanoseconds): the wake-up for the next due request and the wake-ups for responses are
//! one wait, and a request that falls due while responses are being read goes out after the
//! response that noticed it. See docs/ARCHITECTURE.md, "Plain HTTP/1.1 runs on its own
//! epoll loop".

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
use super::open::{BATCH, Due, IDLE_REAP, Open};
use super::recording::Ended;
use super::state::Worker;
use super::{CONNECT_BACKOFF, Clock, WorkerMsg, WorkerSetup, on_park, on_unpark};
use crate::failure::Failure;
use crate::failure::io_failure;
use crate::h1::{BUFFER, Decoder, Step, grow_if_filled, make_room};
use crate::observe::Stop;
use crate::plan::{Client, Driver, Protocol};

/// How often timeouts, connect back-offs and interrupts are looked at. A timed-out request
/// is recorded at the timeout whenever it is noticed; this only bounds how long after it its
/// connection is replaced.
const SWEEP: Duration = Duration::from_millis(10);
/// The stall probe's period: how late a 1 ms timer is noticed is the loop's own stall.
const PROBE: Duration = Duration::from_millis(1);
/// Events taken from the kernel a wait.
const EVENTS: usize = 256;
/// The probe timer's token; connections are tokened by their slot and its generation.
const TIMER: u64 = u64::MAX;
/// The token of the timer that stands in for `epoll_pwait2`'s timeout where it is missing.
const WAKE: u64 = u64::MAX - 1;

/// True when `setup` is an attack this loop serves: plain HTTP/1.1 with the lean client, no
/// TLS, no target files; closed or open loop.
pub(super) fn serves(setup: &WorkerSetup) -> bool {
    setup.plan.driver == Driver::Auto
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
    /// Counts the slot's sockets: an event of a socket closed earlier in the same batch is
    /// not taken for its successor's.
    generation: u32,
}

impl Slot {
    fn new(head: bool) -> Slot {
        Slot {
            socket: None,
            phase: Phase::Stopped,
            buf: vec![0; BUFFER],
            start: 0,
            end: 0,
            decoder: Decoder::new(head),
            served: 0,
            generation: 0,
        }
    }

    fn token(&self, i: usize) -> u64 {
        (u64::from(self.generation) << 32) | i as u64
    }
}

/// The open loop's connections, by slot.
#[derive(Default)]
struct Pool {
    /// Slots with an idle connection, the one used last on top: a request goes to a
    /// connection that is warm, and those left at the bottom are the ones reaped.
    idle: Vec<usize>,
    /// Slots without a connection, to reuse.
    free: Vec<usize>,
    /// Requests a dispatch gave to idle slots, sent when it returns.
    handed: Vec<(usize, Job)>,
    /// When the next request falls due.
    next_due: Option<Instant>,
    /// The schedule is over (always, in a closed loop).
    over: bool,
    /// A connection ended: requests waiting may want another.
    grow: bool,
}

/// The loop's state.
struct Direct<'w> {
    worker: &'w Worker,
    /// The open loop's schedule and queue; `None` in a closed loop.
    open: Option<&'w Open>,
    epoll: OwnedFd,
    slots: Vec<Slot>,
    /// Closed loop: slots not stopped, the attack is over when none is left. Open loop:
    /// slots with a connection (being made, busy or idle).
    live: usize,
    pool: Pool,
    /// The clock as the last response read it.
    last_done: Instant,
    request: Bytes,
    head: bool,
    body: u64,
    addr: SockAddr,
    timeout: Duration,
    connect_timeout: Duration,
}

/// Runs the attack (`connections` connections in a closed loop, the cap in an open loop)
/// until it is over or the grace period ends; returns the index of the interval still open
/// and when the attack stopped sending. `None` when no epoll could be made: nothing was
/// done, and the tokio path serves the attack instead.
pub(super) fn run(
    worker: &Rc<Worker>,
    connections: u32,
    clock: &Clock,
    to_collector: &mpsc::Sender<WorkerMsg>,
    interrupt: watch::Receiver<Stop>,
) -> Option<(u32, Option<Instant>)> {
    let epoll = epoll().ok()?;
    let (request, head, body) = worker.lean_request();
    let dialer = worker.dialer();
    let open = worker.open();
    let now = Instant::now();
    let mut direct = Direct {
        worker,
        open,
        slots: Vec::with_capacity(if open.is_some() {
            0
        } else {
            connections as usize
        }),
        live: 0,
        pool: Pool {
            over: open.is_none(),
            ..Pool::default()
        },
        last_done: now,
        request,
        head,
        body,
        addr: dialer.addr.into(),
        timeout: worker.plan.timeout,
        connect_timeout: dialer.connect_timeout,
        epoll,
    };
    let probe = Probe::new(direct.epoll.as_raw_fd());
    let mut waiter = Waiter::new(direct.epoll.as_raw_fd());
    let (mut grace, mut attack_end): (Option<Instant>, Option<Instant>) = (None, None);
    let mut interrupts = Interrupts {
        receiver: interrupt,
        seen: Stop::Running,
    };
    // A Ctrl-C before the start stops the attack before any connection is made.
    let ends = (&mut attack_end, &mut grace);
    interrupts.check(worker, clock, ends, &mut |now| direct.dispatch(now));
    if open.is_some() {
        direct.dispatch(now);
    } else {
        for i in 0..connections as usize {
            // Live until `stop`: a slot the budget leaves without a request stops at once.
            let mut slot = Slot::new(head);
            slot.phase = Phase::Backoff(now);
            direct.slots.push(slot);
            direct.live += 1;
            direct.next_connection(i, now);
        }
    }
    let (mut index, mut tick) = (0u32, clock.t0 + Duration::from_secs(1));
    let mut sweep = now + SWEEP;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    while direct.running() {
        // The probe's timer wakes the loop every millisecond; without it (no timerfd, or one
        // that could not be re-armed), the wait's own timeout does.
        let mut wait = if probe.as_ref().is_some_and(|p| p.armed.get()) {
            SWEEP
        } else {
            PROBE
        };
        if let Some(due) = direct.pool.next_due {
            wait = wait.min((due + BATCH).saturating_duration_since(Instant::now()));
        }
        on_park();
        let ready = waiter.wait(&mut events, wait);
        on_unpark();
        for event in &events[..ready] {
            let (token, flags) = (event.u64, event.events);
            match token {
                TIMER => {
                    if let Some(probe) = &probe {
                        probe.fired(worker, direct.epoll.as_raw_fd());
                    }
                }
                WAKE => {}
                _ => {
                    direct.ready(token, flags);
                    direct.after_event();
                }
            }
        }
        let now = Instant::now();
        if now >= tick {
            worker.flush(index, to_collector);
            direct.reap(now);
            index += 1;
            tick += Duration::from_secs(1);
        }
        if let Some(end) = clock.end
            && now >= end
            && grace.is_none()
        {
            // The window ends at its planned end, however late the loop noticed it.
            let ends = (&mut attack_end, &mut grace);
            clock.end_window(worker, end, ends, &mut |now| direct.dispatch(now));
        }
        if now >= sweep {
            sweep = now + SWEEP;
            direct.sweep(now);
            let ends = (&mut attack_end, &mut grace);
            interrupts.check(worker, clock, ends, &mut |now| direct.dispatch(now));
        }
        direct.settle(now);
        if grace.is_some_and(|grace| now >= grace) {
            break;
        }
    }
    Some((index, attack_end))
}

/// What the run was told (an interrupt, the end of the window), read without awaiting.
struct Interrupts {
    receiver: watch::Receiver<Stop>,
    seen: Stop,
}

impl Interrupts {
    /// Hands anything new to the clock, as its tokio loop does; `settle` is the loop's
    /// dispatch.
    fn check(
        &mut self,
        worker: &Rc<Worker>,
        clock: &Clock,
        ends: (&mut Option<Instant>, &mut Option<Instant>),
        settle: &mut dyn FnMut(Instant),
    ) {
        let stop = match self.receiver.has_changed() {
            // Nobody can end the run once the sender is gone: read as an interrupt.
            Err(_) => Stop::Interrupt,
            Ok(_) => *self.receiver.borrow_and_update(),
        };
        if stop > self.seen {
            self.seen = stop;
            clock.on_stop(worker, stop, ends, settle);
        }
    }
}

impl Direct<'_> {
    /// True while the attack has work: connections in a closed loop; the schedule, a
    /// connection or a waiting request in an open loop.
    fn running(&self) -> bool {
        match self.open {
            None => self.live > 0,
            Some(open) => !self.pool.over || self.live > 0 || open.waiting() > 0,
        }
    }

    /// The socket of `token` reported `flags`.
    fn ready(&mut self, token: u64, flags: u32) {
        let i = (token & u64::from(u32::MAX)) as usize;
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if slot.generation != (token >> 32) as u32 {
            return; // a socket closed earlier in this batch
        }
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
                        self.connect_failed(i, failure, job);
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

    /// Open loop, after each event: what fell due while responses were read goes out now
    /// (the last response's clock tells), and connections that ended are replaced if
    /// requests wait.
    fn after_event(&mut self) {
        if self.open.is_none() {
            return;
        }
        if self.pool.next_due.is_some_and(|due| self.last_done >= due) {
            self.dispatch(Instant::now());
        } else if self.pool.grow {
            self.grow();
        }
    }

    /// Open loop, after each batch: dispatches what is due (or ends the schedule when the
    /// attack is stopping), and replaces connections that ended.
    fn settle(&mut self, now: Instant) {
        if self.open.is_none() {
            return;
        }
        let due = self.pool.next_due.is_some_and(|due| now >= due);
        if !self.pool.over && (due || self.worker.stopping.get()) {
            self.dispatch(now);
        } else if self.pool.grow {
            self.grow();
        }
    }

    /// Open loop: sends every request due by `now` to idle connections, queues the rest,
    /// and opens connections for those that wait. Once the schedule is over, idle
    /// connections close.
    fn dispatch(&mut self, now: Instant) {
        let Some(open) = self.open else {
            return;
        };
        if self.pool.over {
            return;
        }
        let mut handed = std::mem::take(&mut self.pool.handed);
        let idle = &mut self.pool.idle;
        let mut hand = |job| match idle.pop() {
            Some(i) => {
                handed.push((i, job));
                None
            }
            None => Some(job),
        };
        let stopping = self.worker.stopping.get();
        let due = open.dispatch_due_to(now, stopping, &self.worker.books, &mut hand);
        for (i, job) in handed.drain(..) {
            self.send(i, job, now);
        }
        self.pool.handed = handed;
        match due {
            Due::At(at) => self.pool.next_due = Some(at),
            Due::Over => {
                (self.pool.next_due, self.pool.over) = (None, true);
                self.worker.finish_dispatch();
                for i in std::mem::take(&mut self.pool.idle) {
                    self.release(i);
                }
            }
        }
        self.grow();
    }

    /// Open loop: opens connections while requests wait for one and the cap allows (at
    /// most a few connecting at once: [`Open::to_open`]).
    fn grow(&mut self) {
        let Some(open) = self.open else {
            return;
        };
        self.pool.grow = false;
        // Each round either leaves connects under way (bounded) or settles a waiting
        // request (made, it sends one; failed, it fails one), so this ends.
        loop {
            let opening = open.to_open(1);
            if opening == 0 {
                break;
            }
            for _ in 0..opening {
                let i = match self.pool.free.pop() {
                    Some(i) => i,
                    None => {
                        self.slots.push(Slot::new(self.head));
                        self.slots.len() - 1
                    }
                };
                let slot = &mut self.slots[i];
                if slot.buf.is_empty() {
                    slot.buf = vec![0; BUFFER];
                }
                self.live += 1;
                self.connect(i, None, Instant::now());
            }
        }
    }

    /// Open loop: closes the connections idle longer than [`IDLE_REAP`], the oldest idle
    /// ones, at the bottom of the stack.
    fn reap(&mut self, now: Instant) {
        let slots = &self.slots;
        let stale = self
            .pool
            .idle
            .iter()
            .take_while(|&&i| {
                matches!(slots[i].phase, Phase::Idle(since)
                    if now.saturating_duration_since(since) > IDLE_REAP)
            })
            .count();
        if stale > 0 {
            let stale: Vec<usize> = self.pool.idle.drain(..stale).collect();
            for i in stale {
                self.release(i);
            }
        }
    }

    /// Closed loop: takes slot `i`'s next job and connects for it, or stops the slot.
    fn next_connection(&mut self, i: usize, now: Instant) {
        self.slots[i].socket = None;
        match self.closed_job(now) {
            Some(job) => self.connect(i, Some(job), now),
            None => self.stop(i),
        }
    }

    /// Connects slot `i` for `job` (closed loop) or for the queue (open loop).
    fn connect(&mut self, i: usize, job: Option<Job>, now: Instant) {
        let slot = &mut self.slots[i];
        slot.socket = None;
        (slot.start, slot.end, slot.served) = (0, 0, 0);
        slot.generation = slot.generation.wrapping_add(1);
        let socket = match self.socket() {
            Ok(socket) => socket,
            Err(failure) => return self.connect_failed(i, failure, job),
        };
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

    fn closed_job(&self, now: Instant) -> Option<Job> {
        self.worker.next_closed(now)
    }

    /// Slot `i`'s connect failed. Closed loop: its job fails unsent, and it waits before
    /// the next. Open loop: the request that asked for a connection fails with it.
    fn connect_failed(&mut self, i: usize, failure: Failure, job: Option<Job>) {
        match job {
            Some(job) => {
                self.worker.fail_unsent(failure, &job);
                let slot = &mut self.slots[i];
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

    /// Slot `i` connected: it reads from now on, and sends `job`, or (open loop) the request
    /// waiting longest, or waits idle.
    fn connected(&mut self, i: usize, job: Option<Job>) {
        self.worker.count_connection(Instant::now());
        let slot = &self.slots[i];
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

    /// Slot `i`'s connection is free for its next request: in a closed loop the next of the
    /// budget; in an open loop the request waiting longest, or none yet (it waits idle), or
    /// none ever (the schedule is over: it closes).
    fn serve_next(&mut self, i: usize, now: Instant) {
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
        let slot = &mut self.slots[i];
        slot.phase = Phase::Idle(now);
        self.pool.idle.push(i);
    }

    /// Sends `job`'s request on slot `i`'s connection, timed from `start`.
    fn send(&mut self, i: usize, job: Job, start: Instant) {
        self.worker.begin(&job, start);
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
        if start >= job.deadline(self.timeout) {
            // Its time ran out before a connection could take it.
            self.slots[i].socket = None;
            return self.finish(i, None);
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
    fn finish(&mut self, i: usize, result: Option<Result<crate::response::Response, Failure>>) {
        let done = Instant::now();
        self.last_done = done;
        let slot = &mut self.slots[i];
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
        let head = self.request.len() - self.body as usize;
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
            Flow::KeepAlive if usable && self.slots[i].socket.is_some() => {
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
    fn stop(&mut self, i: usize) {
        if self.open.is_some() {
            return self.release(i);
        }
        let slot = &mut self.slots[i];
        if !matches!(slot.phase, Phase::Stopped) {
            slot.socket = None;
            slot.phase = Phase::Stopped;
            self.live -= 1;
        }
    }

    /// Open loop: slot `i`'s connection is gone (closed, failed, reaped, or not wanted); the
    /// slot is free for another, and requests still waiting may get one.
    fn release(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if matches!(slot.phase, Phase::Stopped) {
            return;
        }
        slot.socket = None;
        slot.phase = Phase::Stopped;
        // A buffer grown for a large body is not kept for a connection that may never come.
        slot.buf = Vec::new();
        self.live -= 1;
        self.pool.free.push(i);
        self.pool.grow = true;
        if let Some(open) = self.open {
            open.closed();
        }
    }

    /// Times out what has waited too long, and ends back-offs that are over.
    fn sweep(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            match self.slots[i].phase {
                Phase::Backoff(until) if now >= until && self.open.is_none() => {
                    self.next_connection(i, now);
                }
                Phase::Connecting { job: Some(job), .. } if now >= job.deadline(self.timeout) => {
                    // The request's time ran out before its connection was made.
                    self.worker.fail_unconnected(&job);
                    let slot = &mut self.slots[i];
                    slot.socket = None;
                    slot.phase = Phase::Backoff(now + CONNECT_BACKOFF);
                }
                Phase::Connecting { job, since } if now >= since + self.connect_timeout => {
                    let failure = self.worker.dialer().connect_timed_out();
                    self.connect_failed(i, failure, job);
                }
                Phase::Exchange { job, .. } if now >= job.deadline(self.timeout) => {
                    self.slots[i].socket = None;
                    self.finish(i, None);
                }
                _ => {}
            }
        }
        // Requests that waited for a connection past their deadline.
        self.worker.expire_waiting(now);
    }

    /// Registers or changes `fd`'s interest, tokened by slot `i` and its generation.
    fn control(&self, op: i32, fd: RawFd, interest: i32, i: usize) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: interest as u32,
            u64: self.slots[i].token(i),
        };
        // SAFETY: both descriptors are open; `event` lives across the call.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Bytes waiting on an idle connection, if any (none: the server closed it).
fn unasked_bytes(socket: &Socket) -> Option<usize> {
    let mut buf = [0u8; 512];
    // SAFETY: the pointer and length are those of a live local buffer.
    let n = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).ok().filter(|n| *n > 0)
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

/// How the loop waits: `epoll_pwait2`, whose timeout is in nanoseconds, so that the open
/// loop's next due request needs no timer of its own. Where it is missing (Linux before
/// 5.11, or a seccomp filter that refuses it) `epoll_wait`, whose timeout is in
/// milliseconds, with a timerfd in the epoll for a wait that ends within one.
struct Waiter {
    epoll: RawFd,
    precise: bool,
    /// The stand-in timer, once `epoll_pwait2` was found missing.
    timer: Option<OwnedFd>,
}

impl Waiter {
    fn new(epoll: RawFd) -> Waiter {
        Waiter {
            epoll,
            precise: true,
            timer: None,
        }
    }

    /// Waits at most `timeout` for events; returns how many `events` holds.
    fn wait(&mut self, events: &mut [libc::epoll_event], timeout: Duration) -> usize {
        let capacity = events.len().min(i32::MAX as usize) as i32;
        if self.precise {
            let spec = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
            };
            // SAFETY: `events` has room for `capacity` entries, `spec` lives across the
            // call, no signal mask is given.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    self.epoll,
                    events.as_mut_ptr(),
                    capacity,
                    &raw const spec,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n >= 0 {
                return n as usize;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOSYS | libc::EPERM) => self.fall_back(),
                _ => return 0, // EINTR: the loop goes round
            }
        }
        self.wait_coarse(events, timeout)
    }

    /// `epoll_pwait2` is missing: from now on `epoll_wait`, and a timerfd for waits that do
    /// not end on a whole millisecond.
    fn fall_back(&mut self) {
        self.precise = false;
        let Ok(timer) = vload_timer::timerfd() else {
            return;
        };
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: WAKE,
        };
        // SAFETY: both descriptors are open; `event` lives across the call.
        let added = unsafe {
            libc::epoll_ctl(
                self.epoll,
                libc::EPOLL_CTL_ADD,
                timer.as_raw_fd(),
                &mut event,
            )
        };
        if added == 0 {
            self.timer = Some(timer);
        }
    }

    fn wait_coarse(&mut self, events: &mut [libc::epoll_event], timeout: Duration) -> usize {
        let capacity = events.len().min(i32::MAX as usize) as i32;
        let mut millis = timeout.as_millis();
        if !timeout.subsec_nanos().is_multiple_of(1_000_000) {
            // The timer ends the wait on time (arming it also clears an expiry seen
            // before); epoll_wait's own timeout, a millisecond later, is the backstop.
            // Without the timer the wait ends at the next millisecond: late, but measured
            // (dispatch lag).
            millis += 1;
            if let Some(timer) = &self.timer
                && vload_timer::arm_timerfd(timer.as_fd(), timeout).is_ok()
            {
                millis += 1;
            }
        }
        let millis = millis.min(i32::MAX as u128) as i32;
        // SAFETY: `events` has room for `capacity` entries; the epoll descriptor is open.
        let n = unsafe { libc::epoll_wait(self.epoll, events.as_mut_ptr(), capacity, millis) };
        usize::try_from(n).unwrap_or(0)
    }
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
        let now = Instant::now();
        let late = nanos_between(self.expected.get(), now);
        worker.books.at(now).hiccup.record(late);
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

    /// Both ways of waiting wait the whole timeout when nothing happens, and no longer than
    /// it by more than the coarse wait's backstop: the stand-in timer is what ends a
    /// sub-millisecond wait, seen as its event.
    #[test]
    fn a_wait_ends_at_its_timeout_with_or_without_epoll_pwait2() {
        let epoll = epoll().expect("an epoll");
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 4];
        // Waits `timeout` and checks that the wait did not end early.
        let mut timed = |waiter: &mut Waiter, timeout: Duration| {
            let started = Instant::now();
            let n = waiter.wait(&mut events, timeout);
            let took = started.elapsed();
            assert!(took >= timeout, "woke early: {took:?} of {timeout:?}");
            (n, events[0].u64)
        };
        let timeout = Duration::from_micros(300);

        let mut precise = Waiter::new(epoll.as_raw_fd());
        assert_eq!(timed(&mut precise, timeout).0, 0, "nothing was ready");

        let mut coarse = Waiter::new(epoll.as_raw_fd());
        coarse.fall_back();
        assert!(!coarse.precise);
        assert!(coarse.timer.is_some(), "the stand-in timer is in the epoll");
        // The timer expired before epoll_wait's own timeout (a millisecond after it), so
        // the wait returned with it, however busy the machine was.
        assert_eq!(timed(&mut coarse, timeout), (1, WAKE), "the stand-in timer");
        // Armed again, the timer's earlier expiry is no longer reported: the next wait
        // lasts its own timeout.
        let longer = Duration::from_millis(2) + timeout;
        assert_eq!(timed(&mut coarse, longer), (1, WAKE));
    }
}

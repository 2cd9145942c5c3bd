//! The epoll loop's system calls, the only `unsafe` of its driver: the epoll itself, a
//! socket's `recv`, the wait (`epoll_pwait2`, or `epoll_wait` with a timerfd), and the
//! stall probe's timerfd.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use socket2::Socket;
use vload_timer::nanos_between;

/// The stall probe's period: how late a 1 ms timer is noticed is the loop's own stall.
pub(super) const PROBE: Duration = Duration::from_millis(1);
/// The probe timer's token; connections are tokened by their slot and its generation.
pub(super) const TIMER: u64 = u64::MAX;
/// The token of the timer that stands in for `epoll_pwait2`'s timeout where it is missing.
pub(super) const WAKE: u64 = u64::MAX - 1;

/// The loop's epoll.
pub(in crate::worker) struct Epoll(OwnedFd);

impl Epoll {
    pub(in crate::worker) fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the descriptor is checked before use.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    pub(super) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Registers or changes `fd`'s interest under `token`.
    pub(super) fn control(&self, op: i32, fd: RawFd, interest: i32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: interest as u32,
            u64: token,
        };
        // SAFETY: both descriptors are open; `event` lives across the call.
        if unsafe { libc::epoll_ctl(self.raw(), op, fd, &mut event) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Gives the calling thread a descriptor table of its own, holding only stdin, stdout and
/// stderr (`close_range(3, ~0, CLOSE_RANGE_UNSHARE)`, Linux 5.9): call it before the thread
/// opens anything. In a process of several threads every `send`, `recv` and `epoll_wait`
/// takes and drops a reference on its file (an atomic on a shared cache line), because another
/// thread could close it meanwhile; on a table no other thread holds, the kernel skips that.
/// Nothing this loop opens is used by another thread (the collector gets figures over a
/// channel, never a descriptor), and it uses nothing another thread opened. Copying only the
/// first three descriptors, atomically, holds no reference on another thread's pipe or
/// socket, which would keep it open after that thread closed it.
///
/// Every signal is blocked on this thread first: a handler writes to a descriptor of the
/// shared table (tokio's signal pipe), which here is closed or is one of the attack's sockets.
/// Where the kernel lacks close_range, the thread keeps the shared table: a little slower,
/// no less correct.
pub(in crate::worker) fn own_descriptor_table() {
    // SAFETY: the sigset is a local filled by sigfillset before use; pthread_sigmask and
    // close_range change only the calling thread's signal mask and descriptor table, and this
    // thread holds no descriptor yet.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut()) != 0 {
            return;
        }
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_UNSHARE,
        );
    }
}

pub(super) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: the pointer and length are those of a live, initialised buffer; no
        // address is asked for.
        let n = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                fd,
                buf.as_mut_ptr(),
                buf.len(),
                0,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes from `buf` to `fd` (no SIGPIPE: a closed peer is an error), once; through
/// `syscall(2)` for the reason [`recv`] gives.
pub(super) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length are those of a live buffer; no address is given.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
    };
    if n >= 0 {
        Ok(n as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Bytes waiting on an idle connection, if any (none: the server closed it).
pub(super) fn unasked_bytes(socket: &Socket) -> Option<usize> {
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

/// How the loop waits: `epoll_pwait2`, whose timeout is in nanoseconds, so that the open
/// loop's next due request needs no timer of its own. Where it is missing (Linux before
/// 5.11, or a seccomp filter that refuses it) `epoll_wait`, whose timeout is in
/// milliseconds, with a timerfd in the epoll for a wait that ends within one.
pub(super) struct Waiter {
    epoll: RawFd,
    precise: bool,
    /// The stand-in timer, once `epoll_pwait2` was found missing.
    timer: Option<OwnedFd>,
}

impl Waiter {
    pub(super) fn new(epoll: RawFd) -> Waiter {
        Waiter {
            epoll,
            precise: true,
            timer: None,
        }
    }

    /// Waits at most `timeout` for events; returns how many `events` holds.
    pub(super) fn wait(&mut self, events: &mut [libc::epoll_event], timeout: Duration) -> usize {
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

/// The stall probe: a 1 ms timerfd in the loop's epoll; how late the loop sees it is the
/// worker's hiccup, as the tokio loop's probe's is (jHiccup's method).
pub(super) struct Probe {
    fd: OwnedFd,
    expected: Cell<Instant>,
    /// False once the timer could not be re-armed (and left the epoll).
    pub(super) armed: Cell<bool>,
}

impl Probe {
    pub(super) fn new(epoll: RawFd) -> Option<Probe> {
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

    /// The timer fired: re-arms it and returns when, and how late (nanoseconds) the loop
    /// saw it, for the worker's hiccup record.
    pub(super) fn fired(&self, epoll: RawFd) -> Option<(Instant, u64)> {
        if !self.armed.get() {
            return None;
        }
        let now = Instant::now();
        let late = nanos_between(self.expected.get(), now);
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
        Some((now, late))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of waiting wait the whole timeout when nothing happens, and no longer than
    /// it by more than the coarse wait's backstop: the stand-in timer is what ends a
    /// sub-millisecond wait, seen as its event.
    #[test]
    fn a_wait_ends_at_its_timeout_with_or_without_epoll_pwait2() {
        let epoll = Epoll::new().expect("an epoll");
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

        let mut precise = Waiter::new(epoll.raw());
        assert_eq!(timed(&mut precise, timeout).0, 0, "nothing was ready");

        let mut coarse = Waiter::new(epoll.raw());
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

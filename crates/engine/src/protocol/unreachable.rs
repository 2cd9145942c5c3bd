//! ICMP's "unreachable" for QUIC's one socket a worker: the kernel's word that nothing
//! listens at an address (port unreachable) or that no route leads there, which TCP gets as
//! a refused connect and a shared UDP socket does not get at all unless it asks.
//!
//! The socket asks (`IP_RECVERR`, `IPV6_RECVERR`): the kernel then queues each ICMP error
//! with the destination of the datagram that caused it and marks the socket in error. quinn's
//! receive path passes over that mark (the next receive's failure), so a task of the
//! endpoint's watches a second descriptor of the socket for it (epoll's EPOLLERR), reads the
//! queue (which would otherwise hold receive memory) and notes each destination with its
//! error; a handshake to that address waiting at that moment ends at once as
//! `connect_refused`, as TCP's does, instead of waiting out its timeout.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Asks the kernel for ICMP errors on `fd` (both families on a dual-stack IPv6 socket).
pub(super) fn ask(fd: RawFd, v6: bool) {
    let on: libc::c_int = 1;
    let mut options = vec![(libc::SOL_IP, libc::IP_RECVERR)];
    if v6 {
        options.push((libc::SOL_IPV6, libc::IPV6_RECVERR));
    }
    for (level, name) in options {
        // SAFETY: `on` outlives the call and its size is given.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&raw const on).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Watches `socket`'s errors on a descriptor of its own, noting them in `unreachable`, until
/// aborted; `None` where epoll cannot watch it (then a closed port waits out the timeout).
pub(super) fn watch(
    socket: &socket2::Socket,
    unreachable: Arc<Unreachable>,
) -> Option<tokio::task::AbortHandle> {
    use tokio::io::{Interest, unix::AsyncFd};
    let fd: OwnedFd = socket.try_clone().ok()?.into();
    // SAFETY: the descriptor is owned by the `AsyncFd` and neither replaced nor closed while
    // it is registered.
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::ERROR) }.ok()?;
    let task = tokio::spawn(async move {
        while let Ok(mut ready) = fd.ready(Interest::ERROR).await {
            // Cleared before the queue is read: an error queued after the read marks it again.
            ready.clear_ready();
            unreachable.read(fd.get_ref().as_raw_fd());
        }
    });
    Some(task.abort_handle())
}

/// The addresses found unreachable, with when and why (the error's number).
#[derive(Debug, Default)]
pub(super) struct Unreachable {
    seen: Mutex<HashMap<SocketAddr, (Instant, i32)>>,
    told: tokio::sync::Notify,
}

impl Unreachable {
    /// Reads `fd`'s error queue to its end, noting each destination, and wakes the
    /// handshakes waiting.
    pub(super) fn read(&self, fd: RawFd) {
        let mut found = false;
        while let Some((addr, errno)) = next_error(fd) {
            let addr = SocketAddr::new(addr.ip().to_canonical(), addr.port());
            if let Ok(mut seen) = self.seen.lock() {
                seen.insert(addr, (Instant::now(), errno));
            }
            found = true;
        }
        if found {
            self.told.notify_waiters();
        }
    }

    /// Resolves with the error once `addr` is found unreachable after `since`.
    pub(super) async fn wait(&self, addr: SocketAddr, since: Instant) -> std::io::Error {
        let addr = SocketAddr::new(addr.ip().to_canonical(), addr.port());
        loop {
            let told = self.told.notified();
            tokio::pin!(told);
            told.as_mut().enable();
            let noted = self
                .seen
                .lock()
                .ok()
                .and_then(|seen| seen.get(&addr).copied());
            if let Some((at, errno)) = noted
                && at >= since
            {
                return std::io::Error::from_raw_os_error(errno);
            }
            told.await;
        }
    }
}

/// One error off `fd`'s error queue: the destination of the datagram that caused it and the
/// error's number; `None` when the queue is empty.
fn next_error(fd: RawFd) -> Option<(SocketAddr, i32)> {
    let mut data = [0u8; 64];
    let mut control = [0u64; 64];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: every pointer handed to recvmsg points into a buffer that outlives the call,
    // with its length; the address is read only up to the length the kernel wrote.
    let (errno, addr) = unsafe {
        socket2::SockAddr::try_init(|name, len| {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = name.cast();
            msg.msg_namelen = *len;
            msg.msg_iov = &raw mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = size_of_val(&control) as _;
            if libc::recvmsg(fd, &raw mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            *len = msg.msg_namelen;
            Ok(extended_errno(&msg))
        })
        .ok()?
    };
    Some((addr.as_socket()?, errno?))
}

/// The error number of a message's `sock_extended_err` (IP_RECVERR or IPV6_RECVERR).
///
/// # Safety
/// `msg` is a message recvmsg filled, its control buffer still alive.
unsafe fn extended_errno(msg: &libc::msghdr) -> Option<i32> {
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within its length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            if (level, kind) == (libc::SOL_IP, libc::IP_RECVERR)
                || (level, kind) == (libc::SOL_IPV6, libc::IPV6_RECVERR)
            {
                let err = libc::CMSG_DATA(cmsg).cast::<libc::sock_extended_err>();
                return Some(std::ptr::read_unaligned(err).ee_errno as i32);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
        None
    }
}

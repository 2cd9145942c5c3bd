//! ICMP's "unreachable" for QUIC's one socket a worker: the kernel's word that nothing
//! listens at an address (port unreachable) or that no route leads there, which TCP gets as
//! a refused connect and a shared UDP socket does not get at all unless it asks.
//!
//! The socket asks (`IP_RECVERR`, `IPV6_RECVERR`): the kernel then queues each ICMP error
//! with the destination of the datagram that caused it and marks the socket in error, which
//! fails its next receive and raises epoll's EPOLLERR. A task of the endpoint waits for that
//! event, and the socket's receive path reads the queue too when a receive fails (quinn's
//! endpoint would stop on the failure): each destination is noted with its error, the queue
//! emptied (it would otherwise hold receive memory), and a handshake to that address waiting
//! at that moment ends at once as `connect_refused`, as TCP's does, instead of waiting out
//! its timeout.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::Instant;

/// The addresses found unreachable, with when and why (the error's number).
#[derive(Debug, Default)]
pub(super) struct Unreachable {
    seen: Mutex<HashMap<SocketAddr, (Instant, i32)>>,
    told: tokio::sync::Notify,
}

impl Unreachable {
    /// Reads `fd`'s error queue to its end, noting each destination, and wakes the
    /// handshakes waiting; whether it held any.
    pub(super) fn read(&self, fd: RawFd) -> bool {
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
        found
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

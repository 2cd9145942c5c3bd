//! QUIC's UDP socket: one a worker, on tokio's reactor directly (quinn's own GSO and GRO
//! calls, `quinn::udp`), which counts the Retry packets it receives, reads the ICMP errors
//! the kernel queues for it, and spares the reactor two kinds of wasted work that quinn's
//! tokio socket does on every datagram:
//!
//! - It is registered for reading only. A socket registered for writing too gets an epoll
//!   event each time the kernel frees a datagram it sent (on loopback, during the send
//!   itself), so the reactor's next wait returns at once with nothing to do: a second
//!   `epoll_wait` a cycle. Writability is watched only after a send found the buffer full,
//!   on a second descriptor registered then and dropped once it is writable again.
//! - quinn's tokio socket receives until a call finds nothing (`EAGAIN`): one wasted system
//!   call each time the socket becomes readable, half of all receive calls of a busy HTTP/3
//!   client. A batch with room left over already says the queue was empty when the call
//!   ended, so this socket forgets its readiness then, as tokio does on `EAGAIN` (for the
//!   same reactor event only: a datagram that arrived since marks it again).

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll, ready};

use quinn::udp::{RecvMeta, Transmit, UdpSocketState};
use tokio::io::unix::AsyncFd;
use tokio::io::{Interest, Ready};

use super::unreachable::Unreachable;

/// A worker's QUIC socket (see the module's text).
#[derive(Debug)]
pub(super) struct Socket {
    io: AsyncFd<std::net::UdpSocket>,
    state: UdpSocketState,
    /// Retry packets received: handshakes that took a Retry round trip.
    pub(super) retries: AtomicU64,
    /// Set when a send found the buffer full, until a [`Writable`] saw it writable again.
    full: AtomicBool,
    /// The addresses ICMP said cannot be reached.
    pub(super) unreachable: Unreachable,
}

impl Socket {
    /// Binds `addr` (dual-stack for IPv6, as quinn's own client endpoint does), asking for
    /// its ICMP errors.
    pub(super) fn bind(addr: SocketAddr) -> io::Result<Arc<Socket>> {
        use socket2::{Domain, Protocol, Type};
        let socket =
            socket2::Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if addr.is_ipv6() {
            let _ = socket.set_only_v6(false);
        }
        socket.bind(&addr.into())?;
        socket.set_nonblocking(true)?;
        // ICMP's errors, queued with the datagram's destination ([`Unreachable`]).
        set_option(socket.as_raw_fd(), libc::SOL_IP, libc::IP_RECVERR, true);
        if addr.is_ipv6() {
            set_option(socket.as_raw_fd(), libc::SOL_IPV6, libc::IPV6_RECVERR, true);
        }
        let socket: std::net::UdpSocket = socket.into();
        let state = UdpSocketState::new((&socket).into())?;
        // quinn asks for each datagram's destination address (a server's, to answer from
        // the address it was reached at); a client's connections are told by their IDs, so
        // the kernel is spared writing it for every datagram received.
        set_option(socket.as_raw_fd(), libc::SOL_IP, libc::IP_PKTINFO, false);
        if addr.is_ipv6() {
            set_option(
                socket.as_raw_fd(),
                libc::SOL_IPV6,
                libc::IPV6_RECVPKTINFO,
                false,
            );
        }
        // SAFETY: the `AsyncFd` owns the socket, which nothing closes or replaces while it is
        // registered.
        let io = unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        Ok(Arc::new(Socket {
            io,
            state,
            retries: AtomicU64::new(0),
            full: AtomicBool::new(false),
            unreachable: Unreachable::default(),
        }))
    }

    /// Notes the socket's ICMP errors as the kernel queues them, until aborted: the
    /// reactor's error event for this socket (the same registration: no event more for each
    /// datagram received) wakes it.
    pub(super) async fn watch_errors(self: Arc<Self>) {
        while let Ok(mut ready) = self.io.ready(Interest::ERROR).await {
            // Cleared before the queue is read: an error queued after the read marks it again.
            ready.clear_ready_matching(Ready::ERROR);
            self.unreachable.read(self.io.as_raw_fd());
        }
    }

    fn count_retries(&self, bufs: &[IoSliceMut<'_>], meta: &[RecvMeta]) {
        for (buf, meta) in bufs.iter().zip(meta) {
            let data = &buf[..meta.len.min(buf.len())];
            let seen = data
                .chunks(meta.stride.max(1))
                .filter(|d| is_retry(d))
                .count();
            if seen > 0 {
                self.retries.fetch_add(seen as u64, Relaxed);
            }
        }
    }
}

/// Sets a socket option that is a flag. A kernel without it leaves the socket as it was,
/// which only costs what the option would have saved (or an ICMP error seen late).
fn set_option(fd: RawFd, level: libc::c_int, name: libc::c_int, on: bool) {
    let value = libc::c_int::from(on);
    // SAFETY: `value` outlives the call and its size is given.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Whether `datagram` is a QUIC v1 Retry packet: a long-header packet of type 3 (RFC 9000,
/// 17.2.5), seen by its first byte and a version that is not zero (a version negotiation
/// packet's).
fn is_retry(datagram: &[u8]) -> bool {
    datagram.len() > 5 && datagram[0] & 0xb0 == 0xb0 && datagram[1..5] != [0; 4]
}

/// Whether a receive failed with what an ICMP error becomes (`icmp_err_convert`,
/// `icmpv6_err_convert`): the socket's error mark, not a fault of the socket, so the
/// endpoint receives on (quinn's would stop, with every connection of the worker).
fn from_icmp(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::ENOPROTOOPT
                | libc::EMSGSIZE
                | libc::EOPNOTSUPP
                | libc::EPROTO
                | libc::EACCES
        )
    )
}

impl quinn::AsyncUdpSocket for Socket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn quinn::UdpPoller>> {
        Box::pin(Writable {
            socket: self,
            watch: None,
        })
    }

    /// Sends now (the socket does not block); a full buffer says `WouldBlock`, and quinn
    /// then waits on [`Writable`].
    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        let sent = self.state.send(self.io.get_ref().into(), transmit);
        if matches!(&sent, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.full.store(true, Relaxed);
        }
        sent
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let room = bufs.len().min(meta.len()).min(quinn::udp::BATCH_SIZE);
        loop {
            let mut ready = ready!(self.io.poll_read_ready(cx))?;
            match ready.try_io(|socket| self.state.recv(socket.get_ref().into(), bufs, meta)) {
                Ok(Ok(n)) => {
                    if n < room {
                        ready.clear_ready_matching(Ready::READABLE);
                    }
                    self.count_retries(&bufs[..n], &meta[..n]);
                    return Poll::Ready(Ok(n));
                }
                Ok(Err(e)) => {
                    // The error queue is read either way: the mark may be an older error's.
                    let noted = self.unreachable.read(self.io.as_raw_fd());
                    if !noted && !from_icmp(&e) {
                        return Poll::Ready(Err(e));
                    }
                }
                // Nothing there (EAGAIN): readiness cleared, the next poll waits.
                Err(_) => {}
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.state.gro_segments()
    }

    fn may_fragment(&self) -> bool {
        self.state.may_fragment()
    }
}

/// Waits for the socket to take datagrams again after a send found its buffer full (quinn
/// asks before every send: ready at once otherwise): a second descriptor of the socket
/// registered for writing, from the first wait until it is writable (registering it reports
/// a socket already writable at once: no wake-up is lost between the full send and the
/// registration).
#[derive(Debug)]
struct Writable {
    socket: Arc<Socket>,
    watch: Option<AsyncFd<OwnedFd>>,
}

impl quinn::UdpPoller for Writable {
    fn poll_writable(self: Pin<&mut Self>, cx: &mut Context) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.socket.full.load(Relaxed) {
            this.watch = None;
            return Poll::Ready(Ok(()));
        }
        let watch = match &mut this.watch {
            Some(watch) => watch,
            None => {
                let fd: OwnedFd = this.socket.io.get_ref().try_clone()?.into();
                // SAFETY: the `AsyncFd` owns this descriptor, which nothing closes or
                // replaces while it is registered.
                let watch = unsafe { AsyncFd::register_with_interest(fd, Interest::WRITABLE) }
                    .map_err(|e| e.into_parts().1)?;
                this.watch.insert(watch)
            }
        };
        drop(ready!(watch.poll_write_ready(cx))?);
        this.watch = None;
        this.socket.full.store(false, Relaxed);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::AsyncUdpSocket as _;

    #[test]
    fn a_retry_is_told_from_other_long_headers() {
        let mut retry = vec![0xf0, 0, 0, 0, 1];
        retry.extend([0; 20]);
        assert!(is_retry(&retry));
        let mut negotiation = retry.clone();
        negotiation[1..5].copy_from_slice(&[0; 4]);
        assert!(!is_retry(&negotiation));
        let mut initial = retry.clone();
        initial[0] = 0xc0;
        assert!(!is_retry(&initial));
        assert!(!is_retry(&[0x40, 1, 2, 3, 4, 5]));
    }

    /// A port unreachable marks the socket in error, which fails the next receive even with
    /// a datagram waiting (the kernel says the error first): the receive notes the address
    /// and goes on to the datagram, where quinn's socket would fail and its endpoint stop.
    #[tokio::test]
    async fn an_icmp_error_is_noted_and_the_datagram_behind_it_received() {
        use std::time::Duration;
        let socket = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let local = socket.io.get_ref().local_addr().unwrap();
        let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        socket.io.get_ref().send_to(b"x", closed_addr).unwrap();
        let marked =
            tokio::time::timeout(Duration::from_secs(10), socket.io.ready(Interest::ERROR));
        assert!(marked.await.is_ok(), "no ICMP error within 10 s");
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.send_to(b"hello", local).unwrap();
        let mut buf = vec![0u8; 65536];
        let mut meta = [RecvMeta::default()];
        let received = tokio::time::timeout(
            Duration::from_secs(10),
            std::future::poll_fn(|cx| {
                let mut bufs = [IoSliceMut::new(&mut buf)];
                socket.poll_recv(cx, &mut bufs, &mut meta)
            }),
        );
        let n = received.await.expect("a receive within 10 s").unwrap();
        assert_eq!(n, 1);
        assert_eq!(&buf[..meta[0].len], b"hello");
        let noted = socket.unreachable.wait(
            closed_addr,
            std::time::Instant::now() - Duration::from_secs(60),
        );
        let noted = tokio::time::timeout(Duration::from_secs(1), noted).await;
        assert_eq!(
            noted.expect("the address noted").raw_os_error(),
            Some(libc::ECONNREFUSED)
        );
    }

    /// quinn asks before every send: ready at once without a descriptor while no send found
    /// the buffer full; once one did, a writable socket is reported writable as the second
    /// descriptor registers (no edge is needed), and the mark is cleared.
    #[tokio::test]
    async fn writability_is_watched_only_after_a_full_buffer() {
        let socket = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut poller = socket.clone().create_io_poller();
        let ready = std::future::poll_fn(|cx| poller.as_mut().poll_writable(cx));
        ready.await.unwrap();
        socket.full.store(true, Relaxed);
        let ready = std::future::poll_fn(|cx| poller.as_mut().poll_writable(cx));
        tokio::time::timeout(std::time::Duration::from_secs(10), ready)
            .await
            .expect("a writable socket is reported writable")
            .unwrap();
        assert!(!socket.full.load(Relaxed));
    }

    #[test]
    fn icmp_errors_are_not_the_sockets_fault() {
        assert!(from_icmp(&io::Error::from_raw_os_error(libc::ECONNREFUSED)));
        assert!(from_icmp(&io::Error::from_raw_os_error(libc::EHOSTUNREACH)));
        assert!(!from_icmp(&io::Error::from_raw_os_error(libc::EBADF)));
        assert!(!from_icmp(&io::Error::other("no number")));
    }
}

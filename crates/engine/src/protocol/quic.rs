//! QUIC's transport for a datagram protocol (HTTP/3): a worker's endpoint, one UDP socket
//! its connections share, and the handshake that makes a connection (TLS 1.3 inside it), as
//! [`Dial::transport`](super::Dial) gives TCP-based protocols their byte stream.
//!
//! One UDP socket a worker: every connection a worker opens shares its quinn endpoint,
//! which demultiplexes datagrams by connection ID. A socket a connection (as oha does)
//! costs a file descriptor, an ephemeral port and a driver task per connection and batches
//! nothing across connections; one socket a worker keeps 10,000 connections within one port
//! and lets quinn's GSO and GRO send and receive many datagrams a system call.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use quinn::ConnectionError;
use vload_schema::ErrorKind;

use super::udp::Socket;
use crate::failure::Failure;
use rustls::pki_types::ServerName;

/// How long a QUIC connection may stay silent before it is dropped (quinn's default, said).
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A stream's receive window: as large as HTTP/2's (2^30 - 1), so that a large object is
/// never held back by vload's flow control.
const STREAM_WINDOW: u32 = (1 << 30) - 1;

/// A worker's QUIC endpoint: its one UDP socket and the client configuration every
/// connection of the attack shares.
pub(crate) struct Endpoint {
    endpoint: quinn::Endpoint,
    /// Its UDP socket, which counts the Retry packets it receives and notes ICMP's errors.
    socket: Arc<Socket>,
    /// The task noting those errors as they come, ended with the endpoint.
    watcher: tokio::task::AbortHandle,
    config: quinn::ClientConfig,
    /// The URL's server name, sent as SNI and checked against the certificate.
    server_name: String,
    /// Early data offered when a ticket allows it (`--0rtt`).
    early_data: bool,
}

impl Endpoint {
    /// An endpoint for connections to `addr`'s family with `tls` (`name`, the URL's server
    /// name, sent as SNI): its UDP socket bound now.
    pub(crate) fn open(
        addr: SocketAddr,
        tls: Option<(&Arc<rustls::ClientConfig>, &ServerName<'static>)>,
    ) -> Result<Endpoint, Failure> {
        let Some((tls, name)) = tls else {
            return Err((
                ErrorKind::Tls,
                "HTTP/3 runs over QUIC, which is always TLS: give an https:// URL".into(),
            ));
        };
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls.clone())
            .map_err(|e| (ErrorKind::Tls, format!("TLS for QUIC: {e}")))?;
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport
            .max_idle_timeout(IDLE_TIMEOUT.try_into().ok())
            .stream_receive_window(quinn::VarInt::from_u32(STREAM_WINDOW))
            .receive_window(quinn::VarInt::MAX);
        config.transport_config(Arc::new(transport));
        let any: SocketAddr = if addr.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let socket = Socket::bind(any).map_err(|e| {
            let kind = if crate::failure::is_client_limit(&e) {
                ErrorKind::ClientLimit
            } else {
                ErrorKind::Connect
            };
            (kind, format!("cannot open a UDP socket for QUIC: {e}"))
        })?;
        let endpoint = quinn::Endpoint::new_with_abstract_socket(
            quinn::EndpointConfig::default(),
            None,
            socket.clone(),
            Arc::new(Local),
        )
        .map_err(|e| {
            (
                ErrorKind::Connect,
                format!("cannot start QUIC's endpoint: {e}"),
            )
        })?;
        let watcher = tokio::spawn(socket.clone().watch_errors()).abort_handle();
        Ok(Endpoint {
            endpoint,
            socket,
            watcher,
            config,
            server_name: name.to_str().into_owned(),
            early_data: tls.enable_early_data,
        })
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl Endpoint {
    /// Retry packets received: handshakes that took a Retry round trip.
    pub(crate) fn retries(&self) -> u64 {
        self.socket.retries.load(Relaxed)
    }
}

/// quinn's tasks (the endpoint's driver and each connection's) on the worker's `LocalSet`,
/// beside the lanes whose streams they serve, instead of the runtime's queue: the responses
/// a wake-up brings, the requests they free and the packets that carry those go out in one
/// turn of the `LocalSet`, where tasks on the runtime's queue would make the runtime check
/// its reactor (an `epoll_wait` more) each time they woke a lane. (The endpoint is opened
/// by a lane: always inside the worker's `LocalSet`.)
#[derive(Debug)]
struct Local;

impl quinn::Runtime for Local {
    fn new_timer(&self, at: Instant) -> std::pin::Pin<Box<dyn quinn::AsyncTimer>> {
        Box::pin(tokio::time::sleep_until(at.into()))
    }

    fn spawn(&self, future: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) {
        tokio::task::spawn_local(future);
    }

    fn wrap_udp_socket(
        &self,
        socket: std::net::UdpSocket,
    ) -> std::io::Result<Arc<dyn quinn::AsyncUdpSocket>> {
        quinn::Runtime::wrap_udp_socket(&quinn::TokioRuntime, socket)
    }

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// A connection QUIC's handshake made.
pub(crate) enum Made {
    /// The handshake is complete: how long it took, and whether it was a full one (the
    /// server's certificate checked) or resumed from a ticket.
    Done {
        conn: quinn::Connection,
        took: Duration,
        full: bool,
    },
    /// Resumed with early data (`--0rtt`): usable now, before the handshake's round trip;
    /// `accepted` says, once the handshake completes, whether the server took the early data.
    Early {
        conn: quinn::Connection,
        took: Duration,
        accepted: quinn::ZeroRttAccepted,
    },
}

impl Endpoint {
    /// QUIC's handshake with `addr` (`server_name` as SNI instead of the URL's host when
    /// given), bounded by `timeout`; with early data when the configuration offers it and a
    /// ticket of an earlier connection allows it.
    pub(crate) async fn handshake(
        &self,
        addr: SocketAddr,
        server_name: Option<&str>,
        timeout: Duration,
    ) -> Result<Made, Failure> {
        let name = server_name.unwrap_or(&self.server_name);
        let began = Instant::now();
        let mut connecting = self
            .endpoint
            .connect_with(self.config.clone(), addr, name)
            .map_err(|e| (ErrorKind::Connect, format!("QUIC connect to {addr}: {e}")))?;
        if self.early_data {
            match connecting.into_0rtt() {
                Ok((conn, accepted)) => {
                    let took = began.elapsed();
                    return Ok(Made::Early {
                        conn,
                        took,
                        accepted,
                    });
                }
                Err(again) => connecting = again,
            }
        }
        let refused = self.socket.unreachable.wait(addr, began);
        let handshake = tokio::time::timeout(timeout, connecting);
        let done = tokio::select! {
            done = handshake => done,
            e = refused => {
                return Err((
                    ErrorKind::ConnectRefused,
                    format!("QUIC connect to {addr}: {e} (ICMP)"),
                ));
            }
        };
        match done {
            Err(_) => Err((
                ErrorKind::ConnectTimeout,
                format!("no QUIC handshake with {addr} within {timeout:?}"),
            )),
            Ok(Err(e)) => Err(connection_failure(addr, &e, true)),
            Ok(Ok(conn)) => Ok(Made::Done {
                conn,
                took: began.elapsed(),
                full: crate::tls::take_full_handshake(),
            }),
        }
    }
}

/// TLS alerts travel as QUIC's CRYPTO_ERROR, 0x0100 + the alert (RFC 9001, 4.8).
const CRYPTO_ERRORS: std::ops::Range<u64> = 0x0100..0x0200;

/// HTTP/3's "no error" code (RFC 9114, 8.1).
const H3_NO_ERROR: u64 = 0x100;

/// A connection that failed or closed: while it was being made (`handshake`) or after.
/// QUIC's transport error CONNECTION_REFUSED (RFC 9000, 20.1).
const CONNECTION_REFUSED: u64 = 0x2;

pub(crate) fn connection_failure(
    addr: SocketAddr,
    error: &ConnectionError,
    handshake: bool,
) -> Failure {
    let kind = match error {
        ConnectionError::TimedOut if handshake => ErrorKind::ConnectTimeout,
        ConnectionError::TimedOut => ErrorKind::QuicIdleTimeout,
        ConnectionError::VersionMismatch => ErrorKind::QuicVersion,
        ConnectionError::Reset => ErrorKind::StatelessReset,
        ConnectionError::TransportError(e) if CRYPTO_ERRORS.contains(&u64::from(e.code)) => {
            ErrorKind::Tls
        }
        ConnectionError::ConnectionClosed(close)
            if CRYPTO_ERRORS.contains(&u64::from(close.error_code)) =>
        {
            ErrorKind::Tls
        }
        ConnectionError::TransportError(_) => ErrorKind::Protocol,
        // CONNECTION_REFUSED: a server that takes no new connection (closing, or at its
        // limit), as a TCP listener's RST to a SYN.
        ConnectionError::ConnectionClosed(close)
            if u64::from(close.error_code) == CONNECTION_REFUSED =>
        {
            ErrorKind::ConnectRefused
        }
        ConnectionError::ConnectionClosed(_) => ErrorKind::Reset,
        // A graceful close (HTTP/3's H3_NO_ERROR, or 0) is a GOAWAY's end; any other code
        // closed the connection on its requests.
        ConnectionError::ApplicationClosed(close)
            if matches!(u64::from(close.error_code), 0 | H3_NO_ERROR) =>
        {
            ErrorKind::Goaway
        }
        ConnectionError::ApplicationClosed(_) => ErrorKind::Reset,
        ConnectionError::CidsExhausted => ErrorKind::ClientLimit,
        ConnectionError::LocallyClosed => ErrorKind::Other,
    };
    let what = match error {
        ConnectionError::TimedOut if handshake => "no answer to QUIC's handshake (idle timeout)",
        ConnectionError::TimedOut => "QUIC idle timeout: nothing from the server for 30 s",
        ConnectionError::VersionMismatch => "the server speaks no QUIC version vload does (v1)",
        ConnectionError::Reset => "stateless reset: the server no longer knows the connection",
        ConnectionError::ConnectionClosed(close)
            if u64::from(close.error_code) == CONNECTION_REFUSED =>
        {
            "the server refused the QUIC connection (CONNECTION_REFUSED: closing, or at its limit)"
        }
        _ => "",
    };
    let message = if what.is_empty() {
        format!("QUIC connection with {addr}: {error}")
    } else {
        format!("QUIC connection with {addr}: {what}")
    };
    (kind, message)
}

//! HTTP/3 over QUIC v1: quinn's QUIC and hyperium's h3 behind the protocol seam
//! ([`crate::protocol::Link`]), chosen by measurement (docs/ARCHITECTURE.md, "HTTP/3").
//!
//! QUIC itself (a worker's one UDP socket, the handshake, a connection's failures) is the
//! transport, in [`crate::protocol::quic`], as TCP and TLS are for HTTP/1.1 and HTTP/2.
//!
//! A connection ([`H3Conn`]) is quinn's connection with h3's request sender over it; h3's
//! connection driver (its control stream: SETTINGS, GOAWAY) runs as a task of its own on
//! the worker's thread. Every lane that rides a connection is one handle on it, as HTTP/2's
//! streams are. Failures are mapped by type ([`errors`]): QUIC's own (idle timeout,
//! stateless reset, a version the server does not speak, a close with a transport error)
//! apart from HTTP/3's (a stream reset, GOAWAY).

mod conn;
mod errors;
mod gate;

pub(crate) use conn::H3Conn;

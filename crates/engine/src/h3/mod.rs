//! HTTP/3 over QUIC v1: quinn's QUIC and vload's own lean HTTP/3 behind the protocol seam
//! ([`crate::protocol::Link`]), chosen by measurement (docs/ARCHITECTURE.md, "HTTP/3").
//!
//! QUIC itself (a worker's one UDP socket, the handshake, a connection's failures) is the
//! transport, in [`crate::protocol::quic`], as TCP and TLS are for HTTP/1.1 and HTTP/2.
//!
//! A connection ([`H3Conn`]) is quinn's connection with vload's control stream on it and a
//! task reading the server's streams ([`control`]: SETTINGS, GOAWAY); every lane that rides
//! it is one handle, as HTTP/2's streams are, sending each request on a QUIC stream of its
//! own ([`frames`]): its field section encoded from QPACK's static table and literals
//! ([`qpack`], no dynamic table either way), the response's head decoded for `:status`
//! and the cache headers only, its body counted from quinn's chunks and dropped. Failures
//! are mapped by type ([`errors`]): QUIC's own (idle timeout, stateless reset, a version
//! the server does not speak, a close with a transport error) apart from HTTP/3's (a
//! stream reset, GOAWAY, a frame or field section that breaks the rules).

mod conn;
mod control;
mod errors;
mod frames;
mod qpack;

pub(crate) use conn::H3Conn;

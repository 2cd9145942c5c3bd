//! The protocol seam: how a connection is opened, handshaken and driven, one implementation of
//! [`Link`] a protocol and client.
//!
//! A protocol's connection is a [`Link`]: it opens itself from a [`Dial`] (the address, the
//! timeouts and TLS; TCP-based protocols take their byte stream from [`Dial::transport`], a
//! datagram protocol would open its own socket), says whether it is still open and whether
//! it carries several requests at once, sends one request and reads its whole response, and
//! counts what crossed it. [`Conn`] holds a link under the connection's one request timer.
//! The tokio driver runs the same lanes over any link; which link an attack's plan asks for
//! is decided in one place (`worker::runtime::run`), so a protocol is a folder that
//! implements [`Link`] and one line there (docs/ARCHITECTURE.md, "The protocol seam").
//!
//! The implementations: [`crate::h1`] (vload's lean HTTP/1.1), [`crate::h2`] (vload's lean
//! HTTP/2) and [`hyper`] (hyper's client connections of both versions, for comparison). The
//! epoll driver speaks HTTP/1.1 through [`crate::h1`]'s decoder directly, without a link.

mod conn;
mod dial;
mod hyper;
mod link;
pub(crate) mod quic;
mod udp;
mod unreachable;

pub(crate) use conn::Conn;
pub(crate) use dial::Dial;
pub(crate) use hyper::{Hyper1, Hyper2};
pub(crate) use link::{Counts, Link, Opened, Refused};

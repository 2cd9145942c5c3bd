//! What every protocol's connection is: a [`Link`], what it says of itself when opened
//! ([`Opened`]), and what crossed it ([`Counts`]).

use std::future::Future;
use std::task::Context;
use std::time::Duration;

use super::dial::Dial;
use crate::failure::Failure;
use crate::response::Response;
use crate::workload::{Request, Wire};

/// One connection of a protocol (see [`crate::protocol`]).
pub(crate) trait Link: Sized + 'static {
    /// Failures of one exchange leave the connection, and its other requests, as they were
    /// (HTTP/2's streams fail one by one).
    const MULTIPLEXED: bool;

    /// Opens a connection as `dial` says, with `server_name` as TLS's server name instead of
    /// the URL's host when given: its transport and this protocol's handshake.
    fn open(
        dial: &Dial,
        server_name: Option<&str>,
    ) -> impl Future<Output = Result<Opened<Self>, Refused>>;

    /// Another stream of the same connection, for a protocol that carries several requests
    /// at once; `None` for one that carries one at a time.
    fn stream(&self) -> Option<Self> {
        None
    }

    /// False once the server closed it or an exchange broke it.
    fn is_open(&self) -> bool;

    /// While idle: drives the connection, so that a close by the server is noticed, and asks
    /// to be woken for one.
    fn poll_idle(&mut self, cx: &mut Context<'_>);

    /// Sends one request (the lean HTTP/1.1 client writes `wire`, a request prepared as
    /// bytes, when it is given; the others build theirs from `request`) and reads its whole
    /// response.
    fn exchange<'a>(
        &'a mut self,
        request: Request<'a>,
        wire: Option<&'a Wire>,
    ) -> impl Future<Output = Result<Response, Failure>> + 'a;

    /// What crossed it since the last call, whether the exchanges completed or not.
    fn take_counts(&mut self) -> Counts;
}

/// A connection that could not be opened: why, and, when its transport was made before
/// the protocol's handshake failed (a server that accepts TCP and never sends HTTP/2's
/// SETTINGS), how long the transport took: the connection was opened all the same, and is
/// counted as HTTP/1.1's would be.
pub(crate) struct Refused {
    pub(crate) failure: Failure,
    /// The TCP connect and the TLS handshake, when they were done.
    pub(crate) transport: Option<(Duration, Option<Duration>)>,
}

impl From<Failure> for Refused {
    fn from(failure: Failure) -> Refused {
        Refused {
            failure,
            transport: None,
        }
    }
}

/// A connection just opened, and how long its steps took.
pub(crate) struct Opened<L> {
    pub(crate) link: L,
    /// The TCP connect (or a datagram protocol's first round trip).
    pub(crate) connect: Duration,
    /// The TLS handshake, when there was one.
    pub(crate) handshake: Option<Duration>,
}

/// What crossed a connection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    /// Response body bytes received.
    pub(crate) received: u64,
    /// Request body bytes that reached the connection.
    pub(crate) written: u64,
    /// Bytes the server sent unasked after a complete response (the connection is closed
    /// for them).
    pub(crate) stray: usize,
    /// Bytes read off the connection (heads and framing included), whatever they were.
    pub(crate) wire: u64,
    /// When the last exchange's response began to arrive, when a read left it incomplete
    /// (`None`: it came whole, its first byte is its end).
    pub(crate) first_byte: Option<std::time::Instant>,
}

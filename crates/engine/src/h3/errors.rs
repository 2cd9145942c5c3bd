//! QUIC's and HTTP/3's failures onto the ledger's kinds, by type, never by wording.

use std::net::SocketAddr;

use h3::error::StreamError;
use quinn::ConnectionError;
use vload_schema::ErrorKind;

use crate::failure::Failure;
use crate::protocol::quic::connection_failure;

/// A request that failed on its stream; `closed` is the connection's close, when it closed.
pub(super) fn stream(
    addr: SocketAddr,
    error: &StreamError,
    closed: Option<ConnectionError>,
    in_body: bool,
) -> Failure {
    if let Some(closed) = closed {
        return connection_failure(addr, &closed, false);
    }
    let kind = match error {
        StreamError::RemoteTerminate { .. } => ErrorKind::StreamReset,
        StreamError::RemoteClosing { .. } => ErrorKind::Goaway,
        StreamError::HeaderTooBig { .. } | StreamError::StreamError { .. } => ErrorKind::Protocol,
        StreamError::ConnectionError { .. } => ErrorKind::Reset,
        _ if in_body => ErrorKind::Body,
        _ => ErrorKind::Other,
    };
    (kind, format!("HTTP/3 stream to {addr}: {error}"))
}

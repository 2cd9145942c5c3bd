//! QUIC's and HTTP/3's failures onto the ledger's kinds, by type, never by wording.

use std::net::SocketAddr;

use quinn::{ConnectionError, ReadError, WriteError};
use vload_schema::ErrorKind;

use super::frames::ReadFail;
use crate::failure::Failure;
use crate::protocol::quic::connection_failure;

/// H3_REQUEST_REJECTED: the server did not process the request (a stream above its GOAWAY).
const H3_REQUEST_REJECTED: u64 = 0x10b;

/// How a request failed on its stream.
#[derive(Debug)]
pub(super) enum StreamFail {
    /// The stream could not be opened: the connection is gone.
    Open(ConnectionError),
    Write(WriteError),
    Read(ReadFail),
}

/// A request that failed on its stream; `closed` is the connection's close, when it closed.
pub(super) fn stream(
    addr: SocketAddr,
    error: &StreamFail,
    closed: Option<ConnectionError>,
    in_body: bool,
) -> Failure {
    let lost = match error {
        StreamFail::Open(e)
        | StreamFail::Write(WriteError::ConnectionLost(e))
        | StreamFail::Read(ReadFail::Quic(ReadError::ConnectionLost(e))) => Some(e.clone()),
        _ => None,
    };
    if let StreamFail::Read(ReadFail::Protocol(_, what)) = error {
        return (ErrorKind::Protocol, format!("HTTP/3 from {addr}: {what}"));
    }
    if let Some(closed) = closed.or(lost) {
        return connection_failure(addr, &closed, false);
    }
    let kind = match error {
        StreamFail::Write(WriteError::Stopped(code))
        | StreamFail::Read(ReadFail::Quic(ReadError::Reset(code))) => {
            if code.into_inner() == H3_REQUEST_REJECTED {
                ErrorKind::Goaway
            } else {
                ErrorKind::StreamReset
            }
        }
        _ if in_body => ErrorKind::Body,
        _ => ErrorKind::Other,
    };
    let what = match error {
        StreamFail::Open(e) => e.to_string(),
        StreamFail::Write(e) => e.to_string(),
        StreamFail::Read(ReadFail::Quic(e)) => e.to_string(),
        StreamFail::Read(ReadFail::Protocol(_, what)) => (*what).to_owned(),
    };
    (kind, format!("HTTP/3 stream to {addr}: {what}"))
}

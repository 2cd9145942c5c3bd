//! A failed request: its kind, chosen by error type (never by message text), and a message.

use vload_schema::ErrorKind;

/// A failed request: its kind and a message for a human.
pub(crate) type Failure = (ErrorKind, String);

/// The kind of an I/O error on an established connection: the peer reset or closed it, or
/// (once the response head is in) the body broke off.
pub(crate) fn io_kind(error: &std::io::Error, in_body: bool) -> ErrorKind {
    use std::io::ErrorKind as Io;
    // TLS after the handshake: a record that does not decrypt, an alert. tokio-rustls
    // hands rustls's error over inside an io error; by type, it is TLS's failure.
    if error
        .get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>())
    {
        return ErrorKind::Tls;
    }
    match error.kind() {
        Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => ErrorKind::Reset,
        _ if in_body => ErrorKind::Body,
        _ => ErrorKind::Reset,
    }
}

/// Out of file descriptors, local ports or buffers: the client machine's limit.
pub(crate) fn is_client_limit(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// An io error while reading or writing, by kind.
pub(crate) fn io_failure(error: &std::io::Error, in_body: bool) -> Failure {
    let kind = io_kind(error, in_body);
    (kind, format!("connection error: {error}"))
}

/// A connect to `addr` that failed with `error`: refused, a limit of this machine, or else.
pub(crate) fn connect_failure(addr: std::net::SocketAddr, error: &std::io::Error) -> Failure {
    if error.kind() == std::io::ErrorKind::ConnectionRefused {
        (
            ErrorKind::ConnectRefused,
            format!("connecting to {addr}: {error}"),
        )
    } else if is_client_limit(error) {
        (
            ErrorKind::ClientLimit,
            format!("connecting to {addr}: {error} (a limit of this machine, not the server)"),
        )
    } else {
        (ErrorKind::Connect, format!("connecting to {addr}: {error}"))
    }
}

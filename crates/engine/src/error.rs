//! What stops an attack from running at all. Failed requests are never errors: they are
//! counted by kind in the run file.

use std::path::PathBuf;

use crate::targets::TargetError;
use crate::tls::TlsError;

/// What stops an attack from running.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The interval log cannot be created or written.
    #[error("cannot write interval log '{}': {error}", path.display())]
    Hlog {
        /// The log's path.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// A worker thread could not start.
    #[error("cannot start worker thread: {0}")]
    Thread(std::io::Error),
    /// Targets name hosts other than the URL's, and no address was given for them.
    #[error(
        "targets name other hosts ({0}, ...) than the URL: vload sends every request to one server; give it with --connect-to HOST:PORT"
    )]
    ManyHosts(String),
    /// The TLS setup cannot work (CA file, roots, server name).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A target file is missing or malformed.
    #[error("{0}")]
    Targets(TargetError),
    /// A shard would get nothing to do.
    #[error("{0}")]
    Shard(String),
    /// The plan needs more of this machine than it has (file descriptors, local ports).
    #[error("{0}")]
    Capacity(String),
    /// A worker thread panicked: a bug in vload.
    #[error("a worker thread panicked (a bug in vload; please report it)")]
    WorkerPanicked,
}

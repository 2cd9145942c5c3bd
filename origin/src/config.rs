//! How an origin runs: its address, threads, faults, delays, TLS and capacity.

use std::net::SocketAddr;
use std::time::Duration;

use crate::queue::Service;

/// The server-wide stall: no response is written during the last `length` of every `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// Period of the stall, counted from the origin's start.
    pub every: Duration,
    /// How long each stall lasts (less than `every`).
    pub length: Duration,
}

/// A delay that moves linearly to `to` over `over`, counted from the first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayRamp {
    /// The delay at the ramp's end, held after it.
    pub to: Duration,
    /// How long the ramp lasts.
    pub over: Duration,
}

/// How to run an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Server threads; `None` for one per available core.
    pub threads: Option<usize>,
    /// Periodic stall.
    pub stall: Option<Stall>,
    /// Close every connection after this many requests.
    pub close_after: Option<u64>,
    /// Reset the connection of every Nth request (counted across the server).
    pub reset_every: Option<u64>,
    /// Send every body at this many bytes per second.
    pub slow_body_bytes_per_s: Option<u64>,
    /// Delay every response by this much (where a ramp starts, with `delay_ramp`).
    pub delay: Option<Duration>,
    /// A delay that grows (or shrinks) from `delay` to its end over a time counted from the
    /// first request, then holds: a server getting slower during a run.
    pub delay_ramp: Option<DelayRamp>,
    /// Serve TLS (https, ALPN h2 and http/1.1) with this certificate chain and key, both PEM.
    pub tls: Option<TlsIdentity>,
    /// Serve HTTP/3 (QUIC v1) on the same port over UDP too; needs `tls`.
    pub http3: bool,
    /// HTTP/3: issue session tickets that allow no early data, so clients resume without
    /// 0-RTT (by default early data is accepted).
    pub refuse_early_data: bool,
    /// HTTP/3: answer a new connection's first Initial with a Retry (address validation, as
    /// a server under attack does), one round trip more for every handshake.
    pub quic_retry: bool,
    /// HTTP/3: the key stateless-reset tokens derive from (random by default). Two origins
    /// with one key reset each other's connections, as a server restarted behind one
    /// address does: a client's packet for a connection the other made is answered with a
    /// stateless reset it recognises.
    pub quic_reset_key: Option<[u8; 32]>,
    /// Join other servers already listening on the port (`SO_REUSEPORT`) instead of
    /// refusing: the kernel then splits connections between them.
    pub reuse_port: bool,
    /// Serve at most this many requests at once across the server; the rest wait in line.
    /// With a delay D, the server's capacity is exactly `concurrency / D` requests per
    /// second (the slots run on a virtual clock: see `Service`): a server whose capacity is
    /// known, to test a capacity sweep against.
    pub concurrency: Option<usize>,
    /// With `concurrency`: how long each request holds its slot, the delay or an
    /// exponential time of that mean.
    pub service: Service,
}

/// A certificate chain and its private key, PEM-encoded.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    /// The certificate chain, leaf first.
    pub cert_pem: Vec<u8>,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("cert_pem", &self.cert_pem.len())
            .finish_non_exhaustive()
    }
}

impl OriginConfig {
    /// 127.0.0.1 on a free port, no faults: what tests use.
    pub fn loopback() -> Self {
        OriginConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: None,
            stall: None,
            close_after: None,
            reset_every: None,
            slow_body_bytes_per_s: None,
            delay: None,
            delay_ramp: None,
            tls: None,
            http3: false,
            refuse_early_data: false,
            quic_retry: false,
            quic_reset_key: None,
            reuse_port: false,
            concurrency: None,
            service: Service::Constant,
        }
    }
}

impl TlsIdentity {
    /// rustls's server configuration of this identity, without ALPN.
    pub(crate) fn server_config(&self) -> std::io::Result<rustls::ServerConfig> {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};
        let invalid = |what: &str, e: &dyn std::fmt::Display| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{what}: {e}"))
        };
        let certs = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("TLS certificate", &e))?;
        let key =
            PrivateKeyDer::from_pem_slice(&self.key_pem).map_err(|e| invalid("TLS key", &e))?;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("TLS versions", &e))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| invalid("TLS certificate and key", &e))
    }
}

/// How long a graceful shutdown waits for in-flight responses.
pub(crate) const DRAIN: Duration = Duration::from_secs(2);

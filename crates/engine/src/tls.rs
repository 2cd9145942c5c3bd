//! TLS for `https://` targets: rustls, verified against the system's roots unless told
//! otherwise, with ALPN for HTTP/1.1 or HTTP/2.

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime, pem::PemObject as _};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How to check the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// Against the operating system's trusted roots.
    SystemRoots,
    /// Against the certificates in this PEM file only.
    CaFile(PathBuf),
    /// Not at all (`--insecure`): for test servers with self-signed certificates.
    Insecure,
}

/// TLS settings of an attack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// The name sent as SNI and checked against the certificate (the URL's host).
    pub server_name: String,
    /// How to check the certificate.
    pub verify: Verify,
}

/// A TLS setup that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The CA file is unreadable or holds no certificate.
    #[error("cannot use --cacert '{}': {why}", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// No usable system roots.
    #[error(
        "no trusted root certificates found on this system ({0}): give --cacert FILE or --insecure"
    )]
    NoRoots(String),
    /// The host is not a valid TLS server name.
    #[error("'{0}' is not a valid TLS server name")]
    ServerName(String),
    /// HTTP/3 asked of a plain `http://` URL: QUIC is always TLS 1.3.
    #[error("HTTP/3 runs over QUIC, which is always TLS: give an https:// URL")]
    QuicNeedsTls,
}

/// The client configuration every connection of an attack shares.
pub(crate) fn client_config(
    options: &TlsOptions,
    alpn: &[u8],
    early_data: bool,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    // Every verifier is wrapped to count the certificates it checks: a handshake that
    // checked none was resumed (QUIC's handshake kinds, see [`take_full_handshake`]).
    let verifier: Arc<dyn ServerCertVerifier> = match &options.verify {
        Verify::Insecure => Arc::new(NoVerification(provider.clone())),
        Verify::CaFile(path) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsError::CaFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsError::CaFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(TlsError::CaFile {
                    path: path.clone(),
                    why: "no certificate in it".into(),
                });
            }
            web_pki(roots, &provider)?
        }
        Verify::SystemRoots => {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "none found".to_owned(), |e| e.to_string());
                return Err(TlsError::NoRoots(why));
            }
            web_pki(roots, &provider)?
        }
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Counted(verifier)))
        .with_no_client_auth();
    // QUIC's 0-RTT (`--0rtt`): early data offered when a ticket allows it.
    config.enable_early_data = early_data;
    config.alpn_protocols = vec![alpn.to_vec()];
    let name = ServerName::try_from(options.server_name.clone())
        .map_err(|_| TlsError::ServerName(options.server_name.clone()))?;
    Ok((Arc::new(config), name))
}

/// The web PKI's verifier over `roots`.
fn web_pki(
    roots: RootCertStore,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| TlsError::NoRoots(e.to_string()))
}

thread_local! {
    /// Certificates this thread checked and no handshake has claimed yet.
    static CHECKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// True when a certificate was checked on this thread since the last claim: a handshake
/// just completed was a full one (rustls checks no certificate on a resumed handshake).
/// Handshakes of one worker complete on its thread, where their certificates are checked,
/// so the kinds add up exactly even when several handshakes overlap.
pub(crate) fn take_full_handshake() -> bool {
    CHECKED.with(|c| {
        let n = c.get();
        c.set(n.saturating_sub(1));
        n > 0
    })
}

/// A verifier that counts the certificates it accepts (see [`take_full_handshake`]).
#[derive(Debug)]
struct Counted(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for Counted {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)?;
        CHECKED.with(|c| c.set(c.get() + 1));
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any certificate (`--insecure`), still checking handshake signatures.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connection's byte stream: plain TCP or TLS over it.
pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

//! Where and how connections are made: the address, the timeouts, and TLS for https; the
//! byte stream of TCP-based protocols ([`Dial::transport`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use vload_schema::ErrorKind;

use super::quic::Endpoint;
use crate::failure::{Failure, connect_failure};
use crate::plan::AttackPlan;
use crate::tls::Io;

/// What connections are made with.
pub(crate) struct Dial {
    pub(crate) addr: SocketAddr,
    pub(crate) connect_timeout: Duration,
    /// TLS for https targets: the connector and the URL's server name (SNI).
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    /// The TLS configuration itself, which QUIC takes whole (HTTP/3).
    tls_config: Option<Arc<rustls::ClientConfig>>,
    /// HTTP/3's QUIC endpoint: made by the first connection a worker opens, shared by the
    /// others (one UDP socket a worker, see [`super::quic`]).
    quic: std::cell::OnceCell<Endpoint>,
    /// The kinds of QUIC handshakes made through it (HTTP/3's links count them).
    pub(crate) handshakes: std::rc::Rc<std::cell::Cell<vload_schema::Handshakes>>,
}

impl Dial {
    /// The dial of `plan`, with `tls`'s client configuration and server name for https.
    pub(crate) fn new(
        plan: &AttackPlan,
        tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    ) -> Dial {
        Dial {
            addr: plan.connect_to,
            connect_timeout: plan.connect_timeout,
            tls_config: tls.as_ref().map(|(config, _)| config.clone()),
            tls: tls.map(|(config, name)| (tokio_rustls::TlsConnector::from(config), name)),
            quic: std::cell::OnceCell::new(),
            handshakes: std::rc::Rc::default(),
        }
    }

    /// The worker's QUIC endpoint (HTTP/3), opened by its first connection.
    pub(crate) fn quic(&self) -> Result<&Endpoint, Failure> {
        if let Some(endpoint) = self.quic.get() {
            return Ok(endpoint);
        }
        let tls = self
            .tls_config
            .as_ref()
            .zip(self.tls.as_ref().map(|(_, name)| name));
        let endpoint = Endpoint::open(self.addr, tls)?;
        Ok(self.quic.get_or_init(|| endpoint))
    }

    /// The kinds of QUIC handshakes made through it, with the Retry round trips the
    /// worker's endpoint saw.
    pub(crate) fn handshakes(&self) -> vload_schema::Handshakes {
        let mut handshakes = self.handshakes.get();
        handshakes.retried = self.quic.get().map_or(0, Endpoint::retries);
        handshakes
    }

    /// A byte stream to the address: TCP, with TLS over it for https (`server_name` as SNI
    /// instead of the URL's host when given); how long the connect and the handshake took.
    pub(crate) async fn transport(
        &self,
        server_name: Option<&str>,
    ) -> Result<(Io, Duration, Option<Duration>), Failure> {
        let began = Instant::now();
        let stream = self.tcp().await?;
        let connect = began.elapsed();
        // Small requests must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        match &self.tls {
            None => Ok((Io::Plain(stream), connect, None)),
            Some((connector, name)) => {
                let (tls, took) = self.handshake(connector, name, server_name, stream).await?;
                Ok((Io::Tls(Box::new(tls)), connect, Some(took)))
            }
        }
    }

    async fn tcp(&self) -> Result<TcpStream, Failure> {
        match tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
            Err(_) => Err(self.connect_timed_out()),
            Ok(Err(e)) => Err(connect_failure(self.addr, &e)),
            Ok(Ok(stream)) => Ok(stream),
        }
    }

    /// A connect that did not complete within the connect timeout.
    pub(crate) fn connect_timed_out(&self) -> Failure {
        let (addr, timeout) = (self.addr, self.connect_timeout);
        (
            ErrorKind::ConnectTimeout,
            format!("no connection to {addr} within {timeout:?}"),
        )
    }

    async fn handshake(
        &self,
        connector: &tokio_rustls::TlsConnector,
        name: &ServerName<'static>,
        other: Option<&str>,
        stream: TcpStream,
    ) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Duration), Failure> {
        let addr = self.addr;
        let name = match other {
            None => name.clone(),
            Some(other) => ServerName::try_from(other.to_owned()).map_err(|_| {
                (
                    ErrorKind::Tls,
                    format!("'{other}' is not a valid TLS server name"),
                )
            })?,
        };
        let start = Instant::now();
        let handshake = connector.connect(name, stream);
        match tokio::time::timeout(self.connect_timeout, handshake).await {
            Err(_) => Err((
                ErrorKind::ConnectTimeout,
                format!(
                    "no TLS handshake with {addr} within {:?}",
                    self.connect_timeout
                ),
            )),
            Ok(Err(e)) => Err((ErrorKind::Tls, format!("TLS handshake with {addr}: {e}"))),
            Ok(Ok(tls)) => Ok((tls, start.elapsed())),
        }
    }
}

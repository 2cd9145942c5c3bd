//! HTTP/3 on the origin (`--http3`): quinn's QUIC and h3 on a UDP socket at the TCP
//! listener's port, serving every request through the same service as HTTP/1.1 and HTTP/2
//! (the same delays, slots, faults and counts). 0-RTT is accepted: rustls takes early data
//! and quinn serves the requests it carries.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt as _, Full};
use tokio::sync::watch;

use crate::config::DRAIN;
use crate::config::TlsIdentity;
use crate::service::{self, ConnState, OpenConnection, Shared};

/// Streams a client may have open at once on a connection (Caddy's and nginx's 100 would
/// hold back `--streams` above it; the origin is a test server, not the limit).
const MAX_STREAMS: u32 = 1_000;

/// QUIC's server configuration: `identity`, ALPN h3, early data accepted unless `refuse`.
pub(crate) fn server_config(
    identity: &TlsIdentity,
    refuse: bool,
) -> io::Result<quinn::ServerConfig> {
    let mut tls = identity.server_config()?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = if refuse { 0 } else { u32::MAX };
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("TLS for QUIC: {e}")))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(MAX_STREAMS.into());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// QUIC's endpoint configuration: stateless-reset tokens derived from `reset_key` when
/// given (servers sharing it reset each other's connections), else from a random key.
/// Its connection IDs are then random ones any server takes as its own: quinn's default IDs
/// carry a hash only the endpoint that made them accepts, and a packet whose ID fails that
/// check is dropped without the reset.
pub(crate) fn endpoint_config(reset_key: Option<[u8; 32]>) -> quinn::EndpointConfig {
    let Some(key) = reset_key else {
        return quinn::EndpointConfig::default();
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let mut config = quinn::EndpointConfig::new(Arc::new(key));
    config.cid_generator(|| Box::new(RandomIds));
    config
}

/// Random 8-byte connection IDs.
struct RandomIds;

impl quinn::ConnectionIdGenerator for RandomIds {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        use ring::rand::SecureRandom as _;
        let mut id = [0u8; 8];
        ring::rand::SystemRandom::new()
            .fill(&mut id)
            .expect("the system's random source works");
        quinn::ConnectionId::new(&id)
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The UDP socket at `addr` (the TCP listener's own address and port).
pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    UdpSocket::bind(addr).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("HTTP/3 needs UDP port {} too: {e}", addr.port()),
        )
    })
}

/// Serves HTTP/3 on `socket` until `shutdown`, then lets in-flight requests finish (up to
/// the drain time) and closes every connection.
pub(crate) async fn serve(
    socket: UdpSocket,
    endpoint: quinn::EndpointConfig,
    config: quinn::ServerConfig,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let endpoint = match quinn::Endpoint::new(
        endpoint,
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    ) {
        Ok(endpoint) => endpoint,
        Err(_) => return,
    };
    loop {
        tokio::select! {
            incoming = endpoint.accept() => match incoming {
                // A Retry first (`quic_retry`): the client's next Initial carries the token
                // that proves its address.
                Some(incoming) if shared.config.quic_retry && incoming.may_retry() => {
                    let _ = incoming.retry();
                }
                Some(incoming) => {
                    tokio::spawn(connection(incoming, shared.clone()));
                }
                None => break,
            },
            _ = shutdown.changed() => break,
        }
    }
    let _ = tokio::time::timeout(DRAIN, async {
        while endpoint.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    endpoint.close(H3_NO_ERROR.into(), b"shutdown");
    let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
}

async fn connection(incoming: quinn::Incoming, shared: Arc<Shared>) {
    // A handshake that fails is the client's problem: nothing to serve.
    let Ok(conn) = incoming.await else {
        return;
    };
    shared.stats.connection_opened();
    let _open = OpenConnection(shared.clone());
    let name = conn
        .handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.server_name);
    shared.stats.count_server_name(name.as_deref());
    let Ok(mut h3) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(conn.clone()))
        .await
    else {
        return;
    };
    let state = Arc::new(ConnState::new(-1));
    while let Ok(Some(resolver)) = h3.accept().await {
        let (shared, state, conn) = (shared.clone(), state.clone(), conn.clone());
        tokio::spawn(async move {
            if let Ok((request, stream)) = resolver.resolve_request().await {
                if asks_close_error(&request) {
                    conn.close(H3_INTERNAL_ERROR.into(), b"close=error");
                    return;
                }
                respond(request, stream, shared, state).await;
            }
        });
    }
}

/// HTTP/3's "no error" and "internal error" codes (RFC 9114, 8.1).
const H3_NO_ERROR: u32 = 0x100;
const H3_INTERNAL_ERROR: u32 = 0x102;

/// Whether `request` asks the server to close its connection with an error (`close=error`).
fn asks_close_error<B>(request: &http::Request<B>) -> bool {
    let query = request.uri().query().unwrap_or("");
    query.split('&').any(|pair| pair == "close=error")
}

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Reads the request's body, answers through the service, and writes the response; a
/// reset the service asks for (`?reset=`, `--reset-every`) resets the stream.
async fn respond(
    request: http::Request<()>,
    mut stream: Stream,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let mut body = BytesMut::new();
    while let Ok(Some(mut chunk)) = stream.recv_data().await {
        use bytes::Buf as _;
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    let request = request.map(|()| Full::new(body.freeze()));
    let Ok(response) = service::handle(request, shared, state).await else {
        stream.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
        return;
    };
    let (parts, mut body) = response.into_parts();
    if stream
        .send_response(http::Response::from_parts(parts, ()))
        .await
        .is_err()
    {
        return;
    }
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            stream.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
            return;
        };
        if let Ok(data) = frame.into_data()
            && stream.send_data(data).await.is_err()
        {
            return;
        }
    }
    let _ = stream.finish().await;
}

//! A fast, configurable test origin for vload: HTTP/1.1 and h2c on hyper.
//!
//! `GET /` (or any path) answers `Hello World`, the 11-byte `text/plain` backend of
//! published Varnish benchmarks. Query parameters shape any response:
//!
//! | parameter | effect |
//! | --- | --- |
//! | `size=N` | body of N bytes |
//! | `size=MIN-MAX` | body size in the range, stable per path (a hash of the path) |
//! | `delay=200ms` | wait before answering |
//! | `status=404` | response status |
//! | `cache=max-age=60`, `cache=no-store` | `Cache-Control` value |
//! | `chunked=1` | chunked transfer encoding instead of `Content-Length` |
//! | `close=1` | `Connection: close` after this response |
//! | `close=error` | HTTP/3: close the QUIC connection with `H3_INTERNAL_ERROR` instead of answering (HTTP/1.1 and HTTP/2: as `reset=1`) |
//! | `reset=1`, `reset=mid` | reset the connection (RST) before the response, or mid-body |
//! | `slow=BPS` | send the body at BPS bytes per second |
//! | `header=Name:Value` | add a response header (e.g. `X-Cache:HIT`) |
//!
//! A `Range: bytes=A-B` (or `A-`, or `-N`) on a `size=` body of status 200 is answered 206
//! with that part and its `Content-Range`, 416 past the end; several ranges get the whole
//! body. Bodies are streamed in 16 KiB slices of one static buffer, whatever their size (a
//! `size=100000000` costs the origin no more memory than `size=10`).
//!
//! `GET /stats` returns [`StatsSnapshot`] as JSON: requests total and per path, connections
//! accepted and open, so a test counts backend fetches the way cache benchmarks do.
//! `POST /plan?steps=10s:refuse,20s:up` makes the origin follow a plan of states (an outage,
//! a slowdown) from then on, each phase's requests counted (see [`OriginState`]).
//! Server-wide fault modes live in [`OriginConfig`]: a periodic stall (no response is
//! written during it: the classic coordinated-omission demonstration), closing every
//! connection after N requests, resetting every Nth request, a slow body, a fixed delay or
//! one that ramps over time (a server getting slower during a run).
//!
//! # Example
//!
//! ```
//! use vload_origin::{OriginConfig, spawn};
//!
//! let origin = spawn(OriginConfig::loopback())?; // 127.0.0.1, a free port
//! let url = origin.url();
//! assert!(url.starts_with("http://127.0.0.1:"));
//! assert_eq!(origin.stats().requests_total, 0);
//! origin.shutdown(); // graceful: in-flight responses finish
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Performance
//!
//! One thread per core, each with its own current-thread tokio runtime and its own
//! `SO_REUSEPORT` listener on the same port, so threads share nothing on the accept
//! path. Bodies are slices of a static buffer: no allocation per response. The only
//! shared state per request is a relaxed counter and the per-path map's lock.
//!
//! # Limits
//!
//! The per-path map grows with the number of distinct paths (about 100 bytes each).
//! Resets are meant for HTTP/1.1; over h2 they reset the stream.

mod body;
#[cfg(feature = "cli")]
mod cli;
mod config;
mod h3;
mod plan;
mod queue;
mod range;
mod reset;
mod service;
mod stats;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use socket2::{Domain, Socket, Type};
use tokio::sync::watch;

#[cfg(feature = "cli")]
pub use cli::{Delay, OriginArgs};
use config::DRAIN;
pub use config::{DelayRamp, OriginConfig, Stall, TlsIdentity};
pub use plan::{MOST_STEPS, OriginState, PlanPhase, PlanStep, parse_steps};
pub use queue::Service;
use service::{ConnState, OpenConnection, Shared};

pub use stats::StatsSnapshot;

fn tls_acceptor(identity: &TlsIdentity) -> io::Result<tokio_rustls::TlsAcceptor> {
    let mut config = identity.server_config()?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// A running origin. Dropping it shuts it down gracefully, as [`OriginHandle::shutdown`] does.
#[derive(Debug)]
pub struct OriginHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

/// Starts an origin on its own threads and returns once it is listening.
///
/// # Errors
/// The address cannot be bound, or a thread or runtime cannot be created.
pub fn spawn(config: OriginConfig) -> io::Result<OriginHandle> {
    let threads = config
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if !config.reuse_port && config.listen.port() != 0 {
        refuse_if_in_use(config.listen)?;
    }
    let first = bind(config.listen)?;
    let addr = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..threads {
        listeners.push(bind(addr)?);
    }
    let acceptor = config.tls.as_ref().map(tls_acceptor).transpose()?;
    let quic = match (&config.tls, config.http3) {
        (_, false) => None,
        (None, true) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "HTTP/3 is always TLS: give a certificate and key (--tls-cert, --tls-key)",
            ));
        }
        (Some(identity), true) => Some((
            h3::bind(addr)?,
            h3::server_config(identity, config.refuse_early_data)?,
            h3::endpoint_config(config.quic_reset_key),
        )),
    };
    let shared = Arc::new(Shared::new(config));
    let (shutdown, watcher) = watch::channel(false);
    let mut workers = listeners
        .into_iter()
        .enumerate()
        .map(|(i, listener)| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (shared, watcher, acceptor) = (shared.clone(), watcher.clone(), acceptor.clone());
            std::thread::Builder::new()
                .name(format!("vload-origin-{i}"))
                .spawn(move || runtime.block_on(serve(listener, shared, watcher, acceptor)))
        })
        .collect::<io::Result<Vec<_>>>()?;
    if let Some((socket, quic, endpoint)) = quic {
        // One multi-threaded runtime for QUIC: quinn's endpoint is one socket, and its
        // connections' tasks spread over the origin's threads.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?;
        socket.set_nonblocking(true)?;
        let (shared, watcher) = (shared.clone(), watcher.clone());
        workers.push(
            std::thread::Builder::new()
                .name("vload-origin-quic".into())
                .spawn(move || {
                    runtime.block_on(h3::serve(socket, endpoint, quic, shared, watcher))
                })?,
        );
    }
    Ok(OriginHandle {
        addr,
        shared,
        shutdown,
        threads: workers,
    })
}

impl OriginHandle {
    /// The address the origin listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/`, or `https://ADDR/` when it serves TLS (and HTTP/3 with it).
    pub fn url(&self) -> String {
        let scheme = if self.shared.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}/", self.addr)
    }

    /// Follows `steps` from now on, in place of any plan under way, as `POST /plan` does
    /// (offsets from now; see [`OriginState`]).
    pub fn follow(&self, steps: Vec<PlanStep>) {
        plan::start(&self.shared.plan, steps);
    }

    /// Counts since start, as `/stats` serves them.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared.snapshot()
    }

    /// Stops accepting, lets in-flight responses finish (up to 2 s), and joins the threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Blocks until SIGINT, SIGTERM or SIGHUP, then shuts down gracefully. `on_ready` runs
    /// once the signal handlers are in place (print "listening" there).
    ///
    /// # Errors
    /// The signal handlers cannot be installed.
    pub fn run_until_signal(self, on_ready: impl FnOnce()) -> io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            // Installed before `on_ready` says the server listens: a signal sent as soon as
            // the listening line appears must stop the server, not kill it.
            let mut int = signal(SignalKind::interrupt())?;
            let mut term = signal(SignalKind::terminate())?;
            let mut hup = signal(SignalKind::hangup())?;
            on_ready();
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            Ok::<_, io::Error>(())
        })?;
        self.shutdown();
        Ok(())
    }

    fn stop(&mut self) {
        self.shutdown.send_replace(true);
        for thread in self.threads.drain(..) {
            // A server thread that panicked has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

impl Drop for OriginHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The origin's own threads share one port through `SO_REUSEPORT`, which would also let it
/// join another server already listening there and silently take half a benchmark's load.
/// A plain bind (no `SO_REUSEPORT`) fails on a port someone listens on: that is the check.
fn refuse_if_in_use(addr: SocketAddr) -> io::Result<()> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    match socket.bind(&addr.into()) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "{addr} is already in use by another server: the load would be split between them; stop it, pick another --listen port, or pass --reuse-port to share the port on purpose"
            ),
        )),
        other => other,
    }
}

fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) {
    let addr = listener.local_addr().ok();
    let mut listener = Some(
        tokio::net::TcpListener::from_std(listener)
            .expect("listener is non-blocking and on a runtime"),
    );
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let live = Arc::new(());
    let mut states = shared.plan.subscribe();
    loop {
        // A plan's `refuse`: no listening socket, so a connect is refused; listening again
        // when the plan says.
        let refuse = shared.plan.now() == plan::OriginState::Refuse;
        if refuse {
            listener = None;
        } else if listener.is_none() {
            listener = addr
                .and_then(|a| bind(a).ok())
                .and_then(|l| tokio::net::TcpListener::from_std(l).ok());
        }
        let accept = async {
            match &listener {
                Some(l) => l.accept().await,
                None if refuse => std::future::pending().await,
                // The port could not be bound again: try once more shortly.
                None => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Err(io::Error::from(io::ErrorKind::AddrInUse))
                }
            }
        };
        tokio::select! {
            accepted = accept => match accepted {
                Ok((stream, _)) => {
                    let conn = Conn { builder: builder.clone(), shared: shared.clone(), shutdown: shutdown.clone(), _live: live.clone() };
                    tokio::spawn(serve_tcp(stream, acceptor.clone(), conn));
                }
                // Out of descriptors or a connection gone before accept: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            _ = states.changed() => {}
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let deadline = tokio::time::Instant::now() + DRAIN;
    while Arc::strong_count(&live) > 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What serving one connection needs.
struct Conn {
    builder: auto::Builder<TokioExecutor>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    _live: Arc<()>,
}

async fn serve_tcp(
    stream: tokio::net::TcpStream,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    conn: Conn,
) {
    let _ = stream.set_nodelay(true);
    conn.shared.stats.connection_opened();
    let _open = OpenConnection(conn.shared.clone());
    let fd = stream.as_raw_fd();
    match acceptor {
        None => serve_io(stream, fd, conn).await,
        Some(acceptor) => {
            // A failed handshake is the client's problem: close the connection.
            if let Ok(tls) = acceptor.accept(stream).await {
                let name = tls.get_ref().1.server_name();
                conn.shared.stats.count_server_name(name);
                serve_io(tls, fd, conn).await;
            }
        }
    }
}

async fn serve_io<I>(io: I, fd: RawFd, conn: Conn)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Conn {
        builder,
        shared,
        mut shutdown,
        ..
    } = conn;
    let state = Arc::new(ConnState::new(fd));
    let service = service_fn(move |req| service::handle(req, shared.clone(), state.clone()));
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

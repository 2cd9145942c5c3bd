//! Integration tests: every route and fault mode against a live origin on 127.0.0.1:0.

mod util {
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};
    use hyper::client::conn::{http1, http2};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    pub(crate) use vload_origin::{OriginConfig, OriginHandle, spawn};

    /// A response read whole, or the error that ended it.
    #[derive(Debug)]
    pub(crate) struct Got {
        pub(crate) status: u16,
        pub(crate) headers: http::HeaderMap,
        pub(crate) body: Result<Vec<u8>, String>,
        pub(crate) elapsed: Duration,
    }

    impl Got {
        pub(crate) fn text(&self) -> String {
            String::from_utf8(self.body.clone().expect("a complete body")).unwrap()
        }
        pub(crate) fn header(&self, name: &str) -> Option<&str> {
            self.headers.get(name).map(|v| v.to_str().unwrap())
        }
    }

    pub(crate) fn origin() -> OriginHandle {
        spawn(OriginConfig::loopback()).expect("origin starts")
    }

    /// One HTTP/1.1 keep-alive connection.
    pub(crate) struct Conn(http1::SendRequest<Empty<Bytes>>);

    impl Conn {
        pub(crate) async fn open(addr: SocketAddr) -> Conn {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (send, conn) = http1::handshake(TokioIo::new(stream)).await.unwrap();
            tokio::spawn(conn);
            Conn(send)
        }

        /// Sends a GET; `Err` if the request failed before a response head arrived.
        pub(crate) async fn get(&mut self, target: &str) -> Result<Got, hyper::Error> {
            let start = Instant::now();
            self.0.ready().await?;
            let req = http::Request::get(target)
                .header("host", "origin.test")
                .body(Empty::new())
                .unwrap();
            let response = self.0.send_request(req).await?;
            Ok(read(response, start).await)
        }

        pub(crate) fn is_closed(&self) -> bool {
            self.0.is_closed()
        }
    }

    async fn read(response: http::Response<hyper::body::Incoming>, start: Instant) -> Got {
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes().to_vec())
            .map_err(|e| e.to_string());
        Got {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            elapsed: start.elapsed(),
        }
    }

    pub(crate) async fn get(addr: SocketAddr, target: &str) -> Got {
        Conn::open(addr)
            .await
            .get(target)
            .await
            .expect("a response")
    }

    pub(crate) async fn get_h2(addr: SocketAddr, target: &str) -> Got {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let start = Instant::now();
        let uri = format!("http://{addr}{target}");
        let req = http::Request::get(uri).body(Empty::<Bytes>::new()).unwrap();
        read(send.send_request(req).await.unwrap(), start).await
    }
}

mod routes {
    use std::time::Duration;

    use super::util::*;

    #[tokio::test]
    async fn root_answers_hello_world() {
        let origin = origin();
        let got = get(origin.addr(), "/").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.text(), "Hello World");
        assert_eq!(got.header("content-type"), Some("text/plain"));
        assert_eq!(got.header("content-length"), Some("11"));
    }

    #[tokio::test]
    async fn size_sets_the_body_length_and_ranges_are_stable_per_path() {
        let origin = origin();
        for n in [0usize, 1, 16_384, 16_385, 100_000] {
            let got = get(origin.addr(), &format!("/?size={n}")).await;
            assert_eq!(got.body.unwrap().len(), n, "size={n}");
        }
        let a = get(origin.addr(), "/obj/1?size=10000-50000")
            .await
            .body
            .unwrap()
            .len();
        let b = get(origin.addr(), "/obj/1?size=10000-50000")
            .await
            .body
            .unwrap()
            .len();
        let c = get(origin.addr(), "/obj/2?size=10000-50000")
            .await
            .body
            .unwrap()
            .len();
        assert_eq!(a, b);
        assert!((10_000..=50_000).contains(&a) && (10_000..=50_000).contains(&c));
        assert_ne!(a, c, "different paths get different sizes");
    }

    #[tokio::test]
    async fn delay_status_and_cache_control_shape_the_response() {
        let origin = origin();
        let got = get(origin.addr(), "/?delay=200ms&status=404&cache=max-age=60").await;
        assert!(
            got.elapsed >= Duration::from_millis(200),
            "{:?}",
            got.elapsed
        );
        assert_eq!(got.status, 404);
        assert_eq!(got.header("cache-control"), Some("max-age=60"));
        let got = get(origin.addr(), "/?cache=no-store").await;
        assert_eq!(got.header("cache-control"), Some("no-store"));
    }

    #[tokio::test]
    async fn chunked_uses_transfer_encoding() {
        let origin = origin();
        let got = get(origin.addr(), "/?size=40000&chunked=1").await;
        assert_eq!(got.header("transfer-encoding"), Some("chunked"));
        assert_eq!(got.header("content-length"), None);
        assert_eq!(got.body.unwrap().len(), 40_000);
    }

    #[tokio::test]
    async fn bad_parameters_get_400_naming_the_parameter() {
        let origin = origin();
        let got = get(origin.addr(), "/?size=lots").await;
        assert_eq!(got.status, 400);
        assert!(got.text().contains("size"), "{}", got.text());
    }

    #[tokio::test]
    async fn stats_count_requests_per_path_and_connections() {
        let origin = origin();
        let mut conn = Conn::open(origin.addr()).await;
        for target in ["/", "/a", "/a", "/a?x=1"] {
            conn.get(target).await.unwrap();
        }
        get(origin.addr(), "/a").await;
        let got = get(origin.addr(), "/stats").await;
        assert_eq!(got.header("content-type"), Some("application/json"));
        let stats: vload_origin::StatsSnapshot =
            serde_json::from_slice(&got.body.unwrap()).unwrap();
        assert_eq!(stats.requests_total, 5, "/stats itself is not counted");
        assert_eq!(stats.requests_by_path["/a"], 3);
        assert_eq!(stats.requests_by_path["/a?x=1"], 1);
        assert_eq!(stats.connections_accepted, 3);
        assert!(
            stats.connections_open >= 1,
            "the first connection is still open"
        );
        assert_eq!(origin.stats().requests_total, 5);
    }

    #[tokio::test]
    async fn speaks_h2c_with_prior_knowledge() {
        let origin = origin();
        let got = get_h2(origin.addr(), "/?size=5").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body.unwrap(), b"xxxxx");
    }

    #[test]
    fn port_zero_picks_distinct_free_ports() {
        let (a, b) = (origin(), origin());
        assert_ne!(a.addr().port(), 0);
        assert_ne!(a.addr(), b.addr());
    }

    /// See #17, case 19: a second origin on a port in use bound anyway (SO_REUSEPORT) and
    /// took half of the first one's connections.
    #[test]
    fn a_port_in_use_is_refused_unless_sharing_is_asked_for() {
        let first = origin();
        let taken = OriginConfig {
            listen: first.addr(),
            threads: Some(1),
            ..OriginConfig::loopback()
        };
        let err = vload_origin::spawn(taken.clone()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
        assert!(err.to_string().contains("--reuse-port"), "{err}");
        let shared = vload_origin::spawn(OriginConfig {
            reuse_port: true,
            ..taken
        })
        .expect("--reuse-port joins the port on purpose");
        assert_eq!(shared.addr(), first.addr());
        // An address nobody listens on is taken as before.
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let own = vload_origin::spawn(OriginConfig {
            listen: free,
            threads: Some(2),
            ..OriginConfig::loopback()
        })
        .expect("a free port binds, with every thread");
        assert_eq!(own.addr(), free);
    }

    #[tokio::test]
    async fn shutdown_lets_in_flight_responses_finish() {
        let origin = origin();
        let addr = origin.addr();
        let pending = tokio::spawn(async move { get(addr, "/?delay=300ms").await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        tokio::task::spawn_blocking(move || origin.shutdown())
            .await
            .unwrap();
        let got = pending.await.unwrap();
        assert_eq!(got.text(), "Hello World");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "no longer listening"
        );
    }
}

mod faults {
    use std::time::{Duration, Instant};

    use super::util::*;
    use vload_origin::Stall;

    fn with(config: impl FnOnce(&mut OriginConfig)) -> OriginHandle {
        let mut c = OriginConfig::loopback();
        config(&mut c);
        spawn(c).unwrap()
    }

    #[tokio::test]
    async fn stall_holds_responses_until_it_ends() {
        // Stalls during [1 s, 2 s) of every 2 s.
        let start = Instant::now();
        let origin = with(|c| {
            c.stall = Some(Stall {
                every: Duration::from_secs(2),
                length: Duration::from_secs(1),
            })
        });
        let mut conn = Conn::open(origin.addr()).await;
        let before = conn.get("/").await.unwrap();
        assert!(
            before.elapsed < Duration::from_millis(500),
            "no stall at first: {:?}",
            before.elapsed
        );
        tokio::time::sleep_until((start + Duration::from_millis(1200)).into()).await;
        let stalled = conn.get("/").await.unwrap();
        assert!(
            stalled.elapsed >= Duration::from_millis(500),
            "held by the stall: {:?}",
            stalled.elapsed
        );
        let after = conn.get("/").await.unwrap();
        assert!(
            after.elapsed < Duration::from_millis(500),
            "released after the stall: {:?}",
            after.elapsed
        );
    }

    #[tokio::test]
    async fn close_after_n_requests_closes_the_connection() {
        let origin = with(|c| c.close_after = Some(3));
        let mut conn = Conn::open(origin.addr()).await;
        for i in 1..=3 {
            let got = conn.get("/").await.unwrap();
            assert_eq!(
                got.header("connection"),
                (i == 3).then_some("close"),
                "request {i}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(conn.is_closed());
    }

    #[tokio::test]
    async fn close_parameter_closes_after_this_response() {
        let origin = origin();
        let mut conn = Conn::open(origin.addr()).await;
        let got = conn.get("/?close=1").await.unwrap();
        assert_eq!(got.header("connection"), Some("close"));
        assert_eq!(got.text(), "Hello World");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(conn.is_closed());
    }

    #[tokio::test]
    async fn reset_before_response_fails_the_request() {
        let origin = origin();
        let err = Conn::open(origin.addr())
            .await
            .get("/?reset=1")
            .await
            .unwrap_err();
        let io = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<std::io::Error>());
        assert!(
            err.is_incomplete_message()
                || io.is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn reset_mid_body_fails_after_the_head() {
        let origin = origin();
        let got = Conn::open(origin.addr())
            .await
            .get("/?size=100000&reset=mid")
            .await
            .unwrap();
        assert_eq!(got.status, 200);
        assert!(
            got.body.is_err(),
            "the body must fail: {:?}",
            got.body.map(|b| b.len())
        );
    }

    #[tokio::test]
    async fn reset_every_nth_request() {
        let origin = with(|c| c.reset_every = Some(2));
        let mut results = Vec::new();
        for _ in 0..4 {
            results.push(Conn::open(origin.addr()).await.get("/").await.is_ok());
        }
        assert_eq!(results, [true, false, true, false]);
    }

    #[tokio::test]
    async fn slow_body_paces_bytes() {
        let origin = origin();
        let got = get(origin.addr(), "/?size=100&slow=200").await;
        assert_eq!(got.body.as_ref().unwrap().len(), 100);
        assert!(
            got.elapsed >= Duration::from_millis(400),
            "100 B at 200 B/s: {:?}",
            got.elapsed
        );
        let origin = with(|c| c.slow_body_bytes_per_s = Some(100));
        let got = get(origin.addr(), "/?size=50").await;
        assert!(
            got.elapsed >= Duration::from_millis(400),
            "server-wide pace: {:?}",
            got.elapsed
        );
    }

    #[tokio::test]
    async fn server_wide_delay_applies_to_every_request() {
        let origin = with(|c| c.delay = Some(Duration::from_millis(100)));
        let got = get(origin.addr(), "/").await;
        assert!(
            got.elapsed >= Duration::from_millis(100),
            "{:?}",
            got.elapsed
        );
    }

    #[tokio::test]
    async fn a_ramping_delay_grows_from_the_first_request_then_holds() {
        // From 0 to 80 ms over 1 s from the first request; the clock starts there, not at
        // the origin's start.
        let origin = with(|c| {
            c.delay_ramp = Some(vload_origin::DelayRamp {
                to: Duration::from_millis(80),
                over: Duration::from_secs(1),
            });
        });
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let first = get(origin.addr(), "/").await;
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let later = get(origin.addr(), "/").await;
        assert!(
            later.elapsed >= Duration::from_millis(80),
            "held at the end: {:?}",
            later.elapsed
        );
        // Had the ramp started with the origin, the first would have waited 80 ms too.
        assert!(
            first.elapsed < later.elapsed,
            "first {:?}, later {:?}",
            first.elapsed,
            later.elapsed
        );
    }
}

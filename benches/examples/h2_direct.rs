//! A closed-loop h2c client on the `h2` crate alone (no hyper), for benches/peers/h2-clients.sh:
//! what the `h2` crate costs a request against vload's own HTTP/2 client and hyper's
//! (docs/ARCHITECTURE.md, "vload's own HTTP/2 client"). One current-thread runtime, as a
//! vload worker; `CONNECTIONS` connections with `STREAMS` requests in flight on each for
//! `SECONDS`; prints the responses with status 200.
//!
//!   cargo run --release -p vload-benches --example h2_direct -- ADDR CONNECTIONS STREAMS SECONDS

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line bench client: its count and its usage line"
)]

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client;
use tokio::net::TcpStream;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, connections, streams, seconds] = &args[..] else {
        eprintln!("usage: h2_direct ADDR CONNECTIONS STREAMS SECONDS");
        std::process::exit(2);
    };
    let (connections, streams): (usize, usize) = (
        connections.parse().expect("CONNECTIONS"),
        streams.parse().expect("STREAMS"),
    );
    let end = Instant::now() + Duration::from_secs_f64(seconds.parse().expect("SECONDS"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    let ok = Rc::new(Cell::new(0u64));
    local.block_on(&runtime, async {
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let tcp = TcpStream::connect(addr.as_str()).await.expect("connects");
            tcp.set_nodelay(true).expect("nodelay");
            let (sender, connection) = client::handshake(tcp).await.expect("h2 handshake");
            tokio::task::spawn_local(async move {
                let _ = connection.await;
            });
            for _ in 0..streams {
                let (mut sender, ok) = (sender.clone(), ok.clone());
                let uri = format!("http://{addr}/");
                tasks.push(tokio::task::spawn_local(async move {
                    while Instant::now() < end {
                        let request = http::Request::get(&uri).body(()).expect("a request");
                        sender = sender.ready().await.expect("a stream");
                        let (response, _) = sender.send_request(request, true).expect("sent");
                        let response = response.await.expect("a response");
                        let status = response.status();
                        let mut body = response.into_body();
                        while let Some(chunk) = body.data().await {
                            let chunk: Bytes = chunk.expect("body");
                            let _ = body.flow_control().release_capacity(chunk.len());
                        }
                        if status == 200 {
                            ok.set(ok.get() + 1);
                        }
                    }
                }));
            }
        }
        for task in tasks {
            let _ = task.await;
        }
    });
    println!("{}", ok.get());
}

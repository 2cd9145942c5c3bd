use vload_engine::{Client, Driver};

use super::util::*;

/// The HTTP/1.1 clients over one target (the lean client on the epoll driver and on tokio,
/// hyper's on tokio): every request answered, bytes counted alike.
fn all(target: &str, n: u64) -> [vload_schema::RunFile; 3] {
    [
        (Client::Lean, Driver::Auto),
        (Client::Lean, Driver::Tokio),
        (Client::Hyper, Driver::Auto),
    ]
    .map(|(client, driver)| {
        let origin = origin();
        let mut p = plan(origin.addr(), target, closed(2), count(n));
        p.protocol = vload_engine::Protocol::Http1 { client };
        p.driver = driver;
        let run = attack(p);
        assert_eq!(run.totals.completed, n, "{client:?} {target}");
        assert!(
            run.totals.errors.is_empty(),
            "{client:?} {target}: {:?}",
            run.totals.errors
        );
        assert_eq!(origin.stats().requests_total, n, "{client:?} {target}");
        run
    })
}

#[test]
fn framings_are_read_alike_by_both_clients() {
    for (target, body) in [
        ("/?size=100", 100),
        ("/?size=100&chunked=1", 100),
        ("/?size=70000&chunked=1", 70_000),
        ("/?size=1000000", 1_000_000),
        ("/?size=3000&slow=200000", 3_000),
        ("/?status=204", 0),
        ("/?status=304", 0),
    ] {
        let [lean, tokio, hyper] = all(target, 20);
        assert_eq!(lean.totals.bytes_in, 20 * body, "{target}");
        for other in [&tokio, &hyper] {
            assert_eq!(other.totals.bytes_in, lean.totals.bytes_in, "{target}");
            assert_eq!(
                lean.totals.status_codes, other.totals.status_codes,
                "{target}"
            );
        }
    }
}

#[test]
fn a_server_closing_after_each_response_costs_a_connection_not_an_error() {
    for run in all("/?close=1", 30) {
        assert_eq!(run.totals.connections_opened, 30);
    }
}

#[test]
fn head_requests_expect_no_body() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/?size=500", closed(1), count(10));
    p.request.method = http::Method::HEAD;
    let run = attack(p);
    assert_eq!(run.totals.completed, 10);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.bytes_in, 0);
    assert_eq!(run.totals.connections_opened, 1, "kept alive across HEADs");
}

#[test]
fn post_bodies_arrive_with_their_length() {
    let origin = origin();
    let mut p = plan(origin.addr(), "/post", closed(1), count(10));
    p.request.method = http::Method::POST;
    p.request.body = bytes::Bytes::from_static(b"0123456789");
    let run = attack(p);
    assert!(run.totals.errors.is_empty(), "{:?}", run.totals.errors);
    assert_eq!(run.totals.bytes_out, 100);
    assert_eq!(origin.stats().requests_by_path["/post"], 10);
}

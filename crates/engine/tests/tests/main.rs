//! Integration tests of the engine against vload-origin on 127.0.0.1:0, one module an area.
//!
//! Every plain-TCP HTTP/1.1 attack with the lean client runs on the worker's own epoll loop
//! (any workload: target lists, catalogues, mixes); tokio serves TLS, HTTP/2 and hyper's
//! client. Tests of what a driver does itself (a connection's life: connects, errors,
//! timeouts, reaping, the stall probe behind the health word) run once on each, in
//! [`on_both_drivers!`] (`Driver`, a hidden setting of the plan); tests of the load model,
//! the schedule and the records, which both drivers ask the same types for, run once.
//!
//! Attacks take turns ([`util::serial`]): those whose checks time something run alone, the
//! rest side by side.

/// Each test twice, as `NAME::on_epoll` and `NAME::on_tokio`: every attack it makes runs on
/// the epoll driver where that serves it, then on tokio.
macro_rules! on_both_drivers {
    ($($(#[$meta:meta])* fn $name:ident() $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$meta])*
            fn on_epoll() {
                crate::util::on_driver(vload_engine::Driver::Auto, || $body)
            }

            $(#[$meta])*
            fn on_tokio() {
                crate::util::on_driver(vload_engine::Driver::Tokio, || $body)
            }
        }
    )*};
}

mod breakdowns;
mod client_health;
mod coordinated_omission;
mod errors;
mod http1_clients;
mod http2;
mod http3;
mod http3_faults;
mod ledger;
mod loops;
mod phases;
mod rate_plans;
mod records;
mod tls;
mod util;
mod workloads;

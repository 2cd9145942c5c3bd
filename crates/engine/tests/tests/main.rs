//! Integration tests of the engine against vload-origin on 127.0.0.1:0, one module an area.
//!
//! Plain HTTP/1.1 through the lean client runs on the worker's own epoll loop; the same
//! client on tokio serves it with TLS or target files. Tests in [`on_both_drivers!`] run
//! once on each (`Driver`, a hidden setting of the plan), so neither goes untested.

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
mod ledger;
mod loops;
mod rate_plans;
mod records;
mod tls;
mod util;
mod workloads;

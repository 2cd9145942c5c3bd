//! Integration tests of the engine against vload-origin on 127.0.0.1:0, one module an area.

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

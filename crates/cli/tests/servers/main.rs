//! vload against real servers from Debian, one module a stack: Varnish with the setups in
//! `vcl/`, the other caches (nginx, HAProxy, Squid) with those in `servers/`, and Prometheus
//! (scraping and remote write, and the Ansible lab). Each module keeps its own turn for the
//! tests that load its stack; the stacks run side by side, since what each test checks
//! (counters that agree to the request, what a cache spares the origin) holds whatever else
//! the machine does.

mod browser;
mod caches;
mod caddy;
mod common;
mod ngtcp2;
mod prometheus;
mod varnish;

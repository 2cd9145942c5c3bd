//! End-to-end tests of the `vload` binary.
mod analysis;
mod attack;
mod bad_input;
mod breakdowns;
mod catalogue;
mod ci;
mod edges;
mod history;
mod hostile;
mod http3;
mod metrics;
mod origin_command;
mod selfcheck;
mod shards;
mod sweep;
mod util;
mod workloads;

//! Integration tests of the analyzer on run files built here with known distributions.
mod compare;
mod formats;
mod merge;
mod order;
mod plot;
mod purges;
mod selfcheck;
mod server;
mod sweeps;
mod util;

//! vload's load engine: open- and closed-loop HTTP load, recorded in HdrHistograms.
//!
//! [`run`] takes an [`AttackPlan`] and returns the [`RunFile`](vload_schema::RunFile) of the attack. It blocks
//! the calling thread, which collects results while `plan.threads` worker threads
//! generate the load, each with its own connections and its own recorder (no locks or
//! shared atomics per request), on one of two drivers picked before the thread builds
//! anything: plain HTTP/1.1 through the lean client (on Linux), whatever its workload
//! (target lists, mixes, a catalogue), runs on the thread's own epoll loop, one `recv` and
//! one `send` a request and no runtime; everything else (TLS, HTTP/2, hyper's clients) on a
//! current-thread tokio runtime. Both step the
//! same clock (intervals, the window's end, interrupts, the grace period) and record
//! through the same books, so every request due ends in exactly one place either way.
//!
//! - **Closed loop** ([`Load::Closed`]): each connection sends its next request when the
//!   previous response ends. Latency is service time, subject to coordinated omission.
//! - **Open loop** ([`Load::Open`]): request k is due at `t0 + k / rate` (or Poisson).
//!   Connections open on demand up to the cap; a request that finds them all busy waits,
//!   and the wait counts. The primary latency is the response time from the *intended*
//!   send; service time and dispatch lag are recorded too. The scheduler wakes on a
//!   microsecond timer and dispatches everything due at each wake-up.
//!
//! Every second each worker ships an interval (counts and histograms) to the collector,
//! which merges them with `Histogram::add` and Chan's formula, so memory stays flat
//! however long the run. Timeouts count as errors *and* are recorded at the timeout.
//! An [`Observer`] sees each interval (the cli draws its progress line from it), and an
//! [`Interrupt`] ends the attack early with the results so far.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use vload_engine::{AttackPlan, Interrupt, Load, RequestTemplate, Stop, run};
//!
//! let url: http::Uri = "http://127.0.0.1:8081/".parse()?;
//! let plan = AttackPlan::new(
//!     RequestTemplate::get(url),
//!     "127.0.0.1:8081".parse()?,
//!     Load::Closed { connections: 50 },
//!     Stop { duration: Some(Duration::from_secs(10)), requests: None },
//! );
//! let run_file = run(plan, &mut (), &Interrupt::new())?;
//! println!("{} requests", run_file.totals.completed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Errors
//!
//! [`EngineError`] for what stops an attack from running at all (the interval log cannot
//! be written, a thread cannot start). Failed requests are never errors of `run`: they
//! are counted by [`vload_schema::ErrorKind`] in the run file.
//!
//! # Protocols
//!
//! [`Protocol`] is one value: HTTP/1.1, or HTTP/2 (h2c by prior knowledge, ALPN over TLS)
//! with N streams per connection, each through vload's lean client (the default) or
//! hyper's ([`Client`]). `https://` goes over rustls with the system's roots, a CA file, or no check.
//!
//! # Limits
//!
//! Latencies above 60 s are clamped and counted in `out_of_range`. One server address per
//! attack (targets naming other hosts go there with their Host headers and SNI).

mod arrivals;
mod assemble;
#[doc(hidden)]
pub mod bench;
mod breakdown;
pub mod burst;
mod cache;
mod collect;
mod env;
mod error;
mod failure;
#[cfg(test)]
mod fuzz;
mod h1;
mod h2;
mod h3;
mod health;
mod job;
mod ledger;
mod model;
mod observe;
mod plan;
mod protocol;
mod rate;
mod record;
mod response;
mod run;
mod schedule;
mod staged;
mod targets;
mod timing;
mod tls;
pub mod url;
mod worker;
mod workload;

pub use breakdown::UNCLASSIFIED;
pub use error::EngineError;
pub use observe::{ClientSignals, Interrupt, Observer, Progress};
pub use plan::{
    Arrival, AttackPlan, Client, Driver, Load, Protocol, RequestTemplate, Shard, Stop, UrlClass,
};
pub use rate::{RatePlan, RatePlanError, RateStage};
pub use run::run;
pub use targets::{
    Pick, SetSummary, Target, TargetError, TargetFormat, TargetPlan, TargetSet, TargetSummary,
    check_port,
};
pub use timing::DEFAULT_METRIC as SERVER_TIMING_METRIC;
pub use tls::{TlsError, TlsOptions, Verify};

/// The CPUs this process may use.
pub fn available_cores() -> u32 {
    env::cores()
}

/// Raises this process's soft limit on open files to its hard limit and returns the limit
/// now in force. [`run`] does this itself; servers started from the cli call it too.
pub fn raise_fd_limit() -> u64 {
    env::raise_fd_limit()
}

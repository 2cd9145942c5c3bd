//! The vload run file, schema v4.
//!
//! Every `vload attack` writes one JSON document per run; `vload report`, `compare` and
//! `plot` read it. This crate holds the types of that document ([`RunFile`] and what it
//! contains), the histogram codec ([`EncodedHistogram`]: HdrHistogram V2 + DEFLATE in
//! base64, readable by any HdrHistogram implementation) and exact streaming moments
//! ([`Moments`]: Welford's update, Chan's merge). It has no I/O and no async.
//!
//! # The format, field by field
//!
//! Every field name carries its unit (`_s` seconds, `_ns` nanoseconds, `bytes_`).
//! Adding a field keeps [`SCHEMA_VERSION`]; renaming or removing one, or adding a value to
//! an enumeration (which an older reader would not know), bumps it. Version 2 added the
//! error kinds `stream_reset`, `goaway` and `client_limit`, the health `signals` and their
//! causes, `totals.unsent`, `totals.queued`, `latency.queue_wait`, `intervals[].unsent`,
//! `client_health.max_thread_waiting`, `plan.server_address`, and for rate plans and sweeps
//! `plan.rate_plan`, `stages` and `sweep`; version 1 files read as before. Version 3 added
//! the ledger (below), `totals.unfinished`, `totals.stray_closes`, `totals.queue_timeouts`,
//! `intervals[].unfinished`, `intervals[].stray_closes`, `stages[].unfinished`,
//! `stages[].steady`, `plan.expect_status`, `client_health.peak_connections`, the verdicts
//! `machine_busy`, `connection_capped` and `server_limited` (one word per cause; `warn` is
//! no longer written) and the cause `server`; version 1 and 2 files read as before, without
//! the ledger's check. Version 4 renamed `server.varnish` to `server.stats`, a record any
//! server-stats source writes (`source`, `address`, once `instance`, `common` counters,
//! `troubles`); version 3 files read as before, their Varnish counters mapped onto `common`.
//! Version 5 added HTTP/3 (`plan.http_version` `3`, `totals.handshakes`) and its error kinds
//! `quic_idle_timeout`, `stateless_reset` and `quic_version`; version 4 files read as before.
//! A file's size depends on the run's duration (one [`Interval`] per second), never on
//! its request count.
//!
//! # The ledger
//!
//! Every request due ends in exactly one place, and a version 3 file says so or is refused
//! when read ([`RunFile::validate`] names the field that breaks it; vload checks its own
//! files before writing them): `intended = sent + unsent`, `sent = completed + unfinished`,
//! `completed` = the responses in `status_codes` + the failures in `errors`; the measured
//! intervals add up to the totals, count by count, and so do the stages. A request belongs
//! to the window it fell due in (open loop) or was taken up in (closed loop), wherever it
//! ended: a warm-up request answered after the warm-up is counted in the warm-up.
//!
//! - `schema_version`, `vload_version`, `run_id`, `label`, `started_at`, `interrupted`:
//!   identity of the run ([`RunFile`]).
//! - `environment`: `arch`, `os`, `cpu_model`, `cpus_available`, `kernel`, `hostname`, and
//!   when known `clock` and `governor` ([`Environment`]).
//! - `provenance` (when known): `commit`, `branch`, `commit_time`, `dirty`, `config_files`
//!   (`path`, `sha256`) ([`Provenance`]): what `vload history` keys by.
//! - `plan`: `mode` (`closed` | `open`), `target`, `method`, `headers`, `body_bytes`,
//!   `connections`, `rate_per_s`, `arrival` (`constant` | `poisson`), `seed`, `duration_s`,
//!   `requests`, `warmup_s`, `timeout_s`, `connect_timeout_s`, `http_version`, `threads`,
//!   `histogram` (`unit`, `lowest_ns`, `highest_ns`, `sigfig`), and when used `targets`
//!   (`pick`, `seed`, `passes`, `sets`: `file`, `format`, `weight`, `targets`, `lines_skipped`,
//!   `other_methods`), `connect_to`, `server_address` (where the load went),
//!   `requests_per_connection`, `streams`, `tls`, `shard`, `start_at`, `expect_status` (the
//!   statuses that count as success, ranges `from`..`to`; 200-399 when absent) ([`Plan`],
//!   [`TargetsRecord`]).
//! - `workload_hash`: SHA-256 of what was requested.
//! - `window`: `warmup_s`, `measured_s`, `wait_s` ([`Window`]).
//! - `totals`: `intended`, `sent`, `completed`, `status_codes`, `errors` (by [`ErrorKind`],
//!   each `count` and `sample`), `bytes_in`, `bytes_out`, `connections_opened`,
//!   `late_sends`, `backlog`, `out_of_range`, and when not zero `unsent` (due, never sent),
//!   `unfinished` (sent, neither answered nor failed when the run stopped waiting),
//!   `queue_timeouts` (of the request timeouts, those that never left vload's queue),
//!   `stray_closes` (connections closed for bytes after a complete response),
//!   `server_timing_beyond_wait` (misses whose `Server-Timing` exceeded their own wait, left
//!   out of `latency.origin`), `timeouts_answered_late` (request timeouts whose whole answer
//!   was waiting when vload looked, over 50 ms late) and `queued` (waited for a connection)
//!   ([`Totals`]). Error kinds:
//!   `connect_refused`, `connect_timeout`, `connect`, `request_timeout`, `reset`, `tls`,
//!   `protocol`, `body`, `stream_reset`, `goaway`, `client_limit`, `quic_idle_timeout`,
//!   `stateless_reset`, `quic_version`, `other` ([`ErrorKind`]).
//! - `latency`: `primary` (`response` | `service`) and the records `response`, `service`,
//!   `dispatch_lag`, `hiccup`, and when present `hit`, `miss`, `tls_handshake`, `tcp_connect`,
//!   `queue_wait`, `first_byte` and `transfer` (a response's two phases, adding up to its
//!   service time), `origin` and `proxy_added` (misses whose response carried the origin's
//!   own time in `Server-Timing`: that time, and the first byte's wait beyond it), each a
//!   `histogram` and exact `moments` (`n`, `mean_ns`,
//!   `m2_ns2`, `min_ns`, `max_ns`, `sum_ns`) ([`Latency`], [`LatencyRecord`], [`Moments`]).
//! - `cache`: `hit`, `miss`, `unknown`, `by_source` (`x_varnish`, `x_cache`, `age`, and
//!   when used `cache_status`, RFC 9211's header), and when present `layers` (each cache of
//!   a path: `reached`, `hits`, `misses`) and `stale_ages` (the stale answers' `Age`:
//!   `answers`, `sum_s`, `max_s`) ([`CacheCounts`], [`StaleAges`]).
//! - `breakdowns`: the measured window's requests grouped `by` `host`, `class`, `set`,
//!   `pass`, `status`, `cache` (state: `hit`, `stale`, `miss`, `pass`, `unknown`) or `size`
//!   (the body's bytes: `< 1 KiB` .. `>= 1 MiB`), each
//!   with `folded` (names beyond [`GROUP_LIMIT`], in `(other)`) and `groups`, each with
//!   `name`, `requests`, `errors`, `status_classes`, `cache` (`hit`, `stale`, `miss`,
//!   `pass`, `unknown`), `bytes_in`, `latency` (the primary kind's histogram and
//!   moments) and, by status, cache, size and class, `first_byte` and `transfer`. Each
//!   breakdown is a partition: its groups add up to the totals, or the file
//!   is refused ([`Breakdown`]). `plan.classes` lists the `--class` names and regexes.
//! - `client_health`: `cpu_s`, `cpu_util`, `max_thread_busy`, `dispatch_lag_p99_ns`,
//!   `late_sends`, `hiccup_p99_ns`, `fd_limit`, `fd_needed`, `verdict` (what limited the
//!   load: `ok` | `client_bound` | `machine_busy` | `connection_capped` | `server_limited`;
//!   `warn` in older files), `reasons`, `max_thread_waiting`, `peak_connections`, and
//!   `signals`, each with `signal`, `level` (its cause's verdict, or `ok` for a note),
//!   `cause` (`client` | `machine` | `connection_cap` | `server`) and `message`
//!   ([`ClientHealth`], [`HealthSignal`]).
//! - `stages` (rate plans and sweeps): per stage `index`, `warmup`, `start_s`, `duration_s`,
//!   `from_rate_per_s`, `to_rate_per_s`, `intended`, `sent`, `completed`, `unsent`,
//!   `late_sends`, `status_codes`, `errors`, `bytes_in`, `bytes_out`, `hits`, `misses`,
//!   `throughput_per_s`, `response`, `service`, and for sweep steps `client_health`,
//!   `server_cpu_s` and `steady` (whether the step reached a steady state, a check)
//!   ([`StageRecord`]); `sweep`: `rates_per_s`, `stage_s`, `warmup_s`, `slo`
//!   (terms of `metric` and `limit`), `find_max`, `verdict` ([`SweepRecord`]).
//! - `intervals`: per second `start_s`, `duration_s`, `warmup`, `intended`, `sent`,
//!   `completed`, `errors`, `status_classes` (`1xx`..`5xx`), `bytes_in`, `bytes_out`,
//!   `connections_opened`, `in_flight`, `unsent`, `unfinished`, `stray_closes`, `hits`,
//!   `misses`, `latency`, `server_cpu_s`, `server` (the server's counters that second)
//!   ([`Interval`]).
//!
//! # Example
//!
//! A complete document (the crate's golden test file) and how to read it:
//!
//! ```
//! use vload_schema::{LatencyKind, Mode, RunFile};
//!
//! let text = include_str!("../tests/data/golden-run.json");
//! let run = RunFile::from_json(text)?;
//! assert_eq!(run.plan.mode, Mode::Open);
//! assert_eq!(run.latency.primary, LatencyKind::Response);
//! let histogram = run.latency.primary().histogram.decode()?;
//! assert_eq!(histogram.len(), run.latency.primary().moments.n);
//! assert_eq!(run.to_json(), text); // byte for byte
//! # Ok::<(), vload_schema::SchemaError>(())
//! ```
//!
//! ```json
#![doc = include_str!("../tests/data/golden-run.json")]
//! ```
//!
//! # Errors
//!
//! Reading returns [`SchemaError`]; nothing here panics on bad input. [`RunFile::from_json`]
//! refuses a file that contradicts itself ([`RunFile::validate`]: errors above the completed
//! count, a histogram whose count is not its moments' count, another histogram layout, a
//! repeated key) and decodes histograms with bounds taken from the layout, so a hostile
//! file cannot make a reader allocate more than a real one would.
//!
//! # Limits
//!
//! Histograms cover 1 ns to 60 s at 3 significant digits (about 216 KiB in memory each,
//! a few hundred bytes compressed); slower values are clamped and counted in
//! `totals.out_of_range`.

mod breakdown;
mod cache;
mod checks;
mod codec;
mod error;
mod health;
mod measures;
mod moments;
mod plan;
mod provenance;
mod run;
mod server;
mod skip;
mod stage;
mod stampede;
mod validate;

pub use breakdown::*;
pub use cache::*;
pub use checks::*;
pub use codec::{EncodedHistogram, new_histogram};
pub use error::{SCHEMA_VERSION, SchemaError};
pub use health::*;
pub use measures::*;
pub use moments::Moments;
pub use plan::*;
pub use provenance::*;
pub use run::*;
pub use server::*;
pub use stage::*;
pub use stampede::*;

//! Criterion microbenches of vload's hot paths live in `benches/`; run them with
//! `cargo bench -p vload-benches`. The peer comparison harness is `peers/`.

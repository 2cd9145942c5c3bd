//! Other load tools' flags, named in vload's spelling when a user types them (wrk, wrk2, hey,
//! oha, ab, h2load, vegeta).

/// Other load tools' flags that vload spells differently, with vload's spelling: what a
/// user of wrk, wrk2, hey, oha, ab or vegeta types first.
const PEER_FLAGS: &[(&str, &str)] = &[
    (
        "-z",
        "hey's and oha's duration is vload's -d/--duration, e.g. -d 5s",
    ),
    (
        "-q",
        "oha's and hey's rate limit is vload's -r/--rate (the whole attack's, per second), e.g. -r 100",
    ),
    (
        "-k",
        "vload keeps connections alive by default (ab's -k); --requests-per-connection 1 turns keep-alive off",
    ),
    (
        "--vus",
        "k6's virtual users are vload's closed-loop connections: -c/--connections, e.g. -c 50",
    ),
    (
        "--rps",
        "k6's --rps and h2load's --rps (per client) are vload's -r/--rate, the whole attack's, e.g. -r 2000",
    ),
    (
        "-h2",
        "hey's -h2 is vload's --http2 (h2c for http://, ALPN for https://)",
    ),
    (
        "--h2",
        "vload's HTTP/2 flag is --http2 (--http2-client picks its implementation)",
    ),
    (
        "--h1",
        "vload speaks HTTP/1.1 by default (--http1-client picks its implementation)",
    ),
    (
        "--http-version",
        "oha's --http-version is a flag of its own here: --http3 for 3 (QUIC, https:// only), --http2 for 2; HTTP/1.1 is the default",
    ),
    (
        "--h3",
        "vload's HTTP/3 flag is --http3 (QUIC v1, https:// only)",
    ),
    (
        "--iterations",
        "k6's --iterations is vload's -n/--requests, e.g. -n 10000",
    ),
    (
        "-L",
        "oha's latency correction is built in: vload's open loop (-r) measures every request from its intended send",
    ),
    (
        "--latency-correction",
        "oha's latency correction is built in: vload's open loop (-r) measures every request from its intended send",
    ),
    (
        "-s",
        "wrk's -s runs a script, which vload does not (request lists go in --targets, --urls or --replay-log); ab's -s (a timeout) is vload's --timeout",
    ),
    (
        "-T",
        "ab's content type is a header in vload: -H 'Content-Type: ...'",
    ),
    (
        "-p",
        "ab's -p (a POST file) is vload's -m POST --body-file FILE; oha's -p (parallel HTTP/2 requests) is vload's --streams",
    ),
    (
        "-rate",
        "vegeta's -rate is vload's -r/--rate, e.g. -r 50/1s",
    ),
    (
        "-duration",
        "vegeta's -duration is vload's -d/--duration, e.g. -d 30s",
    ),
    (
        "-output",
        "vegeta's -output is vload's -o/--output (a run file), e.g. -o run.json",
    ),
    (
        "-header",
        "vegeta's -header is vload's -H/--header, e.g. -H 'X-A: 1'",
    ),
    (
        "-targets",
        "vegeta's -targets is vload's --targets (two dashes), e.g. --targets t.http",
    ),
    (
        "-timeout",
        "vegeta's -timeout is vload's --timeout (two dashes), e.g. --timeout 5s",
    ),
    (
        "-max-workers",
        "vegeta's -max-workers bounds its connections: vload's --max-connections",
    ),
    (
        "-workers",
        "vegeta's -workers is vload's --max-connections (connections open on demand)",
    ),
    (
        "-connections",
        "vegeta's -connections is vload's --max-connections",
    ),
    (
        "-body",
        "vegeta's -body is vload's --body-file (two dashes)",
    ),
    (
        "-insecure",
        "vegeta's -insecure is vload's --insecure (two dashes)",
    ),
    (
        "-D",
        "h2load's -D (duration) is vload's -d/--duration, e.g. -d 30s; wrk2's -D exp (Poisson arrivals) is vload's --arrival poisson",
    ),
];

/// A hint for a flag vload does not have but another tool does.
pub(crate) fn peer_hint(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    hint_for(arg)
}

/// The hint for `arg` (`-z`, `-rate=50/1s`), if another tool spells it so. Any single-dash
/// long flag with a value (`-output=x.bin`) is vegeta's style: clap would read it as vload's
/// short flag with the rest for value (`-o 'utput=x.bin'`), so it is named instead.
pub(crate) fn hint_for(arg: &str) -> Option<String> {
    let flag = arg.split('=').next().unwrap_or(arg);
    if let Some((_, hint)) = PEER_FLAGS.iter().find(|(peer, _)| *peer == flag) {
        return Some(format!("unknown flag '{arg}': {hint}"));
    }
    let word = flag.strip_prefix('-')?;
    let long = word.len() >= 2
        && !word.starts_with('-')
        && word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
        && arg.contains('=');
    long.then(|| {
        format!("vegeta-style flag '{arg}': vload's long flags take two dashes: --{word}=...")
    })
}

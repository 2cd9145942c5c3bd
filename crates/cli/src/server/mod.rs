//! The server's side of a run: `varnishstat -j` snapshots (`--server-stats`) and the CPU
//! time of a watched process from `/proc` (`--watch-pid`), taken at the edges of the
//! measured window.

pub(crate) mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};
use vload_schema::{ProcessRecord, VarnishRecord};

/// Counters kept from Varnish's MAIN section, as increases over the window.
const COUNTERS: &[&str] = &[
    "uptime",
    "client_req",
    "cache_hit",
    "cache_hit_grace",
    "cache_hitpass",
    "cache_hitmiss",
    "cache_miss",
    "backend_req",
    "backend_conn",
    "backend_reuse",
    "backend_fail",
    "backend_unhealthy",
    "fetch_failed",
    "sess_conn",
    "sess_fail",
    "sess_drop",
    "sess_dropped",
    "sess_queued",
    "req_dropped",
    "client_req_400",
    "n_lru_nuked",
    "n_expired",
    "threads_limited",
    "threads_failed",
    "threads_created",
    "s_pass",
    "s_pipe",
    "s_synth",
    "s_resp_hdrbytes",
    "s_resp_bodybytes",
    "esi_errors",
    "losthdr",
];

/// The requests sent to every backend, the sum of `VBE.*.req`: Varnish counts each under its
/// backend's lock, so it is exact, where `MAIN.backend_req` is a plain `++` on a shared
/// counter from every fetch thread at once (`cache_http1_fetch.c`) and loses an increment now
/// and then under concurrency (999 of 1,000 fetches in a CI run, for good).
pub(crate) const VBE_REQ: &str = "vbe_req";

/// Gauges kept as their value at the end of the window.
const GAUGES: &[&str] = &[
    "n_object",
    "threads",
    "thread_queue_len",
    "pools",
    "n_backend",
];

/// What `--server-stats` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerStats {
    /// `varnish` or `varnish:NAME` (the `-n` of varnishd and varnishstat).
    Varnish { instance: Option<String> },
}

impl std::str::FromStr for ServerStats {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "varnish" => Ok(ServerStats::Varnish { instance: None }),
            Some(("varnish", name)) if !name.is_empty() => Ok(ServerStats::Varnish {
                instance: Some(name.to_owned()),
            }),
            _ => Err(format!(
                "unknown server '{s}': expected varnish or varnish:NAME (NAME as in varnishstat -n)"
            )),
        }
    }
}

/// Varnish's MAIN counters and gauges at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VarnishSnapshot {
    layout: &'static str,
    counters: BTreeMap<String, u64>,
    gauges: BTreeMap<String, u64>,
}

/// Runs `varnishstat -j` once.
pub(crate) fn varnishstat(instance: Option<&str>) -> anyhow::Result<VarnishSnapshot> {
    let mut command = Command::new("varnishstat");
    command.arg("-j");
    if let Some(name) = instance {
        command.args(["-n", name]);
    }
    let which = instance.map_or_else(|| "varnish".to_owned(), |n| format!("varnish:{n}"));
    let output = command.output().with_context(|| {
        format!(
            "--server-stats {which}: cannot run varnishstat: is Varnish installed on this machine?"
        )
    })?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        let why = why
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        bail!(
            "--server-stats {which}: varnishstat failed ({}): {why}; is varnishd running with that -n?",
            output.status
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    parse_varnishstat(&text).map_err(|why| anyhow::anyhow!("--server-stats {which}: {why}"))
}

impl VarnishSnapshot {
    /// `MAIN.client_req`.
    pub(crate) fn client_req(&self) -> u64 {
        self.counters.get("client_req").copied().unwrap_or(0)
    }

    /// `MAIN.cache_hit + MAIN.cache_miss`: one per lookup, so one per request vload sent.
    fn lookups(&self) -> u64 {
        let c = |name: &str| self.counters.get(name).copied().unwrap_or(0);
        c("cache_hit") + c("cache_miss")
    }
}

/// How long the counters may take to settle after an attack. Measured on a loaded 2-core
/// machine: 100 ms of a still client_req was not enough (cache_hit + cache_miss then lagged
/// vload's count by 5 of 200), nor, beside `stress-ng --cpu 8 --io 4` (load 15, its sync()
/// calls stall the threads that write Varnish's shared memory), 1.5 s of still counters (one
/// lookup of 200 came later).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(6);

/// Still counters this many 100 ms reads in a row, with lookups missing, end the wait: the
/// requests were lost on the way.
const GIVE_UP_STILL: u32 = 30;

/// The counters that must hold still before the last snapshot: the client's requests and
/// lookups, and the fetches they caused.
const SETTLING: [&str; 7] = [
    "client_req",
    "cache_hit",
    "cache_miss",
    VBE_REQ,
    "backend_req",
    "backend_conn",
    "backend_reuse",
];

/// The counters once Varnish has published everything: after the attack's connections
/// close, workers add their counts. Reads until Varnish has counted a lookup for each of the
/// `expected` requests since `start` and the [`SETTLING`] counters hold still, or until nothing has moved
/// for 3 s (requests lost on the way, which the report then names), at most
/// [`SETTLE`].
pub(crate) fn settled_varnishstat(
    instance: Option<&str>,
    start: &VarnishSnapshot,
    expected: u64,
) -> anyhow::Result<VarnishSnapshot> {
    let began = std::time::Instant::now();
    let mut last = varnishstat(instance)?;
    let mut still = 0;
    while began.elapsed() < SETTLE {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let next = varnishstat(instance)?;
        // The backend's counters are published by other threads than the client's: a
        // lookup counted does not mean its fetch is. Settled is the request counters still
        // for 200 ms. (A `backend_req` one short for good is Varnish's own lost update, see
        // [`VBE_REQ`], which no wait mends.)
        let moved = SETTLING
            .iter()
            .any(|name| next.counters.get(*name) != last.counters.get(*name));
        still = if moved { 0 } else { still + 1 };
        let complete = next.lookups().saturating_sub(start.lookups()) >= expected;
        last = next;
        // Incomplete and still for 3 s: requests lost on the way (a loaded machine's
        // Varnish can take over a second to publish a closed connection's counts).
        if (complete && still >= 2) || still >= GIVE_UP_STILL {
            break;
        }
    }
    Ok(last)
}

/// Reads varnishstat's JSON: counters under `"counters"` since Varnish 6.5, at the top
/// level before.
pub(crate) fn parse_varnishstat(text: &str) -> Result<VarnishSnapshot, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("varnishstat printed no JSON that vload can read ({e})"))?;
    let (layout, fields) = match value.get("counters").and_then(|c| c.as_object()) {
        Some(counters) => ("counters", counters),
        None => (
            "top level",
            value
                .as_object()
                .ok_or("varnishstat's JSON is not an object")?,
        ),
    };
    let mut snapshot = VarnishSnapshot {
        layout,
        counters: BTreeMap::new(),
        gauges: BTreeMap::new(),
    };
    for (name, field) in fields {
        let Some(value) = field.get("value").and_then(serde_json::Value::as_u64) else {
            continue;
        };
        if name.starts_with("VBE.") && name.ends_with(".req") {
            *snapshot.counters.entry(VBE_REQ.to_owned()).or_default() += value;
            continue;
        }
        let Some(short) = name.strip_prefix("MAIN.") else {
            continue;
        };
        if COUNTERS.contains(&short) {
            snapshot.counters.insert(short.to_owned(), value);
        } else if GAUGES.contains(&short) {
            snapshot.gauges.insert(short.to_owned(), value);
        }
    }
    if !snapshot.counters.contains_key("client_req") {
        return Err("varnishstat's JSON has no MAIN.client_req counter".into());
    }
    Ok(snapshot)
}

/// The window between two snapshots, or why it cannot be trusted.
pub(crate) fn varnish_window(
    instance: Option<&str>,
    covers: &str,
    start: &VarnishSnapshot,
    end: &VarnishSnapshot,
) -> Result<VarnishRecord, String> {
    let uptime = |s: &VarnishSnapshot| s.counters.get("uptime").copied();
    if let (Some(a), Some(b)) = (uptime(start), uptime(end))
        && b < a
    {
        return Err("varnishd restarted during the attack: its counters start again from zero, so no deltas are kept".into());
    }
    let counters = end
        .counters
        .iter()
        .map(|(name, value)| {
            let before = start.counters.get(name).copied().unwrap_or(0);
            (name.clone(), value.saturating_sub(before))
        })
        .collect();
    Ok(VarnishRecord {
        instance: instance.unwrap_or_default().to_owned(),
        covers: covers.to_owned(),
        counters,
        gauges: end.gauges.clone(),
        layout: end.layout.to_owned(),
    })
}

/// CPU time of a process and its descendants, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ProcessCpu {
    pub(crate) user: u64,
    pub(crate) system: u64,
    pub(crate) processes: u32,
}

/// Seconds per clock tick of `/proc/PID/stat`.
pub(crate) fn tick_s() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1.0 / if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// One `/proc/PID/stat` line: (parent pid, user ticks, system ticks).
fn parse_stat(text: &str) -> Option<(u32, u64, u64)> {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime 14, stime 15.
    Some((
        fields.get(1)?.parse().ok()?,
        fields.get(11)?.parse().ok()?,
        fields.get(12)?.parse().ok()?,
    ))
}

/// CPU used so far by `pid` and every live descendant (a process's threads are in its
/// own line; Varnish's worker is a child of the process started).
pub(crate) fn process_cpu(pid: u32) -> anyhow::Result<ProcessCpu> {
    let root = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| parse_stat(&text))
        .with_context(|| format!("--watch-pid {pid}: no such process"))?;
    let mut children: BTreeMap<u32, Vec<(u32, u64, u64)>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let path: PathBuf = entry.path().join("stat");
            if let Some((parent, user, system)) = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| parse_stat(&text))
            {
                children
                    .entry(parent)
                    .or_default()
                    .push((child, user, system));
            }
        }
    }
    let mut total = ProcessCpu {
        user: root.1,
        system: root.2,
        processes: 1,
    };
    let mut stack = vec![pid];
    while let Some(parent) = stack.pop() {
        for &(child, user, system) in children.get(&parent).map_or(&[][..], Vec::as_slice) {
            total.user += user;
            total.system += system;
            total.processes += 1;
            stack.push(child);
        }
    }
    Ok(total)
}

/// The process's command name.
pub(crate) fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The window between two CPU samples.
pub(crate) fn process_window(pid: u32, start: ProcessCpu, end: ProcessCpu) -> ProcessRecord {
    let tick = tick_s();
    ProcessRecord {
        pid,
        name: process_name(pid),
        processes: end.processes,
        user_s: end.user.saturating_sub(start.user) as f64 * tick,
        system_s: end.system.saturating_sub(start.system) as f64 * tick,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SINCE_6_5: &str = r#"{
      "version": 1, "timestamp": "2026-11-22T05:00:00",
      "counters": {
        "MGT.uptime": {"description": "Management process uptime", "flag": "c", "format": "d", "value": 50},
        "MAIN.uptime": {"description": "Child process uptime", "flag": "c", "format": "d", "value": 40},
        "MAIN.client_req": {"description": "Good client requests received", "flag": "c", "format": "i", "value": 1000},
        "MAIN.cache_hit": {"description": "Cache hits", "flag": "c", "format": "i", "value": 990},
        "MAIN.cache_miss": {"description": "Cache misses", "flag": "c", "format": "i", "value": 10},
        "MAIN.n_object": {"description": "object structs made", "flag": "g", "format": "i", "value": 10},
        "MAIN.backend_req": {"description": "Backend requests made", "flag": "c", "format": "i", "value": 9},
        "VBE.boot.default.req": {"description": "Backend requests sent", "flag": "c", "format": "i", "value": 7},
        "VBE.boot.other.req": {"description": "Backend requests sent", "flag": "c", "format": "i", "value": 3},
        "VBE.boot.default.reqs": {"description": "not a request count", "flag": "c", "format": "i", "value": 500},
        "SMA.s0.c_req": {"description": "Allocator requests", "flag": "c", "format": "i", "value": 77}
      }
    }"#;

    const BEFORE_6_5: &str = r#"{
      "timestamp": "2019-01-01T00:00:00",
      "MAIN.uptime": {"description": "Child process uptime", "flag": "c", "format": "d", "value": 45},
      "MAIN.client_req": {"description": "Good client requests received", "flag": "c", "format": "i", "value": 1600},
      "MAIN.cache_hit": {"description": "Cache hits", "flag": "c", "format": "i", "value": 1580},
      "MAIN.cache_miss": {"description": "Cache misses", "flag": "c", "format": "i", "value": 20},
      "MAIN.n_object": {"description": "object structs made", "flag": "g", "format": "i", "value": 20}
    }"#;

    #[test]
    fn reads_both_varnishstat_layouts_and_keeps_deltas() {
        let start = parse_varnishstat(SINCE_6_5).unwrap();
        assert_eq!(start.layout, "counters");
        assert_eq!(start.counters["cache_hit"], 990);
        assert!(!start.counters.contains_key("c_req"), "only MAIN counters");
        assert_eq!(start.counters["backend_req"], 9);
        assert_eq!(
            start.counters[VBE_REQ], 10,
            "the sum of every backend's VBE.*.req"
        );
        let end = parse_varnishstat(BEFORE_6_5).unwrap();
        assert_eq!(end.layout, "top level");
        let window = varnish_window(Some("v1"), "measured", &start, &end).unwrap();
        assert_eq!(window.counters["client_req"], 600);
        assert_eq!(window.counters["cache_hit"], 590);
        assert_eq!(window.counters["uptime"], 5);
        assert_eq!(window.gauges["n_object"], 20, "a gauge keeps its end value");
        assert_eq!(window.instance, "v1");
    }

    #[test]
    fn a_restart_or_garbage_is_refused() {
        let start = parse_varnishstat(BEFORE_6_5).unwrap();
        let end = parse_varnishstat(SINCE_6_5).unwrap();
        let err = varnish_window(None, "attack", &start, &end).unwrap_err();
        assert!(err.contains("restarted"), "{err}");
        assert!(parse_varnishstat("Usage: varnishstat").is_err());
        assert!(parse_varnishstat(r#"{"counters": {}}"#).is_err());
    }

    #[test]
    fn server_stats_names() {
        assert_eq!(
            "varnish".parse::<ServerStats>(),
            Ok(ServerStats::Varnish { instance: None })
        );
        assert_eq!(
            "varnish:/tmp/v1".parse::<ServerStats>(),
            Ok(ServerStats::Varnish {
                instance: Some("/tmp/v1".into())
            })
        );
        assert!("nginx".parse::<ServerStats>().is_err());
        assert!("varnish:".parse::<ServerStats>().is_err());
    }

    #[test]
    fn stat_lines_with_odd_command_names() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 4 0 1 0";
        assert_eq!(parse_stat(line), Some((7, 250, 31)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_cpu_counts_and_grows() {
        let me = std::process::id();
        let before = process_cpu(me).unwrap();
        // Spin until /proc says 100 ms of CPU went by: on a loaded machine that takes longer
        // than 100 ms of wall time (bounded at 30 s).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let record = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let record = process_window(me, before, process_cpu(me).unwrap());
            if record.cpu_s() >= 0.1 || start.elapsed() > std::time::Duration::from_secs(30) {
                break record;
            }
        };
        assert!(record.cpu_s() >= 0.1, "{record:?}");
        assert!(process_cpu(u32::MAX).is_err());
    }
}

//! Varnish's counters: `varnishstat -j` (`--server-stats varnish[:NAME]`, NAME as in
//! varnishd's and varnishstat's `-n`).

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use anyhow::bail;
use vload_schema::CommonCounters;

use super::source::{Kind, Snapshot, Source};

pub(super) const KIND: Kind = Kind {
    name: "varnish",
    address: "the instance's name (varnishstat -n)",
    default: Some(""),
    open: |instance| {
        Ok(Box::new(Varnish {
            instance: (!instance.is_empty()).then(|| instance.to_owned()),
        }))
    },
};

struct Varnish {
    instance: Option<String>,
}

impl Source for Varnish {
    fn version(&self, deadline: crate::side::Deadline) -> Option<String> {
        // varnishd prints `varnishd (varnish-7.1.1 revision ...)` on stderr.
        let out = crate::side::output(Command::new("varnishd").arg("-V"), 4096, deadline).ok()?;
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains("varnish-"))?;
        let start = line.find("varnish-")?;
        Some(line[start..].split([' ', ')']).next()?.to_owned())
    }

    fn read(&self, deadline: crate::side::Deadline) -> anyhow::Result<Snapshot> {
        varnishstat(self.instance.as_deref(), deadline)
    }

    fn common(&self, increase: &BTreeMap<String, u64>, _own: u64) -> CommonCounters {
        vload_schema::varnish_common(increase)
    }

    fn troubles(&self) -> &'static [(&'static str, &'static str)] {
        vload_schema::VARNISH_TROUBLES
    }

    /// `cache_hit + cache_miss`: one per lookup, so one per request vload sent, and counted
    /// after the request.
    fn progress(&self, common: &CommonCounters) -> u64 {
        common.hits.unwrap_or(0) + common.misses.unwrap_or(0)
    }

    /// Measured on a loaded 2-core machine: 100 ms of a still client_req was not enough
    /// (cache_hit + cache_miss then lagged vload's count by 5 of 200), nor, beside
    /// `stress-ng --cpu 8 --io 4` (load 15, its sync() calls stall the threads that write
    /// Varnish's shared memory), 1.5 s of still counters (one lookup of 200 came later).
    fn settle(&self) -> Duration {
        Duration::from_secs(6)
    }
}

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
const VBE_REQ: &str = "vbe_req";

/// Gauges kept as their value at the end of the window.
const GAUGES: &[&str] = &[
    "n_object",
    "threads",
    "thread_queue_len",
    "pools",
    "n_backend",
];

/// Runs `varnishstat -j` once.
fn varnishstat(
    instance: Option<&str>,
    deadline: crate::side::Deadline,
) -> anyhow::Result<Snapshot> {
    let mut command = Command::new("varnishstat");
    command.arg("-j");
    if let Some(name) = instance {
        command.args(["-n", name]);
    }
    let output = crate::side::output(&mut command, 16 << 20, deadline).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!("cannot run varnishstat: is Varnish installed on this machine?")
        } else {
            anyhow::anyhow!("varnishstat: {e}")
        }
    })?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        let why = why
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        bail!(
            "varnishstat failed ({}): {why}; is varnishd running with that -n?",
            output.status
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    parse_varnishstat(&text).map_err(|why| anyhow::anyhow!(why))
}

/// Reads varnishstat's JSON: counters under `"counters"` since Varnish 6.5, at the top
/// level before.
fn parse_varnishstat(text: &str) -> Result<Snapshot, String> {
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
    let mut snapshot = Snapshot {
        layout,
        ..Snapshot::default()
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

    fn reader() -> super::super::Reader {
        super::super::Reader::open(&"varnish:v1".parse().unwrap())
    }

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
        let window = reader().window("measured", &start, &end).unwrap();
        assert_eq!(window.counters["client_req"], 600);
        assert_eq!(window.counters["cache_hit"], 590);
        assert_eq!(window.counters["uptime"], 5);
        assert_eq!(window.gauges["n_object"], 20, "a gauge keeps its end value");
        assert_eq!(window.address, "v1");
        assert_eq!(window.source, "varnish");
        assert_eq!(window.common.requests, Some(600));
        assert_eq!(window.common.hits, Some(590));
        assert_eq!(window.common.misses, Some(10));
    }

    #[test]
    fn a_restart_or_garbage_is_refused() {
        let start = parse_varnishstat(BEFORE_6_5).unwrap();
        let end = parse_varnishstat(SINCE_6_5).unwrap();
        let err = reader().window("attack", &start, &end).unwrap_err();
        assert!(err.contains("restarted"), "{err}");
        assert!(parse_varnishstat("Usage: varnishstat").is_err());
        assert!(parse_varnishstat(r#"{"counters": {}}"#).is_err());
    }
}

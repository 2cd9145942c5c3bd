//! HAProxy's counters: `show stat` on its stats socket (`--server-stats haproxy[:SOCKET]`,
//! `stats socket PATH` in its global section; Debian's default `/run/haproxy/admin.sock`).
//! A read on the socket is no HTTP request, so nothing of vload's own is counted. Frontends'
//! counters are summed (requests, connections, bytes, cache lookups and hits), backends'
//! (errors, retries, and cache lookups where the cache sits in a backend), and servers'
//! (the requests that reached the origin).

use std::collections::BTreeMap;

use anyhow::bail;
use vload_schema::CommonCounters;

use super::source::{Kind, Snapshot, Source};

pub(super) const KIND: Kind = Kind {
    name: "haproxy",
    address: "the path of its stats socket (stats socket PATH)",
    default: Some("/run/haproxy/admin.sock"),
    open: |path| {
        if path.starts_with("http://") || path.contains(":/") {
            return Err(
                "give the path of HAProxy's stats socket (stats socket PATH), not a URL".into(),
            );
        }
        Ok(Box::new(HaProxy(path.to_owned())))
    },
};

struct HaProxy(String);

/// The counters kept of each row, summed over the rows of a type.
const COUNTERS: &[&str] = &[
    "stot",
    "req_tot",
    "conn_tot",
    "bin",
    "bout",
    "dreq",
    "dresp",
    "ereq",
    "econ",
    "eresp",
    "wretr",
    "wredis",
    "cli_abrt",
    "srv_abrt",
    "intercepted",
    "cache_lookups",
    "cache_hits",
    "hrsp_1xx",
    "hrsp_2xx",
    "hrsp_3xx",
    "hrsp_4xx",
    "hrsp_5xx",
    "hrsp_other",
];

/// The gauges kept, summed the same way.
const GAUGES: &[&str] = &["scur", "qcur"];

/// `show stat`'s `type` column: the names the sums are kept under.
const TYPES: [(&str, &str); 3] = [("0", "frontend"), ("1", "backend"), ("2", "server")];

impl Source for HaProxy {
    fn version(&self, deadline: crate::side::Deadline) -> Option<String> {
        let info = super::fetch::unix_command(&self.0, "show info\n", deadline).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("Version:"))
            .map(|v| format!("HAProxy {}", v.trim()))
    }

    fn read(&self, deadline: crate::side::Deadline) -> anyhow::Result<Snapshot> {
        let text = super::fetch::unix_command(&self.0, "show stat\n", deadline)?;
        match parse_show_stat(&text) {
            Ok(snapshot) => Ok(snapshot),
            Err(why) => bail!("{why}"),
        }
    }

    fn common(&self, increase: &BTreeMap<String, u64>, _own: u64) -> CommonCounters {
        let c = |name: &str| increase.get(name).copied();
        let both = |field: &str| {
            let (a, b) = (
                c(&format!("frontend.{field}")),
                c(&format!("backend.{field}")),
            );
            a.map(|a| a + b.unwrap_or(0))
        };
        let hits = both("cache_hits");
        CommonCounters {
            requests: c("frontend.req_tot"),
            hits,
            misses: both("cache_lookups")
                .zip(hits)
                .map(|(l, h)| l.saturating_sub(h)),
            origin_requests: c("server.req_tot"),
            connections: c("frontend.conn_tot"),
            bytes_out: c("frontend.bout"),
            ..CommonCounters::default()
        }
    }

    fn troubles(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "frontend.ereq",
                "HAProxy got client requests it could not read (bad or timed out)",
            ),
            ("backend.econ", "HAProxy failed to connect to a server"),
            ("backend.eresp", "HAProxy's responses from servers failed"),
            ("backend.wretr", "HAProxy retried connections to servers"),
        ]
    }
}

/// Reads `show stat`'s CSV: a `# pxname,svname,...` header, then a row per proxy and server.
fn parse_show_stat(text: &str) -> Result<Snapshot, String> {
    let mut lines = text.lines();
    let header = lines.next().and_then(|h| h.strip_prefix("# ")).ok_or(
        "the stats socket did not answer show stat's CSV (is it HAProxy's, and 1.5 or later?)",
    )?;
    let columns: Vec<&str> = header.split(',').collect();
    let at = |name: &str| columns.iter().position(|c| *c == name);
    let type_at = at("type").ok_or("show stat's CSV has no type column")?;
    let mut snapshot = Snapshot::default();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').collect();
        let Some(&(_, kind)) = TYPES.iter().find(|(t, _)| fields.get(type_at) == Some(t)) else {
            continue;
        };
        for (names, into) in [
            (COUNTERS, &mut snapshot.counters),
            (GAUGES, &mut snapshot.gauges),
        ] {
            for name in names {
                let value = at(name)
                    .and_then(|i| fields.get(i))
                    .and_then(|v| v.parse::<u64>().ok());
                if let Some(value) = value {
                    let sum = into.entry(format!("{kind}.{name}")).or_default();
                    *sum = sum.saturating_add(value);
                }
            }
        }
    }
    if !snapshot.counters.contains_key("frontend.req_tot") {
        return Err(
            "HAProxy's stats name no HTTP frontend (no req_tot): is it in mode http?".into(),
        );
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real `show stat` of HAProxy 2.6 with `servers/haproxy.cfg`, after one miss and
    /// three hits.
    const SHOW_STAT: &str = include_str!("testdata/haproxy-2.6-show-stat.csv");

    #[test]
    fn reads_show_stat() {
        let s = parse_show_stat(SHOW_STAT).unwrap();
        assert_eq!(s.counters["frontend.req_tot"], 4);
        assert_eq!(s.counters["frontend.cache_hits"], 3);
        assert_eq!(s.counters["server.req_tot"], 1);
        let empty = Snapshot::default();
        let haproxy = HaProxy(String::new());
        let common = haproxy.common(&super::super::increase(&empty, &s), 0);
        assert_eq!(common.requests, Some(4));
        assert_eq!(common.hits, Some(3));
        assert_eq!(common.misses, Some(1));
        assert_eq!(common.origin_requests, Some(1));
        assert_eq!(common.bytes_out, Some(548));
        assert!(parse_show_stat("Unknown command.\n").is_err());
    }
}

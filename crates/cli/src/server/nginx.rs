//! nginx's counters: its stub_status page (`--server-stats nginx:URL`). stub_status counts
//! connections and requests only; whether each response was a hit is in the
//! `$upstream_cache_status` nginx adds to it (`add_header X-Cache $upstream_cache_status`),
//! which vload reads per response. Each read of the page is a request and a connection
//! nginx counts: they are taken out.

use std::collections::BTreeMap;

use anyhow::Context as _;
use vload_schema::CommonCounters;

use super::fetch::HttpUrl;
use super::source::{Kind, Snapshot, Source};

pub(super) const KIND: Kind = Kind {
    name: "nginx",
    address: "the URL of its stub_status page (location /status { stub_status; })",
    default: None,
    open: |url| Ok(Box::new(Nginx(HttpUrl::parse(url)?))),
};

struct Nginx(HttpUrl);

/// Connections nginx accepted but could not handle (its `worker_connections` reached):
/// `accepts - handled`.
const UNHANDLED: &str = "unhandled";

impl Source for Nginx {
    fn read(&self, deadline: crate::side::Deadline) -> anyhow::Result<Snapshot> {
        let (page, server) = self.0.get_page(deadline)?;
        let mut snapshot =
            parse_stub_status(&page).context("the page is not nginx's stub_status")?;
        snapshot.version = server;
        Ok(snapshot)
    }

    fn common(&self, increase: &BTreeMap<String, u64>, own: u64) -> CommonCounters {
        let c = |name: &str| increase.get(name).copied();
        CommonCounters {
            requests: c("requests").map(|n| n.saturating_sub(own)),
            connections: c("accepts").map(|n| n.saturating_sub(own)),
            dropped: c(UNHANDLED),
            ..CommonCounters::default()
        }
    }

    fn troubles(&self) -> &'static [(&'static str, &'static str)] {
        &[(
            UNHANDLED,
            "nginx accepted connections it could not handle (worker_connections reached)",
        )]
    }
}

/// Reads stub_status's page:
///
/// ```text
/// Active connections: 1
/// server accepts handled requests
///  4 4 4
/// Reading: 0 Writing: 1 Waiting: 0
/// ```
fn parse_stub_status(page: &str) -> Option<Snapshot> {
    let mut lines = page.lines().map(str::trim);
    let active = lines
        .next()?
        .strip_prefix("Active connections:")?
        .trim()
        .parse()
        .ok()?;
    if lines.next()? != "server accepts handled requests" {
        return None;
    }
    let numbers: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [accepts, handled, requests] = numbers[..] else {
        return None;
    };
    let mut gauges = BTreeMap::from([("active".to_owned(), active)]);
    let states: Vec<&str> = lines.next()?.split_whitespace().collect();
    for pair in states.chunks(2) {
        if let [name, value] = pair {
            let name = name.trim_end_matches(':').to_ascii_lowercase();
            gauges.insert(name, value.parse().ok()?);
        }
    }
    Some(Snapshot {
        counters: BTreeMap::from([
            ("accepts".to_owned(), accepts),
            ("handled".to_owned(), handled),
            ("requests".to_owned(), requests),
            (UNHANDLED.to_owned(), accepts.saturating_sub(handled)),
        ]),
        gauges,
        ..Snapshot::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "Active connections: 3 \nserver accepts handled requests\n 40 38 1000 \nReading: 0 Writing: 1 Waiting: 2 \n";

    #[test]
    fn reads_stub_status() {
        let s = parse_stub_status(PAGE).unwrap();
        assert_eq!(s.counters["requests"], 1000);
        assert_eq!(s.counters[UNHANDLED], 2);
        assert_eq!(s.gauges["active"], 3);
        assert_eq!(s.gauges["waiting"], 2);
        assert!(parse_stub_status("<html>Welcome to nginx!</html>").is_none());
        assert!(
            parse_stub_status("Active connections: 3\nserver accepts handled requests\n 1 2\n")
                .is_none()
        );
    }

    #[test]
    fn its_own_reads_are_taken_out() {
        let nginx = Nginx(HttpUrl::parse("http://127.0.0.1/status").unwrap());
        let increase = BTreeMap::from([
            ("requests".to_owned(), 103),
            ("accepts".to_owned(), 13),
            (UNHANDLED.to_owned(), 0),
        ]);
        let common = nginx.common(&increase, 3);
        assert_eq!(common.requests, Some(100));
        assert_eq!(common.connections, Some(10));
        assert_eq!(common.hits, None, "stub_status has no cache counts");
    }
}

//! Squid's counters: its cache manager's `counters` page (`--server-stats squid[:URL]`,
//! the URL of Squid's port, e.g. `http://127.0.0.1:3128`; the page is
//! `/squid-internal-mgr/counters` on it, and `http_access allow localhost manager` lets
//! loopback read it). Squid counts each read of the page as a client request, after it
//! answers: they are taken out.

use std::collections::BTreeMap;

use anyhow::bail;
use vload_schema::CommonCounters;

use super::fetch::HttpUrl;
use super::source::{Kind, Snapshot, Source};

pub(super) const KIND: Kind = Kind {
    name: "squid",
    address: "the URL of its port (http://127.0.0.1:3128)",
    default: Some("http://127.0.0.1:3128"),
    open: |url| {
        let mut url = HttpUrl::parse(url)?;
        if url.path == "/" {
            url.path = "/squid-internal-mgr/counters".to_owned();
        }
        Ok(Box::new(Squid(url)))
    },
};

struct Squid(HttpUrl);

/// The counters kept: the client side's and the origin side's.
const PREFIXES: &[&str] = &[
    "client_http.",
    "server.all.",
    "server.http.",
    "aborted_requests",
];

impl Source for Squid {
    fn read(&self, deadline: crate::side::Deadline) -> anyhow::Result<Snapshot> {
        let (page, server) = self.0.get_page(deadline)?;
        match parse_counters(&page) {
            Some(snapshot) => Ok(Snapshot {
                version: server,
                ..snapshot
            }),
            None => {
                bail!("the page is not Squid's cache manager counters (no client_http.requests)")
            }
        }
    }

    fn common(&self, increase: &BTreeMap<String, u64>, own: u64) -> CommonCounters {
        let c = |name: &str| increase.get(name).copied();
        let requests = c("client_http.requests").map(|n| n.saturating_sub(own));
        let hits = c("client_http.hits");
        CommonCounters {
            requests,
            hits,
            // Every request Squid did not answer from its cache.
            misses: requests.zip(hits).map(|(r, h)| r.saturating_sub(h)),
            origin_requests: c("server.all.requests"),
            bytes_out: c("client_http.kbytes_out").map(|kb| kb * 1024),
            ..CommonCounters::default()
        }
    }

    fn troubles(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "client_http.errors",
                "Squid answered client requests with errors",
            ),
            ("server.all.errors", "Squid's requests to the origin failed"),
            ("aborted_requests", "Squid's clients aborted requests"),
        ]
    }
}

/// Reads the `name = value` lines of the counters page, integers only.
fn parse_counters(page: &str) -> Option<Snapshot> {
    let mut snapshot = Snapshot::default();
    for line in page.lines() {
        let Some((name, value)) = line.split_once(" = ") else {
            continue;
        };
        let name = name.trim();
        if !PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        if let Ok(value) = value.trim().parse::<u64>() {
            snapshot.counters.insert(name.to_owned(), value);
        }
    }
    snapshot
        .counters
        .contains_key("client_http.requests")
        .then_some(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real counters page of Squid 5.7 with `servers/squid.conf`.
    const PAGE: &str = include_str!("testdata/squid-5.7-counters.txt");

    #[test]
    fn reads_the_counters_page() {
        let s = parse_counters(PAGE).unwrap();
        assert!(s.counters.contains_key("client_http.hits"));
        assert!(s.counters.contains_key("server.all.requests"));
        assert!(
            !s.counters.contains_key("cpu_time"),
            "not an integer, not kept"
        );
        assert!(parse_counters("<html>ERROR: Cache Access Denied</html>").is_none());
    }

    #[test]
    fn its_own_reads_are_taken_out() {
        let squid = Squid(HttpUrl::parse("http://127.0.0.1:3128/").unwrap());
        let increase = BTreeMap::from([
            ("client_http.requests".to_owned(), 105),
            ("client_http.hits".to_owned(), 90),
            ("server.all.requests".to_owned(), 10),
            ("client_http.kbytes_out".to_owned(), 2),
        ]);
        let common = squid.common(&increase, 5);
        assert_eq!(common.requests, Some(100));
        assert_eq!(common.misses, Some(10));
        assert_eq!(common.origin_requests, Some(10));
        assert_eq!(common.bytes_out, Some(2048));
    }
}

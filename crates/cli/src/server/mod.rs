//! The server's side of a run: its own counters (`--server-stats SOURCE[:WHERE]`) and the CPU
//! time of a watched process (`--watch-pid`), taken at the edges of the measured window.
//!
//! A source of counters is one module and one entry in [`SOURCES`]: it reads the server's
//! counters into a [`Snapshot`] in the server's own names, and maps a window's increases onto
//! the [`CommonCounters`] every source shares. What is generic (reading at the edges,
//! waiting for the counters to settle, telling a restart, taking out the reader's own
//! requests) is here.

pub(crate) mod fetch;
mod haproxy;
mod nginx;
mod process;
mod source;
mod squid;
mod varnish;
pub(crate) mod watch;

use std::collections::BTreeMap;
use std::time::Duration;

use vload_schema::{CommonCounters, StatsRecord};

pub(crate) use process::{ProcessCpu, process_cpu, process_window, tick_s};
pub(crate) use source::{Kind, Snapshot, Source};

use crate::side::Deadline;

/// Every source `--server-stats` knows: adding one is a module and a line here.
const SOURCES: &[Kind] = &[varnish::KIND, nginx::KIND, haproxy::KIND, squid::KIND];

/// What `--server-stats` names: a source and where to read it.
#[derive(Clone)]
pub(crate) struct ServerStats {
    kind: &'static Kind,
    address: String,
}

impl std::fmt::Debug for ServerStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl PartialEq for ServerStats {
    fn eq(&self, other: &Self) -> bool {
        self.kind.name == other.kind.name && self.address == other.address
    }
}

impl std::str::FromStr for ServerStats {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (name, address) = match s.split_once(':') {
            Some((name, address)) => (name, Some(address)),
            None => (s, None),
        };
        let names = || {
            SOURCES
                .iter()
                .map(|k| k.name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let kind = SOURCES
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| format!("unknown server '{name}': expected one of {}", names()))?;
        let address = match (address, kind.default) {
            (Some(a), _) if !a.is_empty() => a.to_owned(),
            (None, Some(default)) => default.to_owned(),
            _ => return Err(format!("{name} needs {}: {name}:ADDRESS", kind.address)),
        };
        (kind.open)(&address).map_err(|why| {
            let shown = vload_engine::url::hide_passwords(&address);
            format!("{name}:{shown}: {why}")
        })?;
        Ok(ServerStats { kind, address })
    }
}

impl ServerStats {
    /// How the flag named it, e.g. `nginx:http://127.0.0.1:8080/status`, a password in it
    /// hidden.
    pub(crate) fn label(&self) -> String {
        if self.address.is_empty() {
            self.kind.name.to_owned()
        } else {
            format!("{}:{}", self.kind.name, self.shown_address())
        }
    }

    /// The address as the run file and messages show it: a password in it hidden.
    pub(crate) fn shown_address(&self) -> String {
        vload_engine::url::hide_passwords(&self.address)
    }
}

/// Reads one server's counters, counting its own reads.
pub(crate) struct Reader {
    spec: ServerStats,
    source: Box<dyn Source>,
    reads: u64,
    version: Option<String>,
}

impl Reader {
    pub(crate) fn open(spec: &ServerStats) -> Reader {
        let source = (spec.kind.open)(&spec.address).expect("checked when the flag was parsed");
        Reader {
            spec: spec.clone(),
            source,
            reads: 0,
            version: None,
        }
    }

    /// The counters now, read before `deadline`; an error names the flag and the server.
    pub(crate) fn read(&mut self, deadline: Deadline) -> anyhow::Result<Snapshot> {
        self.reads += 1;
        let mut snapshot = self
            .source
            .read(deadline)
            .map_err(|e| anyhow::anyhow!("--server-stats {}: {e:#}", self.spec.label()))?;
        snapshot.reads = self.reads;
        if self.version.is_none() && self.reads == 1 {
            self.version = snapshot
                .version
                .take()
                .or_else(|| self.source.version(deadline));
        }
        Ok(snapshot)
    }

    /// The common counters between two snapshots.
    pub(crate) fn common(&self, start: &Snapshot, end: &Snapshot) -> CommonCounters {
        self.source
            .common(&increase(start, end), end.reads.saturating_sub(start.reads))
    }

    /// The common counters of one second, or `None` when a counter fell or leapt between
    /// its two snapshots (a restart, a reset, a wrap, a garbled page): that second is
    /// unknown, and the next is counted from the new values.
    pub(crate) fn second(&self, start: &Snapshot, end: &Snapshot) -> Option<CommonCounters> {
        broken(start, end)
            .is_none()
            .then(|| self.common(start, end))
    }

    /// The counters once the server has published everything: reads until it has counted
    /// `expected` requests since `start` and its common counters have held still for two
    /// reads, or until nothing has moved for 3 s (requests lost on the way, which the report
    /// then names), at most the source's settling time, or `hurry` when the run was
    /// interrupted: every read and the wait as a whole end by then.
    pub(crate) fn settled(
        &mut self,
        start: &Snapshot,
        expected: u64,
        hurry: bool,
    ) -> anyhow::Result<Snapshot> {
        let bound = if hurry {
            HURRIED_SETTLE
        } else {
            self.source.settle()
        };
        let all = Deadline::after(bound);
        let one = || all.min(Deadline::after(READ_BOUND));
        let mut last = self.read(one())?;
        let mut still = 0;
        while !all.passed() {
            std::thread::sleep(Duration::from_millis(100));
            let Ok(next) = self.read(one()) else {
                // The source stopped answering while it settled: the last read stands.
                break;
            };
            // Still: nothing counted between the two reads but the reads themselves.
            let moved = self.common(&last, &next) != self.common(&last, &last_read(&last));
            still = if moved { 0 } else { still + 1 };
            let complete = self.source.progress(&self.common(start, &next)) >= expected;
            last = next;
            if (complete && still >= 2) || still >= GIVE_UP_STILL {
                break;
            }
        }
        Ok(last)
    }

    /// The window between two snapshots, or why it cannot be trusted.
    pub(crate) fn window(
        &self,
        covers: &str,
        start: &Snapshot,
        end: &Snapshot,
    ) -> Result<StatsRecord, String> {
        if let Some(why) = broken(start, end) {
            return Err(format!(
                "{} {why}, so no increases are kept",
                self.spec.kind.name
            ));
        }
        let counters = increase(start, end);
        Ok(StatsRecord {
            source: self.spec.kind.name.to_owned(),
            address: self.spec.shown_address(),
            covers: covers.to_owned(),
            common: self.common(start, end),
            troubles: vload_schema::troubles(&counters, self.source.troubles()),
            counters,
            gauges: end.gauges.clone(),
            layout: end.layout.to_owned(),
            version: self.version.clone(),
        })
    }
}

/// Why a window's counters cannot be trusted: one went down (a restart, a reset, a counter
/// that wrapped) or rose more than any server counts in a run (a garbled page, a wrap the
/// other way).
fn broken(start: &Snapshot, end: &Snapshot) -> Option<String> {
    start.counters.iter().find_map(|(name, &before)| {
        let after = *end.counters.get(name)?;
        if after < before {
            Some(format!(
                "restarted, reset or wrapped its counters during the attack ({name} went from {before} to {after})"
            ))
        } else if after - before > LEAP {
            Some(format!(
                "printed {name} rising by {after_minus}, more than any server counts in a run (a wrapped counter or a garbled page)",
                after_minus = after - before
            ))
        } else {
            None
        }
    })
}

/// The most a counter may rise between two reads: 2^48, a million requests a second for
/// nine years.
const LEAP: u64 = 1 << 48;

/// How long one read of the counters may take while the counters settle.
const READ_BOUND: Duration = Duration::from_secs(5);

/// How long the counters may settle after an interrupted run: Ctrl-C asks to be done.
const HURRIED_SETTLE: Duration = Duration::from_secs(1);

/// Still counters this many 100 ms reads in a row, with requests missing, end the wait: the
/// requests were lost on the way.
const GIVE_UP_STILL: u32 = 30;

/// A snapshot of the same counters one read later: what the next read shows when nothing
/// but the read itself happened.
fn last_read(snapshot: &Snapshot) -> Snapshot {
    Snapshot {
        reads: snapshot.reads + 1,
        ..snapshot.clone()
    }
}

/// Every counter's increase from `start` to `end` (a counter new at the end counts whole).
fn increase(start: &Snapshot, end: &Snapshot) -> BTreeMap<String, u64> {
    end.counters
        .iter()
        .map(|(name, value)| {
            let before = start.counters.get(name).copied().unwrap_or(0);
            (name.clone(), value.saturating_sub(before))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_stats_names() {
        let varnish: ServerStats = "varnish".parse().unwrap();
        assert_eq!(varnish.label(), "varnish");
        assert_eq!(
            "varnish:/tmp/v1".parse::<ServerStats>().unwrap().label(),
            "varnish:/tmp/v1"
        );
        let nginx: ServerStats = "nginx:http://127.0.0.1:8080/status".parse().unwrap();
        assert_eq!(nginx.kind.name, "nginx");
        assert_eq!(nginx.address, "http://127.0.0.1:8080/status");
        let err = "nginx".parse::<ServerStats>().unwrap_err();
        assert!(err.contains("stub_status"), "{err}");
        let err = "nginx:https://127.0.0.1/status"
            .parse::<ServerStats>()
            .unwrap_err();
        assert!(err.contains("http://"), "{err}");
        assert_eq!(
            "haproxy".parse::<ServerStats>().unwrap().address,
            "/run/haproxy/admin.sock"
        );
        let err = "lighttpd".parse::<ServerStats>().unwrap_err();
        assert!(err.contains("varnish, nginx, haproxy, squid"), "{err}");
        assert!("varnish:".parse::<ServerStats>().is_err());
    }

    /// A source that counts its own reads as requests, like nginx.
    struct Counting;

    impl Source for Counting {
        fn read(&self, _: Deadline) -> anyhow::Result<Snapshot> {
            unreachable!("not read in this test")
        }

        fn common(&self, increase: &BTreeMap<String, u64>, own: u64) -> CommonCounters {
            CommonCounters {
                requests: increase.get("requests").map(|r| r.saturating_sub(own)),
                ..CommonCounters::default()
            }
        }
    }

    fn snapshot(requests: u64, reads: u64) -> Snapshot {
        Snapshot {
            counters: BTreeMap::from([("requests".to_owned(), requests)]),
            reads,
            ..Snapshot::default()
        }
    }

    #[test]
    fn windows_take_out_the_reads_and_refuse_a_restart() {
        let reader = Reader {
            spec: "nginx:http://127.0.0.1:1/status".parse().unwrap(),
            source: Box::new(Counting),
            reads: 0,
            version: None,
        };
        // 100 client requests between reads 1 and 4, which counted 3 more.
        let window = reader
            .window("measured", &snapshot(10, 1), &snapshot(113, 4))
            .unwrap();
        assert_eq!(window.common.requests, Some(100));
        assert_eq!(window.counters["requests"], 103, "the server's own figure");
        assert_eq!(window.source, "nginx");
        let err = reader
            .window("measured", &snapshot(113, 4), &snapshot(2, 5))
            .unwrap_err();
        assert!(err.contains("restarted"), "{err}");
        assert_eq!(reader.second(&snapshot(113, 4), &snapshot(2, 5)), None);
        assert!(reader.second(&snapshot(2, 5), &snapshot(40, 6)).is_some());
        // A counter that leaps to near 2^64 (wrapped backwards, or garbage) is refused too.
        let err = reader
            .window("measured", &snapshot(10, 1), &snapshot(u64::MAX - 5, 2))
            .unwrap_err();
        assert!(err.contains("more than any server counts"), "{err}");
        assert_eq!(
            reader.second(&snapshot(10, 1), &snapshot(u64::MAX - 5, 2)),
            None
        );
    }
}

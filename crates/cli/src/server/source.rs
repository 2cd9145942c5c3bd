//! What a server-stats source is: a kind of server ([`Kind`]: its name, its address, how it
//! is opened) and its counters' reader ([`Source`]), and what a read gives ([`Snapshot`]).
//! Each server is a file of its own beside this one, and one line in the list of sources.

use std::collections::BTreeMap;
use std::time::Duration;

use vload_schema::CommonCounters;

/// A kind of server whose counters vload reads.
pub(crate) struct Kind {
    /// Its name in `--server-stats` and in the run file's `source`.
    pub(super) name: &'static str,
    /// What follows the colon, for errors: e.g. `"the URL of its stub_status page"`.
    pub(super) address: &'static str,
    /// The address when none is given, or `None` when one must be.
    pub(super) default: Option<&'static str>,
    /// Checks an address and makes the source (no I/O yet).
    pub(super) open: fn(&str) -> Result<Box<dyn Source>, String>,
}

/// One server's counters.
pub(crate) trait Source: Send {
    /// The counters now, in the server's own names (the reader's own request for them
    /// included, where the server counts it), read before `deadline` (the whole exchange).
    fn read(&self, deadline: crate::side::Deadline) -> anyhow::Result<Snapshot>;

    /// The common counters of a window from its counters' increases; `own` is how many
    /// reads of the counters fell in the window, for a server that counts them as requests.
    fn common(&self, increase: &BTreeMap<String, u64>, own: u64) -> CommonCounters;

    /// The server's version, where the source tells it apart from its counters (asked once,
    /// after the first read that worked, within what is left of that read's deadline);
    /// sources whose page says it set [`Snapshot::version`] instead.
    fn version(&self, _deadline: crate::side::Deadline) -> Option<String> {
        None
    }

    /// Counters whose rise means trouble, and what each means.
    fn troubles(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The count that rises once for every request a client completed: requests, or
    /// Varnish's lookups, which it publishes last.
    fn progress(&self, common: &CommonCounters) -> u64 {
        common.requests.unwrap_or(0)
    }

    /// How long the counters may lag the responses the client saw, at most: the wait ends
    /// as soon as they are complete and still, so a long bound costs nothing when they are
    /// prompt (a server on a loaded machine can take seconds to count what it answered).
    fn settle(&self) -> Duration {
        Duration::from_secs(6)
    }
}

/// A server's counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Snapshot {
    /// Counters (only ever rising while the server runs), by the server's names.
    pub(super) counters: BTreeMap<String, u64>,
    /// Gauges, by the server's names.
    pub(super) gauges: BTreeMap<String, u64>,
    /// How the server printed them, where it has more than one way (varnishstat's layouts).
    pub(super) layout: &'static str,
    /// Reads of the counters so far, this one included.
    pub(super) reads: u64,
    /// The server's version, when the page that carried the counters said it (its `Server`
    /// header).
    pub(super) version: Option<String>,
}

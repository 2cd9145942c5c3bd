//! Where requests come from: URL lists, vegeta targets, JSON lines, access-log replay.
//!
//! Lists of up to [`HELD_TARGETS`] targets are held in memory, each target then prepared
//! once as its client sends it, so that drawing one costs an index (docs/ARCHITECTURE.md,
//! "Every workload on the fast path"); longer files are read as streams: a worker holds one
//! reader and a line number, so a million-line list costs what a ten-line one does. `--pick
//! random` always holds the list, since it needs any target at any time.
//! [`TargetPlan::validate`] says which in its summary. Before an attack every file is read
//! once to count its targets, hash them into the workload hash, and find malformed lines (an
//! error naming the file and the line, or, with `skip_bad_lines`, a count).

mod read;
mod types;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use read::check_port;
use read::display;
pub(crate) use read::{Item, TargetReader};
pub use types::{
    Pick, SetSummary, Target, TargetError, TargetFormat, TargetPlan, TargetSet, TargetSummary,
};

impl TargetPlan {
    /// Reads every file once: counts, hashes, finds malformed lines; holds the lists for
    /// random picks and short lists in memory.
    ///
    /// # Errors
    /// A file cannot be opened, has no targets, or has a malformed line (unless skipped).
    pub fn validate(&self) -> Result<TargetSummary, TargetError> {
        let mut census = Census::default();
        let mut sets = Vec::new();
        // A random pick needs every target at hand; other picks hold short lists.
        let must_hold = matches!(self.pick, Pick::Random { .. });
        let mut held = Some(Vec::new());
        for set in &self.sets {
            let mut reader = TargetReader::open(set)?;
            let mut summary = SetSummary {
                targets: 0,
                skipped: 0,
                other_methods: 0,
            };
            let mut list = Vec::new();
            while let Some(item) = reader.next_item() {
                match item {
                    Item::Target(t) => {
                        summary.targets += 1;
                        census.count(&t);
                        if must_hold || census.targets <= HELD_TARGETS as u64 {
                            list.push(t);
                        } else {
                            (held, list) = (None, Vec::new());
                        }
                    }
                    Item::Bad(_) if self.skip_bad_lines => summary.skipped += 1,
                    Item::Bad(e) => return Err(e),
                    Item::OtherMethod => summary.other_methods += 1,
                }
            }
            if summary.targets == 0 {
                return Err(TargetError {
                    file: display(&set.path),
                    line: 0,
                    message: "no targets in this file".into(),
                });
            }
            sets.push(summary);
            if let Some(held) = &mut held {
                held.push(list);
            }
        }
        Ok(census.summary(sets, held))
    }
}

/// What validation learns of the targets as it reads them.
#[derive(Default)]
struct Census {
    targets: u64,
    hash: Sha256,
    hosts: Vec<String>,
    vhosts: VirtualHosts,
    paths: u64,
    first_origin: Option<String>,
    schemes: (u64, u64),
}

impl Census {
    fn count(&mut self, t: &Target) {
        self.targets += 1;
        feed(&mut self.hash, t);
        match (&t.authority, t.https) {
            (Some(a), Some(https)) => {
                let scheme = if https { "https" } else { "http" };
                self.first_origin
                    .get_or_insert_with(|| format!("{scheme}://{a}"));
                if https {
                    self.schemes.1 += 1;
                } else {
                    self.schemes.0 += 1;
                }
            }
            _ => self.paths += 1,
        }
        if let Some(a) = &t.authority
            && self.hosts.len() < 16
            && !self.hosts.iter().any(|h| h == a.as_str())
        {
            self.hosts.push(a.as_str().to_owned());
        }
        self.vhosts.count(t);
    }

    fn summary(self, sets: Vec<SetSummary>, held: Option<Vec<Vec<Target>>>) -> TargetSummary {
        TargetSummary {
            sets,
            hash: self.hash.finalize().into(),
            hosts: self.hosts,
            vhosts_untracked: self.vhosts.untracked,
            vhosts: self.vhosts.busiest_first(),
            paths: self.paths,
            first_origin: self.first_origin,
            schemes: self.schemes,
            held: held.is_some(),
            loaded: held.map(Arc::new),
        }
    }
}

/// The most targets (of every file of an attack together) held in memory for a sequential or
/// round-robin pick: about 10 MB of requests at 50 bytes each. Longer lists are streamed.
pub(crate) const HELD_TARGETS: usize = 200_000;

/// Targets by the host they are addressed to, as the request will name it.
#[derive(Default)]
struct VirtualHosts {
    /// Host, then (targets, first seen).
    seen: std::collections::HashMap<String, (u64, usize)>,
    untracked: u64,
}

impl VirtualHosts {
    fn count(&mut self, t: &Target) {
        let host = t
            .headers
            .get(http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| t.authority.as_ref().map(|a| a.as_str()))
            .unwrap_or("");
        let order = self.seen.len();
        match self.seen.get_mut(host) {
            Some((n, _)) => *n += 1,
            None if order < types::VHOSTS_TRACKED => {
                self.seen.insert(host.to_owned(), (1, order));
            }
            None => self.untracked += 1,
        }
    }

    fn busiest_first(self) -> Vec<(String, u64)> {
        let mut all: Vec<_> = self.seen.into_iter().collect();
        all.sort_by_key(|(_, (n, first))| (std::cmp::Reverse(*n), *first));
        all.into_iter().map(|(h, (n, _))| (h, n)).collect()
    }
}

fn feed(hash: &mut Sha256, t: &Target) {
    if let Some(m) = &t.method {
        hash.update(m.as_str());
    }
    hash.update(b" ");
    if let Some(a) = &t.authority {
        hash.update(a.as_str());
    }
    hash.update(t.path.as_str());
    for (n, v) in &t.headers {
        hash.update(n.as_str());
        hash.update(v.as_bytes());
    }
    hash.update(&t.body);
    hash.update(b"\n");
}

#[cfg(test)]
pub(crate) mod testing {
    //! Target files for the tests of the modules that read them.
    use std::io::Write as _;
    use std::path::PathBuf;

    use super::*;

    pub(crate) fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vload-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }

    pub(crate) fn plan(path: PathBuf, format: TargetFormat, pick: Pick) -> TargetPlan {
        TargetPlan {
            sets: vec![TargetSet {
                path,
                format,
                weight: 1,
            }],
            pick,
            passes: None,
            skip_bad_lines: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read::MAX_LINE;
    use super::testing::{file, plan};
    use super::*;

    #[test]
    fn a_file_that_is_no_target_list_is_refused_at_its_first_long_line() {
        let path = std::env::temp_dir().join(format!("vload-long-{}.txt", std::process::id()));
        let mut text = "/ok\n".to_owned();
        text.push_str(&"x".repeat(MAX_LINE + 10));
        text.push_str("\n/after\n");
        std::fs::write(&path, text).unwrap();
        let mut p = plan(path.clone(), TargetFormat::Urls, Pick::Sequential);
        let e = p.validate().unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("longer than 1 MiB"), "{e}");
        p.skip_bad_lines = true;
        let summary = p.validate().unwrap();
        assert_eq!((summary.sets[0].targets, summary.sets[0].skipped), (2, 1));
        std::fs::write(&path, b"/a\n\xff\xfe\n").unwrap();
        let e = plan(path.clone(), TargetFormat::Urls, Pick::Sequential)
            .validate()
            .unwrap_err();
        assert!(e.message.contains("not UTF-8"), "{e}");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn malformed_lines_name_file_and_line_or_are_counted() {
        let path = file("bad.txt", "/ok\nnot a url\n/ok2\n");
        let mut p = plan(path, TargetFormat::Urls, Pick::Sequential);
        let err = p.validate().unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("bad.txt:2:"), "{err}");
        p.skip_bad_lines = true;
        let summary = p.validate().unwrap();
        assert_eq!((summary.sets[0].targets, summary.sets[0].skipped), (2, 1));
    }
}

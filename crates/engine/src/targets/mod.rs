//! Where requests come from: URL lists, vegeta targets, JSON lines, access-log replay.
//!
//! Files are read as streams: a worker holds one reader and a line number, so a
//! million-line list costs what a ten-line one does. Only `--pick random` loads the list
//! into memory, since it needs any target at any time; [`TargetPlan::validate`] says so
//! in its summary. Before an attack every file is read once to count its targets, hash
//! them into the workload hash, and find malformed lines (an error naming the file and the
//! line, or, with `skip_bad_lines`, a count).

mod read;
mod stream;
mod types;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use read::check_port;
use read::{Item, TargetReader, display};
pub(crate) use stream::{FileStream, TargetStream, pass_share};
pub use types::{
    Pick, SetSummary, Target, TargetError, TargetFormat, TargetPlan, TargetSet, TargetSummary,
};

impl TargetPlan {
    /// Reads every file once: counts, hashes, finds malformed lines; loads the lists for
    /// random picks.
    ///
    /// # Errors
    /// A file cannot be opened, has no targets, or has a malformed line (unless skipped).
    pub fn validate(&self) -> Result<TargetSummary, TargetError> {
        let mut hash = Sha256::new();
        let mut sets = Vec::new();
        let mut hosts: Vec<String> = Vec::new();
        let mut vhosts = VirtualHosts::default();
        let (mut paths, mut first_origin, mut schemes) = (0, None, (0, 0));
        let load = matches!(self.pick, Pick::Random { .. });
        let mut loaded = Vec::new();
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
                        feed(&mut hash, &t);
                        match (&t.authority, t.https) {
                            (Some(a), Some(https)) => {
                                let scheme = if https { "https" } else { "http" };
                                first_origin.get_or_insert_with(|| format!("{scheme}://{a}"));
                                if https {
                                    schemes.1 += 1;
                                } else {
                                    schemes.0 += 1;
                                }
                            }
                            _ => paths += 1,
                        }
                        if let Some(a) = &t.authority
                            && hosts.len() < 16
                            && !hosts.iter().any(|h| h == a.as_str())
                        {
                            hosts.push(a.as_str().to_owned());
                        }
                        vhosts.count(&t);
                        if load {
                            list.push(t);
                        }
                    }
                    Item::Bad(e) if self.skip_bad_lines => {
                        let _ = e;
                        summary.skipped += 1;
                    }
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
            loaded.push(list);
        }
        Ok(TargetSummary {
            sets,
            hash: hash.finalize().into(),
            hosts,
            vhosts_untracked: vhosts.untracked,
            vhosts: vhosts.busiest_first(),
            paths,
            first_origin,
            schemes,
            loaded: load.then(|| Arc::new(loaded)),
        })
    }
}

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
mod tests {
    use std::io::Write as _;
    use std::path::PathBuf;

    use bytes::Bytes;
    use http::Method;

    use super::read::MAX_LINE;
    use super::*;
    use crate::plan::Shard;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vload-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }

    fn plan(path: PathBuf, format: TargetFormat, pick: Pick) -> TargetPlan {
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

    fn collect(p: &TargetPlan, n: usize, worker: u32, workers: u32) -> Vec<String> {
        let summary = p.validate().unwrap();
        let mut s = FileStream::new(p, &summary, worker, workers, Shard::WHOLE).unwrap();
        (0..n)
            .map(|_| s.next().unwrap().0.path.to_string())
            .collect()
    }

    #[test]
    fn url_lists_take_paths_and_absolute_urls() {
        let p = plan(
            file("u1.txt", "# comment\n/a\n\nhttp://h.example:8080/b?x=1\n"),
            TargetFormat::Urls,
            Pick::Sequential,
        );
        let summary = p.validate().unwrap();
        assert_eq!(summary.sets[0].targets, 2);
        assert_eq!(summary.hosts, ["h.example:8080"]);
        assert_eq!(collect(&p, 5, 0, 1), ["/a", "/b?x=1", "/a", "/b?x=1", "/a"]);
    }

    #[test]
    fn workers_take_disjoint_shares_in_order() {
        let p = plan(
            file("u2.txt", "/0\n/1\n/2\n/3\n/4\n"),
            TargetFormat::Urls,
            Pick::Sequential,
        );
        assert_eq!(collect(&p, 3, 0, 2), ["/0", "/2", "/4"]);
        assert_eq!(collect(&p, 4, 1, 2), ["/1", "/3", "/1", "/3"]);
        assert_eq!(collect(&p, 4, 0, 2), ["/0", "/2", "/4", "/0"]);
        assert_eq!(pass_share(5, 3, 0, 2), 9);
        assert_eq!(pass_share(5, 3, 1, 2), 6);
    }

    #[test]
    fn shards_take_every_nth_target_from_their_index_in_order_and_at_random() {
        let list: String = (0..10).map(|i| format!("/{i}\n")).collect();
        let p = plan(file("u3.txt", &list), TargetFormat::Urls, Pick::Sequential);
        let summary = p.validate().unwrap();
        // Shard 1 of 3 with two workers: global workers 1 and 4 of 6.
        let take = |worker: u32, n: usize| {
            let shard = Shard { index: 1, count: 3 };
            let mut s = FileStream::new(&p, &summary, worker, 6, shard).unwrap();
            (0..n)
                .map(|_| s.next().unwrap().0.path.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(take(1, 2), ["/1", "/7"]);
        assert_eq!(take(4, 1), ["/4"]);
        assert_eq!(pass_share(10, 1, 1, 6) + pass_share(10, 1, 4, 6), 3);
        let p = plan(
            file("u4.txt", &list),
            TargetFormat::Urls,
            Pick::Random { seed: 7 },
        );
        let summary = p.validate().unwrap();
        let shard = Shard { index: 2, count: 4 };
        let mut s = FileStream::new(&p, &summary, 2, 4, shard).unwrap();
        let seen: std::collections::BTreeSet<String> = (0..200)
            .map(|_| s.next().unwrap().0.path.to_string())
            .collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["/2", "/6"]);
    }

    #[test]
    fn vegeta_targets_carry_method_headers_and_body() {
        let body = file("body.bin", "payload");
        let text = format!(
            "GET http://a.example/x\nX-A: 1\n\nPOST http://a.example/y\nContent-Type: text/plain\n@{}\n",
            body.file_name().unwrap().to_str().unwrap()
        );
        let p = plan(file("t.txt", &text), TargetFormat::Vegeta, Pick::Sequential);
        let summary = p.validate().unwrap();
        let mut s = FileStream::new(&p, &summary, 0, 1, Shard::WHOLE).unwrap();
        let a = s.next().unwrap().0;
        assert_eq!(a.method, Some(Method::GET));
        assert_eq!(a.headers["x-a"], "1");
        let b = s.next().unwrap().0;
        assert_eq!(b.method, Some(Method::POST));
        assert_eq!(b.body, Bytes::from_static(b"payload"));
    }

    #[test]
    fn json_lines_follow_vegetas_json_format() {
        let p = plan(
            file(
                "t.json",
                "{\"method\":\"PUT\",\"url\":\"http://a/b\",\"header\":{\"X-B\":[\"2\",\"3\"]},\"body\":\"aGk=\"}\n",
            ),
            TargetFormat::JsonLines,
            Pick::Sequential,
        );
        let summary = p.validate().unwrap();
        let t = FileStream::new(&p, &summary, 0, 1, Shard::WHOLE)
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(t.0.method, Some(Method::PUT));
        assert_eq!(t.0.headers.get_all("x-b").iter().count(), 2);
        assert_eq!(t.0.body, Bytes::from_static(b"hi"));
    }

    #[test]
    fn logs_replay_get_and_head_with_their_host() {
        let log = "\
127.0.0.1 - - [22/Nov/2026:01:00:00 +0000] \"GET http://www.example.com/index.html HTTP/1.1\" 200 512 \"-\" \"curl\"\n\
10.0.0.1 - - [22/Nov/2026:01:00:01 +0000] \"POST /form HTTP/1.1\" 200 12 \"-\" \"curl\"\n\
10.0.0.2 - - [22/Nov/2026:01:00:02 +0000] \"HEAD /img.png HTTP/1.1\" 304 0 \"-\" \"curl\"\n";
        let p = plan(file("access.log", log), TargetFormat::Log, Pick::Sequential);
        let summary = p.validate().unwrap();
        assert_eq!(summary.sets[0].targets, 2);
        assert_eq!(summary.sets[0].other_methods, 1);
        let mut s = FileStream::new(&p, &summary, 0, 1, Shard::WHOLE).unwrap();
        let a = s.next().unwrap().0;
        assert_eq!(
            (a.method, a.authority.unwrap().as_str()),
            (Some(Method::GET), "www.example.com")
        );
        assert_eq!(s.next().unwrap().0.path, "/img.png");
    }

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

    #[test]
    fn random_picks_are_seeded_and_mixes_follow_weights() {
        let p = plan(
            file("r.txt", "/a\n/b\n/c\n/d\n"),
            TargetFormat::Urls,
            Pick::Random { seed: 3 },
        );
        assert_eq!(collect(&p, 20, 0, 1), collect(&p, 20, 0, 1));
        let hot = file("hot.txt", "/hot\n");
        let crawl = file("crawl.txt", "/crawl\n");
        for pick in [Pick::Sequential, Pick::RoundRobin] {
            let p = TargetPlan {
                sets: vec![
                    TargetSet {
                        path: hot.clone(),
                        format: TargetFormat::Urls,
                        weight: 90,
                    },
                    TargetSet {
                        path: crawl.clone(),
                        format: TargetFormat::Urls,
                        weight: 10,
                    },
                ],
                pick,
                passes: None,
                skip_bad_lines: false,
            };
            let got = collect(&p, 1_000, 0, 1);
            let hot_count = got.iter().filter(|p| *p == "/hot").count();
            assert!((850..=950).contains(&hot_count), "{pick:?}: {hot_count}");
        }
    }
}

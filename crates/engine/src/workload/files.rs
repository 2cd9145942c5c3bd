//! One worker's walk over target files: its share of each file, in order or at random, with
//! the mix of several files by weight. A list held in memory is walked by index; a longer
//! one is read from its file as the walk goes (docs/ARCHITECTURE.md, "Every workload on the
//! fast path").

use crate::breakdown::Drawn;
use crate::plan::{Shard, share};
use crate::targets::TargetSummary;
use crate::targets::{Item, Pick, Target, TargetError, TargetPlan, TargetReader, TargetSet};

/// Where the walk's next target is.
pub(crate) enum Picked {
    /// Target `index` of set `set` of the lists held in memory.
    Held { set: usize, index: usize },
    /// A target read from its file (boxed: the held pick, far more common, moves less).
    Read(Box<Target>),
}

/// One worker's endless walk over target files.
pub(crate) struct FileStream {
    sets: Vec<SetStream>,
    weights: Vec<u32>,
    chooser: Chooser,
}

enum SetStream {
    /// File order over a list held in memory: this worker takes every `workers`-th target
    /// from `offset`.
    Walk {
        len: u64,
        set: usize,
        position: u64,
        offset: u64,
        workers: u64,
        /// Passes this worker completed over the list.
        pass: u64,
    },
    /// File order, read from the file as the walk goes (lists too long to hold).
    Read {
        set: TargetSet,
        /// Opened at the first draw, on the worker's own thread (whose descriptor table is
        /// its own on the epoll driver).
        reader: Option<TargetReader>,
        index: u64,
        offset: u64,
        workers: u64,
        pass: u64,
    },
    /// At random over a list held in memory.
    Random {
        len: u64,
        set: usize,
        rng: Rng,
        /// Picks only entries `shard.index`, `shard.index + shard.count`, ...
        shard: Shard,
    },
}

enum Chooser {
    Random(Rng),
    /// Smooth weighted round-robin (nginx's): deterministic and evenly spread.
    Smooth(Vec<i64>),
}

impl std::fmt::Debug for FileStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStream")
            .field("sets", &self.sets.len())
            .field("weights", &self.weights)
            .finish_non_exhaustive()
    }
}

impl FileStream {
    /// The stream of worker `worker` of `workers`, counted over every shard's workers
    /// (worker w of shard i is `i + count * w`), so that shard i's workers together take
    /// every `count`-th target from `i`. It walks the lists `summary` holds, or reads the
    /// files when it holds none.
    ///
    /// # Errors
    /// A file that is read as the walk goes cannot be opened.
    pub(crate) fn new(
        plan: &TargetPlan,
        summary: &TargetSummary,
        worker: u32,
        workers: u32,
        shard: Shard,
    ) -> Result<Self, TargetError> {
        let seed = match plan.pick {
            Pick::Random { seed } => seed,
            _ => 0x5eed,
        };
        let held = summary.held;
        let mut sets = Vec::new();
        for (i, set) in plan.sets.iter().enumerate() {
            let len = summary.sets[i].targets;
            sets.push(match plan.pick {
                Pick::Random { .. } => SetStream::Random {
                    len,
                    set: i,
                    rng: Rng::new(seed, worker, i as u32),
                    shard,
                },
                _ if held => SetStream::Walk {
                    len,
                    set: i,
                    position: u64::from(worker),
                    offset: u64::from(worker),
                    workers: u64::from(workers),
                    pass: 0,
                },
                _ => {
                    // Opened here only to fail before the attack; read from the worker.
                    drop(TargetReader::open(set)?);
                    SetStream::Read {
                        set: set.clone(),
                        reader: None,
                        index: 0,
                        offset: u64::from(worker),
                        workers: u64::from(workers),
                        pass: 0,
                    }
                }
            });
        }
        let weights: Vec<u32> = plan.sets.iter().map(|s| s.weight.max(1)).collect();
        let chooser = match plan.pick {
            Pick::RoundRobin => Chooser::Smooth(vec![0; weights.len()]),
            _ => Chooser::Random(Rng::new(seed, worker, u32::MAX)),
        };
        Ok(FileStream {
            sets,
            weights,
            chooser,
        })
    }

    /// The next target and its set and pass; `None` when this worker has no share of a
    /// list. Files loop forever; `--passes` is enforced as a request count.
    pub(crate) fn next(&mut self) -> Option<(Picked, Drawn)> {
        let chosen = self.choose();
        match &mut self.sets[chosen] {
            SetStream::Walk {
                len,
                set,
                position,
                offset,
                workers,
                pass,
            } => {
                if *offset >= *len {
                    return None;
                }
                let index = *position as usize;
                let drawn = Drawn {
                    set: chosen,
                    pass: *pass,
                };
                *position += *workers;
                if *position >= *len {
                    *position = *offset;
                    *pass += 1;
                }
                Some((Picked::Held { set: *set, index }, drawn))
            }
            SetStream::Random {
                len,
                set,
                rng,
                shard,
            } => {
                let (index, count) = (u64::from(shard.index), u64::from(shard.count));
                let own = share(*len, shard.count, shard.index);
                let pick = index + count * (rng.next() % own.max(1));
                let drawn = Drawn { set: *set, pass: 0 };
                (pick < *len).then_some((
                    Picked::Held {
                        set: *set,
                        index: pick as usize,
                    },
                    drawn,
                ))
            }
            SetStream::Read {
                set,
                reader,
                index,
                offset,
                workers,
                pass,
            } => read_next(set, reader, (index, *offset, *workers), pass).map(|t| {
                (
                    Picked::Read(Box::new(t)),
                    Drawn {
                        set: chosen,
                        pass: *pass,
                    },
                )
            }),
        }
    }

    fn choose(&mut self) -> usize {
        if self.weights.len() == 1 {
            return 0;
        }
        let total: u64 = self.weights.iter().map(|w| u64::from(*w)).sum();
        match &mut self.chooser {
            Chooser::Random(rng) => {
                let mut pick = rng.next() % total;
                for (i, w) in self.weights.iter().enumerate() {
                    if pick < u64::from(*w) {
                        return i;
                    }
                    pick -= u64::from(*w);
                }
                self.weights.len() - 1
            }
            Chooser::Smooth(current) => {
                for (c, w) in current.iter_mut().zip(&self.weights) {
                    *c += i64::from(*w);
                }
                let best = (0..current.len())
                    .max_by_key(|&i| (current[i], std::cmp::Reverse(i)))
                    .expect("sets");
                current[best] -= total as i64;
                best
            }
        }
    }
}

/// The next of this worker's targets read from `set`'s file (every `workers`-th from
/// `offset`, counted by `index`), reopening it for each pass; `None` after two full passes
/// without one of ours (this worker has no share) or when the file cannot be read again.
fn read_next(
    set: &TargetSet,
    reader: &mut Option<TargetReader>,
    (index, offset, workers): (&mut u64, u64, u64),
    pass: &mut u64,
) -> Option<Target> {
    if reader.is_none() {
        *reader = TargetReader::open(set).ok();
    }
    let mut misses = 0u32;
    loop {
        match reader.as_mut()?.next_item() {
            None => {
                misses += 1;
                if misses > 2 {
                    return None;
                }
                // Each pass deals the list out afresh, so every pass gives each worker the
                // same share.
                *reader = Some(TargetReader::open(set).ok()?);
                *index = 0;
                *pass += 1;
            }
            Some(Item::Target(t)) => {
                let mine = *index % workers == offset;
                *index += 1;
                if mine {
                    return Some(t);
                }
            }
            Some(Item::Bad(_) | Item::OtherMethod) => {}
        }
    }
}

/// xorshift64*, seeded per worker and set so that runs repeat.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, worker: u32, set: u32) -> Rng {
        let mixed =
            seed ^ (u64::from(worker) << 32 | u64::from(set)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Rng(mixed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Requests this worker sends for `passes` over a list of `count` targets.
pub(crate) fn pass_share(count: u64, passes: u64, worker: u32, workers: u32) -> u64 {
    let (w, n) = (u64::from(worker), u64::from(workers));
    let mine = count / n + u64::from(w < count % n);
    mine * passes
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::Method;

    use super::*;
    use crate::targets::testing::{file, plan};
    use crate::targets::{TargetFormat, TargetSet};

    /// The first `n` targets of worker `worker` of `workers`: walked over the lists held in
    /// memory and, where the pick allows, read from the files too, the two the same.
    fn walk(p: &TargetPlan, n: usize, worker: u32, workers: u32, shard: Shard) -> Vec<Target> {
        let summary = p.validate().unwrap();
        let loaded = summary.loaded.clone().expect("short lists are held");
        let mut held = FileStream::new(p, &summary, worker, workers, shard).unwrap();
        let targets: Vec<Target> = (0..n)
            .map(|_| match held.next().unwrap().0 {
                Picked::Held { set, index } => loaded[set][index].clone(),
                Picked::Read(_) => panic!("a held list is not read"),
            })
            .collect();
        if !matches!(p.pick, Pick::Random { .. }) {
            let streamed = TargetSummary {
                loaded: None,
                held: false,
                ..summary
            };
            let mut read = FileStream::new(p, &streamed, worker, workers, shard).unwrap();
            let again: Vec<Target> = (0..n)
                .map(|_| match read.next().unwrap().0 {
                    Picked::Read(target) => *target,
                    Picked::Held { .. } => panic!("a list not held is read"),
                })
                .collect();
            assert_eq!(targets, again, "held and read walks agree");
        }
        targets
    }

    fn paths(targets: &[Target]) -> Vec<String> {
        targets.iter().map(|t| t.path.to_string()).collect()
    }

    fn collect(p: &TargetPlan, n: usize, worker: u32, workers: u32) -> Vec<String> {
        paths(&walk(p, n, worker, workers, Shard::WHOLE))
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

    /// #45: a target's credentials go out as Basic auth, never in its Host header or the
    /// names an error prints.
    #[test]
    fn credentials_in_a_target_url_become_basic_auth() {
        let p = plan(
            file("u9.txt", "http://user:secret@h.example:8080/t\n"),
            TargetFormat::Urls,
            Pick::Sequential,
        );
        let summary = p.validate().unwrap();
        assert_eq!(summary.hosts, ["h.example:8080"]);
        let target = &walk(&p, 1, 0, 1, Shard::WHOLE)[0];
        assert_eq!(
            target.authority.as_ref().unwrap().as_str(),
            "h.example:8080"
        );
        assert_eq!(
            target.headers[http::header::AUTHORIZATION],
            "Basic dXNlcjpzZWNyZXQ="
        );
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
        // Shard 1 of 3 with two workers: global workers 1 and 4 of 6.
        let take = |worker: u32, n: usize| {
            let shard = Shard { index: 1, count: 3 };
            paths(&walk(&p, n, worker, 6, shard))
        };
        assert_eq!(take(1, 2), ["/1", "/7"]);
        assert_eq!(take(4, 1), ["/4"]);
        assert_eq!(pass_share(10, 1, 1, 6) + pass_share(10, 1, 4, 6), 3);
        let p = plan(
            file("u4.txt", &list),
            TargetFormat::Urls,
            Pick::Random { seed: 7 },
        );
        let shard = Shard { index: 2, count: 4 };
        let seen: std::collections::BTreeSet<String> =
            paths(&walk(&p, 200, 2, 4, shard)).into_iter().collect();
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
        let mut s = walk(&p, 2, 0, 1, Shard::WHOLE).into_iter();
        let a = s.next().unwrap();
        assert_eq!(a.method, Some(Method::GET));
        assert_eq!(a.headers["x-a"], "1");
        let b = s.next().unwrap();
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
        let t = &walk(&p, 1, 0, 1, Shard::WHOLE)[0];
        assert_eq!(t.method, Some(Method::PUT));
        assert_eq!(t.headers.get_all("x-b").iter().count(), 2);
        assert_eq!(t.body, Bytes::from_static(b"hi"));
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
        let mut s = walk(&p, 2, 0, 1, Shard::WHOLE).into_iter();
        let a = s.next().unwrap();
        assert_eq!(
            (a.method, a.authority.unwrap().as_str()),
            (Some(Method::GET), "www.example.com")
        );
        assert_eq!(s.next().unwrap().path, "/img.png");
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

//! One worker's walk over the targets: its share of each file, in order or at random, with
//! the mix of several files by weight.

use std::sync::Arc;

use super::read::{Item, TargetReader};
use super::types::{Pick, Target, TargetError, TargetPlan, TargetSummary};
use crate::breakdown::Drawn;
use crate::plan::Shard;

/// One worker's endless walk over the targets: files, or a synthetic catalogue.
#[derive(Debug)]
pub(crate) enum TargetStream {
    /// Target files.
    Files(FileStream),
    /// Draws from a `--catalogue`.
    Catalogue(vload_cache::Sampler),
}

impl TargetStream {
    /// The next target and where it was drawn from; `None` when a worker has no share of
    /// the files.
    pub(crate) fn next(&mut self) -> Option<(Target, Drawn)> {
        match self {
            TargetStream::Files(files) => files.next(),
            TargetStream::Catalogue(sampler) => Some((catalogue_target(sampler), Drawn::default())),
        }
    }
}

/// Object `id`'s request: its path, and its virtual host when the catalogue has several.
fn catalogue_target(sampler: &mut vload_cache::Sampler) -> Target {
    let id = sampler.next_id();
    let catalogue = sampler.catalogue();
    let mut headers = http::HeaderMap::new();
    if let Some(host) = catalogue.host_of(id) {
        headers.insert(
            http::header::HOST,
            http::HeaderValue::from_str(&host).expect("site names are valid header values"),
        );
    }
    Target {
        method: None,
        authority: None,
        https: None,
        path: http::uri::PathAndQuery::from_maybe_shared(catalogue.path(id))
            .expect("catalogue paths are valid"),
        headers,
        body: bytes::Bytes::new(),
    }
}

/// One worker's endless walk over target files.
pub(crate) struct FileStream {
    sets: Vec<SetStream>,
    weights: Vec<u32>,
    chooser: Chooser,
}

enum SetStream {
    /// File order: this worker takes every `workers`-th target from `offset`.
    Sequential {
        reader: TargetReader,
        index: u64,
        offset: u64,
        workers: u64,
        /// Passes this worker completed over the list.
        pass: u64,
    },
    Loaded {
        list: Arc<Vec<Vec<Target>>>,
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
    /// every `count`-th target from `i`.
    ///
    /// # Errors
    /// A file cannot be reopened.
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
        let mut sets = Vec::new();
        for (i, set) in plan.sets.iter().enumerate() {
            sets.push(match &summary.loaded {
                Some(list) => SetStream::Loaded {
                    list: list.clone(),
                    set: i,
                    rng: Rng::new(seed, worker, i as u32),
                    shard,
                },
                None => SetStream::Sequential {
                    reader: TargetReader::open(set)?,
                    index: 0,
                    offset: u64::from(worker),
                    workers: u64::from(workers),
                    pass: 0,
                },
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

    /// The next target and its set and pass. Files loop forever; `--passes` is enforced
    /// as a request count.
    pub(crate) fn next(&mut self) -> Option<(Target, Drawn)> {
        let set = self.choose();
        match &mut self.sets[set] {
            SetStream::Loaded {
                list,
                set,
                rng,
                shard,
            } => {
                let targets = &list[*set];
                let (index, count) = (u64::from(shard.index), u64::from(shard.count));
                let own = crate::plan::share(targets.len() as u64, shard.count, shard.index);
                let pick = index + count * (rng.next() % own.max(1));
                let drawn = Drawn { set: *set, pass: 0 };
                targets.get(pick as usize).cloned().map(|t| (t, drawn))
            }
            SetStream::Sequential {
                reader,
                index,
                offset,
                workers,
                pass,
            } => {
                // Two full passes without one of ours means this worker has no share.
                let mut misses = 0u32;
                loop {
                    match reader.next_item() {
                        None => {
                            misses += 1;
                            if misses > 2 {
                                return None;
                            }
                            // Each pass deals the list out afresh, so every pass gives each
                            // worker the same share.
                            *reader = TargetReader::open(&reader.set).ok()?;
                            *index = 0;
                            *pass += 1;
                        }
                        Some(Item::Target(t)) => {
                            let mine = *index % *workers == *offset;
                            *index += 1;
                            if mine {
                                return Some((t, Drawn { set, pass: *pass }));
                            }
                        }
                        Some(Item::Bad(_) | Item::OtherMethod) => {}
                    }
                }
            }
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

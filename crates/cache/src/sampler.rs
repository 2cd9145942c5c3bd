//! One worker's draws from a catalogue: each request's object, and with it the crawler's
//! turn, the object's variant and the range asked.

use crate::catalogue::Catalogue;
use crate::hash::{mix, unit};
use crate::popularity::{Popularity, Zipf};
use crate::ranges::ByteRange;
use crate::variants::Variants;

impl Catalogue {
    /// Worker `worker` of `workers`' draws (counted over every shard's workers, so that
    /// shards deal the same catalogue and no two workers share a one-hit wonder).
    pub fn sampler(&self, worker: u32, workers: u32) -> Sampler {
        Sampler {
            zipf: match self.popularity {
                Popularity::Zipf(s) => Some(Zipf::new(self.objects, s)),
                _ => None,
            },
            variant_zipf: match self.variants {
                Some(Variants {
                    count,
                    law: Popularity::Zipf(s),
                    ..
                }) => Some(Zipf::new(u64::from(count), s)),
                _ => None,
            },
            variant: None,
            range: None,
            catalogue: self.clone(),
            state: mix(self.seed ^ (u64::from(worker) << 32) ^ 0xc0ff_ee00),
            worker: u64::from(worker),
            workers: u64::from(workers.max(1)),
            crawled: 0,
            unique: 0,
            crawler_drawn: 0,
            crawler_last: false,
            start: std::time::Instant::now(),
        }
    }
}

/// One worker's endless draws from a catalogue.
#[derive(Debug, Clone)]
pub struct Sampler {
    catalogue: Catalogue,
    zipf: Option<Zipf>,
    /// The variants' Zipf law, when they are drawn by one.
    variant_zipf: Option<Zipf>,
    /// The last draw's variant (`--variants`).
    variant: Option<u32>,
    /// The last draw's range (`--ranges`).
    range: Option<ByteRange>,
    state: u64,
    worker: u64,
    workers: u64,
    crawled: u64,
    unique: u64,
    /// The crawler's requests so far, and whether the last draw was one.
    crawler_drawn: u64,
    crawler_last: bool,
    /// When the draws' clock starts (churn counts replacements from it).
    start: std::time::Instant,
}

impl Sampler {
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        unit(mix(self.state))
    }

    /// The same draws with replacements counted from `start` (the attack's start, shared by
    /// every worker and shard).
    pub fn starting_at(mut self, start: std::time::Instant) -> Sampler {
        self.start = start;
        self
    }

    /// The next object's id, now.
    pub fn next_id(&mut self) -> u64 {
        let at = match self.catalogue.churn_per_s {
            Some(_) => self.start.elapsed().as_secs_f64(),
            None => 0.0,
        };
        self.next_id_at(at)
    }

    /// The next object's id, `at` seconds from the start.
    pub fn next_id_at(&mut self, at: f64) -> u64 {
        let rank = self.next_rank();
        self.variant = self.catalogue.variants.map(|v| match self.variant_zipf {
            Some(zipf) => (zipf.sample(|| self.uniform()) - 1) as u32,
            None => ((self.uniform() * f64::from(v.count)) as u32).min(v.count - 1),
        });
        let id = match self.catalogue.churn_per_s {
            Some(churn) if rank < self.catalogue.objects => {
                self.catalogue.churned(rank, (churn * at) as u64)
            }
            _ => rank,
        };
        let ranges = self.catalogue.ranges;
        self.range = match ranges {
            Some(ranges) if self.uniform() < ranges.share => {
                let (pick, offset) = (self.uniform(), self.uniform());
                ranges.draw(self.catalogue.size_of(id), pick, offset)
            }
            _ => None,
        };
        id
    }

    /// The last draw's range, with `--ranges`.
    pub fn last_range(&self) -> Option<ByteRange> {
        self.range
    }

    /// The last draw's class among [`Catalogue::drawn_classes`]: the crawler's turn, and
    /// whether it asked a range.
    pub fn last_class(&self) -> u8 {
        let range = u8::from(self.range.is_some());
        match (self.catalogue.crawler, self.catalogue.ranges) {
            (Some(_), Some(_)) => u8::from(self.crawler_last) + 2 * range,
            (Some(_), None) => u8::from(self.crawler_last),
            (None, _) => range,
        }
    }

    /// The last draw's variant, with `--variants`.
    pub fn last_variant(&self) -> Option<u32> {
        self.variant
    }

    /// True when the last id drawn was the crawler's (`--crawler`), not the catalogue's own.
    pub fn last_was_crawler(&self) -> bool {
        self.crawler_last
    }

    /// The next rank drawn (a one-hit wonder's id from `objects` up).
    fn next_rank(&mut self) -> u64 {
        let n = self.catalogue.objects;
        self.crawler_last = false;
        if let Some(crawler) = self.catalogue.crawler
            && self.uniform() < crawler.share
        {
            self.crawler_last = true;
            let k = self.worker + self.workers * self.crawler_drawn;
            self.crawler_drawn += 1;
            if crawler.unique {
                // New URLs share the one-hit wonders' ids, from one counter: none repeats.
                let id = n + self.worker + self.workers * self.unique;
                self.unique += 1;
                return id;
            }
            // From the least popular object up, each worker its own stride.
            return n - 1 - k % n;
        }
        if self.catalogue.one_hit_wonders > 0.0 && self.uniform() < self.catalogue.one_hit_wonders {
            let id = n + self.worker + self.workers * self.unique;
            self.unique += 1;
            return id;
        }
        match self.catalogue.popularity {
            Popularity::Zipf(_) => {
                let zipf = self.zipf.expect("a Zipf catalogue has its sampler");
                zipf.sample(|| self.uniform()) - 1
            }
            Popularity::Uniform => ((self.uniform() * n as f64) as u64).min(n - 1),
            Popularity::Hot { objects, requests } => {
                if self.uniform() < requests {
                    let hot = Popularity::hot_objects(objects, n);
                    ((self.uniform() * hot as f64) as u64).min(hot - 1)
                } else {
                    let id = (self.worker + self.workers * self.crawled) % n;
                    self.crawled += 1;
                    id
                }
            }
        }
    }

    /// The catalogue drawn from.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }
}

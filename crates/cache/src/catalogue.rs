//! The catalogue: which objects exist, what each is, and one worker's draws from it.

use vload_schema::CatalogueRecord;

use crate::hash::mix;
use crate::popularity::Popularity;
use crate::size::SizeLaw;
use crate::variants::{VariantKind, Variants};

/// A seeded catalogue of objects. Object `id` < `objects` is the object of popularity rank
/// `id` (0 the most asked); one-hit wonders take ids from `objects` up, each used once.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// Objects asked again and again (one-hit wonders come on top).
    pub objects: u64,
    /// How often each is asked.
    pub popularity: Popularity,
    /// How large each is.
    pub sizes: SizeLaw,
    /// The `Cache-Control: max-age` the origin gives each, in seconds: one value, or a
    /// range each object draws from (none: the origin sends no Cache-Control).
    pub ttl: Option<(u64, u64)>,
    /// The share of requests for objects asked once and never again, in [0, 1).
    pub one_hit_wonders: f64,
    /// Virtual hosts the objects are spread over (object `id` on host `id % hosts`); one
    /// means the attack's own Host.
    pub hosts: u32,
    /// The seed of every per-object property and every worker's draws.
    pub seed: u64,
    /// New objects replacing old ones, a second (`--churn`): the k-th replacement gives the
    /// slot at position k mod N of a seeded permutation of ranks a new object (a new id,
    /// size and TTL, at the same popularity), counted from the attack's start.
    pub churn_per_s: Option<f64>,
    /// A crawler beside the catalogue's own requests (`--crawler`): its share of every
    /// request, crawling the catalogue from its least popular object up or asking new URLs.
    pub crawler: Option<crate::Crawler>,
    /// Each object's variants (`--variants`): the cache keys it is asked under, a query
    /// parameter or a header the origin varies on.
    pub variants: Option<crate::Variants>,
    /// A share of requests asking a range of their object (`--ranges`).
    pub ranges: Option<crate::Ranges>,
}

/// An id's generation (how often its slot was replaced) sits above this bit; the rank below.
const GENERATION_SHIFT: u32 = 40;

impl Default for Catalogue {
    fn default() -> Self {
        Catalogue {
            objects: 10_000,
            popularity: Popularity::default(),
            sizes: SizeLaw::default(),
            ttl: None,
            one_hit_wonders: 0.0,
            hosts: 1,
            seed: 1,
            churn_per_s: None,
            crawler: None,
            variants: None,
            ranges: None,
        }
    }
}

impl Catalogue {
    fn hashes(&self, id: u64) -> (u64, u64) {
        let h = mix(self.seed ^ mix(id));
        (h, mix(h ^ 0x5151_5151_5151_5151))
    }

    /// The body size of object `id`, in bytes.
    pub fn size_of(&self, id: u64) -> u64 {
        let (h, h2) = self.hashes(id);
        self.sizes.size(h, h2)
    }

    /// The origin's max-age for object `id`, in seconds.
    pub fn ttl_of(&self, id: u64) -> Option<u64> {
        let (lo, hi) = self.ttl?;
        let (_, h2) = self.hashes(id);
        Some(lo + mix(h2) % (hi - lo + 1))
    }

    /// The virtual host of object `id`, when the catalogue spreads over several (a slot's
    /// new objects stay on its host).
    pub fn host_of(&self, id: u64) -> Option<String> {
        let mut host = Vec::new();
        self.write_host(id, |part| host.extend_from_slice(part))
            .then(|| String::from_utf8(host).expect("site names are ASCII"))
    }

    /// The index of object `id`'s virtual host among the catalogue's (0 with one host).
    pub fn site_of(&self, id: u64) -> u64 {
        (id & ((1 << GENERATION_SHIFT) - 1)) % u64::from(self.hosts.max(1))
    }

    /// Writes object `id`'s virtual host through `put`, piece by piece, without allocating;
    /// false (and nothing written) when the catalogue has one host.
    pub fn write_host(&self, id: u64, mut put: impl FnMut(&[u8])) -> bool {
        if self.hosts <= 1 {
            return false;
        }
        let mut number = itoa::Buffer::new();
        put(b"site");
        put(number.format(self.site_of(id)).as_bytes());
        put(b".test");
        true
    }

    /// Object `id`'s path and query, which tell `vload origin` its size and max-age: a
    /// replaced slot's object is `/c/RANK.GENERATION`.
    pub fn path(&self, id: u64) -> String {
        let mut path = Vec::with_capacity(48);
        self.write_path(id, |part| path.extend_from_slice(part));
        String::from_utf8(path).expect("catalogue paths are ASCII")
    }

    /// Writes [`Catalogue::path`] through `put`, piece by piece, without allocating.
    pub fn write_path(&self, id: u64, put: impl FnMut(&[u8])) {
        self.write_variant_path(id, None, put);
    }

    /// Writes object `id`'s path as variant `variant` asks it, without allocating: the
    /// engine writes it straight into the request it sends. A query variant adds its
    /// parameter; a header variant asks the origin to vary on the header.
    pub fn write_variant_path(&self, id: u64, variant: Option<u32>, mut put: impl FnMut(&[u8])) {
        let (rank, generation) = (id & ((1 << GENERATION_SHIFT) - 1), id >> GENERATION_SHIFT);
        let mut number = itoa::Buffer::new();
        put(b"/c/");
        put(number.format(rank).as_bytes());
        if generation > 0 {
            put(b".");
            put(number.format(generation).as_bytes());
        }
        put(b"?size=");
        put(number.format(self.size_of(id)).as_bytes());
        if let Some(ttl) = self.ttl_of(id) {
            put(b"&cache=max-age=");
            put(number.format(ttl).as_bytes());
        }
        match (self.variants, variant) {
            (Some(v), Some(k)) if v.kind == VariantKind::Query => {
                put(b"&");
                put(crate::variants::QUERY_PARAMETER.as_bytes());
                put(b"=");
                Variants::write_value(k, put);
            }
            (Some(_), Some(_)) => {
                put(b"&header=Vary:");
                put(crate::variants::VARY_HEADER.as_bytes());
            }
            _ => {}
        }
    }

    /// Writes the request's own header lines, each after a line end (`\r\naccept-language:
    /// v3`, `\r\nrange: bytes=0-65535`), through `put`: its variant's header when the
    /// variants are headers, its range when it asks one.
    pub fn write_header_lines(
        &self,
        variant: Option<u32>,
        range: Option<crate::ByteRange>,
        mut put: impl FnMut(&[u8]),
    ) {
        if let (Some(v), Some(k)) = (self.variants, variant)
            && v.kind == VariantKind::Vary
        {
            put(b"\r\n");
            put(crate::variants::VARY_NAME.as_bytes());
            put(b": ");
            Variants::write_value(k, &mut put);
        }
        if let Some(range) = range {
            put(b"\r\nrange: ");
            range.write_value(put);
        }
    }

    /// The classes a catalogue's draws put requests in, when they make any: `human` and
    /// `crawler` with a crawler, `whole` and `range` with ranges, both crossed with both
    /// (see [`crate::Sampler::last_class`]).
    pub fn drawn_classes(&self) -> Option<Vec<String>> {
        let by = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect();
        match (self.crawler.is_some(), self.ranges.is_some()) {
            (true, true) => Some(by(&["human", "crawler", "human range", "crawler range"])),
            (true, false) => Some(by(&["human", "crawler"])),
            (false, true) => Some(by(&["whole", "range"])),
            (false, false) => None,
        }
    }

    /// The cache key of object `id`'s variant `variant`, for a cache that keys on variants:
    /// `id` itself without variants, else below [`Catalogue::keys`] for the catalogue's
    /// objects and at or above it for one-hit wonders.
    pub fn key(&self, id: u64, variant: Option<u32>) -> u64 {
        match (self.variants, variant) {
            (Some(v), Some(k)) => id * u64::from(v.count) + u64::from(k),
            _ => id,
        }
    }

    /// The cache keys of the catalogue's objects: objects times variants.
    pub fn keys(&self) -> u64 {
        self.objects * self.variants.map_or(1, |v| u64::from(v.count))
    }

    /// The object in slot `rank` after `replaced` replacements since the start.
    pub fn churned(&self, rank: u64, replaced: u64) -> u64 {
        let n = self.objects;
        // A seeded affine permutation of the ranks: replacements visit every slot once a
        // round, popular and unpopular alike, in an order that needs no table.
        let mut a = (mix(self.seed ^ 0xc4a2) % n) | 1;
        while gcd(a, n) != 1 {
            a += 2;
        }
        let b = mix(self.seed ^ 0x5eed) % n;
        let position = ((u128::from(a) * u128::from(rank) + u128::from(b)) % u128::from(n)) as u64;
        let generation = replaced / n + u64::from(position < replaced % n);
        rank | (generation << GENERATION_SHIFT)
    }

    /// The bytes of every object asked again (one-hit wonders not included).
    pub fn total_bytes(&self) -> u64 {
        (0..self.objects).map(|id| self.size_of(id)).sum()
    }

    /// What the run file keeps of the catalogue.
    pub fn record(&self) -> CatalogueRecord {
        CatalogueRecord {
            objects: self.objects,
            popularity: self.popularity.to_string(),
            object_size: self.sizes.to_string(),
            ttl_s: self.ttl.map(|(lo, hi)| [lo, hi]),
            one_hit_wonders: self.one_hit_wonders,
            hosts: self.hosts,
            seed: self.seed,
            total_bytes: self.total_bytes(),
            churn_per_s: self.churn_per_s,
            crawler: self.crawler.map(|c| c.to_string()),
            variants: self.variants.map(|v| v.to_string()),
            ranges: self.ranges.map(|r| r.to_string()),
        }
    }

    /// Checks that the catalogue can be drawn from, naming the flag to fix.
    ///
    /// # Errors
    /// No objects, a share out of range, no hosts, or a TTL range upside down.
    pub fn check(&self) -> Result<(), String> {
        if self.objects == 0 {
            return Err("--catalogue 0: a catalogue needs at least one object".into());
        }
        if self.objects > MAX_OBJECTS {
            return Err(format!(
                "--catalogue {}: at most {MAX_OBJECTS} objects (sizing the catalogue and modelling the cache each take a pass over every object, about 2.5 s a pass at the most; 4 KB objects would be 400 GB, more than one cache holds): give fewer",
                self.objects
            ));
        }
        if !(0.0..1.0).contains(&self.one_hit_wonders) {
            return Err("--one-hit-wonders must be a share below 100%, e.g. 5%".into());
        }
        if self.hosts == 0 {
            return Err("--vhosts 0: give at least one host".into());
        }
        if let Some((lo, hi)) = self.ttl
            && lo > hi
        {
            return Err(format!("--ttl {lo}-{hi}: the lower TTL is above the upper"));
        }
        if let Some(churn) = self.churn_per_s {
            if !(churn.is_finite() && churn > 0.0) {
                return Err(format!(
                    "--churn {churn}: give new objects a second above 0, e.g. 10/s"
                ));
            }
            if self.ttl.is_some() {
                return Err("--churn and --ttl together: the model covers objects that expire or objects that are replaced, not both; give one".into());
            }
        }
        if self.variants.is_some() && self.crawler.is_some() {
            return Err("--variants and --crawler together: the crawler's model knows no variants; give one".into());
        }
        if self.keys() > MAX_OBJECTS {
            return Err(format!(
                "--catalogue {} with --variants {}: {} cache keys, at most {MAX_OBJECTS}: give fewer objects or variants",
                self.objects,
                self.variants.map_or(1, |v| v.count),
                self.keys()
            ));
        }
        Ok(())
    }
}

/// The most objects a catalogue may have: its size and the cache model are each a pass over
/// every object (about 25 ns an object), so that 10^8 costs seconds, not minutes.
pub(crate) const MAX_OBJECTS: u64 = 100_000_000;

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_the_same_in_every_run_and_differ_by_seed() {
        let a = Catalogue {
            sizes: "1k-64k".parse().unwrap(),
            ttl: Some((60, 600)),
            ..Catalogue::default()
        };
        assert_eq!(a.path(17), a.clone().path(17));
        let sizes: Vec<u64> = (0..100).map(|id| a.size_of(id)).collect();
        assert!(sizes.iter().all(|s| (1024..=65536).contains(s)));
        assert!(sizes.windows(2).any(|w| w[0] != w[1]), "sizes vary");
        let b = Catalogue {
            seed: 2,
            ..a.clone()
        };
        assert_ne!(
            (0..100).map(|id| a.size_of(id)).collect::<Vec<_>>(),
            (0..100).map(|id| b.size_of(id)).collect::<Vec<_>>()
        );
        let ttl = a.ttl_of(17).unwrap();
        assert!((60..=600).contains(&ttl));
        assert_eq!(
            a.path(17),
            format!("/c/17?size={}&cache=max-age={ttl}", a.size_of(17))
        );
    }

    #[test]
    fn paths_and_hosts_name_the_slot_its_generation_and_its_site() {
        let c = Catalogue {
            hosts: 3,
            churn_per_s: Some(10.0),
            ..Catalogue::default()
        };
        let replaced = c.churned(5, 10 * c.objects);
        assert_eq!(
            replaced >> GENERATION_SHIFT,
            10,
            "ten rounds of replacements"
        );
        assert_eq!(
            c.path(replaced),
            format!("/c/5.10?size={}", c.size_of(replaced))
        );
        assert_eq!(c.host_of(replaced).as_deref(), Some("site2.test"));
        assert_eq!(
            c.site_of(replaced),
            2,
            "a slot's new objects stay on its host"
        );
        let one = Catalogue::default();
        assert_eq!(one.host_of(5), None);
        assert!(!one.write_host(5, |_| panic!("nothing is written for one host")));
    }

    #[test]
    fn one_hit_wonders_are_asked_once_across_workers() {
        let c = Catalogue {
            objects: 100,
            one_hit_wonders: 0.2,
            ..Catalogue::default()
        };
        let mut seen = std::collections::HashMap::new();
        let mut draws = 0u64;
        for worker in 0..3 {
            let mut s = c.sampler(worker, 3);
            for _ in 0..10_000 {
                *seen.entry(s.next_id()).or_insert(0u64) += 1;
                draws += 1;
            }
        }
        let once: u64 = seen
            .iter()
            .filter(|(id, _)| **id >= 100)
            .map(|(_, n)| *n)
            .sum();
        assert!(
            seen.iter()
                .filter(|(id, _)| **id >= 100)
                .all(|(_, n)| *n == 1)
        );
        let share = once as f64 / draws as f64;
        assert!((share - 0.2).abs() < 0.01, "one-hit share {share}");
    }

    /// A crawler takes its share; its crawl walks the catalogue from the least popular
    /// object up, each worker its own stride; its new URLs are each asked once.
    #[test]
    fn a_crawler_takes_its_share_and_walks_from_the_tail() {
        let crawled = |unique| Catalogue {
            crawler: Some(crate::Crawler { share: 0.3, unique }),
            ..Catalogue::default()
        };
        let mut s = crawled(false).sampler(1, 2);
        let mut walk = Vec::new();
        let mut human = 0;
        for _ in 0..10_000 {
            let id = s.next_id();
            if s.last_was_crawler() {
                walk.push(id);
            } else {
                human += 1;
            }
        }
        let share = walk.len() as f64 / 10_000.0;
        assert!((share - 0.3).abs() < 0.02, "{share}");
        assert!(human > 0);
        assert_eq!(
            walk[..3],
            [9_998, 9_996, 9_994],
            "worker 1 of 2 from the tail"
        );
        let mut s = crawled(true).sampler(0, 1);
        let mut new = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let id = s.next_id();
            if s.last_was_crawler() {
                assert!(id >= 10_000 && new.insert(id), "{id} asked before");
            }
        }
    }

    #[test]
    fn the_hot_set_takes_its_share_and_the_crawl_covers_everything() {
        let c = Catalogue {
            objects: 1000,
            popularity: "hot:10%:90%".parse().unwrap(),
            ..Catalogue::default()
        };
        let (mut hot, mut seen) = (0u64, std::collections::BTreeSet::new());
        for worker in 0..2 {
            let mut s = c.sampler(worker, 2);
            for _ in 0..10_000 {
                let id = s.next_id();
                hot += u64::from(id < 100);
                seen.insert(id);
            }
        }
        // 90% hot plus the crawl's 10% share of its 10% of objects: 91%.
        let share = hot as f64 / 20_000.0;
        assert!((share - 0.91).abs() < 0.01, "hot share {share}");
        assert_eq!(seen.len(), 1000, "two workers' crawls cover the catalogue");
    }

    #[test]
    fn bad_catalogues_name_the_flag() {
        let c = |f: fn(&mut Catalogue)| {
            let mut c = Catalogue::default();
            f(&mut c);
            c.check().unwrap_err()
        };
        assert!(c(|c| c.objects = 0).contains("--catalogue"));
        assert!(c(|c| c.one_hit_wonders = 1.0).contains("--one-hit-wonders"));
        assert!(c(|c| c.hosts = 0).contains("--vhosts"));
        assert!(c(|c| c.objects = u64::MAX).contains("at most 100000000 objects"));
        assert!(c(|c| c.ttl = Some((10, 5))).contains("--ttl"));
    }
}

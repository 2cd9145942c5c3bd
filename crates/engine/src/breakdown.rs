//! Breakdowns of the measured window: every request ended in it counted in exactly one group
//! of each dimension, with the group's latency histogram.
//!
//! Three dimensions come from how a request ended and exist in every run: its status class,
//! what it said of the cache, and its size (the body's bytes, in decades from 1 KiB). A
//! worker counts each request once in the cell of status, cache and size (5 status classes
//! x 5 cache states x 5 sizes, and one cell for failures, made as first used); those three
//! breakdowns are that table's margins, so a request costs one cell's records, not three
//! (each distinct histogram touched is a cache miss more a request). These and the breakdown by class keep each
//! group's phases too (the wait for the first byte, the transfer): where a cache's answer
//! was late is told apart from where its bytes took long. Four more come from
//! its target and exist when the run has them: the virtual host it was addressed to, its
//! `--class`, the file of a `--mix` it came from and its pass over a `--passes` list. Their
//! group names are fixed before the run (the same on every worker and every shard), at most
//! [`GROUP_LIMIT`] by name, the rest folded into one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use vload_schema::{
    Breakdown, FAILED, GROUP_LIMIT, Group, GroupCache, HistogramSettings, NO_TARGET, OTHER,
    StatusClasses,
};

use crate::cache::CacheClass;
use crate::plan::{AttackPlan, UrlClass};
use crate::record::Distribution;
use crate::targets::{Target, TargetSummary};

/// The group of the requests no class matched.
pub const UNCLASSIFIED: &str = "(unclassified)";

/// A tag for "no target was drawn" (the request failed before one was).
const UNDRAWN: u8 = u8::MAX;

/// The dimensions by target, in the order of [`Tags`]'s fields.
const BY_TARGET: [&str; 4] = ["host", "class", "set", "pass"];

/// A request's group in each dimension by target, as indices into [`Dimensions`]' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tags([u8; 4]);

impl Tags {
    /// A request for which no target was drawn.
    pub(crate) const UNDRAWN: Tags = Tags([UNDRAWN; 4]);
}

/// Where a target was drawn from, beside the target itself.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Drawn {
    /// The set (file) of a mix.
    pub(crate) set: usize,
    /// The pass over the list, from 0.
    pub(crate) pass: u64,
}

/// The names of one dimension's groups.
#[derive(Debug, Clone)]
struct Names {
    names: Vec<String>,
    /// Names beyond the limit, folded into a last group [`OTHER`].
    folded: u64,
}

impl Names {
    /// `all` kept up to the limit, the rest folded.
    fn bounded(all: Vec<String>, more: u64) -> Names {
        let extra = all.len().saturating_sub(GROUP_LIMIT) as u64 + more;
        let mut names: Vec<String> = all.into_iter().take(GROUP_LIMIT).collect();
        if extra > 0 {
            names.push(OTHER.into());
        }
        Names {
            names,
            folded: extra,
        }
    }

    /// The index of group `i`, folded when beyond the limit.
    fn index(&self, i: u64) -> u8 {
        i.min(self.names.len() as u64 - 1) as u8
    }
}

/// The run's dimensions by target and their names.
#[derive(Debug, Default)]
pub(crate) struct Dimensions {
    hosts: Option<(Names, HashMap<String, u8>)>,
    classes: Option<(Names, Vec<UrlClass>)>,
    /// The classes are the catalogue's draw (`--crawler`, `--ranges` without `--class`:
    /// [`vload_cache::Catalogue::drawn_classes`]), not patterns.
    drawn_classes: bool,
    sets: Option<Names>,
    passes: Option<Names>,
    /// The host of targets that name none (the attack URL's).
    default_host: String,
}

impl Dimensions {
    /// The dimensions of an attack: hosts when its targets are addressed to more than one,
    /// classes when it has any, sets for a mix of files, passes over a list walked more
    /// than once.
    pub(crate) fn new(plan: &AttackPlan, summary: Option<&TargetSummary>) -> Dimensions {
        let template = &plan.request;
        let default_host = template
            .headers
            .get(http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| template.url.authority().map(|a| a.as_str().to_owned()))
            .unwrap_or_default();
        let hosts = host_names(plan, summary, &default_host);
        let drawn = plan
            .catalogue
            .as_ref()
            .and_then(vload_cache::Catalogue::drawn_classes)
            .filter(|_| plan.classes.is_empty());
        let drawn_classes = drawn.is_some();
        let classes = if let Some(names) = drawn {
            Some((Names { names, folded: 0 }, Vec::new()))
        } else {
            (!plan.classes.is_empty()).then(|| {
                let mut names: Vec<String> = plan.classes.iter().map(|c| c.name.clone()).collect();
                names.push(UNCLASSIFIED.into());
                (Names { names, folded: 0 }, plan.classes.clone())
            })
        };
        let targets = plan.targets.as_ref();
        let sets = targets.filter(|t| t.sets.len() > 1).map(|t| {
            let mut names: Vec<String> = Vec::new();
            for set in &t.sets {
                let base = set.path.display().to_string();
                let mut name = base.clone();
                let mut n = 1;
                while names.contains(&name) {
                    n += 1;
                    name = format!("{base} #{n}");
                }
                names.push(name);
            }
            Names::bounded(names, 0)
        });
        let passes = targets.and_then(|t| t.passes).filter(|p| *p > 1).map(|p| {
            let shown = p.min(GROUP_LIMIT as u64 + 1);
            let names = (1..=shown).map(|i| i.to_string()).collect();
            Names::bounded(names, p - shown)
        });
        Dimensions {
            hosts,
            classes,
            drawn_classes,
            sets,
            passes,
            default_host,
        }
    }

    /// True when the run has any dimension by target.
    pub(crate) fn any(&self) -> bool {
        self.hosts.is_some()
            || self.classes.is_some()
            || self.sets.is_some()
            || self.passes.is_some()
    }

    fn names(&self, d: usize) -> Option<&Names> {
        match d {
            0 => self.hosts.as_ref().map(|(n, _)| n),
            1 => self.classes.as_ref().map(|(n, _)| n),
            2 => self.sets.as_ref(),
            _ => self.passes.as_ref(),
        }
    }

    /// The groups of a request for `target`, drawn as `drawn` (none when the run has no
    /// dimension by target).
    pub(crate) fn tags(&self, target: &Target, drawn: Drawn) -> Tags {
        let mut tags = Tags::UNDRAWN;
        if !self.any() {
            return tags;
        }
        if let Some((names, lookup)) = &self.hosts {
            let host = target
                .headers
                .get(http::header::HOST)
                .and_then(|v| v.to_str().ok())
                .or_else(|| target.authority.as_ref().map(|a| a.as_str()))
                .unwrap_or(&self.default_host);
            tags.0[0] = match lookup.get(host) {
                Some(i) => *i,
                None => lookup
                    .get(&host.to_ascii_lowercase())
                    .copied()
                    .unwrap_or(names.index(u64::MAX)),
            };
        }
        self.classify(target.path.as_str(), &mut tags);
        if let Some(names) = &self.sets {
            tags.0[2] = names.index(drawn.set as u64);
        }
        if let Some(names) = &self.passes {
            tags.0[3] = names.index(drawn.pass);
        }
        tags
    }

    /// `tags` drawn in pass `pass` over a list.
    pub(crate) fn with_pass(&self, mut tags: Tags, pass: u64) -> Tags {
        if let Some(names) = &self.passes {
            tags.0[3] = names.index(pass);
        }
        tags
    }

    /// The groups of a catalogue object's request: its site (the index of its virtual host,
    /// whose group has that index, folded beyond the limit) and the class of its path (read
    /// only when the run has classes).
    pub(crate) fn catalogue_tags(&self, site: u64, path: impl FnOnce() -> String) -> Tags {
        let mut tags = Tags::UNDRAWN;
        if let Some((names, _)) = &self.hosts {
            tags.0[0] = names.index(site);
        }
        if self.classes.is_some() && !self.drawn_classes {
            self.classify(&path(), &mut tags);
        }
        tags
    }

    /// Puts a catalogue request in its drawn class ([`vload_cache::Sampler::last_class`]),
    /// when the classes are the draw's.
    pub(crate) fn mark_drawn(&self, tags: &mut Tags, class: u8) {
        if self.drawn_classes {
            tags.0[1] = class;
        }
    }

    fn classify(&self, path: &str, tags: &mut Tags) {
        if let Some((names, classes)) = &self.classes {
            let hit = classes.iter().position(|c| c.pattern.is_match(path));
            tags.0[1] = names.index(hit.unwrap_or(classes.len()) as u64);
        }
    }
}

/// The hosts a run's requests are addressed to, when there are several, with a lookup from
/// a request's Host to its group; `default_host` names the targets that give none.
fn host_names(
    plan: &AttackPlan,
    summary: Option<&TargetSummary>,
    default_host: &str,
) -> Option<(Names, HashMap<String, u8>)> {
    let hosts = match (summary, &plan.catalogue) {
        (Some(summary), _) => {
            let mut names: Vec<String> = summary
                .vhosts
                .iter()
                .map(|(h, _)| {
                    if h.is_empty() {
                        default_host.to_owned()
                    } else {
                        h.clone()
                    }
                })
                .collect();
            // The attack's own host may also be named outright; a name is one group
            // however it is spelt.
            let mut seen = std::collections::HashSet::new();
            names.retain(|n| seen.insert(n.to_ascii_lowercase()));
            (names.len() > 1 || summary.vhosts_untracked > 0)
                .then(|| Names::bounded(names, summary.vhosts_untracked))
        }
        (None, Some(catalogue)) => (catalogue.hosts > 1).then(|| {
            // Only the names kept are made: --vhosts may be billions.
            let hosts = u64::from(catalogue.hosts);
            let kept = hosts.min(GROUP_LIMIT as u64);
            let names = (0..kept)
                .map(|i| catalogue.host_of(i).expect("several hosts"))
                .collect();
            Names::bounded(names, hosts - kept)
        }),
        _ => None,
    };
    hosts.map(|mut names| {
        // A host the names miss (spelt another way) is counted, folded, never lost.
        if names.names.last().is_none_or(|n| n != OTHER) {
            names.names.push(OTHER.into());
        }
        let lookup = names
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| *n != OTHER)
            .map(|(i, n)| (n.to_ascii_lowercase(), i as u8))
            .collect();
        (names, lookup)
    })
}

/// One group's counts while recording.
#[derive(Debug, Clone)]
struct GroupStats {
    requests: u64,
    errors: u64,
    classes: StatusClasses,
    cache: GroupCache,
    bytes_in: u64,
    latency: Distribution,
    /// Its responses' wait for the first byte and transfer, where the breakdown keeps them.
    first_byte: Distribution,
    transfer: Distribution,
}

impl GroupStats {
    fn new(settings: &HistogramSettings) -> GroupStats {
        GroupStats {
            requests: 0,
            errors: 0,
            classes: StatusClasses::default(),
            cache: GroupCache::default(),
            bytes_in: 0,
            latency: Distribution::new(settings),
            first_byte: Distribution::new(settings),
            transfer: Distribution::new(settings),
        }
    }

    /// Counts `n` requests that ended as `end`, and their phases.
    fn count_phases(&mut self, end: &End, n: u64) {
        self.count(end, n);
        if let Some(phases) = end.phases {
            self.first_byte.record_n(phases.first_byte, n);
            self.transfer.record_n(phases.transfer, n);
        }
    }

    fn count(&mut self, end: &End, n: u64) {
        self.requests += n;
        self.bytes_in += end.received;
        match end.status {
            Some(status) => {
                self.classes.count_n(status, n);
                let c = &mut self.cache;
                *match end.cache {
                    CacheClass::Hit => &mut c.hit,
                    CacheClass::Stale => &mut c.stale,
                    CacheClass::Miss => &mut c.miss,
                    CacheClass::Pass => &mut c.pass,
                    CacheClass::Unknown => &mut c.unknown,
                } += n;
            }
            None => self.errors += n,
        }
        if let Some(latency) = end.latency {
            self.latency.record_n(latency, n);
        }
    }

    fn merge(&mut self, other: &GroupStats) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.classes.add(&other.classes);
        self.cache.add(&other.cache);
        self.bytes_in += other.bytes_in;
        self.latency.merge(&other.latency);
        self.first_byte.merge(&other.first_byte);
        self.transfer.merge(&other.transfer);
    }

    fn record(&self, name: &str) -> Group {
        Group {
            name: name.to_owned(),
            requests: self.requests,
            errors: self.errors,
            status_classes: self.classes,
            cache: self.cache,
            bytes_in: self.bytes_in,
            latency: record(&self.latency),
            first_byte: (self.first_byte.moments.n > 0).then(|| record(&self.first_byte)),
            transfer: (self.transfer.moments.n > 0).then(|| record(&self.transfer)),
        }
    }
}

fn record(d: &Distribution) -> vload_schema::LatencyRecord {
    vload_schema::LatencyRecord {
        histogram: d.encode(),
        moments: d.moments,
    }
}

/// How one measured request (or a batch of identical ones) ended, for its groups.
#[derive(Debug, Clone, Copy)]
pub(crate) struct End {
    /// The response's status; `None` for a failure.
    pub(crate) status: Option<u16>,
    pub(crate) cache: CacheClass,
    /// Body bytes received (for the whole batch).
    pub(crate) received: u64,
    /// Its primary latency, when one was recorded.
    pub(crate) latency: Option<u64>,
    /// A response's wait for the first byte and transfer.
    pub(crate) phases: Option<crate::response::Phases>,
}

/// The cells of status class x cache state x size class, and the failures' cell.
const CELLS: usize = 5 * 5 * SIZES.len() + 1;

/// The breakdown by size: responses by their body's bytes, each class up to (not including)
/// its bound, then failures.
const SIZES: [(&str, u64); 5] = [
    ("< 1 KiB", 1 << 10),
    ("1-10 KiB", 10 << 10),
    ("10-100 KiB", 100 << 10),
    ("100 KiB-1 MiB", 1 << 20),
    (">= 1 MiB", u64::MAX),
];

/// The size class of a response of `bytes` body bytes.
fn size_class(bytes: u64) -> usize {
    SIZES
        .iter()
        .position(|(_, bound)| bytes < *bound)
        .unwrap_or(SIZES.len() - 1)
}

/// The cell of a request that ended as `end` (`n` alike): status class, cache state and
/// size class, or the failures' cell.
fn cell(end: &End, n: u64) -> usize {
    match end.status {
        Some(status) => {
            let row = match status / 100 {
                1..=4 => usize::from(status / 100) - 1,
                _ => 4,
            };
            let size = size_class(end.received / n.max(1));
            (row * 5 + end.cache as usize) * SIZES.len() + size
        }
        None => CELLS - 1,
    }
}

/// A worker's (or, merged, the run's) breakdown of the measured window.
#[derive(Debug, Clone)]
pub(crate) struct Breakdowns {
    settings: HistogramSettings,
    /// By status class, cache state and size class ([`cell`]); the last cell holds failures.
    cells: Vec<Option<GroupStats>>,
    /// Per dimension by target: its groups by index, the last for no target drawn.
    by_target: [Vec<Option<GroupStats>>; 4],
}

impl Breakdowns {
    pub(crate) fn new(settings: &HistogramSettings, dims: &Dimensions) -> Breakdowns {
        let slots = |d: usize| dims.names(d).map_or(0, |n| n.names.len() + 1);
        Breakdowns {
            settings: *settings,
            cells: vec![None; CELLS],
            by_target: std::array::from_fn(|d| vec![None; slots(d)]),
        }
    }

    /// Counts `n` requests that ended as `end`, with targets tagged `tags`.
    pub(crate) fn count(&mut self, tags: Tags, end: &End, n: u64) {
        let settings = self.settings;
        self.cells[cell(end, n)]
            .get_or_insert_with(|| GroupStats::new(&settings))
            .count_phases(end, n);
        for (d, (groups, tag)) in self.by_target.iter_mut().zip(tags.0).enumerate() {
            if groups.is_empty() {
                continue;
            }
            let slot = if tag == UNDRAWN {
                groups.len() - 1
            } else {
                usize::from(tag)
            };
            let group = groups[slot].get_or_insert_with(|| GroupStats::new(&settings));
            // Phases by class as by size: a class is what a user names to see its objects
            // apart (hosts, sets and passes keep one histogram a group).
            if BY_TARGET[d] == "class" {
                group.count_phases(end, n);
            } else {
                group.count(end, n);
            }
        }
    }

    pub(crate) fn merge(&mut self, other: &Breakdowns) {
        let pairs = self.cells.iter_mut().zip(&other.cells).chain(
            self.by_target
                .iter_mut()
                .zip(&other.by_target)
                .flat_map(|(a, b)| a.iter_mut().zip(b)),
        );
        for (mine, theirs) in pairs {
            if let Some(theirs) = theirs {
                match mine {
                    Some(mine) => mine.merge(theirs),
                    None => *mine = Some(theirs.clone()),
                }
            }
        }
    }

    /// The run file's breakdowns: by target first (those the run has), then by status
    /// class and by cache state; groups without a request are left out.
    pub(crate) fn records(&self, dims: &Dimensions) -> Vec<Breakdown> {
        let mut out = Vec::new();
        for (d, groups) in self.by_target.iter().enumerate() {
            let Some(names) = dims.names(d) else { continue };
            let named = names.names.iter().map(String::as_str).chain([NO_TARGET]);
            out.push(Breakdown {
                by: BY_TARGET[d].into(),
                folded: names.folded,
                groups: named
                    .zip(groups)
                    .filter_map(|(name, g)| g.as_ref().map(|g| g.record(name)))
                    .collect(),
            });
        }
        let margin = |by: &str, names: &[&str], of: &dyn Fn(usize) -> usize| {
            let mut groups: Vec<Option<GroupStats>> = vec![None; names.len()];
            for (cell, stats) in self.cells.iter().enumerate() {
                let Some(stats) = stats else { continue };
                let at = if cell == CELLS - 1 {
                    names.len() - 1
                } else {
                    of(cell)
                };
                match &mut groups[at] {
                    Some(g) => g.merge(stats),
                    slot => *slot = Some(stats.clone()),
                }
            }
            Breakdown {
                by: by.into(),
                folded: 0,
                groups: names
                    .iter()
                    .zip(&groups)
                    .filter_map(|(name, g)| g.as_ref().map(|g| g.record(name)))
                    .collect(),
            }
        };
        out.push(margin(
            "status",
            &["1xx", "2xx", "3xx", "4xx", "5xx", FAILED],
            &|cell| cell / (5 * SIZES.len()),
        ));
        let states: Vec<&str> = CacheClass::ALL.iter().map(|c| c.name()).collect();
        let mut names = states.clone();
        names.push(FAILED);
        out.push(margin("cache", &names, &|cell| cell / SIZES.len() % 5));
        // The cache states in the order a reader expects.
        if let Some(cache) = out.iter_mut().rfind(|b| b.by == "cache") {
            let order = ["hit", "stale", "miss", "pass", "unknown", FAILED];
            cache
                .groups
                .sort_by_key(|g| order.iter().position(|o| *o == g.name));
        }
        let names: Vec<&str> = SIZES
            .iter()
            .map(|(name, _)| *name)
            .chain([FAILED])
            .collect();
        out.push(margin("size", &names, &|cell| cell % SIZES.len()));
        out
    }
}

/// A worker's breakdowns while it runs: the run's dimensions and its own counts.
#[derive(Debug)]
pub(crate) struct Tally {
    dims: Arc<Dimensions>,
    counts: RefCell<Breakdowns>,
}

impl Tally {
    pub(crate) fn new(dims: Arc<Dimensions>) -> Tally {
        let counts = Breakdowns::new(&HistogramSettings::default(), &dims);
        Tally {
            dims,
            counts: RefCell::new(counts),
        }
    }

    /// Counts `n` measured requests that ended as `end`.
    pub(crate) fn count(&self, tags: Tags, end: &End, n: u64) {
        self.counts.borrow_mut().count(tags, end, n);
    }

    /// The counts, for the worker's summary.
    pub(crate) fn take(&self) -> Breakdowns {
        let empty = Breakdowns::new(&HistogramSettings::default(), &self.dims);
        self.counts.replace(empty)
    }
}

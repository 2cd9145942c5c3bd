//! Where requests come from: URL lists, vegeta targets, JSON lines, access-log replay.
//!
//! Files are read as streams: a worker holds one reader and a line number, so a
//! million-line list costs what a ten-line one does. Only `--pick random` loads the list
//! into memory, since it needs any target at any time; [`TargetPlan::validate`] says so
//! in its summary. Before an attack every file is read once to count its targets, hash
//! them into the workload hash, and find malformed lines (an error naming the file and the
//! line, or, with `skip_bad_lines`, a count).

use crate::plan::Shard;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use sha2::{Digest, Sha256};

/// The format of a target file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetFormat {
    /// One URL, or a path resolved against the base URL, per line.
    Urls,
    /// vegeta's http format: `METHOD URL`, header lines, `@body-file`, a blank line between targets.
    Vegeta,
    /// One JSON object per line: `{"method", "url", "header": {"Name": ["value"]}, "body": base64}`.
    JsonLines,
    /// NCSA combined or varnishncsa log lines; only GET and HEAD requests are replayed.
    Log,
}

impl TargetFormat {
    /// Name in run files.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetFormat::Urls => "urls",
            TargetFormat::Vegeta => "targets",
            TargetFormat::JsonLines => "json",
            TargetFormat::Log => "log",
        }
    }
}

/// One file of targets with its weight in a mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSet {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: TargetFormat,
    /// Relative weight among the sets (1 when alone).
    pub weight: u32,
}

/// How the next target is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// In file order, looping; with several sets, a set is drawn at random by weight.
    Sequential,
    /// Uniformly at random (seeded), with replacement; loads the lists into memory.
    Random {
        /// The seed.
        seed: u64,
    },
    /// In file order; with several sets, the sets interleave deterministically by weight.
    RoundRobin,
}

/// The target files of an attack and how to walk them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlan {
    /// The sets (one, or several for a mix).
    pub sets: Vec<TargetSet>,
    /// How to choose.
    pub pick: Pick,
    /// Walk the list this many times, then stop (sequential picks, one set).
    pub passes: Option<u64>,
    /// Count malformed lines instead of refusing the file.
    pub skip_bad_lines: bool,
}

/// One request target from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Method; `None` for URL lists (the attack's method applies).
    pub method: Option<Method>,
    /// Host of an absolute URL, or `None` for a path (the base URL's host applies).
    pub authority: Option<Authority>,
    /// The scheme of an absolute URL: true for `https`. `None` for a path.
    pub https: Option<bool>,
    /// Path and query.
    pub path: PathAndQuery,
    /// Headers of this target (added to the attack's).
    pub headers: HeaderMap,
    /// Body; empty for none (the attack's body applies).
    pub body: Bytes,
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TargetError {
    /// The file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong and what would work.
    pub message: String,
}

/// What validation found in one set.
#[derive(Debug, Clone, PartialEq)]
pub struct SetSummary {
    /// Targets read.
    pub targets: u64,
    /// Malformed lines skipped (with `skip_bad_lines`).
    pub skipped: u64,
    /// Log lines not replayed because of their method.
    pub other_methods: u64,
}

/// What validation found, for the plan record and the workload hash.
#[derive(Debug, Clone)]
pub struct TargetSummary {
    /// Per set, in order.
    pub sets: Vec<SetSummary>,
    /// SHA-256 over every target, in order.
    pub hash: [u8; 32],
    /// Hosts named by absolute URLs (at most 16 kept).
    pub hosts: Vec<String>,
    /// Targets that are paths, resolved against the attack's URL.
    pub paths: u64,
    /// The first absolute URL's `scheme://authority`, where an attack without a URL sends
    /// its load.
    pub first_origin: Option<String>,
    /// Absolute URLs by scheme: (`http`, `https`).
    pub schemes: (u64, u64),
    /// For `--pick random`: every set's targets, loaded.
    pub(crate) loaded: Option<Arc<Vec<Vec<Target>>>>,
}

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
            paths,
            first_origin,
            schemes,
            loaded: load.then(|| Arc::new(loaded)),
        })
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

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// One step of a reader.
enum Item {
    Target(Target),
    Bad(TargetError),
    /// A log line with a method that is not replayed.
    OtherMethod,
}

/// Reads targets from one file, streaming.
pub(crate) struct TargetReader {
    reader: BufReader<File>,
    /// The current line's bytes.
    buf: Vec<u8>,
    line: u64,
    set: TargetSet,
}

/// The longest line a target file may have. A file that is not one (a binary, a single
/// 10 GB line) is refused at its first long line instead of read whole into memory.
const MAX_LINE: usize = 1 << 20;

impl TargetReader {
    fn open(set: &TargetSet) -> Result<Self, TargetError> {
        let file = File::open(&set.path).map_err(|e| TargetError {
            file: display(&set.path),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        Ok(TargetReader {
            reader: BufReader::with_capacity(64 * 1024, file),
            buf: Vec::new(),
            line: 0,
            set: set.clone(),
        })
    }

    fn bad(&self, line: u64, message: impl Into<String>) -> Item {
        Item::Bad(TargetError {
            file: display(&self.set.path),
            line,
            message: message.into(),
        })
    }

    fn next_line(&mut self) -> Option<Result<String, Item>> {
        use std::io::Read as _;
        self.buf.clear();
        let read = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf);
        match read {
            Ok(0) => return None,
            Ok(_) => self.line += 1,
            Err(e) => {
                self.line += 1;
                return Some(Err(self.bad(self.line, format!("cannot read: {e}"))));
            }
        }
        if self.buf.len() > MAX_LINE {
            // Skip the rest of the line in bounded steps, so --skip-bad-lines can go on.
            while !self.buf.ends_with(b"\n") {
                self.buf.clear();
                match (&mut self.reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut self.buf)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let message = format!(
                "line longer than {} MiB: is this a target file?",
                MAX_LINE >> 20
            );
            return Some(Err(self.bad(self.line, message)));
        }
        let mut text = &self.buf[..];
        text = text.strip_suffix(b"\n").unwrap_or(text);
        text = text.strip_suffix(b"\r").unwrap_or(text);
        Some(
            std::str::from_utf8(text)
                .map(str::to_owned)
                .map_err(|_| self.bad(self.line, "not UTF-8 text: is this a target file?")),
        )
    }

    /// The next target, malformed line or skipped log line; `None` at the end of the file.
    fn next_item(&mut self) -> Option<Item> {
        loop {
            let text = match self.next_line()? {
                Ok(text) => text,
                Err(item) => return Some(item),
            };
            let trimmed = text.trim();
            if trimmed.is_empty()
                || (trimmed.starts_with('#') && self.set.format != TargetFormat::Log)
            {
                continue;
            }
            let start = self.line;
            let parsed = match self.set.format {
                TargetFormat::Urls => parse_url(trimmed).map(Item::Target),
                TargetFormat::JsonLines => parse_json(trimmed).map(Item::Target),
                TargetFormat::Log => parse_log(trimmed),
                TargetFormat::Vegeta => self.parse_vegeta(trimmed).map(Item::Target),
            };
            return Some(parsed.unwrap_or_else(|message| self.bad(start, message)));
        }
    }

    /// A vegeta target: this line, then header and `@body` lines up to a blank line.
    fn parse_vegeta(&mut self, first: &str) -> Result<Target, String> {
        let (method, url) = first
            .split_once(char::is_whitespace)
            .ok_or("expected 'METHOD URL'")?;
        let mut target = parse_url(url.trim())?;
        target.method = Some(
            Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("invalid method '{method}'"))?,
        );
        while let Some(line) = self.next_line() {
            let line = line.map_err(|_| "cannot read the next line".to_owned())?;
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(file) = line.strip_prefix('@') {
                let dir = self.set.path.parent().unwrap_or(Path::new("."));
                let body = std::fs::read(dir.join(file))
                    .map_err(|e| format!("cannot read body file '{file}': {e}"))?;
                target.body = Bytes::from(body);
                continue;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("expected 'Name: value' or '@file', got '{line}'"))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| format!("invalid header name '{name}'"))?;
            let value = HeaderValue::from_str(value.trim())
                .map_err(|_| format!("invalid value for header '{name}'"))?;
            target.headers.append(name, value);
        }
        Ok(target)
    }
}

fn empty_target(authority: Option<Authority>, https: Option<bool>, path: PathAndQuery) -> Target {
    Target {
        method: None,
        authority,
        https,
        path,
        headers: HeaderMap::new(),
        body: Bytes::new(),
    }
}

/// A path (`/a?b`) or an absolute `http://` URL.
fn parse_url(text: &str) -> Result<Target, String> {
    if text.starts_with('/') {
        let path = text
            .parse::<PathAndQuery>()
            .map_err(|e| format!("invalid path '{text}': {e}"))?;
        return Ok(empty_target(None, None, path));
    }
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("invalid URL '{text}': {e}"))?;
    match uri.scheme_str() {
        // The attack's URL decides plain or TLS; a target's scheme only names its host.
        Some("http" | "https") => {}
        _ => {
            return Err(format!(
                "invalid URL '{text}': expected a path like /a or http://host/a"
            ));
        }
    }
    let authority = uri
        .authority()
        .cloned()
        .ok_or_else(|| format!("invalid URL '{text}': no host"))?;
    check_port(&authority).map_err(|why| format!("invalid URL '{text}': {why}"))?;
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let https = uri.scheme_str() == Some("https");
    Ok(empty_target(Some(authority), Some(https), path))
}

/// The port of an authority, when it names one, must be 1-65535: the `http` crate reads
/// `:99999` as no port at all, which would send the load to port 80.
pub fn check_port(authority: &Authority) -> Result<(), String> {
    let rest = &authority.as_str()[authority.host().len()..];
    match rest.strip_prefix(':') {
        None | Some("") => Ok(()),
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(()),
            _ => Err(format!("port {port} is not a port (1 to 65535)")),
        },
    }
}

fn parse_json(text: &str) -> Result<Target, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let url = value
        .get("url")
        .and_then(|u| u.as_str())
        .ok_or("missing \"url\"")?;
    let mut target = parse_url(url)?;
    if let Some(method) = value.get("method").and_then(|m| m.as_str()) {
        target.method = Some(
            Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("invalid method '{method}'"))?,
        );
    }
    if let Some(headers) = value
        .get("header")
        .or_else(|| value.get("headers"))
        .and_then(|h| h.as_object())
    {
        for (name, values) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name '{name}'"))?;
            let list: Vec<&serde_json::Value> = match values {
                serde_json::Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for v in list {
                let v = v.as_str().ok_or_else(|| {
                    format!("header '{name}' must be a string or a list of strings")
                })?;
                target.headers.append(
                    &name,
                    HeaderValue::from_str(v)
                        .map_err(|_| format!("invalid value for header '{name}'"))?,
                );
            }
        }
    }
    if let Some(body) = value.get("body").and_then(|b| b.as_str()) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| "\"body\" must be base64")?;
        target.body = Bytes::from(bytes);
    }
    Ok(target)
}

/// `host ident user [date] "GET /path HTTP/1.1" status bytes "referer" "agent"`; varnishncsa
/// writes the absolute URL, `"GET http://host/path HTTP/1.1"`, which keeps the Host.
fn parse_log(line: &str) -> Result<Item, String> {
    let start = line
        .find('"')
        .ok_or("expected a quoted request line (NCSA combined format)")?;
    let rest = &line[start + 1..];
    let end = rest.find('"').ok_or("unterminated request line")?;
    let mut parts = rest[..end].split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(format!(
            "expected 'METHOD URL PROTOCOL', got '{}'",
            &rest[..end]
        ));
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method '{method}'"))?;
    if method != Method::GET && method != Method::HEAD {
        return Ok(Item::OtherMethod);
    }
    let mut t = parse_url(target)?;
    t.method = Some(method);
    Ok(Item::Target(t))
}

/// One worker's endless walk over the targets.
pub(crate) struct TargetStream {
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

impl std::fmt::Debug for TargetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetStream")
            .field("sets", &self.sets.len())
            .field("weights", &self.weights)
            .finish_non_exhaustive()
    }
}

impl TargetStream {
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
                },
            });
        }
        let weights: Vec<u32> = plan.sets.iter().map(|s| s.weight.max(1)).collect();
        let chooser = match plan.pick {
            Pick::RoundRobin => Chooser::Smooth(vec![0; weights.len()]),
            _ => Chooser::Random(Rng::new(seed, worker, u32::MAX)),
        };
        Ok(TargetStream {
            sets,
            weights,
            chooser,
        })
    }

    /// The next target. Files loop forever; `--passes` is enforced as a request count.
    pub(crate) fn next(&mut self) -> Option<Target> {
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
                targets.get(pick as usize).cloned()
            }
            SetStream::Sequential {
                reader,
                index,
                offset,
                workers,
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
                        }
                        Some(Item::Target(t)) => {
                            let mine = *index % *workers == *offset;
                            *index += 1;
                            if mine {
                                return Some(t);
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

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

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
        let mut s = TargetStream::new(p, &summary, worker, workers, Shard::WHOLE).unwrap();
        (0..n).map(|_| s.next().unwrap().path.to_string()).collect()
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
            let mut s = TargetStream::new(&p, &summary, worker, 6, shard).unwrap();
            (0..n)
                .map(|_| s.next().unwrap().path.to_string())
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
        let mut s = TargetStream::new(&p, &summary, 2, 4, shard).unwrap();
        let seen: std::collections::BTreeSet<String> = (0..200)
            .map(|_| s.next().unwrap().path.to_string())
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
        let mut s = TargetStream::new(&p, &summary, 0, 1, Shard::WHOLE).unwrap();
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
        let summary = p.validate().unwrap();
        let t = TargetStream::new(&p, &summary, 0, 1, Shard::WHOLE)
            .unwrap()
            .next()
            .unwrap();
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
        let mut s = TargetStream::new(&p, &summary, 0, 1, Shard::WHOLE).unwrap();
        let a = s.next().unwrap();
        assert_eq!(
            (a.method, a.authority.unwrap().as_str()),
            (Some(Method::GET), "www.example.com")
        );
        assert_eq!(s.next().unwrap().path, "/img.png");
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

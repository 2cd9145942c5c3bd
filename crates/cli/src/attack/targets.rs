//! `vload attack`'s target flags: where requests come from, besides the URL.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context as _, bail};
use vload_engine::{Pick, TargetFormat, TargetPlan, TargetSet, UNCLASSIFIED, UrlClass};

/// Format of a --targets file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TargetsFormatArg {
    /// vegeta's http format.
    Http,
    /// One JSON object a line.
    Json,
}

/// How targets are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PickArg {
    /// File order, looping.
    Sequential,
    /// At random, seeded by --seed.
    Random,
    /// File order; a --mix interleaves its lists deterministically by weight.
    RoundRobin,
}

/// Where requests come from, besides the URL.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TargetArgs {
    /// Targets in vegeta's http format, or JSON lines with --targets-format json (default: the URL alone).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "replay_log", "mix"])]
    pub(crate) targets: Option<PathBuf>,
    /// Format of --targets: http (vegeta's) or json (one object a line) (default: json for .json/.jsonl, else http).
    #[arg(long, value_enum)]
    pub(crate) targets_format: Option<TargetsFormatArg>,
    /// URLs or paths, one a line; paths resolve against the URL (default: the URL alone).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay_log", "mix"])]
    pub(crate) urls: Option<PathBuf>,
    /// Replay the GET and HEAD requests of an NCSA combined or varnishncsa log (default: none).
    #[arg(long, value_name = "FILE", conflicts_with = "mix")]
    pub(crate) replay_log: Option<PathBuf>,
    /// URL lists mixed by weight, e.g. hot.txt:90,crawl.txt:10 (default: none).
    #[arg(long, value_name = "FILE:WEIGHT,...")]
    pub(crate) mix: Option<String>,
    /// How targets are chosen: sequential (file order), random (seeded), round-robin.
    #[arg(long, value_enum, default_value_t = PickArg::Sequential)]
    pub(crate) pick: PickArg,
    /// Walk the list this many times, then stop (default: loop until the duration ends).
    #[arg(long)]
    pub(crate) passes: Option<u64>,
    /// Count malformed target or log lines instead of refusing the file (default: refuse).
    #[arg(long)]
    pub(crate) skip_bad_lines: bool,
    /// Name the requests whose path matches REGEX, for a breakdown by class, e.g.
    /// --class images='\.(png|jpg)$'; repeatable, the first match wins (default: none).
    #[arg(long, value_name = "NAME=REGEX")]
    pub(crate) class: Vec<String>,
}

impl TargetArgs {
    /// The target files, if any, and how to walk them; `seed` seeds a random pick.
    pub(crate) fn plan(&self, seed: Option<u64>) -> anyhow::Result<Option<TargetPlan>> {
        let Some(sets) = self.sets()? else {
            if self.passes.is_some()
                || self.skip_bad_lines
                || self.pick != PickArg::Sequential
                || self.targets_format.is_some()
            {
                bail!(
                    "--passes, --pick, --skip-bad-lines and --targets-format need target files: --urls, --targets, --replay-log or --mix"
                );
            }
            return Ok(None);
        };
        let pick = match self.pick {
            PickArg::Sequential => Pick::Sequential,
            PickArg::Random => Pick::Random {
                seed: seed.unwrap_or(1),
            },
            PickArg::RoundRobin => Pick::RoundRobin,
        };
        if self.passes.is_some() && (sets.len() > 1 || self.pick == PickArg::Random) {
            bail!(
                "--passes walks one list in order: it does not combine with --mix or --pick random"
            );
        }
        Ok(Some(TargetPlan {
            sets,
            pick,
            passes: self.passes,
            skip_bad_lines: self.skip_bad_lines,
        }))
    }

    /// The `--class` flags, checked: a name, a regex that compiles, no name twice.
    pub(crate) fn classes(&self) -> anyhow::Result<Vec<UrlClass>> {
        let mut classes: Vec<UrlClass> = Vec::new();
        for flag in &self.class {
            let Some((name, pattern)) = flag.split_once('=').filter(|(n, _)| !n.trim().is_empty())
            else {
                bail!("--class {flag}: give NAME=REGEX, e.g. --class images='\\.(png|jpg)$'");
            };
            let name = name.trim();
            if classes.iter().any(|c| c.name == name) || name == UNCLASSIFIED {
                bail!("--class {flag}: the name {name} is taken; give each class its own");
            }
            let pattern = regex::Regex::new(pattern).map_err(|e| {
                let why = e.to_string().lines().last().unwrap_or_default().to_owned();
                anyhow::anyhow!("--class {flag}: REGEX does not compile ({why})")
            })?;
            classes.push(UrlClass {
                name: name.to_owned(),
                pattern,
            });
        }
        if classes.len() > vload_schema::GROUP_LIMIT {
            bail!(
                "--class given {} times: a breakdown keeps at most {} classes",
                classes.len(),
                vload_schema::GROUP_LIMIT
            );
        }
        Ok(classes)
    }

    fn sets(&self) -> anyhow::Result<Option<Vec<TargetSet>>> {
        let mut sets = self.named_sets()?;
        for set in sets.iter_mut().flatten() {
            set.path = readable_again(&set.path)?;
        }
        Ok(sets)
    }

    fn named_sets(&self) -> anyhow::Result<Option<Vec<TargetSet>>> {
        let set = |path: &PathBuf, format| TargetSet {
            path: path.clone(),
            format,
            weight: 1,
        };
        Ok(Some(if let Some(path) = &self.targets {
            let json = path
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl");
            let format = match self.targets_format {
                Some(TargetsFormatArg::Json) => TargetFormat::JsonLines,
                Some(TargetsFormatArg::Http) => TargetFormat::Vegeta,
                None if json => TargetFormat::JsonLines,
                None => TargetFormat::Vegeta,
            };
            vec![set(path, format)]
        } else if let Some(path) = &self.urls {
            vec![set(path, TargetFormat::Urls)]
        } else if let Some(path) = &self.replay_log {
            vec![set(path, TargetFormat::Log)]
        } else if let Some(mix) = &self.mix {
            parse_mix(mix)?
        } else {
            return Ok(None);
        }))
    }

    /// The flag that named the targets, for messages.
    pub(crate) fn flag(&self) -> &'static str {
        match (&self.targets, &self.urls, &self.replay_log) {
            (Some(_), _, _) => "--targets FILE",
            (_, Some(_), _) => "--urls FILE",
            (_, _, Some(_)) => "--replay-log FILE",
            _ => "--mix FILES",
        }
    }
}

/// `hot.txt:90,crawl.txt:10`.
fn parse_mix(text: &str) -> anyhow::Result<Vec<TargetSet>> {
    text.split(',')
        .map(|part| {
            let (path, weight) = part.rsplit_once(':').ok_or_else(|| {
                anyhow::anyhow!("invalid --mix part '{part}': expected FILE:WEIGHT")
            })?;
            let weight: u32 = weight.parse().ok().filter(|w| *w > 0).ok_or_else(|| {
                anyhow::anyhow!(
                    "invalid weight '{weight}' in --mix: expected a whole number above 0"
                )
            })?;
            Ok(TargetSet {
                path: PathBuf::from(path),
                format: TargetFormat::Urls,
                weight,
            })
        })
        .collect()
}

/// Target inputs that can be read only once (`-` for stdin, a pipe, a terminal), each copied
/// to a file of its own: (as named, the copy).
static SPOOLED: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// `path`, or for an input that cannot be read again (stdin as `-`, a pipe, `/dev/stdin`) a
/// copy of it in the temporary directory: targets are read once to count and check them and
/// again by each worker, and a pipe holds them once (it read as "no targets in this file").
fn readable_again(path: &Path) -> anyhow::Result<PathBuf> {
    let stdin = path == Path::new("-");
    if !stdin && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(path.to_path_buf());
    }
    if !stdin && !path.exists() {
        return Ok(path.to_path_buf()); // the engine names the missing file
    }
    let mut spooled = SPOOLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, copy)) = spooled.iter().find(|(named, _)| named == path) {
        return Ok(copy.clone());
    }
    let copy = std::env::temp_dir().join(format!(
        "vload-targets-{}-{}",
        std::process::id(),
        spooled.len()
    ));
    let mut file = std::fs::File::create(&copy)
        .with_context(|| format!("copying {} to {}", path.display(), copy.display()))?;
    let copied = if stdin {
        std::io::copy(&mut std::io::stdin().lock(), &mut file)
    } else {
        std::fs::File::open(path).and_then(|mut input| std::io::copy(&mut input, &mut file))
    };
    copied.with_context(|| format!("reading targets from {}", path.display()))?;
    spooled.push((path.to_path_buf(), copy.clone()));
    Ok(copy)
}

/// The run file names the targets as given (`-`, the pipe), not their copies.
pub(crate) fn name_as_given(run: &mut vload_schema::RunFile) {
    let spooled = SPOOLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(targets) = run.plan.targets.as_mut() else {
        return;
    };
    for set in &mut targets.sets {
        if let Some((named, _)) = spooled
            .iter()
            .find(|(_, copy)| copy.display().to_string() == set.file)
        {
            set.file = named.display().to_string();
        }
    }
}

/// Deletes the copies (at exit).
pub(crate) fn remove_copies() {
    let spooled = SPOOLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (_, copy) in spooled.iter() {
        let _ = std::fs::remove_file(copy);
    }
}

//! `vload attack`'s target flags: where requests come from, besides the URL.

use std::path::PathBuf;

use anyhow::bail;
use vload_engine::{Pick, TargetFormat, TargetPlan, TargetSet};

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

    fn sets(&self) -> anyhow::Result<Option<Vec<TargetSet>>> {
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

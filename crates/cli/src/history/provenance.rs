//! What `vload attack` records of where a run came from (`--commit`, `--branch`,
//! `--config-file`, git when run in a checkout),
//! and `--history`, which adds the run to the store as it is written.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};
use vload_schema::{ConfigFile, Provenance};

use crate::side::{self, Deadline};

/// The History flags of `vload attack`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ProvenanceArgs {
    /// The commit under test, recorded for `vload history` (default: `git rev-parse HEAD`
    /// when vload runs in a git checkout, else none).
    #[arg(long, value_name = "ID")]
    pub(crate) commit: Option<String>,
    /// Its branch (default: git's current branch, in a checkout).
    #[arg(long, value_name = "NAME")]
    pub(crate) branch: Option<String>,
    /// A configuration file of the server under test (a VCL, an nginx.conf): its SHA-256 is
    /// recorded, and a change of it starts a new history series; repeatable (default: none).
    #[arg(long = "config-file", value_name = "PATH")]
    pub(crate) config_files: Vec<PathBuf>,
    /// Add the run to the history database as it is written (see `vload history`).
    #[arg(long)]
    pub(crate) history: bool,
    /// The history database for --history (default: vload-history.db in the working directory).
    #[arg(long, value_name = "PATH", env = "VLOAD_HISTORY")]
    pub(crate) db: Option<PathBuf>,
}

impl ProvenanceArgs {
    /// Checks what can be checked before the attack: every config file readable.
    pub(crate) fn config(&self) -> anyhow::Result<Vec<ConfigFile>> {
        self.config_files
            .iter()
            .map(|path| {
                let bytes = std::fs::read(path).map_err(|e| {
                    anyhow::anyhow!(
                        "--config-file {}: {e}: name a file the server under test reads, e.g. vcl/default.vcl",
                        path.display()
                    )
                })?;
                let hash = Sha256::digest(&bytes);
                Ok(ConfigFile {
                    path: path.display().to_string(),
                    sha256: hash.iter().map(|b| format!("{b:02x}")).collect(),
                })
            })
            .collect()
    }

    /// The run's provenance: the flags, then git for what they leave out.
    pub(crate) fn provenance(&self, config_files: Vec<ConfigFile>) -> Option<Provenance> {
        let git = Git::here();
        let p = Provenance {
            commit: self
                .commit
                .clone()
                .or_else(|| git.as_ref().map(|g| g.commit.clone())),
            branch: self
                .branch
                .clone()
                .or_else(|| git.as_ref().and_then(|g| g.branch.clone())),
            commit_time: git
                .as_ref()
                .filter(|g| {
                    self.commit
                        .as_ref()
                        .is_none_or(|c| g.commit.starts_with(c.as_str()))
                })
                .and_then(|g| g.time),
            dirty: git.as_ref().is_some_and(|g| g.dirty) && self.commit.is_none(),
            config_files,
        };
        (p != Provenance::default()).then_some(p)
    }
}

/// What git says of the working directory's checkout.
struct Git {
    commit: String,
    branch: Option<String>,
    time: Option<i64>,
    dirty: bool,
}

impl Git {
    /// `None` outside a checkout, or without git; each call bounded to 2 s.
    fn here() -> Option<Git> {
        let run = |args: &[&str]| -> Option<String> {
            let out = side::output(
                Command::new("git").args(args),
                64 * 1024,
                Deadline::after(Duration::from_secs(2)),
            )
            .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        };
        let commit = run(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty())?;
        let branch =
            run(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| !b.is_empty() && b != "HEAD");
        let time = run(&["show", "-s", "--format=%ct", "HEAD"]).and_then(|t| t.parse().ok());
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(Git {
            commit,
            branch,
            time,
            dirty,
        })
    }
}

//! Where a run came from: the code under test and its configuration, what `vload history`
//! keys a series by (with the workload, the testbed and the server's version).

use serde::{Deserialize, Serialize};

/// The code and configuration a run measured.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// The commit under test: `--commit`, or `git rev-parse HEAD` when vload ran in a checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its branch: `--branch`, or `git rev-parse --abbrev-ref HEAD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit's committer time (Unix seconds), when git gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_time: Option<i64>,
    /// True when the checkout had changes not committed (`git status --porcelain`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
    /// Configuration files named with `--config-file` (a VCL, an nginx.conf), each hashed.
    /// (The server's version, where its stats source tells it, is `server.stats.version`.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_files: Vec<ConfigFile>,
}

/// One configuration file of the server under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    /// The path as given.
    pub path: String,
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
}

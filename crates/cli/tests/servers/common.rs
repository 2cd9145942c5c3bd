//! What every stack's tests share: the repository's root, running vload, reading a run file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use vload_schema::RunFile;

/// The repository's root (this crate is crates/cli).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs vload (`--no-progress` on attacks); it must succeed.
pub(crate) fn vload(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vload"));
    command.args(args);
    if args[0] == "attack" {
        command.arg("--no-progress");
    }
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "vload {args:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub(crate) fn read_run(path: &Path) -> RunFile {
    RunFile::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// True when `program` runs here (`program flag` succeeds); otherwise says why `test` is
/// skipped, or fails it when `CI` or the variable `require` is set.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub(crate) fn installed(
    program: &str,
    flag: &str,
    require: &str,
    package: &str,
    test: &str,
) -> bool {
    let found = Command::new(program)
        .arg(flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return true;
    }
    let required = ["CI", require]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty() && v != "0" && v != "false"));
    assert!(
        !required,
        "{test}: {program} is not installed, and CI requires these tests (apt-get install -y {package})"
    );
    eprintln!("SKIPPED {test}: {program} is not installed (apt-get install -y {package})");
    false
}

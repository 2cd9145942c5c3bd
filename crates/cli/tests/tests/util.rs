use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub(crate) use vload_origin::{OriginConfig, OriginHandle, spawn};
pub(crate) use vload_schema::RunFile;

pub(crate) fn vload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vload"))
}

/// A scratch directory removed on drop.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("vload-cli-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the command; on an unexpected exit code prints everything and fails.
pub(crate) fn run(cmd: &mut Command, expect_code: i32) -> Output {
    let output = cmd.stdin(Stdio::null()).output().expect("vload runs");
    if output.status.code() != Some(expect_code) {
        panic!(
            "{cmd:?}\nexpected exit {expect_code}, got {:?}\n--- stdout\n{}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn read_run(path: &Path) -> RunFile {
    RunFile::from_json(&std::fs::read_to_string(path).expect("run file exists"))
        .expect("valid run file")
}

pub(crate) fn origin() -> OriginHandle {
    spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .unwrap()
}

pub(crate) fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

static TURNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A turn alone: a test that times something (a rate kept, a self-check's verdict, a sweep's
/// capacity, a signal's effect) holds it, so that no other attack of the suite shares the two
/// cores with it.
pub(crate) fn serial() -> std::sync::RwLockWriteGuard<'static, ()> {
    TURNS.write().unwrap_or_else(|p| p.into_inner())
}

/// A shared turn: attacks whose checks hold whatever else runs (counts, merges, files,
/// refusals, what reaches the origin) run side by side, never beside a test alone.
pub(crate) fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TURNS.read().unwrap_or_else(|p| p.into_inner())
}

/// Waits for a child to exit, killing it (and failing) after `limit`.
pub(crate) fn wait(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("vload did not stop within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `cmd` (an attack) with stdout captured, freezes it with SIGSTOP `at` after its start
/// for `length`, lets it go on, and returns its exit status and stdout.
pub(crate) fn run_frozen(
    cmd: &mut Command,
    at: std::time::Duration,
    length: std::time::Duration,
) -> (std::process::ExitStatus, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(at);
    signal(&child, libc::SIGSTOP);
    std::thread::sleep(length);
    signal(&child, libc::SIGCONT);
    let status = wait(&mut child, std::time::Duration::from_secs(30));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    (status, stdout)
}

//! The stack the Varnish tests run against, and their helpers.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

pub(crate) use crate::common::{read_run, root, vload};

use vload_origin::{OriginConfig, OriginHandle, spawn};
use vload_schema::RunFile;

/// True when varnishd can run here; otherwise says why the test is skipped, or fails under CI.
pub(crate) fn have_varnish(test: &str) -> bool {
    crate::common::installed("varnishd", "-V", "VLOAD_REQUIRE_VARNISH", "varnish", test)
}

static TURNS: RwLock<()> = RwLock::new(());

/// A turn alone, for a test that compares what two setups cost the server's CPU: no other
/// Varnish test runs beside it.
pub(crate) fn serial() -> RwLockWriteGuard<'static, ()> {
    TURNS.write().unwrap_or_else(|p| p.into_inner())
}

/// A shared turn: tests whose checks are counts (hits, misses, backend fetches, what the
/// model predicts) run side by side, each with a varnishd and an origin of its own.
pub(crate) fn shared() -> RwLockReadGuard<'static, ()> {
    TURNS.read().unwrap_or_else(|p| p.into_inner())
}

/// vload-origin and varnishd with one VCL from `vcl/`, both on loopback; both stop on drop.
pub(crate) struct Stack {
    pub(crate) origin: OriginHandle,
    varnishd: Child,
    pub(crate) dir: PathBuf,
    /// varnishd's listen address.
    pub(crate) addr: String,
}

impl Stack {
    pub(crate) fn start(vcl: &str) -> Stack {
        Stack::with_storage(vcl, "256m")
    }

    /// The stack with varnishd's `-s malloc,SIZE`.
    pub(crate) fn with_storage(vcl: &str, malloc: &str) -> Stack {
        let origin = OriginConfig {
            threads: Some(1),
            ..OriginConfig::loopback()
        };
        Stack::with_origin(vcl, malloc, origin)
    }

    /// The stack with varnishd's `-s malloc,SIZE` in front of an origin set up as `origin`.
    pub(crate) fn with_origin(vcl: &str, malloc: &str, origin: OriginConfig) -> Stack {
        let origin = spawn(origin).unwrap();
        let dir = std::env::temp_dir().join(format!(
            "vload-varnish-{}-{}",
            std::process::id(),
            origin.addr().port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // varnishd compiles the VCL as its own unprivileged user.
        set_mode(&dir, 0o755);
        let text = std::fs::read_to_string(root().join("vcl").join(vcl)).unwrap();
        let text = text.replace(
            ".port = \"8081\"",
            &format!(".port = \"{}\"", origin.addr().port()),
        );
        assert!(
            text.contains(&origin.addr().port().to_string()),
            "{vcl} names port 8081"
        );
        let vcl_path = dir.join(vcl);
        std::fs::write(&vcl_path, text).unwrap();
        set_mode(&vcl_path, 0o644);
        let varnishd = Command::new("varnishd")
            .arg("-F")
            .arg("-n")
            .arg(dir.join("n"))
            .args(["-a", "127.0.0.1:0", "-s", &format!("malloc,{malloc}")])
            .args(["-p", "feature=+busy_stats_rate"])
            .arg("-f")
            .arg(&vcl_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("varnishd starts");
        let mut stack = Stack {
            origin,
            varnishd,
            dir,
            addr: String::new(),
        };
        // 90 s: beside stress-ng at load 15 varnishd once took more than 30 s to compile its
        // VCL and listen.
        let deadline = Instant::now() + Duration::from_secs(90);
        while stack.addr.is_empty() {
            if let Some(status) = stack.varnishd.try_wait().unwrap() {
                let mut err = String::new();
                let _ = stack
                    .varnishd
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err);
                panic!("varnishd exited ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "varnishd did not answer in 90 s");
            let out = Command::new("varnishadm")
                .arg("-n")
                .arg(stack.name())
                .arg("debug.listen_address")
                .stderr(Stdio::null())
                .output()
                .unwrap();
            if let Some(port) = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .nth(2)
            {
                stack.addr = format!("127.0.0.1:{port}");
            } else {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        stack
    }

    pub(crate) fn name(&self) -> PathBuf {
        self.dir.join("n")
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.varnishd.id()
    }

    pub(crate) fn server_stats(&self) -> String {
        format!("varnish:{}", self.name().display())
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the varnishd this test started; it stops its worker process.
        unsafe { libc::kill(self.varnishd.id() as i32, libc::SIGTERM) };
        let _ = self.varnishd.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The counter `name` of the run's Varnish record.
pub(crate) fn counter(run: &RunFile, name: &str) -> u64 {
    let varnish = run.server.as_ref().unwrap().stats.as_ref().unwrap();
    varnish.counters[name]
}

/// vload's hits and completed requests over the span the Varnish counters cover.
pub(crate) fn vload_span(run: &RunFile) -> (u64, u64) {
    let varnish = run.server.as_ref().unwrap().stats.as_ref().unwrap();
    if varnish.covers == "attack" {
        let hits = run.intervals.iter().map(|i| i.hits).sum();
        let completed = run.intervals.iter().map(|i| i.completed).sum();
        (hits, completed)
    } else {
        assert_eq!(varnish.covers, "measured");
        (run.cache.hit, run.totals.completed)
    }
}

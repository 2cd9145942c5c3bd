//! nginx, HAProxy or Squid in front of vload origin, set up from `servers/`, on loopback.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) use crate::common::{read_run, root, vload};

use vload_origin::{OriginConfig, OriginHandle, spawn};

/// The server's program: nginx, haproxy or squid, in PATH or /usr/sbin.
fn program(server: &str) -> Option<PathBuf> {
    let found = |p: &Path| {
        Command::new(p)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    [PathBuf::from(server), Path::new("/usr/sbin").join(server)]
        .into_iter()
        .find(|p| found(p))
}

/// Whether the server can run here; otherwise says why the test is skipped, or fails when
/// CI requires these tests.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub(crate) fn have(server: &str, test: &str) -> bool {
    if program(server).is_some() {
        return true;
    }
    let required = ["CI", "VLOAD_REQUIRE_CACHES"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty() && v != "0" && v != "false"));
    assert!(
        !required,
        "{test}: {server} is not installed, and CI requires these tests (apt-get install -y {server})"
    );
    eprintln!("SKIPPED {test}: {server} is not installed (apt-get install -y {server})");
    false
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// vload origin and one cache from `servers/`; both stop on drop.
pub(crate) struct Cache {
    pub(crate) origin: OriginHandle,
    server: Child,
    pub(crate) dir: PathBuf,
    pub(crate) addr: String,
    /// `--server-stats`'s argument for it.
    pub(crate) stats: String,
}

impl Cache {
    /// `server` with a cache of `cache_mb` MB, as `servers/run.sh` sets it up.
    pub(crate) fn start(server: &str, cache_mb: u32) -> Cache {
        let origin = OriginConfig {
            threads: Some(1),
            ..OriginConfig::loopback()
        };
        Cache::start_with(server, cache_mb, origin, &[])
    }

    /// [`Cache::start`] in front of an origin set up as `origin`, nginx's settings as
    /// `servers/run.sh` takes them from its environment (`("CACHE_LOCK", "on")`,
    /// `("USE_STALE", "error")`, `("BACKGROUND_UPDATE", "on")`; each off unless given).
    pub(crate) fn start_with(
        server: &str,
        cache_mb: u32,
        origin: OriginConfig,
        nginx: &[(&str, &str)],
    ) -> Cache {
        let origin = spawn(origin).unwrap();
        let dir = std::env::temp_dir().join(format!(
            "vload-{server}-{}-{}",
            std::process::id(),
            origin.addr().port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // nginx's workers and Squid run as unprivileged users when started as root.
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let addr = format!("127.0.0.1:{}", free_port());
        let template = if server == "haproxy" {
            "haproxy.cfg".to_owned()
        } else {
            format!("{server}.conf")
        };
        let text = std::fs::read_to_string(root().join("servers").join(template)).unwrap();
        let port = origin.addr().port().to_string();
        let text = text
            .replace("@LISTEN@", &addr)
            .replace("@ORIGIN@", &format!("127.0.0.1:{port}"))
            .replace("@ORIGIN_HOST@", "127.0.0.1")
            .replace("@ORIGIN_PORT@", &port)
            .replace("@WORK@", dir.to_str().unwrap())
            .replace("@CACHE_MB@", &cache_mb.to_string())
            .replace("@MEMBER@", "")
            .replace("@MEMORY_POLICY@", "lru");
        let text = ["CACHE_LOCK", "USE_STALE", "BACKGROUND_UPDATE"]
            .iter()
            .fold(text, |text, key| {
                let value = nginx
                    .iter()
                    .find(|(k, _)| k == key)
                    .map_or("off", |(_, v)| v);
                text.replace(&format!("@{key}@"), value)
            });
        let conf = dir.join(format!("{server}.conf"));
        std::fs::write(&conf, text).unwrap();
        let program = program(server).expect("checked with have()");
        let mut command = Command::new(program);
        let stats = match server {
            "nginx" => {
                command.arg("-c").arg(&conf).args(["-g", "daemon off;"]);
                format!("nginx:http://{addr}/vload-stub-status")
            }
            "haproxy" => {
                command.arg("-db").arg("-f").arg(&conf);
                format!("haproxy:{}", dir.join("admin.sock").display())
            }
            "squid" => {
                command.arg("-N").arg("-f").arg(&conf);
                format!("squid:http://{addr}")
            }
            other => panic!("no such server {other}"),
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut cache = Cache {
            origin,
            server: child,
            dir,
            addr,
            stats,
        };
        cache.wait_up(server);
        cache
    }

    /// Waits until the server answers on its port and its counters can be read.
    fn wait_up(&mut self, server: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.server.try_wait().unwrap() {
                let log = ["error.log", "cache.log"]
                    .iter()
                    .filter_map(|f| std::fs::read_to_string(self.dir.join(f)).ok())
                    .collect::<String>();
                panic!("{server} exited ({status}): {log}");
            }
            let up = std::net::TcpStream::connect(&self.addr).is_ok()
                && Command::new(env!("CARGO_BIN_EXE_vload"))
                    .args(["attack", "-n", "1", "--no-progress", "--quiet"])
                    .args(["--server-stats", &self.stats, "-o"])
                    .arg(self.dir.join("up.json"))
                    .arg(format!("http://{}/vload-started", self.addr))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .unwrap()
                    .success();
            if up {
                return;
            }
            assert!(Instant::now() < deadline, "{server} did not answer in 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.server.id()
    }

    /// Requests the origin answered, but the one of [`Cache::wait_up`]'s probes.
    pub(crate) fn origin_requests(&self) -> u64 {
        let stats = self.origin.stats();
        stats.requests_total
            - stats
                .requests_by_path
                .get("/vload-started")
                .copied()
                .unwrap_or(0)
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // Only the process started here, by PID; SIGTERM lets nginx stop its workers.
        // SAFETY: kill(2) on our own child's PID.
        unsafe {
            libc::kill(self.server.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.server.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

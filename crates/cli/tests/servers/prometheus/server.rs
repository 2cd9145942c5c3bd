//! A real Prometheus for the tests: started on loopback with a scrape configuration, queried
//! over its HTTP API, ended by PID on drop.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when prometheus can run here; otherwise says why the test is skipped, or fails
/// under CI.
pub(crate) fn have_prometheus(test: &str) -> bool {
    crate::common::installed(
        "prometheus",
        "--version",
        "VLOAD_REQUIRE_PROMETHEUS",
        "prometheus",
        test,
    )
}

/// A port free on 127.0.0.1 a moment ago.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus on loopback, ended by PID (and its data removed) on drop.
pub(crate) struct Prometheus {
    child: Child,
    dir: PathBuf,
    pub(crate) addr: String,
}

impl Prometheus {
    /// Scrapes `targets` every second; `extra` flags, e.g. the remote-write receiver's.
    pub(crate) fn start(targets: &[String], extra: &[&str]) -> Prometheus {
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        Prometheus::launch(
            &format!("static_configs:\n      - targets: [{}]", list.join(", ")),
            extra,
        )
    }

    /// Scrapes every second the targets a Prometheus `file_sd` file lists (read again when
    /// it changes; it need not exist yet).
    pub(crate) fn discovering(file: &std::path::Path) -> Prometheus {
        Prometheus::launch(
            &format!(
                "file_sd_configs:\n      - files: ['{}']\n        refresh_interval: 1s",
                file.display()
            ),
            &[],
        )
    }

    /// `scrape`: the target part of the one scrape job's configuration.
    fn launch(scrape: &str, extra: &[&str]) -> Prometheus {
        let dir = std::env::temp_dir().join(format!(
            "vload-prometheus-{}-{}",
            std::process::id(),
            free_port()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vload\n    {scrape}\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap();
        let prometheus = Prometheus { child, dir, addr };
        let began = Instant::now();
        while prometheus
            .get("/-/ready")
            .is_none_or(|(status, _)| status != 200)
        {
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "prometheus did not get ready: {}",
                std::fs::read_to_string(prometheus.dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        prometheus
    }

    /// `GET path`: the status and the body, or `None` when nothing answers.
    pub(crate) fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = std::net::TcpStream::connect(&self.addr).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .ok()?;
        let mut text = Vec::new();
        stream.read_to_end(&mut text).ok()?;
        let text = String::from_utf8_lossy(&text).into_owned();
        let (head, body) = text.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_owned()))
    }

    /// The value of an instant query that yields one number.
    pub(crate) fn value(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (_, body) = self.get(&format!("/api/v1/query?query={encoded}"))?;
        // Chunked or not, the JSON is the part between the first '{' and the last '}'.
        let json = &body[body.find('{')?..=body.rfind('}')?];
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

//! #48: `vload attack --dashboard` in a real browser: Debian's chromium, headless, driven
//! over its DevTools protocol. The page loads without a console error, its numbers move at
//! least three times during a 5 s run, and its last numbers are the run file's.
//!
//! Without chromium the test says it was skipped and why; under `CI` (or with
//! `VLOAD_REQUIRE_CHROMIUM`) a missing chromium fails it instead. With
//! `VLOAD_DASHBOARD_SCREENSHOT=PATH` it also saves the page as a PNG there (docs/).

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};
use vload_origin::{OriginConfig, spawn};

use crate::common::{installed, read_run};

/// A headless chromium, ended on drop.
struct Browser {
    child: Child,
    _profile: tempdir::Dir,
}

mod tempdir {
    /// A directory removed on drop.
    pub(super) struct Dir(pub(super) std::path::PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the chromium this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// Starts chromium and returns it with its DevTools address (`ws://...`).
fn chromium() -> (Browser, String) {
    let profile = std::env::temp_dir().join(format!("vload-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&profile).unwrap();
    let mut child = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--remote-debugging-port=0",
            "--window-size=1000,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let lines = lines_of(child.stderr.take().unwrap());
    let browser = Browser {
        child,
        _profile: tempdir::Dir(profile),
    };
    let ws = wait_for(&lines, Duration::from_secs(60), |l| {
        l.split_once("DevTools listening on ")
            .map(|(_, url)| url.trim().to_owned())
    })
    .expect("chromium's DevTools address");
    (browser, ws)
}

/// The lines of `stream`, as a thread reads them.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line within `bound` that `pick` finds something in.
fn wait_for<T>(
    lines: &mpsc::Receiver<String>,
    bound: Duration,
    pick: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + bound;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(found) = pick(&line) {
                    return Some(found);
                }
            }
            Err(_) => return None,
        }
    }
    None
}

/// A DevTools session with one page.
struct Page {
    socket: WebSocket<TcpStream>,
    session: String,
    next: u64,
    /// Console errors and exceptions seen so far.
    errors: Vec<String>,
}

impl Page {
    fn open(ws: &str) -> Page {
        let address = ws
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .unwrap();
        let stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let (socket, _) = tungstenite::client(ws, stream).expect("the DevTools handshake");
        let mut page = Page {
            socket,
            session: String::new(),
            next: 0,
            errors: Vec::new(),
        };
        let target = page.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_owned();
        let attached = page.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        page.session = attached["sessionId"].as_str().unwrap().to_owned();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            page.call(domain, json!({}));
        }
        page
    }

    /// Sends `method` and returns its result, keeping the errors reported meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap();
        loop {
            let text = match self.socket.read().expect("DevTools answers") {
                Message::Text(text) => text.to_string(),
                _ => continue,
            };
            let got: Value = serde_json::from_str(&text).unwrap();
            if got["id"] == json!(id) {
                assert!(got.get("error").is_none(), "{method}: {got}");
                return got["result"].clone();
            }
            self.note(&got);
        }
    }

    /// Keeps a console error or an uncaught exception.
    fn note(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(params.to_string()),
            Some("Runtime.consoleAPICalled") if params["type"] == "error" => {
                self.errors.push(params.to_string());
            }
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => {
                self.errors.push(params.to_string());
            }
            _ => {}
        }
    }

    /// The value of a JavaScript expression (JSON-able).
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        result["result"]["value"].clone()
    }
}

#[test]
fn the_live_page_updates_in_a_browser_and_ends_on_the_run_files_figures() {
    if !installed(
        "chromium",
        "--version",
        "VLOAD_REQUIRE_CHROMIUM",
        "chromium",
        "the_live_page_updates_in_a_browser_and_ends_on_the_run_files_figures",
    ) {
        return;
    }
    let origin = spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let dir =
        tempdir::Dir(std::env::temp_dir().join(format!("vload-dashboard-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let out = dir.0.join("run.json");
    let (_browser, ws) = chromium();
    let mut attack = Command::new(env!("CARGO_BIN_EXE_vload"))
        .args([
            "attack",
            "-r",
            "200",
            "-d",
            "5s",
            "--dashboard",
            "127.0.0.1:0",
        ])
        // The origin runs in this process: its CPU is this process's.
        .args(["--watch-pid", &std::process::id().to_string()])
        .args(["--dashboard-linger", "6s", "--quiet", "-o"])
        .arg(&out)
        .arg(origin.url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(attack.stderr.take().unwrap());
    let url = wait_for(&lines, Duration::from_secs(30), |l| {
        l.split_once("live page at ")
            .map(|(_, url)| url.trim().to_owned())
    })
    .expect("vload names its live page");
    let mut page = Page::open(&ws);
    page.call("Page.navigate", json!({"url": url}));
    // Each distinct figure the page showed while the run went on.
    let mut seen: Vec<String> = Vec::new();
    let mut phases_live = false;
    // #58: the server's CPU was n/a until the end; the last partial second read as an asked
    // rate of 0/s; the charts had no axes and the phases none.
    let (mut cpu_live, mut charts_drawn) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    let last = loop {
        assert!(Instant::now() < deadline, "the page never showed the end");
        std::thread::sleep(Duration::from_millis(250));
        let now = page.eval(
            "JSON.stringify({requests: document.getElementById('requests')?.textContent, \
             phases: document.getElementById('phases')?.textContent, \
             cpu: document.getElementById('server-cpu')?.textContent, \
             asked: document.getElementById('asked')?.textContent, \
             axes: document.querySelectorAll('#rate text').length, \
             phase_lines: document.querySelectorAll('#phases-chart polyline').length, \
             done: document.body.dataset.done || '', final: window.vloadFinal || null})",
        );
        let now: Value = serde_json::from_str(now.as_str().unwrap_or("{}")).unwrap();
        if now["done"] == "1" {
            break now["final"].clone();
        }
        assert_ne!(
            now["asked"], "0/s",
            "a partial second drawn as a whole: {now}"
        );
        cpu_live |= now["cpu"]
            .as_str()
            .is_some_and(|c| c.parse::<f64>().is_ok());
        charts_drawn |=
            now["axes"].as_u64().unwrap_or(0) >= 6 && now["phase_lines"].as_u64().unwrap_or(0) >= 1;
        if let Some(phases) = now["phases"].as_str()
            && phases.ends_with('s')
            && !phases.starts_with("n/a")
        {
            phases_live = true;
        }
        if let Some(requests) = now["requests"].as_str()
            && seen.last().map(String::as_str) != Some(requests)
        {
            seen.push(requests.to_owned());
        }
    };
    if let Some(path) = std::env::var_os("VLOAD_DASHBOARD_SCREENSHOT") {
        use base64::Engine as _;
        let shot = page.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
    // A last look for errors reported after the end.
    page.eval("1");
    let status = attack.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(page.errors.is_empty(), "console errors: {:?}", page.errors);
    let moving: Vec<&String> = seen.iter().filter(|s| s.as_str() != "0").collect();
    assert!(
        moving.len() >= 3,
        "the page's figures during the run: {seen:?}"
    );
    assert!(phases_live, "the phases' medians shown during the run");
    assert!(cpu_live, "the server's CPU shown during the run");
    assert!(charts_drawn, "axes and a phases chart drawn during the run");
    let run = read_run(&out);
    let t = &run.totals;
    assert_eq!(last["requests"], json!(t.completed), "{last}");
    assert_eq!(last["due"], json!(t.intended), "{last}");
    assert_eq!(last["errors"], json!(t.error_count()), "{last}");
    assert_eq!(
        last["health"],
        json!(run.client_health.verdict.word()),
        "{last}"
    );
    let primary = run.latency.primary();
    let h = primary.histogram.decode().unwrap();
    let p50 = primary.moments.clamp(h.value_at_quantile(0.5));
    assert_eq!(last["p50_ns"], json!(p50), "{last}");
    // And what the page wrote is that figure, as the report counts it.
    let shown = page.eval("document.getElementById('requests').textContent");
    let digits: String = shown
        .as_str()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    assert_eq!(digits, t.completed.to_string());
}

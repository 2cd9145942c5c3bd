//! End-to-end tests against real caches other than Varnish (nginx's proxy_cache, HAProxy's
//! cache, Squid), each set up from `servers/` in front of vload origin on loopback: the
//! server's own counters agree with vload's counts and the origin's, and `vload compare`
//! carries the server's rows. Varnish's are in the varnish module. A server that is not installed
//! skips its test with a line, or fails it under CI (VLOAD_REQUIRE_CACHES).

mod outage;
pub(crate) mod stack;
mod stampede;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stack::*;
use vload_schema::RunFile;

/// `load` (`-n N` or `-d D`) on 10 connections over a catalogue of `objects` objects, with
/// the server's counters and CPU; the run file at `out`.
fn attack(cache: &Cache, load: [&str; 2], objects: u64, out: &Path) -> RunFile {
    let pid = cache.pid().to_string();
    vload(&[
        "attack",
        load[0],
        load[1],
        "-c",
        "10",
        "--catalogue",
        &objects.to_string(),
        "--server-stats",
        &cache.stats,
        "--watch-pid",
        &pid,
        "-o",
        out.to_str().unwrap(),
        &cache.url(),
    ]);
    read_run(out)
}

/// The server's counters, vload's and the origin's agree over one closed-loop attack without
/// a warm-up (the counters then cover every request): exactly, as the attack's requests all
/// ended before the last read.
fn counts_agree(server: &str) {
    if !have(server, &format!("{server}_counts_agree")) {
        return;
    }
    let cache = Cache::start(server, 64);
    let out = cache.dir.join("run.json");
    // Long enough for whole seconds, which the charts draw.
    let run = attack(&cache, ["-d", "2500ms"], 300, &out);
    let n = run.totals.completed;
    let stats = run.server.as_ref().unwrap().stats.as_ref().unwrap();
    assert_eq!(stats.source, server);
    assert_eq!(stats.covers, "measured");
    // #47: the server's version, from its own page (nginx's, Squid's Server header) or its
    // socket (HAProxy's show info), without a request of its own (the counts below hold).
    let version = stats.version.as_deref().unwrap_or_default();
    let name = if server == "haproxy" {
        "HAProxy "
    } else {
        server
    };
    assert!(
        version.to_lowercase().starts_with(&name.to_lowercase()),
        "{server}: {version:?}"
    );
    let common = stats.common;
    assert_eq!(
        common.requests,
        Some(n),
        "{server}: its own reads taken out: {stats:?}"
    );
    // Every miss vload saw in X-Cache was one fetch from the origin, and no other fetch was
    // made: vload's classification per response is right.
    assert_eq!(run.cache.hit + run.cache.miss, n, "{:?}", run.cache);
    assert_eq!(run.cache.miss, cache.origin_requests(), "{:?}", run.cache);
    match server {
        // stub_status counts requests and connections, no hits.
        "nginx" => {
            assert_eq!(common.connections, Some(run.totals.connections_opened));
            assert_eq!(common.hits, None);
        }
        _ => {
            assert_eq!(common.hits, Some(run.cache.hit), "{stats:?}");
            assert_eq!(common.misses, Some(run.cache.miss), "{stats:?}");
            assert_eq!(common.origin_requests, Some(cache.origin_requests()));
        }
    }
    // Read once a second too: every interval has the server's counts, never more than the
    // window's.
    assert!(run.intervals.iter().all(|i| i.server.is_some()), "{server}");
    let per_second: u64 = run
        .intervals
        .iter()
        .filter_map(|i| i.server.and_then(|s| s.requests))
        .sum();
    assert!(per_second <= n, "{server}: {per_second} of {n}");
    let page = cache.dir.join("plot.html");
    vload(&["plot", out.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let page = std::fs::read_to_string(page).unwrap();
    assert_eq!(
        page.contains("Origin requests over time"),
        server != "nginx",
        "{server}: the origin's chart where the server counts what it sent on"
    );
    let process = run.server.as_ref().unwrap().process.as_ref().unwrap();
    assert!(process.name.starts_with(server), "{process:?}");
    // The report shows the server's counters beside vload's and finds nothing to say.
    let report = String::from_utf8(vload(&["report", out.to_str().unwrap()]).stdout).unwrap();
    let name = stats.display_name();
    assert!(
        report.contains(&format!("{name:14}measured window")),
        "{report}"
    );
    assert!(
        !report.lines().any(|l| l.trim_start().starts_with("! ")),
        "{server}: a finding where the counts agree:\n{report}"
    );
}

#[test]
fn nginx_counts_agree() {
    counts_agree("nginx");
}

#[test]
fn haproxy_counts_agree() {
    counts_agree("haproxy");
}

#[test]
fn squid_counts_agree() {
    counts_agree("squid");
}

/// #45: HAProxy's `ereq` rose with the connections vload opened and was reported as the
/// server's trouble. It is vload's connections that closed without carrying a request (an
/// open loop's last connections, made as the window ended): HAProxy counts each as a request
/// error. Every `ereq` of a run is one of those, and the report says so in a note, not a `!`.
#[test]
fn haproxy_request_errors_are_vloads_unused_connections() {
    if !have(
        "haproxy",
        "haproxy_request_errors_are_vloads_unused_connections",
    ) {
        return;
    }
    let cache = Cache::start("haproxy", 64);
    for round in 0..3 {
        let out = cache.dir.join(format!("ereq-{round}.json"));
        vload(&[
            "attack",
            "-r",
            "20000",
            "-d",
            "2s",
            "--server-stats",
            &cache.stats,
            "-o",
            out.to_str().unwrap(),
            &cache.url(),
        ]);
        let run = read_run(&out);
        let stats = run.server.as_ref().unwrap().stats.as_ref().unwrap();
        let ereq = stats.counters["frontend.ereq"];
        let unused = run.totals.connections_unused;
        assert!(
            ereq <= unused,
            "round {round}: ereq {ereq}, unused {unused}"
        );
        let report = String::from_utf8(vload(&["report", out.to_str().unwrap()]).stdout).unwrap();
        assert!(
            !report.contains("! HAProxy got client requests it could not read"),
            "{report}"
        );
        if ereq > 0 {
            assert!(report.contains("note: HAProxy's frontend.ereq"), "{report}");
        }
    }
}

/// Two caches against one workload, two runs each, compared: a small HAProxy cache (1 MB)
/// against a large Squid one (64 MB) over 2,000 objects of the catalogue (about 5 KB each):
/// the server's own hit ratio, the requests sent to the origin and the server's CPU each get
/// a row, and the large cache sends fewer requests to the origin.
#[test]
fn two_caches_are_compared_on_their_own_counts() {
    if !have("haproxy", "two_caches_are_compared_on_their_own_counts")
        || !have("squid", "two_caches_are_compared_on_their_own_counts")
    {
        return;
    }
    let dir = tempdir();
    let mut files = Vec::new();
    for (server, mb) in [("haproxy", 1), ("squid", 64)] {
        let cache = Cache::start(server, mb);
        for i in 0..2 {
            let out = dir.join(format!("{server}-{i}.json"));
            attack(&cache, ["-n", "4000"], 2_000, &out);
            files.push(out.to_str().unwrap().to_owned());
        }
    }
    let json = vload(&[
        "compare", "--format", "json", &files[0], &files[1], "--", &files[2], &files[3],
    ]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = value["comparison"]["rows"].as_array().unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["metric"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {value}"))
    };
    for name in ["server_hit_ratio", "origin_share", "server_cpu"] {
        assert!(
            row(name)["a"]["median"].is_number(),
            "{name}: {}",
            row(name)
        );
    }
    let a = row("origin_share")["a"]["median"].as_f64().unwrap();
    let b = row("origin_share")["b"]["median"].as_f64().unwrap();
    assert!(
        b < a,
        "the larger cache sends fewer requests on: {a} vs {b}"
    );
    let text = String::from_utf8(
        vload(&["compare", &files[0], &files[1], "--", &files[2], &files[3]]).stdout,
    )
    .unwrap();
    for name in ["server hit ratio", "origin req/req", "server CPU/req"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A private directory for run files.
fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vload-caches-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `servers/run.sh` starts each cache with its counters wired and stops it after the
/// command: SERVER_STATS reads, and nothing is left listening.
#[test]
fn servers_run_sh_starts_each_cache_and_stops_it() {
    for server in ["nginx", "haproxy", "squid"] {
        if !have(server, "servers_run_sh_starts_each_cache_and_stops_it") {
            continue;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let out = std::process::Command::new("bash")
            .arg(root().join("servers/run.sh"))
            .arg(server)
            .args([
                "bash",
                "-c",
                r#""$VLOAD" attack -n 200 -c 2 --no-progress --server-stats "$SERVER_STATS" --watch-pid "$SERVER_PID" -o "$RUN" "${SERVER_URL}c/1""#,
            ])
            .env("VLOAD", env!("CARGO_BIN_EXE_vload"))
            .env("SERVER_LISTEN", &listen)
            .env("RUN", tempdir().join(format!("{server}-script.json")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{server}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = read_run(&tempdir().join(format!("{server}-script.json")));
        let stats = run.server.as_ref().unwrap().stats.as_ref().unwrap();
        assert_eq!(stats.common.requests, Some(200), "{server}: {stats:?}");
        assert!(
            std::net::TcpStream::connect(&listen).is_err(),
            "{server} still listens on {listen}"
        );
    }
}

/// #58: a HAProxy stopped by a signal (`kill -STOP`, a VM paused) whose stats socket's accept
/// queue is full: connect(2) on it waits for room for ever, and vload hung with no run file.
/// Each read's connect now ends by the read's deadline. Stopped before the attack, the first
/// read fails in one line naming the socket (exit 2, within the first read's 5 s); stopped
/// during it, the run ends on time with its file and a warning, the seconds after unknown.
#[test]
fn a_frozen_haproxy_costs_its_counters_never_the_run() {
    if !have(
        "haproxy",
        "a_frozen_haproxy_costs_its_counters_never_the_run",
    ) {
        return;
    }
    let cache = Cache::start("haproxy", 16);
    let socket = cache.dir.join("admin.sock");
    let pid = cache.pid() as libc::pid_t;
    // Stops HAProxy and fills its stats socket's queue: connections nobody accepts, until
    // one would wait.
    let freeze = || {
        // SAFETY: kill(2) on the HAProxy this test started, by its PID.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        // Every thread of it stopped ('T' in its stat) before the queue is filled: a thread
        // still running would accept from it.
        let stopped = || {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .unwrap()
                .flatten()
                .all(|task| {
                    std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                        stat.rsplit_once(") ")
                            .is_some_and(|(_, r)| r.starts_with('T'))
                    })
                })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stopped() {
            assert!(Instant::now() < deadline, "HAProxy did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut queued = Vec::new();
        loop {
            let s =
                socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            match s.connect(&socket2::SockAddr::unix(&socket).unwrap()) {
                Ok(()) => queued.push(s),
                Err(_) => break,
            }
            assert!(queued.len() < 100_000, "the queue never filled");
        }
        queued
    };
    let thaw = |queued: Vec<socket2::Socket>| {
        // SAFETY: as above; HAProxy goes on, and stops on drop.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        drop(queued);
    };
    let attack = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_vload"))
            .args([
                "attack",
                "-c",
                "2",
                "-r",
                "100",
                "-d",
                "4s",
                "--no-progress",
            ])
            .args(["--server-stats", &cache.stats, "-o"])
            .arg(out)
            .arg(format!("http://{}/", cache.origin.addr()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let finish = |child: std::process::Child| {
        let o = child.wait_with_output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // Frozen before the attack.
    let queued = freeze();
    let began = Instant::now();
    let (code, err) = finish(attack(&cache.dir.join("before.json")));
    let took = began.elapsed();
    thaw(queued);
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {err}");
    assert!(
        err.contains("admin.sock") && err.contains("queue is full"),
        "{err}"
    );
    // Frozen 1 s into the load (after the first read, which comes before "attacking").
    let out = cache.dir.join("during.json");
    let began = Instant::now();
    let mut child = attack(&out);
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut err = String::new();
    while !err.contains("attacking") {
        let read = std::io::BufRead::read_line(&mut stderr, &mut err).unwrap();
        assert!(read > 0, "vload ended before attacking: {err}");
    }
    std::thread::sleep(Duration::from_secs(1));
    let queued = freeze();
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    let code = child.wait().unwrap().code();
    let took = began.elapsed();
    thaw(queued);
    assert_eq!(code, Some(0), "{err}");
    assert!(took < Duration::from_secs(4 + 14), "took {took:?}: {err}");
    assert!(err.contains("--server-stats haproxy:"), "{err}");
    let run = read_run(&out);
    assert!(!run.interrupted);
    assert!(
        run.intervals.iter().filter(|i| !i.warmup).count() >= 4,
        "every second of the window recorded"
    );
}

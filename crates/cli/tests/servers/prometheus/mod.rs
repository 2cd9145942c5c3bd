//! vload's `--metrics-listen` scraped by a real Prometheus (#34): two shards of one attack,
//! each serving its figures, scraped every second; at the end, Prometheus's sum over the
//! shards equals the two run files' totals exactly. And `--metrics-remote-write`: the same
//! figures pushed to Prometheus's remote-write receiver, equal to the run files' too.
//!
//! Without prometheus this test says it was skipped and why; when `CI` or
//! `VLOAD_REQUIRE_PROMETHEUS` is set, a missing prometheus fails it instead.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use vload_origin::{OriginConfig, spawn};
use vload_schema::RunFile;

mod ansible;
mod server;

use server::{Prometheus, free_port, have_prometheus};

#[test]
fn prometheus_scrapes_two_shards_and_their_sum_equals_the_run_files() {
    if !have_prometheus("prometheus_scrapes_two_shards_and_their_sum_equals_the_run_files") {
        return;
    }
    let origin = spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let ports = [free_port(), free_port()];
    let targets: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let prometheus = Prometheus::start(&targets, &[]);
    let dir = std::env::temp_dir().join(format!("vload-prom-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.join(format!("shard-{i}.json")))
        .collect();
    let url = format!("http://{}/", origin.addr());
    let shards: Vec<Child> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_vload"))
                .args([
                    "attack", "-r", "400", "-d", "4s", "--warmup", "1s", "--quiet",
                ])
                .args(["--shard", &format!("{i}/2")])
                .args([
                    "--metrics-listen",
                    &targets[i],
                    "--metrics-linger",
                    "4s",
                    "-o",
                ])
                .arg(&files[i])
                .arg(&url)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut shard in shards {
        assert!(shard.wait().unwrap().success());
    }
    let runs: Vec<RunFile> = files
        .iter()
        .map(|f| RunFile::from_json(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect();
    let due: u64 = runs.iter().map(|r| r.totals.intended).sum();
    let ended: u64 = runs.iter().map(|r| r.totals.completed).sum();
    assert!(due > 0);
    // The last value each shard served, summed over the shards (their series go stale
    // once the shards are gone, so look back over the last minute).
    let sum = |metric: &str| prometheus.value(&format!("sum(max_over_time({metric}[1m]))"));
    assert_eq!(sum("vload_requests_due_total"), Some(due as f64));
    assert_eq!(sum("vload_requests_ended_total"), Some(ended as f64));
    assert_eq!(sum("vload_latency_seconds_count"), Some(ended as f64));
    assert_eq!(
        prometheus.value("count(count by (shard) (max_over_time(vload_requests_due_total[1m])))"),
        Some(2.0),
        "one series a shard, told apart by the shard label"
    );
    // Every query of the Grafana dashboard in deploy/grafana is one Prometheus accepts, and
    // over the run's last minute each has a value.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../deploy/grafana/vload.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$shard", ".*")
                .replace("$__rate_interval", "1m");
            // Evaluated at the end of the attack's window, where every series had samples.
            let query = format!("max_over_time(({expr})[2m:1s])");
            assert!(
                prometheus
                    .value(&format!("count({query})"))
                    .is_some_and(|n| n > 0.0),
                "no value for the dashboard's {expr}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn remote_write_pushes_the_figures_the_run_file_keeps() {
    if !have_prometheus("remote_write_pushes_the_figures_the_run_file_keeps") {
        return;
    }
    let origin = spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .unwrap();
    let prometheus = Prometheus::start(&[], &["--web.enable-remote-write-receiver"]);
    let dir = std::env::temp_dir().join(format!("vload-prom-push-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run_path = dir.join("run.json");
    let status = Command::new(env!("CARGO_BIN_EXE_vload"))
        .args([
            "attack", "-r", "300", "-d", "3s", "--warmup", "1s", "--quiet",
        ])
        .args(["--shard", "1/2", "--metrics-remote-write"])
        .arg(format!("http://{}/api/v1/write", prometheus.addr))
        .arg("-o")
        .arg(&run_path)
        .arg(format!("http://{}/", origin.addr()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let run = RunFile::from_json(&std::fs::read_to_string(&run_path).unwrap()).unwrap();
    assert!(run.totals.completed > 0);
    // The last push, after the run, carries the run file's totals, under the scrape's names
    // and labels, with job="vload" added.
    let last = |metric: &str| {
        prometheus.value(&format!(
            "max(max_over_time({metric}{{job=\"vload\",shard=\"1/2\"}}[5m]))"
        ))
    };
    assert_eq!(
        last("vload_requests_due_total"),
        Some(run.totals.intended as f64)
    );
    assert_eq!(
        last("vload_requests_ended_total"),
        Some(run.totals.completed as f64)
    );
    assert_eq!(
        last("vload_latency_seconds_count"),
        Some(run.totals.completed as f64)
    );
    // Pushed once a second: the series has a sample for (nearly) every second of the run.
    let samples = prometheus
        .value("count_over_time(vload_requests_ended_total[5m])")
        .unwrap_or(0.0);
    assert!(samples >= 3.0, "{samples} samples");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_remote_write_receiver_that_refuses_costs_a_warning_not_the_run() {
    let origin = spawn(OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    })
    .unwrap();
    // No receiver on the port: the attack goes on and says so once.
    let out = Command::new(env!("CARGO_BIN_EXE_vload"))
        .args([
            "attack",
            "-r",
            "200",
            "-d",
            "2500ms",
            "--no-progress",
            "--quiet",
        ])
        .arg("--metrics-remote-write")
        .arg(format!("http://127.0.0.1:{}/api/v1/write", free_port()))
        .arg(format!("http://{}/", origin.addr()))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("--metrics-remote-write").count(),
        1,
        "one warning: {err}"
    );
    assert!(err.contains("cannot connect"), "{err}");
    let bad = Command::new(env!("CARGO_BIN_EXE_vload"))
        .args([
            "attack",
            "-n",
            "1",
            "--metrics-remote-write",
            "https://example.test/",
        ])
        .arg(format!("http://{}/", origin.addr()))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an http:// URL"));
}

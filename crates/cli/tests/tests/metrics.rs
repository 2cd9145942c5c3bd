//! `--metrics-listen`: the attack's figures for Prometheus while it runs (#34).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::Stdio;

use super::util::*;

/// `GET path` on `addr`, with `accept` if given: the status line and the body.
fn get(addr: &str, path: &str, accept: Option<&str>) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// The value of the sample `name` (its full name with labels) in a scrape.
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The endpoint answers during the attack, and after it (--metrics-linger) its counters
/// equal the run file's totals, its latency count equals the requests measured, and its
/// histogram's p99 bucket holds HdrHistogram's p99. OpenMetrics when asked; 404 elsewhere.
#[test]
fn the_metrics_endpoint_serves_the_run_live_and_ends_equal_to_the_run_file() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("metrics");
    let out = dir.path("run.json");
    let mut child = vload()
        .args(["attack", "-r", "300", "-d", "3s", "--warmup", "1s"])
        .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "4s"])
        .args(["--shard", "0/1", "--quiet", "--no-progress", "-o"])
        .arg(&out)
        // Every answer stale at the nearest of two caches (#59: the cache's counters).
        .arg(format!(
            "{}?header=Cache-Status:shield;fwd=miss,edge;hit;ttl=-1",
            origin.url()
        ))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("vload: metrics for Prometheus at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    // During the run.
    let (status, body) = get(&addr, "/metrics", None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        body.contains("# TYPE vload_requests_due_total counter"),
        "{body}"
    );
    assert!(
        body.contains("vload_client_health{shard=\"0/1\",verdict=\"running\"} 1"),
        "{body}"
    );
    // After the run file is written, within the linger.
    let mut rest = String::new();
    loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        rest.push_str(&line);
        if line.contains("run file written") {
            break;
        }
    }
    let (_, body) = get(&addr, "/metrics", None);
    let run = read_run(&out);
    let t = &run.totals;
    let shard = "{shard=\"0/1\"}";
    for (name, value) in [
        ("vload_requests_due_total", t.intended),
        ("vload_requests_sent_total", t.sent),
        ("vload_requests_ended_total", t.completed),
        ("vload_latency_seconds_count", t.completed),
    ] {
        assert_eq!(
            sample(&body, &format!("{name}{shard}")),
            Some(value as f64),
            "{name}: {body}\n{rest}"
        );
    }
    let ok = t.status_codes.get(&200).copied().unwrap_or(0);
    assert_eq!(
        sample(&body, "vload_responses_total{shard=\"0/1\",class=\"2xx\"}"),
        Some(ok as f64)
    );
    assert_eq!(sample(&body, &format!("vload_warmup{shard}")), Some(0.0));
    // #59: the cache's word, and the layers of the path.
    let stale: u64 = run
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.stale)
        .sum();
    assert!(stale > 0 && stale == run.cache.hit, "{:?}", run.cache);
    assert_eq!(
        sample(
            &body,
            "vload_cache_responses_total{shard=\"0/1\",state=\"stale\"}"
        ),
        Some(stale as f64),
        "{body}"
    );
    assert_eq!(
        sample(
            &body,
            "vload_cache_layer_requests_total{shard=\"0/1\",layer=\"1\",outcome=\"reached\"}"
        ),
        Some(run.cache.layers[0].reached as f64),
        "{body}"
    );
    // #45: the client's health, live and at the end: the run file's late sends and verdict.
    assert_eq!(
        sample(&body, &format!("vload_late_sends_total{shard}")),
        Some(t.late_sends as f64),
        "{body}"
    );
    let word = run.client_health.verdict.word();
    assert_eq!(
        sample(
            &body,
            &format!("vload_client_health{{shard=\"0/1\",verdict=\"{word}\"}}")
        ),
        Some(1.0),
        "{body}"
    );
    assert!(
        sample(&body, &format!("vload_client_cpu_seconds_total{shard}")).is_some_and(|s| s > 0.0),
        "{body}"
    );
    // p99 from the buckets: the first bucket holding 99% of the count lies at or above
    // HdrHistogram's p99, and its lower neighbour below it.
    let p99 = run
        .latency
        .primary()
        .histogram
        .decode()
        .unwrap()
        .value_at_quantile(0.99) as f64
        / 1e9;
    let buckets: Vec<(f64, f64)> = body
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("vload_latency_seconds_bucket{shard=\"0/1\",le=\"")?;
            let (le, count) = rest.split_once("\"} ")?;
            Some((le.parse().ok()?, count.parse().ok()?))
        })
        .collect();
    let total = t.completed as f64;
    let at = buckets
        .iter()
        .position(|(_, c)| *c >= 0.99 * total)
        .unwrap();
    assert!(
        buckets[at].0 >= p99 * 0.999,
        "{p99} above bucket {:?}",
        buckets[at]
    );
    if at > 0 {
        assert!(
            buckets[at - 1].0 <= p99 * 1.3,
            "{p99} far above {:?}",
            buckets[at - 1]
        );
    }
    // OpenMetrics when asked for; a wrong path is a 404.
    let (_, body) = get(
        &addr,
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    );
    assert!(
        body.ends_with("# EOF\n") && body.contains("# TYPE vload_requests_due counter"),
        "{body}"
    );
    let (status, _) = get(&addr, "/nope", None);
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(child.wait().unwrap().success());
}

/// A busy address is one clear error naming the flag.
#[test]
fn a_busy_metrics_address_is_refused() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let o = run(
        vload().args(["attack", "-n", "10", "--metrics-listen", &addr]),
        2,
    );
    assert!(
        stderr(&o).contains(&format!("--metrics-listen {addr}: cannot listen there")),
        "{}",
        stderr(&o)
    );
}

/// #45: an endpoint on every interface says it is unauthenticated; credentials in headers
/// never reach the run file.
#[test]
fn an_open_endpoint_says_so_and_credentials_stay_out_of_the_run_file() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("open-metrics");
    let out = dir.path("run.json");
    let o = run(
        vload()
            .args([
                "attack",
                "-n",
                "20",
                "-c",
                "1",
                "--metrics-listen",
                "0.0.0.0:0",
            ])
            .args([
                "-H",
                "X-Api-Key: hunter2",
                "-H",
                "Authorization: Bearer s3cret",
            ])
            .args(["--no-progress", "-o"])
            .arg(&out)
            .arg(origin.url()),
        0,
    );
    assert!(stderr(&o).contains("(unauthenticated:"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("s3cret"),
        "{text}"
    );
    assert!(text.contains("Bearer (redacted)"), "the scheme is kept");
}

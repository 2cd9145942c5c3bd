//! #59: a two-tier cache (`vcl/run-tiers.sh`: edge varnishd -> shield varnishd -> vload
//! origin), each answer listing both caches in `Cache-Status`. From vload's per-layer figures
//! alone: the edge's misses are the shield's requests and the shield's misses the origin's,
//! exactly, in total and in every second; checked against the shield's own counters and the
//! origin's own count. The same with nginx as the edge, adding its own field line of
//! `Cache-Status` after the shield's (`EDGE=nginx`).

use std::process::{Command, Stdio};

use super::stack::{counter, have_varnish, read_run, root, shared};

#[test]
fn each_tier_forwards_exactly_what_the_next_one_receives() {
    if !have_varnish("each_tier_forwards_exactly_what_the_next_one_receives") {
        return;
    }
    let _turn = shared();
    tiers("varnish");
}

#[test]
fn an_nginx_edge_lists_itself_and_forwards_what_the_shield_receives() {
    let name = "an_nginx_edge_lists_itself_and_forwards_what_the_shield_receives";
    if !have_varnish(name) || !crate::caches::stack::have("nginx", name) {
        return;
    }
    let _turn = shared();
    tiers("nginx");
}

/// Runs 5 s through the two tiers with `edge` in front and checks each layer's figures.
fn tiers(edge: &str) {
    let dir = std::env::temp_dir().join(format!("vload-tiers-test-{edge}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.json");
    let origin = dir.join("origin");
    // The shield warmed with 600 requests of the catalogue first, for the edge's Host (each
    // cache keys on it; nginx evicts lazily: a small nginx edge still holds everything 5 s
    // on, and only a warm shield hits); the
    // origin's own count, read over a bare socket before and after the attack.
    let script = format!(
        r#"count() {{ p=${{ORIGIN_URL##*:}}; exec 3<>/dev/tcp/127.0.0.1/${{p%/}} || exit 1
             printf 'GET /stats HTTP/1.0\r\n\r\n' >&3; cat <&3 > {origin}-$1; }}
         host=${{EDGE_URL#http://}}
         "$VLOAD" attack --no-progress --quiet -n 600 -c 4 --catalogue 2000 --ttl 60 \
            -H "Host: ${{host%/}}" -o /dev/null $SHIELD_URL || exit 1
         count before
         "$VLOAD" attack --no-progress -r 300 -d 5s --catalogue 2000 --ttl 60 \
            --server-stats varnish:$SHIELD_NAME -o {out} $EDGE_URL >/dev/null || exit 1
         count after"#,
        out = out.display(),
        origin = origin.display()
    );
    let status = Command::new("bash")
        .arg(root().join("vcl/run-tiers.sh"))
        .args(["bash", "-c", &script])
        .env("VLOAD", env!("CARGO_BIN_EXE_vload"))
        .env("EDGE", edge)
        // A small edge evicts what the shield still holds: both layers hit.
        .env("EDGE_MALLOC", "2m")
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let run = read_run(&out);
    let layers = &run.cache.layers;
    assert_eq!(layers.len(), 2, "{layers:?}");
    let (edge, shield) = (layers[0], layers[1]);
    assert_eq!(edge.reached, run.totals.completed);
    assert_eq!(
        edge.misses, shield.reached,
        "the edge's misses are the shield's requests"
    );
    assert!(
        edge.hits > 0 && shield.hits > 0,
        "both layers hit: {layers:?}"
    );
    // The shield's own counters (the report compares them with layer 2: no finding).
    assert_eq!(counter(&run, "client_req"), shield.reached);
    assert_eq!(counter(&run, "backend_req"), shield.misses);
    let counted = |when: &str| {
        let stats = std::fs::read_to_string(dir.join(format!("origin-{when}"))).unwrap();
        let body = stats.split("\r\n\r\n").nth(1).expect("the origin's answer");
        serde_json::from_str::<vload_origin::StatsSnapshot>(body)
            .unwrap()
            .requests_total
    };
    assert_eq!(
        counted("after") - counted("before"),
        shield.misses,
        "the shield's misses are the origin's requests"
    );
    // Every second the same, and the seconds add up to the whole.
    let mut sum = [0u64; 2];
    for i in run.intervals.iter().filter(|i| !i.warmup) {
        if let [e, s] = i.layers[..] {
            assert_eq!(e.misses, s.reached, "second {}: {:?}", i.start_s, i.layers);
            sum[0] += e.misses;
            sum[1] += s.misses;
        }
    }
    assert_eq!(sum, [edge.misses, shield.misses]);
    let report = super::stack::vload(&["report", out.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("layer 2 of the cache path"), "{report}");
    assert!(!report.contains("disagrees"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

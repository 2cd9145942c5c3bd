//! #59: an origin outage behind nginx (`--outage`). With `proxy_cache_use_stale error`,
//! nginx serves its stale copies while the origin refuses connections, and says so
//! (`X-Cache: STALE`), every answer a 200; without it, each expired object is a 502.

use vload_origin::OriginConfig;
use vload_schema::{RunFile, StageRecord};

use super::stack::{Cache, have, read_run, vload};

/// 8 s at 200/s over 100 objects of max-age 1 s, each fetched once first, the origin
/// refusing connections from 2 s to 6 s: the outage's stage.
fn outage(cache: &Cache, name: &str) -> (RunFile, StageRecord) {
    let out = cache.dir.join(format!("outage-{name}.json"));
    vload(&[
        "attack",
        "-r",
        "200",
        "-d",
        "8s",
        "--catalogue",
        "100",
        "--popularity",
        "uniform",
        "--ttl",
        "1",
        "--warmup-until",
        "pass",
        "--outage",
        "2s-6s",
        "--origin",
        &cache.origin.url(),
        "-o",
        out.to_str().unwrap(),
        &cache.url(),
    ]);
    let run = read_run(&out);
    let down = run
        .stages
        .iter()
        .find(|s| s.origin_state.as_deref() == Some("refuse"))
        .expect("the outage's stage")
        .clone();
    (run, down)
}

/// Every answer of the outage a 200, most of them stale (those fetched in the second before
/// it are still fresh at its start).
fn served_stale_throughout(down: &StageRecord) {
    assert_eq!(
        down.status_codes.keys().collect::<Vec<_>>(),
        [&200],
        "{down:?}"
    );
    assert_eq!(down.error_count(), 0, "{down:?}");
    assert!(down.stale * 10 >= down.completed * 7, "{down:?}");
}

fn origin() -> OriginConfig {
    OriginConfig {
        threads: Some(1),
        ..OriginConfig::loopback()
    }
}

#[test]
fn nginx_serves_stale_through_an_outage_only_when_told() {
    if !have(
        "nginx",
        "nginx_serves_stale_through_an_outage_only_when_told",
    ) {
        return;
    }
    let stale = [
        ("USE_STALE", "error timeout updating"),
        ("BACKGROUND_UPDATE", "on"),
    ];
    let cache = Cache::start_with("nginx", 64, origin(), &stale);
    let (run, down) = outage(&cache, "use-stale");
    served_stale_throughout(&down);
    assert!(
        run.stages.iter().all(|s| s.stale <= s.hits),
        "{:?}",
        run.stages
    );
    drop(cache);
    let cache = Cache::start_with("nginx", 64, origin(), &[]);
    let (_, down) = outage(&cache, "no-stale");
    assert_eq!(down.stale, 0, "{down:?}");
    let failed = down.status_codes.get(&502).copied().unwrap_or(0);
    assert!(failed * 10 >= down.completed * 7, "{down:?}");
}

/// Squid serves its stale copies while the origin is down (its `max_stale`, a week by
/// default), each a hit that says `Warning: 110 ... "Response is stale"`, which vload counts
/// as stale.
#[test]
fn squid_serves_stale_through_an_outage_and_says_so() {
    if !have("squid", "squid_serves_stale_through_an_outage_and_says_so") {
        return;
    }
    let cache = Cache::start_with("squid", 64, origin(), &[]);
    let (_, down) = outage(&cache, "squid");
    served_stale_throughout(&down);
}

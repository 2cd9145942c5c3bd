//! Tiered caches in the analysis: which layer of the path a server's counters are of, and how
//! many requests may be in flight at their edges.

use vload_schema::{LayerCounts, RunFile};

/// The most requests in flight at once, which may fall on either side of the counters'
/// edges: an open loop's connections may number 10,000 while it used 7 (its peak, over
/// HTTP/1.1, one request each); over HTTP/2 and 3 a connection carries many, so the
/// connections planned.
pub(crate) fn in_flight_bound(run: &RunFile) -> u32 {
    let peak = run
        .client_health
        .peak_connections
        .filter(|_| matches!(run.plan.http_version.as_str(), "1.1" | "1.0"));
    peak.map_or(run.plan.connections, |p| {
        u32::try_from(p)
            .unwrap_or(u32::MAX)
            .min(run.plan.connections)
    })
}

/// Tiered caches: when the server watched served about as many requests (within `slack`)
/// as one of the layers behind the nearest reached (a shield), and not as many as vload
/// completed over the counters' span (`completed`), it is that layer: its number (from 1)
/// and vload's counts of it over the same span.
pub(crate) fn deeper_layer(
    run: &RunFile,
    v: &vload_schema::StatsRecord,
    completed: u64,
    slack: u64,
) -> Option<(usize, LayerCounts)> {
    let served = v.common.served()?;
    if served.abs_diff(completed) <= slack {
        return None;
    }
    // The layers as counted over the same span as `span`.
    let layers: Vec<LayerCounts> = if v.covers == "attack" {
        let mut sum: Vec<LayerCounts> = Vec::new();
        for i in &run.intervals {
            for (k, l) in i.layers.iter().enumerate() {
                if sum.len() <= k {
                    sum.push(LayerCounts::default());
                }
                sum[k].reached += l.reached;
                sum[k].hits += l.hits;
                sum[k].misses += l.misses;
            }
        }
        sum
    } else {
        run.cache.layers.clone()
    };
    let (i, l) = layers
        .iter()
        .enumerate()
        .skip(1)
        .min_by_key(|(_, l)| l.reached.abs_diff(served))?;
    (l.reached.abs_diff(served) <= slack).then_some((i + 1, *l))
}

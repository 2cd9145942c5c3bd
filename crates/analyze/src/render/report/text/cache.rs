//! The report's cache block: vload's classification of responses, and for a catalogue
//! workload what the model says a cache should have hit.

use vload_schema::{CacheModelRecord, CatalogueRecord};

use super::row;
use crate::summary::{LatencySummary, Summary};
use crate::units::{bytes, count, duration_ns, percent, rate};

pub(super) fn render_cache(out: &mut String, s: &Summary) {
    render_classified(out, s);
    if let (Some(catalogue), Some(model)) = (&s.catalogue, &s.cache_model) {
        render_model(out, s, catalogue, model);
    }
}

fn render_classified(out: &mut String, s: &Summary) {
    let c = &s.cache;
    let classified = c.hit + c.miss;
    if classified == 0 {
        row(
            out,
            "Cache",
            "[hit, miss, unknown]",
            &format!("no cache headers on {} responses", count(c.unknown)),
        );
        return;
    }
    let sources: Vec<String> = [
        ("X-Varnish", c.by_source.x_varnish),
        ("X-Cache", c.by_source.x_cache),
        ("Age", c.by_source.age),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, n)| format!("{name} {}", count(*n)))
    .collect();
    let values = format!(
        "{}, {}, {}  (hit ratio {} of classified; by {})",
        count(c.hit),
        count(c.miss),
        count(c.unknown),
        percent(c.hit as f64 / classified as f64),
        sources.join(", ")
    );
    row(out, "Cache", "[hit, miss, unknown]", &values);
    let short = |l: &LatencySummary| {
        let q = |n: &str| {
            l.quantile(n)
                .map_or_else(|| "n/a".to_owned(), |v| duration_ns(v as f64))
        };
        format!(
            "{}, {}, {}",
            q("p50"),
            q("p99"),
            l.mean_ns.map_or_else(|| "n/a".to_owned(), duration_ns)
        )
    };
    if let Some(hit) = &s.hit {
        row(out, "  hits", "[p50, p99, mean]", &short(hit));
    }
    if let Some(miss) = &s.miss {
        row(out, "  misses", "[p50, p99, mean]", &short(miss));
    }
}

fn render_model(out: &mut String, s: &Summary, c: &CatalogueRecord, m: &CacheModelRecord) {
    let mut law = format!(
        "{} objects ({}), {}, sizes {}",
        count(c.objects),
        bytes(c.total_bytes),
        c.popularity,
        c.object_size
    );
    if let Some([lo, hi]) = c.ttl_s {
        law.push_str(&if lo == hi {
            format!(", max-age {lo} s")
        } else {
            format!(", max-age {lo}-{hi} s")
        });
    }
    if c.one_hit_wonders > 0.0 {
        law.push_str(&format!(", {} one-hit wonders", percent(c.one_hit_wonders)));
    }
    if c.hosts > 1 {
        law.push_str(&format!(", {} hosts", c.hosts));
    }
    row(
        out,
        "Catalogue",
        "[objects, popularity, sizes]",
        &format!("{law}, seed {}", c.seed),
    );
    let mut names = vec!["any cache from empty".to_owned()];
    let mut values = vec![percent(m.cold_bound)];
    if let Some(ttl) = m.ttl_bound {
        names.push("any cache under the max-age".into());
        values.push(percent(ttl));
    }
    if let (Some(capacity), Some(lru)) = (&m.capacity, m.lru_hit_ratio) {
        names.insert(0, format!("LRU of {capacity}"));
        values.insert(0, percent(lru));
    }
    row(
        out,
        "Cache model",
        &format!("[{}]", names.join(", ")),
        &format!(
            "{}  (at {}, after {} warm-up requests)",
            values.join(", "),
            rate(m.rate_per_s),
            count(m.requests_before)
        ),
    );
    row(
        out,
        "",
        "",
        "LRU: Che's approximation, warm; from empty: every object's first request misses",
    );
    let classified = s.cache.hit + s.cache.miss;
    if classified > 0 {
        let measured = s.cache.hit as f64 / classified as f64;
        row(out, "", "", &verdict(measured, m));
    }
}

/// What the measured hit ratio says against the model.
fn verdict(measured: f64, m: &CacheModelRecord) -> String {
    let points = |a: f64, b: f64| format!("{:.1} points", (a - b).abs() * 100.0);
    if measured > m.cold_bound + 0.01 {
        return format!(
            "measured {}: {} above what any cache could hit from empty, so the cache held objects before this attack (an earlier run, or a warm-up not counted here)",
            percent(measured),
            points(measured, m.cold_bound)
        );
    }
    let Some(lru) = m.lru_hit_ratio else {
        return format!(
            "measured {}; give --cache-size for what an LRU of the cache's size would hit",
            percent(measured)
        );
    };
    let capacity = m.capacity.as_deref().unwrap_or("that size");
    let against = if (measured - lru).abs() <= 0.02 {
        format!("within 2 points of an LRU of {capacity}")
    } else if measured < lru {
        format!("{} under an LRU of {capacity}", points(measured, lru))
    } else {
        format!("{} over an LRU of {capacity}", points(measured, lru))
    };
    let cold = if m.cold_bound < lru {
        " (the run is too short, or started too cold, for the warm figure: the bound from empty is lower)"
    } else {
        ""
    };
    format!("measured {}: {against}{cold}", percent(measured))
}

//! The report's cache block: vload's classification of responses, and for a catalogue
//! workload what the model says a cache should have hit.

use vload_schema::{CacheModelRecord, CatalogueRecord, PurgeRecord, WarmRecord};

use crate::purge::PurgeEffect;

use super::rows::row;
use crate::summary::{LatencySummary, Summary};
use crate::units::{bytes, count, duration_ns, percent, rate};

pub(super) fn render_cache(out: &mut String, s: &Summary) {
    if let Some(w) = &s.warmed {
        let sign = if w.reached { "" } else { "! " };
        row(
            out,
            "Warm-up run",
            if w.until == "pass" {
                "[one pass over every object]"
            } else {
                "[until the hit ratio held still]"
            },
            &format!("{sign}{}", warmed_line(w)),
        );
    }
    render_classified(out, s);
    if let (Some(catalogue), Some(model)) = (&s.catalogue, &s.cache_model) {
        render_model(out, s, catalogue, model);
    }
    if let Some(purges) = &s.purges {
        render_purges(out, purges, &s.purge_effects);
    }
}

fn render_purges(out: &mut String, p: &PurgeRecord, effects: &[PurgeEffect]) {
    let sent: u64 = p.bursts.iter().map(|b| b.sent).sum();
    let mut codes = std::collections::BTreeMap::new();
    for b in &p.bursts {
        for (code, n) in &b.status_codes {
            *codes.entry(*code).or_insert(0u64) += n;
        }
    }
    let errors: u64 = p.bursts.iter().map(|b| b.errors).sum();
    let statuses: Vec<String> = codes
        .iter()
        .map(|(c, n)| format!("{c}:{}", count(*n)))
        .collect();
    row(
        out,
        "Purges",
        "[bursts, sent, method, every]",
        &format!(
            "{}, {}, {}, {}  (the {} most popular objects a burst; status {}{}; not in the load's counts)",
            count(p.bursts.len() as u64),
            count(sent),
            p.method,
            seconds_text(p.every_s),
            count(p.objects),
            if statuses.is_empty() {
                "none".to_owned()
            } else {
                statuses.join(" ")
            },
            if errors > 0 {
                format!(", {} unanswered", count(errors))
            } else {
                String::new()
            }
        ),
    );
    let refused: u64 = codes
        .iter()
        .filter(|(c, _)| !(200..300).contains(*c))
        .map(|(_, n)| n)
        .sum();
    if refused > 0 || errors > 0 {
        row(
            out,
            "",
            "",
            &format!(
                "! {} of {} purges were not answered 2xx: the cache refused or never saw them (vcl/catalogue.vcl accepts PURGE from loopback)",
                count(refused + errors),
                count(sent)
            ),
        );
    }
    let pct = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), percent);
    for e in effects {
        row(
            out,
            &format!("  at {}", seconds_text(e.at_s)),
            "[hit ratio before, low, refill]",
            &format!(
                "{}, {}, {}; {}{} extra misses (origin fetches) over the rate before",
                pct(e.hit_ratio_before),
                pct(e.hit_ratio_low),
                e.refill_s
                    .map_or_else(|| "not within the seconds seen".to_owned(), seconds_text),
                e.refetched.map_or_else(String::new, |n| format!(
                    "{} misses on the {} objects purged, ",
                    count(n),
                    count(e.sent)
                )),
                e.extra_misses
                    .map_or_else(|| "n/a".to_owned(), |x| format!("{x:.0}"))
            ),
        );
    }
}

fn seconds_text(s: f64) -> String {
    format!("{s:.2} s")
}

/// One line on a warm-up run until warm, for the report and vload's own status line.
pub fn warmed_line(w: &WarmRecord) -> String {
    let ratio = w.hit_ratio.map_or_else(|| "n/a".to_owned(), percent);
    if w.until == "pass" {
        if w.failed > 0 {
            return format!(
                "one pass NOT complete: {} of {} objects got no response (refused, reset, timed out or never sent), so they were never fetched into the cache; the cold bound assumes nothing of them (it hit {ratio})",
                count(w.failed),
                count(w.requests.max(w.failed))
            );
        }
        let done = if w.reached {
            "warmed by one pass"
        } else {
            "one pass cut short by --warmup-max"
        };
        return format!(
            "{done}: {} requests in {:.1} s, every object asked once and answered (it hit {ratio})",
            count(w.requests),
            w.seconds
        );
    }
    if w.reached {
        format!(
            "warm after {:.0} s and {} requests: the hit ratio held still at {ratio} over the last 5 s",
            w.seconds,
            count(w.requests)
        )
    } else {
        format!(
            "not warm after {:.0} s (--warmup-max) and {} requests: the hit ratio was {ratio} over the last 5 s and still moving; the attack ran anyway",
            w.seconds,
            count(w.requests)
        )
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
        ("Cache-Status", c.by_source.cache_status),
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
    if let Some(ages) = c.stale_ages {
        // How long past their fetch the cache served its stale answers: the figure a grace
        // or stale-if-error setting bounds.
        let values = format!(
            "{}, {:.1} s, {} s",
            count(ages.answers),
            ages.mean_s().unwrap_or(0.0),
            ages.max_s
        );
        row(out, "  stale ages", "[answers, mean Age, oldest]", &values);
    }
    render_layers(out, &c.layers);
}

/// Tiered caches: each layer's share of the requests, its hit ratio and what it forwarded,
/// the nearest the client first; the last layer's forwards are what reached the origin.
fn render_layers(out: &mut String, layers: &[vload_schema::LayerCounts]) {
    let Some(first) = layers.first().filter(|l| l.reached > 0) else {
        return;
    };
    let all = first.reached as f64;
    for (i, l) in layers.iter().enumerate() {
        let hit = if l.reached > 0 {
            percent(l.hits as f64 / l.reached as f64)
        } else {
            "n/a".to_owned()
        };
        let last = i + 1 == layers.len();
        let onward = if last { "to the origin" } else { "to the next" };
        row(
            out,
            if i == 0 { "  layers" } else { "" },
            &format!("[{}: reached, hit, forwarded]", i + 1),
            &format!(
                "{} ({} of requests), {hit}, {} {onward} ({} of requests)",
                count(l.reached),
                percent(l.reached as f64 / all),
                count(l.misses),
                percent(l.misses as f64 / all)
            ),
        );
    }
}

/// The catalogue in words: objects, bytes, laws, and what else shapes it.
fn catalogue_words(c: &CatalogueRecord) -> String {
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
    if let Some(churn) = c.churn_per_s {
        law.push_str(&format!(", {} new objects", rate(churn)));
    }
    if let Some(ranges) = &c.ranges {
        law.push_str(&format!(", ranges {ranges}"));
    }
    if let Some(variants) = &c.variants {
        law.push_str(&format!(", variants {variants}"));
    }
    law
}

/// The rows of what shapes the workload beyond its objects: variants, ranges, large bodies.
fn render_workload(out: &mut String, s: &Summary, m: &CacheModelRecord) {
    render_normalised(out, m);
    render_ranges(out, s);
    render_transfer_rates(out, s);
}

/// Hits' and misses' body bytes over their time from first byte to last: whether the cache
/// delivers a miss as fast as a hit (a cache that streams a miss passes the origin's pace on).
/// Only for objects of 256 KiB and more on average: a smaller body comes with its head, in
/// one read, and has no transfer time to speak of.
fn render_transfer_rates(out: &mut String, s: &Summary) {
    let large = s
        .catalogue
        .as_ref()
        .is_some_and(|c| c.total_bytes >= 256 * 1024 * c.objects.max(1));
    let Some(by_cache) = s
        .breakdowns
        .iter()
        .find(|b| b.by == "cache")
        .filter(|_| large)
    else {
        return;
    };
    let rate_of = |name: &str| {
        let g = by_cache.groups.iter().find(|g| g.name == name)?;
        let t = g.transfer.as_ref()?;
        let seconds = t.mean_ns? * t.n as f64 / 1e9;
        (seconds > 0.0 && g.bytes_in > 0).then(|| g.bytes_in as f64 / seconds)
    };
    let (hits, misses) = (rate_of("hit"), rate_of("miss"));
    if hits.is_none() && misses.is_none() {
        return;
    }
    let text = |r: Option<f64>| r.map_or("n/a".to_owned(), |r| format!("{}/s", bytes(r as u64)));
    row(
        out,
        "Transfer rate",
        "[hits, misses]",
        &format!(
            "{}, {}  (body bytes over the time from first byte to last)",
            text(hits),
            text(misses)
        ),
    );
}

/// With ranges: the range requests beside the whole ones, by requests, 206s, bytes and hit
/// ratio (the drawn classes `range` and `whole`, or `... range` beside a crawler).
fn render_ranges(out: &mut String, s: &Summary) {
    let Some(classes) = s.breakdowns.iter().find(|b| b.by == "class") else {
        return;
    };
    let sum = |range: bool| {
        let groups = classes
            .groups
            .iter()
            .filter(|g| g.name.ends_with("range") == range);
        groups.fold((0u64, 0u64, 0f64, 0u64), |(n, b, hits, known), g| {
            let ratio = g.hit_ratio.unwrap_or(0.0);
            let known_here = if g.hit_ratio.is_some() { g.requests } else { 0 };
            (
                n + g.requests,
                b + g.bytes_in,
                hits + ratio * known_here as f64,
                known + known_here,
            )
        })
    };
    let (asked, range_bytes, range_hits, range_known) = sum(true);
    if asked == 0 || s.catalogue.as_ref().is_none_or(|c| c.ranges.is_none()) {
        return;
    }
    let (whole, whole_bytes, whole_hits, whole_known) = sum(false);
    let ratio = |hits: f64, known: u64| {
        if known == 0 {
            "n/a".to_owned()
        } else {
            percent(hits / known as f64)
        }
    };
    let partial = s.status_codes.get(&206).copied().unwrap_or(0);
    let answered = if partial < asked {
        format!(
            "; {} answered whole or refused (the cache or origin ignored Range)",
            count(asked - partial)
        )
    } else {
        String::new()
    };
    row(
        out,
        "Ranges",
        "[asked, 206, bytes, hit ratio]",
        &format!(
            "{}, {}, {}, {}  (whole objects: {}, {}, {}{answered})",
            count(asked),
            count(partial),
            bytes(range_bytes),
            ratio(range_hits, range_known),
            count(whole),
            bytes(whole_bytes),
            ratio(whole_hits, whole_known)
        ),
    );
}

/// With variants: what a cache that normalises them away should hit, beside the model of
/// one that keys on each, and what the variants cost.
fn render_normalised(out: &mut String, m: &CacheModelRecord) {
    let Some(n) = &m.normalised else {
        return;
    };
    let (keyed, one, what) = match (m.lru_hit_ratio, n.lru_hit_ratio, &m.capacity) {
        (Some(keyed), Some(one), Some(capacity)) => (keyed, one, format!("an LRU of {capacity}")),
        _ => match (m.ttl_bound, n.ttl_bound) {
            (Some(keyed), Some(one)) => (keyed, one, "any cache under the max-age".into()),
            _ => (m.cold_bound, n.cold_bound, "any cache from empty".into()),
        },
    };
    row(
        out,
        "",
        "[variants normalised to one key]",
        &format!(
            "{} for {what}  (keyed on each variant: {}, the variants cost {:.1} points)",
            percent(one),
            percent(keyed),
            (one - keyed) * 100.0
        ),
    );
}

fn render_model(out: &mut String, s: &Summary, c: &CatalogueRecord, m: &CacheModelRecord) {
    let law = catalogue_words(c);
    row(
        out,
        "Catalogue",
        "[objects, popularity, sizes]",
        &format!("{law}, seed {}", c.seed),
    );
    let mut names = vec!["any cache from empty".to_owned()];
    let mut values = vec![percent(m.cold_bound)];
    if let Some(ttl) = m.ttl_bound {
        names.push(if c.churn_per_s.is_some() {
            "any cache under the churn".into()
        } else {
            "any cache under the max-age".into()
        });
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
    let lru = match (m.lru_hit_ratio, m.lru_human_hit_ratio) {
        (Some(_), Some(_)) => "LRU: a sampled simulation with the crawler, warm; ",
        (Some(_), None) => "LRU: Che's approximation, warm; ",
        _ => "",
    };
    row(
        out,
        "",
        "",
        &format!(
            "{lru}from empty: every object's first request misses{}",
            m.realized_cold_bound.map_or_else(String::new, |r| format!(
                " ({} for the objects this run drew)",
                percent(r)
            ))
        ),
    );
    render_workload(out, s, m);
    if let Some(human) = m.lru_human_hit_ratio {
        row(
            out,
            "",
            "[the LRU's human requests alone]",
            &format!(
                "{}  (the crawler's requests left out: the breakdown by class has the measured)",
                percent(human)
            ),
        );
    }
    if let Some((held, ratio)) = s.lru_of_held {
        row(
            out,
            "",
            &format!("[LRU of the {} objects Varnish held]", count(held)),
            &format!(
                "{}  (its n_object: Varnish's per-object overhead left out)",
                percent(ratio)
            ),
        );
    }
    let classified = s.cache.hit + s.cache.miss;
    if classified > 0 {
        let measured = s.cache.hit as f64 / classified as f64;
        row(out, "", "", &verdict(measured, m));
    }
}

/// What the measured hit ratio says against the model.
fn verdict(measured: f64, m: &CacheModelRecord) -> String {
    let points = |a: f64, b: f64| format!("{:.1} points", (a - b).abs() * 100.0);
    // The objects this run drew, where known, not the expectation of a run like it: a run
    // that happened to draw fewer distinct objects can hit more from empty.
    let (bound, which) = match m.realized_cold_bound {
        Some(realized) => (realized, "for the objects this run drew"),
        None => (m.cold_bound, "expected for this workload"),
    };
    if measured > bound + 0.01
        && let Some(n) = &m.normalised
        && measured <= n.cold_bound + 0.01
    {
        // Above what a cache keyed on each variant could hit, within what one key an object
        // allows: the cache normalised the variants; judge it as such.
        let one = CacheModelRecord {
            lru_hit_ratio: n.lru_hit_ratio,
            cold_bound: n.cold_bound,
            ttl_bound: n.ttl_bound,
            realized_cold_bound: None,
            normalised: None,
            ..m.clone()
        };
        return format!(
            "{}; the cache normalises the variants ({} above what one keyed on each could hit from empty, {})",
            verdict(measured, &one),
            points(measured, bound),
            percent(bound)
        );
    }
    if measured > bound + 0.01 {
        return format!(
            "measured {}: {} above what any cache could hit from empty ({} {which}), so the cache held objects before this attack (an earlier run, or a warm-up not counted here)",
            percent(measured),
            points(measured, bound),
            percent(bound)
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

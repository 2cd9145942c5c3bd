//! `vload model`: what each replacement policy should hit for a catalogue, before any run
//! (#60). A sampled simulation of each policy ([`vload_cache::policy::shards`]) beside Che's
//! approximation for LRU, so the user sees what the policies make of the workload, and how
//! far the sample is from the closed form where there is one.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use serde_json::json;
use vload_cache::Crawler;
use vload_cache::policy::Policy;
use vload_cache::policy::shards::{self, PolicyPrediction};
use vload_cache::{Capacity, Catalogue};

use crate::attack::cache::CacheArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// The catalogue's objects, as `vload attack --catalogue`.
    #[arg(long, value_name = "N")]
    catalogue: u64,
    /// How often each object is asked: zipf:S, uniform, or hot:OBJECTS%:REQUESTS% (default:
    /// zipf:0.8).
    #[arg(long, value_name = "LAW")]
    popularity: Option<String>,
    /// Each object's size: BYTES, MIN-MAX, lognormal:MEDIAN:SIGMA or file:PATH (default: 4k).
    #[arg(long, value_name = "LAW")]
    object_size: Option<String>,
    /// The max-age the origin gives each object: SECONDS or MIN-MAX (default: none).
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<String>,
    /// Share of requests for objects asked once and never again, e.g. 5% (default: 0%).
    #[arg(long, value_name = "PERCENT")]
    one_hit_wonders: Option<String>,
    /// The cache's capacity, bytes (64M) or objects (5000obj).
    #[arg(long, value_name = "SIZE")]
    cache_size: String,
    /// Requests a second: only the TTLs make time matter (default: 1000).
    #[arg(short, long, value_name = "RATE")]
    rate: Option<f64>,
    /// The policies to model, comma-separated: lru, fifo, sieve, s3-fifo, w-tinylfu
    /// (default: all).
    #[arg(long, value_name = "POLICY", value_delimiter = ',')]
    policy: Vec<String>,
    /// A crawler beside the catalogue's requests, a share of all of them: SHARE% crawls the
    /// catalogue from its least popular object up, SHARE%:unique asks new URLs; several,
    /// comma-separated, make a column each (default: none).
    #[arg(long, value_name = "SHARE[:KIND]", value_delimiter = ',')]
    crawler: Vec<String>,
    /// The catalogue's seed, as the attack's --seed (default: 1).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ModelArgs) -> anyhow::Result<ExitCode> {
    let cache = CacheArgs {
        catalogue: Some(args.catalogue),
        popularity: args.popularity.clone(),
        object_size: args.object_size.clone(),
        ttl: args.ttl.clone(),
        one_hit_wonders: args.one_hit_wonders.clone(),
        cache_size: Some(args.cache_size.clone()),
        ..CacheArgs::default()
    };
    let Some((catalogue, Some(capacity))) = cache.catalogue(args.seed)? else {
        bail!("--cache-size is needed: the capacity to model");
    };
    let rate = args.rate.unwrap_or(1_000.0);
    if !(rate.is_finite() && rate > 0.0) {
        bail!("--rate {rate}: give requests a second above 0, e.g. 1000");
    }
    let policies = if args.policy.is_empty() {
        Policy::ALL.to_vec()
    } else {
        let parsed: Result<Vec<Policy>, String> = args.policy.iter().map(|p| p.parse()).collect();
        parsed.map_err(|e| anyhow::anyhow!("--policy {e}"))?
    };
    let crawlers: Vec<Option<Crawler>> = if args.crawler.is_empty() {
        vec![None]
    } else {
        let parsed: Result<Vec<Crawler>, String> = args.crawler.iter().map(|c| c.parse()).collect();
        parsed
            .map_err(|e| anyhow::anyhow!("--crawler {e}"))?
            .into_iter()
            .map(|c| (c.share > 0.0).then_some(c))
            .collect()
    };
    let began = Instant::now();
    let Some(sampled) = shards::Sampled::new(&catalogue, rate, capacity, None) else {
        bail!(
            "--catalogue {}: a catalogue with churn cannot be modelled by policy (its objects change under the simulation)",
            args.catalogue
        );
    };
    let columns: Vec<Column> = crawlers
        .iter()
        .map(|&crawler| {
            let predicted = shards::predict(&catalogue, rate, capacity, &policies, crawler)
                .expect("a catalogue that samples predicts");
            (crawler, predicted)
        })
        .collect();
    let took = began.elapsed().as_secs_f64();
    let che = che(&catalogue, rate, capacity);
    if args.json {
        let sampled = json!({"rate": sampled.rate, "top": sampled.top, "kept": sampled.kept.len()});
        print_json(&catalogue, capacity, rate, sampled, &columns, che, took)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}",
        table(&catalogue, capacity, &sampled, &columns, che, took)
    );
    Ok(ExitCode::SUCCESS)
}

/// The same figures as JSON.
fn print_json(
    catalogue: &Catalogue,
    capacity: Capacity,
    rate: f64,
    sampled: serde_json::Value,
    columns: &[Column],
    che: Option<f64>,
    took: f64,
) -> anyhow::Result<()> {
    let rows: Vec<_> = columns
        .iter()
        .flat_map(|(crawler, predicted)| {
            predicted.iter().map(move |p| {
                json!({
                    "policy": p.policy.name(),
                    "crawler": crawler.map(|c| crawler_name(Some(c))),
                    "hit_ratio": p.hit_ratio,
                    "human_hit_ratio": p.human_hit_ratio,
                })
            })
        })
        .collect();
    let out = json!({
        "catalogue": catalogue.record(),
        "capacity": capacity.to_string(),
        "rate_per_s": rate,
        "sampled": sampled,
        "policies": rows,
        "lru_che": che,
        "seconds": took,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// Che's approximation of an LRU's hit ratio, the closed form the LRU row can be read
/// against.
fn che(catalogue: &Catalogue, rate: f64, capacity: Capacity) -> Option<f64> {
    let load = vload_cache::model::Load {
        catalogue,
        rate_per_s: rate,
        before: 0,
        window: 1,
    };
    vload_cache::model::predict(load, Some(capacity))
        .lru
        .map(|(h, _)| h)
}

/// A crawler setting and each policy's prediction under it.
type Column = (Option<Crawler>, Vec<PolicyPrediction>);

/// `no crawler`, `30% tail`, `10% unique`.
fn crawler_name(crawler: Option<Crawler>) -> String {
    match crawler {
        None => "no crawler".into(),
        Some(c) => format!(
            "{}% {}",
            100.0 * c.share,
            if c.unique { "unique" } else { "tail" }
        ),
    }
}

fn table(
    catalogue: &Catalogue,
    capacity: Capacity,
    sampled: &shards::Sampled,
    columns: &[Column],
    che: Option<f64>,
    took: f64,
) -> String {
    let percent = |v: f64| format!("{:.2}%", 100.0 * v);
    let count = vload_analyze::units::count;
    let mut out = format!(
        "Catalogue  {} objects, {}, seed {}\nCache      {capacity}\n",
        count(catalogue.objects),
        catalogue.popularity,
        catalogue.seed
    );
    let rest = if sampled.rate < 1.0 {
        format!(
            ", the {} most popular and {:.2}% of the rest",
            count(sampled.top),
            100.0 * sampled.rate
        )
    } else {
        String::new()
    };
    out.push_str(&format!(
        "Sampled    {} objects kept{rest}, simulated in {took:.2} s\n",
        count(sampled.kept.len() as u64)
    ));
    let crawled = columns.iter().any(|(c, _)| c.is_some());
    if crawled {
        out.push_str(
            "Policy     the human requests' hit ratio (steady, from a sampled simulation)\n",
        );
        out.push_str(&format!("{:10}", ""));
        for (crawler, _) in columns {
            out.push_str(&format!(" {:>12}", crawler_name(*crawler)));
        }
        out.push('\n');
    } else {
        out.push_str("Policy     hit ratio (steady, from a sampled simulation)\n");
    }
    for (row, policy) in columns[0].1.iter().map(|p| p.policy).enumerate() {
        out.push_str(&format!("{:10}", policy.name()));
        for (_, predicted) in columns {
            out.push_str(&format!(" {:>12}", percent(predicted[row].human_hit_ratio)));
        }
        if let (Policy::Lru, Some(h), false) = (policy, che, crawled) {
            out.push_str(&format!("   Che's approximation: {}", percent(h)));
        }
        out.push('\n');
    }
    out.pop();
    out
}

//! Variants of each object through a real varnishd (#60): a tracking parameter in the URL
//! and a header the origin varies on each split an object into cache keys of its own, and
//! the hit ratio falls as the model says; a VCL that normalises them keeps one key an
//! object, and the hit ratio is the model's of the catalogue without variants.

use std::process::{Command, Stdio};

use super::stack::{Stack, counter, have_varnish, read_run, shared, vload, vload_span};

/// Empties the cache: every object stored so far is banned (a lookup finds none).
fn ban_all(stack: &Stack) {
    let status = Command::new("varnishadm")
        .arg("-n")
        .arg(stack.name())
        .args(["ban", "req.url", "~", "."])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "varnishadm ban");
}

/// One run of 2,000 objects with `variants` from an empty cache: the measured hit ratio,
/// the model's bound from empty keyed on each variant and normalised to one key, and the
/// report.
fn run(stack: &Stack, variants: &str) -> (f64, f64, f64, String) {
    ban_all(stack);
    let out = stack
        .dir
        .join(format!("variants-{}.json", variants.replace(':', "-")));
    let report = vload(&[
        "attack",
        "--catalogue",
        "2000",
        "--variants",
        variants,
        "-r",
        "1000",
        "-d",
        "3s",
        "--server-stats",
        &stack.server_stats(),
        "-o",
        out.to_str().unwrap(),
        &stack.url(),
    ]);
    let run = read_run(&out);
    // Varnish's own hits and lookups are vload's (within the slack of the catalogue test:
    // Varnish counts a lookup when it starts, vload a response when it ends).
    let (hits, completed) = vload_span(&run);
    let their_hits = counter(&run, "cache_hit");
    let lookups = their_hits + counter(&run, "cache_miss");
    assert!(
        lookups.abs_diff(completed) <= 8 + completed / 100,
        "{variants}: lookups {lookups}, vload {completed}"
    );
    let theirs = their_hits as f64 / lookups as f64;
    let measured = run.cache.hit as f64 / (run.cache.hit + run.cache.miss) as f64;
    assert!(
        (theirs - hits as f64 / completed as f64).abs() < 0.005,
        "{variants}: Varnish {theirs:.4}, vload {measured:.4}"
    );
    let model = run.cache_model.as_ref().unwrap();
    let normalised = model.normalised.as_ref().unwrap().cold_bound;
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    (measured, model.cold_bound, normalised, text)
}

#[test]
fn variants_split_the_hit_ratio_as_the_model_says_and_normalising_restores_it() {
    if !have_varnish("variants_split_the_hit_ratio_as_the_model_says_and_normalising_restores_it") {
        return;
    }
    let _turn = shared();
    // catalogue.vcl hashes the URL and Host and honours Vary: every variant a key.
    let keyed = Stack::start("catalogue.vcl");
    let mut by_count = Vec::new();
    for variants in ["1", "4", "16", "16:vary"] {
        let (measured, model, normalised, text) = run(&keyed, variants);
        assert!(
            (measured - model).abs() < 0.02,
            "{variants} keyed: measured {measured:.4}, model {model:.4}\n{text}"
        );
        assert!(text.contains("variants normalised to one key"), "{text}");
        by_count.push((variants, measured, normalised));
    }
    // 4 and 16 variants cost the hit ratio, and more of it at 16.
    assert!(by_count[1].1 < by_count[0].1 - 0.1, "{by_count:?}");
    assert!(by_count[2].1 < by_count[1].1 - 0.1, "{by_count:?}");
    drop(keyed);
    // normalise.vcl strips utm_* and folds Accept-Language: one key an object again.
    let normalising = Stack::start("normalise.vcl");
    for variants in ["4", "16", "16:vary"] {
        let (measured, keyed, normalised, text) = run(&normalising, variants);
        assert!(
            (measured - normalised).abs() < 0.02,
            "{variants} normalised: measured {measured:.4}, model {normalised:.4}\n{text}"
        );
        assert!(
            measured > keyed + 0.1,
            "{variants}: {measured:.4} {keyed:.4}"
        );
        assert!(text.contains("the cache normalises the variants"), "{text}");
    }
}

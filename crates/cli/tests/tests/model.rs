//! #60: `vload model` says what each replacement policy should hit for a catalogue, before
//! any run; bad input is one line naming the flag.

use crate::util::{run, stderr, stdout, vload};

#[test]
fn every_policy_is_modelled_and_lru_agrees_with_ches_approximation() {
    let out = run(
        vload().args([
            "model",
            "--catalogue",
            "20000",
            "--one-hit-wonders",
            "30%",
            "--cache-size",
            "1000obj",
            "--json",
        ]),
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let ratio = |name: &str| {
        v["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["policy"] == name)
            .and_then(|p| p["hit_ratio"].as_f64())
            .unwrap_or_else(|| panic!("{name} in {v}"))
    };
    let che = v["lru_che"].as_f64().unwrap();
    assert!((ratio("lru") - che).abs() < 0.01, "{v}");
    // One-hit wonders pass through S3-FIFO's small queue and W-TinyLFU's window: both
    // keep more of the popular objects than LRU does.
    for better in ["s3-fifo", "w-tinylfu", "sieve"] {
        assert!(ratio(better) > ratio("lru") + 0.02, "{better}: {v}");
    }
    // The same seed, the same figures.
    let again = run(
        vload().args([
            "model",
            "--catalogue",
            "20000",
            "--one-hit-wonders",
            "30%",
            "--cache-size",
            "1000obj",
            "--policy",
            "fifo",
        ]),
        0,
    );
    let text = stdout(&again);
    assert!(
        text.contains(&format!("{:.2}%", 100.0 * ratio("fifo"))),
        "{text}"
    );
    assert!(!text.contains("sieve"), "{text}");
}

#[test]
fn a_bad_policy_or_size_is_one_line_naming_the_flag() {
    for (flag, value, says) in [
        (
            "--policy",
            "arc",
            "--policy 'arc' is not a replacement policy",
        ),
        ("--cache-size", "lots", "--cache-size"),
        ("--rate", "0", "--rate"),
        (
            "--crawler",
            "30%:deep",
            "--crawler '30%:deep' is not a crawler",
        ),
    ] {
        let mut args = vec!["model", "--catalogue", "1000", "--cache-size", "100obj"];
        if flag == "--cache-size" {
            args.truncate(3);
        }
        args.extend([flag, value]);
        let out = run(vload().args(&args), 2);
        let err = stderr(&out);
        assert!(err.contains(says), "{flag} {value}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A crawler's share makes a column each: the human requests' hit ratio falls with it under
/// LRU, less under S3-FIFO.
#[test]
fn crawler_shares_are_columns_of_the_human_hit_ratio() {
    let out = run(
        vload().args([
            "model",
            "--catalogue",
            "20000",
            "--cache-size",
            "1000obj",
            "--policy",
            "lru,s3-fifo",
            "--crawler",
            "0%,50%",
            "--json",
        ]),
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let human = |policy: &str, crawler: serde_json::Value| {
        v["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["policy"] == policy && p["crawler"] == crawler)
            .and_then(|p| p["human_hit_ratio"].as_f64())
            .unwrap_or_else(|| panic!("{policy} {crawler} in {v}"))
    };
    let lost =
        |policy: &str| human(policy, serde_json::Value::Null) - human(policy, "50% tail".into());
    assert!(lost("lru") > 0.03, "{v}");
    assert!(lost("s3-fifo") < lost("lru"), "{v}");
}

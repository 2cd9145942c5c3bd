//! Mutated run files through everything `vload report`, `compare` and `plot` do, with zero
//! panics and no allocation over 256 MiB (see #17, case 17: a 56-byte histogram made report
//! allocate 4 GB; plot took log10(0) and asked for 17 GiB).
//!
//! Its own test binary, because it installs a global allocator that refuses (and so aborts
//! the test on) any single allocation above the limit. `VLOAD_FUZZ_CASES` sets the number of
//! cases (default 1,000, about 14 s in the test profile on two cores; CI runs the default, a
//! fuzzing session sets 40,000 or more).

use std::alloc::{GlobalAlloc, Layout, System};

use proptest::prelude::*;
use serde_json::Value;
use vload_schema::RunFile;

/// The largest single allocation any command may make on any input.
const LIMIT: usize = 256 << 20;

struct Guarded;

// SAFETY: forwards to the system allocator; refuses only sizes above the limit, which the
// caller then sees as an allocation failure.
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout, as the caller guaranteed.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Guarded = Guarded;

fn bases() -> Vec<String> {
    let golden = include_str!("../../schema/tests/data/golden-run.json").to_owned();
    let mut closed: Value = serde_json::from_str(&golden).unwrap();
    closed["plan"]["mode"] = "closed".into();
    closed["plan"]["rate_per_s"] = Value::Null;
    closed["latency"]["primary"] = "service".into();
    closed["latency"]["response"] = Value::Null;
    closed["latency"]["dispatch_lag"] = Value::Null;
    // A longer run: within-run batch means, plots and merges see many intervals.
    let mut long: Value = serde_json::from_str(&golden).unwrap();
    let intervals = long["intervals"].as_array().unwrap().clone();
    long["intervals"] = Value::Array(
        (0..40)
            .flat_map(|k| {
                intervals.iter().map(move |i| {
                    let mut i = i.clone();
                    i["start_s"] = serde_json::json!(k as f64);
                    i["warmup"] = false.into();
                    i
                })
            })
            .collect(),
    );
    // A sweep: steps with their own records, an SLO and an answer.
    let mut sweep: Value = serde_json::from_str(&golden).unwrap();
    let record = sweep["latency"]["service"].clone();
    let health = sweep["client_health"].clone();
    let step = |index: u64, rate: f64| {
        serde_json::json!({
            "index": index, "warmup": false, "start_s": index as f64 * 2.0, "duration_s": 1.0,
            "from_rate_per_s": rate, "to_rate_per_s": rate, "intended": 5, "sent": 5,
            "completed": 5, "late_sends": 0, "status_codes": {"200": 4}, "errors": {"reset": 1},
            "bytes_in": 44, "bytes_out": 0, "hits": 0, "misses": 0, "throughput_per_s": rate,
            "response": record, "service": record, "client_health": health, "server_cpu_s": 0.5
        })
    };
    sweep["stages"] = serde_json::json!([step(0, 5.0), step(1, 10.0)]);
    sweep["sweep"] = serde_json::json!({
        "rates_per_s": [5.0, 10.0], "stage_s": 1.0, "warmup_s": 0.0,
        "slo": [{"metric": "p99", "limit": 1e6}, {"metric": "errors", "limit": 0.01}],
        "find_max": false,
        "verdict": {"max_rate_per_s": 5.0, "first_failing_per_s": 10.0,
            "fell_behind_per_s": null, "stopped_by": "slo", "summary": "capacity 5/s"}
    });
    // Breakdowns: one group holding the whole window, as vload writes it, and a second
    // breakdown split in two, so that mutations reach their validation, report and merge.
    let mut broken_down = RunFile::from_json(&golden).unwrap();
    let mut classes = vload_schema::StatusClasses::default();
    for (code, n) in &broken_down.totals.status_codes {
        classes.count_n(*code, *n);
    }
    let whole = vload_schema::Group {
        name: "all".into(),
        requests: broken_down.totals.completed,
        errors: broken_down.totals.errors.values().map(|e| e.count).sum(),
        status_classes: classes,
        cache: vload_schema::GroupCache {
            hit: broken_down.cache.hit,
            miss: broken_down.cache.miss,
            unknown: broken_down.cache.unknown,
            ..Default::default()
        },
        bytes_in: broken_down.totals.bytes_in,
        latency: broken_down.latency.primary().clone(),
        first_byte: broken_down.latency.first_byte.clone(),
        transfer: broken_down.latency.transfer.clone(),
    };
    let none = vload_schema::Group {
        name: "(other)".into(),
        requests: 0,
        errors: 0,
        status_classes: Default::default(),
        cache: Default::default(),
        bytes_in: 0,
        latency: vload_schema::LatencyRecord {
            histogram: vload_schema::EncodedHistogram::encode(&vload_schema::new_histogram(
                &Default::default(),
            ))
            .unwrap(),
            moments: vload_schema::Moments::new(),
        },
        first_byte: None,
        transfer: None,
    };
    broken_down.breakdowns = vec![
        vload_schema::Breakdown {
            by: "status".into(),
            folded: 0,
            groups: vec![whole.clone()],
        },
        vload_schema::Breakdown {
            by: "host".into(),
            folded: 3,
            groups: vec![whole, none],
        },
    ];
    broken_down.validate().expect("the breakdown base is valid");
    vec![
        golden,
        closed.to_string(),
        long.to_string(),
        sweep.to_string(),
        broken_down.to_json(),
    ]
}

/// What a mutation puts in place of a value.
#[derive(Debug, Clone)]
enum Replacement {
    Number(f64),
    Integer(u64),
    Negative(i64),
    Text(String),
    Histogram(Vec<u8>),
    Null,
    Empty,
    /// The array repeated `n` times (more intervals, more errors).
    Repeat(u8),
    Truncate,
}

fn replacement() -> impl Strategy<Value = Replacement> {
    prop_oneof![
        prop_oneof![
            Just(0.0),
            Just(-1.0),
            Just(1e308),
            Just(1e-300),
            Just(0.5),
            any::<f64>().prop_filter("JSON numbers", |v| v.is_finite())
        ]
        .prop_map(Replacement::Number),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u64::MAX),
            Just(u64::from(u32::MAX)),
            any::<u64>()
        ]
        .prop_map(Replacement::Integer),
        any::<i64>().prop_map(Replacement::Negative),
        prop_oneof![
            Just(String::new()),
            Just("\u{1b}]0;title\u{7}".to_owned()),
            Just("HISTFAAAAA".to_owned()),
            Just("9999-99-99T99:99:99.999Z".to_owned()),
            ".{0,40}"
        ]
        .prop_map(Replacement::Text),
        hostile_histogram().prop_map(Replacement::Histogram),
        Just(Replacement::Null),
        Just(Replacement::Empty),
        (2u8..40).prop_map(Replacement::Repeat),
        Just(Replacement::Truncate),
    ]
}

/// Compressed V2 histograms with lying headers, bombs, or noise.
fn hostile_histogram() -> impl Strategy<Value = Vec<u8>> {
    let header = |payload: u32, sigfig: u32, lowest: u64, highest: u64| {
        [
            &0x1c84_9313u32.to_be_bytes()[..],
            &payload.to_be_bytes(),
            &0u32.to_be_bytes(),
            &sigfig.to_be_bytes(),
            &lowest.to_be_bytes(),
            &highest.to_be_bytes(),
            &1f64.to_be_bytes(),
        ]
        .concat()
    };
    prop_oneof![
        any::<u32>().prop_map(move |p| compressed(&header(p, 3, 1, 60_000_000_000))),
        (0u32..8, any::<u64>(), any::<u64>())
            .prop_map(move |(s, l, h)| compressed(&header(64, s, l, h))),
        (1usize..(8 << 20)).prop_map(move |zeros| {
            let mut inner = header(zeros as u32, 3, 1, 60_000_000_000);
            inner.resize(inner.len() + zeros, 0);
            compressed(&inner)
        }),
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(move |noise| {
            let mut inner = header(noise.len() as u32, 3, 1, 60_000_000_000);
            inner.extend(noise);
            compressed(&inner)
        }),
        proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

fn compressed(inner: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(inner).unwrap();
    let deflated = z.finish().unwrap();
    let mut blob = 0x1c84_9314u32.to_be_bytes().to_vec();
    blob.extend((deflated.len() as u32).to_be_bytes());
    blob.extend(deflated);
    blob
}

/// The JSON pointer of a value chosen by `seed`.
fn pick(root: &Value, mut seed: u64) -> String {
    let (mut node, mut pointer) = (root, String::new());
    loop {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        if (seed >> 60) < 4 {
            return pointer;
        }
        let i = (seed >> 20) as usize;
        match node {
            Value::Object(map) if !map.is_empty() => {
                let (key, child) = map.iter().nth(i % map.len()).expect("in range");
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                node = child;
            }
            Value::Array(items) if !items.is_empty() => {
                let i = i % items.len();
                pointer.push_str(&format!("/{i}"));
                node = &items[i];
            }
            _ => return pointer,
        }
    }
}

/// Replaces the value chosen by `seed`.
fn mutate(root: &mut Value, seed: u64, with: &Replacement) {
    let pointer = pick(root, seed);
    let node = root.pointer_mut(&pointer).expect("picked from this value");
    use base64::Engine as _;
    // Mostly the same type as what it replaces, so that many mutated files still read and
    // go on to exercise the commands; sometimes another type, to exercise the reader.
    let new = match (with, &*node) {
        (Replacement::Integer(v), Value::Number(n)) if n.is_u64() => serde_json::json!(v),
        (Replacement::Number(v), Value::Number(n)) if n.is_f64() => serde_json::json!(v),
        (Replacement::Number(v), Value::Number(_)) => serde_json::json!(v.abs().round() as u64),
        (Replacement::Integer(v), Value::Number(_)) => serde_json::json!(*v as f64),
        (Replacement::Negative(v), _) => serde_json::json!(v),
        (Replacement::Text(t), Value::Bool(b)) if t.is_empty() => Value::Bool(!b),
        (Replacement::Text(t), _) => Value::String(t.clone()),
        (Replacement::Histogram(b), _) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Replacement::Null, _) => Value::Null,
        (Replacement::Empty, Value::Array(_)) => Value::Array(Vec::new()),
        (Replacement::Empty, Value::Object(_)) => Value::Object(Default::default()),
        (Replacement::Empty, _) => Value::String(String::new()),
        (Replacement::Repeat(n), Value::Array(items)) => {
            Value::Array((0..*n).flat_map(|_| items.clone()).collect())
        }
        (Replacement::Truncate, Value::Array(items)) => {
            Value::Array(items.iter().take(1).cloned().collect())
        }
        (_, other) => other.clone(),
    };
    *node = new;
}

/// Everything the commands do with a run that reads.
fn exercise(run: &RunFile, other: &RunFile) {
    let named = vec![
        ("a".to_owned(), run.clone()),
        ("b".to_owned(), other.clone()),
    ];
    if let Ok(summary) = vload_analyze::Summary::of(run) {
        let _ = vload_analyze::render::report::text::render(&summary);
        let _ = vload_analyze::render::report::markdown::render(&summary);
        let _ = vload_analyze::render::report::json::render(&summary);
    }
    let _ = vload_analyze::render::report::hgrm::render(run);
    let _ = vload_analyze::render::report::wrk::render(run);
    let _ = vload_analyze::render::plot::html(&named[..1]);
    let _ = vload_analyze::render::plot::html(&named);
    let _ = vload_analyze::merge::check_plans(&named);
    let _ = vload_analyze::merge::check_shards(&named, true);
    let _ = vload_analyze::merge::merge(&named);
    for (a, b) in [(run, other), (other, run)] {
        if let Ok(c) = vload_analyze::compare::sweep::compare_sweeps(
            ("A", std::slice::from_ref(a)),
            ("B", std::slice::from_ref(b)),
        ) {
            let _ = vload_analyze::render::sweeps::text(&c);
            let _ = vload_analyze::render::sweeps::markdown(&c);
            let _ = vload_analyze::render::sweeps::json(&c);
        }
        if let Ok(c) = vload_analyze::compare(
            ("A", std::slice::from_ref(a)),
            ("B", std::slice::from_ref(b)),
        ) {
            let _ = vload_analyze::render::compare::text(&c);
            let _ = vload_analyze::render::compare::json(&c);
        }
    }
}

static EXERCISED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn cases() -> u32 {
    std::env::var("VLOAD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_run_files_never_panic_nor_allocate_beyond_256_mib(
        base in 0usize..4,
        edits in proptest::collection::vec((any::<u64>(), replacement()), 1..4),
        flip in proptest::option::weighted(0.1, (any::<usize>(), any::<u8>())),
    ) {
        let bases = bases();
        let mut value: Value = serde_json::from_str(&bases[base]).unwrap();
        for (seed, with) in &edits {
            mutate(&mut value, *seed, with);
        }
        let mut bytes = value.to_string().into_bytes();
        if let Some((at, byte)) = &flip
            && !bytes.is_empty()
        {
            let i = at % bytes.len();
            bytes[i] = *byte;
        }
        // A sweep is compared with the sweep it was; the others with the next base.
        let other = if base == 3 { base } else { (base + 1) % 3 };
        let other = RunFile::from_json(&bases[other]).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes)
            && let Ok(run) = RunFile::from_json(text)
        {
            EXERCISED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            exercise(&run, &other);
        }
        if std::env::var("VLOAD_FUZZ_STATS").is_ok() {
            #[allow(clippy::print_stderr, reason = "asked for with VLOAD_FUZZ_STATS")]
            {
                eprintln!("exercised {}", EXERCISED.load(std::sync::atomic::Ordering::Relaxed));
            }
        }
    }
}

/// The guard itself: an allocation over the limit is refused.
#[test]
fn the_guard_refuses_allocations_over_the_limit() {
    let mut v: Vec<u8> = Vec::new();
    assert!(v.try_reserve_exact(LIMIT + 1).is_err());
    assert!(v.try_reserve_exact(1 << 20).is_ok());
}

/// The mutations reach past the reader: some mutated files are valid and get exercised.
#[test]
fn some_mutations_still_read() {
    let bases = bases();
    let mut read = 0;
    for seed in 0..200u64 {
        let mut value: Value = serde_json::from_str(&bases[0]).unwrap();
        mutate(
            &mut value,
            seed,
            &Replacement::Text("x86_64\u{1b}[2J".into()),
        );
        if RunFile::from_json(&value.to_string()).is_ok() {
            read += 1;
        }
    }
    assert!(read > 10, "{read} of 200 mutated files read");
}

/// Every base file reads as it is, so each one's mutations exercise what it holds.
#[test]
fn every_base_reads() {
    for (i, base) in bases().iter().enumerate() {
        let run = RunFile::from_json(base).unwrap_or_else(|e| panic!("base {i}: {e}"));
        exercise(&run, &run);
    }
}

use vload_schema::*;

pub(crate) fn golden() -> RunFile {
    RunFile::from_json(include_str!("../../../schema/tests/data/golden-run.json")).unwrap()
}

/// A deterministic stream of uniform numbers in [0, 1).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An open-loop run of `seconds` intervals, `per_second` requests each, latencies around
/// `median_ns` with a long tail; `scale` multiplies every latency.
pub(crate) fn synthetic(
    label: &str,
    seconds: u32,
    per_second: u64,
    median_ns: f64,
    seed: u64,
) -> RunFile {
    let mut rng = Rng(seed | 1);
    let mut run = golden();
    run.label = Some(label.to_owned());
    run.run_id = format!("{label}-{seed}");
    let settings = HistogramSettings::default();
    let (mut total, mut total_m) = (new_histogram(&settings), Moments::new());
    let template = run.intervals[0].clone();
    run.intervals.clear();
    for s in 0..seconds {
        let (mut h, mut m) = (new_histogram(&settings), Moments::new());
        for _ in 0..per_second {
            let u = rng.next();
            // Log-logistic-ish tail: median at median_ns, p99 about 10x.
            let v = (median_ns * (u / (1.0 - u)).powf(0.5)).max(1_000.0) as u64;
            h.record(v).unwrap();
            m.record(v);
        }
        total.add(&h).unwrap();
        total_m.merge(&m);
        let mut interval = template.clone();
        interval.start_s = f64::from(s);
        interval.intended = per_second;
        interval.sent = per_second;
        interval.completed = per_second;
        interval.status_classes = StatusClasses {
            s2xx: per_second,
            ..Default::default()
        };
        interval.errors.clear();
        interval.hits = per_second;
        interval.misses = 0;
        interval.latency = LatencyRecord {
            histogram: EncodedHistogram::encode(&h).unwrap(),
            moments: m,
        };
        run.intervals.push(interval);
    }
    let n = u64::from(seconds) * per_second;
    run.totals.intended = n;
    run.totals.sent = n;
    run.totals.completed = n;
    run.totals.status_codes = [(200, n)].into();
    run.totals.errors.clear();
    run.totals.bytes_in = 11 * n;
    run.cache = CacheCounts {
        hit: n,
        miss: 0,
        unknown: 0,
        by_source: CacheSources {
            x_varnish: n,
            ..Default::default()
        },
        layers: Vec::new(),
        stale_ages: None,
    };
    run.window = Window {
        warmup_s: 0.0,
        measured_s: f64::from(seconds),
        wait_s: 0.001,
        start_offset_s: None,
    };
    run.plan.duration_s = Some(f64::from(seconds));
    run.plan.rate_per_s = Some(per_second as f64);
    let record = LatencyRecord {
        histogram: EncodedHistogram::encode(&total).unwrap(),
        moments: total_m,
    };
    run.latency.response = Some(record.clone());
    run.latency.service = record;
    run
}

//! How often history finds a step, and how often it raises a false alarm, on synthetic
//! histories (#47): 100 commits of 3 runs each, p50 steps of +3% at commit 25, +5% at 50 and
//! +10% at 75, the runs' noise drawn from a file of measured deviations (this machine's, from
//! benches/verdicts/history-real.sh) or normal with a given spread. Beside vload's
//! detector, the same series judged as Perfherder does (a t-test of each commit against the
//! one before, p < 0.05 and a shift over 2%) and as github-action-benchmark does (one
//! result against the last one, alert above a ratio).
//!
//! cargo run --release -p vload-history --example synthetic -- [NOISE_FILE|SD] [HISTORIES] [SEED]

use vload_analyze::Metric;
use vload_analyze::stats::welch;
use vload_history::StoredRun;
use vload_history::judge::{Strength, judge};
use vload_schema::Mode;

/// A way of alerting: the commits it alerts at, given each commit's runs.
type Detector = dyn Fn(&[Vec<f64>]) -> Vec<usize>;

const COMMITS: usize = 100;
const RUNS: usize = 3;
const STEPS: [(usize, f64); 3] = [(25, 0.03), (50, 0.05), (75, 0.10)];

/// xorshift64*: deterministic, no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

enum Noise {
    Measured(Vec<f64>),
    Normal(f64),
}

impl Noise {
    fn draw(&self, rng: &mut Rng) -> f64 {
        match self {
            Noise::Measured(d) => d[(rng.next() % d.len() as u64) as usize],
            Noise::Normal(sd) => rng.normal() * sd,
        }
    }
}

/// One history: each commit's runs' p50 in ns.
fn history(noise: &Noise, rng: &mut Rng) -> Vec<Vec<f64>> {
    let mut level = 2_000_000.0;
    (0..COMMITS)
        .map(|c| {
            if let Some((_, step)) = STEPS.iter().find(|(at, _)| *at == c) {
                level *= 1.0 + step;
            }
            (0..RUNS).map(|_| level * (1.0 + noise.draw(rng))).collect()
        })
        .collect()
}

fn stored(h: &[Vec<f64>]) -> Vec<StoredRun> {
    h.iter()
        .enumerate()
        .flat_map(|(c, runs)| {
            runs.iter().enumerate().map(move |(r, v)| StoredRun {
                run_id: format!("{c:03}-{r}"),
                series: "synthetic".into(),
                started_at: format!("{c:03}-{r}"),
                commit: format!("c{c:03}"),
                branch: None,
                excluded: None,
                mode: Mode::Open,
                metrics: vec![(Metric::P50, *v)],
            })
        })
        .collect()
}

/// Commits each method alerts at.
fn vload(h: &[Vec<f64>]) -> Vec<usize> {
    judge(&stored(h), Metric::P50)
        .changes
        .iter()
        .filter(|c| c.strength == Strength::Confirmed)
        .map(|c| c.index)
        .collect()
}

fn vload_with_weak(h: &[Vec<f64>]) -> Vec<usize> {
    judge(&stored(h), Metric::P50)
        .changes
        .iter()
        .map(|c| c.index)
        .collect()
}

fn perfherder(h: &[Vec<f64>]) -> Vec<usize> {
    let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
    (1..h.len())
        .filter(|&c| {
            welch(&logs(&h[c - 1]), &logs(&h[c]), 0.95)
                .is_some_and(|w| w.p < 0.05 && w.difference.abs() > 0.02_f64.ln_1p())
        })
        .collect()
}

fn threshold(h: &[Vec<f64>], ratio: f64) -> Vec<usize> {
    (1..h.len())
        .filter(|&c| h[c][0] / h[c - 1][0] > ratio)
        .collect()
}

#[derive(Default)]
struct Tally {
    found: [usize; 3],
    off_by_one: usize,
    false_alarms: Vec<usize>,
    /// Histories where the 5% and 10% steps were found at their commits, with at most one
    /// false alarm: the goal.
    good: usize,
}

impl Tally {
    fn score(&mut self, alerts: &[usize]) {
        let mut false_alarms = 0;
        let mut big = 0;
        for a in alerts {
            if let Some(i) = STEPS.iter().position(|(at, _)| at == a) {
                self.found[i] += 1;
                big += usize::from(i > 0);
            } else if STEPS.iter().any(|(at, _)| at.abs_diff(*a) == 1) {
                self.off_by_one += 1;
            } else {
                false_alarms += 1;
            }
        }
        self.false_alarms.push(false_alarms);
        self.good += usize::from(big == 2 && false_alarms <= 1);
    }
}

#[allow(clippy::print_stdout, reason = "the example's table")]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let noise = match args.first() {
        Some(a) if a.parse::<f64>().is_ok() => Noise::Normal(a.parse().expect("checked")),
        Some(path) => Noise::Measured(
            std::fs::read_to_string(path)
                .expect("a file of deviations, one a line")
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.trim().parse().ok())
                .collect(),
        ),
        None => Noise::Normal(0.01),
    };
    let histories: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let mut rng = Rng(args.get(2).and_then(|a| a.parse().ok()).unwrap_or(47) | 1);
    let sd = match &noise {
        Noise::Measured(d) => {
            let mean = d.iter().sum::<f64>() / d.len() as f64;
            format!(
                "measured, {} deviations, sd {:.2}%",
                d.len(),
                100.0 * (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / d.len() as f64).sqrt()
            )
        }
        Noise::Normal(sd) => format!("normal, sd {:.2}%", sd * 100.0),
    };
    println!(
        "{histories} histories of {COMMITS} commits x {RUNS} runs; p50 steps +3% at c025, +5% at c050, +10% at c075; noise {sd}"
    );
    let methods: [(&str, &Detector); 5] = [
        ("vload history (E-divisive + compare)", &vload),
        ("  the same, weak change points counted", &vload_with_weak),
        ("t-test vs previous commit (Perfherder)", &perfherder),
        ("one run vs last, alert > 5% (gh-action-benchmark)", &|h| {
            threshold(h, 1.05)
        }),
        ("one run vs last, alert > 200% (its default)", &|h| {
            threshold(h, 2.0)
        }),
    ];
    let mut tallies: Vec<Tally> = methods.iter().map(|_| Tally::default()).collect();
    for _ in 0..histories {
        let h = history(&noise, &mut rng);
        for ((_, method), tally) in methods.iter().zip(&mut tallies) {
            tally.score(&method(&h));
        }
    }
    println!(
        "{:<50} {:>7} {:>7} {:>7} {:>8} {:>12} {:>10} {:>14}",
        "method", "3% at", "5% at", "10% at", "off by 1", "false/hist", "max false", "5%+10% & <=1"
    );
    for ((name, _), t) in methods.iter().zip(&tallies) {
        let pct = |n: usize| format!("{:.0}%", 100.0 * n as f64 / histories as f64);
        let total: usize = t.false_alarms.iter().sum();
        let max = t.false_alarms.iter().max().copied().unwrap_or(0);
        println!(
            "{:<50} {:>7} {:>7} {:>7} {:>8} {:>12.2} {:>10} {:>14}",
            name,
            pct(t.found[0]),
            pct(t.found[1]),
            pct(t.found[2]),
            t.off_by_one,
            total as f64 / histories as f64,
            max,
            pct(t.good)
        );
    }
}

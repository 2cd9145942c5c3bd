//! Before comparing: did both sides run the same thing, and can every run be trusted?

use vload_schema::{Mode, RunFile};

use vload_schema::Verdict as Health;

use crate::compare::{Check, Row, Severity};

fn warn(checks: &mut Vec<Check>, message: String) {
    checks.push(Check {
        severity: Severity::Warning,
        message,
    });
}

fn note(checks: &mut Vec<Check>, message: String) {
    checks.push(Check {
        severity: Severity::Note,
        message,
    });
}

/// Comparability findings for groups `a` and `b`, warnings first.
pub(crate) fn comparability(a: &[RunFile], b: &[RunFile], hit_row: Option<&Row>) -> Vec<Check> {
    let mut checks = Vec::new();
    let all: Vec<&RunFile> = a.iter().chain(b).collect();
    let first = all[0];
    let differs = |f: &dyn Fn(&RunFile) -> String| all.iter().any(|r| f(r) != f(first));
    if differs(&|r| r.workload_hash.clone()) {
        warn(
            &mut checks,
            "workload differs between runs (method, URL, headers or body): compare like with like"
                .into(),
        );
    }
    if differs(&|r| format!("{:?}", r.plan.mode)) {
        warn(
            &mut checks,
            "load models differ (open and closed loop): the latencies are not the same quantity"
                .into(),
        );
    }
    let load = |r: &RunFile| match r.plan.mode {
        Mode::Open => format!("{} req/s", r.plan.rate_per_s.unwrap_or(0.0)),
        Mode::Closed => format!("{} connections", r.plan.connections),
    };
    if differs(&|r| load(r)) {
        let (la, lb) = (load(&a[0]), load(&b[0]));
        warn(
            &mut checks,
            format!("offered load differs (A {la}, B {lb}): latency depends on load"),
        );
    }
    let durations: Vec<f64> = all.iter().map(|r| r.window.measured_s).collect();
    let (shortest, longest) = durations
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), d| (lo.min(*d), hi.max(*d)));
    if shortest > 0.0 && longest / shortest > 1.05 {
        warn(
            &mut checks,
            format!(
                "measured durations differ by more than 5% ({shortest:.1} s to {longest:.1} s)"
            ),
        );
    }
    if differs(&|r| format!("{:?}", r.plan.histogram)) {
        warn(
            &mut checks,
            "histogram settings differ: percentiles are quantised differently".into(),
        );
    }
    if let Some(row) = hit_row
        && let (Some(ha), Some(hb)) = (row.a.median, row.b.median)
        && (ha - hb).abs() * 100.0 > 0.5
    {
        warn(
            &mut checks,
            format!(
                "cache behaviour differs (hit ratio A {:.2}% vs B {:.2}%): latency differences may be cache effects",
                ha * 100.0,
                hb * 100.0
            ),
        );
    }
    for (name, group) in [("A", a), ("B", b)] {
        let verdicts = |wanted: Health| -> Vec<String> {
            group
                .iter()
                .filter(|r| r.client_health.verdict == wanted)
                .map(|r| r.run_id.clone())
                .collect()
        };
        let bound = verdicts(Health::ClientBound);
        if !bound.is_empty() {
            warn(
                &mut checks,
                format!(
                    "{name}: {} of {} runs were client-bound (they measured vload, not the server): {}",
                    bound.len(),
                    group.len(),
                    bound.join(", ")
                ),
            );
        }
        let warned = verdicts(Health::Warn);
        if !warned.is_empty() {
            note(
                &mut checks,
                format!(
                    "{name}: {} of {} runs have client-health warnings (see vload report)",
                    warned.len(),
                    group.len()
                ),
            );
        }
        let interrupted = group.iter().filter(|r| r.interrupted).count();
        if interrupted > 0 {
            warn(
                &mut checks,
                format!("{name}: {interrupted} run(s) were interrupted (partial)"),
            );
        }
    }
    if a.len() != b.len() {
        warn(
            &mut checks,
            format!("unbalanced: {} runs against {}", a.len(), b.len()),
        );
    }
    if a.len() < 4 || b.len() < 4 {
        note(
            &mut checks,
            format!(
                "{} + {} runs: a distribution-free test needs at least 4 a side",
                a.len(),
                b.len()
            ),
        );
    }
    let arch = |g: &[RunFile]| {
        let mut v: Vec<String> = g.iter().map(|r| r.environment.arch.clone()).collect();
        v.dedup();
        v.join("/")
    };
    let hosts = |g: &[RunFile]| {
        let mut v: Vec<String> = g.iter().map(|r| r.environment.hostname.clone()).collect();
        v.sort();
        v.dedup();
        v.join(", ")
    };
    note(
        &mut checks,
        format!(
            "client A: {} on {}; client B: {} on {}",
            arch(a),
            hosts(a),
            arch(b),
            hosts(b)
        ),
    );
    checks
}

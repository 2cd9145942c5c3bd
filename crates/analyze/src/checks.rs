//! Before comparing: did both sides run the same thing, and can every run be trusted?

use serde::Serialize;
use vload_schema::{Mode, RunFile};

use vload_schema::HealthVerdict as Health;

/// How loud a check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The comparison may be meaningless.
    Warning,
    /// Worth knowing.
    Note,
}

/// One comparability finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// How loud.
    pub severity: Severity,
    /// What was found.
    pub message: String,
}

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
pub(crate) fn comparability(
    a: &[RunFile],
    b: &[RunFile],
    hit_ratios: Option<(f64, f64)>,
) -> Vec<Check> {
    let mut checks = Vec::new();
    same_plan(&mut checks, a, b);
    cache(&mut checks, hit_ratios);
    for (name, group) in [("A", a), ("B", b)] {
        group_health(&mut checks, name, group);
        self_checks(&mut checks, name, group);
    }
    run_order(&mut checks, a, b);
    addresses(&mut checks, a, b);
    balance(&mut checks, a, b);
    clients(&mut checks, a, b);
    checks.sort_by_key(|c| c.severity != Severity::Warning);
    checks
}

/// Same workload, load model, offered load, duration and histogram layout on every run.
fn same_plan(checks: &mut Vec<Check>, a: &[RunFile], b: &[RunFile]) {
    let all: Vec<&RunFile> = a.iter().chain(b).collect();
    let first = all[0];
    let differs = |f: &dyn Fn(&RunFile) -> String| all.iter().any(|r| f(r) != f(first));
    if differs(&|r| r.workload_hash.clone()) {
        warn(
            checks,
            "workload differs between runs (method, URL, headers or body): compare like with like"
                .into(),
        );
    }
    if differs(&|r| format!("{:?}", r.plan.mode)) {
        warn(
            checks,
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
            checks,
            format!("offered load differs (A {la}, B {lb}): latency depends on load"),
        );
    }
    let (shortest, longest) = all
        .iter()
        .map(|r| r.window.measured_s)
        .fold((f64::MAX, 0.0f64), |(lo, hi), d| (lo.min(d), hi.max(d)));
    if shortest > 0.0 && longest / shortest > 1.05 {
        warn(
            checks,
            format!(
                "measured durations differ by more than 5% ({shortest:.1} s to {longest:.1} s)"
            ),
        );
    }
    if differs(&|r| format!("{:?}", r.plan.histogram)) {
        warn(
            checks,
            "histogram settings differ: percentiles are quantised differently".into(),
        );
    }
}

/// Hit ratios more than half a point apart make latency differences cache effects.
fn cache(checks: &mut Vec<Check>, hit_ratios: Option<(f64, f64)>) {
    if let Some((ha, hb)) = hit_ratios
        && (ha - hb).abs() * 100.0 > 0.5
    {
        warn(
            checks,
            format!(
                "cache behaviour differs (hit ratio A {:.2}% vs B {:.2}%): latency differences may be cache effects",
                ha * 100.0,
                hb * 100.0
            ),
        );
    }
}

/// Runs of one group whose load something other than the server limited, by the word
/// their health gave, and interrupted runs.
fn group_health(checks: &mut Vec<Check>, name: &str, group: &[RunFile]) {
    let verdicts = |wanted: Health| -> Vec<String> {
        group
            .iter()
            .filter(|r| r.client_health.verdict == wanted)
            .map(|r| r.run_id.clone())
            .collect()
    };
    for (verdict, meaning, severe) in [
        (
            Health::ClientBound,
            "vload's own threads were the limit: they measured vload, not the server",
            true,
        ),
        (
            Health::MachineBusy,
            "the machine kept vload from applying the planned load: they measured the machine too",
            true,
        ),
        (
            Health::ConnectionCapped,
            "requests waited for the connection cap (--max-connections): the wait is vload's, as configured",
            true,
        ),
        (
            Health::ServerLimited,
            "the server was too slow for the planned load (requests waited for connections)",
            false,
        ),
        (
            Health::Warn,
            "client-health warnings (see vload report)",
            false,
        ),
    ] {
        let runs = verdicts(verdict);
        if runs.is_empty() {
            continue;
        }
        let text = format!(
            "{name}: {} of {} runs were {}: {meaning}: {}",
            runs.len(),
            group.len(),
            verdict.word(),
            runs.join(", ")
        );
        if severe {
            warn(checks, text);
        } else {
            note(checks, text);
        }
    }
    let interrupted = group.iter().filter(|r| r.interrupted).count();
    if interrupted > 0 {
        warn(
            checks,
            format!("{name}: {interrupted} run(s) were interrupted (partial)"),
        );
    }
}

/// Runs of one group that failed their own checks: not in a steady state or not faithful
/// to their arrival process (warnings: the figure describes a moving or a different
/// experiment), or not converged (a note: the spread between runs carries that noise, so
/// the comparison stays valid but less sensitive).
fn self_checks(checks: &mut Vec<Check>, name: &str, group: &[RunFile]) {
    let kinds: [(&str, &str, Severity); 3] = [
        (
            "stationarity",
            "were not in a steady state",
            Severity::Warning,
        ),
        (
            "arrivals",
            "did not send the arrivals they planned",
            Severity::Warning,
        ),
        (
            "convergence",
            "had figures that did not converge",
            Severity::Note,
        ),
    ];
    for (prefix, what, severity) in kinds {
        let failed: Vec<String> = group
            .iter()
            .filter_map(|run| {
                let own;
                let list = if run.checks.is_empty() {
                    own = crate::selfcheck::run_checks(run).unwrap_or_default();
                    &own
                } else {
                    &run.checks
                };
                let reasons: Vec<&str> = list
                    .iter()
                    .filter(|c| {
                        c.verdict == vload_schema::CheckVerdict::Fail
                            && (c.name.starts_with(prefix)
                                || (prefix == "convergence" && c.name == "until_stable"))
                    })
                    .map(|c| short_reason(&c.message))
                    .collect();
                (!reasons.is_empty()).then(|| format!("{} ({})", run.run_id, reasons.join("; ")))
            })
            .collect();
        if failed.is_empty() {
            continue;
        }
        checks.push(Check {
            severity,
            message: format!(
                "{name}: {} of {} runs {what}: {}",
                failed.len(),
                group.len(),
                failed.join(", ")
            ),
        });
    }
}

/// A check's message without its verdict prefix and advice: "p50 rose 34% ...".
fn short_reason(message: &str) -> &str {
    let body = message
        .split_once(": ")
        .filter(|(head, _)| head.starts_with("not ") || head.starts_with("arrivals not"))
        .map_or(message, |(_, rest)| rest);
    let body = body.split(';').next().unwrap_or(body);
    // A convergence line, "p99 2.46 ms ±5.4% (95%, 6 batches of 1 s): not converged ...",
    // says enough by its figure and interval.
    match body.split_once(" (95%") {
        Some((figure, _)) if body.contains("not converged") => figure.trim(),
        _ => body.trim(),
    }
}

/// Group sizes: unbalanced, or too few for a distribution-free test.
fn balance(checks: &mut Vec<Check>, a: &[RunFile], b: &[RunFile]) {
    if a.len() != b.len() {
        warn(
            checks,
            format!("unbalanced: {} runs against {}", a.len(), b.len()),
        );
    }
    if a.len() < 4 || b.len() < 4 {
        note(
            checks,
            format!(
                "{} + {} runs: a distribution-free test needs at least 4 a side",
                a.len(),
                b.len()
            ),
        );
    }
}

/// Which machines generated each side's load.
fn clients(checks: &mut Vec<Check>, a: &[RunFile], b: &[RunFile]) {
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
        checks,
        format!(
            "client A: {} on {}; client B: {} on {}",
            arch(a),
            hosts(a),
            arch(b),
            hosts(b)
        ),
    );
}

/// When every run of one side came before every run of the other, a machine that drifts
/// over time (thermal throttling, other tenants, a cache filling) shows up as a difference
/// between the sides: an A/A comparison on such a machine said "B faster +12.6%" with
/// correct statistics. Alternating the runs spreads the drift over both sides.
fn run_order(checks: &mut Vec<Check>, a: &[RunFile], b: &[RunFile]) {
    let times = |g: &[RunFile]| -> Option<Vec<i64>> {
        g.iter()
            .map(|r| crate::merge::epoch_ms(&r.started_at))
            .collect()
    };
    let (Some(ta), Some(tb)) = (times(a), times(b)) else {
        return;
    };
    let (a_first, a_last) = (ta.iter().min(), ta.iter().max());
    let (b_first, b_last) = (tb.iter().min(), tb.iter().max());
    let (Some(a_first), Some(a_last), Some(b_first), Some(b_last)) =
        (a_first, a_last, b_first, b_last)
    else {
        return;
    };
    let order = if a_last < b_first {
        "every A run started before every B run"
    } else if b_last < a_first {
        "every B run started before every A run"
    } else {
        return;
    };
    let advice = "alternate the runs (A B A B ...) so that drift falls on both sides";
    if a.len() + b.len() >= 3 {
        warn(
            checks,
            format!(
                "runs not interleaved in time: {order}; a machine that drifts (thermal throttling, other tenants, a filling cache) would look like a difference between A and B: {advice}"
            ),
        );
    } else {
        note(
            checks,
            format!(
                "{order}: with one run a side, drift over time and a real difference look the same; {advice}"
            ),
        );
    }
}

/// Where each side sent its load. Different servers are expected when comparing machines
/// (x86_64 against aarch64); the workload hash covers what was asked, not where.
fn addresses(checks: &mut Vec<Check>, a: &[RunFile], b: &[RunFile]) {
    let of = |g: &[RunFile]| {
        let mut v: Vec<String> = g
            .iter()
            .filter_map(|r| r.plan.server_address.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (aa, ab) = (of(a), of(b));
    if !aa.is_empty() && !ab.is_empty() && aa != ab {
        note(
            checks,
            format!(
                "A and B sent their load to different servers (A {}; B {}): expected when comparing machines; the workload (what was asked) is checked apart",
                aa.join(", "),
                ab.join(", ")
            ),
        );
    }
}

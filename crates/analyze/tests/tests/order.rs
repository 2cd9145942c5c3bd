use vload_analyze::compare::Severity;

use super::util::*;

fn at(mut run: vload_schema::RunFile, minute: u32, address: &str) -> vload_schema::RunFile {
    run.started_at = format!("2026-11-22T10:{minute:02}:00.000Z");
    run.plan.server_address = Some(address.to_owned());
    run
}

fn warnings(c: &vload_analyze::Comparison) -> Vec<String> {
    c.checks
        .iter()
        .filter(|k| k.severity == Severity::Warning)
        .map(|k| k.message.clone())
        .collect()
}

/// See #17, case 8: with every A run before every B run on a drifting machine, an A/A
/// comparison said "B faster" with correct statistics.
#[test]
fn groups_that_do_not_interleave_in_time_are_flagged() {
    let a: Vec<_> = (0..4)
        .map(|i| at(synthetic("a", 4, 500, 2e5, i + 1), i as u32, "127.0.0.1:1"))
        .collect();
    let b: Vec<_> = (0..4)
        .map(|i| {
            at(
                synthetic("b", 4, 500, 2e5, i + 9),
                10 + i as u32,
                "127.0.0.1:1",
            )
        })
        .collect();
    let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
    let w = warnings(&c);
    assert!(
        w.iter()
            .any(|m| m.contains("not interleaved") && m.contains("alternate")),
        "{w:?}"
    );
    // Alternated: A at even minutes, B at odd ones.
    let a: Vec<_> = (0..4)
        .map(|i| {
            at(
                synthetic("a", 4, 500, 2e5, i + 1),
                2 * i as u32,
                "127.0.0.1:1",
            )
        })
        .collect();
    let b: Vec<_> = (0..4)
        .map(|i| {
            at(
                synthetic("b", 4, 500, 2e5, i + 9),
                2 * i as u32 + 1,
                "127.0.0.1:1",
            )
        })
        .collect();
    let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
    assert!(
        !warnings(&c).iter().any(|m| m.contains("interleaved")),
        "{:?}",
        c.checks
    );
}

/// See #17, case 22: two servers are not two workloads.
#[test]
fn different_servers_are_a_note_not_a_different_workload() {
    let a = vec![at(synthetic("a", 4, 500, 2e5, 1), 0, "127.0.0.1:40001")];
    let b = vec![at(synthetic("b", 4, 500, 2e5, 2), 1, "10.0.0.2:6081")];
    let c = vload_analyze::compare(("a", &a), ("b", &b)).unwrap();
    assert!(
        !warnings(&c).iter().any(|m| m.contains("workload differs")),
        "{:?}",
        c.checks
    );
    assert!(
        c.checks
            .iter()
            .any(|k| k.severity == Severity::Note && k.message.contains("different servers")),
        "{:?}",
        c.checks
    );
}

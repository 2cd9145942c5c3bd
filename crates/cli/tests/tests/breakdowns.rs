//! Breakdowns through the CLI: by host and class of a catalogue, in the report and the run
//! file, kept exactly through a merge; bad `--class` flags are one clear line.

use crate::util::{Scratch, read_run, run, shared, stderr, stdout, vload};

#[test]
fn a_catalogue_over_three_hosts_is_broken_down_by_host_and_class_and_merges_exactly() {
    let _turn = shared();
    let dir = Scratch::new("breakdowns");
    let attack = |seed: &str, file: &str| {
        let o = run(
            vload().args([
                "attack",
                "--catalogue",
                "300",
                "--vhosts",
                "3",
                "--seed",
                seed,
                "--class",
                "low=^/c/[0-9]?[0-9]\\?",
                "-n",
                "900",
                "-c",
                "3",
                "--no-progress",
                "-o",
                dir.path(file).to_str().unwrap(),
            ]),
            0,
        );
        stdout(&o)
    };
    let report = attack("3", "a.json");
    attack("3", "b.json");
    for needle in [
        "By host",
        "site0.test",
        "site2.test",
        "By class",
        "low",
        "(unclassified)",
    ] {
        assert!(report.contains(needle), "{needle}: {report}");
    }
    let a = read_run(&dir.path("a.json"));
    let by = |run: &vload_schema::RunFile, name: &str| {
        run.breakdowns
            .iter()
            .find(|b| b.by == name)
            .cloned()
            .unwrap()
    };
    let hosts = by(&a, "host");
    assert_eq!(hosts.groups.len(), 3);
    assert_eq!(hosts.groups.iter().map(|g| g.requests).sum::<u64>(), 900);
    // Objects 0-99 are the class "low" (one or two digits): with Zipf most requests.
    let classes = by(&a, "class");
    let names: Vec<&str> = classes.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["low", "(unclassified)"]);
    assert!(
        classes.groups[0].requests > classes.groups[1].requests,
        "{classes:?}"
    );
    assert_eq!(a.plan.classes[0].name, "low");

    // Merged, each group adds up (and the merged file validates: groups sum to totals).
    let merged = dir.path("merged.json");
    run(
        vload().args([
            "report",
            "--merge",
            // Each run had a built-in origin of its own, on another port.
            "--force",
            dir.path("a.json").to_str().unwrap(),
            dir.path("b.json").to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ]),
        0,
    );
    let (b, m) = (read_run(&dir.path("b.json")), read_run(&merged));
    for name in ["host", "class", "status", "cache"] {
        let (ga, gb, gm) = (by(&a, name), by(&b, name), by(&m, name));
        for g in &gm.groups {
            let of = |x: &vload_schema::Breakdown| {
                x.groups
                    .iter()
                    .find(|h| h.name == g.name)
                    .map_or(0, |h| h.requests)
            };
            assert_eq!(g.requests, of(&ga) + of(&gb), "{name} {}", g.name);
            assert_eq!(
                g.latency.moments.n,
                [&ga, &gb]
                    .iter()
                    .flat_map(|x| x.groups.iter().filter(|h| h.name == g.name))
                    .map(|h| h.latency.moments.n)
                    .sum::<u64>()
            );
        }
    }
}

#[test]
fn bad_class_flags_are_one_clear_line() {
    for (args, needle) in [
        (
            vec!["--catalogue", "10", "--class", "images"],
            "give NAME=REGEX",
        ),
        (
            vec!["--catalogue", "10", "--class", "a=["],
            "REGEX does not compile",
        ),
        (
            vec!["--catalogue", "10", "--class", "a=x", "--class", "a=y"],
            "the name a is taken",
        ),
        (
            vec!["--class", "a=x"],
            "--class groups requests by their path",
        ),
    ] {
        let o = run(
            vload()
                .arg("attack")
                .args(&args)
                .args(["-n", "1", "http://127.0.0.1:1/"]),
            2,
        );
        let err: Vec<String> = stderr(&o)
            .lines()
            .filter(|l| !l.starts_with("vload: attacking"))
            .map(str::to_owned)
            .collect();
        assert!(
            err.len() == 1 && err[0].contains(needle),
            "{args:?}: {err:?}"
        );
    }
}

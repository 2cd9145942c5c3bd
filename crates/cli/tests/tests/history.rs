//! `vload history` end to end: attacks that add themselves, files added afterwards, the
//! gate's exit codes, exports, the plot, and bad input (#47).

use super::util::*;

/// Two commits of short attacks stored with --history, a config file hashed, a corrupt file
/// refused by name while the others are stored; show, check, export and plot read them.
#[test]
fn attacks_add_themselves_and_every_view_reads_them() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("history");
    let db = dir.path("h.db");
    let vcl = dir.path("x.vcl");
    std::fs::write(&vcl, "vcl 4.1;\n").unwrap();
    // Two runs a commit that enter the statistics: a busy machine may keep a run out
    // (MACHINE-BUSY, a failed arrivals check), which is the history's own rule, so a commit
    // gets more runs, at most six, until two count.
    let mut stored = 0;
    for commit in ["c1", "c2"] {
        let mut counted = 0;
        for attempt in 0..6 {
            if counted == 2 {
                break;
            }
            let out = dir.path(&format!("{commit}-{attempt}.json"));
            let o = run(
                vload()
                    .args([
                        "attack",
                        "-n",
                        "300",
                        "-c",
                        "2",
                        "--label",
                        "hist",
                        "--history",
                        "--no-progress",
                        "--quiet",
                    ])
                    .args(["--commit", commit, "--branch", "main", "--config-file"])
                    .arg(&vcl)
                    .arg("--db")
                    .arg(&db)
                    .arg("-o")
                    .arg(&out)
                    .arg(origin.url()),
                0,
            );
            let err = stderr(&o);
            assert!(err.contains("history: stored run"), "{err}");
            stored += 1;
            if !err.contains("kept out of its statistics") {
                counted += 1;
            }
            let run = read_run(&out);
            let p = run.provenance.expect("provenance recorded");
            assert_eq!(p.commit.as_deref(), Some(commit));
            assert_eq!(p.config_files.len(), 1);
            assert_eq!(p.config_files[0].sha256.len(), 64);
        }
        assert_eq!(counted, 2, "{commit}: fewer than 2 of 6 runs counted");
    }
    // Adding the same files again changes nothing; a corrupt one is named, the rest stored.
    let bad = dir.path("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 4, \"run_id\": ").unwrap();
    let o = run(
        vload()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg(dir.path("c1-0.json"))
            .arg(&bad),
        2,
    );
    let err = stderr(&o);
    assert!(
        err.contains("stored before") && err.contains("bad.json"),
        "{err}"
    );
    let o = run(vload().args(["history", "show", "--db"]).arg(&db), 0);
    let text = stdout(&o);
    assert!(
        text.contains("series hist [") && text.contains("c2") && text.contains("x.vcl"),
        "{text}"
    );
    assert!(
        text.contains(&format!("2 commits, {stored} runs")),
        "{text}"
    );
    // Two runs a commit, no change between identical commits: judged, passed (or at worst a
    // regression of this noisy pair) -- never "not judged".
    let o = vload()
        .args(["history", "check", "--format", "markdown", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    assert!(
        stdout(&o).starts_with("### vload history check"),
        "{}",
        stdout(&o)
    );
    let o = run(
        vload()
            .args(["history", "export", "--format", "bmf", "--db"])
            .arg(&db),
        0,
    );
    let bmf: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let (name, measures) = bmf.as_object().unwrap().iter().next().unwrap();
    assert!(name.starts_with("hist ["), "{name}");
    assert!(
        measures["throughput"]["value"].as_f64().unwrap() > 0.0,
        "{measures}"
    );
    // A commit no series knows is refused by name, not exported as an empty document.
    let o = run(
        vload()
            .args([
                "history", "export", "--format", "bmf", "--commit", "nosuch", "--db",
            ])
            .arg(&db),
        2,
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--commit nosuch: no valid run"),
        "{o:?}"
    );
    let page = dir.path("h.html");
    run(
        vload()
            .args(["history", "plot", "--db"])
            .arg(&db)
            .arg("-o")
            .arg(&page),
        0,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<svg") && html.contains("hist ["),
        "{html:.300}"
    );
    forget_names_what_it_removes(&db, stored);
}

/// `history forget`: nothing named, or a name nothing has, is refused by name; a cutoff
/// older than every run forgets none; the series' label forgets its every run, and the
/// series with them.
fn forget_names_what_it_removes(db: &std::path::Path, stored: usize) {
    let forget = |args: &[&str], code| {
        let o = run(
            vload()
                .args(["history", "forget", "--db"])
                .arg(db)
                .args(args),
            code,
        );
        stderr(&o)
    };
    assert!(forget(&[], 2).contains("give --series KEY|LABEL"));
    assert!(forget(&["--series", "nosuch"], 2).contains("--series nosuch: no series"));
    assert!(forget(&["--run", "nosuch"], 2).contains("--run nosuch: no run"));
    assert!(forget(&["--older-than", "1000d"], 0).contains("forgot 0 runs"));
    let err = forget(&["--series", "hist"], 0);
    assert!(
        err.contains(&format!("forgot {stored} runs; 1 series")),
        "{err}"
    );
    assert!(forget(&["--series", "hist"], 2).contains("no series"));
}

/// Bad input: a missing database is not created by a reader; a missing config file stops
/// the attack before any load; an unknown metric and a bad margin are refused by name.
#[test]
fn bad_input_gets_one_line_naming_it() {
    let dir = Scratch::new("history-bad");
    let db = dir.path("none.db");
    for view in ["show", "check", "plot"] {
        let o = run(vload().args(["history", view, "--db"]).arg(&db), 2);
        assert!(
            stderr(&o).contains("no history database") && !db.exists(),
            "{}",
            stderr(&o)
        );
    }
    let o = run(
        vload()
            .args(["attack", "-n", "10", "--config-file"])
            .arg(dir.path("missing.vcl")),
        2,
    );
    let err = stderr(&o);
    assert!(
        err.contains("--config-file") && err.contains("missing.vcl") && !err.contains("attacking"),
        "{err}"
    );
    let o = run(vload().args(["history", "show", "--metric", "p42"]), 2);
    assert!(
        stderr(&o).contains("p42") && stderr(&o).contains("p99.9"),
        "{}",
        stderr(&o)
    );
    let o = run(
        vload().args(["history", "check", "--fail-if-regressed", "lots"]),
        2,
    );
    assert!(
        stderr(&o).contains("'lots' is not a percentage"),
        "{}",
        stderr(&o)
    );
    // #58: /dev/zero is refused at its first byte, not read to the 1 GiB limit; a run file
    // whose id holds a right-to-left override is named with it escaped.
    let db = dir.path("odd.db");
    let o = run(
        vload()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg("/dev/zero"),
        2,
    );
    assert!(
        stderr(&o).contains("'/dev/zero' is not a run file: it starts with byte 0x00"),
        "{}",
        stderr(&o)
    );
    let golden = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/tests/data/golden-run.json"
    ))
    .unwrap();
    let run_id = serde_json::from_str::<serde_json::Value>(&golden).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let odd = dir.path("odd.json");
    std::fs::write(
        &odd,
        golden.replacen(&run_id, &format!("{run_id}\\u202egnp.exe"), 1),
    )
    .unwrap();
    let o = run(
        vload().args(["history", "add", "--db"]).arg(&db).arg(&odd),
        0,
    );
    let err = stderr(&o);
    assert!(
        err.contains("stored run") && err.contains("\\u{202e}gnp.exe"),
        "{err}"
    );
    assert!(!err.contains('\u{202e}'), "{err}");
    // A database that is not one.
    let junk = dir.path("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    let o = run(vload().args(["history", "show", "--db"]).arg(&junk), 2);
    assert!(stderr(&o).contains("junk.db"), "{}", stderr(&o));
}

use std::process::Stdio;

use super::util::*;

/// Starts shard `i` of `n` with `args`, writing `shard-i.json` in `dir`.
fn start(dir: &Scratch, i: u32, n: u32, args: &[String]) -> std::process::Child {
    vload()
        .arg("attack")
        .arg("--shard")
        .arg(format!("{i}/{n}"))
        .args(args)
        .arg("-o")
        .arg(dir.path(&format!("shard-{i}.json")))
        .arg("--no-progress")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn start_at(seconds_ahead: u64) -> String {
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(seconds_ahead);
    humantime::format_rfc3339_millis(at).to_string()
}

#[test]
fn four_shard_processes_merge_exactly() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("shards");
    let list: String = (0..400).map(|i| format!("/obj/{i}\n")).collect();
    std::fs::write(dir.path("urls.txt"), list).unwrap();
    let args: Vec<String> = [
        "-c",
        "8",
        "--urls",
        dir.path("urls.txt").to_str().unwrap(),
        "--passes",
        "1",
        "--start-at",
        &start_at(2),
        &origin.url(),
    ]
    .map(String::from)
    .to_vec();
    let children: Vec<_> = (0..4).map(|i| start(&dir, i, 4, &args)).collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let shards: Vec<RunFile> = (0..4)
        .map(|i| read_run(&dir.path(&format!("shard-{i}.json"))))
        .collect();
    for (i, run) in shards.iter().enumerate() {
        let shard = run.plan.shard.unwrap();
        assert_eq!((shard.index, shard.count), (i as u32, 4));
        assert_eq!(shard.connections, 2, "8 connections over 4 shards");
        assert_eq!(run.totals.completed, 100, "every 4th URL of 400");
        assert!(run.window.start_offset_s.unwrap() < 1.0, "{:?}", run.window);
        assert_eq!(run.workload_hash, shards[0].workload_hash, "one plan");
    }
    // Disjoint and complete: every URL fetched exactly once by the four together.
    let stats = origin.stats();
    assert_eq!(stats.requests_by_path.len(), 400);
    assert!(stats.requests_by_path.values().all(|n| *n == 1));

    let files: Vec<String> = (0..4)
        .map(|i| dir.path(&format!("shard-{i}.json")).display().to_string())
        .collect();
    let merged_file = dir.path("merged.json");
    let out = run(
        vload()
            .arg("report")
            .args(["--format", "json", "-o", merged_file.to_str().unwrap()])
            .args(&files),
        0,
    );
    let merged_run = read_run(&merged_file);
    assert_eq!(merged_run.totals.completed, 400);
    assert!(
        merged_run.plan.shard.is_none(),
        "the merge is the whole attack"
    );
    assert!(
        stderr(&out).contains("merged 4 shards of 4 from 1 machine"),
        "{}",
        stderr(&out)
    );
    let merged: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let merged = &merged["report"];
    assert_eq!(merged["requests"], 400);
    assert_eq!(
        stats.requests_total, 400,
        "the origin counted what the merge says"
    );
    // Merged percentiles are those of the union of the shards' histograms.
    let mut union: Option<hdrhistogram::Histogram<u64>> = None;
    for run in &shards {
        let h = run.latency.service.histogram.decode().unwrap();
        match &mut union {
            Some(u) => u.add(&h).unwrap(),
            None => union = Some(h),
        }
    }
    let union = union.unwrap();
    for (q, name) in [(0.5, "p50_ns"), (0.9, "p90_ns")] {
        let shown = merged["latency"][name].as_u64().unwrap();
        assert_eq!(shown, union.value_at_quantile(q), "{name}");
    }
    assert_eq!(merged["latency"]["n"], 400);
    // #48: the phases merge exactly too, in the totals and in each breakdown's groups.
    let phase_union = |of: fn(&RunFile) -> Option<&vload_schema::LatencyRecord>| {
        let mut union: Option<hdrhistogram::Histogram<u64>> = None;
        for run in &shards {
            let h = of(run).unwrap().histogram.decode().unwrap();
            match &mut union {
                Some(u) => u.add(&h).unwrap(),
                None => union = Some(h),
            }
        }
        union.unwrap()
    };
    type Of = fn(&RunFile) -> Option<&vload_schema::LatencyRecord>;
    let phases: [Of; 3] = [
        |r| r.latency.first_byte.as_ref(),
        |r| r.latency.transfer.as_ref(),
        |r| {
            r.breakdowns.iter().find(|b| b.by == "size")?.groups[0]
                .first_byte
                .as_ref()
        },
    ];
    for of in phases {
        let merged = of(&merged_run).unwrap();
        assert_eq!(merged.histogram.decode().unwrap(), phase_union(of));
        let sum: u128 = shards.iter().map(|r| of(r).unwrap().moments.sum_ns).sum();
        assert_eq!(merged.moments.sum_ns, sum);
        assert_eq!(merged.moments.n, 400);
    }

    // A missing shard and a duplicated one are named.
    let out = run(vload().arg("report").args(&files[..3]), 2);
    assert!(
        stderr(&out).contains("shard 3/4 missing"),
        "{}",
        stderr(&out)
    );
    let mut twice = files.clone();
    twice[3] = files[2].clone();
    let out = run(vload().arg("report").args(&twice), 2);
    assert!(
        stderr(&out).contains("shard 2/4 appears twice"),
        "{}",
        stderr(&out)
    );
    let out = run(vload().arg("report").arg("--force").args(&files[..3]), 0);
    assert!(
        stderr(&out).contains("warning: shard 3/4 missing"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn open_loop_shards_split_the_rate() {
    let _serial = serial();
    let origin = origin();
    let dir = Scratch::new("shards-open");
    let args: Vec<String> = [
        "-r",
        "1000",
        "-d",
        "2s",
        "--start-at",
        &start_at(1),
        &origin.url(),
    ]
    .map(String::from)
    .to_vec();
    let children: Vec<_> = (0..4).map(|i| start(&dir, i, 4, &args)).collect();
    for child in children {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let runs: Vec<_> = (0..4)
        .map(|i| read_run(&dir.path(&format!("shard-{i}.json"))))
        .collect();
    let intended: Vec<u64> = runs.iter().map(|r| r.totals.intended).collect();
    // 250/s each for 2 s.
    assert!(
        intended.iter().all(|n| (495..=505).contains(n)),
        "{intended:?}"
    );
    let total: u64 = intended.iter().sum();
    assert!((1_980..=2_020).contains(&total), "{total}");
    // The origin saw every response the shards got. (On a loaded machine a shard may
    // notice the end late: a request due in its last millisecond is then intended but
    // never sent, and says so.)
    let answered: u64 = runs
        .iter()
        .map(|r| r.totals.status_codes.values().sum::<u64>())
        .sum();
    let unsent: u64 = runs.iter().map(|r| r.totals.unsent).sum();
    // (At most 10 on a quiet machine; 12 beside stress-ng at load 16.)
    assert!(unsent <= 40, "{unsent}");
    assert_eq!(origin.stats().requests_total, answered);
}

#[test]
fn impossible_shards_are_refused() {
    let origin = origin();
    for (shard, needle) in [
        ("4/4", "count from 0"),
        ("1/0", "at least 1"),
        ("x", "not I/N"),
    ] {
        let out = run(
            vload().args(["attack", "-n", "5", "--shard", shard, &origin.url()]),
            2,
        );
        assert!(stderr(&out).contains(needle), "{shard}: {}", stderr(&out));
    }
    let out = run(
        vload().args([
            "attack",
            "-c",
            "2",
            "-n",
            "50",
            "--shard",
            "3/4",
            &origin.url(),
        ]),
        2,
    );
    assert!(
        stderr(&out).contains("shard 3/4 gets no connection"),
        "{}",
        stderr(&out)
    );
    let out = run(
        vload().args(["attack", "-n", "5", "--start-at", "tomorrow", &origin.url()]),
        2,
    );
    assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
    assert_eq!(origin.stats().requests_total, 0);
}

/// #45: a shard frozen past its `--start-at` recorded a start offset of 0.0: the offset is
/// the first send's, so the merge can say that shard began late.
#[test]
fn a_shard_frozen_past_its_start_records_when_it_sent_first() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("frozen-shard");
    let out = dir.path("late.json");
    let mut cmd = vload();
    cmd.args(["attack", "-r", "100", "-d", "4s", "--shard", "0/2"])
        .args(["--start-at", &start_at(1), "--no-progress", "--quiet", "-o"])
        .arg(&out)
        .arg(origin.url());
    // Frozen from 0.3 s after its launch until 3.1 s: about 2 s past its start.
    let (status, stdout) = run_frozen(
        &mut cmd,
        std::time::Duration::from_millis(300),
        std::time::Duration::from_millis(2_800),
    );
    // The frozen client is named (exit 3: the run did not measure the server as planned).
    assert!(matches!(status.code(), Some(0 | 3)), "{status:?}: {stdout}");
    let run = read_run(&out);
    let late = run.window.start_offset_s.unwrap();
    assert!(late > 1.5, "{:?}", run.window);
}

//! What a CI job reaches for: thresholds that fail the job, and pipes.

use std::io::Write as _;
use std::process::Stdio;

use super::util::*;

#[test]
fn fail_if_exits_1_naming_each_crossed_threshold_and_0_when_they_hold() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("fail-if");
    let out = dir.path("run.json");
    // Closed loop: the latency is service time, and the breach says so.
    let o = run(
        vload()
            .args(["attack", "-c", "2", "-d", "1s", "-t", "1", "--no-progress"])
            .args(["--fail-if", "p99>1h,rate<1000000000,errors>50%", "-o"])
            .arg(&out)
            .arg(origin.url()),
        1,
    );
    let err = stderr(&o);
    assert!(
        err.contains("threshold crossed: rate ") && err.contains("< 1,000,000,000.0/s"),
        "{err}"
    );
    assert_eq!(err.matches("threshold crossed").count(), 1, "{err}");
    assert!(
        stdout(&o).contains("Latency"),
        "the report still comes first"
    );
    assert!(out.exists(), "and the run file is still written");

    // The same thresholds on the saved run: the same verdict.
    let o = run(
        vload()
            .arg("report")
            .arg(&out)
            .args(["--fail-if", "p50>1ns"]),
        1,
    );
    assert!(
        stderr(&o).contains("threshold crossed: p50") && stderr(&o).contains("service time"),
        "{}",
        stderr(&o)
    );
    let o = run(
        vload()
            .arg("report")
            .arg(&out)
            .args(["--fail-if", "p99>1h,errors>50%"]),
        0,
    );
    assert!(stderr(&o).contains("thresholds held"), "{}", stderr(&o));

    // A term vload cannot read is refused before anything is sent.
    let o = run(
        vload()
            .args(["attack", "--fail-if", "p98>10ms"])
            .arg(origin.url()),
        2,
    );
    assert!(
        stderr(&o).contains("unknown metric 'p98'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_run_file_piped_from_attack_into_report_reads_back() {
    let _turn = shared();
    let origin = origin();
    // `-o -`: the run file on stdout (a pipe here), one line on stderr.
    let o = run(
        vload()
            .args([
                "attack",
                "-c",
                "2",
                "-d",
                "1s",
                "-t",
                "1",
                "--no-progress",
                "-o",
                "-",
            ])
            .arg(origin.url()),
        0,
    );
    let run_file = RunFile::from_json(&stdout(&o)).expect("stdout is the run file, whole");
    assert!(run_file.totals.completed > 0);
    // #48: down a pipe the reader reports it; printed here too, it came twice.
    let err = stderr(&o);
    assert!(
        err.contains("went down the pipe") && !err.contains("Latency"),
        "{err}"
    );
    let mut report = vload()
        .args(["report", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    report.stdin.take().unwrap().write_all(&o.stdout).unwrap();
    let out = report.wait_with_output().unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Quantiles keyed by name and unit, for `jq .report.latency.p99_ns`.
    let p50 = json["report"]["latency"]["p50_ns"].as_u64().unwrap();
    assert!(p50 >= json["report"]["latency"]["min_ns"].as_u64().unwrap());
}

#[test]
fn rates_and_flags_as_other_tools_spell_them() {
    // vegeta's rates are accepted (checked by the plan they make: refused later for the
    // unreachable port, not for the rate).
    for (rate, ok) in [("50/1s", true), ("1000/1m", true), ("5m", false)] {
        let o = vload()
            .args([
                "attack",
                "-r",
                rate,
                "-d",
                "1s",
                "--no-progress",
                "http://127.0.0.1:9/",
            ])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(!err.contains("invalid value"), ok, "{rate}: {err}");
        if !ok {
            assert!(
                err.contains("ambiguous") && err.contains("5M") && err.contains("5/m"),
                "{err}"
            );
        }
    }
    for (args, needle) in [
        (&["-z", "5s"][..], "-d/--duration"),
        (&["-q", "100"], "-r/--rate"),
        (&["-k"], "--requests-per-connection 1"),
        (&["-rate=50/1s"], "vegeta's -rate"),
    ] {
        let o = run(
            vload().arg("attack").args(args).arg("http://127.0.0.1:9/"),
            2,
        );
        let err = stderr(&o);
        assert!(
            err.contains(needle) && !err.contains("use '--"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_start_time_in_the_past_is_refused_or_with_shards_warned() {
    let _turn = shared();
    let origin = origin();
    let past = humantime::format_rfc3339_seconds(
        std::time::SystemTime::now() - std::time::Duration::from_secs(600),
    )
    .to_string();
    let o = run(
        vload()
            .args(["attack", "-d", "1s", "--start-at", &past])
            .arg(origin.url()),
        2,
    );
    assert!(
        stderr(&o).contains("was 10m") && stderr(&o).contains("ago: give a time ahead"),
        "{}",
        stderr(&o)
    );
    assert_eq!(origin.stats().requests_total, 0, "nothing was sent");
    let o = run(
        vload()
            .args(["attack", "-c", "2", "-d", "1s", "-t", "1", "--no-progress"])
            .args(["--shard", "1/2", "--start-at", &past])
            .arg(origin.url()),
        0,
    );
    assert!(stderr(&o).contains("WARNING: --start-at"), "{}", stderr(&o));
    assert!(origin.stats().requests_total > 0);
}

#[test]
fn completions_and_the_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(vload().args(["completions", shell]), 0);
        let script = stdout(&o);
        for word in ["attack", "compare", "--until-stable", "--fail-if"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
        if shell == "bash" {
            // The script parses in bash.
            let dir = Scratch::new("completions");
            let file = dir.path("vload.bash");
            std::fs::write(&file, script.as_bytes()).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(check.status.success(), "{}", stderr(&check));
        }
    }
    // See #35: the README's path is the one `--help` gives, and a bash that sources the
    // script completes vload.
    let help = stdout(&run(vload().args(["completions", "--help"]), 0));
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    for path in [
        "~/.local/share/bash-completion/completions/vload",
        "~/.zfunc/_vload",
        "~/.config/fish/completions/vload.fish",
    ] {
        assert!(help.contains(path), "--help names {path}: {help}");
    }
    assert!(
        readme
            .contains("vload completions bash > ~/.local/share/bash-completion/completions/vload"),
        "README installs where --help says"
    );
    let script = stdout(&run(vload().args(["completions", "bash"]), 0));
    let dir = Scratch::new("completions-source");
    let file = dir.path("vload.bash");
    std::fs::write(&file, script.as_bytes()).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}' && complete -p vload", file.display()))
        .output()
        .unwrap();
    assert!(
        check.status.success() && stdout(&check).contains("vload"),
        "{} {}",
        stdout(&check),
        stderr(&check)
    );

    let o = run(vload().args(["completions", "tcsh"]), 2);
    assert!(stderr(&o).contains("possible values"), "{}", stderr(&o));

    let o = run(vload().arg("man"), 0);
    let page = stdout(&o);
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "roff");
    for section in [
        "VLOAD ATTACK",
        "VLOAD COMPARE",
        "VLOAD REPORT",
        "EXAMPLES",
        "EXIT STATUS",
    ] {
        assert!(page.contains(section), "man page lacks {section}");
    }
    // See #35: examples in the manual and at the foot of each command's --help.
    assert!(page.contains("vload sweep \\-\\-rates") || page.contains("vload sweep --rates"));
    for command in ["attack", "sweep", "report", "compare", "plot", "origin"] {
        let help = stdout(&run(vload().args([command, "--help"]), 0));
        assert!(
            help.contains("Examples:") && help.contains(&format!("vload {command} ")),
            "{command} --help: {help}"
        );
    }
    assert!(page.contains("\\-\\-fail\\-if"), "options are listed");
}

/// The live line on a 60-column terminal (a pty from script(1)): a countdown for
/// `--start-at`, then elapsed/total and an ETA, never a line wider than the terminal. Off when
/// stderr is not a terminal.
#[test]
fn the_progress_line_fits_a_narrow_terminal_and_is_off_in_a_pipe() {
    let _turn = serial();
    let origin = origin();
    let dir = Scratch::new("progress");
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(3);
    let at = humantime::format_rfc3339_seconds(at).to_string();
    let command = format!(
        "stty cols 60 rows 20; '{}' attack -c 2 -d 2s -t 1 --start-at {at} -o '{}' {} > /dev/null",
        env!("CARGO_BIN_EXE_vload"),
        dir.path("run.json").display(),
        origin.url()
    );
    let o = run(
        std::process::Command::new("script").args(["-qec", &command, "/dev/null"]),
        0,
    );
    let screen = stdout(&o);
    // Every drawn state, with the erase-line escape taken out.
    let states: Vec<String> = screen
        .split(['\r', '\n'])
        .map(|s| s.replace("\x1b[2K", "").trim_end().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(
        states.iter().any(|s| s.starts_with("starting in 0:0")),
        "a countdown: {states:?}"
    );
    assert!(
        states
            .iter()
            .any(|s| s.starts_with("0:01/0:02") && s.contains("ETA 0:01")),
        "elapsed/total and ETA: {states:?}"
    );
    for state in states.iter().filter(|s| !s.starts_with("vload: ")) {
        assert!(
            state.chars().count() < 60,
            "wider than 60 columns: {state:?}"
        );
    }

    // Not a terminal: no live line at all.
    let o = run(
        vload()
            .args(["attack", "-c", "2", "-d", "1s", "-t", "1", "-o"])
            .arg(dir.path("run2.json"))
            .arg(origin.url()),
        0,
    );
    let err = stderr(&o);
    assert!(!err.contains('\r') && !err.contains("ETA"), "{err}");

    // See #35: in a log, a plain line every --progress-every, like k6's in CI.
    let o = run(
        vload()
            .args([
                "attack",
                "-r",
                "50",
                "-d",
                "3s",
                "--progress-every",
                "1s",
                "-o",
            ])
            .arg(dir.path("run3.json"))
            .arg(origin.url()),
        0,
    );
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("vload: progress "))
        .collect();
    assert!(lines.len() >= 2, "{err}");
    assert!(lines[0].starts_with("vload: progress 0:01/0:03"), "{err}");
    // The rate asked in each whole second: 50 on a quiet machine; 49 beside stress-ng at load
    // 14, when a request due at a second's edge was counted in the next. The last line may
    // be printed for the window's last instant alone ("0.0/s of 1.0/s" at load 16).
    for line in &lines[..lines.len() - 1] {
        let asked: f64 = line
            .split(" of ")
            .nth(1)
            .and_then(|rest| rest.split("/s").next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no asked rate in {line:?}"));
        assert!((45.0..=55.0).contains(&asked), "{line}");
    }
    assert!(!err.contains('\r') && !err.contains('█'), "{err}");
}

/// Verdicts and errors coloured on a terminal (a pty from script(1)); none with `NO_COLOR`
/// or in a pipe.
#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("colour");
    let file = dir.path("run.json");
    run(
        vload()
            .args(["attack", "-c", "2", "-d", "1s", "-t", "1", "-o"])
            .arg(&file)
            .arg(origin.url()),
        0,
    );
    let on_terminal = |no_color: bool, what: &str| {
        let mut script = std::process::Command::new("script");
        script.args(["-qec", what, "/dev/null"]);
        script.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        script.env("TERM", "xterm");
        if no_color {
            script.env("NO_COLOR", "1");
        }
        script.stdin(Stdio::null()).output().unwrap()
    };
    let report = format!(
        "'{}' report '{}'",
        env!("CARGO_BIN_EXE_vload"),
        file.display()
    );
    let coloured = stdout(&on_terminal(false, &report));
    assert!(
        coloured.contains("Client health \x1b["),
        "the health verdict coloured: {coloured}"
    );
    let plain = stdout(&on_terminal(true, &report));
    assert!(
        plain.contains("Client health") && !plain.contains('\x1b'),
        "{plain}"
    );
    let piped = stdout(&run(vload().arg("report").arg(&file), 0));
    assert!(!piped.contains('\x1b'), "{piped}");

    // An error line on a terminal: the tag coloured; with NO_COLOR: plain.
    let bad = format!("'{}' attack http://", env!("CARGO_BIN_EXE_vload"));
    let coloured = stdout(&on_terminal(false, &bad));
    assert!(coloured.contains("vload: \x1b["), "{coloured}");
    let plain = stdout(&on_terminal(true, &bad));
    assert!(
        plain.contains("vload: error:") && !plain.contains('\x1b'),
        "{plain}"
    );
}

/// See #30: `--fail-if 'errors>1%'` on a run of 404s said "thresholds held" and exited 0.
/// Success is what `--expect-status` names (2xx and 3xx by default), and every figure and
/// the exit code go by it.
#[test]
fn a_gate_fails_a_run_that_did_not_succeed() {
    let _turn = shared();
    let origin = origin();
    let dir = Scratch::new("gate");
    let url = format!("{}?status=404", origin.url());
    // Nothing succeeded: an error (exit 2), the report and run file kept.
    let out = dir.path("404.json");
    let o = run(
        vload()
            .args(["attack", "-n", "300", "-c", "2", "--no-progress"])
            .args(["--fail-if", "errors>1%", "-o"])
            .arg(&out)
            .arg(&url),
        2,
    );
    let err = stderr(&o);
    assert!(err.contains("no request succeeded"), "{err}");
    assert!(
        err.contains("300 x 404") && err.contains("--expect-status"),
        "{err}"
    );
    assert!(!err.contains("thresholds held"), "{err}");
    assert!(stdout(&o).contains("0.00%, 2xx-3xx"), "{}", stdout(&o));
    assert!(out.exists());
    // The same statuses expected: a success, and the gate holds.
    let o = run(
        vload()
            .args(["attack", "-n", "300", "-c", "2", "--no-progress"])
            .args(["--expect-status", "404", "--fail-if", "errors>1%"])
            .arg(&url),
        0,
    );
    assert!(stderr(&o).contains("thresholds held"), "{}", stderr(&o));
    // One request in ten a 404: errors>1% is crossed (exit 1), errors>20% holds.
    let urls = dir.path("urls.txt");
    let list = "/\n".repeat(9) + "/?status=404\n";
    std::fs::write(&urls, list).unwrap();
    for (gate, code) in [("errors>1%", 1), ("errors>20%", 0)] {
        let o = run(
            vload()
                .args(["attack", "-n", "100", "-c", "1", "-t", "1", "--no-progress"])
                .args(["--fail-if", gate, "--urls"])
                .arg(&urls)
                .arg(origin.url()),
            code,
        );
        if code == 1 {
            let err = stderr(&o);
            assert!(err.contains("errors 10.00% > 1.00%"), "{err}");
        }
    }
}

/// See #30: `--fail-if` takes fail conditions and `sweep --slo` pass conditions, and
/// `--fail-if 'p99<10s'` exited 0 on a run whose p99 was 31 s. Each refuses the form that
/// reads the other way, saying which sense it has.
#[test]
fn a_threshold_that_reads_the_other_way_is_refused() {
    for (args, says) in [
        (
            vec!["attack", "--fail-if", "p99<10s", "http://127.0.0.1:9/"],
            "write p99>10s",
        ),
        (
            vec!["attack", "--fail-if", "rate>9000", "http://127.0.0.1:9/"],
            "write rate<9000",
        ),
        (
            vec![
                "sweep",
                "--rates",
                "1k",
                "--slo",
                "p99>10ms",
                "http://127.0.0.1:9/",
            ],
            "write p99<10ms",
        ),
    ] {
        let o = run(vload().args(&args), 2);
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// The names of a text report's rows, in order, up to the client health (the checks that
/// follow vary with the run).
fn row_names(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("vload") && !l.starts_with('$'))
        .map(|l| l.split("  ").next().unwrap_or_default().trim().to_owned())
        .filter(|name| !name.is_empty())
        .take_while(|name| !name.starts_with("Checks"))
        .collect()
}

/// #48: the README's sample report had drifted from the output (rows missing, renamed). Its
/// rows are a real run's of the same command, by name and in order.
#[test]
fn the_readmes_sample_report_has_the_reports_rows() {
    let _turn = shared();
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let start = readme
        .find("```\n$ target/release/vload attack -d 5s\n")
        .expect("the sample report");
    let sample = &readme[start + 4..];
    let sample = &sample[..sample.find("```").unwrap()];
    let o = run(vload().args(["attack", "-d", "1s", "--no-progress"]), 0);
    let real = stdout(&o);
    let (want, got) = (row_names(&real), row_names(sample));
    assert!(want.len() >= 12, "{want:?}");
    assert_eq!(got, want, "README.md's sample against a real run:\n{real}");
}

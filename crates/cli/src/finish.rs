//! How every command that runs or reads an attack ends: the report printed, the run file
//! written (or rescued), the ledger checked, a run with no success refused, the thresholds
//! judged; and the exit code that says which.

use std::process::ExitCode;

use anyhow::Context as _;

use crate::{output, paint, parse};

/// `--fail-if`: one line on stderr per threshold the run crossed, and exit 1; a line saying
/// they held otherwise, so a CI log shows what was checked.
pub(crate) fn thresholds(
    run: &vload_schema::RunFile,
    fail_if: Option<&parse::FailIf>,
) -> anyhow::Result<ExitCode> {
    let Some(parse::FailIf(terms)) = fail_if else {
        return Ok(ExitCode::SUCCESS);
    };
    let breaches = vload_analyze::thresholds::breaches(terms, run).context("checking --fail-if")?;
    if breaches.is_empty() {
        let all: Vec<String> = terms.iter().map(|t| t.text()).collect();
        crate::paint::say!("vload: thresholds held: none of {} crossed", all.join(", "));
        return Ok(ExitCode::SUCCESS);
    }
    for breach in &breaches {
        crate::paint::say!("vload: threshold crossed: {}", breach.message);
    }
    Ok(ExitCode::from(1))
}

/// Prints the report, then writes the run file: the report first and always, so whatever
/// happens to the file, the numbers are shown. Exit 128 + the signal that interrupted it.
pub(crate) fn report_and_save(
    run: &vload_schema::RunFile,
    output: Option<&output::Destination>,
    signal: Option<i32>,
    (quiet, brief): (bool, bool),
) -> anyhow::Result<ExitCode> {
    let summary = vload_analyze::Summary::of(run).context("summarising the run")?;
    let report = if brief {
        vload_analyze::render::report::brief::render(&summary)
    } else {
        vload_analyze::render::report::text::render(&summary)
    };
    // With `-o -` the run file takes stdout, and the report goes to stderr.
    let report = vload_analyze::units::clean_lines(&report);
    let to_stdout = output.is_some_and(|o| *o == output::Destination::Stdout);
    let printed = if quiet {
        Ok(())
    } else if to_stdout && !brief && stdout_is_a_pipe() {
        // `-o - | vload report -`: the reader prints the report; printed here too, it came
        // twice (#48). One line says where it went.
        paint::say!(
            "vload: the run file went down the pipe ({} requests): the reader reports it (--brief prints the short report here too)",
            vload_analyze::units::count(run.totals.completed)
        );
        Ok(())
    } else if to_stdout {
        paint::write_report(std::io::stderr().lock(), &report)
    } else {
        paint::write_report(std::io::stdout().lock(), &report)
    };
    if let Some(destination) = output
        && !save_run(destination, run)
    {
        return Ok(ExitCode::from(2));
    }
    printed?;
    Ok(match signal {
        Some(signal) => ExitCode::from(128 + signal as u8),
        None => ExitCode::SUCCESS,
    })
}

/// True when stdout is a pipe (`vload attack -o - | ...`), not a file or a terminal.
fn stdout_is_a_pipe() -> bool {
    // SAFETY: fstat on stdout, a descriptor this process holds for its life.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: stat is a valid, writable struct.
    if unsafe { libc::fstat(1, &mut stat) } != 0 {
        return false;
    }
    stat.st_mode & libc::S_IFMT == libc::S_IFIFO
}

/// Checks a run file vload made against its own ledger (every request due in exactly one
/// place; at a constant rate, in the second it fell due in) before it is written: a file
/// that breaks it would be refused by every reader, so it is still written, for a bug
/// report, and the run exits 2.
pub(crate) fn ledger_balances(run: &vload_schema::RunFile) -> bool {
    match run
        .validate()
        .map_err(|e| e.to_string())
        .and_then(|()| run.check_seconds())
    {
        Ok(()) => true,
        Err(e) => {
            crate::paint::say!(
                "vload: error: this run's own account does not add up ({e}): a bug in vload; the run file is written as it is, for a report"
            );
            false
        }
    }
}

/// An attack in which no request succeeded (none answered with an expected status): the
/// server is down, unreachable or failing, and its numbers describe nothing to defend.
pub(crate) fn no_success(run: &vload_schema::RunFile) -> Option<anyhow::Error> {
    let t = &run.totals;
    if run.interrupted || t.successes(&run.plan) > 0 {
        return None;
    }
    let server = run
        .plan
        .server_address
        .as_deref()
        .unwrap_or(&run.plan.target);
    let responses: u64 = t.status_codes.values().sum();
    if responses > 0 {
        let statuses = t
            .status_codes
            .iter()
            .map(|(code, n)| format!("{n} x {code}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Some(anyhow::anyhow!(
            "no request succeeded: {responses} responses, none with an expected status ({statuses}; expected {}): check the URL, or widen --expect-status",
            run.plan.expected_text()
        ));
    }
    match t.errors.iter().max_by_key(|(_, e)| e.count) {
        Some((kind, first)) => Some(anyhow::anyhow!(
            "no request got a response ({} x {}, e.g. \"{}\"): check that the server at {server} is up and reachable",
            first.count,
            kind.as_str(),
            first.sample,
        )),
        None => Some(anyhow::anyhow!(
            "nothing was measured: no request completed in the measured window ({} due, {} never sent, {} open at the end)",
            t.intended,
            t.unsent,
            t.unfinished
        )),
    }
}

/// Writes the run file; when that fails (a full disk), says so in one line, saves it
/// elsewhere, and says where. Returns false on failure (the run then exits 2).
fn save_run(destination: &output::Destination, run: &vload_schema::RunFile) -> bool {
    let text = run.to_json();
    let error = match output::write(destination, &text, "run file") {
        Ok(()) => {
            crate::paint::say!(
                "vload: run file written to {}",
                destination.path().display()
            );
            return true;
        }
        Err(e) => format!("{e:#}"),
    };
    match output::rescue(&text, &run.run_id) {
        Ok(saved) => crate::paint::say!(
            "vload: error: {error}; the run was saved to {} instead",
            saved.display()
        ),
        Err(failures) => crate::paint::say!(
            "vload: error: {error}; no copy could be saved either ({}): the report above is all that is left of this run",
            failures.join("; ")
        ),
    }
    false
}

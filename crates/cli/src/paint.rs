//! Colour where it helps: verdicts, findings and errors. Everything is written through
//! anstream, which drops the colour when the stream is not a terminal, when `NO_COLOR` is
//! set (or `CLICOLOR=0`, `TERM=dumb`), and keeps it with `CLICOLOR_FORCE`.
//!
//! Colour is added after a report is laid out and cleaned of any control characters a run
//! file may carry, and only around whole words, so columns stay aligned and the text without
//! colour is byte for byte what a pipe gets.

use std::io::Write as _;

use anstyle::{AnsiColor, Style};

const GOOD: Style = AnsiColor::Green.on_default();
const NOTE: Style = AnsiColor::Yellow.on_default();
const BAD: Style = AnsiColor::Red.on_default().bold();
const DIM: Style = Style::new().dimmed();

/// Writes one line to stderr, its tag (`error:`, `warning:`, ...) coloured.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::paint::stderr_line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// `line` and a newline on stderr, through anstream.
pub(crate) fn stderr_line(line: &str) {
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{}", tagged(line));
}

/// Writes `text` (a laid-out report) to `out` with its verdicts coloured; the colour is
/// dropped when `out` is not a colour terminal.
pub(crate) fn write_report<W: anstream::stream::RawStream + anstream::stream::AsLockedWrite>(
    out: W,
    text: &str,
) -> std::io::Result<()> {
    let mut out = anstream::AutoStream::auto(out);
    out.write_all(report(text).as_bytes())?;
    out.flush()
}

fn paint(style: Style, word: &str) -> String {
    format!("{}{word}{}", style.render(), style.render_reset())
}

/// `vload: error: ...` with the tag coloured.
fn tagged(line: &str) -> String {
    const TAGS: &[(&str, Style)] = &[
        ("error:", BAD),
        ("warning:", NOTE),
        ("threshold crossed:", BAD),
        ("thresholds held:", GOOD),
        ("regression", BAD),
    ];
    let Some(rest) = line.strip_prefix("vload: ") else {
        return line.to_owned();
    };
    for (tag, style) in TAGS {
        if let Some(after) = rest.strip_prefix(tag) {
            return format!("vload: {}{after}", paint(*style, tag));
        }
    }
    line.to_owned()
}

/// The text of a report or a comparison with its verdict words coloured.
pub(crate) fn report(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut in_checks = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("Checks") {
            in_checks = true;
        } else if !line.starts_with(' ') {
            in_checks = false;
        }
        out.push_str(&paint_line(line, in_checks));
    }
    out
}

/// The label column of the text report.
const LABEL: usize = 14;

fn paint_line(line: &str, in_checks: bool) -> String {
    if line.starts_with("Client health ") {
        return paint_word_at(line, LABEL, |word| match word.trim_end_matches(':') {
            "ok" => Some(GOOD),
            "WARN" | "SERVER-LIMITED" | "CONNECTION-CAPPED" => Some(NOTE),
            "CLIENT-BOUND" | "MACHINE-BUSY" => Some(BAD),
            _ => None,
        });
    }
    if in_checks && line.len() > LABEL {
        return paint_word_at(line, LABEL, |word| match word {
            "ok" => Some(GOOD),
            "FAIL" => Some(BAD),
            "?" => Some(NOTE),
            _ => None,
        });
    }
    if let Some(rest) = line.strip_prefix("WARNING:") {
        return format!("{}{rest}", paint(NOTE.bold(), "WARNING:"));
    }
    if let Some(rest) = line.strip_prefix("note:") {
        return format!("{}{rest}", paint(DIM, "note:"));
    }
    // A comparison row ends in its verdict.
    let body = line.trim_end_matches('\n');
    for (verdict, style) in [
        ("B faster", GOOD),
        ("B better", GOOD),
        ("A faster", BAD),
        ("A better", BAD),
        ("small but real", NOTE),
        ("inconclusive", DIM),
    ] {
        if let Some(head) = body.strip_suffix(verdict)
            && head.ends_with("  ")
        {
            return format!("{head}{}{}", paint(style, verdict), &line[body.len()..]);
        }
    }
    line.to_owned()
}

/// `line` with the word starting at byte `at` coloured, if `style_of` gives it a style.
fn paint_word_at(line: &str, at: usize, style_of: impl Fn(&str) -> Option<Style>) -> String {
    let Some(rest) = line.get(at..) else {
        return line.to_owned();
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let word = &rest[..end];
    match style_of(word) {
        Some(style) => format!("{}{}{}", &line[..at], paint(style, word), &rest[end..]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        let mut out = Vec::new();
        let mut strip = anstream::StripStream::new(&mut out);
        strip.write_all(text.as_bytes()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn verdicts_are_coloured_and_nothing_else_changes() {
        let text = "\
Success       [ratio]                             100.00%
Client health CLIENT-BOUND: vload was the bottleneck (signal: thread_busy)
              - a worker thread was busy 99% of the time
Checks        ok   arrivals: sent on time
              FAIL not stationary: p50 rose 320%
              ?    p99: too few measured seconds
WARNING: A: 1 of 1 runs did not send the arrivals they planned
note: 1 + 1 runs
p50 *       74 µs     78 µs    +4.9%     —       —  1+1  inconclusive
p99         223 µs    334 µs   -49.7%    —       —  5+5  B faster
";
        let painted = report(text);
        assert_eq!(plain(&painted), text, "only colour is added");
        for (word, style) in [
            ("CLIENT-BOUND:", BAD),
            ("ok", GOOD),
            ("FAIL", BAD),
            ("?", NOTE),
            ("WARNING:", NOTE.bold()),
            ("inconclusive", DIM),
            ("B faster", GOOD),
        ] {
            assert!(painted.contains(&paint(style, word)), "{word}: {painted}");
        }
        // "ok" in the health findings or in a metric name is left alone.
        assert_eq!(
            report("Client health ok\n              - tokens ok\n"),
            format!(
                "Client health {}\n              - tokens ok\n",
                paint(GOOD, "ok")
            )
        );
    }

    #[test]
    fn stderr_tags_are_coloured() {
        assert_eq!(
            tagged("vload: error: bad URL"),
            format!("vload: {} bad URL", paint(BAD, "error:"))
        );
        assert_eq!(tagged("vload: attacking x"), "vload: attacking x");
    }
}

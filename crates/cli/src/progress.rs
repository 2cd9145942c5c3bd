//! The live progress line on stderr, redrawn once a second while an attack runs.
//!
//! indicatif draws it (off when stderr is not a terminal, cleared before the report, held
//! aside for warnings); what goes on it is chosen here so that it always fits on one line of
//! the terminal: the fields that matter most are kept and the rest left out, never wrapped.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vload_analyze::units::{count, duration_ns, rate};
use vload_engine::{Observer, Progress};

/// The width assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// The bar's narrowest width; it takes whatever the other fields leave of the line.
const BAR_CELLS: usize = 12;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProgressMode {
    /// One line redrawn in place, fitted to the terminal.
    Live,
    /// A plain line on stderr at most this often (stderr is a log, not a terminal).
    Every(Duration),
    /// Nothing.
    Off,
}

/// The progress line: live on a terminal, plain lines in a log, or nothing.
pub(crate) struct ProgressLine {
    bar: ProgressBar,
    mode: ProgressMode,
    /// When the last plain line was printed (`ProgressMode::Every`; zero before the first).
    last_plain: Duration,
}

impl ProgressLine {
    pub(crate) fn new(mode: ProgressMode) -> Self {
        let target = if mode == ProgressMode::Live {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        // The message is fitted to the width below; `wide_msg` is only the last guard.
        if let Ok(style) = ProgressStyle::with_template("{wide_msg}") {
            bar.set_style(style);
        }
        ProgressLine {
            bar,
            mode,
            last_plain: Duration::ZERO,
        }
    }

    /// Erases the line, so that what is printed next starts clean.
    pub(crate) fn clear(&self) {
        self.bar.finish_and_clear();
    }

    /// Runs `print` with the line taken down, then draws it again.
    pub(crate) fn suspend(&self, print: impl FnOnce()) {
        self.bar.suspend(print);
    }

    fn draw(&self, line: String) {
        if !self.bar.is_hidden() {
            self.bar.set_message(line);
        }
    }

    /// A plain line when `every` has passed since the last one.
    #[allow(clippy::print_stderr, reason = "the progress line in a log")]
    fn log(&mut self, p: &Progress, every: Duration) {
        // The first after `every`: a run shorter than that stays quiet.
        if p.elapsed >= self.last_plain + every {
            self.last_plain = p.elapsed;
            eprintln!("vload: progress {}", fields(p, usize::MAX, false));
        }
    }
}

fn width() -> usize {
    terminal_size::terminal_size_of(std::io::stderr())
        .map_or(DEFAULT_WIDTH, |(w, _)| usize::from(w.0))
}

impl Observer for ProgressLine {
    fn on_interval(&mut self, p: &Progress) {
        match self.mode {
            ProgressMode::Live => self.draw(fit(p, width())),
            ProgressMode::Every(every) => self.log(p, every),
            ProgressMode::Off => {}
        }
    }

    fn on_waiting(&mut self, until_start: Duration) {
        if !self.bar.is_hidden() {
            self.draw(countdown(until_start, width()));
        }
    }
}

/// The `--start-at` countdown line.
fn countdown(left: Duration, width: usize) -> String {
    let line = format!("starting in {} (--start-at)", clock(left.as_secs() + 1));
    if line.chars().count() < width {
        line
    } else {
        format!("start in {}", clock(left.as_secs() + 1))
    }
}

/// `75` as `1:15`, `3700` as `1:01:40`.
fn clock(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// How far the run is: (done so far as text, the fraction done, the time left).
fn position(p: &Progress) -> Option<(String, f64, Option<Duration>)> {
    if let Some(planned) = p.planned {
        let fraction = p.elapsed.as_secs_f64() / planned.as_secs_f64().max(1e-9);
        let left = planned.saturating_sub(p.elapsed);
        // The last interval may close a little after the planned end: shown as the end.
        let text = format!(
            "{}/{}",
            clock(p.elapsed.min(planned).as_secs()),
            clock(planned.as_secs())
        );
        return Some((text, fraction.min(1.0), Some(left)));
    }
    let planned = p.planned_requests.filter(|n| *n > 0)?;
    let fraction = (p.completed as f64 / planned as f64).min(1.0);
    let left = (p.rate_per_s > 0.0).then(|| {
        Duration::from_secs_f64(planned.saturating_sub(p.completed) as f64 / p.rate_per_s)
    });
    let text = format!("{}/{}", count(p.completed.min(planned)), count(planned));
    Some((text, fraction, left))
}

/// The progress line for `p`, at most `width - 1` columns: the most useful fields that fit,
/// the bar stretched over what is left.
fn fit(p: &Progress, width: usize) -> String {
    fields(p, width, true)
}

/// The fields of `p` that fit in `width - 1` columns, with a bar when `with_bar`.
fn fields(p: &Progress, width: usize, with_bar: bool) -> String {
    let latency = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| duration_ns(v as f64));
    let position = position(p);
    let head = match &position {
        Some((text, _, _)) => text.clone(),
        None => clock(p.elapsed.as_secs()),
    };
    let warmup = p.warmup.then(|| "warm-up".to_owned());
    let eta = position
        .as_ref()
        .and_then(|(_, _, left)| *left)
        .map(|left| format!("ETA {}", clock(left.as_secs())));
    let fraction = position.as_ref().map(|(_, fraction, _)| *fraction);
    let bar_field = fraction.filter(|_| with_bar).map(|f| bar(f, BAR_CELLS));
    // The rate asked beside the rate achieved (open loop): a client or server falling behind
    // shows as the gap.
    let rate_field = match p.asked_per_s {
        Some(asked) => format!("{} of {}", rate(p.rate_per_s), rate(asked)),
        None => rate(p.rate_per_s),
    };
    // In the order they are dropped last to first: what a user watches most goes first.
    let optional: [(usize, Option<String>); 8] = [
        (1, warmup),
        (3, Some(rate_field)),
        (5, Some(format!("p99 {}", latency(p.p99_ns)))),
        (6, Some(format!("errors {}", count(p.errors)))),
        (2, eta),
        (7, Some(format!("p50 {}", latency(p.p50_ns)))),
        (4, bar_field),
        (8, Some(format!("done {}", count(p.completed)))),
    ];
    let budget = width.saturating_sub(1);
    let mut used = head.chars().count();
    let mut kept: Vec<(usize, String)> = Vec::new();
    for (slot, field) in optional {
        let Some(field) = field else { continue };
        let cost = field.chars().count() + 2;
        if used + cost <= budget {
            used += cost;
            kept.push((slot, field));
        }
    }
    kept.sort_by_key(|(slot, _)| *slot);
    // What is left of the width goes to the bar.
    if let (Some(f), Some((_, field))) = (fraction, kept.iter_mut().find(|(slot, _)| *slot == 4)) {
        *field = bar(f, BAR_CELLS + budget.saturating_sub(used));
    }
    let mut line = head;
    for (_, field) in kept {
        line.push_str("  ");
        line.push_str(&field);
    }
    line
}

/// A bar of `cells` characters, `fraction` of them full.
fn bar(fraction: f64, cells: usize) -> String {
    let full = ((fraction.clamp(0.0, 1.0) * cells as f64).round() as usize).min(cells);
    format!("{}{}", "█".repeat(full), "░".repeat(cells - full))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress() -> Progress {
        Progress {
            elapsed: Duration::from_secs(12),
            planned: Some(Duration::from_secs(30)),
            planned_requests: None,
            warmup: false,
            completed: 1_234_567,
            errors: 12,
            rate_per_s: 123_456.0,
            asked_per_s: None,
            p50_ns: Some(1_234_000),
            p99_ns: Some(98_765_000),
            first_byte_p50_ns: None,
            transfer_p50_ns: None,
            ..Progress::default()
        }
    }

    #[test]
    fn the_line_fits_every_width_and_keeps_what_matters_most() {
        for width in [20, 40, 60, 80, 120, 200] {
            let line = fit(&progress(), width);
            assert!(
                line.chars().count() < width,
                "{width} columns: {line:?} ({} chars)",
                line.chars().count()
            );
        }
        let narrow = fit(&progress(), 60);
        assert!(narrow.starts_with("0:12/0:30"), "{narrow}");
        assert!(narrow.contains("/s") && narrow.contains("p99"), "{narrow}");
        let wide = fit(&progress(), 200);
        for field in ["ETA 0:18", "p50", "errors 12", "done 1,234,567", "█"] {
            assert!(wide.contains(field), "{field} in {wide}");
        }
    }

    /// See #35: the line stopped at about 95 columns on a 200-column terminal.
    #[test]
    fn the_bar_takes_the_width_the_fields_leave() {
        for width in [100, 200, 300] {
            let line = fit(&progress(), width);
            assert_eq!(line.chars().count(), width - 1, "{width}: {line}");
        }
    }

    /// See #35: an open loop shows the rate asked beside the rate achieved; a closed loop,
    /// which asks for none, only the rate.
    #[test]
    fn an_open_loop_shows_the_rate_asked_beside_the_rate_achieved() {
        let p = Progress {
            rate_per_s: 9_000.0,
            asked_per_s: Some(10_000.0),
            ..progress()
        };
        let line = fit(&p, 120);
        assert!(line.contains("9,000.0/s of 10,000.0/s"), "{line}");
        assert!(!fit(&progress(), 120).contains(" of "));
    }

    /// Plain lines for a log: no bar, no escapes, at most one per `every`.
    #[test]
    fn a_log_gets_a_plain_line_no_more_often_than_asked() {
        let line = fields(&progress(), usize::MAX, false);
        assert!(!line.contains('█') && !line.contains('\x1b'), "{line}");
        assert!(
            line.contains("ETA 0:18") && line.contains("done 1,234,567"),
            "{line}"
        );
        let mut log = ProgressLine::new(ProgressMode::Every(Duration::from_secs(10)));
        let mut printed = Vec::new();
        for s in 1..=25 {
            let before = log.last_plain;
            log.log(
                &Progress {
                    elapsed: Duration::from_secs(s),
                    ..progress()
                },
                Duration::from_secs(10),
            );
            if log.last_plain != before {
                printed.push(s);
            }
        }
        assert_eq!(printed, [10, 20]);
    }

    #[test]
    fn a_run_bounded_by_count_shows_requests_done_and_an_eta_from_the_rate() {
        let p = Progress {
            planned: None,
            planned_requests: Some(2_000_000),
            completed: 1_000_000,
            rate_per_s: 100_000.0,
            ..progress()
        };
        let line = fit(&p, 120);
        assert!(
            line.starts_with("1,000,000/2,000,000") && line.contains("ETA 0:10"),
            "{line}"
        );
        // Unbounded: elapsed only, no ETA.
        let p = Progress {
            planned: None,
            ..progress()
        };
        let line = fit(&p, 120);
        assert!(line.starts_with("0:12 ") && !line.contains("ETA"), "{line}");
    }

    #[test]
    fn the_countdown_counts_whole_seconds_up() {
        assert_eq!(
            countdown(Duration::from_millis(74_200), 80),
            "starting in 1:15 (--start-at)"
        );
        assert_eq!(countdown(Duration::from_secs(3699), 10), "start in 1:01:40");
    }
}

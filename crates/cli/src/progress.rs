//! The live progress line on stderr, drawn once a second while an attack runs.

use std::io::Write as _;

use vload_engine::{Observer, Progress};

/// The live progress line; drawn only when stderr is a terminal.
pub(crate) struct ProgressLine {
    enabled: bool,
    drawn: bool,
}

impl ProgressLine {
    pub(crate) fn new(enabled: bool) -> Self {
        ProgressLine {
            enabled,
            drawn: false,
        }
    }

    /// Erases the line, so that what is printed next starts clean.
    pub(crate) fn clear(&self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

impl Observer for ProgressLine {
    fn on_interval(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        use vload_analyze::units::{count, duration_ns, rate};
        let planned = p
            .planned
            .map(|d| format!("/{}s", d.as_secs()))
            .unwrap_or_default();
        let latency = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| duration_ns(v as f64));
        let phase = if p.warmup { " (warm-up)" } else { "" };
        let line = format!(
            "{}s{planned}{phase}  {}  done {}  p50 {}  p99 {}  errors {}",
            p.elapsed.as_secs(),
            rate(p.rate_per_s),
            count(p.completed),
            latency(p.p50_ns),
            latency(p.p99_ns),
            count(p.errors)
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }
}

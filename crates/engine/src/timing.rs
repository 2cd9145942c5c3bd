//! The origin's own time, read from a response's `Server-Timing` header (W3C Server
//! Timing): the `dur` of one metric, in milliseconds on the wire, in nanoseconds here.
//!
//! The metric's name is the attack's (`--server-timing`, [`DEFAULT_METRIC`] unless set); each
//! worker thread is told it before it runs ([`use_metric`]), so the three response parsers
//! (the HTTP/1.1 decoder, the HTTP/2 connection, hyper's) read it without carrying the plan.

use std::cell::RefCell;

/// The metric read unless `--server-timing` names another: what `vload origin` sends.
pub const DEFAULT_METRIC: &str = "app";

/// The longest time taken as an origin's: an hour (a larger one is a malformed header).
const MAX_MS: f64 = 3_600_000.0;

thread_local! {
    static METRIC: RefCell<Box<[u8]>> = RefCell::new(Box::from(DEFAULT_METRIC.as_bytes()));
}

/// Makes `name` the metric this thread's parsers read.
pub(crate) fn use_metric(name: &str) {
    METRIC.with_borrow_mut(|m| *m = Box::from(name.as_bytes()));
}

/// The `dur` of this thread's metric in one `Server-Timing` header value, if it names it
/// with a valid duration: `app;dur=12.5, db;dur=3` gives 12.5 ms for `app`.
pub(crate) fn origin_ns(value: &[u8]) -> Option<u64> {
    METRIC.with_borrow(|metric| duration_of(value, metric))
}

/// The `dur` of metric `metric` in `value`, in nanoseconds.
fn duration_of(value: &[u8], metric: &[u8]) -> Option<u64> {
    for entry in value.split(|b| *b == b',') {
        let mut parts = entry.split(|b| *b == b';');
        let name = parts.next()?.trim_ascii();
        if !name.eq_ignore_ascii_case(metric) {
            continue;
        }
        for param in parts {
            let Some((key, v)) = split_once(param, b'=') else {
                continue;
            };
            if !key.trim_ascii().eq_ignore_ascii_case(b"dur") {
                continue;
            }
            let v = v.trim_ascii();
            let v = v
                .strip_prefix(b"\"")
                .and_then(|v| v.strip_suffix(b"\""))
                .unwrap_or(v);
            let ms: f64 = std::str::from_utf8(v).ok()?.parse().ok()?;
            return (ms.is_finite() && (0.0..=MAX_MS).contains(&ms))
                .then(|| (ms * 1e6).round() as u64);
        }
        // The metric without a duration (`app;desc="x"`): no time, whatever follows.
        return None;
    }
    None
}

fn split_once(bytes: &[u8], at: u8) -> Option<(&[u8], &[u8])> {
    let i = bytes.iter().position(|b| *b == at)?;
    Some((&bytes[..i], &bytes[i + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_metrics_duration_is_read_in_nanoseconds() {
        let read = |v: &str, m: &str| duration_of(v.as_bytes(), m.as_bytes());
        assert_eq!(read("app;dur=12.5", "app"), Some(12_500_000));
        assert_eq!(
            read("db;dur=3, app;desc=\"x\";dur=0.25", "app"),
            Some(250_000)
        );
        assert_eq!(read("db;dur=3, APP ; dur = \"7\"", "app"), Some(7_000_000));
        assert_eq!(read("db;dur=3", "app"), None);
        assert_eq!(read("app", "app"), None);
        assert_eq!(read("app;desc=x", "app"), None);
        assert_eq!(read("app;dur=-1", "app"), None);
        assert_eq!(read("app;dur=abc", "app"), None);
        assert_eq!(read("app;dur=NaN", "app"), None);
        assert_eq!(read("app;dur=1e12", "app"), None);
        assert_eq!(read("origin;dur=4", "origin"), Some(4_000_000));
        assert_eq!(read("", "app"), None);
    }

    #[test]
    fn each_thread_reads_its_own_metric() {
        use_metric("origin");
        assert_eq!(origin_ns(b"app;dur=1, origin;dur=2"), Some(2_000_000));
        let other = std::thread::spawn(|| origin_ns(b"app;dur=1, origin;dur=2"));
        assert_eq!(other.join().unwrap(), Some(1_000_000));
        use_metric(DEFAULT_METRIC);
    }
}

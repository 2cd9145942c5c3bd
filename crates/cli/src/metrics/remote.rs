//! `--metrics-remote-write URL`: the same figures as the scrape, pushed to a receiver of
//! Prometheus's remote write 1.0 (Prometheus with `--web.enable-remote-write-receiver`,
//! Mimir, Thanos, VictoriaMetrics, an agent): a snappy-compressed protobuf `WriteRequest`
//! POSTed once a second and once more at the end, from a thread of its own, so a slow
//! receiver never holds up the attack. Each sample is one line of the text exposition, so
//! the names and labels are the scrape's exactly, with `job="vload"` added, as a scrape
//! would add it.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::exposition::{Tally, render};
use crate::server::fetch::HttpUrl;

/// Pushes the tally to a receiver until stopped.
pub(super) struct Pusher {
    stop: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pusher {
    pub(super) fn start(url: HttpUrl, tally: Arc<Mutex<Tally>>) -> anyhow::Result<Pusher> {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("vload-remote-write".into())
            .spawn(move || push_until(&url, &tally, &stopped))?;
        Ok(Pusher {
            stop,
            thread: Some(thread),
        })
    }

    /// Pushes the final figures and stops: waits for that push at most [`PUSH_BOUND`] and
    /// a little, then leaves a receiver that still holds it behind (the process exits).
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the receiver missed the final figures"
    )]
    pub(super) fn finish(mut self) {
        let _ = self.stop.send(());
        let Some(thread) = self.thread.take() else {
            return;
        };
        let until = std::time::Instant::now() + PUSH_BOUND + Duration::from_millis(200);
        while !thread.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if thread.is_finished() {
            let _ = thread.join();
        } else {
            crate::paint::say!(
                "vload: warning: --metrics-remote-write: the receiver did not take the final figures in time; vload exits without them"
            );
        }
    }
}

/// The whole of one push, connect to answer: a receiver that trickles or is silent costs
/// that push, never the run or the exit.
const PUSH_BOUND: Duration = Duration::from_secs(2);

/// Once a second, and once when told to stop.
#[allow(
    clippy::print_stderr,
    reason = "a warning that the receiver missed figures"
)]
fn push_until(url: &HttpUrl, tally: &Mutex<Tally>, stopped: &mpsc::Receiver<()>) {
    let mut warned = false;
    loop {
        let last = match stopped.recv_timeout(Duration::from_secs(1)) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => false,
        };
        let text = match tally.lock() {
            Ok(t) => render(&t, false),
            Err(_) => return,
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let body = snap::raw::Encoder::new()
            .compress_vec(&write_request(&text, now_ms))
            .unwrap_or_default();
        let headers = [
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ];
        if let Err(e) = url.post(&body, &headers, crate::side::Deadline::after(PUSH_BOUND))
            && !warned
        {
            warned = true;
            crate::paint::say!(
                "vload: warning: --metrics-remote-write http://{}{}: {e:#}; the run goes on, the receiver misses figures",
                url.authority,
                url.path
            );
        }
        if last {
            return;
        }
    }
}

/// The exposition's samples as a remote-write `WriteRequest`, each at `timestamp_ms`.
fn write_request(exposition: &str, timestamp_ms: i64) -> Vec<u8> {
    let mut request = Vec::new();
    for line in exposition.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, mut labels, value)) = parse_sample(line) else {
            continue;
        };
        labels.push(("__name__".to_owned(), name));
        labels.push(("job".to_owned(), "vload".to_owned()));
        labels.sort();
        let mut series = Vec::new();
        for (name, value) in &labels {
            let mut label = Vec::new();
            bytes_field(&mut label, 1, name.as_bytes());
            bytes_field(&mut label, 2, value.as_bytes());
            bytes_field(&mut series, 1, &label);
        }
        let mut sample = Vec::new();
        sample.push(1 << 3 | 1); // field 1, 64-bit: the value
        sample.extend_from_slice(&value.to_le_bytes());
        sample.push(2 << 3); // field 2, varint: the timestamp
        varint(&mut sample, timestamp_ms as u64);
        bytes_field(&mut series, 2, &sample);
        bytes_field(&mut request, 1, &series);
    }
    request
}

/// A sample's labels, by name.
type Labels = Vec<(String, String)>;

/// `name{k="v",...} value` (labels optional), as the exposition writes it.
fn parse_sample(line: &str) -> Option<(String, Labels, f64)> {
    let (series, value) = line.rsplit_once(' ')?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        v => v.parse().ok()?,
    };
    let Some((name, rest)) = series.split_once('{') else {
        return Some((series.to_owned(), Vec::new(), value));
    };
    let mut labels = Vec::new();
    let mut chars = rest.strip_suffix('}')?.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.push((key.trim_start_matches(',').to_owned(), value));
    }
    Some((name.to_owned(), labels, value))
}

/// A length-delimited protobuf field.
fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read_back_from_the_exposition() {
        let (name, labels, value) =
            parse_sample(r#"vload_errors_total{shard="0/2",kind="a\"b"} 7"#).unwrap();
        assert_eq!(name, "vload_errors_total");
        assert_eq!(
            labels,
            vec![
                ("shard".to_owned(), "0/2".to_owned()),
                ("kind".to_owned(), "a\"b".to_owned())
            ]
        );
        assert_eq!(value, 7.0);
        let (_, labels, value) = parse_sample(r#"x_bucket{le="+Inf"} +Inf"#).unwrap();
        assert_eq!(labels[0].1, "+Inf");
        assert!(value.is_infinite());
        assert_eq!(parse_sample("vload_warmup 1").unwrap().2, 1.0);
        assert!(parse_sample("garbage").is_none());
    }

    #[test]
    fn a_write_request_in_protobuf() {
        // One series: labels sorted, __name__ first, job added; a double and a timestamp.
        let request = write_request("# HELP a b\nup 1\n", 1_000);
        let mut expected = vec![0x0a]; // WriteRequest.timeseries
        let label = |name: &str, value: &str| {
            let mut l = vec![0x0a, name.len() as u8];
            l.extend_from_slice(name.as_bytes());
            l.extend_from_slice(&[0x12, value.len() as u8]);
            l.extend_from_slice(value.as_bytes());
            l
        };
        let mut series = Vec::new();
        for l in [label("__name__", "up"), label("job", "vload")] {
            series.push(0x0a);
            series.push(l.len() as u8);
            series.extend(l);
        }
        let mut sample = vec![0x09];
        sample.extend_from_slice(&1.0f64.to_le_bytes());
        sample.extend_from_slice(&[0x10, 0xe8, 0x07]); // 1000 as a varint
        series.push(0x12);
        series.push(sample.len() as u8);
        series.extend(sample);
        expected.push(series.len() as u8);
        expected.extend(series);
        assert_eq!(request, expected);
    }
}

//! What the metrics show, added up from the finished seconds ([`Tally`]), and how it is
//! written: the Prometheus text format or OpenMetrics ([`render`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Buckets a decade of the latency histogram.
pub(super) const PER_DECADE: i32 = 10;
/// The lowest bucket's upper bound, 10 µs, and the number of decades above it (to 100 s).
pub(super) const LOWEST_S: f64 = 1e-5;
pub(super) const DECADES: i32 = 7;

/// What the scrape shows, added up from the finished seconds.
#[derive(Default)]
pub(super) struct Tally {
    /// The constant labels, as `{shard="0/2"}` or empty.
    pub(super) labels: Vec<(&'static str, String)>,
    pub(super) warmup: bool,
    pub(super) intended: u64,
    pub(super) sent: u64,
    pub(super) completed: u64,
    pub(super) unsent: u64,
    pub(super) classes: [u64; 5],
    pub(super) errors: BTreeMap<String, u64>,
    pub(super) bytes_in: u64,
    pub(super) bytes_out: u64,
    pub(super) connections: u64,
    pub(super) in_flight: u64,
    /// Responses the cache served (hits, stale among them), forwarded, and served stale.
    pub(super) cache: [u64; 3],
    /// The stale answers' ages so far.
    pub(super) stale_ages: vload_schema::StaleAges,
    /// Tiered caches: each layer's requests reached, hits and forwards (nearest the client
    /// first).
    pub(super) layers: Vec<[u64; 3]>,
    /// A stampede's events so far: events, sent, leaders, waiters, no cache word, failed,
    /// unfinished.
    pub(super) stampede: Option<[u64; 7]>,
    /// Counts by bucket (not cumulative), the last one above the highest bound.
    pub(super) buckets: Vec<u64>,
    pub(super) latency_sum_s: f64,
    pub(super) latency_count: u64,
    /// The client's health as it goes: sends more than 1 ms late (measured window), the
    /// last second's p99 dispatch lag, queue wait and hiccup, vload's own CPU time, and the
    /// run's verdict once it has ended.
    pub(super) late_sends: u64,
    pub(super) dispatch_lag_p99_s: f64,
    pub(super) queue_wait_p99_s: f64,
    pub(super) hiccup_p99_s: f64,
    pub(super) client_cpu_s: f64,
    /// The health word (`ok`, `CLIENT-BOUND`, ...) once the run has ended; `running` before.
    pub(super) verdict: Option<&'static str>,
}

/// The latency buckets' upper bounds, in seconds: ten a decade from 10 µs to 100 s.
pub(super) fn bounds() -> Vec<f64> {
    (0..=DECADES * PER_DECADE)
        .map(|k| LOWEST_S * 10f64.powf(f64::from(k) / f64::from(PER_DECADE)))
        .collect()
}

/// The figures in the Prometheus text format, or OpenMetrics (counters' family names
/// without `_total`, and `# EOF` at the end).
pub(super) fn render(t: &Tally, openmetrics: bool) -> String {
    let mut w = Exposition {
        out: String::new(),
        openmetrics,
        labels: &t.labels,
    };
    counters(&mut w, t);
    w.gauge(
        "vload_requests_in_flight",
        "Requests sent and not yet ended, at the last second's end.",
        t.in_flight,
    );
    w.gauge(
        "vload_warmup",
        "1 while the warm-up runs (its requests are not counted here).",
        u64::from(t.warmup),
    );
    w.latency(t);
    health(&mut w, t);
    if openmetrics {
        w.out.push_str("# EOF\n");
    }
    w.out
}

/// The counters: requests, responses, errors, bytes, connections.
fn counters(w: &mut Exposition<'_>, t: &Tally) {
    w.counter(
        "vload_requests_due_total",
        "Requests due in the measured window (open loop) or taken up (closed loop).",
        &[(&[], t.intended)],
    );
    w.counter(
        "vload_requests_sent_total",
        "Requests written.",
        &[(&[], t.sent)],
    );
    w.counter(
        "vload_requests_ended_total",
        "Requests that ended, with a response or an error.",
        &[(&[], t.completed)],
    );
    w.counter(
        "vload_requests_unsent_total",
        "Requests due and never sent (vload frozen or stopped first).",
        &[(&[], t.unsent)],
    );
    let names = [
        [("class", "1xx")],
        [("class", "2xx")],
        [("class", "3xx")],
        [("class", "4xx")],
        [("class", "5xx")],
    ];
    let classes: Vec<(&[(&str, &str)], u64)> = names
        .iter()
        .zip(t.classes)
        .map(|(l, n)| (&l[..], n))
        .collect();
    w.counter(
        "vload_responses_total",
        "Responses by status class.",
        &classes,
    );
    let kinds: Vec<[(&str, &str); 1]> = t.errors.keys().map(|k| [("kind", k.as_str())]).collect();
    let errors: Vec<(&[(&str, &str)], u64)> = kinds
        .iter()
        .zip(t.errors.values())
        .map(|(l, n)| (&l[..], *n))
        .collect();
    w.counter("vload_errors_total", "Failed requests by kind.", &errors);
    w.counter(
        "vload_received_bytes_total",
        "Response body bytes received.",
        &[(&[], t.bytes_in)],
    );
    w.counter(
        "vload_sent_bytes_total",
        "Request body bytes sent.",
        &[(&[], t.bytes_out)],
    );
    w.counter(
        "vload_connections_opened_total",
        "Connections opened.",
        &[(&[], t.connections)],
    );
    cache(w, t);
}

/// The cache's word on the responses, and each layer's of a path of caches.
fn cache(w: &mut Exposition<'_>, t: &Tally) {
    let states = [
        [("state", "hit")],
        [("state", "miss")],
        [("state", "stale")],
    ];
    let samples: Vec<(&[(&str, &str)], u64)> = states
        .iter()
        .zip(t.cache)
        .map(|(l, n)| (&l[..], n))
        .collect();
    w.counter(
        "vload_cache_responses_total",
        "Responses by the cache's word: hit (stale included), miss (miss or pass), stale (served past its freshness).",
        &samples,
    );
    if t.stale_ages.answers > 0 {
        let ages = &t.stale_ages;
        w.counter(
            "vload_cache_stale_aged_responses_total",
            "Stale responses that carried an Age.",
            &[(&[], ages.answers)],
        );
        w.counter_f64(
            "vload_cache_stale_age_seconds_total",
            "The sum of the stale responses' Age: over the count, their mean age.",
            ages.sum_s as f64,
        );
        w.gauge(
            "vload_cache_stale_age_max_seconds",
            "The oldest stale response's Age so far.",
            ages.max_s,
        );
    }
    if let Some(s) = t.stampede {
        w.counter(
            "vload_stampede_events_total",
            "Stampede events fired (--stampede).",
            &[(&[], s[0])],
        );
        let fates = [
            [("fate", "leader")],
            [("fate", "waiter")],
            [("fate", "unclassified")],
            [("fate", "failed")],
            [("fate", "unfinished")],
        ];
        let samples: Vec<(&[(&str, &str)], u64)> = fates
            .iter()
            .zip(&s[2..])
            .map(|(l, n)| (&l[..], *n))
            .collect();
        w.counter(
            "vload_stampede_requests_total",
            "Stampede requests by fate: the cache forwarded it (leader), served it itself (waiter), said nothing, failed, unfinished.",
            &samples,
        );
    }
    if t.layers.is_empty() {
        return;
    }
    let names: Vec<String> = (1..=t.layers.len()).map(|i| i.to_string()).collect();
    let labels: Vec<[(&str, &str); 2]> = names
        .iter()
        .flat_map(|n| {
            ["reached", "hit", "forwarded"].map(|o| [("layer", n.as_str()), ("outcome", o)])
        })
        .collect();
    let samples: Vec<(&[(&str, &str)], u64)> = labels
        .iter()
        .zip(t.layers.iter().flatten())
        .map(|(l, n)| (&l[..], *n))
        .collect();
    w.counter(
        "vload_cache_layer_requests_total",
        "Tiered caches: requests that reached each layer (1 nearest the client), that it answered, that it forwarded.",
        &samples,
    );
}

/// The client's health: what says whether the figures measure the server.
fn health(w: &mut Exposition<'_>, t: &Tally) {
    w.counter(
        "vload_late_sends_total",
        "Requests sent more than 1 ms after they fell due (open loop, measured window).",
        &[(&[], t.late_sends)],
    );
    for (name, help, value) in [
        (
            "vload_dispatch_lag_p99_seconds",
            "The last second's p99 of how late requests were dispatched (open loop).",
            t.dispatch_lag_p99_s,
        ),
        (
            "vload_queue_wait_p99_seconds",
            "The last second's p99 of how long queued requests waited for a connection.",
            t.queue_wait_p99_s,
        ),
        (
            "vload_hiccup_p99_seconds",
            "The last second's p99 of how late vload's own timers fired (its threads starved).",
            t.hiccup_p99_s,
        ),
    ] {
        w.gauge_f64(name, help, value);
    }
    w.counter_f64(
        "vload_client_cpu_seconds_total",
        "CPU time vload's own process used.",
        t.client_cpu_s,
    );
    let name = "vload_client_health";
    let verdict = t.verdict.unwrap_or("running");
    let labels = w.labels(&[("verdict", verdict)]);
    let _ = writeln!(
        w.out,
        "# HELP {name} The run's client-health verdict (ok, CLIENT-BOUND, MACHINE-BUSY, CONNECTION-CAPPED, SERVER-LIMITED) once it has ended; running before.\n# TYPE {name} gauge\n{name}{labels} 1"
    );
}

/// Writes metric families, each sample with the endpoint's constant labels first.
struct Exposition<'a> {
    out: String,
    openmetrics: bool,
    labels: &'a [(&'static str, String)],
}

impl Exposition<'_> {
    /// `{k="v",...}` of the constant labels and `extra`, escaped; empty when there are none.
    fn labels(&self, extra: &[(&str, &str)]) -> String {
        let all: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain(extra.iter().copied())
            .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect();
        if all.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", all.join(","))
        }
    }

    fn counter(&mut self, name: &str, help: &str, samples: &[(&[(&str, &str)], u64)]) {
        let family = if self.openmetrics {
            name.trim_end_matches("_total")
        } else {
            name
        };
        let _ = writeln!(self.out, "# HELP {family} {help}\n# TYPE {family} counter");
        for (extra, value) in samples {
            let labels = self.labels(extra);
            let _ = writeln!(self.out, "{name}{labels} {value}");
        }
    }

    fn gauge_f64(&mut self, name: &str, help: &str, value: f64) {
        let labels = self.labels(&[]);
        let _ = writeln!(
            self.out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{labels} {value}"
        );
    }

    fn counter_f64(&mut self, name: &str, help: &str, value: f64) {
        let family = if self.openmetrics {
            name.trim_end_matches("_total")
        } else {
            name
        };
        let labels = self.labels(&[]);
        let _ = writeln!(
            self.out,
            "# HELP {family} {help}\n# TYPE {family} counter\n{name}{labels} {value}"
        );
    }

    fn gauge(&mut self, name: &str, help: &str, value: u64) {
        let labels = self.labels(&[]);
        let _ = writeln!(
            self.out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{labels} {value}"
        );
    }

    /// The run's latency as a histogram: cumulative buckets, sum and count.
    fn latency(&mut self, t: &Tally) {
        let name = "vload_latency_seconds";
        let _ = writeln!(
            self.out,
            "# HELP {name} The run's own latency: response time from the intended send (open loop) or service time (closed loop).\n# TYPE {name} histogram"
        );
        let mut cumulative = 0;
        for (bound, n) in bounds().iter().zip(&t.buckets) {
            cumulative += n;
            let labels = self.labels(&[("le", &format!("{bound:.6e}"))]);
            let _ = writeln!(self.out, "{name}_bucket{labels} {cumulative}");
        }
        cumulative += t.buckets.last().copied().unwrap_or(0);
        let labels = self.labels(&[("le", "+Inf")]);
        let _ = writeln!(self.out, "{name}_bucket{labels} {cumulative}");
        let labels = self.labels(&[]);
        let _ = writeln!(self.out, "{name}_sum{labels} {}", t.latency_sum_s);
        let _ = writeln!(self.out, "{name}_count{labels} {}", t.latency_count);
    }
}

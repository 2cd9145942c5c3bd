//! The collector: merges workers' intervals in order, keeps totals, writes the interval log.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder, Tag};
use vload_schema::{HistogramSettings, Interval, LatencyRecord};

use crate::record::{Distribution, IntervalStats, StageStats};
use crate::worker::{WorkerMsg, WorkerSummary};
use crate::{EngineError, Observer, Progress};

/// What the collector hands back once every worker has finished.
#[derive(Debug)]
pub(crate) struct Collected {
    pub(crate) intervals: Vec<Interval>,
    /// Merged over the measured intervals (warm-up excluded).
    pub(crate) totals: IntervalStats,
    /// A rate plan's stages, by index (warm-up stage included).
    pub(crate) stages: Vec<StageStats>,
    pub(crate) summaries: Vec<WorkerSummary>,
}

/// The interval log as it is written: each interval is held until the next one comes, so
/// the last, partial one is written with its true length. Warm-up intervals are left out,
/// so the log alone sums to the run's counts.
struct Hlog<'a, 'b> {
    writer: HlogWriter<'a, 'b>,
    held: Option<(u32, IntervalStats)>,
}

/// Fixed facts the collector needs.
#[derive(Debug)]
pub(crate) struct CollectSetup {
    pub(crate) workers: u32,
    pub(crate) t0: Instant,
    pub(crate) warmup: Duration,
    pub(crate) planned: Option<Duration>,
    pub(crate) planned_requests: Option<u64>,
    pub(crate) open_loop: bool,
    pub(crate) started_at: SystemTime,
}

pub(crate) fn record_of(d: &Distribution) -> LatencyRecord {
    LatencyRecord {
        histogram: d.encode(),
        moments: d.moments,
    }
}

type HlogWriter<'a, 'b> = IntervalLogWriter<'a, 'b, BufWriter<File>, V2DeflateSerializer>;

/// Receives until every worker is done. A failure to write the interval log costs the log,
/// never the run: the observer is told and the attack goes on.
pub(crate) fn collect(
    rx: &Receiver<WorkerMsg>,
    setup: &CollectSetup,
    observer: &mut dyn Observer,
    hlog: Option<(File, &std::path::Path)>,
) -> Result<Collected, EngineError> {
    let mut inbox = Inbox::new(setup.workers as usize);
    let mut state = Tally::new(setup);
    let mut log_file = hlog.map(|(file, path)| (BufWriter::new(file), path));
    let mut serializer = V2DeflateSerializer::new();
    let mut log = match &mut log_file {
        Some((writer, path)) => Some(
            Hlog::begin(writer, &mut serializer, setup.started_at).map_err(|error| {
                EngineError::Hlog {
                    path: path.to_path_buf(),
                    error,
                }
            })?,
        ),
        None => None,
    };
    while !inbox.all_finished() {
        let Ok(msg) = rx.recv() else { break };
        if let Some(summary) = inbox.receive(msg) {
            state.summaries.push(summary);
        }
        while let Some((index, mut parts)) = inbox.next_ready() {
            state.keep_stages(&mut parts.measured);
            state.keep_stages(&mut parts.warmup);
            if let Some(stats) = state.finalize(index, parts, observer)
                && let Some(hlog) = &mut log
            {
                let held = hlog.hold(index, stats, setup.open_loop);
                keep_or_drop(&mut log, held, observer);
            }
        }
    }
    let collected = state.finish();
    if let Some(hlog) = &mut log {
        let length = collected.intervals.last().map_or(1.0, |i| i.duration_s);
        let flushed = hlog.flush_held(length, setup.open_loop);
        keep_or_drop(&mut log, flushed, observer);
    }
    drop(log);
    if let Some((mut writer, _)) = log_file {
        let flushed = writer.flush().map_err(|e| e.to_string());
        keep_or_drop(&mut None, flushed, observer);
    }
    Ok(collected)
}

/// Drops the interval log after a failed write, telling the observer why.
fn keep_or_drop(
    log: &mut Option<Hlog<'_, '_>>,
    written: Result<(), String>,
    observer: &mut dyn Observer,
) {
    if let Err(why) = written {
        *log = None;
        observer.on_warning(&format!(
            "the interval log (--hlog) could not be written and is incomplete: {why}; the run goes on"
        ));
    }
}

/// Workers' intervals as they arrive, released in order once every worker still running has
/// reported each.
struct Inbox {
    reported: Vec<Option<u32>>,
    finished: Vec<bool>,
    partial: BTreeMap<u32, Parts>,
}

/// One interval's records: the measured window's requests, and the warm-up's.
struct Parts {
    measured: IntervalStats,
    warmup: IntervalStats,
}

impl Inbox {
    fn new(workers: usize) -> Self {
        Inbox {
            reported: vec![None; workers],
            finished: vec![false; workers],
            partial: BTreeMap::new(),
        }
    }

    fn all_finished(&self) -> bool {
        self.finished.iter().all(|f| *f)
    }

    /// Files a message; returns a finished worker's summary.
    fn receive(&mut self, msg: WorkerMsg) -> Option<WorkerSummary> {
        match msg {
            WorkerMsg::Interval {
                worker,
                index,
                stats,
                warmup,
            } => {
                let parts = self.partial.entry(index).or_insert_with(|| {
                    let settings = HistogramSettings::default();
                    Parts {
                        measured: IntervalStats::new(&settings),
                        warmup: IntervalStats::new(&settings),
                    }
                });
                parts.measured.absorb(*stats);
                if let Some(warmup) = warmup {
                    parts.warmup.absorb(*warmup);
                }
                self.reported[worker as usize] = Some(index);
                None
            }
            WorkerMsg::Done(summary) => {
                self.finished[summary.worker as usize] = true;
                Some(*summary)
            }
        }
    }

    /// The earliest interval every running worker has reported, merged.
    fn next_ready(&mut self) -> Option<(u32, Parts)> {
        let entry = self.partial.first_entry()?;
        let index = *entry.key();
        let ready = self
            .finished
            .iter()
            .zip(&self.reported)
            .all(|(finished, reported)| *finished || reported.is_some_and(|r| r >= index));
        ready.then(|| (index, entry.remove()))
    }
}

impl<'a, 'b> Hlog<'a, 'b> {
    fn begin(
        writer: &'a mut BufWriter<File>,
        serializer: &'b mut V2DeflateSerializer,
        started_at: SystemTime,
    ) -> std::io::Result<Self> {
        let writer = IntervalLogWriterBuilder::new()
            .add_comment(
                "vload interval log: tags resp (response time, open loop), svc (service time), \
                 lag (dispatch lag, open loop), hiccup; values in ns; warm-up left out",
            )
            .with_start_time(started_at)
            .with_base_time(started_at)
            .with_max_value_divisor(1e6)
            .begin_log_with(writer, serializer)?;
        Ok(Hlog { writer, held: None })
    }

    /// Writes the interval held so far (a whole second) and holds this one.
    fn hold(&mut self, index: u32, stats: IntervalStats, open_loop: bool) -> Result<(), String> {
        self.flush_held(1.0, open_loop)?;
        self.held = Some((index, stats));
        Ok(())
    }

    /// Writes the held interval with this length in seconds.
    fn flush_held(&mut self, length_s: f64, open_loop: bool) -> Result<(), String> {
        match self.held.take() {
            Some((index, stats)) => {
                write_hlog(&mut self.writer, index, length_s, &stats, open_loop)
            }
            None => Ok(()),
        }
    }
}

struct Tally<'a> {
    setup: &'a CollectSetup,
    intervals: Vec<Interval>,
    totals: IntervalStats,
    /// Everything so far, warm-up included: for the progress line only.
    everything: IntervalStats,
    stages: Vec<StageStats>,
    summaries: Vec<WorkerSummary>,
    /// Measured requests' events seen in an interval of the warm-up (a worker noticed the
    /// second's end late): they go to the first measured interval.
    early: IntervalStats,
    /// The last warm-up interval's record, and where it is: warm-up requests that ended
    /// after the warm-up are added to it, so that the measured intervals hold only the
    /// measured window's requests and sum to the totals.
    last_warmup: Option<(usize, IntervalStats)>,
    /// The last interval's client-health signals, for the observer.
    signals: crate::ClientSignals,
}

impl<'a> Tally<'a> {
    fn new(setup: &'a CollectSetup) -> Self {
        let settings = HistogramSettings::default();
        Tally {
            setup,
            intervals: Vec::new(),
            totals: IntervalStats::new(&settings),
            everything: IntervalStats::new(&settings),
            stages: Vec::new(),
            summaries: Vec::new(),
            early: IntervalStats::new(&settings),
            last_warmup: None,
            signals: crate::ClientSignals::default(),
        }
    }

    /// Moves an interval's stage records into the stages' own (not into the totals).
    fn keep_stages(&mut self, stats: &mut IntervalStats) {
        for (index, stage) in std::mem::take(&mut stats.stages) {
            let index = index as usize;
            if self.stages.len() <= index {
                let settings = HistogramSettings::default();
                self.stages
                    .resize_with(index + 1, || StageStats::new(&settings));
            }
            self.stages[index].merge(&stage);
        }
    }

    /// Adds interval `index`; returns its measured record, `None` for a warm-up interval.
    fn finalize(
        &mut self,
        index: u32,
        parts: Parts,
        observer: &mut dyn Observer,
    ) -> Option<IntervalStats> {
        let start_s = f64::from(index);
        let warmup = start_s < self.setup.warmup.as_secs_f64();
        self.everything.merge(&parts.measured);
        self.everything.merge(&parts.warmup);
        let kept = if warmup {
            let (mut measured, mut stats) = (parts.measured, parts.warmup);
            // In flight at the second's end: the one count of the interval, whatever window.
            stats.in_flight = std::mem::take(&mut measured.in_flight);
            self.early.merge(&measured);
            self.last_warmup = Some((self.intervals.len(), stats.clone()));
            self.intervals
                .push(interval_of(index, &stats, true, self.setup.open_loop));
            self.signals = signals(&stats);
            None
        } else {
            if let Some((_, last)) = &mut self.last_warmup {
                let mut late = parts.warmup;
                late.in_flight = 0;
                last.merge(&late);
            }
            let mut measured = parts.measured;
            measured.absorb(std::mem::replace(
                &mut self.early,
                IntervalStats::new(&HistogramSettings::default()),
            ));
            self.totals.merge(&measured);
            self.intervals
                .push(interval_of(index, &measured, false, self.setup.open_loop));
            self.signals = signals(&measured);
            Some(measured)
        };
        self.progress(index, warmup, observer);
        kept
    }

    /// Tells the observer what the run has done so far.
    fn progress(&self, index: u32, warmup: bool, observer: &mut dyn Observer) {
        let so_far = if self.setup.open_loop {
            &self.everything.response
        } else {
            &self.everything.service
        };
        let last = self.intervals.last();
        observer.on_interval(&Progress {
            elapsed: Duration::from_secs(u64::from(index) + 1),
            planned: self.setup.planned.map(|p| p + self.setup.warmup),
            planned_requests: self.setup.planned_requests,
            warmup,
            completed: self.everything.completed,
            errors: self.everything.error_total(),
            rate_per_s: last.map_or(0.0, |i| i.completed as f64),
            asked_per_s: self
                .setup
                .open_loop
                .then(|| last.map_or(0.0, |i| i.intended as f64)),
            p50_ns: so_far.quantile(0.5),
            p99_ns: so_far.quantile(0.99),
            first_byte_p50_ns: self.everything.first_byte.quantile(0.5),
            transfer_p50_ns: self.everything.transfer.quantile(0.5),
            client: self.signals,
        });
        if let Some(interval) = last {
            observer.on_record(interval);
        }
    }

    fn finish(mut self) -> Collected {
        let open = self.setup.open_loop;
        // Warm-up requests that ended after the warm-up, in the last warm-up interval.
        if let Some((at, stats)) = self.last_warmup.take() {
            let start_s = self.intervals[at].start_s;
            self.intervals[at] = interval_of(start_s as u32, &stats, true, open);
        }
        // Measured requests' events with no measured interval after them (the run ended in
        // the warm-up): an interval of their own, so that nothing is lost.
        if self.early.completed + self.early.sent + self.early.intended > 0 {
            let index = self.setup.warmup.as_secs() as u32;
            self.totals.merge(&self.early);
            let mut interval = interval_of(index, &self.early, false, open);
            interval.duration_s = 0.0;
            self.intervals.push(interval);
        }
        // The last interval is usually shorter than a second.
        let end = self.summaries.iter().map(|s| s.end).max();
        if let (Some(end), Some(last)) = (end, self.intervals.last_mut()) {
            let end_s = end.saturating_duration_since(self.setup.t0).as_secs_f64();
            last.duration_s = (end_s - last.start_s).clamp(0.0, 1.0);
        }
        Collected {
            intervals: self.intervals,
            totals: self.totals,
            stages: self.stages,
            summaries: self.summaries,
        }
    }
}

/// The run file's record of interval `index`.
/// One interval's client-health signals.
fn signals(stats: &IntervalStats) -> crate::ClientSignals {
    crate::ClientSignals {
        late_sends: stats.late_sends,
        unsent: stats.unsent,
        dispatch_lag_p99_ns: stats.dispatch_lag.quantile(0.99),
        queue_wait_p99_ns: stats.queue_wait.quantile(0.99),
        hiccup_p99_ns: stats.hiccup.quantile(0.99),
    }
}

/// The layers' counts as the run file keeps them: up to the last layer any request reached.
pub(crate) fn layers(counts: &[[u64; 3]]) -> Vec<vload_schema::LayerCounts> {
    let used = counts.iter().rposition(|c| c[0] > 0).map_or(0, |i| i + 1);
    counts[..used]
        .iter()
        .map(|c| vload_schema::LayerCounts {
            reached: c[0],
            hits: c[1],
            misses: c[2],
        })
        .collect()
}

fn interval_of(index: u32, stats: &IntervalStats, warmup: bool, open: bool) -> Interval {
    let primary = if open {
        &stats.response
    } else {
        &stats.service
    };
    Interval {
        start_s: f64::from(index),
        duration_s: 1.0,
        warmup,
        intended: stats.intended,
        sent: stats.sent,
        completed: stats.completed,
        errors: stats.errors_by_kind().collect(),
        status_classes: stats.status_classes(),
        bytes_in: stats.bytes_in,
        bytes_out: stats.bytes_out,
        connections_opened: stats.connections_opened,
        in_flight: stats.in_flight,
        unsent: stats.unsent,
        unfinished: stats.unfinished,
        stray_closes: stats.stray,
        hits: stats.cache[0],
        misses: stats.cache[1],
        stale: stats.stale,
        stale_ages: stats.stale_ages.counted(),
        layers: layers(&stats.layers),
        purged_hits: stats.watched[0],
        purged_misses: stats.watched[1],
        latency: record_of(primary),
        server_cpu_s: None,
        server: None,
    }
}

fn write_hlog(
    log: &mut HlogWriter<'_, '_>,
    index: u32,
    length_s: f64,
    stats: &IntervalStats,
    open_loop: bool,
) -> Result<(), String> {
    let start = Duration::from_secs(u64::from(index));
    let second = Duration::from_secs_f64(length_s.clamp(0.0, 1.0));
    let mut tagged = vec![("svc", &stats.service), ("hiccup", &stats.hiccup)];
    if open_loop {
        tagged.insert(0, ("resp", &stats.response));
        tagged.push(("lag", &stats.dispatch_lag));
    }
    for (tag, d) in tagged {
        log.write_histogram(&d.histogram(), start, second, Tag::new(tag))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

//! Per-worker recording: what happened in one interval, and how it merges.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use vload_schema::{ErrorKind, HistogramSettings, Moments, StatusClasses, new_histogram};

use crate::cache::CacheClass;

/// Every error kind, in a fixed order for array indexing: schema's own list.
pub(crate) const ERROR_KINDS: [ErrorKind; ErrorKind::ALL.len()] = ErrorKind::ALL;

pub(crate) fn kind_index(kind: ErrorKind) -> usize {
    ERROR_KINDS
        .iter()
        .position(|k| *k == kind)
        .expect("ERROR_KINDS lists every kind")
}

/// A histogram and the exact moments of the same values.
///
/// The histogram is allocated at the first value: most of an interval's eight distributions
/// never see a value in a given run (a closed loop records service time and hiccups only).
#[derive(Debug, Clone)]
pub(crate) struct Distribution {
    histogram: Option<Histogram<u64>>,
    layout: HistogramSettings,
    pub(crate) moments: Moments,
    /// Values above the histogram's range (recorded at its maximum).
    pub(crate) out_of_range: u64,
}

impl Distribution {
    pub(crate) fn new(settings: &HistogramSettings) -> Self {
        Distribution {
            histogram: None,
            layout: *settings,
            moments: Moments::new(),
            out_of_range: 0,
        }
    }

    /// The histogram, allocated on first use.
    fn counts(&mut self) -> &mut Histogram<u64> {
        let layout = self.layout;
        self.histogram.get_or_insert_with(|| new_histogram(&layout))
    }

    /// The histogram as it is, or an empty one of the same layout when nothing was recorded.
    pub(crate) fn histogram(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        match &self.histogram {
            Some(h) => std::borrow::Cow::Borrowed(h),
            None => std::borrow::Cow::Owned(new_histogram(&self.layout)),
        }
    }

    /// The value at quantile `q`, clamped to the exact range; `None` when empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        self.histogram
            .as_ref()
            .filter(|h| !h.is_empty())
            .map(|h| self.moments.clamp(h.value_at_quantile(q)))
    }

    #[inline]
    pub(crate) fn record(&mut self, value_ns: u64) {
        self.moments.record(value_ns);
        let histogram = self.counts();
        if histogram.record(value_ns.max(1)).is_err() {
            histogram.saturating_record(value_ns);
            self.out_of_range += 1;
        }
    }

    /// Records `count` copies of one value.
    pub(crate) fn record_n(&mut self, value_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.moments.record_n(value_ns, count);
        let histogram = self.counts();
        if histogram.record_n(value_ns.max(1), count).is_err() {
            histogram.saturating_record_n(value_ns, count);
            self.out_of_range += count;
        }
    }

    pub(crate) fn merge(&mut self, other: &Distribution) {
        if let Some(theirs) = &other.histogram
            && !theirs.is_empty()
        {
            self.counts()
                .add(theirs)
                .expect("histograms share one layout");
        }
        self.moments.merge(&other.moments);
        self.out_of_range += other.out_of_range;
    }

    /// [`Distribution::merge`] of a distribution no longer needed: into an empty one its
    /// histogram moves rather than being copied into a new allocation.
    pub(crate) fn absorb(&mut self, mut other: Distribution) {
        if self.histogram.is_none() {
            self.histogram = other.histogram.take();
            self.moments.merge(&other.moments);
            self.out_of_range += other.out_of_range;
        } else {
            self.merge(&other);
        }
    }

    /// The histogram encoded for the run file. An empty one is encoded once per thread and
    /// layout (the encoding of nothing is the same every interval).
    pub(crate) fn encode(&self) -> vload_schema::EncodedHistogram {
        thread_local! {
            static EMPTY: std::cell::RefCell<Option<(HistogramSettings, vload_schema::EncodedHistogram)>> =
                const { std::cell::RefCell::new(None) };
        }
        let encode = |h: &Histogram<u64>| {
            vload_schema::EncodedHistogram::encode(h).expect("in-memory encoding does not fail")
        };
        match &self.histogram {
            Some(h) => encode(h),
            None => EMPTY.with_borrow_mut(|cached| match cached {
                Some((layout, encoded)) if *layout == self.layout => encoded.clone(),
                _ => {
                    let encoded = encode(&new_histogram(&self.layout));
                    *cached = Some((self.layout, encoded.clone()));
                    encoded
                }
            }),
        }
    }

    /// An empty distribution with the same layout, for swapping.
    pub(crate) fn fresh(&self) -> Self {
        Distribution::new(&self.layout)
    }
}

/// Everything recorded during one interval on one worker (or merged across workers).
#[derive(Debug, Clone)]
pub(crate) struct IntervalStats {
    settings: HistogramSettings,
    pub(crate) intended: u64,
    pub(crate) sent: u64,
    pub(crate) completed: u64,
    /// Responses by status code 0..=999.
    pub(crate) status: Box<[u64; 1000]>,
    pub(crate) errors: [u64; ERROR_KINDS.len()],
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    /// Bytes read off the connections (heads and framing included).
    pub(crate) wire_in: u64,
    pub(crate) connections_opened: u64,
    pub(crate) in_flight: u64,
    pub(crate) late_sends: u64,
    /// Due, never sent: the client was frozen or stopped before it could send them.
    pub(crate) unsent: u64,
    /// Sent (or being sent: their connection was being made) and neither answered nor
    /// failed when the worker stopped waiting for them.
    pub(crate) unfinished: u64,
    /// Connections closed because the server sent bytes nobody asked for after a complete
    /// response (a body on a 204 or 304, a Content-Length shorter than the body).
    pub(crate) stray: u64,
    /// Misses whose `Server-Timing` claimed more than their own wait for the first byte.
    pub(crate) timing_beyond_wait: u64,
    /// Request timeouts whose whole answer was waiting when vload looked.
    pub(crate) answered_late: u64,
    /// Connections closed without carrying a request.
    pub(crate) unused: u64,
    /// Requests that timed out waiting for a connection (also counted as request timeouts).
    pub(crate) queue_timeouts: u64,
    /// Open loop: requests that waited for a free connection.
    pub(crate) queued: u64,
    /// Open loop: requests that fell due with every connection vload may open in use.
    pub(crate) capped: u64,
    pub(crate) cache: [u64; 3],
    /// Of the hits, those served stale (past their freshness).
    pub(crate) stale: u64,
    /// The ages of the stale answers.
    pub(crate) stale_ages: vload_schema::StaleAges,
    /// Tiered caches: each layer's requests reached, hits and misses.
    pub(crate) layers: [[u64; 3]; crate::cache::Layers::MOST],
    /// Hits and misses of the watched objects ([`crate::AttackPlan::watched_objects`]).
    pub(crate) watched: [u64; 2],
    pub(crate) cache_sources: [u64; 4],
    pub(crate) response: Distribution,
    pub(crate) service: Distribution,
    pub(crate) dispatch_lag: Distribution,
    pub(crate) hiccup: Distribution,
    /// Primary latency of cache hits and of classified non-hits.
    pub(crate) hit: Distribution,
    pub(crate) miss: Distribution,
    /// TLS handshake times of the connections opened.
    pub(crate) tls_handshake: Distribution,
    /// TCP connect times of the connections opened.
    pub(crate) tcp_connect: Distribution,
    /// How long queued requests waited for a connection.
    pub(crate) queue_wait: Distribution,
    /// Each response's wait for its first byte and its transfer.
    pub(crate) first_byte: Distribution,
    pub(crate) transfer: Distribution,
    /// Misses with the origin's own time: that time, and the first byte's wait beyond it.
    pub(crate) origin: Distribution,
    pub(crate) proxy_added: Distribution,
    /// A rate plan's stages with something recorded in this interval, by stage index.
    pub(crate) stages: Vec<(u32, Box<StageStats>)>,
}

/// What one stage of a rate plan saw: each request counts in the stage its intended send
/// fell in, wherever it completed; `done_during` counts successes by when they arrived.
#[derive(Debug, Clone)]
pub(crate) struct StageStats {
    pub(crate) intended: u64,
    pub(crate) sent: u64,
    pub(crate) completed: u64,
    pub(crate) unsent: u64,
    pub(crate) unfinished: u64,
    pub(crate) late_sends: u64,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// Of the hits, those served stale.
    pub(crate) stale: u64,
    /// The ages of the stale answers.
    pub(crate) stale_ages: vload_schema::StaleAges,
    /// Successful responses that arrived while the stage ran, whichever stage they were due
    /// in: the throughput the server achieved during it.
    pub(crate) done_during: u64,
    pub(crate) status: BTreeMap<u16, u64>,
    pub(crate) errors: [u64; ERROR_KINDS.len()],
    pub(crate) response: Distribution,
    pub(crate) service: Distribution,
}

impl StageStats {
    pub(crate) fn new(settings: &HistogramSettings) -> Self {
        StageStats {
            intended: 0,
            sent: 0,
            completed: 0,
            unsent: 0,
            unfinished: 0,
            late_sends: 0,
            bytes_in: 0,
            bytes_out: 0,
            hits: 0,
            misses: 0,
            stale: 0,
            stale_ages: Default::default(),
            done_during: 0,
            status: BTreeMap::new(),
            errors: [0; ERROR_KINDS.len()],
            response: Distribution::new(settings),
            service: Distribution::new(settings),
        }
    }

    pub(crate) fn merge(&mut self, other: &StageStats) {
        self.intended += other.intended;
        self.sent += other.sent;
        self.completed += other.completed;
        self.unsent += other.unsent;
        self.unfinished += other.unfinished;
        self.late_sends += other.late_sends;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.hits += other.hits;
        self.misses += other.misses;
        self.stale += other.stale;
        self.stale_ages.merge(&other.stale_ages);
        self.done_during += other.done_during;
        for (code, n) in &other.status {
            *self.status.entry(*code).or_default() += n;
        }
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.response.merge(&other.response);
        self.service.merge(&other.service);
    }

    pub(crate) fn errors_by_kind(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ERROR_KINDS
            .iter()
            .zip(self.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
    }

    #[inline]
    pub(crate) fn count_error(&mut self, kind: ErrorKind) {
        self.errors[kind_index(kind)] += 1;
    }
}

impl IntervalStats {
    pub(crate) fn new(settings: &HistogramSettings) -> Self {
        let d = Distribution::new(settings);
        IntervalStats {
            settings: *settings,
            intended: 0,
            sent: 0,
            completed: 0,
            status: Box::new([0; 1000]),
            errors: [0; ERROR_KINDS.len()],
            bytes_in: 0,
            bytes_out: 0,
            wire_in: 0,
            connections_opened: 0,
            in_flight: 0,
            late_sends: 0,
            unsent: 0,
            unfinished: 0,
            stray: 0,
            timing_beyond_wait: 0,
            answered_late: 0,
            unused: 0,
            queue_timeouts: 0,
            queued: 0,
            capped: 0,
            cache: [0; 3],
            stale: 0,
            stale_ages: Default::default(),
            layers: [[0; 3]; crate::cache::Layers::MOST],
            watched: [0; 2],
            cache_sources: [0; 4],
            response: d.fresh(),
            service: d.fresh(),
            dispatch_lag: d.fresh(),
            hit: d.fresh(),
            tls_handshake: d.fresh(),
            tcp_connect: d.fresh(),
            queue_wait: d.fresh(),
            first_byte: d.fresh(),
            transfer: d.fresh(),
            origin: d.fresh(),
            proxy_added: d.fresh(),
            miss: d.fresh(),
            hiccup: d,
            stages: Vec::new(),
        }
    }

    /// Takes the recorded stats, leaving empty ones with the same layout.
    pub(crate) fn take(&mut self) -> IntervalStats {
        let fresh = IntervalStats::new(&self.settings);
        std::mem::replace(self, fresh)
    }

    pub(crate) fn merge(&mut self, other: &IntervalStats) {
        self.intended += other.intended;
        self.sent += other.sent;
        self.completed += other.completed;
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.wire_in += other.wire_in;
        self.connections_opened += other.connections_opened;
        self.in_flight += other.in_flight;
        self.late_sends += other.late_sends;
        self.unsent += other.unsent;
        self.unfinished += other.unfinished;
        self.stray += other.stray;
        self.timing_beyond_wait += other.timing_beyond_wait;
        self.answered_late += other.answered_late;
        self.unused += other.unused;
        self.queue_timeouts += other.queue_timeouts;
        self.queued += other.queued;
        self.capped += other.capped;
        for (a, b) in self.watched.iter_mut().zip(other.watched) {
            *a += b;
        }
        for (a, b) in self.cache.iter_mut().zip(other.cache) {
            *a += b;
        }
        self.stale += other.stale;
        self.stale_ages.merge(&other.stale_ages);
        for (a, b) in self.layers.iter_mut().zip(other.layers) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (a, b) in self.cache_sources.iter_mut().zip(other.cache_sources) {
            *a += b;
        }
        self.response.merge(&other.response);
        self.service.merge(&other.service);
        self.dispatch_lag.merge(&other.dispatch_lag);
        self.hiccup.merge(&other.hiccup);
        self.hit.merge(&other.hit);
        self.miss.merge(&other.miss);
        self.tls_handshake.merge(&other.tls_handshake);
        self.tcp_connect.merge(&other.tcp_connect);
        self.queue_wait.merge(&other.queue_wait);
        self.first_byte.merge(&other.first_byte);
        self.transfer.merge(&other.transfer);
        self.origin.merge(&other.origin);
        self.proxy_added.merge(&other.proxy_added);
        for (index, stage) in &other.stages {
            self.stage(*index).merge(stage);
        }
    }

    /// [`IntervalStats::merge`] of stats no longer needed: their histograms move into
    /// empty ones rather than being copied (the collector's first merge of each interval),
    /// so each histogram is allocated once, by the worker that records into it.
    pub(crate) fn absorb(&mut self, mut other: IntervalStats) {
        let settings = other.settings;
        let taken = other
            .distributions()
            .map(|d| std::mem::replace(d, Distribution::new(&settings)));
        self.merge(&other);
        for (mine, theirs) in self.distributions().into_iter().zip(taken) {
            mine.absorb(theirs);
        }
    }

    fn distributions(&mut self) -> [&mut Distribution; 13] {
        [
            &mut self.response,
            &mut self.service,
            &mut self.dispatch_lag,
            &mut self.hiccup,
            &mut self.hit,
            &mut self.miss,
            &mut self.tls_handshake,
            &mut self.tcp_connect,
            &mut self.queue_wait,
            &mut self.first_byte,
            &mut self.transfer,
            &mut self.origin,
            &mut self.proxy_added,
        ]
    }

    /// The recorder of stage `index`, made on first use (a worker has one or two stages
    /// in flight at a time).
    #[inline]
    pub(crate) fn stage(&mut self, index: u32) -> &mut StageStats {
        let at = match self.stages.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                let fresh = Box::new(StageStats::new(&self.settings));
                self.stages.push((index, fresh));
                self.stages.len() - 1
            }
        };
        &mut self.stages[at].1
    }

    #[inline]
    pub(crate) fn count_status(&mut self, status: u16) {
        self.status[usize::from(status.min(999))] += 1;
    }

    #[inline]
    pub(crate) fn count_error(&mut self, kind: ErrorKind) {
        self.errors[kind_index(kind)] += 1;
    }

    #[inline]
    pub(crate) fn count_cache(&mut self, (class, source, layers, age): crate::cache::Verdict) {
        self.cache[class.coarse()] += 1;
        for (i, layer) in layers.reached() {
            let counts = &mut self.layers[i];
            counts[0] += 1;
            counts[1] += u64::from(layer.is_hit());
            counts[2] += u64::from(layer.is_miss());
        }
        self.stale += u64::from(class == CacheClass::Stale);
        if let Some(age) = age {
            self.stale_ages.add(u64::from(age.seconds()));
        }
        if let Some(source) = source {
            self.cache_sources[source as usize] += 1;
        }
    }

    pub(crate) fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub(crate) fn errors_by_kind(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ERROR_KINDS
            .iter()
            .zip(self.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
    }

    pub(crate) fn status_codes(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code as u16, *n))
    }

    pub(crate) fn status_classes(&self) -> StatusClasses {
        let mut classes = StatusClasses::default();
        for (code, n) in self.status_codes() {
            classes.count_n(code, n);
        }
        classes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_leaves_an_empty_recorder_with_the_same_layout() {
        let mut stats = IntervalStats::new(&HistogramSettings::default());
        stats.sent = 3;
        stats.count_status(200);
        stats.count_error(ErrorKind::Reset);
        stats.service.record(1_000);
        let taken = stats.take();
        assert_eq!(taken.sent, 3);
        assert_eq!(taken.service.moments.n, 1);
        assert_eq!(stats.sent, 0);
        assert_eq!(stats.error_total(), 0);
        assert_eq!(stats.status_codes().count(), 0);
        assert!(stats.service.quantile(0.5).is_none());
    }

    #[test]
    fn merge_adds_counts_and_histograms() {
        let settings = HistogramSettings::default();
        let (mut a, mut b) = (IntervalStats::new(&settings), IntervalStats::new(&settings));
        a.count_status(200);
        b.count_status(200);
        b.count_status(503);
        a.service.record(10);
        b.service.record(30);
        b.count_error(ErrorKind::ConnectRefused);
        a.merge(&b);
        assert_eq!(a.status_codes().collect::<Vec<_>>(), [(200, 2), (503, 1)]);
        assert_eq!(a.status_classes().s2xx, 2);
        assert_eq!(a.status_classes().s5xx, 1);
        assert_eq!(a.service.histogram().len(), 2);
        assert_eq!(a.service.moments.mean(), Some(20.0));
        assert_eq!(
            a.errors_by_kind().collect::<Vec<_>>(),
            [(ErrorKind::ConnectRefused, 1)]
        );
    }

    #[test]
    fn stages_merge_by_index() {
        let settings = HistogramSettings::default();
        let (mut a, mut b) = (IntervalStats::new(&settings), IntervalStats::new(&settings));
        a.stage(1).intended = 2;
        b.stage(2).intended = 5;
        b.stage(1).intended = 3;
        *b.stage(1).status.entry(200).or_default() += 1;
        b.stage(1).count_error(ErrorKind::Reset);
        a.merge(&b);
        assert_eq!(a.stage(1).intended, 5);
        assert_eq!(a.stage(2).intended, 5);
        assert_eq!(a.stage(1).status[&200], 1);
        assert_eq!(
            a.stage(1).errors_by_kind().collect::<Vec<_>>(),
            [(ErrorKind::Reset, 1)]
        );
        assert!(a.take().stages.len() == 2 && a.stages.is_empty());
    }

    #[test]
    fn values_beyond_the_range_are_counted_not_lost() {
        let mut d = Distribution::new(&HistogramSettings::default());
        d.record(120_000_000_000);
        assert_eq!(d.out_of_range, 1);
        assert_eq!(d.histogram().len(), 1);
        assert_eq!(d.moments.max_ns, 120_000_000_000);
    }
}

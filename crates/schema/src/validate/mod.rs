//! A run file must agree with itself before anything is computed from it.
//!
//! A file from another machine, a truncated copy or a hand edit can carry numbers that
//! contradict each other (errors above the completed count, a histogram whose count is not
//! its moments' count, a layout other than the plan's). Reports built on such a file look
//! valid and are wrong, so reading refuses it, naming the field.

use crate::{HistogramSettings, LatencyRecord, RunFile, SchemaError};

mod breakdown;
mod fields;
mod ledger;
mod seconds;
mod unique;

use fields::{MAX_COUNT, MAX_INTERVAL_COUNT, bounded, finite, invalid, seconds};
use ledger::Ledger;
pub(crate) use unique::reject_duplicate_keys;

impl LatencyRecord {
    /// Checks that the histogram decodes with the run's layout and agrees with the moments.
    ///
    /// # Errors
    /// [`SchemaError::Invalid`] naming `field`.
    pub fn validate(&self, field: &str) -> Result<(), SchemaError> {
        let h = self.histogram.decode().map_err(|e| match e {
            SchemaError::Histogram(why) => invalid(format!("{field}.histogram"), why),
            other => other,
        })?;
        let m = &self.moments;
        bounded(&format!("{field}.moments.n"), m.n, MAX_COUNT)?;
        if h.len() != m.n {
            return Err(invalid(
                format!("{field}.moments.n"),
                format!("{} values, but the histogram holds {}", m.n, h.len()),
            ));
        }
        for (name, value) in [("mean_ns", m.mean_ns), ("m2_ns2", m.m2_ns2)] {
            finite(&format!("{field}.moments.{name}"), value)?;
        }
        if m.n > 0 && m.min_ns > m.max_ns {
            return Err(invalid(
                format!("{field}.moments"),
                format!("min {} ns above max {} ns", m.min_ns, m.max_ns),
            ));
        }
        Ok(())
    }
}

impl RunFile {
    /// Checks that the file agrees with itself: layouts, counts, durations, histograms.
    ///
    /// # Errors
    /// [`SchemaError::Invalid`] naming the first field that contradicts the rest.
    pub fn validate(&self) -> Result<(), SchemaError> {
        if self.plan.histogram != HistogramSettings::default() {
            let h = &self.plan.histogram;
            return Err(invalid(
                "plan.histogram",
                format!(
                    "layout {}..{} ns at {} digits is not the one vload records (1..60000000000 ns at 3 digits)",
                    h.lowest_ns, h.highest_ns, h.sigfig
                ),
            ));
        }
        self.validate_numbers()?;
        self.validate_totals()?;
        self.validate_latency()?;
        self.validate_stages()?;
        self.validate_breakdowns()?;
        self.validate_checks()?;
        self.validate_stampede()?;
        for (i, interval) in self.intervals.iter().enumerate() {
            let field = format!("intervals[{i}]");
            seconds(&format!("{field}.start_s"), interval.start_s)?;
            finite(&format!("{field}.duration_s"), interval.duration_s)?;
            if interval.duration_s > 1.0 + 1e-6 {
                return Err(invalid(
                    format!("{field}.duration_s"),
                    format!("{} s, but intervals are at most 1 s", interval.duration_s),
                ));
            }
            if let Some(cpu) = interval.server_cpu_s {
                finite(&format!("{field}.server_cpu_s"), cpu)?;
            }
            let s = &interval.status_classes;
            let counts = [
                interval.intended,
                interval.sent,
                interval.completed,
                interval.bytes_in,
                interval.bytes_out,
                interval.connections_opened,
                interval.in_flight,
                interval.unsent,
                interval.hits,
                interval.misses,
                s.s1xx,
                s.s2xx,
                s.s3xx,
                s.s4xx,
                s.s5xx,
            ];
            for n in counts.into_iter().chain(interval.errors.values().copied()) {
                bounded(&field, n, MAX_INTERVAL_COUNT)?;
            }
            layers_hold(&format!("{field}.layers"), &interval.layers)?;
            if interval.stale > interval.hits {
                return Err(invalid(
                    format!("{field}.stale"),
                    "more responses served stale than hits",
                ));
            }
            if interval.purged_hits > interval.hits || interval.purged_misses > interval.misses {
                return Err(invalid(
                    format!("{field}.purged_hits"),
                    "more hits or misses on the purged objects than in all",
                ));
            }
            interval.latency.validate(&format!("{field}.latency"))?;
        }
        if self.schema_version >= 3 {
            self.validate_ledger()?;
        }
        Ok(())
    }

    /// The arrival sample and the checks: bounded in size, finite numbers.
    fn validate_checks(&self) -> Result<(), SchemaError> {
        if let Some(a) = &self.arrivals {
            if a.gaps.len() > crate::MAX_ARRIVAL_SAMPLE {
                return Err(invalid(
                    "arrivals.gaps",
                    format!(
                        "{} values, at most {}",
                        a.gaps.len(),
                        crate::MAX_ARRIVAL_SAMPLE
                    ),
                ));
            }
            if let Some(i) = a.gaps.iter().position(|g| !g.is_finite() || *g < 0.0) {
                return Err(invalid(
                    format!("arrivals.gaps[{i}]"),
                    "not a finite gap >= 0",
                ));
            }
        }
        if let Some(u) = &self.until_stable {
            if !(u.target > 0.0 && u.target <= 1.0) {
                return Err(invalid("until_stable.target", "not a share in (0, 1]"));
            }
            seconds("until_stable.max_duration_s", u.max_duration_s)?;
            if let Some(after) = u.converged_after_s {
                seconds("until_stable.converged_after_s", after)?;
            }
            if let Some(w) = u.half_width {
                finite("until_stable.half_width", w)?;
            }
        }
        if self.checks.len() > 64 {
            return Err(invalid("checks", "more than 64 checks"));
        }
        for (i, c) in self.checks.iter().enumerate() {
            let field = format!("checks[{i}]");
            if c.message.len() > 1_000 || c.name.len() > 100 {
                return Err(invalid(field, "name or message too long"));
            }
            // A statistic or an interval may be negative (a change that fell); a p-value is
            // a probability, a batch a length.
            for v in c
                .statistic
                .into_iter()
                .chain(c.interval.into_iter().flat_map(|(a, b)| [a, b]))
            {
                if !v.is_finite() {
                    return Err(invalid(&field, format!("{v} is not a finite number")));
                }
            }
            if let Some(p) = c.p_value
                && !(0.0..=1.0).contains(&p)
            {
                return Err(invalid(&field, format!("p-value {p} is not in [0, 1]")));
            }
            if let Some(b) = c.batch_s {
                seconds(&field, b)?;
            }
        }
        Ok(())
    }

    /// A rate plan's stages or a sweep's steps: finite times and rates, bounded counts, no
    /// more errors than completions, histograms that decode within bounds.
    fn validate_stages(&self) -> Result<(), SchemaError> {
        for (i, stage) in self.stages.iter().enumerate() {
            let field = format!("stages[{i}]");
            seconds(&format!("{field}.start_s"), stage.start_s)?;
            seconds(&format!("{field}.duration_s"), stage.duration_s)?;
            for (name, rate) in [
                ("from_rate_per_s", stage.from_rate_per_s),
                ("to_rate_per_s", stage.to_rate_per_s),
                ("throughput_per_s", stage.throughput_per_s),
            ] {
                finite(&format!("{field}.{name}"), rate)?;
            }
            let counts = [
                stage.intended,
                stage.sent,
                stage.completed,
                stage.unsent,
                stage.late_sends,
                stage.bytes_in,
                stage.bytes_out,
                stage.hits,
                stage.misses,
            ];
            let errors = stage
                .errors
                .values()
                .try_fold(0u64, |sum, n| sum.checked_add(*n));
            for n in counts
                .into_iter()
                .chain(stage.status_codes.values().copied())
            {
                bounded(&field, n, MAX_COUNT)?;
            }
            if stage.stale > stage.hits {
                return Err(invalid(
                    format!("{field}.stale"),
                    "more responses served stale than hits",
                ));
            }
            if stage.stale_ages.is_some_and(|a| a.answers > stage.stale) {
                return Err(invalid(
                    format!("{field}.stale_ages"),
                    "more stale ages than stale answers",
                ));
            }
            if errors.is_none_or(|e| e > stage.completed) {
                return Err(invalid(
                    format!("{field}.errors"),
                    "more errors than completed requests",
                ));
            }
            stage.response.validate(&format!("{field}.response"))?;
            stage.service.validate(&format!("{field}.service"))?;
        }
        Ok(())
    }

    fn validate_numbers(&self) -> Result<(), SchemaError> {
        let (p, w, h) = (&self.plan, &self.window, &self.client_health);
        let mut spans = vec![
            ("plan.warmup_s", p.warmup_s),
            ("plan.timeout_s", p.timeout_s),
            ("plan.connect_timeout_s", p.connect_timeout_s),
            ("window.warmup_s", w.warmup_s),
            ("window.measured_s", w.measured_s),
            ("window.wait_s", w.wait_s),
        ];
        spans.extend(p.duration_s.map(|d| ("plan.duration_s", d)));
        spans.extend(w.start_offset_s.map(|d| ("window.start_offset_s", d.abs())));
        for (field, value) in spans {
            seconds(field, value)?;
        }
        let mut numbers = vec![
            ("client_health.cpu_s", h.cpu_s),
            ("client_health.cpu_util", h.cpu_util),
            ("client_health.max_thread_busy", h.max_thread_busy),
        ];
        numbers.extend(
            h.max_thread_waiting
                .map(|d| ("client_health.max_thread_waiting", d)),
        );
        for (field, value) in numbers {
            finite(field, value)?;
        }
        if let Some(rate) = p.rate_per_s
            && !(rate.is_finite() && rate > 0.0)
        {
            return Err(invalid(
                "plan.rate_per_s",
                format!("{rate} is not a positive rate"),
            ));
        }
        if p.connections == 0 || p.threads == 0 {
            return Err(invalid("plan", "no connections or no threads"));
        }
        if let Some(server) = &self.server
            && let Some(process) = &server.process
        {
            finite("server.process.user_s", process.user_s)?;
            finite("server.process.system_s", process.system_s)?;
        }
        Ok(())
    }

    fn validate_totals(&self) -> Result<(), SchemaError> {
        let t = &self.totals;
        let c = &self.cache;
        layers_hold("cache.layers", &c.layers)?;
        for (field, n) in [
            ("totals.intended", t.intended),
            ("totals.sent", t.sent),
            ("totals.completed", t.completed),
            ("totals.bytes_in", t.bytes_in),
            ("totals.bytes_out", t.bytes_out),
            ("totals.connections_opened", t.connections_opened),
            ("totals.late_sends", t.late_sends),
            ("totals.backlog", t.backlog),
            ("totals.out_of_range", t.out_of_range),
            ("totals.unsent", t.unsent),
            ("totals.queued", t.queued),
            ("cache.hit", c.hit),
            ("cache.miss", c.miss),
            ("cache.unknown", c.unknown),
            ("cache.by_source.x_varnish", c.by_source.x_varnish),
            ("cache.by_source.x_cache", c.by_source.x_cache),
            ("cache.by_source.age", c.by_source.age),
            ("cache.by_source.cache_status", c.by_source.cache_status),
            ("client_health.late_sends", self.client_health.late_sends),
        ] {
            bounded(field, n, MAX_COUNT)?;
        }
        let errors = t
            .errors
            .values()
            .try_fold(0u64, |sum, e| sum.checked_add(e.count));
        let statuses = t
            .status_codes
            .values()
            .try_fold(0u64, |sum, n| sum.checked_add(*n));
        let (Some(errors), Some(statuses)) = (errors, statuses) else {
            return Err(invalid("totals", "counts overflow"));
        };
        if errors > t.completed {
            return Err(invalid(
                "totals.errors",
                format!(
                    "{errors} errors, above the {} completed requests",
                    t.completed
                ),
            ));
        }
        if statuses.checked_add(errors) != Some(t.completed) {
            return Err(invalid(
                "totals.completed",
                format!(
                    "{} completed, but {statuses} responses and {errors} errors",
                    t.completed
                ),
            ));
        }
        if t.completed > 0 && self.window.measured_s + self.window.wait_s <= 0.0 {
            return Err(invalid(
                "window.measured_s",
                format!("0 s, yet {} requests completed in it", t.completed),
            ));
        }
        if let Some((code, _)) = t.status_codes.iter().find(|(code, _)| **code > 999) {
            return Err(invalid(
                "totals.status_codes",
                format!("{code} is not a status"),
            ));
        }
        Ok(())
    }

    /// A stampede's own ledger: every request of an event ends answered, failed or
    /// unfinished, and its latencies are histograms that decode.
    fn validate_stampede(&self) -> Result<(), SchemaError> {
        let Some(s) = &self.stampede else {
            return Ok(());
        };
        finite("stampede.every_s", s.every_s)?;
        for (i, e) in s.events.iter().enumerate() {
            let field = format!("stampede.events[{i}]");
            seconds(&format!("{field}.at_s"), e.at_s)?;
            if !e.balances() || e.sent > s.requests || e.server_errors > e.sent {
                return Err(invalid(
                    field,
                    format!(
                        "{} sent, but {} leaders, {} waiters, {} unclassified, {} failed and {} unfinished",
                        e.sent, e.leaders, e.waiters, e.unclassified, e.errors, e.unfinished
                    ),
                ));
            }
        }
        for (name, record) in [("leaders", &s.leaders), ("waiters", &s.waiters)] {
            if let Some(r) = record {
                r.validate(&format!("stampede.{name}"))?;
            }
        }
        Ok(())
    }

    /// The ledger (schema v3 on): every request due ends in exactly one place, and the
    /// measured intervals and the stages each add up to the totals.
    fn validate_ledger(&self) -> Result<(), SchemaError> {
        let t = &self.totals;
        if t.sent.checked_add(t.unsent) != Some(t.intended) {
            return Err(invalid(
                "totals.intended",
                format!(
                    "{} due, but {} sent and {} never sent",
                    t.intended, t.sent, t.unsent
                ),
            ));
        }
        if t.completed.checked_add(t.unfinished) != Some(t.sent) {
            return Err(invalid(
                "totals.sent",
                format!(
                    "{} sent, but {} completed and {} unfinished",
                    t.sent, t.completed, t.unfinished
                ),
            ));
        }
        let timeouts = t
            .errors
            .get(&crate::ErrorKind::RequestTimeout)
            .map_or(0, |e| e.count);
        if t.queue_timeouts > timeouts {
            return Err(invalid(
                "totals.queue_timeouts",
                format!("{} above the {timeouts} request timeouts", t.queue_timeouts),
            ));
        }
        // A request that waited in the queue was never written: no answer can wait for it.
        if t.timeouts_answered_late > timeouts - t.queue_timeouts {
            return Err(invalid(
                "totals.timeouts_answered_late",
                format!(
                    "{} above the {} request timeouts that were written",
                    t.timeouts_answered_late,
                    timeouts - t.queue_timeouts
                ),
            ));
        }
        let whole = Ledger::of_totals(t);
        let intervals = self
            .intervals
            .iter()
            .filter(|i| !i.warmup)
            .fold(Ledger::counting_connections(), |sum, i| {
                sum.add(&Ledger::of_interval(i))
            });
        whole.agrees("intervals", &intervals)?;
        if !self.stages.is_empty() {
            let stages = self
                .stages
                .iter()
                .filter(|s| !s.warmup)
                .fold(Ledger::default(), |sum, s| sum.add(&Ledger::of_stage(s)));
            whole.agrees("stages", &stages.without_connections())?;
        }
        Ok(())
    }

    fn validate_latency(&self) -> Result<(), SchemaError> {
        let l = &self.latency;
        l.service.validate("latency.service")?;
        l.hiccup.validate("latency.hiccup")?;
        for (field, record) in [
            ("latency.response", &l.response),
            ("latency.dispatch_lag", &l.dispatch_lag),
            ("latency.hit", &l.hit),
            ("latency.miss", &l.miss),
            ("latency.tls_handshake", &l.tls_handshake),
            ("latency.tcp_connect", &l.tcp_connect),
            ("latency.queue_wait", &l.queue_wait),
            ("latency.first_byte", &l.first_byte),
            ("latency.transfer", &l.transfer),
            ("latency.origin", &l.origin),
            ("latency.proxy_added", &l.proxy_added),
        ] {
            if let Some(record) = record {
                record.validate(field)?;
            }
        }
        if l.primary == crate::LatencyKind::Response && l.response.is_none() {
            return Err(invalid(
                "latency.response",
                "missing, yet the primary latency is response time",
            ));
        }
        Ok(())
    }
}

/// Tiered caches' counts add up: a layer answers or forwards at most what reached it, and
/// only what the layer before forwarded reaches the next.
fn layers_hold(field: &str, layers: &[crate::LayerCounts]) -> Result<(), SchemaError> {
    for (i, l) in layers.iter().enumerate() {
        if l.hits.checked_add(l.misses).is_none_or(|n| n > l.reached) {
            return Err(invalid(
                format!("{field}[{i}]"),
                "more hits and misses than requests that reached the layer",
            ));
        }
        if i > 0 && l.reached > layers[i - 1].misses {
            return Err(invalid(
                format!("{field}[{i}].reached"),
                "more requests reached the layer than the one before forwarded",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_named_with_their_object() {
        assert!(reject_duplicate_keys(r#"{"a": [1, {"b": 2}], "c": {"d": 1}}"#).is_ok());
        let err = reject_duplicate_keys(r#"{"totals": {"errors": {"reset": 1, "reset": 9}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("totals.errors") && err.contains("'reset'"),
            "{err}"
        );
        let err = reject_duplicate_keys(r#"{"a": 1, "a": 2}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("(top level)"), "{err}");
    }

    #[test]
    fn malformed_json_is_still_a_json_error() {
        let err = reject_duplicate_keys(r#"{"a": "#).unwrap_err();
        assert!(matches!(err, SchemaError::Json(_)), "{err}");
    }
}

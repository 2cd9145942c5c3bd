//! A rate plan's stages in the run file: the plan as given, and what each stage saw.

use std::time::Duration;

use vload_schema::{PlannedStage, StageRecord};

use crate::collect::record_of;
use crate::plan::{AttackPlan, Load};
use crate::rate::Curve;
use crate::record::StageStats;

/// The plan's stages as given, for a staged open loop.
pub(crate) fn planned(plan: &AttackPlan) -> Option<Vec<PlannedStage>> {
    let Load::Open { rate, .. } = &plan.load else {
        return None;
    };
    rate.is_staged().then(|| {
        rate.stages()
            .iter()
            .map(|s| PlannedStage {
                from_rate_per_s: s.from_per_s,
                to_rate_per_s: s.to_per_s,
                duration_s: s.duration.map_or(0.0, |d| d.as_secs_f64()),
            })
            .collect()
    })
}

/// One record per stage that began before the attack stopped sending at `sending` from
/// t0 (an interrupted run's last stage is cut short, and later ones never ran).
pub(crate) fn records(
    plan: &AttackPlan,
    mut stages: Vec<StageStats>,
    sending: Duration,
) -> Vec<StageRecord> {
    let Load::Open { rate, .. } = &plan.load else {
        return Vec::new();
    };
    if !rate.is_staged() {
        return Vec::new();
    }
    let curve = Curve::new(rate, plan.warmup);
    let settings = vload_schema::HistogramSettings::default();
    let sending_s = sending.as_secs_f64();
    let warmed = !plan.warmup.is_zero();
    let mut records = Vec::new();
    for (index, (start_s, length_s, from, to)) in curve.stages().enumerate() {
        if start_s >= sending_s && index > 0 {
            break;
        }
        if stages.len() <= index {
            stages.resize_with(index + 1, || StageStats::new(&settings));
        }
        let stats = &stages[index];
        let duration_s = length_s.min(sending_s - start_s).max(0.0);
        // A ramp cut short ends at the rate it had reached.
        let to = if duration_s < length_s && length_s > 0.0 {
            from + (to - from) * duration_s / length_s
        } else {
            to
        };
        records.push(StageRecord {
            index: index as u32,
            warmup: warmed && index == 0,
            start_s,
            duration_s,
            from_rate_per_s: from,
            to_rate_per_s: to,
            intended: stats.intended,
            sent: stats.sent,
            completed: stats.completed,
            unsent: stats.unsent,
            unfinished: stats.unfinished,
            late_sends: stats.late_sends,
            status_codes: stats.status.clone(),
            errors: stats.errors_by_kind().collect(),
            bytes_in: stats.bytes_in,
            bytes_out: stats.bytes_out,
            hits: stats.hits,
            misses: stats.misses,
            stale: stats.stale,
            stale_ages: stats.stale_ages.counted(),
            throughput_per_s: if duration_s > 0.0 {
                stats.done_during as f64 / duration_s
            } else {
                0.0
            },
            response: record_of(&stats.response),
            service: record_of(&stats.service),
            client_health: None,
            server_cpu_s: None,
            steady: None,
            upper_bounds: Vec::new(),
            origin_state: None,
            origin_requests: None,
        });
    }
    records
}

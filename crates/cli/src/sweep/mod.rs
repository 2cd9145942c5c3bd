//! `vload sweep`: steps of rising rate against one server, each held to an SLO, until one
//! misses it; the answer is the highest rate that met it.

mod args;

use std::process::ExitCode;

use anyhow::Context as _;
use vload_analyze::sweep::{
    Search, StepOutcome, assemble, judge, repeatable, step_record, step_starts, verdict,
};
use vload_analyze::units::{duration_ns, percent, rate};
use vload_schema::{RunFile, StageRecord, SweepRecord};

pub(crate) use args::SweepArgs;

use crate::attack::{Session, announce};

/// A step that ran: its rate, its record, how it went.
type Judged = (f64, StageRecord, StepOutcome);

/// Runs the sweep, prints its report, writes its file.
pub(crate) fn run(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    let s = &args.sweep;
    let planned = s.rates.0.clone();
    let session = Session::open(&args.step(planned[0], true))?;
    let mut search = Search::new(planned.clone(), s.find_max, args.floor()).with_retries(s.retries);
    let mut runs: Vec<(String, RunFile)> = Vec::new();
    let mut judged: Vec<Judged> = Vec::new();
    let mut failed = None;
    while let Some(step_rate) = search.next() {
        let confirming = search.confirming();
        let step = if confirming {
            args.confirmation(step_rate)
        } else {
            args.step(step_rate, false)
        };
        let mut plan = session.plan(&step)?;
        own_arrivals(&mut plan, runs.len() as u64);
        if runs.is_empty() {
            announce(&plan, session.builtin(), args.url.is_none());
        }
        let n = runs.len() + 1;
        say_step(args, n, step_rate, confirming);
        let run = session.attack(&step, plan)?;
        // Placed on the sweep's clock once every step has run.
        let record = step_record(&run, (n - 1) as u32, 0.0, &s.slo.0);
        // Nothing succeeded in the first step: a wrong URL or a server that is down, not a
        // capacity (a server that stops answering later is a step that missed the SLO). The
        // step's run is still reported and written, as an attack's would be.
        if runs.is_empty()
            && let Some(error) = crate::finish::no_success(&run)
        {
            failed = Some(error.context(format!("step {n} at {}", rate(step_rate))));
            let outcome = StepOutcome::Missed(Vec::new());
            runs.push((format!("step {n} at {}", rate(step_rate)), run));
            judged.push((step_rate, record, outcome));
            break;
        }
        let outcome =
            judge(&s.slo.0, &record, run.interrupted, &run.plan).context("judging a step")?;
        crate::paint::say!(
            "vload: step {n}: {}",
            step_line(step_rate, &record, &outcome, &run.plan)
        );
        let met = matches!(outcome, StepOutcome::Met(_));
        search.record(step_rate, &outcome, repeatable(step_rate, &record));
        say_next(&search, n, step_rate, met);
        runs.push((format!("step {n} at {}", rate(step_rate)), run));
        judged.push((step_rate, record, outcome));
    }
    let answer = verdict(&search, &s.slo.0, &judged);
    let record = SweepRecord {
        rates_per_s: planned,
        stage_s: s.stage.as_secs_f64(),
        warmup_s: s.warmup.as_secs_f64(),
        slo: s.slo.0.clone(),
        find_max: s.find_max,
        verdict: answer,
    };
    let steps: Vec<RunFile> = runs.iter().map(|(_, r)| r.clone()).collect();
    let stages = judged
        .into_iter()
        .zip(step_starts(&steps))
        .map(|((_, record, _), start_s)| StageRecord { start_s, ..record })
        .collect();
    let mut file = assemble(&runs, stages, record).context("assembling the sweep's file")?;
    crate::attack::targets::name_as_given(&mut file);
    file.interrupted = session.signal().is_some();
    let balanced = crate::finish::ledger_balances(&file);
    let code = crate::finish::report_and_save(
        &file,
        session.output.as_ref(),
        session.signal(),
        (args.output.quiet, args.output.brief),
    )?;
    if let Some(error) = failed {
        return Err(error);
    }
    Ok(if balanced { code } else { ExitCode::from(2) })
}

/// `vload: step 3: 1,500.0/s for 10s after 2s of warm-up`.
/// Gives step `index` its own Poisson arrivals (the catalogue's draws stay the sweep's): one
/// seed replayed at every rate offered every step the same deviation (1.5-2% short at every
/// rate with the default seed).
fn own_arrivals(plan: &mut vload_engine::AttackPlan, index: u64) {
    if let vload_engine::Load::Open {
        arrival: vload_engine::Arrival::Poisson { seed },
        ..
    } = &mut plan.load
    {
        *seed = step_seed(*seed, index);
    }
}

/// The Poisson seed of step `index` (from 0) of a sweep seeded `seed`: distinct for every
/// step, the same for the same sweep (SplitMix64's finaliser over both).
fn step_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn say_step(args: &SweepArgs, n: usize, step_rate: f64, confirming: bool) {
    let mut stage = args.stage_for(step_rate);
    let longer = if confirming {
        stage *= vload_analyze::sweep::CONFIRM_HOLD;
        " (the answer's confirmation, held longer: a queue that grows slowly near the capacity shows)"
    } else if stage > args.sweep.stage {
        " (longer than --stage, to tell whether it is steady and to measure the SLO's quantiles)"
    } else {
        ""
    };
    crate::paint::say!(
        "vload: step {n}: {} for {}{longer} after {} of warm-up",
        rate(step_rate),
        humantime::format_duration(stage),
        humantime::format_duration(args.sweep.warmup)
    );
}

/// Why the next step runs a rate again: a retry of a miss, or the answer's confirmation.
fn say_next(search: &Search, n: usize, step_rate: f64, met: bool) {
    match search.next() {
        Some(next) if next == step_rate && !met => crate::paint::say!(
            "vload: step {n}: the machine, not the server, may be the cause (see its health): running {} again (--retries)",
            rate(step_rate)
        ),
        Some(next) if search.max_rate() == Some(next) => crate::paint::say!(
            "vload: confirming the answer: running {} again; a miss there overturns it (--retries)",
            rate(next)
        ),
        _ => {}
    }
}

/// `2,000.0/s: met: p99 4.10 ms (limit 10.00 ms), throughput 1,999.8/s`.
fn step_line(
    step_rate: f64,
    record: &StageRecord,
    outcome: &StepOutcome,
    plan: &vload_schema::Plan,
) -> String {
    let detail = match outcome {
        StepOutcome::Met(terms) | StepOutcome::Missed(terms) => terms
            .iter()
            .map(vload_analyze::slo::TermOutcome::text)
            .collect::<Vec<_>>()
            .join(", "),
        StepOutcome::Unsteady(terms, why) => format!(
            "{}, but {why}",
            terms
                .iter()
                .map(vload_analyze::slo::TermOutcome::text)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        StepOutcome::ClientBound(why)
        | StepOutcome::MachineBusy(why)
        | StepOutcome::Capped(why) => why.clone(),
        StepOutcome::Interrupted => "the sweep stops here".to_owned(),
    };
    let p99 = record
        .response
        .histogram
        .decode()
        .ok()
        .filter(|h| !h.is_empty())
        .map(|h| duration_ns(record.response.moments.clamp(h.value_at_quantile(0.99)) as f64));
    let errors = record
        .failure_share(plan)
        .map_or_else(|| "n/a".to_owned(), percent);
    format!(
        "{}: {}: {detail}; throughput {}, p99 {}, errors {errors}",
        rate(step_rate),
        outcome.word(),
        rate(record.throughput_per_s),
        p99.unwrap_or_else(|| "n/a".to_owned())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step its own Poisson arrivals: distinct seeds for every step, the same for the
    /// same sweep, and none the sweep's own (which every step once replayed).
    #[test]
    fn every_step_draws_its_own_arrivals() {
        let seeds: std::collections::BTreeSet<u64> = (0..1000).map(|i| step_seed(1, i)).collect();
        assert_eq!(seeds.len(), 1000);
        assert!(!seeds.contains(&1));
        assert_eq!(step_seed(7, 3), step_seed(7, 3));
        assert_ne!(step_seed(7, 3), step_seed(8, 3));
    }
}

//! What a worker's driver and its lanes share, whatever the driver: the plan, the load model,
//! the recorder (and its books), the workload, and whether the attack is stopping.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use vload_schema::ErrorKind;

use super::setup::WorkerSetup;
use crate::breakdown::Tally;
use crate::failure::Failure;
use crate::ledger::{Books, Recorder, Stages};
use crate::model::{Model, ModelSetup};
use crate::plan::AttackPlan;
use crate::workload::{Source, Workload};

/// A worker's shared state (see the module's docs).
pub(crate) struct Core {
    pub(crate) plan: Arc<AttackPlan>,
    /// When requests fall due and what a lane does next.
    pub(crate) model: Model,
    /// How each request's end is recorded.
    pub(crate) recorder: Recorder,
    /// What each request carries.
    pub(crate) workload: Workload,
    stopping: Cell<bool>,
}

impl Core {
    /// The core of `setup`'s worker; `end` is when its window ends, for a time-bounded attack.
    pub(crate) fn new(setup: &mut WorkerSetup, end: Option<Instant>) -> Core {
        let plan = setup.plan.clone();
        let measure_from = setup.t0 + plan.warmup;
        let stages = setup
            .schedule
            .as_ref()
            .filter(|_| plan.is_staged())
            .map(|schedule| Stages {
                curve: schedule.curve(),
                t0: setup.t0,
            });
        let model = Model::new(ModelSetup {
            staged: stages.is_some(),
            schedule: setup.schedule.take(),
            window: (end, measure_from),
            requests: setup.requests,
            cap: (setup.connections, plan.threads),
        });
        let tally = Tally::new(setup.dimensions.clone());
        let source = setup.source.take().unwrap_or(Source::Own);
        Core {
            workload: Workload::new(&plan, source, setup.dimensions.clone()),
            recorder: Recorder::new(plan.clone(), (setup.t0, measure_from), stages, tally),
            model,
            plan,
            stopping: Cell::new(false),
        }
    }

    /// The ledger.
    pub(crate) fn books(&self) -> &Books {
        self.recorder.books()
    }

    /// True once the attack is stopping: no lane takes another request.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.get()
    }

    /// The attack stops: nothing more is dispatched or taken up.
    pub(crate) fn begin_stop(&self) {
        self.stopping.set(true);
        self.model.stop();
    }

    /// The open loop's schedule is over: the attack's sending ends now.
    pub(crate) fn finish_dispatch(&self) {
        if self.model.finish() {
            self.recorder.sending_ended(Instant::now());
        }
    }

    /// The window ends at `at` (no later than planned): nothing due after it is sent.
    pub(crate) fn end_window(&self, at: Instant) {
        self.model.end_at(at);
    }

    /// Lanes idle since before this, at `now`, have been idle too long (the plan's
    /// `idle_close`) and are closed.
    pub(crate) fn idle_since(&self, now: Instant) -> Option<Instant> {
        now.checked_sub(self.plan.idle_close)
    }

    /// Fails, as timed out, every waiting request whose deadline has passed by `now`: it
    /// could no longer be answered within --timeout of its due time, filed in the second
    /// open. Only deadlines up to that second's end are taken: a clock that has not yet
    /// stepped past a freeze or a long busy spell (the open loop's catch-up dispatches from
    /// inside the clock's step) would otherwise file them seconds early (#58). The rest wait
    /// for the step that opens their second.
    pub(crate) fn expire_waiting(&self, now: Instant) {
        let now = now.min(self.books().second_ends());
        for batch in self.model.take_expired(now, self.plan.timeout) {
            self.recorder.expire(&batch);
        }
    }

    /// The worker stops waiting: what still waits was never sent, what is in flight is
    /// unfinished. Returns how many requests fell due and did not complete.
    pub(crate) fn close_books(&self) -> u64 {
        self.recorder.close(self.model.take_all_pending())
    }

    /// A connect that did not complete within the connect timeout.
    pub(crate) fn connect_timed_out(&self) -> Failure {
        let (addr, timeout) = (self.plan.connect_to, self.plan.connect_timeout);
        (
            ErrorKind::ConnectTimeout,
            format!("no connection to {addr} within {timeout:?}"),
        )
    }
}

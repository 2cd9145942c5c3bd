//! How one step of a sweep went.

use vload_schema::HealthVerdict;

use crate::slo::TermOutcome;

/// How one step went.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// Every term of the SLO was met, in a steady state.
    Met(Vec<TermOutcome>),
    /// A term was missed, by the server's doing (the load was applied as planned, or the
    /// server took connections too slowly for it).
    Missed(Vec<TermOutcome>),
    /// The terms held, but the step was not in a steady state (or too short to tell): its
    /// queue was growing. A miss the step had not yet shown: counted as a miss.
    Unsteady(Vec<TermOutcome>, String),
    /// vload's own threads were the limit: the first reason.
    ClientBound(String),
    /// Other processes took the cores: the planned load was not applied.
    MachineBusy(String),
    /// Requests waited for the connection cap (`--max-connections`), and the server's own
    /// share of the latency met the SLO: vload's limit as the user set it.
    Capped(String),
    /// The step was interrupted (Ctrl-C).
    Interrupted,
}

impl StepOutcome {
    /// `met`, `missed`, `unsteady`, `client-bound`, `machine-busy`, `connection-capped`,
    /// `interrupted`.
    pub fn word(&self) -> &'static str {
        match self {
            StepOutcome::Met(_) => "met",
            StepOutcome::Missed(_) => "missed",
            StepOutcome::Unsteady(..) => "unsteady",
            StepOutcome::ClientBound(_) => HealthVerdict::ClientBound.name(),
            StepOutcome::MachineBusy(_) => HealthVerdict::MachineBusy.name(),
            StepOutcome::Capped(_) => HealthVerdict::ConnectionCapped.name(),
            StepOutcome::Interrupted => "interrupted",
        }
    }

    /// True for the outcomes that are the server's: met, missed, unsteady.
    pub fn is_verdict(&self) -> bool {
        matches!(
            self,
            StepOutcome::Met(_) | StepOutcome::Missed(_) | StepOutcome::Unsteady(..)
        )
    }
}

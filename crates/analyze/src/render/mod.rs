//! Renderers: pure functions from a summary, a run or a comparison to text.

pub mod compare;
pub mod plot;
pub mod report;
pub mod sweeps;
mod table;

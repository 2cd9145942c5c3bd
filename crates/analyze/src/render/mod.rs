//! Renderers: pure functions from a summary to text.

pub mod text;

//! One run's report, one file per format: text (what `vload attack` prints), brief (its eight
//! lines), markdown, JSON,
//! HdrHistogram's `.hgrm`, and wrk's layout. Each is a pure function to text.

pub mod brief;
pub mod hgrm;
pub mod json;
pub mod markdown;
pub mod text;
pub mod wrk;

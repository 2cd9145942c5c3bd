//! One run's report, one file per format: text (what `vload attack` prints), markdown, JSON,
//! HdrHistogram's `.hgrm`, and wrk's layout. Each is a pure function to text.

pub mod hgrm;
pub mod json;
pub mod markdown;
pub mod text;
pub mod wrk;

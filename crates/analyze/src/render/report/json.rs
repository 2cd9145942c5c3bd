//! The report as JSON: the summary, with the schema version.

use crate::summary::Summary;

/// The summary as JSON, with the schema version.
pub fn render(summary: &Summary) -> String {
    crate::render::json_document("report", "report", summary)
}

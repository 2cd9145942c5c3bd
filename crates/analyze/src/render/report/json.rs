//! The report as JSON: the summary, with the schema version.

use crate::summary::Summary;

/// The summary as JSON, with the schema version.
pub fn render(summary: &Summary) -> String {
    let value = serde_json::json!({ "schema_version": vload_schema::SCHEMA_VERSION, "kind": "report", "report": summary });
    let mut text = serde_json::to_string_pretty(&value).expect("summaries serialize");
    text.push('\n');
    text
}

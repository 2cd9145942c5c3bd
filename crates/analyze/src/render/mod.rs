//! Renderers: pure functions from a summary, a run or a comparison to text.

pub mod compare;
pub mod plot;
pub mod report;
pub mod sweeps;
mod table;

/// A JSON document vload writes: `{"schema_version", "kind", key: value}`, pretty, ending in
/// a newline.
pub(crate) fn json_document(kind: &str, key: &str, value: &impl serde::Serialize) -> String {
    let mut document = serde_json::Map::new();
    document.insert("schema_version".into(), vload_schema::SCHEMA_VERSION.into());
    document.insert("kind".into(), kind.into());
    document.insert(
        key.into(),
        serde_json::to_value(value).expect("vload's own types serialize"),
    );
    let mut text = serde_json::to_string_pretty(&document).expect("a JSON value serializes");
    text.push('\n');
    text
}

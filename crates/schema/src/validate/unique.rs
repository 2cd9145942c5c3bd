//! A JSON document whose objects repeat a key is refused.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::SchemaError;

/// Refuses a JSON document in which an object repeats a key: serde keeps the last value
/// silently, so `{"count": 1, "count": 900}` would be read as whatever came last.
pub(crate) fn reject_duplicate_keys(text: &str) -> Result<(), SchemaError> {
    let mut de = serde_json::Deserializer::from_str(text);
    // serde_json itself refuses nesting deeper than 128, so the walk's depth is bounded.
    Unique { path: "" }.deserialize(&mut de).map_err(|e| {
        if e.is_data() {
            // The only data error the walk raises is a repeated key.
            SchemaError::Duplicate(e.to_string())
        } else {
            SchemaError::Json(e)
        }
    })
}

/// Walks any JSON value, failing on a repeated key.
struct Unique<'p> {
    path: &'p str,
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let path = format!("{}[{i}]", self.path);
            if seq.next_element_seed(Unique { path: &path })?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            map.next_value_seed(Unique { path: &path })?;
            if !seen.insert(key.clone()) {
                let field = if self.path.is_empty() {
                    "(top level)"
                } else {
                    self.path
                };
                return Err(serde::de::Error::custom(format!(
                    "{field}: key '{key}' appears twice"
                )));
            }
        }
        Ok(())
    }
}

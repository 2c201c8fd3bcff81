//! How the elements of an associative list are named: the [`PathElement`] of an element of a
//! list keyed by some of its elements' fields (`k:{…}`) or of a set of scalars (`v:…`).
//!
//! Invariants: a keyed element's key holds the key fields it has, taking the schema's default
//! for those it leaves out, and is refused when it has none of them; a set element is a scalar
//! (not a map, list or null). The errors are structured-merge-diff's messages.

use serde_json::Value;

use super::path::PathElement;
use crate::schema::{ListKind, ListType};

/// The path element of `item`, an element of the associative list `list`.
pub(crate) fn element_of(list: &ListType<'_>, item: &Value) -> Result<PathElement, String> {
    match list.kind {
        ListKind::Atomic => Err("invalid indexing of non-associative list".into()),
        ListKind::Map(keys) => {
            let m = match item {
                Value::Null => return Err("associative list with keys may not have a null element".into()),
                Value::Object(m) => m,
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let mut fields = Vec::with_capacity(keys.len());
            for k in keys.iter().filter_map(Value::as_str) {
                match m.get(k) {
                    Some(v) => fields.push((k.into(), v.clone())),
                    None => {
                        if let Some(d) = list.key_default(k) {
                            fields.push((k.into(), d.clone()));
                        }
                    }
                }
            }
            if fields.is_empty() {
                let names: Vec<String> = keys.iter().filter_map(Value::as_str).map(|k| format!("\"{k}\"")).collect();
                return Err(format!(
                    "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                    names.join(" ")
                ));
            }
            Ok(PathElement::key(fields))
        }
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            v => Ok(PathElement::Value(Box::new(v.clone()))),
        },
    }
}

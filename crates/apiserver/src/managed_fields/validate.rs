//! Checking an applied configuration against its type (structured-merge-diff's validation of a
//! typed value), with structured-merge-diff's error messages and field paths.
//!
//! Invariants: a struct refuses fields it does not declare (unless it keeps unknown fields);
//! scalars must be of the schema's kind (`null` always passes); an associative list's elements
//! must have a key, and a key may appear once. Paths are printed as in conflicts
//! (`.spec.containers[name="app"].image`).

use std::fmt;

use serde_json::Value;

use super::items::element_of;
use crate::schema::{Atom, ListKind, Scalar, TypeRef};

/// One validation error: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// The path, printed as in conflicts (empty for the root).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl ValidationError {
    /// An error at `path`.
    pub fn new(path: &str, message: impl Into<String>) -> Self {
        ValidationError { path: path.to_string(), message: message.into() }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

/// Validation errors, printed as structured-merge-diff prints them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Errors(pub Vec<ValidationError>);

impl Errors {
    /// `Ok(v)` when there is no error.
    pub(crate) fn into_result<T>(self, v: T) -> Result<T, Errors> {
        if self.0.is_empty() { Ok(v) } else { Err(self) }
    }
}

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [one] = self.0.as_slice() {
            return write!(f, "{one}");
        }
        f.write_str("errors:")?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// Checks `v` against `ty`.
pub(crate) fn validate(v: &Value, ty: TypeRef<'_>) -> Result<(), Errors> {
    let mut errors = Errors::default();
    walk(v, ty, "", &mut errors);
    errors.into_result(())
}

fn walk(v: &Value, ty: TypeRef<'_>, path: &str, errors: &mut Errors) {
    match ty.atom(Some(v)) {
        Atom::Scalar(kind) => {
            if let Some(m) = scalar_error(kind, v) {
                errors.0.push(ValidationError::new(path, m));
            }
        }
        Atom::List(list) => {
            let items = match v {
                Value::Null => return,
                Value::Array(items) => items,
                other => {
                    errors.0.push(ValidationError::new(path, format!("expected list, got {}", go_value(other))));
                    return;
                }
            };
            let mut seen = std::collections::BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = if list.kind == ListKind::Atomic {
                    format!("[{i}]")
                } else {
                    match element_of(&list, item) {
                        Ok(pe) => {
                            let text = pe.to_string();
                            if !seen.insert(pe) {
                                errors.0.push(ValidationError::new(path, format!("duplicate entries for key {text}")));
                            }
                            text
                        }
                        Err(e) => {
                            errors.0.push(ValidationError::new(path, format!("element {i}: {e}")));
                            return;
                        }
                    }
                };
                walk(item, list.items, &format!("{path}{pe}"), errors);
            }
        }
        Atom::Map(map) => {
            let m = match v {
                Value::Null => return,
                Value::Object(m) => m,
                other => {
                    errors.0.push(ValidationError::new(path, format!("expected map, got {}", go_value(other))));
                    return;
                }
            };
            for (k, child) in m {
                let child_path = format!("{path}.{k}");
                match map.field(k) {
                    Some(t) => walk(child, t, &child_path, errors),
                    None if map.closed() => {
                        errors.0.push(ValidationError::new(&child_path, "field not declared in schema"));
                        return;
                    }
                    None => walk(child, map.field_or_deduced(k), &child_path, errors),
                }
            }
        }
    }
}

fn scalar_error(kind: Scalar, v: &Value) -> Option<String> {
    match (kind, v) {
        (_, Value::Null) => None,
        (Scalar::Numeric, Value::Number(_)) => None,
        (Scalar::Numeric, other) => {
            Some(format!("expected numeric (int or float), got {}", crate::custom_resource::go_type(other)))
        }
        (Scalar::String, Value::String(_)) => None,
        (Scalar::String, other) => {
            Some(format!("expected string, got &value.valueUnstructured{{Value:{}}}", go_syntax(other)))
        }
        (Scalar::Boolean, Value::Bool(_)) => None,
        (Scalar::Boolean, other) => Some(format!("expected boolean, got {}", go_value(other))),
        (Scalar::Untyped, Value::Number(_) | Value::String(_) | Value::Bool(_)) => None,
        (Scalar::Untyped, other) => Some(format!("expected any scalar, got {}", go_value(other))),
    }
}

/// Go's `%v` of structured-merge-diff's value wrapper.
fn go_value(v: &Value) -> String {
    fn plain(v: &Value) -> String {
        match v {
            Value::Null => "<nil>".into(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            Value::Array(items) => format!("[{}]", items.iter().map(plain).collect::<Vec<_>>().join(" ")),
            Value::Object(m) => {
                format!("map[{}]", m.iter().map(|(k, v)| format!("{k}:{}", plain(v))).collect::<Vec<_>>().join(" "))
            }
        }
    }
    format!("&{{{}}}", plain(v))
}

/// Go's `%#v` of a decoded JSON value.
fn go_syntax(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            format!("[]interface {{}}{{{}}}", items.iter().map(go_syntax).collect::<Vec<_>>().join(", "))
        }
        Value::Object(m) => format!(
            "map[string]interface {{}}{{{}}}",
            m.iter().map(|(k, v)| format!("{k:?}:{}", go_syntax(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::builtin;

    #[test]
    fn unknown_fields_wrong_kinds_and_repeated_keys_are_reported() {
        let ty = builtin().type_of("apps", "v1", "Deployment").unwrap();
        let ok = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "labels": {"x": "y"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}]}}}});
        assert_eq!(validate(&ok, ty), Ok(()));
        let bad = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "bogus": 1}]}}}});
        assert_eq!(
            validate(&bad, ty).unwrap_err().to_string(),
            ".spec.template.spec.containers[name=\"a\"].bogus: field not declared in schema"
        );
        let bad =
            json!({"spec": {"replicas": "two", "template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        assert_eq!(
            validate(&bad, ty).unwrap_err().to_string(),
            "errors:\n  .spec.replicas: expected numeric (int or float), got string\n  .spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
        );
        // A custom resource without a schema takes anything.
        assert_eq!(
            validate(&json!({"spec": {"anything": [1, {"a": 2}]}}), crate::schema::TypeRef::unknown_object(builtin())),
            Ok(())
        );
    }
}

//! Resources embedded in a custom resource (schema nodes with `x-kubernetes-embedded-resource`),
//! judged as kube-apiserver's `objectmeta.Validate` judges them after the schema.
//!
//! Invariants:
//! - every embedded object the schema reaches (through `properties`, `additionalProperties` and
//!   `items`) has an `apiVersion` and a `kind` (`Required value` when absent);
//! - an `apiVersion` is a non-empty string of at most one `/`; a `kind` a non-empty string that
//!   is a DNS-1035 label once lowercased (kube's messages);
//! - its `metadata` is judged as an object's on create (names as path segments, an empty name
//!   standing for one; a namespace, if any, a DNS label), its causes under the embedded object's
//!   path;
//! - members are visited in key order (kube visits them in Go's random map order).

use serde_json::{Map, Value};

use crate::structural::{Cause, go_value, join};

/// The causes of the resources embedded in `obj` (a whole custom resource) by `schema`.
pub(crate) fn validate(schema: &Value, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    walk(schema, obj, "", &mut causes);
    causes
}

/// Calls `f` with the `metadata` of every resource embedded in `obj` by `schema`, and its path.
pub(crate) fn each_metadata(schema: &Value, obj: &mut Value, f: &mut dyn FnMut(&mut Value, &str)) {
    each_below(schema, obj, "", f);
}

fn each_below(node: &Value, v: &mut Value, path: &str, f: &mut dyn FnMut(&mut Value, &str)) {
    match v {
        Value::Object(m) => {
            if !path.is_empty()
                && node.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true)
                && let Some(meta) = m.get_mut("metadata")
            {
                f(meta, &join(path, "metadata"));
            }
            let props = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in m.iter_mut() {
                if let Some(s) = props.and_then(|p| p.get(k)) {
                    each_below(s, child, &join(path, k), f);
                } else if let Some(s) = additional {
                    each_below(s, child, &format!("{path}[{k}]"), f);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter_mut().enumerate() {
                    each_below(s, item, &format!("{path}[{i}]"), f);
                }
            }
        }
        _ => {}
    }
}

fn walk(node: &Value, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            if node.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true) {
                embedded(m, path, causes);
            }
            let props = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in m {
                if let Some(s) = props.and_then(|p| p.get(k)) {
                    walk(s, child, &join(path, k), causes);
                } else if let Some(s) = additional {
                    walk(s, child, &format!("{path}[{k}]"), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    walk(s, item, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

fn invalid(field: String, shown: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {detail}"), field }
}

/// The causes of one embedded object `m` at `path`.
fn embedded(m: &Map<String, Value>, path: &str, causes: &mut Vec<Cause>) {
    for f in ["apiVersion", "kind"] {
        if !m.contains_key(f) {
            causes.push(Cause { reason: "FieldValueRequired", message: "Required value".into(), field: join(path, f) });
        }
    }
    for (k, v) in m {
        let at = join(path, k);
        match (k.as_str(), v) {
            ("apiVersion" | "kind", Value::String(s)) if s.is_empty() => {
                causes.push(invalid(at.clone(), "\"\"", "must not be empty"));
            }
            ("apiVersion" | "kind", Value::String(_)) | ("metadata", _) => {}
            ("apiVersion" | "kind", other) => causes.push(invalid(at.clone(), &go_value(other), "must be a string")),
            _ => {}
        }
        match (k.as_str(), v) {
            ("apiVersion", Value::String(s)) if s != "/" && s.matches('/').count() > 1 => {
                causes.push(invalid(at, &go_value(v), &format!("unexpected GroupVersion string: {s}")));
            }
            ("kind", Value::String(s)) if !s.is_empty() => {
                let faults = crate::cel_format::dns1035_label(&s.to_lowercase());
                if !faults.is_empty() {
                    causes.push(invalid(
                        at,
                        &go_value(v),
                        &format!("may have mixed case, but should otherwise match: {}", faults.join(",")),
                    ));
                }
            }
            ("metadata", Value::Object(meta)) => {
                let mut meta = meta.clone();
                if meta.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                    meta.insert("name".into(), "fakename".into());
                }
                for mut c in crate::object_meta::validate_embedded(&meta) {
                    c.field = join(path, &c.field);
                    causes.push(c);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(obj: Value) -> Vec<String> {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "more": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true}}}}}});
        validate(&schema, &obj).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn embedded_resources_have_a_version_a_kind_and_good_metadata() {
        let ok = json!({"spec": {"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "b"}}}}});
        assert!(judged(ok).is_empty());
        assert_eq!(
            judged(json!({"spec": {"template": {"kind": ""}, "more": [{"apiVersion": "a/b/c", "kind": "Bad_Kind"}]}})),
            [
                "spec.more[0].apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.more[0].kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Invalid value: \"\": must not be empty",
            ]
        );
        let bad_meta = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a/b", "namespace": "Bad", "labels": {"a b": "c"}}}}});
        let m = judged(bad_meta);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0], "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'");
        assert!(
            m[1].starts_with("spec.template.metadata.namespace: Invalid value: \"Bad\": a lowercase RFC 1123 label"),
            "{m:?}"
        );
        assert!(m[2].starts_with("spec.template.metadata.labels: Invalid value: \"a b\""), "{m:?}");
    }
}

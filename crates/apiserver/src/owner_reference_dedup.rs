//! Duplicate owner references collapsed as kube-apiserver's write handlers collapse them
//! (`dedupOwnerReferencesAndAddWarning`): creates and updates before and after mutating
//! admission, patches after it; each time duplicates go, the client is warned with their UIDs.
//!
//! Invariants: a reference is a duplicate when an earlier one with its UID is equal to it as Go
//! compares two `OwnerReference`s (the same `apiVersion`, `kind`, `name`, `uid`, `controller` and
//! `blockOwnerDeletion`, a null the same as a missing field, unknown fields not compared); the
//! first of equal references stays where it was; references that share a UID but differ all stay
//! (validation judges them).

use serde_json::{Map, Value};

const FIELDS: [&str; 6] = ["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];

/// Whether two references are equal as Go's semantic equality compares decoded ones.
fn same(a: &Value, b: &Value) -> bool {
    let field = |r: &Value, f: &str| r.get(f).filter(|v| !v.is_null()).cloned();
    FIELDS.iter().all(|f| field(a, f) == field(b, f))
}

/// Removes the duplicate owner references of `obj` and warns of their UIDs; `after_admission`
/// picks kube's wording for duplicates a mutating admission left.
pub(crate) fn dedup(obj: &mut Map<String, Value>, after_admission: bool) {
    let Some(Value::Array(refs)) = obj.get_mut("metadata").and_then(|m| m.get_mut("ownerReferences")) else {
        return;
    };
    let mut kept: Vec<Value> = Vec::with_capacity(refs.len());
    let mut duplicates: Vec<String> = Vec::new();
    for r in refs.drain(..) {
        if kept.iter().any(|k| k.get("uid") == r.get("uid") && same(k, &r)) {
            duplicates.push(r.get("uid").and_then(Value::as_str).unwrap_or("").to_string());
        } else {
            kept.push(r);
        }
    }
    *refs = kept;
    if duplicates.is_empty() {
        return;
    }
    let when = if after_admission { " after mutating admission happens" } else { "" };
    crate::warning::record(format!(
        ".metadata.ownerReferences contains duplicate entries{when}; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {}",
        duplicates.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_references_collapse_and_different_ones_with_a_uid_stay() {
        let r = |name: &str, controller: Value| json!({"apiVersion": "v1", "kind": "Pod", "name": name, "uid": "u1", "controller": controller});
        let mut obj = json!({"metadata": {"ownerReferences": [r("a", json!(null)), r("a", Value::Null), r("b", json!(true)),
            {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "u1", "extra": 1}]}});
        let Value::Object(m) = &mut obj else { unreachable!() };
        dedup(m, false);
        assert_eq!(obj["metadata"]["ownerReferences"], json!([r("a", json!(null)), r("b", json!(true))]));
    }
}

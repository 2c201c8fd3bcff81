//! Values compared as kube-apiserver compares decoded objects (`apiequality.Semantic.DeepEqual`):
//! a missing member, `null`, an empty list and an empty map are the same (Go's nil and empty),
//! and resource quantities are equal when their amounts are (`1Gi` and `1024Mi`).
//!
//! Invariants: normalizing never changes a value's meaning for kube; strings are kept as sent
//! (an empty string is not a missing member) except quantities in resource lists.

use serde_json::{Map, Value};

/// Whether `a` and `b` are the same to kube.
pub(crate) fn equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    normalized(a) == normalized(b)
}

/// `v` with nulls, empty lists and empty maps left out, and quantities in resource lists in
/// canonical form; None when nothing is left.
pub(crate) fn normalized(v: Option<&Value>) -> Option<Value> {
    normalize(v?, false)
}

fn normalize(v: &Value, quantities: bool) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(items) => {
            Some(Value::Array(items.iter().map(|i| normalize(i, false).unwrap_or(Value::Null)).collect()))
        }
        Value::Object(m) => {
            let kept: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| {
                    // A resource list's members are quantities.
                    let resource_list = matches!(k.as_str(), "requests" | "limits" | "capacity");
                    normalize(v, quantities || resource_list).map(|v| (k.clone(), v))
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::String(s) if quantities => {
            Some(Value::String(crate::quantity::canonical(s).unwrap_or_else(|| s.clone())))
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nil_and_empty_are_the_same_and_quantities_compare_by_amount() {
        let stored = json!({"selector": {"matchLabels": {"app": "db"}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "1024Mi"}}}}]});
        let sent = json!({"selector": {"matchLabels": {"app": "db"}, "matchExpressions": []},
            "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {}, "creationTimestamp": null},
                "spec": {"resources": {"requests": {"storage": "1Gi"}}}}], "extra": null});
        assert!(equal(Some(&stored), Some(&sent)));
        assert!(equal(None, Some(&json!({"a": [], "b": null}))));
        // An empty string is a value.
        assert!(!equal(Some(&json!({"storageClassName": ""})), Some(&json!({}))));
        assert!(!equal(Some(&json!({"requests": {"storage": "1Gi"}})), Some(&json!({"requests": {"storage": "2Gi"}}))));
    }
}

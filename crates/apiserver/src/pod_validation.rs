//! What an update of a pod may change, as kube-apiserver's `ValidatePodUpdate` decides: once
//! created, a pod's spec changes only in its containers' images, a shorter
//! `activeDeadlineSeconds`, added tolerations, removed scheduling gates (and, while it has
//! gates, its node selector and affinity), and a negative `terminationGracePeriodSeconds` set
//! to 1. Anything else is kube's 422 (`spec: Forbidden: pod updates may not change fields other
//! than …`).
//!
//! Invariants: only updates of the pod itself are judged (its `status`, `binding` and the
//! server's own writes through them are not); specs are compared as kube compares them, with
//! unset, null and empty lists alike; containers may not be added or removed, and each keeps an
//! image.

use serde_json::{Map, Value};

use crate::policy_validation::required;
use crate::structural::Cause;

/// The fields kube lists as updatable, in its words.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The causes for which kube refuses updating a pod whose spec was `old_spec` to `spec`.
pub(crate) fn validate_update(spec: &Map<String, Value>, old_spec: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if spec == old_spec {
        return causes;
    }
    for key in ["containers", "initContainers"] {
        let (now, before) = (list(spec, key), list(old_spec, key));
        if now.len() != before.len() {
            causes.push(forbidden(format!("spec.{key}"), "pod updates may not add or remove containers"));
            return causes;
        }
        for (i, c) in now.iter().enumerate() {
            if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                causes.push(required(format!("spec.{key}[{i}].image"), ""));
            }
        }
    }
    let deadline = |s: &Map<String, Value>| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(spec), deadline(old_spec)) {
        (Some(new), Some(old)) if new > old => causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {new}: must be less than or equal to previous value"),
            field: "spec.activeDeadlineSeconds".into(),
        }),
        (None, Some(_)) => causes.push(forbidden(
            "spec.activeDeadlineSeconds".into(),
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    let tolerations = list(spec, "tolerations");
    for old_toleration in list(old_spec, "tolerations") {
        let kept = tolerations.iter().any(|t| same_toleration(t, old_toleration));
        if !kept {
            causes.push(forbidden(
                "spec.tolerations".into(),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            break;
        }
    }
    let gates = |s: &Map<String, Value>| -> Vec<String> {
        list(s, "schedulingGates")
            .iter()
            .filter_map(|g| g.get("name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    let old_gates = gates(old_spec);
    for gate in gates(spec).iter().filter(|g| !old_gates.contains(g)) {
        causes.push(forbidden(
            "spec.schedulingGates".into(),
            &format!("only deletion is allowed, but found new scheduling gate '{gate}'"),
        ));
    }
    if !causes.is_empty() {
        return causes;
    }
    let mut munged = normalized(spec);
    let before = normalized(old_spec);
    for key in ["containers", "initContainers"] {
        if let (Some(Value::Array(now)), Some(Value::Array(was))) = (munged.get_mut(key), before.get(key)) {
            for (c, o) in now.iter_mut().zip(was) {
                if let (Value::Object(c), Some(image)) = (c, o.get("image")) {
                    c.insert("image".into(), image.clone());
                }
            }
        }
    }
    for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
        set_as(&mut munged, &before, key);
    }
    let grace = |s: &Map<String, Value>| s.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(&before).is_some_and(|g| g < 0) && grace(&munged) == Some(1) {
        set_as(&mut munged, &before, "terminationGracePeriodSeconds");
    }
    if !old_gates.is_empty() {
        // A gated pod's node selector and affinity may still be narrowed.
        for key in ["nodeSelector", "affinity"] {
            set_as(&mut munged, &before, key);
        }
    }
    if munged != before {
        causes.push(forbidden(
            "spec".into(),
            &format!("pod updates may not change fields other than {UPDATABLE}\n{}", diff(&before, &munged)),
        ));
    }
    causes
}

fn forbidden(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
}

fn list<'a>(spec: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    spec.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// A toleration kept by an update: the same, but for a `tolerationSeconds` no longer than before.
fn same_toleration(new: &Value, old: &Value) -> bool {
    let without_seconds = |v: &Value| {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("tolerationSeconds");
        normalized(&m)
    };
    let seconds = |v: &Value| v.get("tolerationSeconds").and_then(Value::as_i64);
    without_seconds(new) == without_seconds(old)
        && match (seconds(new), seconds(old)) {
            (Some(n), Some(o)) => n <= o,
            (n, o) => n == o,
        }
}

fn set_as(munged: &mut Map<String, Value>, before: &Map<String, Value>, key: &str) {
    match before.get(key) {
        Some(v) => munged.insert(key.into(), v.clone()),
        None => munged.remove(key),
    };
}

/// A spec as kube's semantic comparison sees it: unset, null and empty lists alike.
fn normalized(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
        .map(|(k, v)| (k.clone(), normalized_value(v)))
        .collect()
}

fn normalized_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(normalized(m)),
        Value::Array(a) => Value::Array(a.iter().map(normalized_value).collect()),
        other => other.clone(),
    }
}

/// The changed members of a spec, in the shape of kube's diff (`-` what was, `+` what would be).
fn diff(before: &Map<String, Value>, after: &Map<String, Value>) -> String {
    let mut out = String::from("  core.PodSpec{\n");
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for k in keys {
        let (b, a) = (before.get(k), after.get(k));
        if b == a {
            continue;
        }
        if let Some(b) = b {
            out.push_str(&format!("- \t{k}: {b},\n"));
        }
        if let Some(a) = a {
            out.push_str(&format!("+ \t{k}: {a},\n"));
        }
    }
    out.push_str("  }\n");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(spec: Value) -> Map<String, Value> {
        spec.as_object().unwrap().clone()
    }

    fn base() -> Value {
        json!({"containers": [{"name": "c", "image": "a:1"}], "restartPolicy": "Always",
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "activeDeadlineSeconds": 60})
    }

    fn messages(new: Value) -> Vec<String> {
        validate_update(&pod(new), &pod(base())).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn images_deadlines_and_tolerations_may_change() {
        let mut new = base();
        new["containers"][0]["image"] = json!("a:2");
        new["activeDeadlineSeconds"] = json!(30);
        new["tolerations"][0]["tolerationSeconds"] = json!(100);
        new["tolerations"].as_array_mut().unwrap().push(json!({"key": "other", "operator": "Exists"}));
        new["nodeSelector"] = Value::Null;
        assert_eq!(messages(new), Vec::<String>::new());
    }

    #[test]
    fn other_changes_are_kubes_forbidden() {
        let mut new = base();
        new["restartPolicy"] = json!("Never");
        let m = messages(new);
        assert_eq!(m.len(), 1);
        assert!(
            m[0].starts_with(&format!("spec: Forbidden: pod updates may not change fields other than {UPDATABLE}\n")),
            "{m:?}"
        );
        assert!(m[0].contains("- \trestartPolicy: \"Always\",\n+ \trestartPolicy: \"Never\","), "{m:?}");
        let mut new = base();
        new["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "b"}));
        assert_eq!(messages(new), ["spec.containers: Forbidden: pod updates may not add or remove containers"]);
        let mut new = base();
        new["activeDeadlineSeconds"] = json!(90);
        new["tolerations"] = json!([]);
        assert_eq!(
            messages(new),
            [
                "spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value",
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
            ]
        );
    }
}

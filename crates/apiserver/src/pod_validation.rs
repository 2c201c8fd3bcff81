//! What an update of a pod may change, as kube-apiserver's `ValidatePodUpdate` decides: once
//! created, a pod's spec changes only in its containers' images, a shorter
//! `activeDeadlineSeconds`, added tolerations (and any toleration's `tolerationSeconds`),
//! removed scheduling gates (and, while it has gates, additions to its node selector and its
//! node affinity), and a negative `terminationGracePeriodSeconds` set to 1. Anything else is
//! kube's 422 (`spec: Forbidden: pod updates may not change fields other than …`).
//!
//! Invariants: only updates of the pod itself are judged (its `status`, `binding` and the
//! server's own writes through them are not); the stored spec is read with today's defaults,
//! as kube reads it back; specs are compared as kube compares decoded objects, leniently: unset,
//! null, empty and zero values alike, quantities by value; containers may not be added or
//! removed, and each keeps an image.

use serde_json::{Map, Value};

use crate::policy_validation::{invalid, required};
use crate::structural::{Cause, go_value};

/// The fields kube lists as updatable, in its words.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The causes for which kube refuses updating a pod whose spec was `stored_spec` to `spec`.
pub(crate) fn validate_update(spec: &Map<String, Value>, stored_spec: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if spec == stored_spec {
        return causes;
    }
    let mut old_spec = stored_spec.clone();
    crate::defaults::pod_spec_defaults(&mut old_spec);
    for key in ["containers", "initContainers"] {
        let (now, before) = (list(spec, key), list(&old_spec, key));
        if now.len() != before.len() {
            causes.push(forbidden(format!("spec.{key}"), "pod updates may not add or remove containers"));
            return causes;
        }
        for (i, c) in now.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            if image.is_empty() {
                causes.push(required(format!("spec.{key}[{i}].image"), ""));
            } else if image.trim() != image {
                causes.push(invalid(
                    format!("spec.{key}[{i}].image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    // Only a shorter deadline; kube stops at the first fault of it.
    let deadline = |s: &Map<String, Value>| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    let deadline_at = "spec.activeDeadlineSeconds".to_string();
    match (deadline(spec), deadline(&old_spec)) {
        (Some(new), _) if !(0..=i64::from(i32::MAX)).contains(&new) => {
            causes.push(number(deadline_at, new, "must be between 0 and 2147483647, inclusive"));
            return causes;
        }
        (Some(new), Some(old)) if new > old => {
            causes.push(number(deadline_at, new, "must be less than or equal to previous value"));
            return causes;
        }
        (None, Some(_)) => {
            causes.push(invalid(deadline_at, "null", "must not update from a positive integer to nil value"))
        }
        _ => {}
    }
    let tolerations: Vec<Value> = list(spec, "tolerations").iter().map(without_seconds).collect();
    if list(&old_spec, "tolerations").iter().map(without_seconds).any(|old| !tolerations.contains(&old)) {
        causes.push(forbidden(
            "spec.tolerations".into(),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    let gate_names = |s: &Map<String, Value>| -> Vec<String> {
        list(s, "schedulingGates")
            .iter()
            .filter_map(|g| g.get("name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    let old_gates = gate_names(&old_spec);
    let mut reported = Vec::new();
    for (i, gate) in gate_names(spec).into_iter().enumerate() {
        if !old_gates.contains(&gate) && !reported.contains(&gate) {
            causes.push(forbidden(
                format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{gate}'"),
            ));
            reported.push(gate);
        }
    }
    let mut munged = normalized(spec);
    let before = normalized(&old_spec);
    for key in ["containers", "initContainers"] {
        if let (Some(Value::Array(now)), Some(Value::Array(was))) = (munged.get_mut(key), before.get(key)) {
            for (c, o) in now.iter_mut().zip(was) {
                if let Value::Object(c) = c {
                    match o.get("image") {
                        Some(image) => c.insert("image".into(), image.clone()),
                        None => c.remove("image"),
                    };
                }
            }
        }
    }
    for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
        set_as(&mut munged, &before, key);
    }
    let grace = |s: &Map<String, Value>| s.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(&old_spec).is_some_and(|g| g < 0) && grace(spec) == Some(1) {
        set_as(&mut munged, &before, "terminationGracePeriodSeconds");
    }
    if !old_gates.is_empty() {
        gated_pod(spec, &old_spec, &mut causes);
        // What a gated pod may change of its scheduling is judged above.
        set_as(&mut munged, &before, "nodeSelector");
        let node_affinity = before.get("affinity").and_then(|a| a.get("nodeAffinity")).cloned();
        let affinity = munged.entry("affinity").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(a) = affinity {
            match node_affinity {
                Some(n) => a.insert("nodeAffinity".into(), n),
                None => a.remove("nodeAffinity"),
            };
            if a.is_empty() {
                munged.remove("affinity");
            }
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

/// A gated pod's node selector may only gain entries.
fn gated_pod(spec: &Map<String, Value>, old_spec: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let empty = Map::new();
    let selector = |s: &Map<String, Value>| s.get("nodeSelector").and_then(Value::as_object).cloned();
    let (now, before) = (selector(spec), selector(old_spec));
    let kept = before.as_ref().unwrap_or(&empty).iter().all(|(k, v)| now.as_ref().and_then(|n| n.get(k)) == Some(v));
    if !kept {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                go_value(&now.map(Value::Object).unwrap_or(Value::Null))
            ),
            field: "spec.nodeSelector".into(),
        });
    }
}

pub(crate) fn forbidden(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
}

pub(crate) fn number(field: String, n: i64, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {n}: {detail}"), field }
}

pub(crate) fn list<'a>(spec: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    spec.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// A toleration as kube compares existing ones: whatever its `tolerationSeconds`.
fn without_seconds(t: &Value) -> Value {
    let mut m = t.as_object().cloned().unwrap_or_default();
    m.remove("tolerationSeconds");
    Value::Object(normalized(&m))
}

fn set_as(munged: &mut Map<String, Value>, before: &Map<String, Value>, key: &str) {
    match before.get(key) {
        Some(v) => munged.insert(key.into(), v.clone()),
        None => munged.remove(key),
    };
}

/// The members that map names to quantities.
const QUANTITY_MAPS: [&str; 3] = ["requests", "limits", "overhead"];

/// A spec as kube's semantic comparison of decoded objects sees it, leniently: members unset,
/// null, empty, `false`, `0` or `""` alike (Go's zero values), quantities by value.
fn normalized(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter().filter_map(|(k, v)| normalized_member(k, v).map(|v| (k.clone(), v))).collect()
}

/// A value as kube's semantic comparison sees it (see [`normalized`]): zero values as null.
pub(crate) fn lenient(v: &Value) -> Value {
    normalized_member("", v).unwrap_or(Value::Null)
}

fn normalized_member(key: &str, v: &Value) -> Option<Value> {
    let out = match v {
        Value::Object(m) if QUANTITY_MAPS.contains(&key) => Value::Object(
            m.iter().filter_map(|(k, q)| normalized_member(k, q).map(|q| (k.clone(), quantity(&q)))).collect(),
        ),
        Value::String(_) if key == "sizeLimit" => quantity(v),
        Value::Object(m) => Value::Object(normalized(m)),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalized_member("", x).unwrap_or(Value::Null)).collect()),
        other => other.clone(),
    };
    let zero = match &out {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    };
    (!zero).then_some(out)
}

/// A quantity by its value (`"1"` and `"1000m"` alike).
fn quantity(v: &Value) -> Value {
    match v.as_str().and_then(crate::quantity::parse) {
        Some(n) => Value::String(format!("{n}n")),
        None => v.clone(),
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

    /// A spec as a write brings it: with the defaults of decoding.
    fn spec(v: Value) -> Map<String, Value> {
        let mut m = v.as_object().unwrap().clone();
        crate::defaults::pod_spec_defaults(&mut m);
        m
    }

    fn base() -> Value {
        json!({"containers": [{"name": "c", "image": "a:1", "resources": {"requests": {"cpu": "1000m"}}}],
            "restartPolicy": "Always", "nodeSelector": {},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300, "value": ""}],
            "activeDeadlineSeconds": 60})
    }

    fn messages(new: Value) -> Vec<String> {
        validate_update(&spec(new), base().as_object().unwrap())
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn images_deadlines_tolerations_and_kubes_equal_forms_pass() {
        let mut new = base();
        new["containers"][0]["image"] = json!("a:2");
        new["activeDeadlineSeconds"] = json!(30);
        new["tolerations"][0]["tolerationSeconds"] = json!(600);
        new["tolerations"].as_array_mut().unwrap().push(json!({"key": "other", "operator": "Exists"}));
        // What a client that decodes into Go types sends back: empties left out, "1" for "1000m".
        new["nodeSelector"] = Value::Null;
        new["tolerations"][0].as_object_mut().unwrap().remove("value");
        new["containers"][0]["resources"]["requests"]["cpu"] = json!("1");
        assert_eq!(messages(new), Vec::<String>::new());
    }

    #[test]
    fn other_changes_are_kubes_refusals() {
        let mut new = base();
        new["restartPolicy"] = json!("Never");
        let m = messages(new);
        assert_eq!(m.len(), 1);
        assert!(
            m[0].starts_with(&format!("spec: Forbidden: pod updates may not change fields other than {UPDATABLE}\n")),
            "{m:?}"
        );
        let mut new = base();
        new["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "b"}));
        assert_eq!(messages(new), ["spec.containers: Forbidden: pod updates may not add or remove containers"]);
        let mut new = base();
        new["activeDeadlineSeconds"] = json!(90);
        new["tolerations"] = json!([]);
        assert_eq!(
            messages(new),
            ["spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"]
        );
        let mut new = base();
        new.as_object_mut().unwrap().remove("activeDeadlineSeconds");
        new["tolerations"] = json!([]);
        assert_eq!(
            messages(new),
            [
                "spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value",
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
            ]
        );
    }

    #[test]
    fn gates_may_only_go_and_gated_pods_may_only_gain_node_selectors() {
        let old = json!({"containers": [{"name": "c", "image": "a"}], "schedulingGates": [{"name": "g1"}],
            "nodeSelector": {"zone": "a"}});
        let old = old.as_object().unwrap();
        let new = spec(
            json!({"containers": [{"name": "c", "image": "a"}], "schedulingGates": [{"name": "g1"}, {"name": "g2"}],
            "nodeSelector": {"zone": "a", "disk": "ssd"}}),
        );
        let m: Vec<String> =
            validate_update(&new, old).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            m,
            ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g2'"]
        );
        let new = spec(json!({"containers": [{"name": "c", "image": "a"}], "nodeSelector": {"zone": "b"}}));
        let m: Vec<String> =
            validate_update(&new, old).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            m,
            [
                "spec.nodeSelector: Invalid value: {\"zone\":\"b\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
            ]
        );
    }
}

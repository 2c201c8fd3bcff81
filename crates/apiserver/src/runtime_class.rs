//! kube-apiserver v1.35's rules for node.k8s.io/v1 RuntimeClasses (their metadata is judged by
//! [`crate::object_meta`]), the warnings for deprecated node labels in their node selector, and
//! kube's table of deprecated node labels.
//!
//! Invariants: the handler is a DNS label and never changes; the pod overhead is judged as a
//! container's limits at `overhead.limits[<name>]`; the node selector as labels at its own path;
//! the tolerations as a pod's, each distinct by key, operator, value and effect.

use serde_json::{Map, Value};

use crate::policy_validation::invalid;
use crate::registry::ResourceInfo;
use crate::structural::{Cause, go_json, go_struct};

/// Whether `info` is the built-in RuntimeClass.
pub(crate) fn is_runtime_classes(info: &ResourceInfo) -> bool {
    info.custom.is_none() && info.group == "node.k8s.io" && info.plural == "runtimeclasses"
}

/// kube's deprecated node labels and what to use instead.
const DEPRECATED_NODE_LABELS: [(&str, &str); 5] = [
    ("beta.kubernetes.io/arch", "deprecated since v1.14; use \"kubernetes.io/arch\" instead"),
    ("beta.kubernetes.io/os", "deprecated since v1.14; use \"kubernetes.io/os\" instead"),
    (
        "failure-domain.beta.kubernetes.io/region",
        "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead",
    ),
    ("failure-domain.beta.kubernetes.io/zone", "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"),
    ("beta.kubernetes.io/instance-type", "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead"),
];

/// Why the node label `key` is deprecated, if it is.
pub(crate) fn deprecated_node_label(key: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS.iter().find(|(k, _)| *k == key).map(|(_, m)| *m)
}

/// The causes of the RuntimeClass `obj` written over `old` (None on create).
pub(crate) fn validate(obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let handler = obj.get("handler").and_then(Value::as_str).unwrap_or_default();
    for fault in crate::cel_format::dns1123_label(handler) {
        causes.push(invalid("handler".into(), handler, &fault));
    }
    if let Some(fixed) = obj.get("overhead").and_then(|o| o.get("podFixed")).and_then(Value::as_object) {
        let mut limits = Map::new();
        limits.insert("limits".into(), Value::Object(fixed.clone()));
        crate::container_resources::requirements(&limits, "overhead", &mut causes);
    }
    if let Some(scheduling) = obj.get("scheduling").filter(|s| s.is_object()) {
        crate::object_meta::labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector", &mut causes);
        let tolerations =
            scheduling.get("tolerations").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for (i, t) in tolerations.iter().enumerate() {
            crate::pod_spec_fields::toleration(t, &format!("scheduling.tolerations[{i}]"), &mut causes);
        }
        // Then each repeat, by key, operator, value and effect.
        let mut seen: Vec<[&str; 4]> = Vec::new();
        for (i, t) in tolerations.iter().enumerate() {
            let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
            let key = [text("key"), text("operator"), text("value"), text("effect")];
            if seen.contains(&key) {
                causes.push(duplicate_toleration(format!("scheduling.tolerations[{i}]"), t));
            }
            seen.push(key);
        }
    }
    if let Some(old) = old {
        let before = old.get("handler").and_then(Value::as_str).unwrap_or_default();
        if handler != before {
            causes.push(invalid("handler".into(), handler, "field is immutable"));
        }
    }
    causes
}

/// A repeated toleration, printed as kube prints its internal type.
fn duplicate_toleration(at: String, t: &Value) -> Cause {
    let text = |k: &str| go_json(&Value::from(t.get(k).and_then(Value::as_str).unwrap_or_default()));
    let seconds =
        t.get("tolerationSeconds").and_then(Value::as_i64).map_or_else(|| "null".to_string(), |s| s.to_string());
    let shown = go_struct(&[
        ("Key", text("key")),
        ("Operator", text("operator")),
        ("Value", text("value")),
        ("Effect", text("effect")),
        ("TolerationSeconds", seconds),
    ]);
    Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {shown}"), field: at }
}

/// The warnings a RuntimeClass gets: one per deprecated node label its node selector names.
pub(crate) fn warnings(obj: &Map<String, Value>) -> Vec<String> {
    let selector = obj.get("scheduling").and_then(|s| s.get("nodeSelector")).and_then(Value::as_object);
    selector
        .into_iter()
        .flat_map(Map::keys)
        .filter_map(|k| deprecated_node_label(k))
        .map(|m| format!("scheduling.nodeSelector: {m}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(obj: Value, old: Option<Value>) -> Vec<String> {
        let m = |v: Value| v.as_object().cloned().unwrap();
        let old = old.map(m);
        validate(&m(obj), old.as_ref()).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn runtime_classes_are_judged_as_kube_judges_them() {
        let class = json!({"metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"},
                "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}});
        assert!(judged(class.clone(), None).is_empty());
        let mut renamed = class.clone();
        renamed["handler"] = json!("kata");
        assert_eq!(judged(renamed, Some(class)), ["handler: Invalid value: \"kata\": field is immutable"]);
        let bad = json!({"handler": "run.sc", "overhead": {"podFixed": {"cpu": "-1"}},
            "scheduling": {"nodeSelector": {"a": "-x-"}, "tolerations": [
                {"key": "k", "operator": "Exists"}, {"key": "k", "operator": "Exists"}]}});
        assert_eq!(
            judged(bad, None),
            [
                "handler: Invalid value: \"run.sc\": must not contain dots",
                "overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "scheduling.nodeSelector: Invalid value: \"-x-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "scheduling.tolerations[1]: Duplicate value: {\"Key\":\"k\",\"Operator\":\"Exists\",\"Value\":\"\",\"Effect\":\"\",\"TolerationSeconds\":null}",
            ]
        );
        let empty = judged(json!({}), None);
        assert_eq!(empty.len(), 1);
        assert!(empty[0].starts_with("handler: Invalid value: \"\": a lowercase RFC 1123 label"), "{empty:?}");
    }

    #[test]
    fn deprecated_node_labels_warn() {
        let class = json!({"scheduling": {"nodeSelector": {"beta.kubernetes.io/os": "linux", "x": "y"}}});
        assert_eq!(
            warnings(class.as_object().unwrap()),
            ["scheduling.nodeSelector: deprecated since v1.14; use \"kubernetes.io/os\" instead"]
        );
    }
}

//! The pod-level fields of a pod spec that kube-apiserver's `ValidatePodSpec` judges among the
//! others, each function at its place in kube's order: the node selector (label keys and
//! values, [`node_selector`]); the readiness and scheduling gates (qualified names, a scheduling
//! gate once, [`gates`]); then ([`validate`]) the service account and node names (DNS
//! subdomains), the active deadline (1 to 2147483647 seconds), the host name and subdomain (DNS
//! labels), the tolerations (a label key, an operator with the value it allows, an effect kube
//! knows, a toleration time only for `NoExecute`), the host aliases ([`crate::pod_dns`]), the
//! priority and runtime class names (DNS subdomains) and the preemption policy.
//!
//! Invariants: only the spec is read; causes come in kube's order with its paths and messages.

use serde_json::Value;

use crate::pod_validation::number;
use crate::policy_validation::{duplicate, invalid, unsupported};
use crate::structural::Cause;

/// The causes for the node selector of the pod spec `spec` at `at` (`spec`, `spec.template.spec`).
pub(crate) fn node_selector(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    crate::object_meta::labels(spec.get("nodeSelector"), &format!("{at}.nodeSelector"), causes);
}

/// The causes for the readiness gates' condition types and the scheduling gates' names of the
/// pod spec `spec` at `at`.
pub(crate) fn gates(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let items = |key: &str| spec.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, gate) in items("readinessGates").iter().enumerate() {
        let condition = gate.get("conditionType").and_then(Value::as_str).unwrap_or("");
        for fault in crate::cel_format::qualified_name(condition) {
            causes.push(invalid(format!("{at}.readinessGates[{i}].conditionType"), condition, &fault));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, gate) in items("schedulingGates").iter().enumerate() {
        let name = gate.get("name").and_then(Value::as_str).unwrap_or("");
        for fault in crate::cel_format::qualified_name(name) {
            causes.push(invalid(format!("{at}.schedulingGates[{i}]"), name, &fault));
        }
        if seen.contains(&name) {
            causes.push(duplicate(format!("{at}.schedulingGates[{i}]"), name));
        }
        seen.push(name);
    }
}

/// The causes for the fields of the pod spec `spec` at `at` that kube judges after its host
/// name override.
pub(crate) fn validate(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let text = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or("");
    // The deprecated `serviceAccount` stands for a missing `serviceAccountName`, as kube's v1
    // conversion reads it.
    let account = Some(text("serviceAccountName")).filter(|n| !n.is_empty()).unwrap_or(text("serviceAccount"));
    for (key, name) in [("serviceAccountName", account), ("nodeName", text("nodeName"))] {
        subdomain(name, &format!("{at}.{key}"), causes);
    }
    if let Some(deadline) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        let field = format!("{at}.activeDeadlineSeconds");
        causes.push(number(field, deadline, "must be between 1 and 2147483647, inclusive"));
    }
    for key in ["hostname", "subdomain"] {
        let name = text(key);
        if !name.is_empty() {
            for fault in crate::cel_format::dns1123_label(name) {
                causes.push(invalid(format!("{at}.{key}"), name, &fault));
            }
        }
    }
    let tolerations = spec.get("tolerations").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, t) in tolerations.iter().enumerate() {
        toleration(t, &format!("{at}.tolerations[{i}]"), causes);
    }
    crate::pod_dns::host_aliases(spec, at, causes);
    subdomain(text("priorityClassName"), &format!("{at}.priorityClassName"), causes);
    // A runtime class that is set, even empty, names one.
    if let Some(class) = spec.get("runtimeClassName").and_then(Value::as_str) {
        for fault in crate::cel_format::dns1123_subdomain(class) {
            causes.push(invalid(format!("{at}.runtimeClassName"), class, &fault));
        }
    }
    if let Some(policy) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(policy, "PreemptLowerPriority" | "Never")
    {
        causes.push(unsupported(format!("{at}.preemptionPolicy"), policy, &["PreemptLowerPriority", "Never"]));
    }
}

/// kube's refusal of a pod created on a node while it has scheduling gates.
pub(crate) fn gated_node_name(pod: &serde_json::Map<String, Value>) -> Option<Cause> {
    let spec = pod.get("spec")?;
    let gated = spec.get("schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
    let placed = spec.get("nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    (gated && placed).then(|| {
        crate::pod_validation::forbidden(
            "spec.nodeName".into(),
            "cannot be set until all schedulingGates have been cleared",
        )
    })
}

/// A name that must be a DNS subdomain when it is set.
fn subdomain(name: &str, at: &str, causes: &mut Vec<Cause>) {
    if !name.is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(name) {
            causes.push(invalid(at.into(), name, &fault));
        }
    }
}

/// kube's `ValidateTolerations` of one toleration at `at`.
pub(crate) fn toleration(t: &Value, at: &str, causes: &mut Vec<Cause>) {
    let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
    let (key, operator, value, effect) = (text("key"), text("operator"), text("value"), text("effect"));
    for fault in crate::cel_format::qualified_name(key).into_iter().filter(|_| !key.is_empty()) {
        causes.push(invalid(format!("{at}.key"), key, &fault));
    }
    if key.is_empty() && operator != "Exists" {
        causes.push(invalid(
            format!("{at}.operator"),
            operator,
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute" {
        causes.push(invalid(
            format!("{at}.effect"),
            effect,
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    match operator {
        "Equal" | "" => {
            let faults = crate::cel_format::label_value(value);
            if !faults.is_empty() {
                // (kube reports the value at the operator's path.)
                causes.push(invalid(format!("{at}.operator"), value, &faults.join(";")));
            }
        }
        "Exists" => {
            if !value.is_empty() {
                causes.push(invalid(
                    format!("{at}.operator"),
                    value,
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        "Lt" | "Gt" => causes.push(unsupported(format!("{at}.operator"), operator, &["Equal", "Exists", "Lt", "Gt"])),
        other => causes.push(unsupported(format!("{at}.operator"), other, &["Equal", "Exists"])),
    }
    if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        causes.push(unsupported(format!("{at}.effect"), effect, &["NoSchedule", "PreferNoSchedule", "NoExecute"]));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        node_selector(&spec, "spec", &mut causes);
        gates(&spec, "spec", &mut causes);
        validate(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_fields_pass() {
        let spec = json!({"nodeSelector": {"kubernetes.io/os": "linux"}, "serviceAccountName": "builder",
            "nodeName": "node-1.example", "activeDeadlineSeconds": 600, "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                {"operator": "Exists"}]});
        assert_eq!(judged(spec), Vec::<String>::new());
    }

    #[test]
    fn faults_are_kube_s() {
        let spec = json!({"serviceAccountName": "Builder", "activeDeadlineSeconds": 0, "tolerations": [
            {"key": "", "operator": "Equal", "value": "x"},
            {"key": "gpu", "operator": "Exists", "value": "yes", "effect": "NoSchedule", "tolerationSeconds": 60},
            {"key": "gpu", "operator": "Above", "effect": "Never"}]});
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
                         '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used \
                         for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        assert_eq!(
            judged(spec),
            [
                format!("spec.serviceAccountName: Invalid value: \"Builder\": {subdomain}"),
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive".into(),
                "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into(),
                "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".into(),
                "spec.tolerations[1].operator: Invalid value: \"yes\": value must be empty when `operator` is 'Exists'".into(),
                "spec.tolerations[2].operator: Unsupported value: \"Above\": supported values: \"Equal\", \"Exists\"".into(),
                "spec.tolerations[2].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into(),
            ]
        );
        let spec = json!({"serviceAccount": "Bad_SA", "hostname": "web.1", "runtimeClassName": "",
            "preemptionPolicy": "Always"});
        let judged = judged(spec);
        assert_eq!(judged.len(), 4, "{judged:?}");
        assert!(
            judged[0].starts_with("spec.serviceAccountName: Invalid value: \"Bad_SA\": a lowercase RFC 1123 subdomain")
        );
        assert_eq!(judged[1], "spec.hostname: Invalid value: \"web.1\": must not contain dots");
        assert!(judged[2].starts_with("spec.runtimeClassName: Invalid value: \"\": a lowercase RFC 1123 subdomain"));
        assert_eq!(
            judged[3],
            "spec.preemptionPolicy: Unsupported value: \"Always\": supported values: \"PreemptLowerPriority\", \"Never\""
        );
    }

    #[test]
    fn gates_are_qualified_names_and_scheduling_gates_come_once() {
        let spec = json!({"readinessGates": [{"conditionType": "example.com/ready"}, {"conditionType": "a/b/c"}],
            "schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/quota"}, {"name": "-x"}]});
        let key = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        let name = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            judged(spec),
            [
                format!("spec.readinessGates[1].conditionType: Invalid value: \"a/b/c\": {key}"),
                "spec.schedulingGates[1]: Duplicate value: \"example.com/quota\"".into(),
                format!("spec.schedulingGates[2]: Invalid value: \"-x\": {name}"),
            ]
        );
        let gated = json!({"spec": {"nodeName": "node-1", "schedulingGates": [{"name": "g"}]}});
        let cause = gated_node_name(gated.as_object().unwrap()).map(|c| format!("{}: {}", c.field, c.message));
        assert_eq!(
            cause.as_deref(),
            Some("spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared")
        );
        assert!(gated_node_name(json!({"spec": {"nodeName": "node-1"}}).as_object().unwrap()).is_none());
    }
}

//! A pod spec's scheduling constraints as kube-apiserver judges them: its affinity
//! (`validateAffinity`) and its topology spread constraints
//! (`validateTopologySpreadConstraints`), and the label keys kube merges into their selectors
//! when a pod is created ([`merge_label_keys`]).
//!
//! - Node affinity: required terms (at least one; expressions with an operator kube knows, the
//!   values it allows, label keys and values; field expressions on `metadata.name` only, with one
//!   node name), preferred terms with a weight of 1 to 100 (their values are not judged).
//! - Pod affinity and anti-affinity terms: label and namespace selectors, namespace names, match
//!   and mismatch label keys (only with a label selector, not in both lists, not already in the
//!   selector), a topology key that is a label key; preferred terms weigh 1 to 100.
//! - Topology spread constraints: a positive max skew, a topology key, a known
//!   `whenUnsatisfiable`, no two constraints alike in both, `minDomains` positive and only with
//!   `DoNotSchedule`, known node inclusion policies, match label keys as for pod affinity, a valid
//!   label selector.
//!
//! Invariants: only the spec is read; causes come in kube's order with its paths (including its
//! `namespace`, `[i][j]` and `{topologyKey, whenUnsatisfiable}` quirks) and messages. The merge
//! runs on pods only, as kube's create strategy does, so templates are judged as written.

use serde_json::{Map, Value, json};

use crate::admission_policy::strings;
use crate::pod_spec_validation::list;
use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::Cause;
use crate::webhook_configuration::check_selector;

/// The causes for the affinity of the pod spec `spec` at `at`.
pub(crate) fn affinity(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(affinity) = spec.get("affinity").filter(|a| a.is_object()) else { return };
    let at = format!("{at}.affinity");
    if let Some(node) = present(affinity, "nodeAffinity") {
        let at = format!("{at}.nodeAffinity");
        if let Some(required_terms) = present(node, "requiredDuringSchedulingIgnoredDuringExecution") {
            node_selector(required_terms, &format!("{at}.requiredDuringSchedulingIgnoredDuringExecution"), causes);
        }
        let at = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in list(node, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            weight(term, &format!("{at}[{i}]"), causes);
            let preference = term.get("preference").unwrap_or(&Value::Null);
            node_selector_term(preference, false, &format!("{at}[{i}].preference"), causes);
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pod) = present(affinity, key) else { continue };
        let at = format!("{at}.{key}");
        let required_at = format!("{at}.requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in list(pod, "requiredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            pod_affinity_term(term, &format!("{required_at}[{i}]"), causes);
        }
        let preferred_at = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, weighted) in list(pod, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            let at = format!("{preferred_at}[{i}]");
            weight(weighted, &at, causes);
            let term = weighted.get("podAffinityTerm").unwrap_or(&Value::Null);
            pod_affinity_term(term, &format!("{at}.podAffinityTerm"), causes);
        }
    }
}

/// A member of `v` that is set (not missing, not null).
fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|m| !m.is_null())
}

/// A weighted term's weight: 1 to 100.
fn weight(term: &Value, at: &str, causes: &mut Vec<Cause>) {
    let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=100).contains(&weight) {
        causes.push(number(format!("{at}.weight"), weight, "must be in the range 1-100"));
    }
}

/// kube's `ValidateNodeSelector` of required node affinity: at least one term, each judged.
pub(crate) fn node_selector(selector: &Value, at: &str, causes: &mut Vec<Cause>) {
    let terms = list(selector, "nodeSelectorTerms");
    if terms.is_empty() {
        causes.push(required(format!("{at}.nodeSelectorTerms"), "must have at least one node selector term"));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        node_selector_term(term, true, &format!("{at}.nodeSelectorTerms[{i}]"), causes);
    }
}

/// A node selector term: its label expressions (their values judged when `values_judged`), then
/// its field expressions.
fn node_selector_term(term: &Value, values_judged: bool, at: &str, causes: &mut Vec<Cause>) {
    for (j, e) in list(term, "matchExpressions").iter().enumerate() {
        let at = format!("{at}.matchExpressions[{j}]");
        let values = strings(e, "values");
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => {
                causes.push(required(format!("{at}.values"), "must be specified when `operator` is 'In' or 'NotIn'"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => causes.push(required(
                format!("{at}.values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => causes.push(invalid(format!("{at}.operator"), other, "not a valid selector operator")),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for fault in crate::cel_format::qualified_name(key) {
            causes.push(invalid(format!("{at}.key"), key, &fault));
        }
        if values_judged {
            for (k, v) in values.iter().enumerate() {
                for fault in crate::cel_format::label_value(v) {
                    causes.push(invalid(format!("{at}.values[{k}]"), v, &fault));
                }
            }
        }
    }
    for (j, e) in list(term, "matchFields").iter().enumerate() {
        let at = format!("{at}.matchFields[{j}]");
        let values = strings(e, "values");
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" => {
                if values.len() != 1 {
                    causes.push(required(
                        format!("{at}.values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    ));
                }
            }
            other => causes.push(invalid(format!("{at}.operator"), other, "not a valid selector operator")),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        if key != "metadata.name" {
            causes.push(invalid(format!("{at}.key"), key, "not a valid field selector key"));
            continue;
        }
        for (k, v) in values.iter().enumerate() {
            for fault in crate::cel_format::dns1123_subdomain(v) {
                causes.push(invalid(format!("{at}.values[{k}]"), v, &fault));
            }
        }
    }
}

/// kube's `validatePodAffinityTerm` at `at`.
fn pod_affinity_term(term: &Value, at: &str, causes: &mut Vec<Cause>) {
    let selector = present(term, "labelSelector");
    if let Some(sel) = selector {
        check_selector(sel, &format!("{at}.labelSelector"), causes);
    }
    if let Some(sel) = present(term, "namespaceSelector") {
        check_selector(sel, &format!("{at}.namespaceSelector"), causes);
    }
    for name in strings(term, "namespaces") {
        for fault in crate::cel_format::dns1123_label(name) {
            causes.push(invalid(format!("{at}.namespace"), name, &fault));
        }
    }
    label_keys(at, &strings(term, "matchLabelKeys"), &strings(term, "mismatchLabelKeys"), selector, causes);
    let key = term.get("topologyKey").and_then(Value::as_str).unwrap_or("");
    if key.is_empty() {
        causes.push(required(format!("{at}.topologyKey"), "can not be empty"));
    }
    for fault in crate::cel_format::qualified_name(key) {
        causes.push(invalid(format!("{at}.topologyKey"), key, &fault));
    }
}

/// kube's `ValidateMatchLabelKeysAndMismatchLabelKeys` of the term at `at`.
fn label_keys(at: &str, matching: &[&str], mismatching: &[&str], selector: Option<&Value>, causes: &mut Vec<Cause>) {
    for (key, keys) in [("matchLabelKeys", matching), ("mismatchLabelKeys", mismatching)] {
        if keys.is_empty() {
            continue;
        }
        if selector.is_none() {
            causes.push(forbidden(format!("{at}.{key}"), "must not be specified when labelSelector is not set"));
            continue;
        }
        for (j, k) in keys.iter().enumerate() {
            for fault in crate::cel_format::qualified_name(k) {
                causes.push(invalid(format!("{at}.{key}[{j}]"), k, &fault));
            }
        }
    }
    if let Some(sel) = selector {
        let mut seen: Vec<&str> =
            sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        for e in list(sel, "matchExpressions") {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            // kube reports the last place the key has among the match label keys.
            if let Some(i) = matching.iter().rposition(|k| *k == key)
                && seen.contains(&key)
            {
                causes.push(invalid(format!("{at}[{i}]"), key, "exists in both matchLabelKeys and labelSelector"));
            }
            seen.push(key);
        }
    }
    for (i, k) in matching.iter().enumerate() {
        if mismatching.contains(k) {
            causes.push(invalid(
                format!("{at}.matchLabelKeys[{i}]"),
                k,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
}

/// The causes for the topology spread constraints of the pod spec `spec` at `at`.
pub(crate) fn topology_spread(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let constraints = list(spec, "topologySpreadConstraints");
    let text = |c: &'_ Value, key: &str| -> String { c.get(key).and_then(Value::as_str).unwrap_or("").to_string() };
    for (i, c) in constraints.iter().enumerate() {
        let at = format!("{at}.topologySpreadConstraints[{i}]");
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            causes.push(number(format!("{at}.maxSkew"), skew, "must be greater than zero"));
        }
        let (key, action) = (text(c, "topologyKey"), text(c, "whenUnsatisfiable"));
        if key.is_empty() {
            causes.push(required(format!("{at}.topologyKey"), "can not be empty"));
        }
        if !matches!(action.as_str(), "DoNotSchedule" | "ScheduleAnyway") {
            let supported = ["DoNotSchedule", "ScheduleAnyway"];
            causes.push(unsupported(format!("{at}.whenUnsatisfiable"), &action, &supported));
        }
        if constraints[i + 1..]
            .iter()
            .any(|later| text(later, "topologyKey") == key && text(later, "whenUnsatisfiable") == action)
        {
            causes.push(duplicate(format!("{at}.{{topologyKey, whenUnsatisfiable}}"), &format!("{{{key}, {action}}}")));
        }
        if let Some(domains) = c.get("minDomains").and_then(Value::as_i64) {
            if domains <= 0 {
                causes.push(number(format!("{at}.minDomains"), domains, "must be greater than zero"));
            }
            if action != "DoNotSchedule" {
                let detail = format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}");
                causes.push(number(format!("{at}.minDomains"), domains, &detail));
            }
        }
        for key in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(policy) = c.get(key).and_then(Value::as_str)
                && !matches!(policy, "Honor" | "Ignore")
            {
                causes.push(unsupported(format!("{at}.{key}"), policy, &["Honor", "Ignore"]));
            }
        }
        let selector = present(c, "labelSelector");
        label_keys(&at, &strings(c, "matchLabelKeys"), &[], selector, causes);
        if let Some(sel) = selector {
            check_selector(sel, &format!("{at}.labelSelector"), causes);
        }
    }
}

/// kube's create strategy for a pod `obj`: each pod affinity term and topology spread constraint
/// with match (or mismatch) label keys and a label selector gets, for each key the pod's labels
/// have, an `In` (or `NotIn`) expression of the pod's value appended to its selector.
pub(crate) fn merge_label_keys(obj: &mut Map<String, Value>) {
    let labels =
        obj.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object).cloned().unwrap_or_default();
    let Some(spec) = obj.get_mut("spec") else { return };
    let merge = |target: &mut Value, with_mismatch: bool| {
        let keys = |field: &str| -> Vec<String> { strings(target, field).into_iter().map(str::to_string).collect() };
        let matching = keys("matchLabelKeys");
        let mismatching = if with_mismatch { keys("mismatchLabelKeys") } else { Vec::new() };
        if matching.is_empty() && mismatching.is_empty() {
            return;
        }
        let Some(Value::Object(selector)) = target.get_mut("labelSelector") else { return };
        let added: Vec<Value> = [(matching, "In"), (mismatching, "NotIn")]
            .into_iter()
            .flat_map(|(keys, operator)| {
                keys.into_iter()
                    .filter_map(|k| labels.get(&k).map(|v| json!({"key": k, "operator": operator, "values": [v]})))
                    .collect::<Vec<_>>()
            })
            .collect();
        if added.is_empty() {
            return;
        }
        let expressions = selector.entry("matchExpressions").or_insert_with(|| json!([]));
        if !expressions.is_array() {
            *expressions = json!([]);
        }
        if let Value::Array(expressions) = expressions {
            expressions.extend(added);
        }
    };
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pod) = spec.pointer_mut(&format!("/affinity/{key}")) else { continue };
        if let Some(Value::Array(terms)) = pod.get_mut("preferredDuringSchedulingIgnoredDuringExecution") {
            for weighted in terms {
                if let Some(term) = weighted.get_mut("podAffinityTerm") {
                    merge(term, true);
                }
            }
        }
        if let Some(Value::Array(terms)) = pod.get_mut("requiredDuringSchedulingIgnoredDuringExecution") {
            terms.iter_mut().for_each(|term| merge(term, true));
        }
    }
    if let Some(Value::Array(constraints)) = spec.get_mut("topologySpreadConstraints") {
        constraints.iter_mut().for_each(|c| merge(c, false));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        affinity(&spec, "spec", &mut causes);
        topology_spread(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_constraints_pass() {
        let spec = json!({"affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                        {"key": "gpu-count", "operator": "Gt", "values": ["1"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference":
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["Not A Label Value!"]}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname",
                "namespaces": ["default"], "matchLabelKeys": ["pod-template-hash"], "mismatchLabelKeys": ["tenant"]}}]}},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                 "minDomains": 3, "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash"],
                 "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore"},
                {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]});
        assert_eq!(judged(spec), Vec::<String>::new());
    }

    #[test]
    fn node_affinity_faults_are_kube_s() {
        let spec = json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "a/b/c", "operator": "Exists", "values": ["x y"]},
                    {"key": "n", "operator": "Gt", "values": ["1", "2"]}, {"key": "n", "operator": "Above", "values": ["1"]}],
                 "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["Node_1"]},
                    {"key": "metadata.labels", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}});
        let key = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        let value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        let term = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";
        assert_eq!(
            judged(spec),
            [
                format!("{term}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
                format!("{term}.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                format!("{term}.matchExpressions[1].key: Invalid value: \"a/b/c\": {key}"),
                format!("{term}.matchExpressions[1].values[0]: Invalid value: \"x y\": {value}"),
                format!("{term}.matchExpressions[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
                format!("{term}.matchExpressions[3].operator: Invalid value: \"Above\": not a valid selector operator"),
                format!("{term}.matchFields[0].values[0]: Invalid value: \"Node_1\": {subdomain}"),
                format!("{term}.matchFields[1].operator: Invalid value: \"Exists\": not a valid selector operator"),
                format!("{term}.matchFields[1].key: Invalid value: \"metadata.labels\": not a valid field selector key"),
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100".into(),
            ]
        );
        let spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}});
        assert_eq!(
            judged(spec),
            [
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"
            ]
        );
    }

    #[test]
    fn pod_affinity_faults_are_kube_s() {
        let spec = json!({"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                 "namespaces": ["Team_A"], "matchLabelKeys": ["app", "tier"], "mismatchLabelKeys": ["tier"], "topologyKey": ""},
                {"matchLabelKeys": ["app"], "topologyKey": "zone"}],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}]}}});
        let label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        let name = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let at = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        assert_eq!(
            judged(spec),
            [
                format!("{at}[0].namespace: Invalid value: \"Team_A\": {label}"),
                format!("{at}[0][0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"),
                format!("{at}[0].matchLabelKeys[1]: Invalid value: \"tier\": exists in both matchLabelKeys and mismatchLabelKeys"),
                format!("{at}[0].topologyKey: Required value: can not be empty"),
                format!("{at}[0].topologyKey: Invalid value: \"\": name part must be non-empty"),
                format!("{at}[0].topologyKey: Invalid value: \"\": {name}"),
                format!("{at}[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
                "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100".into(),
            ]
        );
    }

    #[test]
    fn topology_spread_faults_are_kube_s() {
        let spec = json!({"topologySpreadConstraints": [
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 0,
             "nodeAffinityPolicy": "Always", "matchLabelKeys": ["app"]},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Maybe", "minDomains": 2,
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "matchLabelKeys": ["app", "app"]}]});
        let at = "spec.topologySpreadConstraints";
        assert_eq!(
            judged(spec),
            [
                format!("{at}[0].maxSkew: Invalid value: 0: must be greater than zero"),
                format!("{at}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: \"{{zone, DoNotSchedule}}\""),
                format!("{at}[0].minDomains: Invalid value: 0: must be greater than zero"),
                format!(
                    "{at}[0].nodeAffinityPolicy: Unsupported value: \"Always\": supported values: \"Honor\", \"Ignore\""
                ),
                format!("{at}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
                format!("{at}[2].topologyKey: Required value: can not be empty"),
                format!(
                    "{at}[2].whenUnsatisfiable: Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                ),
                format!(
                    "{at}[2].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not Maybe"
                ),
            ]
        );
    }

    #[test]
    fn created_pods_get_their_label_keys_merged() {
        let mut pod = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "abc", "tenant": "t1"}},
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash", "absent"],
                 "mismatchLabelKeys": ["tenant"], "topologyKey": "kubernetes.io/hostname"},
                {"matchLabelKeys": ["app"], "topologyKey": "zone"}]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "matchLabelKeys": ["pod-template-hash"]}]}});
        let Value::Object(obj) = &mut pod else { unreachable!() };
        merge_label_keys(obj);
        let terms = &pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        assert_eq!(
            terms[0]["labelSelector"],
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "pod-template-hash", "operator": "In", "values": ["abc"]},
                {"key": "tenant", "operator": "NotIn", "values": ["t1"]}]})
        );
        assert_eq!(terms[1].get("labelSelector"), None);
        assert_eq!(
            pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"],
            json!([{"key": "app", "operator": "Exists"}, {"key": "pod-template-hash", "operator": "In", "values": ["abc"]}])
        );
    }
}

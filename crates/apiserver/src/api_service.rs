//! apiregistration.k8s.io/v1 APIServices as kube-apiserver v1.35 keeps them: the rules of their
//! spec and status, the status a create starts with, and the priorities kube gives the group
//! versions it serves (which [`crate::api_service_registration`] registers).
//!
//! Invariants: an APIService is named `<version>.<group>` (`v1.` for the core group); a local
//! one (no `service`) is available from its creation, with kube's `Local` condition; one backed
//! by a service starts with no condition (no availability check runs for it, the server does not
//! proxy to it, and discovery does not list its group); a status condition's status is `True`,
//! `False` or `Unknown`.

use serde_json::{Map, Value, json};

use crate::policy_validation::{invalid, required, unsupported};
use crate::registry::ResourceInfo;
use crate::structural::Cause;
use crate::workload_validation::invalid_value;

/// The group.
pub(crate) const GROUP: &str = "apiregistration.k8s.io";

/// Whether `info` is the built-in APIService.
pub(crate) fn is_api_services(info: &ResourceInfo) -> bool {
    info.custom.is_none() && info.group == GROUP && info.plural == "apiservices"
}

/// The group and version priorities kube-apiserver v1.35 registers its group versions with.
const PRIORITIES: [(&str, &str, i64, i64); 21] = [
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1", 16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// The priorities of a built-in group version kube registers, if it is one.
pub(crate) fn priorities(group: &str, version: &str) -> Option<(i64, i64)> {
    PRIORITIES.iter().find(|(g, v, _, _)| *g == group && *v == version).map(|(_, _, g, v)| (*g, *v))
}

/// The name of the APIService of a group version.
pub(crate) fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The condition of an APIService served by this server.
pub(crate) fn local_condition(now: &str) -> Value {
    json!({"type": "Available", "status": "True", "lastTransitionTime": now, "reason": "Local",
        "message": "Local APIServices are always available"})
}

/// The status a create starts with: a local APIService is available, one backed by a service
/// has no condition yet.
pub(crate) fn fresh_status(obj: &Map<String, Value>, now: &str) -> Value {
    match obj.get("spec").and_then(|s| s.get("service")).filter(|s| !s.is_null()) {
        None => json!({"conditions": [local_condition(now)]}),
        Some(_) => json!({}),
    }
}

/// kube's default: a service's port is 443.
pub(crate) fn default(obj: &mut Map<String, Value>) {
    if let Some(Value::Object(service)) = obj.get_mut("spec").and_then(|s| s.get_mut("service"))
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// The causes of the APIService `obj` (its spec, its name against it, and its status).
pub(crate) fn validate(obj: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = (text("group"), text("version"));
    let wanted = name_of(group, version);
    let meta = obj.get("metadata");
    for field in ["name", "generateName"] {
        let Some(name) = meta.and_then(|m| m.get(field)).and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            continue;
        };
        let segment = crate::object_meta::name_faults(crate::object_meta::NameRule::PathSegment, name, false);
        if !segment.is_empty() {
            // Reported by the metadata's own rules.
            continue;
        }
        if name != wanted {
            let detail = format!("must be `spec.version+\".\"+spec.group`: {}", crate::structural::go_quote(&wanted));
            causes.push(invalid(format!("metadata.{field}"), name, &detail));
        }
    }
    if group.is_empty() && version != "v1" {
        causes.push(required("spec.group".into(), "only v1 may have an empty group and it better be legacy kube"));
    }
    if !group.is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(group) {
            causes.push(invalid("spec.group".into(), group, &fault));
        }
    }
    for fault in crate::cel_format::dns1035_label(version) {
        causes.push(invalid("spec.version".into(), version, &fault));
    }
    // (kube's bounds take the limit its message calls excluded.)
    for (field, limit) in [("groupPriorityMinimum", 20000), ("versionPriority", 1000)] {
        let priority = spec.get(field).and_then(Value::as_i64).unwrap_or(0);
        if !(1..=limit).contains(&priority) {
            let detail = format!("must be positive and less than {limit}");
            causes.push(invalid_value(&format!("spec.{field}"), &priority.to_string(), &detail));
        }
    }
    let ca_bundle = text("caBundle");
    let skip_verify = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    match spec.get("service").filter(|s| !s.is_null()) {
        None => {
            if !ca_bundle.is_empty() {
                // (Shown as its decoded size.)
                let bytes = base64_len(ca_bundle);
                causes.push(invalid(
                    "spec.caBundle".into(),
                    &format!("{bytes} bytes"),
                    "local APIServices may not have a caBundle",
                ));
            }
            if skip_verify {
                causes.push(invalid_value(
                    "spec.insecureSkipTLSVerify",
                    "true",
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
        }
        Some(service) => {
            for field in ["namespace", "name"] {
                if service.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                    causes.push(required(format!("spec.service.{field}"), ""));
                }
            }
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&port) {
                causes.push(invalid_value(
                    "spec.service.port",
                    &port.to_string(),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if skip_verify && !ca_bundle.is_empty() {
                causes.push(invalid_value(
                    "spec.insecureSkipTLSVerify",
                    "true",
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    let conditions = obj.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
        if !matches!(status, "True" | "False" | "Unknown") {
            causes.push(unsupported(format!("status.conditions[{i}].status"), status, &["True", "False", "Unknown"]));
        }
    }
    causes
}

/// The length of base64 `text` once decoded.
fn base64_len(text: &str) -> usize {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).map_or(text.len(), |b| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(v: Value) -> Vec<String> {
        validate(v.as_object().unwrap()).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn api_services_are_judged_as_kube_judges_them() {
        let local = json!({"metadata": {"name": "v1.apps"},
            "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}});
        assert!(judged(local).is_empty());
        let misnamed = json!({"metadata": {"name": "metrics"},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                "service": {"namespace": "kube-system", "name": "metrics-server", "port": 0}}});
        assert_eq!(
            judged(misnamed),
            [
                "metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\"",
                "spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            ]
        );
        let bare = json!({"metadata": {"name": "v2."}, "spec": {"version": "v2", "caBundle": "aGVsbG8=",
            "insecureSkipTLSVerify": true}, "status": {"conditions": [{"type": "Available", "status": "Maybe"}]}});
        assert_eq!(
            judged(bare),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
                "spec.caBundle: Invalid value: \"5 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\"",
            ]
        );
    }

    #[test]
    fn local_services_start_available() {
        let local = json!({"spec": {"group": "apps", "version": "v1"}});
        let status = fresh_status(local.as_object().unwrap(), "2026-01-01T00:00:00Z");
        assert_eq!(status["conditions"][0]["reason"], "Local");
        let remote = json!({"spec": {"service": {"namespace": "a", "name": "b"}}});
        assert_eq!(fresh_status(remote.as_object().unwrap(), "t"), json!({}));
    }
}

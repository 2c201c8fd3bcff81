//! A container's resource requests and limits, judged as kube-apiserver's
//! `ValidateContainerResourceRequirements` judges them, wherever a pod spec is written: a pod
//! (created, updated or resized) and the pod template of a workload, as part of
//! [`crate::pod_spec_validation`].
//!
//! - A resource is one of the standard ones for containers (`cpu`, `memory`,
//!   `ephemeral-storage`, `hugepages-<size>`) or a domain-qualified extended resource
//!   (`example.com/gpu`).
//! - No quantity is negative; an extended resource is a whole number; huge pages come in whole
//!   pages of their size.
//! - A request is at most its limit; a resource that cannot be overcommitted (extended
//!   resources, huge pages) is requested exactly at its limit, and has one.
//! - Huge pages come with CPU or memory.
//! - A container's `claims` name the pod's `resourceClaims`, each once.
//!
//! Invariants: quantities are compared by value and shown in kube's canonical form (`"2"`, not
//! `"2000m"`); resources are judged in name order (kube's order is a map's); the checks only
//! read the spec.

use serde_json::{Map, Value};

use crate::structural::{Cause, go_quote};

/// The names of a pod spec's `resourceClaims`, sorted, each once: what a container's `claims`
/// may name.
pub(crate) fn pod_claims(spec: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = spec
        .get("resourceClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The causes for which kube refuses the resources of the container `c` at `at`
/// (`spec.containers[0]`), whose pod has the resource claims `pod_claims` ([`pod_claims`]).
pub(crate) fn validate(c: &Value, pod_claims: &[&str], at: &str, causes: &mut Vec<Cause>) {
    if let Some(r) = c.get("resources").and_then(Value::as_object) {
        let at = format!("{at}.resources");
        requirements(r, &at, causes);
        claims(r, pod_claims, &format!("{at}.claims"), causes);
    }
}

/// kube's refusal of a huge pages quantity that is not a whole number of its pages (the value
/// rounded up to a whole number, as Go's `Value()` rounds it).
fn huge_page_multiple(name: &str, value: i128, shown: &str, path: &str, causes: &mut Vec<Cause>) {
    let Some(size) = name.strip_prefix("hugepages-") else { return };
    let nano = crate::quantity::NANO;
    let page = crate::quantity::parse(size).filter(|p| *p > 0 && p % nano == 0);
    let units = if value >= 0 { (value + nano - 1) / nano } else { -(-value / nano) };
    if page.is_none_or(|p| units % (p / nano) != 0) {
        causes.push(invalid(path, shown, &format!("{shown} is not positive integer multiple of {name}")));
    }
}

/// A container's claims name the pod's resource claims, each (with its request) once.
fn claims(r: &Map<String, Value>, pod_claims: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let mut seen = Vec::new();
    for (i, claim) in r.get("claims").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = format!("{at}[{i}]");
        let name = claim.get("name").and_then(Value::as_str).unwrap_or("");
        let request = claim.get("request").and_then(Value::as_str).filter(|r| !r.is_empty());
        if let Some(request) = request {
            for fault in crate::cel_format::dns1123_label(request) {
                causes.push(invalid(&format!("{field}.request"), request, &fault));
            }
        }
        if name.is_empty() {
            causes.push(Cause { reason: "FieldValueRequired", message: "Required value".into(), field });
            continue;
        }
        let key = request.map_or_else(|| name.to_string(), |r| format!("{name}/{r}"));
        let duplicate = |value: &str| Cause {
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {}", go_quote(value)),
            field: field.clone(),
        };
        // The whole claim covers its requests: neither may follow the other.
        if seen.iter().any(|k| k == name) {
            causes.push(duplicate(name));
        } else if seen.contains(&key) {
            causes.push(duplicate(&key));
        } else {
            seen.push(key);
        }
        if request.is_none() {
            let requested = seen.iter().filter(|k| k.strip_prefix(name).is_some_and(|r| r.starts_with('/'))).count();
            causes.extend((0..requested).map(|_| duplicate(name)));
        }
        if !pod_claims.contains(&name) {
            let names = if pod_claims.is_empty() {
                " which is empty".to_string()
            } else {
                format!(": {}", pod_claims.join(", "))
            };
            causes.push(Cause {
                reason: "FieldValueNotFound",
                message: format!(
                    "Not found: {}: must be one of the names in pod.spec.resourceClaims{names}",
                    go_quote(name)
                ),
                field,
            });
        }
    }
}

/// kube's checks of the resource requirements `r` at `at` (`….resources`): names, quantities,
/// requests within limits.
pub(crate) fn requirements(r: &Map<String, Value>, at: &str, causes: &mut Vec<Cause>) {
    let list = |kind: &str| r.get(kind).and_then(Value::as_object);
    let (limits, requests) = (list("limits"), list("requests"));
    let mut cpu_or_memory = false;
    let mut huge_pages = false;
    for (kind, entries) in [("limits", limits), ("requests", requests)] {
        for (name, q) in entries.into_iter().flatten() {
            let path = format!("{at}.{kind}[{name}]");
            name_faults(name, &path, causes);
            let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
            let Some(value) = crate::quantity::parse(&text) else { continue };
            let shown = crate::quantity::canonical(&text).unwrap_or(text);
            if value < 0 {
                causes.push(invalid(&path, &shown, "must be greater than or equal to 0"));
            }
            if extended_resource(name) && value % (crate::quantity::NANO) != 0 {
                causes.push(invalid(&path, &shown, "must be an integer"));
            }
            huge_pages |= name.starts_with("hugepages-");
            cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
            if kind == "limits" {
                huge_page_multiple(name, value, &shown, &path, causes);
                continue;
            }
            let limit = limits.and_then(|l| l.get(name));
            let limit_text = limit.map(|l| l.as_str().map(str::to_string).unwrap_or_else(|| l.to_string()));
            match limit_text.as_deref().and_then(|t| crate::quantity::parse(t).map(|v| (v, t))) {
                Some((l, t)) => {
                    let limit_shown = crate::quantity::canonical(t).unwrap_or_else(|| t.to_string());
                    let at_requests = format!("{at}.requests");
                    if value != l && !overcommits(name) {
                        let detail = format!("must be equal to {name} limit of {limit_shown}");
                        causes.push(invalid(&at_requests, &shown, &detail));
                    } else if value > l {
                        let detail = format!("must be less than or equal to {name} limit of {limit_shown}");
                        causes.push(invalid(&at_requests, &shown, &detail));
                    }
                }
                None if limit.is_none() && !overcommits(name) => causes.push(Cause {
                    reason: "FieldValueRequired",
                    message: "Required value: Limit must be set for non overcommitable resources".into(),
                    field: format!("{at}.limits"),
                }),
                None => {}
            }
            huge_page_multiple(name, value, &shown, &path, causes);
        }
    }
    if huge_pages && !cpu_or_memory {
        causes.push(Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: HugePages require cpu or memory".into(),
            field: at.into(),
        });
    }
}

/// Resource names a quota may name without a domain (kube's standard resources).
const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "storage",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "requests.storage",
    "services.loadbalancers",
    "services.nodeports",
    "configmaps",
];

/// kube's `ValidateContainerResourceName`: a qualified name; without a domain a standard
/// resource of containers (cpu, memory, ephemeral-storage, hugepages-*); with one, kube's own
/// or an extended resource name.
pub(crate) fn name_faults(name: &str, at: &str, causes: &mut Vec<Cause>) {
    resource_name_faults(name, at, causes);
    if !name.contains('/') {
        if !(matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")) {
            causes.push(invalid(at, name, "must be a standard resource for containers"));
        }
    } else if !native(name) && !extended_resource(name) {
        causes.push(invalid(at, name, "doesn't follow extended resource name standard"));
    }
}

/// kube's `ValidateResourceName`: a qualified name, a standard resource unless it has a domain.
pub(crate) fn resource_name_faults(name: &str, at: &str, causes: &mut Vec<Cause>) {
    let faults = crate::cel_format::qualified_name(name);
    let hugepages = |n: &str| ["hugepages-", "requests.hugepages-"].iter().any(|p| n.starts_with(p));
    if !faults.is_empty() {
        causes.extend(faults.iter().map(|f| invalid(at, name, f)));
    } else if !(name.contains('/') || STANDARD_RESOURCES.contains(&name) || hugepages(name)) {
        causes.push(invalid(at, name, "must be a standard resource type or fully qualified"));
    }
}

/// A resource of Kubernetes itself: unqualified, or in the `kubernetes.io` domain.
fn native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// An extended resource: qualified outside Kubernetes' domain, not a quota request, and a
/// qualified name as a quota request.
pub(crate) fn extended_resource(name: &str) -> bool {
    !native(name)
        && !name.starts_with("requests.")
        && crate::cel_format::qualified_name(&format!("requests.{name}")).is_empty()
}

/// Whether a resource may be requested below its limit (not extended resources or huge pages).
pub(crate) fn overcommits(name: &str) -> bool {
    native(name) && !name.starts_with("hugepages-")
}

fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {}: {detail}", go_quote(value)),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The causes of every container of `spec`.
    fn judged(spec: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        for key in ["containers", "initContainers"] {
            for (i, c) in spec.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
                validate(c, &pod_claims(spec), &format!("spec.{key}[{i}]"), &mut causes);
            }
        }
        causes
    }

    fn messages(containers: Value) -> Vec<String> {
        judged(&json!({"containers": containers})).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn requests_within_limits_pass() {
        let ok = json!([{"name": "c", "resources": {
            "requests": {"cpu": "500m", "memory": "64Mi", "example.com/gpu": "1"},
            "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "1"}}}]);
        assert_eq!(messages(ok), Vec::<String>::new());
    }

    #[test]
    fn claims_name_the_pods_claims() {
        let spec = json!({"resourceClaims": [{"name": "gpu"}, {"name": "fpga"}, {"name": ""}], "containers": [{"name": "c",
            "resources": {"claims": [{"name": "gpu"}, {"name": "gpu"}, {"name": "gpu", "request": "big"}, {"name": "tpu"}, {},
                {"name": "fpga", "request": "Big"}, {"name": "fpga"}]}}]});
        let m: Vec<String> = judged(&spec).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            m,
            [
                "spec.containers[0].resources.claims[1]: Duplicate value: \"gpu\"",
                "spec.containers[0].resources.claims[2]: Duplicate value: \"gpu\"",
                "spec.containers[0].resources.claims[3]: Not found: \"tpu\": must be one of the names in pod.spec.resourceClaims: fpga, gpu",
                "spec.containers[0].resources.claims[4]: Required value",
                &format!(
                    "spec.containers[0].resources.claims[5].request: Invalid value: \"Big\": {}",
                    crate::crd_validation::LABEL_MSG
                ),
                "spec.containers[0].resources.claims[6]: Duplicate value: \"fpga\"",
            ]
        );
        let alone = json!({"containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]});
        let m: Vec<String> = judged(&alone).into_iter().map(|c| c.message).collect();
        assert_eq!(m, ["Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims which is empty"]);
    }

    #[test]
    fn kubes_refusals() {
        let bad = json!([{"name": "c", "resources": {
            "requests": {"cpu": "2000m", "example.com/gpu": "1", "memory": "-1Mi"},
            "limits": {"cpu": "1", "example.com/gpu": "2", "gpu": "1"}}},
            {"name": "d", "resources": {"requests": {"example.com/fpga": "1.5"}, "limits": {"hugepages-2Mi": "3Mi"}}},
            {"name": "e", "resources": {"limits": {"memory": "1Gi", "hugepages-2Mi": "0", "hugepages-1500m": "3"}}}]);
        assert_eq!(
            messages(bad),
            [
                "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2",
                "spec.containers[0].resources.requests[memory]: Invalid value: \"-1Mi\": must be greater than or equal to 0",
                "spec.containers[1].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "spec.containers[1].resources.requests[example.com/fpga]: Invalid value: \"1500m\": must be an integer",
                "spec.containers[1].resources.limits: Required value: Limit must be set for non overcommitable resources",
                "spec.containers[1].resources: Forbidden: HugePages require cpu or memory",
                "spec.containers[2].resources.limits[hugepages-1500m]: Invalid value: \"3\": 3 is not positive integer multiple of hugepages-1500m",
            ]
        );
    }
}

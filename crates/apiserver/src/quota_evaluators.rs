//! What kube's quota evaluators count: the usage an object charges to a ResourceQuota, the
//! resource names a kind's evaluator tracks, the quota scopes an object falls in, and the
//! requests and limits a pod must set under a compute quota.
//!
//! - Pods: `count/pods` always; while the pod is not terminal (not `Succeeded`/`Failed`, not past
//!   its deletion grace) also `pods` and its requests and limits summed as kube's `PodRequests` /
//!   `PodLimits` (containers, the largest init container with the sidecars before it, pod-level
//!   cpu and memory, overhead): `cpu`/`requests.cpu`, `limits.cpu`, the same for `memory` and
//!   `ephemeral-storage`, `hugepages-*` and `requests.hugepages-*`, `requests.<extended>`.
//! - Services: `services`, `count/services`, `services.loadbalancers` and `services.nodeports`
//!   (a NodePort Service's ports, a LoadBalancer's unless it allocates no node ports).
//! - Claims: `persistentvolumeclaims`, `requests.storage` (the larger of the request and the
//!   allocated size, in whole bytes), each also per class
//!   (`<class>.storageclass.storage.k8s.io/...`).
//! - ResourceClaims: `count/resourceclaims.resource.k8s.io`, and per device class
//!   `<class>.deviceclass.resource.k8s.io/devices`: the devices a request may be given (its
//!   count, 32 for `All`, the most of any of its `firstAvailable` subrequests per class).
//! - Every other namespaced resource: `count/<resource>[.<group>]` (and the legacy `configmaps`,
//!   `secrets`, `replicationcontrollers`, `resourcequotas`).
//!
//! Invariants: usage values are kube's quantities with kube's formats (a sum keeps its first
//! non-zero term's); an evaluator without scope support (counts, Services) matches no quota
//! with scopes; a scope the kind does not know never matches.

use serde_json::Value;

use crate::quantity::{Format, NANO, Quantity, ResourceList, add_into, list_of, raise_to};
use crate::registry::ResourceInfo;

/// The evaluator of a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Evaluator {
    /// core/v1 pods.
    Pods,
    /// core/v1 services.
    Services,
    /// core/v1 persistentvolumeclaims.
    Claims,
    /// resource.k8s.io/v1 resourceclaims.
    ResourceClaims,
    /// Any other resource: its object count, under these names.
    Count(Vec<String>),
}

/// The object count of ResourceClaims.
const RESOURCE_CLAIMS_COUNT: &str = "count/resourceclaims.resource.k8s.io";
/// The end of the name of a device class's devices (`<class>.deviceclass.resource.k8s.io/devices`).
const DEVICE_CLASS_DEVICES: &str = ".deviceclass.resource.k8s.io/devices";

/// Resources no quota charges (kube's ignored set).
fn ignored(info: &ResourceInfo) -> bool {
    match info.group.as_str() {
        "" => matches!(info.plural.as_str(), "bindings" | "componentstatuses" | "events"),
        "events.k8s.io" => info.plural == "events",
        "authentication.k8s.io" => matches!(info.plural.as_str(), "tokenreviews" | "selfsubjectreviews"),
        "authorization.k8s.io" => {
            info.plural.ends_with("subjectaccessreviews") || info.plural == "selfsubjectrulesreviews"
        }
        _ => false,
    }
}

/// The `count/` name of a resource.
pub(crate) fn count_name(group: &str, plural: &str) -> String {
    match group {
        "" => format!("count/{plural}"),
        g => format!("count/{plural}.{g}"),
    }
}

impl Evaluator {
    /// The evaluator of `info`'s objects; None for what quota never charges.
    pub(crate) fn of(info: &ResourceInfo) -> Option<Evaluator> {
        if !info.namespaced || ignored(info) {
            return None;
        }
        Some(match (info.group.as_str(), info.plural.as_str()) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::Claims,
            ("resource.k8s.io", "resourceclaims") if info.custom.is_none() => Evaluator::ResourceClaims,
            (g, p) => {
                let mut names = vec![count_name(g, p)];
                if g.is_empty() && matches!(p, "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas") {
                    names.push(p.to_string());
                }
                Evaluator::Count(names)
            }
        })
    }

    /// Whether the evaluator tracks resource `name` (kube's `MatchingResources`).
    pub(crate) fn tracks(&self, name: &str) -> bool {
        match self {
            Evaluator::Pods => {
                matches!(
                    name,
                    "count/pods"
                        | "pods"
                        | "cpu"
                        | "memory"
                        | "ephemeral-storage"
                        | "requests.cpu"
                        | "requests.memory"
                        | "requests.ephemeral-storage"
                        | "limits.cpu"
                        | "limits.memory"
                        | "limits.ephemeral-storage"
                ) || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || name.strip_prefix("requests.").is_some_and(extended)
            }
            Evaluator::Services => {
                matches!(name, "count/services" | "services" | "services.nodeports" | "services.loadbalancers")
            }
            Evaluator::Claims => {
                matches!(name, "count/persistentvolumeclaims" | "persistentvolumeclaims" | "requests.storage")
                    || name.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
                    || name.ends_with(".storageclass.storage.k8s.io/requests.storage")
            }
            Evaluator::ResourceClaims => name == RESOURCE_CLAIMS_COUNT || name.ends_with(DEVICE_CLASS_DEVICES),
            Evaluator::Count(names) => names.iter().any(|n| n == name),
        }
    }

    /// The usage of `obj` (kube's `Usage`).
    pub(crate) fn usage(&self, obj: &Value) -> ResourceList {
        let mut usage = ResourceList::new();
        let mut set = |k: &str, n: i128| {
            usage.insert(k.to_string(), Quantity { nanos: n * NANO, format: Format::DecimalSI });
        };
        match self {
            Evaluator::Count(names) => names.iter().for_each(|n| set(n, 1)),
            Evaluator::Services => {
                set("count/services", 1);
                set("services", 1);
                let spec = obj.get("spec").unwrap_or(&Value::Null);
                let ports = spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                let (balancers, node_ports) = match spec.get("type").and_then(Value::as_str) {
                    Some("NodePort") => (0, ports.len()),
                    Some("LoadBalancer") => {
                        let given =
                            ports.iter().filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0);
                        match spec.get("allocateLoadBalancerNodePorts").and_then(Value::as_bool) {
                            Some(false) => (1, given.count()),
                            _ => (1, ports.len()),
                        }
                    }
                    _ => (0, 0),
                };
                set("services.loadbalancers", balancers);
                set("services.nodeports", node_ports as i128);
            }
            Evaluator::Claims => {
                set("count/persistentvolumeclaims", 1);
                set("persistentvolumeclaims", 1);
                let class = claim_class(obj);
                if !class.is_empty() {
                    set(&format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"), 1);
                }
                let requested = obj.pointer("/spec/resources/requests/storage").and_then(Quantity::of);
                let allocated = obj.pointer("/status/allocatedResources/storage").and_then(Quantity::of);
                if let Some(mut size) = requested {
                    if let Some(a) = allocated.filter(|a| a.nanos > size.nanos) {
                        size = a;
                    }
                    // Whole bytes, rounded up.
                    size.nanos = (size.nanos + NANO - 1).div_euclid(NANO) * NANO;
                    usage.insert("requests.storage".into(), size);
                    if !class.is_empty() {
                        usage.insert(format!("{class}.storageclass.storage.k8s.io/requests.storage"), size);
                    }
                }
            }
            Evaluator::ResourceClaims => {
                set(RESOURCE_CLAIMS_COUNT, 1);
                let requests = obj.pointer("/spec/devices/requests").and_then(Value::as_array);
                for request in requests.into_iter().flatten() {
                    // The most devices each class may give the request.
                    let mut most: Vec<(&str, i128)> = Vec::new();
                    let subrequests = request.get("firstAvailable").and_then(Value::as_array).filter(|s| !s.is_empty());
                    let asked: Vec<&Value> = match subrequests {
                        Some(subs) => subs.iter().collect(),
                        None => request.get("exactly").into_iter().collect(),
                    };
                    for r in asked {
                        let class = r.get("deviceClassName").and_then(Value::as_str).unwrap_or_default();
                        let devices = match r.get("allocationMode").and_then(Value::as_str) {
                            Some("ExactCount") => r.get("count").and_then(Value::as_i64).unwrap_or(0) as i128,
                            Some("All") => 32,
                            _ => 0,
                        };
                        match most.iter_mut().find(|(c, _)| *c == class) {
                            Some((_, n)) => *n = (*n).max(devices),
                            None => most.push((class, devices)),
                        }
                    }
                    for (class, n) in most {
                        let q = Quantity { nanos: n * NANO, format: Format::DecimalSI };
                        add_into(&mut usage, &format!("{class}{DEVICE_CLASS_DEVICES}"), q);
                    }
                }
            }
            Evaluator::Pods => {
                set("count/pods", 1);
                if !counts_compute(obj) {
                    return usage;
                }
                set("pods", 1);
                let spec = effective_spec(obj);
                let spec = spec.as_ref();
                let mut requests = crate::limit_ranger::pod_sum(spec, "requests");
                let mut limits = crate::limit_ranger::pod_sum(spec, "limits");
                for (k, q) in list_of(spec.get("overhead").and_then(Value::as_object)) {
                    add_into(&mut requests, &k, q);
                    if limits.contains_key(&k) {
                        add_into(&mut limits, &k, q);
                    }
                }
                compute_usage(&requests, &limits, &mut usage);
            }
        }
        usage
    }

    /// Whether the object `obj` is in every scope of `selectors` (a quota's scopes and scope
    /// selector expressions: scope, operator, values).
    pub(crate) fn in_scopes(&self, selectors: &[(String, String, Vec<String>)], obj: &Value) -> bool {
        selectors.iter().all(|(scope, op, values)| self.in_scope(scope, op, values, obj))
    }

    /// Whether the object `obj` is in scope `scope` under `operator` and `values` (kube's
    /// scope functions); an evaluator without scopes is in none.
    pub(crate) fn in_scope(&self, scope: &str, operator: &str, values: &[String], obj: &Value) -> bool {
        match self {
            Evaluator::Pods => {
                let spec = obj.get("spec").unwrap_or(&Value::Null);
                match scope {
                    "Terminating" => terminating(spec),
                    "NotTerminating" => !terminating(spec),
                    "BestEffort" => best_effort(obj),
                    "NotBestEffort" => !best_effort(obj),
                    "PriorityClass" => {
                        let class = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or_default();
                        label_match(operator, values, (!class.is_empty()).then_some(class))
                    }
                    "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
                    _ => false,
                }
            }
            Evaluator::Claims if scope == "VolumeAttributesClass" => {
                let names: Vec<&str> = [
                    "/spec/volumeAttributesClassName",
                    "/status/currentVolumeAttributesClassName",
                    "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
                ]
                .iter()
                .filter_map(|p| obj.pointer(p).and_then(Value::as_str))
                .filter(|n| !n.is_empty())
                .collect();
                match operator {
                    "Exists" => !names.is_empty(),
                    _ if names.is_empty() => label_match(operator, values, None),
                    _ => names.iter().any(|n| label_match(operator, values, Some(n))),
                }
            }
            _ => false,
        }
    }

    /// The compute resources of `required` some container of the pod `obj` does not set
    /// (kube's `Constraints`): `must specify <resource> for: <containers>; …`.
    pub(crate) fn constraints(&self, required: &[&str], obj: &Value) -> Result<(), String> {
        const COMPUTE: [&str; 6] = ["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];
        if *self != Evaluator::Pods || obj.pointer("/spec/resources").is_some_and(has_entries) {
            return Ok(());
        }
        let wanted: Vec<&str> = COMPUTE.into_iter().filter(|r| required.contains(r)).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let mut missing: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let containers = ["containers", "initContainers"].into_iter().filter_map(|k| spec.get(k)?.as_array());
        for c in containers.flatten() {
            let of = |key: &str| list_of(c.pointer(&format!("/resources/{key}")).and_then(Value::as_object));
            let mut own = ResourceList::new();
            compute_usage(&of("requests"), &of("limits"), &mut own);
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            for r in wanted.iter().filter(|r| !own.contains_key(**r)) {
                missing.entry(r).or_default().push(name);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .into_iter()
            .map(|(r, mut names)| {
                names.sort_unstable();
                format!("{r} for: {}", names.join(","))
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }

    /// Whether an update from `old` to `new` through `subresource` is charged (kube's
    /// `Handles`; creates of the main resource always are).
    pub(crate) fn charges_update(&self, subresource: &str, old: &Value, new: &Value) -> bool {
        match self {
            Evaluator::Pods => match subresource {
                "" => {
                    let spec = |v: &Value| v.get("spec").cloned().unwrap_or(Value::Null);
                    terminating(&spec(old)) != terminating(&spec(new))
                }
                s => s == "resize",
            },
            Evaluator::Services => true,
            Evaluator::Claims => matches!(subresource, "" | "status"),
            Evaluator::ResourceClaims => subresource.is_empty(),
            Evaluator::Count(_) => false,
        }
    }
}

fn has_entries(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.values().any(|l| l.as_object().is_some_and(|l| !l.is_empty())))
}

/// A claim's class: the beta annotation's, else the spec's.
fn claim_class(obj: &Value) -> &str {
    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .or_else(|| obj.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// An extended resource name (outside Kubernetes' domain), or a device class's.
fn extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") || name.starts_with("deviceclass.resource.kubernetes.io/")
}

/// kube's `podComputeUsageHelper`: the quota names of `requests` and `limits`.
fn compute_usage(requests: &ResourceList, limits: &ResourceList, usage: &mut ResourceList) {
    for (k, q) in requests {
        match k.as_str() {
            r if matches!(r, "cpu" | "memory" | "ephemeral-storage") || r.starts_with("hugepages-") => {
                usage.insert(k.clone(), *q);
                usage.insert(format!("requests.{k}"), *q);
            }
            e if extended(e) => {
                usage.insert(format!("requests.{e}"), *q);
            }
            _ => {}
        }
    }
    for (k, q) in limits {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            usage.insert(format!("limits.{k}"), *q);
        }
    }
}

/// The larger of each resource of some resource lists.
fn largest<'a>(lists: impl IntoIterator<Item = Option<&'a Value>>) -> ResourceList {
    let mut out = ResourceList::new();
    for list in lists {
        list_of(list.and_then(Value::as_object)).iter().for_each(|(k, q)| raise_to(&mut out, k, *q));
    }
    out
}

/// A pod's spec with each container's resources as kube's `PodRequests` and `PodLimits` read
/// them from its status too: the larger of the spec's, the status's and the allocated ones (the
/// status's alone while a resize is infeasible); for containers and sidecars whose status
/// reports resources.
fn effective_spec(pod: &Value) -> std::borrow::Cow<'_, Value> {
    use std::borrow::Cow;
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let status = pod.get("status").unwrap_or(&Value::Null);
    let reported = |key: &str| {
        status.get(key).and_then(Value::as_array).is_some_and(|a| a.iter().any(|s| s.get("resources").is_some()))
    };
    if !reported("containerStatuses") && !reported("initContainerStatuses") {
        return Cow::Borrowed(spec);
    }
    let infeasible = status.get("conditions").and_then(Value::as_array).is_some_and(|c| {
        c.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some("PodResizePending")
                && c.get("reason").and_then(Value::as_str) == Some("Infeasible")
        })
    });
    let mut spec = spec.clone();
    for (containers, statuses) in [("containers", "containerStatuses"), ("initContainers", "initContainerStatuses")] {
        let statuses = status.get(statuses).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for c in spec.get_mut(containers).and_then(Value::as_array_mut).into_iter().flatten() {
            if containers == "initContainers" && c.get("restartPolicy").and_then(Value::as_str) != Some("Always") {
                continue;
            }
            let name = c.get("name").cloned();
            let Some(cs) = statuses.iter().find(|s| s.get("name") == name.as_ref() && s.get("resources").is_some())
            else {
                continue;
            };
            let own = |key: &str| c.pointer(&format!("/resources/{key}"));
            let reported = |key: &str| cs.pointer(&format!("/resources/{key}"));
            let allocated = cs.get("allocatedResources");
            let (requests, limits) = match infeasible {
                true => (largest([reported("requests"), allocated]), largest([reported("limits")])),
                false => (
                    largest([own("requests"), reported("requests"), allocated]),
                    largest([own("limits"), reported("limits")]),
                ),
            };
            let json = |l: ResourceList| -> Value {
                Value::Object(l.into_iter().map(|(k, q)| (k, Value::String(q.shown()))).collect())
            };
            if let Some(c) = c.as_object_mut() {
                c.insert("resources".into(), serde_json::json!({"requests": json(requests), "limits": json(limits)}));
            }
        }
    }
    Cow::Owned(spec)
}

/// Whether a pod's compute resources count: not terminal, not past its deletion grace.
fn counts_compute(pod: &Value) -> bool {
    if matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
        return false;
    }
    let meta = pod.get("metadata").unwrap_or(&Value::Null);
    let deleted = meta.get("deletionTimestamp").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    match (deleted, meta.get("deletionGracePeriodSeconds").and_then(Value::as_i64)) {
        (Some(at), Some(grace)) => jiff::Timestamp::now().as_second() <= at.as_second() + grace,
        _ => true,
    }
}

fn terminating(spec: &Value) -> bool {
    spec.get("activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0)
}

/// kube's QoS BestEffort: the status's class, else no container asks for or limits cpu or memory.
fn best_effort(pod: &Value) -> bool {
    if let Some(class) = pod.pointer("/status/qosClass").and_then(Value::as_str).filter(|c| !c.is_empty()) {
        return class == "BestEffort";
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let containers = ["containers", "initContainers"].into_iter().filter_map(|k| spec.get(k)?.as_array());
    !containers.flatten().any(|c| {
        ["requests", "limits"].iter().any(|key| {
            let list = list_of(c.pointer(&format!("/resources/{key}")).and_then(Value::as_object));
            ["cpu", "memory"].iter().any(|r| list.get(*r).is_some_and(|q| q.nanos > 0))
        })
    })
}

fn cross_namespace_affinity(spec: &Value) -> bool {
    let crosses = |term: &Value| {
        term.get("namespaces").and_then(Value::as_array).is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(a) = spec.get("affinity").and_then(|a| a.get(*kind)) else { return false };
        let required = a.get("requiredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array);
        let preferred = a.get("preferredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array);
        required.into_iter().flatten().any(crosses)
            || preferred.into_iter().flatten().filter_map(|w| w.get("podAffinityTerm")).any(crosses)
    })
}

/// A label selector requirement over a set with one label whose value is `value` (None: the
/// empty set).
fn label_match(operator: &str, values: &[String], value: Option<&str>) -> bool {
    match operator {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| values.iter().all(|x| x != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shown(l: &ResourceList) -> Vec<(String, String)> {
        l.iter().map(|(k, q)| (k.clone(), q.shown())).collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn pods_charge_their_compute_resources_until_terminal() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "example.com/gpu": "1", "hugepages-2Mi": "4Mi"}}}],
            "overhead": {"cpu": "10m"}}});
        assert_eq!(
            shown(&Evaluator::Pods.usage(&pod)),
            pairs(&[
                ("count/pods", "1"),
                ("cpu", "510m"),
                ("hugepages-2Mi", "4Mi"),
                ("limits.cpu", "1010m"),
                ("memory", "64Mi"),
                ("pods", "1"),
                ("requests.cpu", "510m"),
                ("requests.example.com/gpu", "1"),
                ("requests.hugepages-2Mi", "4Mi"),
                ("requests.memory", "64Mi"),
            ])
        );
        let mut done = pod.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(shown(&Evaluator::Pods.usage(&done)), pairs(&[("count/pods", "1")]));
        let mut gone = pod;
        gone["metadata"] = json!({"deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30});
        assert_eq!(shown(&Evaluator::Pods.usage(&gone)), pairs(&[("count/pods", "1")]));
    }

    #[test]
    fn pods_charge_what_their_status_reports_too() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"},
            "limits": {"cpu": "2"}}}]},
            "status": {"containerStatuses": [{"name": "a", "allocatedResources": {"cpu": "1500m"},
                "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "3"}}}]}});
        let usage = |pod: &Value| {
            let u = Evaluator::Pods.usage(pod);
            (u["requests.cpu"].shown(), u["limits.cpu"].shown())
        };
        assert_eq!(usage(&pod), ("1500m".to_string(), "3".to_string()));
        pod["status"]["conditions"] = json!([{"type": "PodResizePending", "reason": "Infeasible"}]);
        assert_eq!(usage(&pod), ("1500m".to_string(), "3".to_string()));
        pod["status"]["containerStatuses"][0]["allocatedResources"] = json!({"cpu": "250m"});
        assert_eq!(usage(&pod), ("500m".to_string(), "3".to_string()));
    }

    #[test]
    fn services_claims_and_counts() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 1}, {"port": 2, "nodePort": 30001}],
            "allocateLoadBalancerNodePorts": false}});
        assert_eq!(
            shown(&Evaluator::Services.usage(&lb)),
            pairs(&[
                ("count/services", "1"),
                ("services", "1"),
                ("services.loadbalancers", "1"),
                ("services.nodeports", "1")
            ])
        );
        let claim = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1.5"}}},
            "status": {"allocatedResources": {"storage": "1"}}});
        assert_eq!(
            shown(&Evaluator::Claims.usage(&claim)),
            pairs(&[
                ("count/persistentvolumeclaims", "1"),
                ("gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"),
                ("gold.storageclass.storage.k8s.io/requests.storage", "2"),
                ("persistentvolumeclaims", "1"),
                ("requests.storage", "2"),
            ])
        );
        let cm = ResourceInfo::new("", "v1", "configmaps", "ConfigMap", true);
        let e = Evaluator::of(&cm).unwrap();
        assert!(e.tracks("configmaps") && e.tracks("count/configmaps") && !e.tracks("pods"));
        let widgets = ResourceInfo::new("example.com", "v1", "widgets", "Widget", true);
        assert_eq!(Evaluator::of(&widgets), Some(Evaluator::Count(vec!["count/widgets.example.com".into()])));
        assert_eq!(Evaluator::of(&ResourceInfo::new("", "v1", "events", "Event", true)), None);
        assert_eq!(Evaluator::of(&ResourceInfo::new("", "v1", "namespaces", "Namespace", false)), None);
    }

    #[test]
    fn scopes_and_constraints() {
        let pod = json!({"spec": {"priorityClassName": "high", "activeDeadlineSeconds": 5,
            "containers": [{"name": "b", "resources": {"limits": {"cpu": "1"}}}, {"name": "a"}],
            "initContainers": [{"name": "i"}]}});
        let e = Evaluator::Pods;
        assert!(e.in_scope("Terminating", "Exists", &[], &pod) && !e.in_scope("NotTerminating", "Exists", &[], &pod));
        assert!(e.in_scope("NotBestEffort", "Exists", &[], &pod));
        assert!(
            e.in_scope("PriorityClass", "In", &["high".to_string()], &pod)
                && !e.in_scope("PriorityClass", "NotIn", &["high".to_string()], &pod)
        );
        assert!(e.in_scope("PriorityClass", "NotIn", &["high".to_string()], &json!({})));
        assert!(!Evaluator::Services.in_scope("BestEffort", "Exists", &[], &pod));
        assert_eq!(
            e.constraints(&["limits.cpu", "requests.memory", "pods"], &pod),
            Err("must specify limits.cpu for: a,i; requests.memory for: a,b,i".into())
        );
        assert_eq!(e.constraints(&["pods"], &pod), Ok(()));
    }
}

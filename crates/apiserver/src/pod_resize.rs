//! A pod's `resize` subresource, as kube-apiserver v1.35 serves it (in-place vertical scaling):
//! the way to change a running pod's CPU and memory. A write through it takes only each
//! container's (and init container's) `resources` and `resizePolicy` from the body; whatever
//! else it changes (other spec fields, labels, annotations, status) is dropped, not refused, as
//! kube's strategy keeps the stored pod. Containers may not be added, removed, renamed or
//! reordered, in which case the body is judged as sent and refused.
//!
//! Validation is kube's `ValidatePodResize`: static (mirror) and Windows pods are not resized;
//! the pod's QoS class may not change; a pod whose running container reports no resources is on
//! a node that cannot resize; pods with pod-level resources are not resized (the gate that
//! allows it is off); requests and limits may change but not be removed; only CPU and memory
//! change, and only for regular and sidecar containers (`resizePolicy` stays as it is).
//!
//! Invariants: the write is judged on the pod as it would be stored, against the stored pod
//! read with today's defaults; refusals are kube's 422 with its field paths and messages. The
//! status is the stored one: the kubelet reports the resize.

use serde_json::{Map, Value};

use crate::pod_spec_validation::name_of;

use crate::pod_validation::list;
use crate::structural::{Cause, go_quote};

/// The subresource's name in URLs, discovery, admission and managed fields.
pub(crate) const SUBRESOURCE: &str = "resize";

/// The members a resize takes from each container of the body.
const TAKEN: [&str; 2] = ["resources", "resizePolicy"];

/// The resources a resize may change.
const MUTABLE: [&str; 2] = ["cpu", "memory"];

/// The pod a write through the subresource stores: the stored pod (`old`) with the body's
/// containers' resources and resize policies. A list whose containers were renamed or
/// reordered is the body's, and the body is taken whole when containers were added or removed,
/// for validation to refuse.
pub(crate) fn prepare_update(mut old: Map<String, Value>, new: Map<String, Value>) -> Map<String, Value> {
    let spec_of = |o: &Map<String, Value>| o.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    let (new_spec, old_spec) = (spec_of(&new), spec_of(&old));
    let mut merged = Vec::new();
    for key in ["containers", "initContainers"] {
        let (now, before) = (list(&new_spec, key), list(&old_spec, key));
        if now.len() != before.len() {
            return new;
        }
        if now.is_empty() {
            continue;
        }
        if now.iter().zip(before).any(|(n, o)| name_of(n) != name_of(o)) {
            merged.push((key, now.to_vec()));
            continue;
        }
        let mut out = before.to_vec();
        for (o, n) in out.iter_mut().zip(now) {
            if let Value::Object(o) = o {
                for member in TAKEN {
                    match n.get(member) {
                        Some(v) => o.insert(member.into(), v.clone()),
                        None => o.remove(member),
                    };
                }
            }
        }
        merged.push((key, out));
    }
    if let Some(Value::Object(spec)) = old.get_mut("spec") {
        for (key, list) in merged {
            spec.insert(key.into(), Value::Array(list));
        }
    }
    old
}

/// The causes for which kube refuses storing `pod` over `old` through the subresource.
pub(crate) fn validate(pod: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let annotated = old.get("metadata").and_then(|m| m.get("annotations")).and_then(|a| a.as_object());
    if annotated.is_some_and(|a| a.contains_key(crate::pod_ephemeral_containers::MIRROR_ANNOTATION)) {
        return vec![forbidden("[]", "static pods cannot be resized")];
    }
    let empty = Map::new();
    let spec = pod.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let mut old_spec = old.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    crate::defaults::pod_spec_defaults(&mut old_spec);
    if old_spec.get("os").and_then(|o| o.get("name")).and_then(Value::as_str) == Some("windows") {
        return vec![forbidden("[]", "windows pods cannot be resized")];
    }
    let mut causes = Vec::new();
    let status_class = |o: &Map<String, Value>| -> Option<String> {
        o.get("status").and_then(|s| s.get("qosClass")).and_then(Value::as_str).map(str::to_string)
    };
    let before_class = status_class(old).unwrap_or_else(|| crate::defaults::qos_class(&old_spec).to_string());
    if crate::defaults::qos_class(spec) != before_class {
        let shown = status_class(pod).unwrap_or_default();
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {}: Pod QOS Class may not change as a result of resizing",
                go_quote(&shown)
            ),
            field: "spec".into(),
        });
    }
    let statuses = old.get("status").and_then(|s| s.get("containerStatuses")).and_then(Value::as_array);
    let running = statuses.into_iter().flatten().find(|s| s.get("state").and_then(|st| st.get("running")).is_some());
    if running.is_some_and(|s| s.get("resources").is_none_or(Value::is_null)) {
        causes.push(forbidden("spec", "Pod running on node without support for resize"));
    }
    let pod_level = |s: &Map<String, Value>| {
        s.get("resources").is_some_and(|r| {
            ["requests", "limits"].iter().any(|k| r.get(k).and_then(Value::as_object).is_some_and(|m| !m.is_empty()))
        })
    };
    if pod_level(spec) || pod_level(&old_spec) {
        causes.push(forbidden(
            "[]",
            "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled",
        ));
        return causes;
    }
    let ordering = ordering(spec, &old_spec);
    if !ordering.is_empty() {
        causes.extend(ordering);
        return causes;
    }
    let pairs = |key: &'static str| {
        list(spec, key).iter().zip(list(&old_spec, key)).enumerate().map(move |(i, (c, o))| (key, i, c, o))
    };
    let sidecar = |c: &Value| c.get("restartPolicy").and_then(Value::as_str) == Some("Always");
    // As kube: first what was removed (sidecars, then the regular containers), then what
    // changed beyond CPU and memory (regular containers, then init containers).
    for (key, i, c, o) in pairs("initContainers").filter(|p| sidecar(p.2)).chain(pairs("containers")) {
        for (kind, what) in [("requests", "resource requests"), ("limits", "resource limits")] {
            let names = |x: &Value| -> Vec<String> {
                x.get("resources")
                    .and_then(|r| r.get(kind))
                    .and_then(Value::as_object)
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default()
            };
            let (now, before) = (names(c), names(o));
            if before.len() > now.len() || before.iter().any(|k| !now.contains(k)) {
                causes.push(forbidden(
                    &format!("spec.{key}[{i}].resources.{kind}"),
                    &format!("{what} cannot be removed"),
                ));
            }
        }
    }
    for (key, _, c, o) in pairs("containers").chain(pairs("initContainers")) {
        let detail = match (key, sidecar(c)) {
            ("containers", _) => "only cpu and memory resources are mutable",
            (_, true) => "only cpu and memory resources for sidecar containers are mutable",
            (_, false) => {
                if lenient(c) != lenient(o) {
                    causes.push(forbidden("spec", "resources for non-sidecar init containers are immutable"));
                }
                continue;
            }
        };
        if lenient(&masked(c, o)) != lenient(o) {
            causes.push(forbidden("spec", detail));
        }
    }
    if !causes.is_empty() {
        return causes;
    }
    let mut masked_spec = spec.clone();
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(now)) = masked_spec.get_mut(key) {
            for (c, o) in now.iter_mut().zip(list(&old_spec, key)) {
                *c = masked(c, o);
            }
        }
    }
    if lenient(&Value::Object(masked_spec)) != lenient(&Value::Object(old_spec)) {
        causes.push(forbidden("spec", "only cpu and memory resources are mutable"));
    }
    causes
}

/// The refusals of containers added, removed, renamed or reordered.
fn ordering(spec: &Map<String, Value>, old_spec: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (key, what) in [("containers", "containers"), ("initContainers", "initContainers")] {
        let (now, before) = (list(spec, key), list(old_spec, key));
        if now.len() != before.len() {
            causes.push(forbidden(&format!("spec.{key}"), &format!("{what} may not be added or removed on resize")));
            continue;
        }
        for (i, (c, o)) in now.iter().zip(before).enumerate() {
            if name_of(c) != name_of(o) {
                causes.push(forbidden(
                    &format!("spec.{key}[{i}].name"),
                    &format!("{what} may not be renamed or reordered on resize"),
                ));
            }
        }
    }
    causes
}

/// A container with its CPU and memory requests and limits as `old` has them, so that a
/// comparison with `old` sees only the changes a resize may not make. A list `old` does not
/// have is dropped whole, as kube's mask drops it.
fn masked(c: &Value, old: &Value) -> Value {
    let mut c = c.clone();
    let Some(m) = c.as_object_mut() else { return c };
    let resources = m.entry("resources").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(r) = resources {
        for kind in ["requests", "limits"] {
            let before = old.get("resources").and_then(|r| r.get(kind)).and_then(Value::as_object);
            let Some(before) = before.filter(|b| !b.is_empty()) else {
                r.remove(kind);
                continue;
            };
            let entry = r.entry(kind).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(list) = entry {
                for name in MUTABLE {
                    match before.get(name) {
                        Some(v) => list.insert(name.into(), v.clone()),
                        None => list.remove(name),
                    };
                }
            }
        }
    }
    c
}

fn lenient(v: &Value) -> Value {
    crate::pod_validation::lenient(v)
}

fn forbidden(field: &str, detail: &str) -> Cause {
    crate::pod_validation::forbidden(field.into(), detail)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(containers: Value, status: Value) -> Map<String, Value> {
        let mut spec = json!({"containers": containers}).as_object().unwrap().clone();
        crate::defaults::pod_spec_defaults(&mut spec);
        json!({"metadata": {"name": "p"}, "spec": spec, "status": status}).as_object().unwrap().clone()
    }

    fn burstable(cpu: &str) -> Value {
        json!([{"name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"memory": "128Mi"}}}])
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn cpu_and_memory_change_and_nothing_else_is_taken() {
        let old = pod(burstable("100m"), json!({"qosClass": "Burstable"}));
        let mut new = pod(burstable("200m"), json!({"phase": "Failed"}));
        new["spec"]["containers"][0]["image"] = json!("other");
        new["spec"]["restartPolicy"] = json!("Never");
        let out = prepare_update(old.clone(), new);
        assert_eq!(out["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(out["spec"]["containers"][0]["resources"]["requests"]["cpu"], "200m");
        assert_eq!(out["spec"]["restartPolicy"], "Always");
        assert_eq!(out["status"], json!({"qosClass": "Burstable"}));
        assert_eq!(messages(validate(&out, &old)), Vec::<String>::new());
    }

    #[test]
    fn refusals_are_kubes() {
        let old = pod(burstable("100m"), json!({"qosClass": "Burstable"}));
        let judge =
            |containers: Value| messages(validate(&prepare_update(old.clone(), pod(containers, json!({}))), &old));
        assert_eq!(
            judge(json!([{"name": "app", "image": "nginx", "resources": {"limits": {"memory": "128Mi"}}}])),
            ["spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"]
        );
        assert_eq!(
            judge(json!([{"name": "app", "image": "nginx", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}])),
            ["spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"]
        );
        assert_eq!(
            judge(json!([{"name": "app", "image": "nginx", "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"}, "limits": {"memory": "128Mi"}}}])),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
        let mut policy = burstable("100m");
        policy[0]["resizePolicy"] = json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
        assert_eq!(judge(policy), ["spec: Forbidden: only cpu and memory resources are mutable"]);
        let mut two = burstable("100m");
        two.as_array_mut().unwrap().push(json!({"name": "b", "image": "x"}));
        assert_eq!(judge(two), ["spec.containers: Forbidden: containers may not be added or removed on resize"]);
        let mut renamed = burstable("100m");
        renamed[0]["name"] = json!("web");
        assert_eq!(
            judge(renamed),
            ["spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"]
        );
        let running = pod(
            burstable("100m"),
            json!({"qosClass": "Burstable",
            "containerStatuses": [{"name": "app", "state": {"running": {}}}]}),
        );
        assert_eq!(
            messages(validate(&prepare_update(running.clone(), pod(burstable("200m"), json!({}))), &running)),
            ["spec: Forbidden: Pod running on node without support for resize"]
        );
        // A list the stored container does not have is not compared, as kube masks it.
        let requests_only =
            pod(json!([{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]), json!({}));
        let mut limited = requests_only.clone();
        limited["spec"]["containers"][0]["resources"]["limits"] = json!({"ephemeral-storage": "1Gi"});
        assert_eq!(
            messages(validate(&prepare_update(requests_only.clone(), limited), &requests_only)),
            Vec::<String>::new()
        );
        let mut windows = old.clone();
        windows["spec"]["os"] = json!({"name": "windows"});
        assert_eq!(messages(validate(&old, &windows)), ["[]: Forbidden: windows pods cannot be resized"]);
    }

    #[test]
    fn init_containers_resize_only_as_sidecars() {
        let containers = |cpu: &str, policy: Option<&str>| {
            let mut spec = json!({"containers": burstable("100m"),
                "initContainers": [{"name": "init", "image": "x", "resources": {"requests": {"cpu": cpu}}}]});
            if let Some(p) = policy {
                spec["initContainers"][0]["restartPolicy"] = json!(p);
            }
            let mut spec = spec.as_object().unwrap().clone();
            crate::defaults::pod_spec_defaults(&mut spec);
            json!({"metadata": {"name": "p"}, "spec": spec, "status": {"qosClass": "Burstable"}})
                .as_object()
                .unwrap()
                .clone()
        };
        let (old, new) = (containers("100m", None), containers("200m", None));
        assert_eq!(
            messages(validate(&prepare_update(old.clone(), new), &old)),
            ["spec: Forbidden: resources for non-sidecar init containers are immutable"]
        );
        let (old, new) = (containers("100m", Some("Always")), containers("200m", Some("Always")));
        assert_eq!(messages(validate(&prepare_update(old.clone(), new), &old)), Vec::<String>::new());
    }
}

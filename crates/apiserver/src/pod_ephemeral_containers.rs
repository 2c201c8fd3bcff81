//! A pod's `ephemeralcontainers` subresource, as kube-apiserver serves it: the way to add a
//! debugging container to a running pod (`kubectl debug`). A write through it changes only
//! `spec.ephemeralContainers`; whatever else the body changes (other spec fields, labels,
//! annotations, status) is dropped, not refused, as kube's strategy keeps the stored pod.
//!
//! Validation is kube's `ValidatePodEphemeralContainersUpdate`: each ephemeral container needs a
//! name (a DNS label unique among all the pod's containers) and an image, mounts only the pod's
//! volumes ([`crate::volume_mounts`]), may target only one of the pod's regular or init
//! containers, and sets none of the fields an ephemeral container cannot have (ports, resources,
//! probes, lifecycle, resize and restart policies, sub-paths of its volume mounts); ephemeral
//! containers already there are neither removed nor changed, and static (mirror) pods take none.
//! The pod-wide rules that visit every container judge the new ones too: a HostProcess pod's
//! debug container is a HostProcess one, a Linux pod's has no Windows options, a Windows pod's
//! none of the Linux-only security fields.
//! A pod is never created with ephemeral containers.
//!
//! Invariants: the write is judged on the pod as it would be stored, against the stored pod
//! read with today's defaults; refusals are kube's 422 with its field paths and messages.

use serde_json::{Map, Value};

use crate::pod_spec_validation::{list, name_of};
use crate::pod_validation::forbidden;
use crate::policy_validation::{duplicate, invalid};
use crate::structural::{Cause, go_quote};

/// The subresource's name in URLs, discovery, admission and managed fields.
pub(crate) const SUBRESOURCE: &str = "ephemeralcontainers";

/// The annotation that marks a static pod's mirror.
pub(crate) const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The fields of an ephemeral container kube allows, by their JSON names; any other field set
/// to a value other than its zero value is refused.
const ALLOWED: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "envFrom",
    "env",
    "volumeMounts",
    "volumeDevices",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
];

/// The refused fields, in the order of kube's container struct (its errors come in that order).
const REFUSED_IN_ORDER: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// What kube says of a field an ephemeral container cannot set.
const CANNOT_SET: &str = "cannot be set for an Ephemeral Container";

/// The pod a write through the subresource stores: the stored pod (`old`) with the body's
/// ephemeral containers.
pub(crate) fn prepare_update(mut old: Map<String, Value>, new: &Map<String, Value>) -> Map<String, Value> {
    let asked = new.get("spec").and_then(|s| s.get("ephemeralContainers")).filter(|v| !v.is_null()).cloned();
    let spec = old.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(spec) = spec {
        match asked {
            Some(list) => spec.insert("ephemeralContainers".into(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    old
}

/// The refusal of a pod created with ephemeral containers.
pub(crate) fn validate_create(pod: &Map<String, Value>) -> Vec<Cause> {
    match pod.get("spec").map_or(&[][..], |s| list(s, "ephemeralContainers")) {
        [] => Vec::new(),
        _ => vec![forbidden("spec.ephemeralContainers".into(), "cannot be set on create")],
    }
}

/// The causes for which kube refuses storing `pod` over `old` through the subresource.
pub(crate) fn validate_update(pod: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let empty = Value::Object(Map::new());
    let spec = pod.get("spec").unwrap_or(&empty);
    let volumes = crate::pod_spec_validation::valid_volumes(spec);
    let mut causes = containers(spec, "spec", &volumes, &crate::container_resources::pod_claims(spec));
    // The pod-wide rules that visit every container, ephemeral ones too.
    crate::windows_options::host_process(spec, "spec", &mut causes);
    crate::pod_os::host_users(spec, "spec", &mut causes);
    crate::pod_os::os(spec, "spec", &mut causes);
    let mirror = old.get("metadata").and_then(|m| m.get("annotations")).and_then(|a| a.get(MIRROR_ANNOTATION));
    if mirror.is_some() {
        return vec![forbidden("[]".into(), "static pods do not support ephemeral containers")];
    }
    let mut old_spec = old.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    crate::defaults::pod_spec_defaults(&mut old_spec);
    let new_list = list(spec, "ephemeralContainers");
    let old_spec = Value::Object(old_spec);
    for before in list(&old_spec, "ephemeralContainers") {
        let name = name_of(before);
        let field = "spec.ephemeralContainers".to_string();
        match new_list.iter().find(|c| name_of(c) == name) {
            None => causes.push(forbidden(
                field,
                &format!("existing ephemeral containers {} may not be removed\n", go_quote(name)),
            )),
            Some(now) if crate::pod_validation::lenient(now) != crate::pod_validation::lenient(before) => {
                let diff = crate::unified_diff::of_values(before, now);
                causes.push(forbidden(
                    field,
                    &format!("existing ephemeral containers {} may not be changed\n{diff}", go_quote(name)),
                ));
            }
            Some(_) => {}
        }
    }
    causes
}

/// The checks of each ephemeral container of a pod's spec (`spec` at `at`), whose valid volumes
/// ([`crate::pod_spec_validation::valid_volumes`]) and resource claims
/// ([`crate::container_resources::pod_claims`]) are `volumes` and `pod_claims`: those of every
/// container ([`crate::pod_spec_validation::container`]), then an ephemeral container's own.
pub(crate) fn containers(spec: &Value, at: &str, volumes: &[&str], pod_claims: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ephemeral = list(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return causes;
    }
    let others: Vec<&str> = ["containers", "initContainers"].iter().flat_map(|k| list(spec, k)).map(name_of).collect();
    let mut names = others.clone();
    for (i, c) in ephemeral.iter().enumerate() {
        let at = format!("{at}.ephemeralContainers[{i}]");
        let name = name_of(c);
        crate::pod_spec_validation::container(c, spec, volumes, pod_claims, &at, &mut causes);
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        if !image.is_empty() && image.trim() != image {
            causes.push(invalid(format!("{at}.image"), image, "must not have leading or trailing whitespace"));
        }
        if names.contains(&name) {
            causes.push(duplicate(format!("{at}.name"), name));
        } else {
            names.push(name);
        }
        let target = c.get("targetContainerName").and_then(Value::as_str).unwrap_or("");
        if !target.is_empty() && !others.contains(&target) {
            causes.push(Cause {
                reason: "FieldValueNotFound",
                message: format!("Not found: {}", go_quote(target)),
                field: format!("{at}.targetContainerName"),
            });
        }
        let set = |f: &str| c.get(f).is_some_and(|v| set_in_go(f, v));
        let unknown = c
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .filter(|k| !ALLOWED.contains(&k.as_str()) && !REFUSED_IN_ORDER.contains(&k.as_str()) && set(k));
        for f in REFUSED_IN_ORDER.iter().copied().filter(|f| set(f)).chain(unknown.map(String::as_str)) {
            causes.push(forbidden(format!("{at}.{f}"), CANNOT_SET));
        }
        for (j, m) in list(c, "volumeMounts").iter().enumerate() {
            for f in ["subPath", "subPathExpr"] {
                if m.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
                    causes.push(forbidden(format!("{at}.volumeMounts[{j}].{f}"), CANNOT_SET));
                }
            }
        }
    }
    causes
}

/// Whether a member of a container, once decoded into kube's Go type, differs from its zero
/// value as kube's allow-list compares it: any list (empty ones too), pointer (a probe, a
/// lifecycle, a restart policy) or map that is present is set; `resources`, a struct, is set
/// when one of its members is.
fn set_in_go(field: &str, v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Object(m) if field == "resources" => m.values().any(|x| !x.is_null()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ephemeral: Value) -> Map<String, Value> {
        let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}],
            "initContainers": [{"name": "init", "image": "busybox"}], "ephemeralContainers": ephemeral})
        .as_object()
        .unwrap()
        .clone();
        crate::defaults::pod_spec_defaults(&mut spec);
        json!({"metadata": {"name": "p"}, "spec": spec}).as_object().unwrap().clone()
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn each_container_is_judged_as_kube_judges_it() {
        let new = pod(json!([
            {"name": "debug", "image": "busybox", "targetContainerName": "app", "resources": {"limits": null},
                "stdin": true, "lifecycle": null},
            {"name": "app", "image": " busybox", "targetContainerName": "debug"},
            {"name": "Bad", "image": "", "ports": [{"containerPort": 80}],
                "readinessProbe": {"exec": {"command": ["true"]}}, "resources": {"limits": {"cpu": "1"}},
                "restartPolicy": "Always", "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}]},
            {"name": "a.b", "image": "busybox", "ports": [], "resources": {"limits": {}}, "lifecycle": {}},
        ]));
        let old = pod(json!([]));
        assert_eq!(
            messages(validate_update(&new, &old)),
            [
                "spec.ephemeralContainers[1].image: Invalid value: \" busybox\": must not have leading or trailing whitespace",
                "spec.ephemeralContainers[1].name: Duplicate value: \"app\"",
                "spec.ephemeralContainers[1].targetContainerName: Not found: \"debug\"",
                &format!(
                    "spec.ephemeralContainers[2].name: Invalid value: \"Bad\": {}",
                    crate::crd_validation::LABEL_MSG
                ),
                "spec.ephemeralContainers[2].image: Required value",
                "spec.ephemeralContainers[2].volumeMounts[0].name: Not found: \"v\"",
                "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[2].resources: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[2].restartPolicy: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[2].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[2].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[3].name: Invalid value: \"a.b\": must not contain dots",
                "spec.ephemeralContainers[3].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[3].resources: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[3].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
            ]
        );
    }

    #[test]
    fn pod_wide_rules_see_the_new_containers() {
        let mut old = pod(json!([]));
        old["spec"]["os"] = json!({"name": "windows"});
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always",
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]);
        assert_eq!(
            messages(validate_update(&new, &old)),
            ["spec.ephemeralContainers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod"]
        );
    }

    #[test]
    fn existing_containers_stay_as_they_are() {
        let old = pod(json!([{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]));
        let new = pod(json!([{"name": "b", "image": "busybox:2"}, {"name": "c", "image": "busybox"}]));
        let m = messages(validate_update(&new, &old));
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(
            m[0],
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"a\" may not be removed\n"
        );
        assert!(
            m[1].starts_with(
                "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"b\" may not be changed\n@@ "
            ),
            "{m:?}"
        );
        assert!(
            m[1].contains(
                "\n- \"image\": \"busybox\",\n- \"imagePullPolicy\": \"Always\",\n+ \"image\": \"busybox:2\",\n"
            ),
            "{m:?}"
        );
        // Added, in another order, as stored: allowed.
        let new = pod(json!([{"name": "b", "image": "busybox"}, {"name": "a", "image": "busybox"},
            {"name": "c", "image": "busybox"}]));
        assert_eq!(messages(validate_update(&new, &old)), Vec::<String>::new());
        let mut mirror = old.clone();
        mirror["metadata"] = json!({"name": "p", "annotations": {MIRROR_ANNOTATION: "x"}});
        assert_eq!(
            messages(validate_update(&new, &mirror)),
            ["[]: Forbidden: static pods do not support ephemeral containers"]
        );
    }

    #[test]
    fn only_the_ephemeral_containers_are_taken() {
        let old = json!({"metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}, "status": {"phase": "Running"}});
        let new = json!({"metadata": {"name": "p", "labels": {"a": "2"}},
            "spec": {"containers": [{"name": "app", "image": "other"}],
                "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}, "status": {}});
        let out = prepare_update(old.as_object().unwrap().clone(), new.as_object().unwrap());
        assert_eq!(
            Value::Object(out),
            json!({"metadata": {"name": "p", "labels": {"a": "1"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}],
                    "ephemeralContainers": [{"name": "debug", "image": "busybox"}]},
                "status": {"phase": "Running"}})
        );
        assert_eq!(
            messages(validate_create(&pod(json!([{"name": "d", "image": "x"}])))),
            ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
        );
        assert!(validate_create(&pod(json!([]))).is_empty());
    }
}

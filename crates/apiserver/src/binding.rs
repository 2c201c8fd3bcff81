//! A pod's `binding` subresource: how a scheduler assigns a pod to a node, with a v1 `Binding`
//! (`target` names the node), as kube-scheduler and schedulers written on client libraries do;
//! also the older `bindings` resource, which takes the pod's name from the Binding.
//!
//! Invariants, as kube-apiserver's binding handler:
//! - the Binding is judged by admission as a CREATE of `pods/binding`; the pod write it makes
//!   is the server's own (no admission, no managed-fields entry, generation kept);
//! - a pod is bound once: one already on a node, being deleted, or with scheduling gates is
//!   refused with 409 (`Operation cannot be fulfilled on pods/binding …`), and a Binding naming
//!   the pod's UID or resourceVersion must find it so;
//! - binding sets `spec.nodeName`, adds the Binding's annotations and labels, clears
//!   `status.nominatedNodeName` and sets the `PodScheduled` condition to `True`, in one write;
//!   a success answers a `Success` Status with code 201;
//! - as any create, a binding in a namespace that is gone or terminating is refused (kube's
//!   NamespaceLifecycle admission).

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Store;
use crate::strategy::Target;
use crate::structural::go_quote;

/// The subresource's name.
pub(crate) const SUBRESOURCE: &str = "binding";

/// What the subresource carries: a v1 Binding.
const CARRIED: crate::pod_subresource::Carried =
    crate::pod_subresource::Carried { subresource: SUBRESOURCE, kind: "Binding", api_versions: &["v1"] };

/// How often a write lost to a concurrent one is tried again.
const RETRIES: usize = 20;

/// The resource the body is read as: a v1 `Binding`.
pub(crate) fn body_info() -> ResourceInfo {
    ResourceInfo::new("", "v1", "bindings", "Binding", true)
}

/// Binds pod `name` of namespace `ns` to the node `body` (a Binding) names; `dry_run` is the
/// request's `dryRun`. Answers the Status to send with 201.
pub(crate) async fn bind(store: &Store, ns: &str, name: &str, body: Value, dry_run: bool) -> Result<Value, ApiError> {
    let (pods, binding) = crate::pod_subresource::admit(store, &CARRIED, (ns, name), body, dry_run, validate).await?;
    let meta = binding.get("metadata").cloned().unwrap_or(Value::Null);
    let text = |k: &str| meta.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (uid, rv) = (text("uid"), text("resourceVersion"));
    let node = binding.get("target").and_then(|t| t.get("name")).and_then(Value::as_str).unwrap_or("");
    let (annotations, labels) = (meta.get("annotations").and_then(Value::as_object), meta.get("labels"));
    let mut pod = store.stored(&pods, ns, name).await?;
    for _ in 0..RETRIES {
        let key = || store.key_of(&pods, ns, name);
        if let Some(u) = uid.filter(|u| *u != pod.uid) {
            return Err(ApiError::precondition_failed("", "pods", name, &key(), ("UID", u, &pod.uid)));
        }
        if let Some(r) = rv.filter(|r| *r != pod.rv.to_string()) {
            return Err(ApiError::precondition_failed(
                "",
                "pods",
                name,
                &key(),
                ("ResourceVersion", r, &pod.rv.to_string()),
            ));
        }
        let Value::Object(mut value) = pod.value() else {
            return Err(ApiError::internal("stored pod is not an object"));
        };
        assign(&mut value, name, node, annotations, labels.and_then(Value::as_object))?;
        match store.write_as_server(&pods, &pod, value, Target::Binding, dry_run).await? {
            Some(_) => {
                return Ok(
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
                );
            }
            None => pod = store.stored(&pods, ns, name).await?,
        }
    }
    Err(ApiError::conflict("", "pods", name))
}

/// Whether `info` is the older `bindings` resource of core/v1 (`POST
/// /api/v1/namespaces/{ns}/bindings`).
pub(crate) fn is_bindings(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "bindings"
}

/// Binds the pod a Binding posted to the `bindings` resource names. Its UID is not taken as a
/// precondition there (kube clears it as for any created object); its resourceVersion is.
pub(crate) async fn bind_by_body(store: &Store, ns: &str, mut body: Value, dry_run: bool) -> Result<Value, ApiError> {
    let name = body.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("uid");
    }
    bind(store, ns, &name, body, dry_run).await
}

/// kube's Binding validation: a target of kind `Node` (or none) with a name. Its failure is not
/// a Status in kube, so it answers 500 with the field errors as its message.
fn validate(binding: &Map<String, Value>) -> Result<(), ApiError> {
    let target = binding.get("target");
    let text = |k: &str| target.and_then(|t| t.get(k)).and_then(Value::as_str).unwrap_or("");
    let mut errors = Vec::new();
    if !text("kind").is_empty() && text("kind") != "Node" {
        errors.push(format!(
            "target.kind: Unsupported value: {}: supported values: \"Node\", \"<empty>\"",
            go_quote(text("kind"))
        ));
    }
    if text("name").is_empty() {
        errors.push("target.name: Required value".to_string());
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(ApiError::new(500, "", errors.remove(0))),
        _ => Err(ApiError::new(500, "", format!("[{}]", errors.join(", ")))),
    }
}

/// Assigns the pod to `node`, as the binding's storage update does.
fn assign(
    pod: &mut Map<String, Value>,
    name: &str,
    node: &str,
    annotations: Option<&Map<String, Value>>,
    labels: Option<&Map<String, Value>>,
) -> Result<(), ApiError> {
    let meta = pod.get("metadata");
    if meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null()) {
        return Err(refused(name, &format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    let spec = pod.get("spec");
    if let Some(current) = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).filter(|n| !n.is_empty()) {
        return Err(refused(name, &format!("pod {name} is already assigned to node {}", go_quote(current))));
    }
    if spec.and_then(|s| s.get("schedulingGates")).and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
        return Err(refused(name, &format!("pod {name} has non-empty .spec.schedulingGates")));
    }
    if let Some(Value::Object(spec)) = pod.get_mut("spec") {
        spec.insert("nodeName".into(), node.into());
    }
    // The Binding's annotations and labels (the node's topology labels, which kube's
    // PodTopologyLabels admission puts on Bindings) are added, overwriting the pod's.
    for (field, added) in [("annotations", annotations), ("labels", labels)] {
        if let Some(added) = added.filter(|a| !a.is_empty())
            && let Some(Value::Object(meta)) = pod.get_mut("metadata")
            && let Value::Object(own) = meta.entry(field).or_insert_with(|| Value::Object(Map::new()))
        {
            own.extend(added.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let status = pod.entry("status").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(status) = status {
        // The scheduler's nomination is fulfilled.
        status.remove("nominatedNodeName");
    }
    if let Value::Object(status) = status
        && let Value::Object(condition) =
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": null})
    {
        crate::object::set_condition(status, condition);
    }
    Ok(())
}

/// 409 on `pods/binding`, kube's conflict with the reason.
fn refused(name: &str, why: &str) -> ApiError {
    let mut e = ApiError::new(
        409,
        "Conflict",
        format!("Operation cannot be fulfilled on pods/binding {}: {why}", go_quote(name)),
    );
    e.details = Some(Box::new(json!({"name": name, "kind": "pods/binding"})));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Map<String, Value> {
        let Value::Object(m) = json!({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        else {
            unreachable!()
        };
        m
    }

    #[test]
    fn binding_sets_the_node_annotations_and_condition() {
        let mut p = pod(json!({"containers": []}));
        let annotations = json!({"scheduler": "mine"});
        assign(&mut p, "p", "n1", annotations.as_object(), json!({"topology.kubernetes.io/zone": "z1"}).as_object())
            .unwrap();
        assert_eq!(p["metadata"]["labels"]["topology.kubernetes.io/zone"], "z1");
        assert_eq!(p["spec"]["nodeName"], "n1");
        assert_eq!(p["metadata"]["annotations"]["scheduler"], "mine");
        let c = &p["status"]["conditions"][0];
        assert_eq!((c["type"].as_str(), c["status"].as_str()), (Some("PodScheduled"), Some("True")));
        assert!(c.get("reason").is_none(), "the reason of the gated condition goes: {c}");
        assert_ne!(c["lastTransitionTime"], "2026-01-01T00:00:00Z", "the condition changed status");
    }

    #[test]
    fn a_pod_is_bound_once() {
        let mut p = pod(json!({"nodeName": "n0"}));
        let e = assign(&mut p, "p", "n1", None, None).unwrap_err();
        assert_eq!(e.code, 409);
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n0\""
        );
        let mut p = pod(json!({"schedulingGates": [{"name": "wait"}]}));
        let e = assign(&mut p, "p", "n1", None, None).unwrap_err();
        assert!(e.message.ends_with("pod p has non-empty .spec.schedulingGates"), "{}", e.message);
    }

    #[test]
    fn targets_are_validated_as_kube_validates_them() {
        let b = |target: Value| json!({"target": target}).as_object().cloned().unwrap();
        assert!(validate(&b(json!({"name": "n1", "kind": "Node"}))).is_ok());
        let e = validate(&b(json!({}))).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (500, "target.name: Required value"));
        let e = validate(&b(json!({"kind": "Pod"}))).unwrap_err();
        assert_eq!(
            e.message,
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
    }
}

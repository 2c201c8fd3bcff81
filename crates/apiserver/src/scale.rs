//! The `scale` subresource: the autoscaling/v1 `Scale` view of a resource that declares a
//! [`ScaleSubresource`], and the writes through it (GET, PUT, PATCH), as kube-apiserver's
//! `ScaleREST` serves them for Deployments, ReplicaSets, StatefulSets and custom resources.
//!
//! Invariants: a `Scale` shows the parent's name, namespace, uid, resourceVersion and
//! creationTimestamp, its desired replicas (`spec.replicas`), observed replicas
//! (`status.replicas`) and label selector as a string (`status.selector`). A write through the
//! scale changes only the parent's desired replica count, as an update of the parent (so its
//! generation moves, and a no-op writes nothing); a `metadata.resourceVersion` in the Scale is a
//! precondition on the parent (409 when it is not the current one); a bad Scale is refused before
//! anything is written. A custom resource that has no replicas has no Scale to read (500 `the
//! spec replicas field ".spec.replicas" does not exist`), and a patch of its scale must set them
//! (400 `the spec replicas field ".spec.replicas" cannot be empty`).

use std::ops::ControlFlow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::registry::{ResourceInfo, ScaleSubresource};
use crate::status::ApiError;
use crate::store::{
    DecodedPatch, PatchType, Store, Tracking, WriteOpts, check_body, meta_str, parse_rv_field, resolve_namespace,
};

/// The `Scale` type, to decode request bodies as kube-apiserver does.
fn scale_type(namespaced: bool) -> ResourceInfo {
    ResourceInfo::new("autoscaling", "v1", "scale", "Scale", namespaced)
}

fn scale_subresource(info: &ResourceInfo) -> Result<&ScaleSubresource, ApiError> {
    info.scale_subresource.as_ref().ok_or_else(ApiError::no_route)
}

/// Looks up a CustomResourceDefinition-style JSON path (`.spec.replicas`).
fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').filter(|s| !s.is_empty()).try_fold(obj, |v, seg| v.get(seg))
}

/// Sets a JSON path, creating the objects on the way.
fn set(obj: &mut Value, path: &str, v: Value) {
    let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = segs.split_last() else { return };
    let mut cur = obj;
    for seg in parents {
        if !cur.get(*seg).is_some_and(Value::is_object) {
            cur[*seg] = Value::Object(Map::new());
        }
        cur = &mut cur[*seg];
    }
    cur[*last] = v;
}

/// An autoscaling/v1 `Scale`, serialized with kube-apiserver's member order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scale {
    /// Always `Scale`.
    pub kind: &'static str,
    /// Always `autoscaling/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// The parent's identity.
    pub metadata: ScaleMeta,
    /// The desired state.
    pub spec: ScaleSpec,
    /// The observed state.
    pub status: ScaleStatus,
}

/// The metadata of a [`Scale`]: the parent's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleMeta {
    /// The parent's name.
    pub name: String,
    /// The parent's namespace (absent for cluster-scoped parents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The parent's uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The parent's resourceVersion.
    #[serde(rename = "resourceVersion", skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The parent's creationTimestamp.
    #[serde(rename = "creationTimestamp", skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Value>,
}

/// `Scale.spec`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleSpec {
    /// The desired replica count.
    pub replicas: i64,
}

/// `Scale.status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleStatus {
    /// The observed replica count.
    pub replicas: i64,
    /// The label selector as a string (absent when there is none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub selector: String,
}

impl Scale {
    /// The `Scale` as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The `Scale` as JSON bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The autoscaling/v1 `Scale` of `obj`, an object of the resource `info`.
pub fn scale_of(info: &ResourceInfo, obj: &StoredObject) -> Result<Scale, ApiError> {
    scale_of_value(info, &obj.value())
}

/// The autoscaling/v1 `Scale` of the object `v` (its JSON) of the resource `info`.
pub(crate) fn scale_of_value(info: &ResourceInfo, v: &Value) -> Result<Scale, ApiError> {
    let sub = scale_subresource(info)?;
    let meta = |f: &str| v.get("metadata").and_then(|m| m.get(f)).cloned();
    let text = |f: &str| meta(f).and_then(|m| m.as_str().map(str::to_string));
    let replicas = lookup(v, &sub.spec_replicas_path).and_then(Value::as_i64).unwrap_or(sub.default_replicas);
    let observed = lookup(v, &sub.status_replicas_path).and_then(Value::as_i64).unwrap_or(0);
    let selector = match sub.label_selector_path.as_deref().and_then(|p| lookup(v, p)) {
        Some(Value::String(s)) => s.clone(),
        Some(sel @ Value::Object(_)) => crate::selector::selector_string(sel),
        _ => String::new(),
    };
    Ok(Scale {
        kind: "Scale",
        api_version: "autoscaling/v1",
        metadata: ScaleMeta {
            name: text("name").unwrap_or_default(),
            namespace: if info.namespaced { Some(text("namespace").unwrap_or_default()) } else { None },
            uid: text("uid").filter(|u| !u.is_empty()),
            resource_version: text("resourceVersion"),
            creation_timestamp: meta("creationTimestamp"),
        },
        spec: ScaleSpec { replicas },
        status: ScaleStatus { replicas: observed, selector },
    })
}

/// Sets the replicas a mutated `Scale` asks for into its parent object `parent` (the only
/// field of a `Scale` a write changes).
pub(crate) fn apply_scale(info: &ResourceInfo, parent: &mut Value, scale: &Value) -> Result<(), ApiError> {
    let sub = scale_subresource(info)?;
    // As kube validates the mutated Scale before it takes its replicas (0 when absent).
    let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
    if replicas < 0 {
        let name = parent.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        return Err(negative_replicas(name, replicas));
    }
    set(parent, &sub.spec_replicas_path, replicas.into());
    Ok(())
}

/// kube's refusal of a Scale asking for fewer than 0 replicas.
fn negative_replicas(name: &str, replicas: i64) -> ApiError {
    ApiError::invalid_object(
        "autoscaling",
        "Scale",
        name,
        "spec.replicas",
        "FieldValueInvalid",
        &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
    )
}

/// The replicas kube gives the Scale a patch of a custom resource without replicas applies to
/// (the smallest int32).
const UNSET_REPLICAS: i64 = -2147483648;

/// What a `Scale` written by a client asks for.
struct ScaleRequest {
    replicas: i64,
    precondition: Option<u64>,
}

/// Decodes and validates a `Scale` sent for the object `name` of the namespace `ns`.
fn decode(info: &ResourceInfo, ns: &str, name: &str, body: Value) -> Result<ScaleRequest, ApiError> {
    let t = scale_type(info.namespaced);
    let mut obj = check_body(&t, body)?;
    resolve_namespace(&t, &mut obj, Some(ns))?;
    if let Some(b) = meta_str(&obj, "name")
        && b != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({b}) does not match the name on the URL ({name})"
        )));
    }
    // `check_body` refused what Go cannot decode into a Scale: the replicas are an int32, if any.
    let replicas = obj.get("spec").and_then(|s| s.get("replicas")).and_then(Value::as_i64).unwrap_or(0);
    if replicas < 0 {
        return Err(negative_replicas(name, replicas));
    }
    let precondition = match meta_str(&obj, "resourceVersion") {
        // 0 is none, as kube's versioner reads it.
        Some(s) => Some(parse_rv_field(&s)?).filter(|rv| *rv != 0),
        None => None,
    };
    Ok(ScaleRequest { replicas, precondition })
}

impl Store {
    /// The `Scale` of an object (GET `…/scale`).
    pub async fn get_scale(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Scale, ApiError> {
        let sub = scale_subresource(info)?;
        let obj = self.get(info, ns, name).await?.value();
        // kube serves no Scale of a custom resource without replicas.
        if info.custom.is_some() && lookup(&obj, &sub.spec_replicas_path).is_none() {
            return Err(ApiError::internal(&format!(
                "the spec replicas field {} does not exist",
                crate::structural::go_quote(&sub.spec_replicas_path)
            )));
        }
        scale_of_value(info, &obj)
    }

    /// Replaces the `Scale` of an object (PUT `…/scale`); returns the new `Scale`.
    pub async fn update_scale(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        body: Value,
        opts: &WriteOpts,
    ) -> Result<Scale, ApiError> {
        self.write_scale(info, ns, name, opts, |_| Ok(body.clone())).await
    }

    /// Patches the `Scale` of an object (PATCH `…/scale`); returns the new `Scale`.
    pub async fn patch_scale(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        kind: PatchType,
        patch: &[u8],
        opts: &WriteOpts,
    ) -> Result<Scale, ApiError> {
        let (decoded, _) = DecodedPatch::decode(kind, ("autoscaling", "v1", "Scale"), patch, opts.validation)?;
        self.write_scale(info, ns, name, opts, |current| {
            let mut doc = current.clone();
            decoded.apply(&mut doc)?;
            Ok(doc)
        })
        .await
    }

    /// Writes the `Scale` that `scale` makes of the current one into the object's spec.
    async fn write_scale(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &WriteOpts,
        scale: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Scale, ApiError> {
        let sub = scale_subresource(info)?;
        let ns = if info.namespaced { ns } else { "" };
        let (mut cur, mut is_current) = self.current(info, ns, name).await?;
        loop {
            let attempt = async {
                let mut parent = cur.value();
                let mut current = scale_of_value(info, &parent)?.to_value();
                // A custom resource without replicas gives a patch kube's marker of an unset
                // count, which the patched Scale may not keep.
                let unset = info.custom.is_some() && lookup(&parent, &sub.spec_replicas_path).is_none();
                if unset {
                    current["spec"]["replicas"] = UNSET_REPLICAS.into();
                }
                let scaled = scale(&current)?;
                if unset && scaled.pointer("/spec/replicas").and_then(Value::as_i64) == Some(UNSET_REPLICAS) {
                    return Err(ApiError::bad_request(format!(
                        "the spec replicas field {} cannot be empty",
                        crate::structural::go_quote(&sub.spec_replicas_path)
                    )));
                }
                let req = decode(info, ns, name, scaled)?;
                if req.precondition.is_some_and(|p| p != cur.rv) {
                    return Err(ApiError::conflict(&info.group, &info.plural, name));
                }
                set(&mut parent, &sub.spec_replicas_path, req.replicas.into());
                let Value::Object(parent) = parent else {
                    return Err(ApiError::internal("stored object is not an object"));
                };
                self.replace(info, (&cur, is_current), parent, opts, Tracking::Scale).await
            }
            .await;
            match self.settle(info, (ns, name), (&cur, is_current), attempt).await? {
                ControlFlow::Break(r) => return scale_of(info, &r),
                ControlFlow::Continue(newer) => (cur, is_current) = (newer, true),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_mutated_scale_gives_its_replicas_to_the_parent_after_kube_s_check() {
        let registry = crate::registry::Registry::with_defaults();
        let info = registry.find("apps", "v1", "deployments").unwrap();
        let mut parent = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
        apply_scale(info, &mut parent, &json!({"spec": {"replicas": 4}})).unwrap();
        assert_eq!(parent["spec"]["replicas"], 4);
        apply_scale(info, &mut parent, &json!({"spec": {}})).unwrap();
        assert_eq!(parent["spec"]["replicas"], 0, "absent replicas are 0, as kube decodes them");
        let e = apply_scale(info, &mut parent, &json!({"spec": {"replicas": -2}})).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0"
            )
        );
    }

    #[test]
    fn paths_are_read_and_written() {
        let mut v = json!({"spec": {"replicas": 2}});
        assert_eq!(lookup(&v, ".spec.replicas"), Some(&json!(2)));
        set(&mut v, ".spec.replicas", json!(5));
        set(&mut v, ".status.replicas", json!(1));
        assert_eq!(v, json!({"spec": {"replicas": 5}, "status": {"replicas": 1}}));
    }
}

//! kube-apiserver's storage admission plugins, on by default as in kube:
//! - DefaultStorageClass: a PersistentVolumeClaim created without a class (no
//!   `spec.storageClassName`, not even `""`, and no `volume.beta.kubernetes.io/storage-class`
//!   annotation) gets the default StorageClass, the one annotated
//!   `storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation); of several,
//!   the newest (then the first by name); none leaves it without;
//! - StorageObjectInUseProtection: a PersistentVolumeClaim or PersistentVolume created gets the
//!   finalizer `kubernetes.io/pvc-protection` or `kubernetes.io/pv-protection` (appended, once),
//!   which [`crate::volume_protection`] removes once nothing uses it;
//! - PersistentVolumeClaimResize: an update that grows a claim's storage request is refused (403)
//!   unless the claim is bound and its StorageClass, the same before and after, allows volume
//!   expansion.
//!
//! Invariants: the mutations act on creates of the main resource only, before mutating webhooks
//! (which see what they set), dry runs included; the resize check judges updates of the main
//! resource after validation, before validating admission; the StorageClasses are read from the
//! watch cache, as kube's plugins read their informer's, once it holds every class this server
//! wrote (see [`crate::store::Store::admission_view`]).

use serde_json::{Map, Value};

use crate::cache::WatchCache;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// The finalizer of claims in use.
pub(crate) const CLAIM_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer of volumes in use.
pub(crate) const VOLUME_PROTECTION: &str = "kubernetes.io/pv-protection";
/// The annotation that named a claim's class before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The annotations that mark a StorageClass as the default.
const DEFAULT_MARKS: [&str; 2] =
    ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];

/// Whether `info` is core/v1's claims.
pub(crate) fn is_claims(info: &ResourceInfo) -> bool {
    info.is_core("persistentvolumeclaims")
}

/// Whether `info` is core/v1's volumes.
pub(crate) fn is_volumes(info: &ResourceInfo) -> bool {
    info.is_core("persistentvolumes")
}

/// What the plugins add to a claim or volume being created; `classes` are the StorageClasses
/// (read for claims only).
pub(crate) fn admit_create(info: &ResourceInfo, obj: &mut Map<String, Value>, classes: &[Value]) {
    let finalizer = if is_claims(info) {
        if !has_class(obj)
            && let Some(name) = default_class(classes)
            && let Some(spec) = crate::defaults::ensure_obj(obj, "spec")
        {
            spec.insert("storageClassName".into(), name.into());
        }
        CLAIM_PROTECTION
    } else if is_volumes(info) {
        VOLUME_PROTECTION
    } else {
        return;
    };
    let Some(meta) = crate::defaults::ensure_obj(obj, "metadata") else { return };
    let list = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(finalizer))
    {
        list.push(finalizer.into());
    }
}

/// The StorageClasses a create of `info` reads (claims only), from the cache once it holds every
/// class this server wrote.
pub(crate) async fn classes_for(store: &Store, info: &ResourceInfo) -> Result<Vec<Value>, ApiError> {
    if !is_claims(info) {
        return Ok(Vec::new());
    }
    store.admission_view().await;
    storage_classes(store.cache())
}

fn storage_classes(cache: &WatchCache) -> Result<Vec<Value>, ApiError> {
    let Some(classes) = cache.registry().find("storage.k8s.io", "v1", "storageclasses").cloned() else {
        return Ok(Vec::new());
    };
    let (_, all) = cache.snapshot(&classes, None, &Selectors::default())?;
    Ok(all.iter().map(|c| c.value()).collect())
}

/// kube's PersistentVolumeClaimResize: `obj` replacing the claim `old` may grow its storage only
/// when the claim is bound and its class (the same before and after) allows volume expansion;
/// the classes are read from the cache when it grows.
pub(crate) async fn check_resize(store: &Store, obj: &Map<String, Value>, old: &Value) -> Result<(), ApiError> {
    let size = |v: Option<&Value>| {
        let storage = v.and_then(|s| s.pointer("/resources/requests/storage"));
        storage.and_then(crate::quantity::text).and_then(|t| crate::quantity::parse(&t))
    };
    let (new_size, old_size) = (size(obj.get("spec")).unwrap_or(0), size(old.get("spec")).unwrap_or(0));
    if new_size <= old_size {
        return Ok(());
    }
    let name = old.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let refuse = |why: &str| Err(ApiError::forbidden("", "persistentvolumeclaims", name, why));
    if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return refuse("Only bound persistent volume claims can be expanded");
    }
    let class = class_of(obj.get("metadata").and_then(Value::as_object), obj.get("spec"));
    let old_class = class_of(old.get("metadata").and_then(Value::as_object), old.get("spec"));
    let expands = |classes: Vec<Value>| {
        classes.iter().any(|c| {
            c.pointer("/metadata/name").and_then(Value::as_str) == Some(class)
                && c.get("allowVolumeExpansion") == Some(&Value::Bool(true))
        })
    };
    let expands = !class.is_empty() && class == old_class && {
        store.admission_view().await;
        expands(storage_classes(store.cache())?)
    };
    match expands {
        true => Ok(()),
        false => refuse(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        ),
    }
}

/// Whether a claim names a class, even `""` (kube's `PersistentVolumeClaimHasClass`).
fn has_class(obj: &Map<String, Value>) -> bool {
    let annotated = obj.get("metadata").and_then(|m| m.get("annotations")).and_then(|a| a.get(BETA_CLASS)).is_some();
    annotated || obj.get("spec").and_then(|s| s.get("storageClassName")).is_some_and(|c| !c.is_null())
}

/// A claim's class: its beta annotation's, else `spec.storageClassName`, else `""` (kube's
/// `GetPersistentVolumeClaimClass`).
fn class_of<'a>(meta: Option<&'a Map<String, Value>>, spec: Option<&'a Value>) -> &'a str {
    let annotated = meta.and_then(|m| m.get("annotations")).and_then(|a| a.get(BETA_CLASS)).and_then(Value::as_str);
    annotated.or_else(|| spec.and_then(|s| s.get("storageClassName")).and_then(Value::as_str)).unwrap_or("")
}

/// The default among `classes`: the newest marked one, the first by name among those created in
/// the same second.
fn default_class(classes: &[Value]) -> Option<&str> {
    let marked = |c: &Value| {
        let annotations = c.pointer("/metadata/annotations");
        DEFAULT_MARKS.iter().any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"))
    };
    let created = |c: &Value| {
        let t = c.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("");
        chrono::DateTime::parse_from_rfc3339(t).map(|t| t.timestamp()).unwrap_or(i64::MIN)
    };
    fn name(c: &Value) -> &str {
        c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
    }
    classes
        .iter()
        .filter(|c| marked(c))
        .min_by(|a, b| created(b).cmp(&created(a)).then_with(|| name(a).cmp(name(b))))
        .map(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, annotations: Value) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}})
    }

    #[test]
    fn the_default_is_the_newest_marked_class_then_the_first_by_name() {
        let marked = json!({"storageclass.kubernetes.io/is-default-class": "true"});
        let beta = json!({"storageclass.beta.kubernetes.io/is-default-class": "true"});
        let classes = vec![
            class("old", "2026-01-01T00:00:00Z", marked.clone()),
            class("b", "2026-02-01T00:00:00Z", beta),
            class("a", "2026-02-01T00:00:00Z", marked.clone()),
            class("newer", "2026-03-01T00:00:00Z", json!({"storageclass.kubernetes.io/is-default-class": "True"})),
        ];
        assert_eq!(default_class(&classes), Some("a"));
        assert_eq!(default_class(&classes[..1]), Some("old"));
        assert_eq!(default_class(&classes[3..]), None);
    }

    #[test]
    fn a_claim_that_names_a_class_or_an_empty_one_keeps_it() {
        let claims =
            crate::registry::Registry::with_defaults().find("", "v1", "persistentvolumeclaims").cloned().unwrap();
        let classes = vec![class("fast", "2026-01-01T00:00:00Z", json!({DEFAULT_MARKS[0]: "true"}))];
        for (given, expected) in [
            (json!({"spec": {}}), json!("fast")),
            (json!({"spec": {"storageClassName": null}}), json!("fast")),
            (json!({"spec": {"storageClassName": ""}}), json!("")),
            (json!({"spec": {"storageClassName": "slow"}}), json!("slow")),
            (json!({"metadata": {"annotations": {BETA_CLASS: "x"}}, "spec": {}}), Value::Null),
        ] {
            let Value::Object(mut obj) = given else { unreachable!() };
            admit_create(&claims, &mut obj, &classes);
            assert_eq!(obj["spec"].get("storageClassName").unwrap_or(&Value::Null), &expected);
            assert_eq!(obj["metadata"]["finalizers"], json!([CLAIM_PROTECTION]));
        }
        let Value::Object(mut held) = json!({"metadata": {"finalizers": ["a", CLAIM_PROTECTION]}}) else {
            unreachable!()
        };
        admit_create(&claims, &mut held, &[]);
        assert_eq!(held["metadata"]["finalizers"], json!(["a", CLAIM_PROTECTION]));
    }
}

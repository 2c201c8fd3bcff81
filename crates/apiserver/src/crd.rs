//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): what the server fills in when one is
//! written, and what it serves for one.
//!
//! A CustomResourceDefinition is stored like any object. Its status is written by the server's
//! [`crate::crd_controller`] (accepted names, `NamesAccepted`, `Established`, `Terminating`),
//! and the watch cache serves its kinds as soon as it sees it `Established`
//! ([`served_versions`]): one [`ResourceInfo`] per served version, with the names the status
//! accepted, kept under `/registry/<group>/<plural>/…` whatever the version.
//!
//! Invariants: [`served_versions`] depends only on the stored object, so every server reading one
//! storage serves the same kinds for it; objects of a custom resource are stored in the storage
//! version (`spec.versions[].storage`), and `status.storedVersions` always lists it.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::registry::{CustomVersion, PrinterColumn, ResourceInfo, ScaleSubresource, version_priority};

/// The group of CustomResourceDefinitions.
pub const GROUP: &str = "apiextensions.k8s.io";

/// The finalizer that makes the server delete a CustomResourceDefinition's objects before it.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `info` is the `customresourcedefinitions` resource.
pub fn is_crds(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.plural == "customresourcedefinitions"
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_str).unwrap_or("")
}

/// The storage version of a CustomResourceDefinition (the version marked `storage`).
pub fn storage_version(crd: &Value) -> Option<String> {
    crd.get("spec")?
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name")?.as_str().map(str::to_string))
}

/// A condition of a CustomResourceDefinition's status, by type.
pub fn condition<'a>(crd: &'a Value, kind: &str) -> Option<&'a Value> {
    crd.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether a condition of the status is `True`.
pub fn condition_true(crd: &Value, kind: &str) -> bool {
    condition(crd, kind).and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

/// The status a CustomResourceDefinition starts with (kube's `PrepareForCreate`): no names
/// accepted yet, no conditions, its storage version stored.
pub fn fresh_status(obj: &mut Map<String, Value>) {
    let stored: Vec<String> = storage_version(&Value::Object(obj.clone())).into_iter().collect();
    obj.insert(
        "status".into(),
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}),
    );
}

/// The defaults of every write of a CustomResourceDefinition's spec.
pub fn default_spec(obj: &mut Map<String, Value>) {
    let Some(Value::Object(spec)) = obj.get_mut("spec") else { return };
    match spec.get_mut("conversion") {
        Some(Value::Object(c)) => {
            if c.get("strategy").and_then(Value::as_str).unwrap_or("").is_empty() {
                c.insert("strategy".into(), "None".into());
            }
        }
        _ => {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
    }
    if let Some(Value::Object(names)) = spec.get_mut("names") {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
        if names.get("singular").and_then(Value::as_str).unwrap_or("").is_empty() && !kind.is_empty() {
            names.insert("singular".into(), kind.to_ascii_lowercase().into());
        }
        if names.get("listKind").and_then(Value::as_str).unwrap_or("").is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), format!("{kind}List").into());
        }
    }
}

/// After an update of the spec (the stored status kept): the new storage version joins
/// `status.storedVersions`, as kube-apiserver's strategy does.
pub fn prepare_update(obj: &mut Map<String, Value>) {
    let Some(storage) = storage_version(&Value::Object(obj.clone())) else { return };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = status.as_object_mut().map(|s| s.entry("storedVersions").or_insert_with(|| json!([])));
    if let Some(stored) = stored {
        if !stored.is_array() {
            *stored = json!([]);
        }
        if let Some(a) = stored.as_array_mut()
            && !a.iter().any(|v| v.as_str() == Some(storage.as_str()))
        {
            a.push(storage.into());
        }
    }
}

/// The printer columns of one version.
fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let json_path = str_at(c, &["jsonPath"]).to_string();
            let description = match str_at(c, &["description"]) {
                "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
                d => d.to_string(),
            };
            PrinterColumn {
                name: str_at(c, &["name"]).to_string(),
                type_: str_at(c, &["type"]).to_string(),
                format: str_at(c, &["format"]).to_string(),
                description,
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                json_path,
            }
        })
        .collect()
}

/// What a CustomResourceDefinition serves: its served versions, highest priority first, with
/// the names its status accepted. Nothing until it is `Established`.
pub fn served_versions(crd: &Value) -> Vec<ResourceInfo> {
    if !condition_true(crd, "Established") {
        return Vec::new();
    }
    let name = str_at(crd, &["metadata", "name"]).to_string();
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let accepted = crd.get("status").and_then(|s| s.get("acceptedNames")).cloned().unwrap_or(Value::Null);
    let group = str_at(&spec, &["group"]).to_string();
    let plural = str_at(&accepted, &["plural"]).to_string();
    let kind = str_at(&accepted, &["kind"]).to_string();
    let Some(storage) = storage_version(crd) else { return Vec::new() };
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let singular = match str_at(&accepted, &["singular"]) {
        "" => kind.to_ascii_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(&accepted, &["listKind"]) {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let namespaced = str_at(&spec, &["scope"]) != "Cluster";
    let terminating = crd.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null());
    let mut versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(version_priority(str_at(v, &["name"]))));
    let served: Vec<String> = versions.iter().map(|v| str_at(v, &["name"]).to_string()).collect();
    let schema_of = |v: &Value| v.get("schema").and_then(|s| s.get("openAPIV3Schema")).cloned().map(Arc::new);
    let version_schemas: Arc<std::collections::BTreeMap<String, Arc<Value>>> = Arc::new(
        spec.get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| Some((str_at(v, &["name"]).to_string(), schema_of(v)?)))
            .collect(),
    );
    let conversion = spec.get("conversion");
    let conversion_webhook = (conversion.map_or("", |c| str_at(c, &["strategy"])) == "Webhook").then(|| {
        let webhook = conversion.and_then(|c| c.get("webhook"));
        Arc::new(crate::registry::ConversionWebhook {
            client_config: webhook.and_then(|w| w.get("clientConfig")).cloned().unwrap_or(Value::Null),
            review_versions: crate::object::strings(webhook.and_then(|w| w.get("conversionReviewVersions"))),
        })
    });
    versions
        .into_iter()
        .map(|v| {
            let version = str_at(v, &["name"]);
            let mut info = ResourceInfo::new(&group, version, &plural, &kind, namespaced);
            info.singular = singular.clone();
            info.short_names = crate::object::strings(accepted.get("shortNames"));
            info.selectable_fields = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|f| str_at(f, &["jsonPath"]).trim_start_matches('.').to_string())
                .filter(|f| !f.is_empty())
                .collect();
            let sub = v.get("subresources");
            info.status_subresource = sub.and_then(|s| s.get("status")).is_some_and(|s| !s.is_null());
            info.scale_subresource =
                sub.and_then(|s| s.get("scale")).filter(|s| s.is_object()).map(|s| ScaleSubresource {
                    spec_replicas_path: str_at(s, &["specReplicasPath"]).to_string(),
                    status_replicas_path: str_at(s, &["statusReplicasPath"]).to_string(),
                    label_selector_path: Some(str_at(s, &["labelSelectorPath"]).to_string()).filter(|p| !p.is_empty()),
                    default_replicas: 0,
                });
            let deprecation_warning = (v.get("deprecated").and_then(Value::as_bool) == Some(true)).then(|| {
                match v.get("deprecationWarning").and_then(Value::as_str) {
                    Some(w) => w.to_string(),
                    None => default_deprecation_warning(&spec, version, &group, &kind),
                }
            });
            info.custom = Some(Arc::new(CustomVersion {
                crd_name: name.clone(),
                storage_version: storage.clone(),
                served_versions: served.clone(),
                schema: schema_of(v),
                printer_columns: printer_columns(v),
                categories: crate::object::strings(accepted.get("categories")),
                list_kind: list_kind.clone(),
                terminating,
                deprecation_warning,
                merge_schema: Default::default(),
                version_schemas: version_schemas.clone(),
                conversion_webhook: conversion_webhook.clone(),
            }));
            info
        })
        .collect()
}

/// kube's `storageVersionHash` of a resource in discovery: the first 8 bytes of the SHA-256 of
/// `group/version/kind` (the storage version), base64.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Reads CustomResourceDefinitions from YAML (one document or several) or JSON; a `List` of them
/// is flattened. Documents of another kind are an error.
pub fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![v],
        Err(_) => crate::yaml::decode_all(text)?,
    };
    let mut out = Vec::new();
    for d in docs {
        match d {
            Value::Null => {}
            Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                for item in m.get("items").and_then(Value::as_array).into_iter().flatten() {
                    out.push(item.clone());
                }
            }
            other => out.push(other),
        }
    }
    for d in &out {
        let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "CustomResourceDefinition" {
            return Err(format!("a {kind:?} where a CustomResourceDefinition was expected"));
        }
    }
    Ok(out)
}

/// kube's warning for a deprecated version that sets none: the newest served version that is
/// not deprecated and newer (by kube's version order) is named as the one to use.
fn default_deprecation_warning(spec: &Value, deprecated: &str, group: &str, kind: &str) -> String {
    let msg = format!("{group}/{deprecated} {kind} is deprecated");
    let versions = spec.get("versions").and_then(Value::as_array).into_iter().flatten();
    let newer = versions
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .map(|v| str_at(v, &["name"]))
        .filter(|name| version_priority(name) > version_priority(deprecated))
        .max_by_key(|name| version_priority(name));
    match newer {
        Some(name) => format!("{msg}; use {group}/{name} {kind}"),
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hash_is_kubes() {
        assert_eq!(storage_version_hash("demo.example.org", "v1", "Gadget"), "RtZDxUbQp7U=");
    }

    #[test]
    fn manifests_from_yaml_and_json() {
        let y = "kind: CustomResourceDefinition\nmetadata: {name: a}\n---\nkind: CustomResourceDefinition\nmetadata: {name: b}\n";
        assert_eq!(parse_manifests(y).unwrap().len(), 2);
        assert_eq!(parse_manifests(r#"{"kind":"CustomResourceDefinition"}"#).unwrap().len(), 1);
        assert!(parse_manifests("kind: Pod\n").is_err());
    }

    #[test]
    fn served_only_once_established_and_by_priority() {
        let mut crd = json!({
            "metadata": {"name": "gadgets.demo.example.org"},
            "spec": {"group": "demo.example.org", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                     "versions": [{"name": "v1beta1", "served": true, "storage": false},
                                  {"name": "v1", "served": true, "storage": true},
                                  {"name": "v2alpha1", "served": false, "storage": false}]},
            "status": {"acceptedNames": {"plural": "gadgets", "kind": "Gadget"}}
        });
        assert!(served_versions(&crd).is_empty());
        crd["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
        let s = served_versions(&crd);
        assert_eq!(s.iter().map(|i| i.version.as_str()).collect::<Vec<_>>(), ["v1", "v1beta1"]);
        assert_eq!(s[0].storage_path, "demo.example.org/gadgets");
        assert_eq!(s[1].custom.as_ref().unwrap().storage_version, "v1");
    }
}

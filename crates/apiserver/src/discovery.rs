//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/{group}`, `/apis/{group}/{version}` in the legacy (unaggregated)
//! JSON form, which kubectl and client libraries fall back to.
//!
//! Invariant: the documents are derived only from the registry, so every
//! resource listed is actually served (custom resources from the moment their
//! CustomResourceDefinition is established, until it is deleted).
//! Custom resources are listed as the apiextensions server lists them: kube's
//! verb order, their categories and `storageVersionHash`.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "34",
        "gitVersion": "v1.35.0",
        "gitCommit": "$Format:%H$",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_doc(reg: &Registry, group: &str) -> Option<Value> {
    let versions: Vec<Value> = reg
        .group_versions()
        .into_iter()
        .filter(|(g, _)| g == group)
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
}

/// `/apis`.
pub fn api_group_list(reg: &Registry) -> Value {
    let mut groups: Vec<String> = Vec::new();
    for (g, _) in reg.group_versions() {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let docs: Vec<Value> = groups.iter().filter_map(|g| group_doc(reg, g)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": docs})
}

/// `/apis/{group}`.
pub fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let mut d = group_doc(reg, group)?;
    if let Value::Object(m) = &mut d {
        let mut out = serde_json::Map::new();
        out.insert("kind".into(), "APIGroup".into());
        out.insert("apiVersion".into(), "v1".into());
        out.extend(std::mem::take(m));
        return Some(Value::Object(out));
    }
    None
}

/// The entries of one resource: itself, then its subresources (`finalize` of namespaces,
/// `status`, `scale`). Built-in types list their subresources in path order, as kube-apiserver's
/// route table does; custom resources list `status` before `scale`, as the apiextensions server
/// does. Namespaces have no `deletecollection`, as on kube-apiserver.
fn resource_entry(r: &ResourceInfo) -> Vec<Value> {
    let is_namespaces = crate::namespaces::is_namespaces(r);
    let verbs: &[&str] = if is_namespaces {
        &["create", "delete", "get", "list", "patch", "update", "watch"]
    } else if r.custom.is_some() {
        &["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
    } else {
        &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    };
    let mut main = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": verbs,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if let Some(c) = &r.custom {
        if !c.categories.is_empty() {
            main["categories"] = json!(c.categories);
        }
        main["storageVersionHash"] = json!(crate::crd::storage_version_hash(&r.group, &c.storage_version, &r.kind));
    }
    let status = r.status_subresource.then(|| {
        json!({
            "name": format!("{}/status", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["get", "patch", "update"],
        })
    });
    let scale = r.scale_subresource.is_some().then(|| {
        json!({
            "name": format!("{}/scale", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        })
    });
    let finalize = is_namespaces.then(|| {
        json!({
            "name": format!("{}/finalize", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["update"],
        })
    });
    let subresources = if r.list_items_have_kind { [finalize, status, scale] } else { [finalize, scale, status] };
    std::iter::once(main).chain(subresources.into_iter().flatten()).collect()
}

/// `/api/v1` or `/apis/{group}/{version}`; None if nothing is served there.
pub fn api_resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let rs: Vec<Value> =
        reg.all().iter().filter(|r| r.group == group && r.version == version).flat_map(|r| resource_entry(r)).collect();
    if rs.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs}))
}

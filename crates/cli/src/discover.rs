//! Finding a resource by the name a user types, through the server's discovery documents, as
//! kubectl does: the plural (`pods`), the singular (`pod`), a short name (`po`) or the kind
//! (`Pod`), case-insensitive, optionally qualified by its group (`widgets.example.com`). Custom
//! resources are found like built-in ones.
//!
//! Invariants: the core group is searched first, then the groups in the server's order, each at
//! its preferred version; subresources are never matched; a resource that cannot be listed and
//! watched is an error, and so is a name the server does not serve (kubectl's message).

use anyhow::{Context, Result, bail};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};
use kube::core::{ApiResource, GroupVersion};

/// A resource found through discovery.
#[derive(Debug, Clone)]
pub struct Found {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// Finds the resource `name` names (see the module docs).
pub async fn resolve(client: &kube::Client, name: &str) -> Result<Found> {
    let wanted = name.to_ascii_lowercase();
    let (res, group) = match wanted.split_once('.') {
        Some((r, g)) => (r, Some(g)),
        None => (wanted.as_str(), None),
    };
    if group.is_none_or(|g| g == "core" || g == "v1") {
        let list =
            client.list_core_api_resources("v1").await.context("cannot read the server's discovery (/api/v1)")?;
        if let Some(found) = find(&list, res)? {
            return Ok(found);
        }
    }
    let groups = client.list_api_groups().await.context("cannot read the server's discovery (/apis)")?;
    for g in groups.groups {
        if group.is_some_and(|w| w != g.name) {
            continue;
        }
        let Some(version) = g.preferred_version.or_else(|| g.versions.first().cloned()) else { continue };
        // A group whose documents cannot be read (an aggregated API that is down) is skipped, as
        // kubectl does.
        let list = match client.list_api_group_resources(&version.group_version).await {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(group_version = %version.group_version, error = %e, "discovery failed; skipped");
                continue;
            }
        };
        if let Some(found) = find(&list, res)? {
            return Ok(found);
        }
    }
    bail!("the server doesn't have a resource type {name:?}")
}

/// The resource of `list` that `name` (lower case, unqualified) names, if any.
fn find(list: &APIResourceList, name: &str) -> Result<Option<Found>> {
    let Some(r) = list.resources.iter().find(|r| !r.name.contains('/') && names(r, name)) else {
        return Ok(None);
    };
    for verb in ["list", "watch"] {
        if !r.verbs.iter().any(|v| v == verb) {
            bail!("the server does not allow {verb} on {} ({})", r.name, list.group_version);
        }
    }
    let gv: GroupVersion =
        list.group_version.parse().with_context(|| format!("bad group version {:?}", list.group_version))?;
    Ok(Some(Found {
        resource: ApiResource::from_gvk_with_plural(&gv.with_kind(&r.kind), &r.name),
        namespaced: r.namespaced,
    }))
}

fn names(r: &APIResource, name: &str) -> bool {
    r.name == name
        || r.singular_name == name
        || r.kind.eq_ignore_ascii_case(name)
        || r.short_names.as_ref().is_some_and(|s| s.iter().any(|s| s == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> APIResourceList {
        serde_json::from_value(serde_json::json!({
            "groupVersion": "example.com/v1",
            "resources": [
                {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
                 "verbs": ["get", "list", "watch"], "shortNames": ["wd"]},
                {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
                 "verbs": ["get", "patch"]},
                {"name": "gadgets", "singularName": "gadget", "namespaced": false, "kind": "Gadget",
                 "verbs": ["get", "create"]}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn every_kubectl_name_finds_the_resource() {
        for name in ["widgets", "widget", "wd"] {
            let found = find(&list(), name).unwrap().unwrap();
            assert_eq!(
                (found.resource.api_version.as_str(), found.resource.kind.as_str(), found.resource.plural.as_str()),
                ("example.com/v1", "Widget", "widgets")
            );
            assert!(found.namespaced);
        }
        assert!(find(&list(), "status").unwrap().is_none(), "subresources are not matched");
        assert!(find(&list(), "pods").unwrap().is_none());
    }

    #[test]
    fn a_resource_that_cannot_be_watched_is_an_error() {
        let e = find(&list(), "gadgets").unwrap_err().to_string();
        assert!(e.contains("does not allow list on gadgets"), "{e}");
    }
}

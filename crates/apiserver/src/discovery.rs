//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/{group}`, `/apis/{group}/{version}` in the legacy (unaggregated)
//! JSON form, and `/api` and `/apis` in the aggregated form
//! (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, every group's versions and
//! resources in one answer), which kubectl and client-go ask for first.
//!
//! Invariant: the documents are derived only from the registry, so every
//! resource listed is actually served (custom resources from the moment their
//! CustomResourceDefinition is established, until it is deleted).
//! Custom resources are listed as the apiextensions server lists them: kube's
//! verb order, their categories and `storageVersionHash`.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

/// `/version`, its fields in the order of kube's `version.Info` (kube-apiserver writes it indented).
pub const VERSION: &str = r#"{
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
}"#;

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

/// kube-apiserver's index (`GET /`): every path the server answers at its root, sorted, as
/// `{"paths":[…]}` indented by two spaces — the API roots, each served group and group-version
/// (custom resources' too), the health endpoints and their checks, the metrics, the OpenAPI
/// documents and the service account issuer's.
pub fn index(reg: &Registry) -> Value {
    let mut paths: Vec<String> = [
        "/.well-known/openid-configuration",
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/openapi/v3/",
        "/openid/v1/jwks",
        "/version",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    for endpoint in crate::handlers::HEALTH_ENDPOINTS {
        let checks = crate::handlers::health_checks(endpoint);
        paths.push(format!("/{endpoint}"));
        paths.extend(checks.iter().map(|c| format!("/{endpoint}/{c}")));
    }
    for (g, v) in reg.group_versions() {
        paths.push(format!("/apis/{g}"));
        paths.push(format!("/apis/{g}/{v}"));
    }
    paths.sort_unstable();
    paths.dedup();
    json!({"paths": paths})
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

/// The verbs a resource serves, in the order kube-apiserver lists them.
fn verbs(r: &ResourceInfo) -> &'static [&'static str] {
    if r.review {
        crate::access_review::VERBS
    } else if crate::component_status::is_component_statuses(r) {
        crate::component_status::VERBS
    } else if crate::namespaces::is_namespaces(r) {
        &["create", "delete", "get", "list", "patch", "update", "watch"]
    } else if r.custom.as_ref().is_some_and(|c| c.terminating) {
        // A terminating definition's objects can no longer be written, only read and deleted.
        &["delete", "deletecollection", "get", "list", "watch"]
    } else if r.custom.is_some() {
        &["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
    } else {
        &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    }
}

/// The entries of one resource: itself, then its subresources (`finalize` of namespaces,
/// `status`, `scale`, the connections, `binding`, `ephemeralcontainers`, `eviction` and `resize`
/// of pods, `proxy` of pods, Services and nodes, `token` of service accounts).
/// Built-in types list their subresources in path order, as kube-apiserver's route table does;
/// custom resources list `status` before `scale`, as the apiextensions server does. Namespaces
/// have no `deletecollection`, as on kube-apiserver.
fn resource_entry(r: &ResourceInfo) -> Vec<Value> {
    let is_namespaces = crate::namespaces::is_namespaces(r);
    let verbs = verbs(r);
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
    let categories = categories(r);
    if !categories.is_empty() {
        main["categories"] = json!(categories);
    }
    if let Some(c) = &r.custom {
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
    let pods = r.is_core("pods");
    let binding = pods.then(|| {
        json!({"name": "pods/binding", "singularName": "", "namespaced": true, "kind": "Binding", "verbs": ["create"]})
    });
    // Served as the pod itself, as `status` is.
    let pod_part = |name: &str| {
        pods.then(|| {
            json!({"name": format!("pods/{name}"), "singularName": "", "namespaced": true, "kind": "Pod",
                "verbs": ["get", "patch", "update"]})
        })
    };
    // The connections (`crate::pod_connection`): a log is read as a Pod, the others take
    // their options.
    let connection = |name: &str, kind: &str, verbs: &[&str]| {
        pods.then(|| {
            json!({"name": format!("pods/{name}"), "singularName": "", "namespaced": true, "kind": kind,
                "verbs": verbs})
        })
    };
    let attach = connection("attach", "PodAttachOptions", &["create", "get"]);
    let exec = connection("exec", "PodExecOptions", &["create", "get"]);
    let log = connection("log", "Pod", &["get"]);
    let portforward = connection("portforward", "PodPortForwardOptions", &["create", "get"]);
    // Every method passes through a proxy: kube lists the verbs of those it routes.
    let proxy = crate::proxy_subresource::serves(r).then(|| {
        json!({"name": format!("{}/proxy", r.plural), "singularName": "", "namespaced": r.namespaced,
            "kind": crate::proxy_subresource::options_kind(&r.plural), "verbs": ["create", "delete", "get", "patch", "update"]})
    });
    let ephemeral = pod_part(crate::pod_ephemeral_containers::SUBRESOURCE);
    let resize = pod_part(crate::pod_resize::SUBRESOURCE);
    let eviction = pods.then(|| {
        json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
            "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    });
    let approval = crate::certificate_signing::is_csrs(r).then(|| {
        json!({"name": format!("{}/approval", r.plural), "singularName": "", "namespaced": false,
            "kind": r.kind, "verbs": ["get", "patch", "update"]})
    });
    let token = (r.is_core("serviceaccounts")).then(|| {
        json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
    });
    let subresources = if r.list_items_have_kind {
        [finalize, status, scale, None, None, None, None, None, None, None, None, None, None, None]
    } else {
        [
            approval,
            finalize,
            attach,
            binding,
            ephemeral,
            eviction,
            exec,
            log,
            portforward,
            proxy,
            resize,
            scale,
            status,
            token,
        ]
    };
    std::iter::once(main).chain(subresources.into_iter().flatten()).collect()
}

/// The categories a resource belongs to: a custom resource's, kube's `all` for the built-in
/// workloads and services (what `kubectl get all` lists), `api-extensions` for definitions, API
/// services, webhook configurations and policies.
fn categories(r: &ResourceInfo) -> Vec<String> {
    if let Some(c) = &r.custom {
        return c.categories.clone();
    }
    const ALL: [(&str, &str); 10] = [
        ("", "pods"),
        ("", "replicationcontrollers"),
        ("", "services"),
        ("apps", "daemonsets"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("batch", "cronjobs"),
        ("batch", "jobs"),
    ];
    if ALL.contains(&(r.group.as_str(), r.plural.as_str())) {
        vec!["all".to_string()]
    } else if r.group == crate::crd::GROUP
        || r.group == crate::admission_policy::GROUP
        || r.group == crate::api_service::GROUP
    {
        // What extends the API: definitions, API services, webhooks and policies.
        vec!["api-extensions".to_string()]
    } else {
        Vec::new()
    }
}

/// `/api/v1` or `/apis/{group}/{version}`; None if nothing is served there.
pub fn api_resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let served: Vec<&std::sync::Arc<ResourceInfo>> =
        reg.all().iter().filter(|r| r.group == group && r.version == version).collect();
    let mut rs: Vec<Value> = served.iter().flat_map(|r| resource_entry(r)).collect();
    // kube-apiserver installs, and so lists, a built-in group version's paths in sorted order
    // (the apiextensions server lists a custom resource's as it defines them, and so does the
    // server for the resources a test registers).
    if served.iter().all(|r| crate::schema::builtin().name_of(&r.group, &r.version, &r.kind).is_some()) {
        rs.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
    if rs.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs}))
}

/// The media type of the aggregated discovery documents in JSON.
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The media type of the aggregated discovery documents in YAML.
pub(crate) const AGGREGATED_YAML: &str = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for the aggregated documents (`apidiscovery.k8s.io/v2`)
/// rather than the legacy ones: as kube-apiserver's discovery wrapper negotiates, the first
/// range (in goautoneg's order) asking for that rendering in a media type the server writes
/// decides, wherever it stands; ranges without it do not count. Other versions of the
/// aggregated form (`v2beta1`) are not served, as kube-apiserver v1.35 serves none, so their
/// clients read the legacy documents.
pub fn wants_aggregated(accept: Option<&str>) -> bool {
    crate::negotiation::Accept::parse(accept).aggregated().is_some()
}

/// `/api` (`core`: the core group) or `/apis` (every named group) in the aggregated form.
pub fn aggregated(reg: &Registry, core: bool) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    if core {
        groups.push((String::new(), vec!["v1".to_string()]));
    } else {
        for (g, v) in reg.group_versions() {
            match groups.iter_mut().find(|(name, _)| *name == g) {
                Some((_, versions)) => versions.push(v),
                None => groups.push((g, vec![v])),
            }
        }
    }
    let items: Vec<Value> = groups
        .iter()
        .map(|(g, versions)| {
            let mut metadata = json!({"creationTimestamp": null});
            if !g.is_empty() {
                metadata["name"] = json!(g);
            }
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let mut rs: Vec<&ResourceInfo> = Vec::new();
                    for r in reg.all() {
                        if r.group == *g && r.version == *v {
                            rs.push(r);
                        }
                    }
                    rs.sort_by(|a, b| a.plural.cmp(&b.plural));
                    let resources: Vec<Value> = rs.into_iter().map(aggregated_resource).collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// One resource in the aggregated form, its subresources inside it.
fn aggregated_resource(r: &ResourceInfo) -> Value {
    let kind = |group: &str, version: &str, kind: &str| json!({"group": group, "version": version, "kind": kind});
    // kube-apiserver names a built-in type's group and version only where the storage gives its
    // own (Scale, Eviction, TokenRequest); the apiextensions server names a custom resource's.
    let own = match &r.custom {
        Some(_) => kind(&r.group, &r.version, &r.kind),
        None => kind("", "", &r.kind),
    };
    let mut out = json!({
        "resource": r.plural,
        "responseKind": own,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": verbs(r),
    });
    if !r.short_names.is_empty() {
        out["shortNames"] = json!(r.short_names);
    }
    let categories = categories(r);
    if !categories.is_empty() {
        out["categories"] = json!(categories);
    }
    let mut subresources = Vec::new();
    if crate::certificate_signing::is_csrs(r) {
        subresources.push(json!({"subresource": "approval", "responseKind": own, "verbs": ["get", "patch", "update"]}));
    }
    if crate::namespaces::is_namespaces(r) {
        subresources.push(json!({"subresource": "finalize", "responseKind": own, "verbs": ["update"]}));
    }
    let status = json!({"subresource": "status", "responseKind": own, "verbs": ["get", "patch", "update"]});
    // Custom resources list `status` before `scale`, as the apiextensions server does.
    if r.status_subresource && r.custom.is_some() {
        subresources.push(status.clone());
    }
    if r.scale_subresource.is_some() {
        subresources.push(
            json!({"subresource": "scale", "responseKind": kind("autoscaling", "v1", "Scale"), "verbs": ["get", "patch", "update"]}),
        );
    }
    let proxy = crate::proxy_subresource::options_kind(&r.plural)
        .filter(|_| crate::proxy_subresource::serves(r))
        .map(|of| json!({"subresource": "proxy", "responseKind": kind("", "", of), "verbs": ["create", "delete", "get", "patch", "update"]}));
    if r.is_core("pods") {
        let pod_part =
            |name: &str| json!({"subresource": name, "responseKind": own, "verbs": ["get", "patch", "update"]});
        let connection = |name: &str, of: &str| json!({"subresource": name, "responseKind": kind("", "", of), "verbs": ["create", "get"]});
        subresources.push(connection("attach", "PodAttachOptions"));
        subresources
            .push(json!({"subresource": "binding", "responseKind": kind("", "", "Binding"), "verbs": ["create"]}));
        subresources.push(pod_part(crate::pod_ephemeral_containers::SUBRESOURCE));
        subresources.push(
            json!({"subresource": "eviction", "responseKind": kind("policy", "v1", "Eviction"), "verbs": ["create"]}),
        );
        subresources.push(connection("exec", "PodExecOptions"));
        subresources.push(json!({"subresource": "log", "responseKind": kind("", "", "Pod"), "verbs": ["get"]}));
        subresources.push(connection("portforward", "PodPortForwardOptions"));
        subresources.extend(proxy);
        subresources.push(pod_part(crate::pod_resize::SUBRESOURCE));
    } else {
        subresources.extend(proxy);
    }
    if r.status_subresource && r.custom.is_none() {
        subresources.push(status);
    }
    if r.is_core("serviceaccounts") {
        subresources.push(json!({"subresource": "token",
            "responseKind": kind("authentication.k8s.io", "v1", "TokenRequest"), "verbs": ["create"]}));
    }
    if !subresources.is_empty() {
        out["subresources"] = json!(subresources);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregated_form_is_chosen_as_kube_s_discovery_wrapper_chooses_it() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(Some(kubectl)));
        let old_kubectl = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(!wants_aggregated(Some(old_kubectl)));
        // A range without the rendering does not count, wherever it stands.
        assert!(wants_aggregated(Some(
            "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )));
        assert!(!wants_aggregated(None));
        assert!(!wants_aggregated(Some("application/json")));
        use crate::negotiation::Media;
        let yaml = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json";
        assert_eq!(crate::negotiation::Accept::parse(Some(yaml)).aggregated(), Some(Media::Yaml));
        let pb = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(crate::negotiation::Accept::parse(Some(pb)).aggregated(), Some(Media::Json));
    }

    #[test]
    fn the_aggregated_documents_hold_every_served_resource() {
        let reg = Registry::with_defaults();
        let core = aggregated(&reg, true);
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        let v1 = &core["items"][0]["versions"][0];
        assert_eq!(v1["version"], "v1");
        let pods = v1["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap();
        assert_eq!(pods["scope"], "Namespaced");
        let subresources: Vec<&str> =
            pods["subresources"].as_array().unwrap().iter().map(|s| s["subresource"].as_str().unwrap()).collect();
        assert_eq!(
            subresources,
            [
                "attach",
                "binding",
                "ephemeralcontainers",
                "eviction",
                "exec",
                "log",
                "portforward",
                "proxy",
                "resize",
                "status"
            ]
        );
        assert_eq!(pods["responseKind"], json!({"group": "", "version": "", "kind": "Pod"}));
        assert_eq!(pods["subresources"][2]["responseKind"], json!({"group": "", "version": "", "kind": "Pod"}));
        assert_eq!(pods["subresources"][2]["verbs"], json!(["get", "patch", "update"]));
        assert_eq!(
            pods["subresources"][3]["responseKind"],
            json!({"group": "policy", "version": "v1", "kind": "Eviction"})
        );
        let apps = aggregated(&reg, false);
        let apps = apps["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "apps").unwrap();
        let deployments = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deployments["subresources"][0]["responseKind"]["kind"], "Scale");
    }
}

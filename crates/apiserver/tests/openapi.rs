//! The OpenAPI documents over HTTP (index, hashed group-version documents, caching headers,
//! v2 for clients that insist on it), and kubectl using them unchanged: `kubectl apply` with its
//! default validation, client-side apply's strategic merge patches on every kubectl version on
//! the machine, `kubectl patch` and `kubectl explain`.

mod common;

use std::path::Path;

use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use common::*;
use http::Method;
use serde_json::{Value, json};

async fn get_with(c: &Client, path: &str, headers: &[(&str, &str)]) -> (u16, http::HeaderMap, bytes::Bytes) {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let mut b = http::Request::builder().method(Method::GET).uri(format!("{}{path}", c.base));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b.body(http_body_util::Full::new(bytes::Bytes::new())).unwrap();
    let resp = client.request(req).await.expect("request");
    let (parts, body) = resp.into_parts();
    let body = http_body_util::BodyExt::collect(body).await.unwrap().to_bytes();
    (parts.status.as_u16(), parts.headers, body)
}

/// Every `$ref` in `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                out.push(r.to_string());
            }
            m.values().for_each(|c| refs(c, out));
        }
        Value::Array(l) => l.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

#[tokio::test]
async fn documents_are_indexed_hashed_and_cached_as_kube_apiserver_serves_them() {
    let s = server().await;
    let c = Client::new(&s);
    let (code, headers, body) = get_with(&c, "/openapi/v3", &[]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    let index: Value = serde_json::from_slice(&body).unwrap();
    for gv in ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"] {
        let url = index["paths"][gv]["serverRelativeURL"].as_str().unwrap_or_else(|| panic!("{gv} in {index}"));
        assert!(url.starts_with(&format!("/openapi/v3/{gv}?hash=")), "{url}");
    }
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
    let hash = url.split("hash=").nth(1).unwrap();
    let (code, headers, body) = get_with(&c, url, &[("accept", "application/json")]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["cache-control"], "public, immutable");
    assert!(headers.contains_key("expires"));
    assert_eq!(headers["etag"], format!("\"{hash}\"").as_str());
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["openapi"], "3.0.0");

    // kubectl decides on server-side validation from the PATCH operations' parameters.
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    let params: Vec<&str> = patch["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(params.contains(&"fieldValidation") && params.contains(&"force"), "{params:?}");
    assert!(patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_some());
    let scale = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"];
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    // Client-side apply reads the merge keys from the kinds' schemas.
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(
        (containers["x-kubernetes-patch-merge-key"].as_str(), containers["x-kubernetes-patch-strategy"].as_str()),
        (Some("name"), Some("merge"))
    );
    // Self-contained: every reference resolves in the document.
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 100);
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
        assert!(schemas.get(name).is_some(), "{r} is not in the document");
    }

    // Revalidation, a stale hash, no hash, a media type not offered.
    let (code, headers, body) = get_with(&c, url, &[("if-none-match", &format!("\"{hash}\""))]).await;
    assert_eq!((code, body.len()), (304, 0));
    assert_eq!(headers["etag"], format!("\"{hash}\"").as_str());
    let (code, headers, _) = get_with(&c, "/openapi/v3/apis/apps/v1?hash=0123", &[]).await;
    assert_eq!(code, 301);
    assert_eq!(headers["location"], url);
    let (code, headers, _) = get_with(&c, "/openapi/v3/apis/apps/v1", &[]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["cache-control"], "no-cache, private");
    let (code, _, _) = get_with(&c, "/openapi/v3/apis/apps/v1", &[("accept", "text/html")]).await;
    assert_eq!(code, 406);
    let (code, _, _) = get_with(&c, "/openapi/v3/apis/nothing.example/v1", &[]).await;
    assert_eq!(code, 404);
    // Reviews are only created.
    let (code, _, body) = get_with(&c, "/openapi/v3/apis/authorization.k8s.io/v1", &[]).await;
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let local = "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews";
    assert_eq!(paths.len(), 4, "{:?}", paths.keys().collect::<Vec<_>>());
    assert!(paths.contains_key(local));
    assert!(paths.values().all(|p| p.get("post").is_some() && p.get("get").is_none()));

    // v2: protobuf for kubectl, JSON with every definition for others.
    let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let (code, headers, body) = get_with(&c, "/openapi/v2", &[("accept", proto)]).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    assert_eq!(&body[..5], b"\x0a\x032.0");
    let (code, _, body) = get_with(&c, "/openapi/v2", &[("accept", "application/json")]).await;
    assert_eq!(code, 200);
    let v2: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v2["swagger"], "2.0");
    let pod = &v2["definitions"]["io.k8s.api.core.v1.Pod"];
    assert_eq!(pod["properties"]["spec"]["allOf"][0]["$ref"], "#/definitions/io.k8s.api.core.v1.PodSpec");
}

async fn kubectl(bin: &str, kc: &Path, cache: &Path, args: &[&str]) -> (bool, String) {
    let (ok, out, err) = kubectl_bin(bin, kc, cache, args).await;
    (ok, format!("{out}{err}"))
}

fn deployment(name: &str, containers: &[(&str, &str)]) -> String {
    let mut y = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n"
    );
    for (n, image) in containers {
        y.push_str(&format!("      - name: {n}\n        image: {image}\n"));
    }
    y
}

#[tokio::test]
async fn kubectl_apply_validates_and_merges_containers_on_every_version() {
    let s = server().await;
    let dir = tempdir("kubectl-apply");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let file = dir.join("deploy.yaml");
    let f = file.to_str().unwrap();
    for bin in kubectl_versions() {
        let cache = dir.join(format!("cache-{}", bin.rsplit('/').next().unwrap()));
        let name = format!("web-{}", bin.rsplit('.').next().unwrap());
        let stored = || async { s.get("deployments", "default", &name).await.expect("stored") };
        // Created, then one container's image changed: the other container stays.
        std::fs::write(&file, deployment(&name, &[("web", "nginx:1.27"), ("sidecar", "busybox:1.36")])).unwrap();
        let (ok, out) = kubectl(&bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(ok && out.contains("created"), "{bin}: {out}");
        std::fs::write(&file, deployment(&name, &[("web", "nginx:1.28"), ("sidecar", "busybox:1.36")])).unwrap();
        let (ok, out) = kubectl(&bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(ok && out.contains("configured"), "{bin}: {out}");
        assert!(!out.contains("warning"), "{bin}: {out}");
        assert_eq!(
            containers_of(&stored().await),
            pairs(&[("web", "nginx:1.28"), ("sidecar", "busybox:1.36")]),
            "{bin}"
        );
        // A container removed from the file is removed; the other keeps its image.
        std::fs::write(&file, deployment(&name, &[("web", "nginx:1.28")])).unwrap();
        let (ok, out) = kubectl(&bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(ok, "{bin}: {out}");
        assert_eq!(containers_of(&stored().await), pairs(&[("web", "nginx:1.28")]), "{bin}");
        // kubectl patch sends a strategic merge patch: the named container is added.
        let p = r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}"#;
        let (ok, out) = kubectl(&bin, &kc, &cache, &["patch", "deployment", &name, "-p", p]).await;
        assert!(ok, "{bin}: {out}");
        assert_eq!(
            containers_of(&stored().await),
            pairs(&[("sidecar", "busybox:1.37"), ("web", "nginx:1.28")]),
            "{bin}"
        );
    }
}

#[tokio::test]
async fn kubectl_explain_reads_the_schemas() {
    let s = server().await;
    let dir = tempdir("kubectl-explain");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let cache = dir.join(format!("cache-{}", bin.rsplit('/').next().unwrap()));
        let (ok, out) = kubectl(bin, &kc, &cache, &["explain", "deployment.spec.template.spec.containers"]).await;
        assert!(ok, "{bin}: {out}");
        assert!(out.contains("KIND:") && out.contains("Deployment"), "{bin}: {out}");
        assert!(out.contains("imagePullPolicy") && out.contains("livenessProbe"), "{bin}: {out}");
        let (ok, out) = kubectl(bin, &kc, &cache, &["explain", "configmap.data"]).await;
        assert!(ok && out.contains("ConfigMap"), "{bin}: {out}");
    }
}

#[tokio::test]
async fn a_custom_resource_s_schemas_are_published_as_kube_builds_them() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "color": {"type": "string", "description": "The gizmo's colour."},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}});
    let s = informer_apiserver::testing::builder().crd(crd.to_string()).start().await.unwrap();
    let c = Client::new(&s);
    let (code, _, body) = get_with(&c, "/openapi/v3/apis/example.com/v1", &[]).await;
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    let schemas = &doc["components"]["schemas"];
    let meta = |schema: &str, description: &str| {
        json!({"allOf": [{"$ref": format!("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.{schema}")}],
            "description": description})
    };
    let object_meta = meta(
        "ObjectMeta",
        "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    );
    let gizmo = &schemas["com.example.v1.Gizmo"];
    assert_eq!(gizmo["properties"]["metadata"], object_meta);
    assert!(gizmo["properties"]["kind"]["description"].as_str().unwrap().starts_with("Kind is a string value"));
    assert_eq!(gizmo["x-kubernetes-selectable-fields"], json!([{"fieldPath": "spec.color"}]));
    let template = &gizmo["properties"]["spec"]["properties"]["template"];
    assert_eq!(template["required"], json!(["kind", "apiVersion"]));
    assert_eq!(template["properties"]["metadata"], object_meta);
    assert!(template["properties"]["apiVersion"]["description"].as_str().unwrap().starts_with("apiVersion defines"));
    let list = &schemas["com.example.v1.GizmoList"];
    assert_eq!(list["description"], "GizmoList is a list of Gizmo");
    assert_eq!(
        list["properties"]["items"]["description"],
        "List of gizmos. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    );
    assert_eq!(
        list["properties"]["metadata"],
        meta(
            "ListMeta",
            "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
        )
    );
    assert!(list["properties"]["apiVersion"]["description"].as_str().unwrap().starts_with("APIVersion defines"));
    assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "GizmoList");
    assert_eq!(list["x-kubernetes-selectable-fields"], json!([{"fieldPath": "spec.color"}]));
    // kubectl explain reads them.
    let dir = tempdir("kubectl-explain-gizmo");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = kubectl_versions().last().unwrap().clone();
    let (ok, out) = kubectl(&bin, &kc, &dir.join("cache"), &["explain", "gizmos"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("metadata\t<ObjectMeta>\n    Standard object's metadata."), "{out}");
    let (ok, out) = kubectl(&bin, &kc, &dir.join("cache"), &["explain", "gizmos.spec.color"]).await;
    assert!(ok && out.contains("The gizmo's colour."), "{out}");
}

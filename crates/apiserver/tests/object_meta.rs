//! Object metadata judged over HTTP as kube-apiserver judges it: names by their kind's rule,
//! labels, annotations and finalizers, first among an object's causes; custom resources'
//! metadata before their schema's faults; no finalizer added to an object being deleted; and
//! what kubectl and the Python client see of it.

mod common;

use common::*;
use serde_json::json;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const SERVICES: &str = "/api/v1/namespaces/default/services";
const MERGE: &str = "application/merge-patch+json";

#[tokio::test]
async fn names_labels_and_finalizers_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web"},
        "spec": {"ports": [{"port": 0, "targetPort": 80}]}});
    let r = c.post(SERVICES, &svc).await;
    assert_eq!(r.code, 422, "{}", r.body);
    // The name's fault first, then the spec's, in one answer.
    assert_eq!(
        r.body["message"],
        "Service \"1web\" is invalid: [metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower \
         case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric \
         character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?'), \
         spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive]"
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings",
        "labels": {"tier": "front end"}, "finalizers": ["cleanup"]}});
    let r = c.post(CONFIGMAPS, &cm).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"settings\" is invalid: [metadata.labels: Invalid value: \"front end\": a valid label must be an \
         empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
         alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
         '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), metadata.finalizers[0]: Invalid value: \"cleanup\": name is \
         neither a standard finalizer name nor is it fully qualified]"
    );
    assert_eq!(c.get(&format!("{CONFIGMAPS}/settings")).await.code, 404);

    // Being deleted, an object takes no new finalizer; it may still lose one.
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held",
        "finalizers": ["example.com/a"]}});
    assert_eq!(c.post(CONFIGMAPS, &held).await.code, 201);
    assert_eq!(c.delete(&format!("{CONFIGMAPS}/held")).await.code, 200);
    let more = json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}});
    let r = c.patch(&format!("{CONFIGMAPS}/held"), MERGE, &more).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object \
         is being deleted, found new finalizers []string{\"example.com/b\"}"
    );
    let none = json!({"metadata": {"finalizers": null}});
    assert_eq!(c.patch(&format!("{CONFIGMAPS}/held"), MERGE, &none).await.code, 200);
}

#[tokio::test]
async fn a_custom_resource_s_metadata_comes_before_its_schema() {
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"#;
    let s = informer_apiserver::testing::builder().crd(crd).start().await.unwrap();
    let c = Client::new(&s);
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "Big_Widget", "labels": {"a/b/c": "x"}, "finalizers": ["cleanup"]},
        "spec": {"size": "large"}});
    let r = c.post("/apis/example.com/v1/namespaces/default/widgets", &widget).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let fields: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    // No rule for finalizers without a domain here, as kube's custom resource strategy.
    assert_eq!(fields, ["metadata.name", "metadata.labels", "spec.size"], "{}", r.body);
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_metadata_rules() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let dir = tempdir("kubectl-object-meta");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "namespace", "team.a"]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "The Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": must not contain dots"
            ),
            "{bin}: {err}"
        );
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "configmap", "labelled"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["annotate", "configmap", "labelled", "bad_/key=x"]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(err.contains("metadata.annotations: Invalid value: \"bad_/key\""), "{bin}: {err}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "configmap", "labelled"]).await;
        assert!(ok, "{bin}: {out}{err}");
    }
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm", annotations={"bad key": "x"}))
try:
    core.create_namespaced_config_map("default", cm)
    print(json.dumps({"created": True}))
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["status"], 422, "{line}");
    assert_eq!(
        line["body"]["message"],
        "ConfigMap \"cm\" is invalid: metadata.annotations: Invalid value: \"bad key\": name part must consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
         'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn duplicate_owner_references_are_collapsed_with_a_warning() {
    let s = server().await;
    let c = Client::new(&s);
    // An owner that exists, or the garbage collector takes the dependent away.
    let o = c.post(CONFIGMAPS, &json!({"metadata": {"name": "o"}})).await;
    let uid = o.body["metadata"]["uid"].as_str().unwrap().to_string();
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": uid, "controller": true});
    let warnings = |r: &Resp| -> Vec<String> {
        r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
    };
    let warned = |when: &str| {
        format!(
            "299 - \".metadata.ownerReferences contains duplicate entries{when}; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {uid}\""
        )
    };
    // Two equal controllers would be refused (one controller only): kube keeps one.
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"name": "a", "ownerReferences": [owner, owner]}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["ownerReferences"], json!([owner]));
    assert_eq!(warnings(&r), [warned("")]);
    let mut put = r.body.clone();
    put["metadata"]["ownerReferences"] = json!([owner, owner]);
    let r = c.put(&format!("{CONFIGMAPS}/a"), &put).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(warnings(&r), [warned("")]);
    // A patch's duplicates are seen after admission.
    let patch = json!({"metadata": {"ownerReferences": [owner, owner]}});
    let r = c.patch(&format!("{CONFIGMAPS}/a"), "application/merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["ownerReferences"], json!([owner]));
    assert_eq!(warnings(&r), [warned(" after mutating admission happens")]);
}

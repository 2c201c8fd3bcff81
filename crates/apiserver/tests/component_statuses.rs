//! core/v1 componentstatuses over HTTP, as kube-apiserver v1.35 serves the deprecated kind:
//! discovered with `get` and `list` only, probed on each read (no scheduler or controller-manager
//! listens here, the storage answers), written in kube's words and field order, with its
//! deprecation warning, its 500 for an unknown component and its 405 for a watch; tables as
//! `kubectl get cs` prints them, and the Python client's typed read.

mod common;

use common::tools::KubectlTables;
use common::*;
use serde_json::{Value, json};

const CS: &str = "/api/v1/componentstatuses";

fn refused(port: u16) -> String {
    format!("Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused")
}

#[tokio::test]
async fn the_kind_is_discovered_read_only() {
    let s = server().await;
    let c = Client::new(&s);
    let v1 = c.get("/api/v1").await.body;
    let entry = v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == "componentstatuses").unwrap().clone();
    assert_eq!(
        entry,
        json!({"name": "componentstatuses", "singularName": "componentstatus", "namespaced": false,
            "kind": "ComponentStatus", "verbs": ["get", "list"], "shortNames": ["cs"]})
    );
}

#[tokio::test]
async fn components_are_probed_on_each_read() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get(CS).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let warning = r.headers.get("warning").map(|v| v.to_str().unwrap().to_string());
    assert_eq!(warning.as_deref(), Some("299 - \"v1 ComponentStatus is deprecated in v1.19+\""));
    let text = String::from_utf8(r.raw.to_vec()).unwrap();
    let expected = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": [
        {"metadata": {"name": "scheduler"}, "conditions": [{"type": "Healthy", "status": "False", "message": refused(10259)}]},
        {"metadata": {"name": "controller-manager"}, "conditions": [{"type": "Healthy", "status": "False", "message": refused(10257)}]},
        {"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}]});
    assert_eq!(r.body, expected);
    assert!(text.starts_with(r#"{"kind":"ComponentStatusList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"scheduler"},"conditions":[{"type":"Healthy","status":"False","message":"#), "{text}");

    let one = c.get(&format!("{CS}/etcd-0")).await;
    assert_eq!(one.code, 200);
    assert_eq!(
        String::from_utf8(one.raw.to_vec()).unwrap().trim_end(),
        r#"{"kind":"ComponentStatus","apiVersion":"v1","metadata":{"name":"etcd-0"},"conditions":[{"type":"Healthy","status":"True","message":"ok"}]}"#
    );
    // Selectors are honoured: the components have no labels.
    let named = c.get(&format!("{CS}?fieldSelector=metadata.name%3Dscheduler")).await.body;
    assert_eq!(named["items"].as_array().unwrap().len(), 1);
    assert_eq!(named["items"][0]["metadata"]["name"], "scheduler");
    let labelled = c.get(&format!("{CS}?labelSelector=a%3Db")).await.body;
    assert_eq!(labelled["items"], json!([]));
}

#[tokio::test]
async fn unknown_components_watches_and_writes_are_refused_as_kube_refuses_them() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get(&format!("{CS}/nope")).await;
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Component not found: nope", "code": 500})
    );
    let r = c.get(&format!("{CS}?watch=true")).await;
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "watch is not supported on resources of kind \"componentstatuses\"",
            "reason": "MethodNotAllowed", "details": {"kind": "componentstatuses"}, "code": 405})
    );
    // The list's options are judged before the watch is refused.
    let r = c.get(&format!("{CS}?watch=true&fieldSelector=spec.x%3Dy")).await;
    assert_eq!(r.code, 400, "{}", r.body);
    let r = c.post(CS, &json!({"metadata": {"name": "mine"}})).await;
    assert_eq!((r.code, &r.body["reason"]), (405, &json!("MethodNotAllowed")));
    assert_eq!(c.delete(&format!("{CS}/etcd-0")).await.code, 405);
    assert_eq!(c.get("/api/v1/watch/componentstatuses").await.code, 404);
    let head = c.send_raw(hyper::Method::HEAD, CS, Vec::new(), "application/json").await;
    assert_eq!(head.code, 405, "kube routes GET alone");
    assert!(head.headers.get("warning").is_none(), "what kube does not route carries no warning");
}

#[tokio::test]
async fn kubectl_prints_the_components_as_kube_does() {
    let s = server().await;
    let kubectl = KubectlTables::new(&s, "kubectl-componentstatuses");
    let rows = kubectl.get("cs").await;
    assert_eq!(rows[0], ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap()[..2].to_vec();
    assert_eq!(row("scheduler"), ["scheduler", "Unhealthy"]);
    assert_eq!(row("controller-manager"), ["controller-manager", "Unhealthy"]);
    assert_eq!(rows.iter().find(|r| r[0] == "etcd-0").unwrap(), &["etcd-0", "Healthy", "ok"]);
    let scheduler = rows.iter().find(|r| r[0] == "scheduler").unwrap();
    assert_eq!(scheduler[2..].join(" "), refused(10259));
}

const PY_COMPONENTS: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
statuses = client.CoreV1Api().list_component_status()
print(json.dumps({s.metadata.name: [s.conditions[0].type, s.conditions[0].status, s.conditions[0].message] for s in statuses.items}), flush=True)
"#;

#[tokio::test]
async fn the_python_client_reads_the_components() {
    use common::tools::{python, tempdir};
    let s = server().await;
    let dir = tempdir("componentstatuses-python");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = python(PY_COMPONENTS, &[kc.to_str().unwrap()]).await;
    let read: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(read["etcd-0"], json!(["Healthy", "True", "ok"]));
    assert_eq!(read["scheduler"], json!(["Healthy", "False", refused(10259)]));
}

//! Server-side apply over HTTP, against the exchanges recorded from kube-apiserver v1.35
//! (`tests/fixtures/kube-apiserver/30-*` … `37-*`): kubectl's applies by two managers, the
//! conflict and its forced resolution, fields removed when their applier stops applying them,
//! shared ownership, raw YAML bodies, and the Status answers to bad applies. Every answer is
//! compared whole with kube-apiserver's, `managedFields` included.

mod common;

use common::recorded::{Recorded, comparable_managed, recorded};
use common::*;
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/fixtures/deployments";
const APPLY: &str = "application/apply-patch+yaml";

async fn fixtures_namespace(c: &Client) {
    let r = c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
}

async fn send(c: &Client, step: &Recorded) -> Resp {
    c.send_as(
        step.method.clone(),
        &step.path,
        step.request_body.clone(),
        &step.content_type,
        step.user_agent.as_deref(),
    )
    .await
}

/// Sends the recorded request and compares status and whole body (managedFields included).
async fn replay(c: &Client, file: &str) -> Value {
    let step = recorded(file);
    let r = send(c, &step).await;
    assert_eq!(r.code, step.status, "{file}: {}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&step.response), "{file}");
    r.body
}

/// The entries' managers and operations, in the order the server wrote them.
fn managers(v: &Value) -> Vec<(String, String)> {
    v["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (e["manager"].as_str().unwrap_or("").to_string(), e["operation"].as_str().unwrap_or("").to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn kubectl_server_side_applies_match_kube_apiserver() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let api = format!("{DEPLOYMENTS}/api");

    // 30: alpha's apply creates the Deployment (201), owning exactly what it applied.
    let created = replay(&c, "30-ssa-1-alpha-apply.txt").await;
    assert_eq!(created["metadata"]["generation"], 1);
    let got = c.get(&api).await;
    assert_eq!(comparable_managed(&got.body), comparable_managed(&recorded("31-ssa-1b-get-after-alpha.txt").response));

    assert_eq!(got.body["metadata"]["generation"], 1);

    // 32: beta wants another replica count: a conflict with alpha, nothing written.
    replay(&c, "32-ssa-2-beta-conflict-409.txt").await;
    assert_eq!(c.get(&api).await.body["metadata"]["resourceVersion"], got.body["metadata"]["resourceVersion"]);

    // 33: --force-conflicts: beta takes spec.replicas from alpha.
    assert_eq!(replay(&c, "33-ssa-3-beta-force-conflicts.txt").await["metadata"]["generation"], 2);
    let got = c.get(&api).await;
    assert_eq!(
        comparable_managed(&got.body),
        comparable_managed(&recorded("33-ssa-3b-get-after-beta-force.txt").response)
    );

    // 34: alpha stops applying replicas (beta's: kept), the proxy container and its owner label
    // (its alone: removed).
    assert_eq!(replay(&c, "34-ssa-4-alpha-removes-fields.txt").await["metadata"]["generation"], 3);
    let got = c.get(&api).await;
    assert_eq!(
        comparable_managed(&got.body),
        comparable_managed(&recorded("34-ssa-4b-get-after-alpha-removal.txt").response)
    );

    // 35: a raw YAML apply by gamma of another replica count conflicts with beta.
    replay(&c, "35-ssa-5-raw-apply-yaml-gamma-conflict-409.txt").await;
    // 36: the same count: shared ownership of spec.replicas, and gamma's new label.
    let shared = replay(&c, "36-ssa-6-raw-apply-yaml-gamma-shared-ownership.txt").await;
    assert_eq!(shared["metadata"]["generation"], 3, "a label is not the spec");
    assert_eq!(
        managers(&shared),
        [("alpha".into(), "Apply".into()), ("beta".into(), "Apply".into()), ("gamma".into(), "Apply".into())]
    );
    // 37: an apply without fieldManager is refused on its options.
    replay(&c, "37-ssa-7-apply-missing-fieldmanager-422.txt").await;
}

#[tokio::test]
async fn reapplying_the_same_configuration_writes_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let step = recorded("30-ssa-1-alpha-apply.txt");
    let first = send(&c, &step).await;
    assert_eq!(first.code, 201, "{}", first.body);
    let again = send(&c, &step).await;
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(again.body, first.body, "the same object at the same resourceVersion");
}

//! `coordination.k8s.io/v1` leases: discovery, and the create / get / replace-with-precondition
//! cycle a leader elector runs, over HTTP.

mod common;

use common::*;
use serde_json::json;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

#[tokio::test]
async fn leases_are_discovered() {
    let s = server().await;
    let c = Client::new(&s);
    let apis = c.get("/apis").await;
    let group = apis.body["groups"].as_array().unwrap().iter().find(|g| g["name"] == "coordination.k8s.io").cloned();
    let group = group.expect("the coordination.k8s.io group is listed");
    assert_eq!(group["preferredVersion"], json!({"groupVersion": "coordination.k8s.io/v1", "version": "v1"}));
    let g = c.get("/apis/coordination.k8s.io").await;
    assert_eq!((g.code, g.body["kind"].as_str()), (200, Some("APIGroup")));
    let v1 = c.get("/apis/coordination.k8s.io/v1").await;
    assert_eq!(v1.body["groupVersion"], "coordination.k8s.io/v1");
    let leases = v1.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == "leases").unwrap().clone();
    assert_eq!(leases["kind"], "Lease");
    assert_eq!(leases["singularName"], "lease");
    assert_eq!(leases["namespaced"], true);
    for verb in ["create", "get", "list", "update", "watch", "delete"] {
        assert!(leases["verbs"].as_array().unwrap().contains(&json!(verb)), "{verb}");
    }
}

#[tokio::test]
async fn a_lease_is_created_read_and_replaced_with_its_resource_version() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"holderIdentity": "a", "leaseDurationSeconds": 15,
        "acquireTime": "2026-03-01T10:00:00.000000Z", "renewTime": "2026-03-01T10:00:00.000000Z",
        "leaseTransitions": 0});
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "ctrl", "namespace": "kube-system"}, "spec": spec});
    let r = c.post(LEASES, &lease).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    assert_eq!(r.body["kind"], "Lease");
    assert_eq!(r.body["apiVersion"], "coordination.k8s.io/v1");
    assert_eq!(r.body["spec"], spec);
    let dup = c.post(LEASES, &lease).await;
    assert_eq!((dup.code, dup.body["reason"].as_str()), (409, Some("AlreadyExists")));
    assert_eq!(dup.body["message"], "leases.coordination.k8s.io \"ctrl\" already exists");

    let got = c.get(&format!("{LEASES}/ctrl")).await;
    assert_eq!(got.body, r.body);

    let mut renewed = got.body.clone();
    renewed["spec"]["renewTime"] = json!("2026-03-01T10:00:02.000000Z");
    let u = c.put(&format!("{LEASES}/ctrl"), &renewed).await;
    assert_eq!(u.code, 200, "{:?}", u.body);
    assert_eq!(u.body["spec"]["renewTime"], "2026-03-01T10:00:02.000000Z");

    // A second writer with the old resourceVersion loses the race.
    let mut stale = got.body.clone();
    stale["spec"]["holderIdentity"] = json!("b");
    let lost = c.put(&format!("{LEASES}/ctrl"), &stale).await;
    assert_eq!((lost.code, lost.body["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(
        lost.body["message"],
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"ctrl\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(s.get("leases", "kube-system", "ctrl").await.unwrap()["spec"]["holderIdentity"], "a");

    let list = c.get(LEASES).await;
    assert_eq!(list.body["kind"], "LeaseList");
    assert_eq!(list.body["items"].as_array().unwrap().len(), 1);
}

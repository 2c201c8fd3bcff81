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

#[tokio::test]
async fn a_lease_s_duration_and_transitions_are_validated() {
    let s = server().await;
    let c = Client::new(&s);
    let lease = |spec: serde_json::Value| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": spec});
    let r = c.post(LEASES, &lease(json!({"leaseDurationSeconds": 0, "leaseTransitions": -3}))).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Lease.coordination.k8s.io \"l\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, \
         spec.leaseTransitions: Invalid value: -3: must be greater than or equal to 0]"
    );
    assert_eq!(r.body["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(
        causes(&r),
        [
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -3: must be greater than or equal to 0"
        ]
    );
    assert_eq!(c.get(&format!("{LEASES}/l")).await.code, 404);
    // On updates too.
    let r = c.post(LEASES, &lease(json!({"leaseDurationSeconds": 15, "leaseTransitions": 0}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut changed = r.body.clone();
    changed["spec"]["leaseDurationSeconds"] = json!(-1);
    let r = c.put(&format!("{LEASES}/l"), &changed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), ["spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0"]);
    // Coordinated leader election is off, as in kube v1.35: its fields are dropped.
    let mut coordinated = lease(json!({"strategy": "Newest", "preferredHolder": "a", "holderIdentity": "h"}));
    coordinated["metadata"]["name"] = json!("coordinated");
    let r = c.post(LEASES, &coordinated).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"], json!({"holderIdentity": "h"}));
}

#[tokio::test]
async fn each_server_keeps_its_identity_lease_and_collects_those_gone() {
    let s = informer_apiserver::testing::builder().apiserver_identity(true).start().await.unwrap();
    let c = Client::new(&s);
    let listed = c.get(&format!("{LEASES}?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver")).await;
    let items = listed.body["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{}", listed.body);
    let lease = &items[0];
    let name = lease["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("apiserver-") && name.len() == 36, "{name}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    assert_eq!(
        lease["metadata"]["labels"],
        json!({"apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": host})
    );
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap();
    assert!(holder.starts_with(&format!("{name}_")) && holder.len() == name.len() + 37, "{holder}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    let renewed = lease["spec"]["renewTime"].as_str().unwrap();
    assert_eq!(renewed.len(), "2026-01-01T00:00:00.000000Z".len(), "{renewed}");
    assert_eq!(lease["metadata"]["managedFields"][0]["manager"], "kube-apiserver");

    // Identity leases past their duration are collected when a server starts; others stay.
    let stale = |n: &str, labels: serde_json::Value| {
        json!({"metadata": {"name": n, "labels": labels},
            "spec": {"holderIdentity": n, "leaseDurationSeconds": 3600, "renewTime": "2026-01-01T00:00:00.000000Z"}})
    };
    let identity = json!({"apiserver.kubernetes.io/identity": "kube-apiserver"});
    assert_eq!(c.post(LEASES, &stale("apiserver-gone", identity.clone())).await.code, 201);
    assert_eq!(c.post(LEASES, &stale("someone-else", json!({}))).await.code, 201);
    let mut fresh = stale("apiserver-alive", identity);
    fresh["spec"]["renewTime"] = json!("2999-01-01T00:00:00.000000Z");
    assert_eq!(c.post(LEASES, &fresh).await.code, 201);
    let rv = c.get(LEASES).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    s.restart().await.unwrap();
    assert!(s.wait_ready(std::time::Duration::from_secs(20)).await);
    let mut w = c.watch(&format!("{LEASES}?watch=1&resourceVersion={rv}")).await;
    until(&mut w, "the stale identity lease deleted", |e| {
        e["type"] == "DELETED" && e["object"]["metadata"]["name"] == "apiserver-gone"
    })
    .await;
    let listed = c.get(LEASES).await.body;
    let lease_of =
        |name: &str| listed["items"].as_array().unwrap().iter().find(|l| l["metadata"]["name"] == name).cloned();
    let mut names: Vec<String> =
        listed["items"].as_array().unwrap().iter().map(|l| l["metadata"]["name"].as_str().unwrap().into()).collect();
    names.sort();
    let mut expected = vec!["apiserver-alive".to_string(), name.to_string(), "someone-else".into()];
    expected.sort();
    assert_eq!(names, expected);
    // Restarted, the server made its lease again, held by its new run.
    let again = lease_of(name).unwrap();
    assert_ne!(again["metadata"]["uid"], lease["metadata"]["uid"]);
    let holder_again = again["spec"]["holderIdentity"].as_str().unwrap();
    assert!(holder_again.starts_with(&format!("{name}_")) && holder_again != holder, "{holder_again}");

    // A graceful shutdown deletes it.
    s.shutdown_gracefully(informer_apiserver::GracefulShutdown::default()).await;
    let gone = s.get("leases", "kube-system", name).await;
    assert_eq!(gone.map_err(|e| e.code), Err(404));
}

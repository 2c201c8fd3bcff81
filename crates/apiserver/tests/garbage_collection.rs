//! Owner references over HTTP, as kube-apiserver with kube-controller-manager's garbage collector
//! answers them: dependents of a deleted owner deleted in the background, dependents whose owners
//! never existed, a dependent that keeps one of its owners, `Orphan` and `Foreground`
//! propagation (the collector's `orphan` and `foregroundDeletion` finalizers, blocking
//! dependents), a batch/v1 Job's default, DeleteOptions checks, owner references checked on
//! writes, a server without the collector, and a restarted server collecting what a deletion
//! left behind.
//!
//! Waiting is by watch events, and for what the collector keeps, by its own signal that it has
//! judged every change made so far (`ApiServer::garbage_collector_settled`).

mod common;

use common::*;
use informer_apiserver::delete_options::{DeleteOpts, Propagation};
use informer_apiserver::{ApiServer, testing};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: &str = "application/merge-patch+json";

fn is(e: &Value, kind: &str, name: &str) -> bool {
    e["type"] == kind && e["object"]["metadata"]["name"] == name
}

/// A reference to a created object.
fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block,
    })
}

fn cm(name: &str, owners: Vec<Value>) -> Value {
    let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}});
    if !owners.is_empty() {
        v["metadata"]["ownerReferences"] = Value::Array(owners);
    }
    v
}

async fn create(c: &Client, path: &str, v: &Value) -> Value {
    let r = c.post(path, v).await;
    assert_eq!(r.code, 201, "{}", r.body);
    r.body
}

/// Reads events until two of the objects `names` are deleted (in whatever order); their names,
/// sorted.
async fn deleted(w: &mut WatchStream, names: &[&str]) -> Vec<String> {
    let mut gone = std::collections::BTreeSet::new();
    until(w, "two deletions", |e| {
        let name = e["object"]["metadata"]["name"].as_str().unwrap_or_default();
        if e["type"] == "DELETED" && names.contains(&name) {
            gone.insert(name.to_string());
        }
        gone.len() == 2
    })
    .await;
    gone.into_iter().collect()
}

/// Waits until the collector has judged every change made so far (and what its own writes led
/// to): what it has not deleted by then, it keeps.
async fn caught_up(s: &ApiServer) {
    assert!(s.garbage_collector_settled(EVENT).await, "the garbage collector did not settle");
}

/// The definition of `gizmos.example.org/v1` (namespaced, any fields).
fn gizmo_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.org"},
        "spec": {"group": "example.org", "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

async fn watch_cms(c: &Client, from: &Value) -> WatchStream {
    c.watch(&format!("{CMS}?watch=true&resourceVersion={}", from["metadata"]["resourceVersion"].as_str().unwrap()))
        .await
}

#[tokio::test]
async fn deleting_an_owner_deletes_its_dependents_in_the_background() {
    let s = server().await;
    let c = Client::new(&s);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    let other = create(&c, CMS, &cm("other-owner", vec![])).await;
    let mut w = watch_cms(&c, &other).await;
    create(&c, CMS, &cm("d1", vec![owner_ref(&owner, false)])).await;
    create(&c, CMS, &cm("d2", vec![owner_ref(&owner, true)])).await;
    create(&c, CMS, &cm("both", vec![owner_ref(&owner, false), owner_ref(&other, false)])).await;
    create(&c, CMS, &cm("unrelated", vec![])).await;

    let r = c.delete(&format!("{CMS}/owner")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], "Success", "removed at once, no finalizer given: {}", r.body);
    assert_eq!(c.get(&format!("{CMS}/owner")).await.code, 404);
    assert_eq!(deleted(&mut w, &["d1", "d2"]).await, ["d1", "d2"]);
    caught_up(&s).await;
    // The dependent with an owner left keeps it, and only it.
    let both = c.get(&format!("{CMS}/both")).await.body;
    assert_eq!(both["metadata"]["ownerReferences"], json!([owner_ref(&other, false)]), "{both}");
    assert_eq!(c.get(&format!("{CMS}/unrelated")).await.code, 200);
}

#[tokio::test]
async fn dependents_of_owners_that_are_gone_or_replaced_are_deleted() {
    let s = server().await;
    let c = Client::new(&s);
    let first = create(&c, CMS, &cm("owner", vec![])).await;
    let mut w = watch_cms(&c, &first).await;
    // A name reused: the reference names the first object's UID, not the second's.
    assert_eq!(c.delete(&format!("{CMS}/owner")).await.code, 200);
    create(&c, CMS, &cm("owner", vec![])).await;
    create(&c, CMS, &cm("of-the-first", vec![owner_ref(&first, false)])).await;
    until(&mut w, "of-the-first deleted", |e| is(e, "DELETED", "of-the-first")).await;
    // References the collector cannot resolve hold their dependents: a kind the server does not
    // serve, and a namespaced kind named by a cluster-scoped object.
    let unserved = json!({"apiVersion": "example.com/v1", "kind": "Nothing", "name": "n", "uid": "u-1"});
    create(&c, CMS, &cm("of-an-unserved-kind", vec![unserved])).await;
    let namespaced = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-2"});
    let ns = json!({"metadata": {"name": "held", "ownerReferences": [namespaced]}});
    create(&c, "/api/v1/namespaces", &ns).await;
    caught_up(&s).await;
    assert_eq!(c.get(&format!("{CMS}/of-an-unserved-kind")).await.code, 200);
    assert_eq!(c.get("/api/v1/namespaces/held").await.code, 200);
    assert_eq!(c.get(&format!("{CMS}/owner")).await.code, 200);
}

#[tokio::test]
async fn an_owner_in_another_namespace_is_reported_and_its_dependent_collected() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["elsewhere"]).await.unwrap();
    let owner = create(&c, "/api/v1/namespaces/elsewhere/configmaps", &cm("owner", vec![])).await;
    let first = create(&c, CMS, &cm("first", vec![])).await;
    let mut w = watch_cms(&c, &first).await;
    let dep = create(&c, CMS, &cm("misplaced", vec![owner_ref(&owner, false)])).await;
    // The reference names an owner in the dependent's namespace, where there is none.
    until(&mut w, "misplaced deleted", |e| is(e, "DELETED", "misplaced")).await;
    caught_up(&s).await;
    let events = c.get("/api/v1/namespaces/default/events").await.body;
    let warnings: Vec<&Value> =
        events["items"].as_array().unwrap().iter().filter(|e| e["reason"] == "OwnerRefInvalidNamespace").collect();
    assert_eq!(warnings.len(), 1, "{events}");
    let e = warnings[0];
    assert_eq!(
        e["message"],
        format!(
            "ownerRef [v1/ConfigMap, namespace: default, name: owner, uid: {}] does not exist in namespace \"default\"",
            owner["metadata"]["uid"].as_str().unwrap()
        )
    );
    assert_eq!(
        (e["type"].as_str(), e["source"]["component"].as_str()),
        (Some("Warning"), Some("garbage-collector-controller"))
    );
    assert_eq!(e["involvedObject"]["uid"], dep["metadata"]["uid"]);
    assert_eq!(e["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(c.get("/api/v1/namespaces/elsewhere/configmaps/owner").await.code, 200, "the owner stays");
    // A cluster-scoped object naming it: reported in `default`, and left as it is.
    let tied = json!({"metadata": {"name": "tied", "ownerReferences": [owner_ref(&owner, false)]}});
    create(&c, "/api/v1/namespaces", &tied).await;
    caught_up(&s).await;
    let events = c.get("/api/v1/namespaces/default/events").await.body;
    let about_tied: Vec<&Value> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == "OwnerRefInvalidNamespace" && e["involvedObject"]["name"] == "tied")
        .collect();
    assert_eq!(about_tied.len(), 1, "{events}");
    assert!(about_tied[0]["message"].as_str().unwrap().ends_with("does not exist in namespace \"\""), "{events}");
    assert_eq!(c.get("/api/v1/namespaces/tied").await.code, 200);
}

#[tokio::test]
async fn a_reference_to_a_kind_served_later_is_judged_then() {
    let s = server().await;
    let c = Client::new(&s);
    let gizmo = json!({"apiVersion": "example.org/v1", "kind": "Gizmo", "name": "g", "uid": "u-g"});
    let first = create(&c, CMS, &cm("of-a-gizmo", vec![gizmo])).await;
    let mut w = watch_cms(&c, &first).await;
    caught_up(&s).await;
    assert_eq!(c.get(&format!("{CMS}/of-a-gizmo")).await.code, 200);
    // Once the kind is served, the owner the reference names is found missing.
    create(&c, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &gizmo_crd()).await;
    until(&mut w, "of-a-gizmo deleted", |e| is(e, "DELETED", "of-a-gizmo")).await;
}

#[tokio::test]
async fn events_and_namespaces_take_the_policies_kube_gives_them() {
    let s = server().await;
    let c = Client::new(&s);
    // An Event has no dependents: no finalizer, whatever the policy.
    const EVENTS: &str = "/api/v1/namespaces/default/events";
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R", "message": "m", "type": "Normal", "source": {"component": "c"}});
    create(&c, EVENTS, &event).await;
    let r = c.delete(&format!("{EVENTS}/e?propagationPolicy=Foreground")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{EVENTS}/e")).await.code, 404);
    // A namespace deleted in the foreground: its own finalizer beside the namespace
    // controller's; it goes once both are done.
    let ns = create(&c, "/api/v1/namespaces", &json!({"metadata": {"name": "fg"}})).await;
    let mut w = c.watch(&format!("/api/v1/namespaces?watch=true&resourceVersion={}", rv_of(&ns))).await;
    let r = c.delete("/api/v1/namespaces/fg?propagationPolicy=Foreground").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{}", r.body);
    assert_eq!(r.body["spec"]["finalizers"], json!(["kubernetes"]), "{}", r.body);
    until(&mut w, "fg deleted", |e| is(e, "DELETED", "fg")).await;
}

#[tokio::test]
async fn a_definition_being_deleted_takes_a_later_policy() {
    let s = server().await;
    let c = Client::new(&s);
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let created = create(&c, CRDS, &gizmo_crd()).await;
    let mut w = c.watch(&format!("{CRDS}?watch=true&resourceVersion={}", rv_of(&created))).await;
    until(&mut w, "the definition established", |e| {
        e["object"]["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
    })
    .await;
    // A gizmo its own finalizer holds keeps the definition's cleanup from finishing.
    const GIZMOS: &str = "/apis/example.org/v1/namespaces/default/gizmos";
    let gizmo = json!({"apiVersion": "example.org/v1", "kind": "Gizmo",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    create(&c, GIZMOS, &gizmo).await;
    let first = c.delete(&format!("{CRDS}/gizmos.example.org")).await;
    assert_eq!(first.body["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]));
    // Deleted again in the foreground: the generic store's finalizer beside the cleanup one.
    let again = c.delete(&format!("{CRDS}/gizmos.example.org?propagationPolicy=Foreground")).await;
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(
        again.body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io", "foregroundDeletion"])
    );
    // No dependents: the collector lets it go; the cleanup then ends it once the gizmo goes.
    caught_up(&s).await;
    let r = c.get(&format!("{CRDS}/gizmos.example.org")).await;
    assert_eq!(r.body["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]), "{}", r.body);
    let r = c.patch(&format!("{GIZMOS}/held"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "the definition deleted", |e| is(e, "DELETED", "gizmos.example.org")).await;
}

#[tokio::test]
async fn orphan_propagation_keeps_the_dependents_without_the_reference() {
    let s = server().await;
    let c = Client::new(&s);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    let other = create(&c, CMS, &cm("other-owner", vec![])).await;
    let mut w = watch_cms(&c, &other).await;
    create(&c, CMS, &cm("d1", vec![owner_ref(&owner, true)])).await;
    create(&c, CMS, &cm("both", vec![owner_ref(&owner, false), owner_ref(&other, false)])).await;
    // The policy in a DeleteOptions body, as kubectl and client-go send it.
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"});
    let r = c
        .send_raw(http::Method::DELETE, &format!("{CMS}/owner"), serde_json::to_vec(&body).unwrap(), "application/json")
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["orphan"]), "{}", r.body);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0, "{}", r.body);
    // Each dependent loses the reference before the owner goes.
    let mut orphaned = Vec::new();
    until(&mut w, "the owner deleted", |e| {
        if e["type"] == "MODIFIED" && e["object"]["metadata"]["name"] != "owner" {
            orphaned.push(e["object"]["metadata"]["name"].as_str().unwrap().to_string());
        }
        is(e, "DELETED", "owner")
    })
    .await;
    assert_eq!(orphaned.len(), 2, "{orphaned:?}");
    let d1 = c.get(&format!("{CMS}/d1")).await.body;
    assert!(d1["metadata"].get("ownerReferences").is_none(), "{d1}");
    let both = c.get(&format!("{CMS}/both")).await.body;
    assert_eq!(both["metadata"]["ownerReferences"], json!([owner_ref(&other, false)]), "{both}");
    caught_up(&s).await;
    assert_eq!(c.get(&format!("{CMS}/d1")).await.code, 200);
}

#[tokio::test]
async fn foreground_deletion_waits_for_the_blocking_dependents() {
    let s = server().await;
    let c = Client::new(&s);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    let mut w = watch_cms(&c, &owner).await;
    let mut held = cm("held", vec![owner_ref(&owner, true)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&c, CMS, &held).await;
    create(&c, CMS, &cm("blocking", vec![owner_ref(&owner, true)])).await;
    create(&c, CMS, &cm("not-blocking", vec![owner_ref(&owner, false)])).await;
    // With kube-rs, as a controller deletes.
    let kc = kube_client(&s).await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(kc, "default");
    let marked = api.delete("owner", &kube::api::DeleteParams::foreground()).await.unwrap();
    let marked = marked.left().expect("the owner stays while its dependents go");
    assert_eq!(marked.metadata.finalizers, Some(vec!["foregroundDeletion".to_string()]));
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(deleted(&mut w, &["blocking", "not-blocking", "held", "owner"]).await, ["blocking", "not-blocking"]);
    caught_up(&s).await;
    // The dependent held by its own finalizer is being deleted, and still blocks the owner.
    let h = c.get(&format!("{CMS}/held")).await.body;
    assert!(h["metadata"]["deletionTimestamp"].is_string(), "{h}");
    let o = c.get(&format!("{CMS}/owner")).await.body;
    assert_eq!(o["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{o}");
    // Once it is gone, so is the owner — after it.
    let r = c.patch(&format!("{CMS}/held"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "held deleted", |e| is(e, "DELETED", "held")).await;
    until(&mut w, "owner deleted", |e| is(e, "DELETED", "owner")).await;
}

#[tokio::test]
async fn a_foreground_deletion_deletes_a_dependents_own_dependents_first() {
    let s = server().await;
    let c = Client::new(&s);
    let top = create(&c, CMS, &cm("top", vec![])).await;
    let mut w = watch_cms(&c, &top).await;
    let middle = create(&c, CMS, &cm("middle", vec![owner_ref(&top, true)])).await;
    create(&c, CMS, &cm("bottom", vec![owner_ref(&middle, true)])).await;
    let r = c.delete(&format!("{CMS}/top?propagationPolicy=Foreground")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // The middle one is deleted in the foreground too: the bottom one goes before it, and it
    // before the top one.
    let mut order = Vec::new();
    until(&mut w, "top deleted", |e| {
        if e["type"] == "DELETED" {
            order.push(e["object"]["metadata"]["name"].as_str().unwrap().to_string());
        }
        is(e, "DELETED", "top")
    })
    .await;
    assert_eq!(order, ["bottom", "middle", "top"]);
}

#[tokio::test]
async fn admission_sees_the_collector_as_its_service_account() {
    let s = server().await;
    let c = Client::new(&s);
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "guard"}, "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "!has(oldObject.metadata.labels) || !('guarded' in oldObject.metadata.labels) || request.userInfo.username != 'system:serviceaccount:kube-system:generic-garbage-collector'",
                "message": "the collector may not delete guarded objects"}]}});
    create(&c, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", &policy).await;
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "guard"}, "spec": {"policyName": "guard", "validationActions": ["Deny"]}});
    create(&c, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", &binding).await;
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    let mut w = watch_cms(&c, &owner).await;
    let mut guarded = cm("guarded", vec![owner_ref(&owner, false)]);
    guarded["metadata"]["labels"] = json!({"guarded": "yes"});
    create(&c, CMS, &guarded).await;
    create(&c, CMS, &cm("plain", vec![owner_ref(&owner, false)])).await;
    assert_eq!(c.delete(&format!("{CMS}/owner")).await.code, 200);
    until(&mut w, "plain deleted", |e| is(e, "DELETED", "plain")).await;
    caught_up(&s).await;
    // The collector's deletion was refused; the server's own user may delete it.
    assert_eq!(c.get(&format!("{CMS}/guarded")).await.code, 200);
    assert_eq!(c.delete(&format!("{CMS}/guarded")).await.code, 200);
}

#[tokio::test]
async fn a_job_orphans_its_pods_unless_told_otherwise() {
    let s = server().await;
    let c = Client::new(&s);
    const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
    let job = |name: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    };
    let kept = create(&c, JOBS, &job("kept")).await;
    let mut w = c.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv_of(&kept))).await;
    let mut p = pod("of-kept", json!({}));
    p["metadata"]["ownerReferences"] = json!([owner_ref(&kept, true)]);
    create(&c, PODS, &p).await;
    let r = c.delete(&format!("{JOBS}/kept")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["orphan"]), "{}", r.body);
    let warning = r.headers.get("warning").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(
        warning,
        "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\""
    );
    let orphan = until(&mut w, "the pod orphaned", |e| is(e, "MODIFIED", "of-kept")).await;
    assert!(orphan["object"]["metadata"].get("ownerReferences").is_none(), "{orphan}");

    // kubectl's default (Background): no warning, and the pods go too.
    let gone = create(&c, JOBS, &job("gone")).await;
    let mut p = pod("of-gone", json!({}));
    p["metadata"]["ownerReferences"] = json!([owner_ref(&gone, true)]);
    create(&c, PODS, &p).await;
    let r = c.delete(&format!("{JOBS}/gone?propagationPolicy=Background")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.headers.get("warning").is_none());
    until(&mut w, "of-gone deleted", |e| is(e, "DELETED", "of-gone")).await;
    assert_eq!(c.get(&format!("{PODS}/of-kept")).await.code, 200);
}

#[tokio::test]
async fn delete_options_are_checked_as_kube_checks_them() {
    let s = server().await;
    let c = Client::new(&s);
    create(&c, CMS, &cm("a", vec![])).await;
    let r = c.delete(&format!("{CMS}/a?propagationPolicy=Later")).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
            "reason": "Invalid", "details": {"group": "meta.k8s.io", "kind": "DeleteOptions", "causes": [{
                "reason": "FieldValueNotSupported",
                "message": "Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                "field": "propagationPolicy"}]},
            "code": 422})
    );
    let both = json!({"propagationPolicy": "Orphan", "orphanDependents": true});
    let r = c
        .send_raw(http::Method::DELETE, &format!("{CMS}/a"), serde_json::to_vec(&both).unwrap(), "application/json")
        .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
    );
    assert_eq!(c.get(&format!("{CMS}/a")).await.code, 200);
    // `orphanDependents: false` on an object that stays (another finalizer holds it): 202.
    let mut held = cm("held", vec![]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&c, CMS, &held).await;
    let r = c.delete(&format!("{CMS}/held?orphanDependents=false")).await;
    assert_eq!(r.code, 202, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/hold"]), "{}", r.body);
    // The same request on an object that goes: 200.
    assert_eq!(c.delete(&format!("{CMS}/a?orphanDependents=false")).await.code, 200);
}

#[tokio::test]
async fn owner_references_are_checked_as_kube_checks_them() {
    let s = server().await;
    let c = Client::new(&s);
    let incomplete = json!({"apiVersion": "", "kind": "ConfigMap", "name": "x", "uid": ""});
    let r = c.post(CMS, &cm("a", vec![incomplete])).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"a\" is invalid: [metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty, metadata.ownerReferences.uid: Invalid value: \"\": must not be empty]"
    );
    let one = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1", "controller": true});
    let two = json!({"apiVersion": "v1", "kind": "Secret", "name": "y", "uid": "2", "controller": true});
    let r = c.post(CMS, &cm("a", vec![one, two])).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"a\" is invalid: metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"x\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"name\":\"y\",\"uid\":\"2\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/x and Secret/y"
    );
    let malformed = json!({"apiVersion": "a/b/c", "kind": "Thing", "name": "t", "uid": "4"});
    let r = c.post(CMS, &cm("a", vec![malformed])).await;
    assert_eq!(
        r.body["message"],
        "ConfigMap \"a\" is invalid: metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty"
    );
    let event = json!({"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "3"});
    let r = c.post(CMS, &cm("a", vec![event])).await;
    assert_eq!(
        r.body["message"],
        "ConfigMap \"a\" is invalid: metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"3\"}: /v1, Kind=Event is disallowed from being an owner"
    );
    let mut wrong = cm("a", vec![]);
    wrong["metadata"]["ownerReferences"] = json!("owner");
    let r = c.post(CMS, &wrong).await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference"
    );
    // An update is checked too.
    create(&c, CMS, &cm("a", vec![])).await;
    let r = c
        .patch(&format!("{CMS}/a"), MERGE, &json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "", "uid": "1"}]}}))
        .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"a\" is invalid: metadata.ownerReferences.name: Invalid value: \"\": must not be empty"
    );
}

#[tokio::test]
async fn without_a_garbage_collector_references_are_only_recorded() {
    // As kube-apiserver alone (envtest): the collector's finalizers are given, and stay.
    let s = testing::builder().garbage_collector(false).start().await.unwrap();
    let c = Client::new(&s);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    create(&c, CMS, &cm("d", vec![owner_ref(&owner, true)])).await;
    let r = c.delete(&format!("{CMS}/owner?propagationPolicy=Foreground")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{}", r.body);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    let held = c.get(&format!("{CMS}/owner")).await;
    assert_eq!((held.code, &held.body["metadata"]["finalizers"]), (200, &json!(["foregroundDeletion"])));
    assert_eq!(c.get(&format!("{CMS}/d")).await.code, 200);

    // As kube-apiserver with `--enable-garbage-collector=false`: no such finalizers, the owner
    // goes at once; a namespace's are given whatever the setting.
    let s = testing::builder().garbage_collection(false).start().await.unwrap();
    let c = Client::new(&s);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    create(&c, CMS, &cm("d", vec![owner_ref(&owner, true)])).await;
    let r = c.delete(&format!("{CMS}/owner?propagationPolicy=Foreground")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], "Success", "removed at once: {}", r.body);
    assert_eq!(c.get(&format!("{CMS}/owner")).await.code, 404);
    let opts = DeleteOpts::default().propagation(Propagation::Orphan);
    s.create("configmaps", cm("other", vec![])).await.unwrap();
    let gone = s.delete_with("configmaps", "default", "other", &opts).await.unwrap();
    assert!(gone["metadata"].get("finalizers").is_none(), "{gone}");
    assert_eq!(c.get(&format!("{CMS}/d")).await.code, 200);
    assert_eq!(c.post("/api/v1/namespaces", &json!({"metadata": {"name": "held"}})).await.code, 201);
    let r = c.delete("/api/v1/namespaces/held?propagationPolicy=Orphan").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["orphan"]), "{}", r.body);
}

#[tokio::test]
async fn a_restarted_server_collects_what_a_deletion_left_behind() {
    let dir = testing::temp_data_dir();
    let first = ApiServer::builder().data_dir(&dir).garbage_collector(false).start().await.unwrap();
    let c = Client::new(&first);
    let owner = create(&c, CMS, &cm("owner", vec![])).await;
    let d = create(&c, CMS, &cm("d", vec![owner_ref(&owner, true)])).await;
    assert_eq!(c.delete(&format!("{CMS}/owner")).await.code, 200);
    first.stop().await;
    drop(first);
    let second = ApiServer::builder().data_dir(&dir).start().await.unwrap();
    let c = Client::new(&second);
    let mut w = c.watch(&format!("{CMS}?watch=true&resourceVersion={}", rv_of(&d))).await;
    until(&mut w, "d deleted", |e| is(e, "DELETED", "d")).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_custom_resource_owns_objects_of_other_kinds() {
    let s = server_with_widgets().await;
    let c = Client::new(&s);
    const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
    let widget =
        create(&c, WIDGETS, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}))
            .await;
    let mut w = watch_cms(&c, &widget).await;
    create(&c, CMS, &cm("of-w", vec![owner_ref(&widget, true)])).await;
    assert_eq!(c.delete(&format!("{WIDGETS}/w")).await.code, 200);
    until(&mut w, "of-w deleted", |e| is(e, "DELETED", "of-w")).await;
}

#[tokio::test]
async fn kubectl_cascades_as_asked() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let c = Client::new(&s);
        let dir = tempdir("kubectl-gc");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let kept = create(&c, CMS, &cm("kept", vec![])).await;
        create(&c, CMS, &cm("of-kept", vec![owner_ref(&kept, true)])).await;
        let gone = create(&c, CMS, &cm("gone", vec![])).await;
        create(&c, CMS, &cm("of-gone", vec![owner_ref(&gone, true)])).await;
        // kubectl waits until the owner is gone: by then its dependents are orphaned…
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "configmap", "kept", "--cascade=orphan"]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(out.trim(), "configmap \"kept\" deleted", "{bin}");
        let d = c.get(&format!("{CMS}/of-kept")).await.body;
        assert!(d["metadata"].get("ownerReferences").is_none(), "{bin}: {d}");
        // … or, in the foreground, deleted before it.
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["delete", "configmap", "gone", "--cascade=foreground"]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(c.get(&format!("{CMS}/of-gone")).await.code, 404, "{bin}");
        assert_eq!(c.get(&format!("{CMS}/gone")).await.code, 404, "{bin}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

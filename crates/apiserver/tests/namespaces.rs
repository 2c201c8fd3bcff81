//! Namespaces over HTTP, against exchanges recorded from kube-apiserver v1.35
//! (`tests/fixtures/kube-apiserver/70-*` … `79-*`): objects only in existing namespaces, the
//! namespaces that cannot be deleted, the two-step deletion (Terminating, then gone once the
//! namespace controller has deleted its contents and finalized it), finalizers on the contents
//! holding it, the `finalize` subresource, and a controller that finishes after a restart.

mod common;

use common::recorded::{comparable_managed, recorded};
use common::*;
use informer_apiserver::storage::Storage;
use informer_apiserver::storage::sqlite::SqliteStorage;
use informer_apiserver::{ApiServer, testing};
use serde_json::{Value, json};

const NAMESPACES: &str = "/api/v1/namespaces";
const MERGE: &str = "application/merge-patch+json";

fn is(e: &Value, kind: &str, name: &str) -> bool {
    e["type"] == kind && e["object"]["metadata"]["name"] == name
}

/// An object without the namespace conditions the controller writes, and its manager's entry
/// (the recorded server ran no namespace controller).
fn without_conditions(v: &Value) -> Value {
    let mut v = comparable_managed(v);
    if let Some(s) = v.get_mut("status").and_then(Value::as_object_mut) {
        s.remove("conditions");
    }
    if let Some(entries) = v["metadata"].get_mut("managedFields").and_then(Value::as_array_mut) {
        entries.retain(|e| e["manager"] != "kube-controller-manager");
    }
    v
}

fn condition<'a>(ns: &'a Value, kind: &str) -> &'a Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no {kind} condition in {ns}"))
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_404_like_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let ex = recorded("70-ns-create-in-missing-namespace-404.txt");
    let r = c.post("/api/v1/namespaces/does-not-exist-xyz/configmaps", &ex.request()).await;
    assert_eq!((r.code, &r.body), (ex.status, &ex.response));
    // In-process creates and server-side apply: the same. (kube routes no create across
    // namespaces.)
    let mut body = ex.request();
    body["metadata"]["namespace"] = json!("does-not-exist-xyz");
    let r = c.post("/api/v1/configmaps", &body).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (405, Some("MethodNotAllowed")));
    let e = s.create("configmaps", body.clone()).await.unwrap_err();
    assert_eq!(e.to_status(), ex.response);
    assert_eq!(s.create_many("configmaps", vec![body]).await.unwrap_err().to_status(), ex.response);
    let r = c
        .patch(
            "/api/v1/namespaces/does-not-exist-xyz/configmaps/settings?fieldManager=t",
            "application/apply-patch+yaml",
            &ex.request(),
        )
        .await;
    assert_eq!((r.code, &r.body), (404, &ex.response));
    let dep = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}});
    let r = c.post("/apis/apps/v1/namespaces/does-not-exist-xyz/deployments", &dep).await;
    assert_eq!((r.code, &r.body), (404, &ex.response));
    // Nothing was stored.
    let l = c.get("/api/v1/configmaps").await;
    assert_eq!(l.body["items"], json!([]));
    // Cluster-scoped objects have no namespace to check.
    let r = c.post("/api/v1/nodes", &json!({"metadata": {"name": "n1", "namespace": "does-not-exist-xyz"}})).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    // A namespace is usable as soon as its create is answered.
    for i in 0..20 {
        let n = format!("fresh-{i}");
        let r = c.post(NAMESPACES, &json!({"metadata": {"name": n}})).await;
        assert_eq!(r.code, 201, "{:?}", r.body);
        let r = c.post(&format!("/api/v1/namespaces/{n}/configmaps"), &ex.request()).await;
        assert_eq!(r.code, 201, "{:?}", r.body);
    }
}

#[tokio::test]
async fn system_namespaces_exist_and_three_cannot_be_deleted() {
    let s = server().await;
    let c = Client::new(&s);
    let l = c.get(NAMESPACES).await;
    let names: Vec<&str> =
        l.body["items"].as_array().unwrap().iter().map(|n| n["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    let path = format!("{}/tests/fixtures/kube-apiserver/namespace-default.json", env!("CARGO_MANIFEST_DIR"));
    let default_ns: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let default = c.get("/api/v1/namespaces/default").await.body;
    assert_eq!(comparable_managed(&default), comparable_managed(&default_ns));
    for n in names.iter().skip(1) {
        let mut want = comparable_managed(&default_ns);
        want["metadata"]["name"] = json!(n);
        want["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(n);
        assert_eq!(comparable_managed(&c.get(&format!("{NAMESPACES}/{n}")).await.body), want);
    }

    let ex = recorded("71-ns-delete-default-forbidden.txt");
    let r = c.delete("/api/v1/namespaces/default").await;
    assert_eq!((r.code, &r.body), (ex.status, &ex.response));
    let ex = recorded("77-ns-delete-kube-system-forbidden.txt");
    let r = c.delete("/api/v1/namespaces/kube-system").await;
    assert_eq!((r.code, &r.body), (ex.status, &ex.response));
    let r = c.delete("/api/v1/namespaces/kube-public").await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (403, Some("namespaces \"kube-public\" is forbidden: this namespace may not be deleted"))
    );
    let e = s.delete("namespaces", "", "default").await.unwrap_err();
    assert_eq!(e.code, 403);
    // Nothing changed.
    assert_eq!(c.get("/api/v1/namespaces/default").await.body, default);
    // kube-node-lease can go (and is created again by the next server on the same storage).
    let r = c.delete("/api/v1/namespaces/kube-node-lease").await;
    assert_eq!((r.code, r.body["status"]["phase"].as_str()), (200, Some("Terminating")));
}

#[tokio::test]
async fn deleting_a_namespace_terminates_it_like_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let start = s.resource_version();
    let mut namespaces = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={start}")).await;
    let mut configmaps = c.watch(&format!("/api/v1/configmaps?watch=1&resourceVersion={start}")).await;
    let mut pods = c.watch(&format!("/api/v1/pods?watch=1&resourceVersion={start}")).await;
    let ns = "/api/v1/namespaces/fixtures-del";
    let cms = "/api/v1/namespaces/fixtures-del/configmaps";

    // 72, 73: the namespace (finalizer `kubernetes`, phase Active) and a ConfigMap in it.
    let ex = recorded("72-ns-create-fixtures-del.txt");
    let r = c.post(NAMESPACES, &ex.request()).await;
    assert_eq!((r.code, comparable_managed(&r.body)), (ex.status, comparable_managed(&ex.response)));
    let ex = recorded("73-ns-configmap-in-fixtures-del.txt");
    let r = c.post(cms, &ex.request()).await;
    assert_eq!((r.code, comparable_managed(&r.body)), (ex.status, comparable_managed(&ex.response)));
    // More contents: a ConfigMap held by a finalizer, and a pod.
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"a": "b"}});
    assert_eq!(c.post(cms, &held).await.code, 201);
    assert_eq!(c.post("/api/v1/namespaces/fixtures-del/pods", &pod("p", json!({}))).await.code, 201);

    // 74: DELETE answers the namespace, Terminating.
    let ex = recorded("74-ns-delete-fixtures-del.txt");
    let r = c.delete(ns).await;
    assert_eq!((r.code, comparable_managed(&r.body)), (ex.status, comparable_managed(&ex.response)));
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    // 75: and so does a GET right after.
    let ex = recorded("75-ns-get-right-after-delete.txt");
    let g = c.get(ns).await;
    assert_eq!((g.code, without_conditions(&g.body)), (ex.status, comparable_managed(&ex.response)));
    // 76: nothing new in it.
    let ex = recorded("76-ns-post-into-terminating-403.txt");
    let r = c.post(cms, &ex.request()).await;
    assert_eq!((r.code, &r.body), (ex.status, &ex.response));
    let r = c.post("/api/v1/namespaces/fixtures-del/pods", &pod("late", json!({}))).await;
    assert_eq!((r.code, r.body["details"]["causes"][0]["reason"].as_str()), (403, Some("NamespaceTerminating")));
    // Deleting it again answers it as it is.
    let again = c.delete(ns).await;
    assert_eq!((again.code, without_conditions(&again.body)), (200, without_conditions(&c.get(ns).await.body)));

    // The controller deletes the contents; the held ConfigMap is only marked.
    let (mut settings_gone, mut held_marked) = (false, false);
    while !(settings_gone && held_marked) {
        let e = until(&mut configmaps, "settings deleted and held marked", |_| true).await;
        settings_gone |= is(&e, "DELETED", "settings");
        held_marked |= is(&e, "MODIFIED", "held") && e["object"]["metadata"]["deletionTimestamp"].is_string();
        assert!(!is(&e, "DELETED", "held"), "held has a finalizer");
    }
    until(&mut pods, "pod p deleted", |e| is(e, "DELETED", "p")).await;
    // 78: the namespace stays Terminating, with kube-controller-manager's conditions.
    let e = until(&mut namespaces, "the namespace's conditions", |e| {
        is(e, "MODIFIED", "fixtures-del") && e["object"]["status"]["conditions"].is_array()
    })
    .await;
    let ex = recorded("78-ns-get-terminating-later.txt");
    let g = c.get(ns).await;
    assert_eq!((g.code, without_conditions(&g.body)), (ex.status, comparable_managed(&ex.response)));
    assert_eq!(g.body, e["object"]);
    let remaining = condition(&g.body, "NamespaceContentRemaining");
    assert_eq!(
        (&remaining["status"], &remaining["reason"], &remaining["message"]),
        (
            &json!("True"),
            &json!("SomeResourcesRemain"),
            &json!("Some resources are remaining: configmaps. has 1 resource instances")
        )
    );
    let finalizers = condition(&g.body, "NamespaceFinalizersRemaining");
    assert_eq!(
        (&finalizers["status"], &finalizers["reason"], &finalizers["message"]),
        (
            &json!("True"),
            &json!("SomeFinalizersRemain"),
            &json!("Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
        )
    );
    let types: Vec<&str> =
        g.body["status"]["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "NamespaceDeletionDiscoveryFailure",
            "NamespaceDeletionGroupVersionParsingFailure",
            "NamespaceDeletionContentFailure",
            "NamespaceContentRemaining",
            "NamespaceFinalizersRemaining"
        ]
    );
    for c in g.body["status"]["conditions"].as_array().unwrap() {
        assert!(c["lastTransitionTime"].is_string(), "{c}");
    }

    // Removing the finalizer lets the ConfigMap go, and then the namespace.
    let r = c.patch(&format!("{cms}/held"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    let held_gone = until(&mut configmaps, "held deleted", |e| is(e, "DELETED", "held")).await;
    let ns_gone = until(&mut namespaces, "the namespace deleted", |e| is(e, "DELETED", "fixtures-del")).await;
    assert!(rv_of(&ns_gone["object"]) > rv_of(&held_gone["object"]), "the contents go first");
    // The event carries the last stored state: the finalize write that deleted it is not stored.
    assert_eq!(ns_gone["object"]["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(c.get(ns).await.code, 404);
    assert_eq!(c.get(cms).await.body["items"], json!([]));
    // The name can be used again: a new, empty namespace.
    let r = c.post(NAMESPACES, &json!({"metadata": {"name": "fixtures-del"}})).await;
    assert_eq!((r.code, r.body["status"]["phase"].as_str()), (201, Some("Active")));
    assert_eq!(c.get("/api/v1/namespaces/fixtures-del/pods").await.body["items"], json!([]));
}

#[tokio::test]
async fn a_namespace_s_pods_go_before_the_rest_of_it() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["ordered"]).await.unwrap();
    let pods = "/api/v1/namespaces/ordered/pods";
    let cms = "/api/v1/namespaces/ordered/configmaps";
    let mut held = pod("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(c.post(pods, &held).await.code, 201);
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "settings"}})).await.code, 201);
    let mut configmaps = c.watch(&format!("{cms}?watch=1&resourceVersion={}", s.resource_version())).await;
    let mut namespaces = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={}", s.resource_version())).await;
    assert_eq!(c.delete("/api/v1/namespaces/ordered").await.code, 200);
    // While a pod is left, nothing else is deleted, and the conditions name the pods alone.
    let e = until(&mut namespaces, "the namespace's conditions", |e| {
        is(e, "MODIFIED", "ordered") && e["object"]["status"]["conditions"].is_array()
    })
    .await;
    let remaining = condition(&e["object"], "NamespaceContentRemaining");
    assert_eq!(remaining["message"], "Some resources are remaining: pods. has 1 resource instances");
    assert_eq!(c.get(&format!("{cms}/settings")).await.code, 200, "the ConfigMap outlives the pod");
    // The pod lets go: then the ConfigMap, then the namespace.
    let r = c.patch(&format!("{pods}/held"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut configmaps, "settings deleted", |e| is(e, "DELETED", "settings")).await;
    until(&mut namespaces, "the namespace deleted", |e| is(e, "DELETED", "ordered")).await;
}

#[tokio::test]
async fn a_refused_deletion_shows_in_the_namespace_s_conditions() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["guarded"]).await.unwrap();
    let cms = "/api/v1/namespaces/guarded/configmaps";
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "kept"}})).await.code, 201);
    refuse_deletes(&c, "keep", ("", "configmaps"), "kept").await;
    let mut namespaces = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={}", s.resource_version())).await;
    assert_eq!(c.delete("/api/v1/namespaces/guarded").await.code, 200);
    let e = until(&mut namespaces, "the failure reported", |e| {
        let failed = |c: &&Value| c["type"] == "NamespaceDeletionContentFailure" && c["status"] == "True";
        is(e, "MODIFIED", "guarded")
            && e["object"]["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| failed(&c)))
    })
    .await;
    let failure = condition(&e["object"], "NamespaceDeletionContentFailure");
    // Deleting it again while its content is being removed answers it as it is, before any
    // admission (a policy refusing namespace deletions has no say), as kube's namespace storage.
    refuse_deletes(&c, "keep-namespaces", ("", "namespaces"), "no").await;
    let again = c.delete("/api/v1/namespaces/guarded").await;
    assert_eq!((again.code, again.body["status"]["phase"].as_str()), (200, Some("Terminating")), "{}", again.body);
    // Its preconditions are its registry's own.
    let stale = serde_json::to_vec(&json!({"preconditions": {"uid": "0000"}})).unwrap();
    let r = c.send_raw(http::Method::DELETE, "/api/v1/namespaces/guarded", stale.clone(), "application/json").await;
    let uid = e["object"]["metadata"]["uid"].as_str().unwrap();
    assert_eq!((r.code, r.body["details"]["kind"].as_str()), (409, Some("namespaces")), "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on namespaces \"guarded\": Precondition failed: UID in precondition: 0000, \
             UID in object meta: {uid}"
        )
    );
    // A system namespace's stale precondition is a conflict before it is refused.
    let r = c.send_raw(http::Method::DELETE, "/api/v1/namespaces/default", stale, "application/json").await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(c.delete(&format!("{ADMISSION}/validatingadmissionpolicybindings/keep-namespaces")).await.code, 200);
    assert_eq!(failure["reason"], "ContentDeletionFailed");
    assert_eq!(
        failure["message"],
        "Failed to delete all resource types, 1 remaining: configmaps \"kept\" is forbidden: \
         ValidatingAdmissionPolicy 'keep' with binding 'keep' denied request: kept"
    );
    // Without the policy the next try deletes it, and the namespace goes.
    assert_eq!(c.delete(&format!("{ADMISSION}/validatingadmissionpolicybindings/keep")).await.code, 200);
    until(&mut namespaces, "the namespace deleted", |e| is(e, "DELETED", "guarded")).await;
}

#[tokio::test]
async fn a_status_write_cannot_start_or_stop_a_namespace_s_deletion() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["steady"]).await.unwrap();
    let path = "/api/v1/namespaces/steady/status";
    let r = c.patch(path, MERGE, &json!({"status": {"phase": "Terminating"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Namespace \"steady\" is invalid: status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
    );
    assert_eq!(c.get("/api/v1/namespaces/steady").await.body["status"]["phase"], "Active");
    let cm = json!({"metadata": {"name": "kept"}});
    assert_eq!(c.post("/api/v1/namespaces/steady/configmaps", &cm).await.code, 201);
}

#[tokio::test]
async fn every_namespaced_resource_is_emptied() {
    let s = server().await;
    let c = Client::new(&s);
    testing::create_namespaces(&s, &["bulk", "kept"]).await.unwrap();
    let cm = |ns: &str, i: usize| json!({"metadata": {"name": format!("cm-{i:03}"), "namespace": ns}});
    s.create_many("configmaps", (0..150).map(|i| cm("bulk", i)).collect()).await.unwrap();
    s.create_many("configmaps", (0..3).map(|i| cm("kept", i)).collect()).await.unwrap();
    for i in 0..10 {
        let mut p = pod(&format!("p{i}"), json!({}));
        p["metadata"]["namespace"] = json!("bulk");
        s.create("pods", p).await.unwrap();
    }
    let meta = |name: &str| json!({"metadata": {"name": name, "namespace": "bulk"}});
    for (resource, n) in [
        ("deployments.apps", 3),
        ("replicasets.apps", 2),
        ("statefulsets.apps", 2),
        ("secrets", 2),
        ("services", 2),
        ("events", 2),
        ("leases", 1),
    ] {
        for i in 0..n {
            let mut o = meta(&format!("o{i}"));
            if resource.ends_with(".apps") {
                o["spec"] = workload_spec("bulk");
            }
            if resource == "services" {
                o["spec"] = json!({"ports": [{"port": 80}]});
            }
            if resource == "events" {
                // An event's namespace is its object's, as kube requires.
                o["involvedObject"] = json!({"kind": "Pod", "name": "p0", "namespace": "bulk"});
            }
            s.create(resource, o).await.unwrap();
        }
    }
    let start = s.resource_version();
    let mut w = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={start}")).await;
    let r = c.delete("/api/v1/namespaces/bulk").await;
    assert_eq!(r.code, 200);
    until(&mut w, "the namespace deleted", |e| is(e, "DELETED", "bulk")).await;
    let registry = s.store().registry();
    for info in registry.all().iter().filter(|i| i.namespaced) {
        assert_eq!(s.list(&info.plural, Some("bulk")).await.unwrap(), Vec::<Value>::new(), "{}", info.plural);
    }
    assert_eq!(s.list("configmaps", Some("kept")).await.unwrap().len(), 3, "other namespaces are untouched");
}

#[tokio::test]
async fn finalize_subresource_like_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let ns = "/api/v1/namespaces/fixtures-del";
    let start = s.resource_version();
    let mut w = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={start}")).await;
    // A namespace with another finalizer besides `kubernetes`.
    let r = c
        .post(NAMESPACES, &json!({"metadata": {"name": "fixtures-del"}, "spec": {"finalizers": ["example.com/keep"]}}))
        .await;
    assert_eq!((r.code, &r.body["spec"]["finalizers"]), (201, &json!(["example.com/keep", "kubernetes"])));
    assert_eq!(c.post(&format!("{ns}/configmaps"), &json!({"metadata": {"name": "settings"}})).await.code, 201);
    // A PUT of the namespace itself does not change its finalizers; its name label stays.
    let mut put = r.body.clone();
    put["spec"]["finalizers"] = json!([]);
    put["metadata"]["labels"] = json!({"team": "a"});
    let r = c.put(ns, &put).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["spec"]["finalizers"], json!(["example.com/keep", "kubernetes"]));
    assert_eq!(r.body["metadata"]["labels"], json!({"team": "a", "kubernetes.io/metadata.name": "fixtures-del"}));

    assert_eq!(c.delete(ns).await.code, 200);
    // The controller empties it and removes its own finalizer only.
    let e = until(&mut w, "the kubernetes finalizer removed", |e| {
        is(e, "MODIFIED", "fixtures-del") && e["object"]["spec"]["finalizers"] == json!(["example.com/keep"])
    })
    .await;
    assert_eq!(c.get(&format!("{ns}/configmaps")).await.body["items"], json!([]));
    let current = c.get(ns).await.body;
    assert_eq!(current, e["object"]);
    assert_eq!(current["status"]["phase"], "Terminating");

    // 79: PUT …/finalize with no finalizers: the namespace goes; the answer is its last state.
    assert_eq!(c.get(&format!("{ns}/finalize")).await.code, 405);
    assert_eq!(c.patch(&format!("{ns}/finalize"), MERGE, &json!({})).await.code, 405);
    let ex = recorded("79-ns-finalize-subresource.txt");
    let mut body = ex.request();
    for f in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"] {
        body["metadata"][f] = current["metadata"][f].clone();
    }
    body["metadata"].as_object_mut().unwrap().remove("managedFields");
    let r = c.put(&format!("{ns}/finalize"), &body).await;
    assert_eq!((r.code, without_conditions(&r.body)), (ex.status, comparable_managed(&ex.response)));
    assert_eq!(r.body["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"]);
    assert_eq!(r.body["metadata"]["deletionTimestamp"], current["metadata"]["deletionTimestamp"]);
    until(&mut w, "the namespace deleted", |e| is(e, "DELETED", "fixtures-del")).await;
    assert_eq!(c.get(ns).await.code, 404);

    // A namespace whose finalizers were removed while it was active goes at once when deleted
    // (first marked Terminating, then deleted by the controller).
    let r = c.post(NAMESPACES, &json!({"metadata": {"name": "bare"}})).await;
    let mut body = r.body.clone();
    body["spec"]["finalizers"] = json!([]);
    let r = c.put("/api/v1/namespaces/bare/finalize", &body).await;
    assert_eq!((r.code, &r.body["spec"], &r.body["status"]["phase"]), (200, &json!({}), &json!("Active")));
    assert_eq!(c.delete("/api/v1/namespaces/bare").await.code, 200);
    until(&mut w, "bare deleted", |e| is(e, "DELETED", "bare")).await;

    // One whose only finalizer is someone else's is still emptied, and waits for its owner.
    let r = c.post(NAMESPACES, &json!({"metadata": {"name": "theirs"}})).await;
    let mut body = r.body.clone();
    body["spec"]["finalizers"] = json!(["example.com/theirs"]);
    assert_eq!(c.put("/api/v1/namespaces/theirs/finalize", &body).await.code, 200);
    let cms = "/api/v1/namespaces/theirs/configmaps";
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "c"}})).await.code, 201);
    let mut contents = c.watch(&format!("{cms}?watch=1&resourceVersion={}", s.resource_version())).await;
    assert_eq!(c.delete("/api/v1/namespaces/theirs").await.code, 200);
    until(&mut contents, "its ConfigMap deleted", |e| is(e, "DELETED", "c")).await;
    let held = c.get("/api/v1/namespaces/theirs").await.body;
    assert_eq!(held["spec"]["finalizers"], json!(["example.com/theirs"]));
    let mut body = held.clone();
    body["spec"]["finalizers"] = json!([]);
    assert_eq!(c.put("/api/v1/namespaces/theirs/finalize", &body).await.code, 200);
    until(&mut w, "theirs deleted", |e| is(e, "DELETED", "theirs")).await;

    // Discovery: namespaces/finalize (update only), and no deletecollection of namespaces.
    let d = c.get("/api/v1").await.body;
    let entry = |name: &str| d["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap();
    assert_eq!(entry("namespaces")["verbs"], json!(["create", "delete", "get", "list", "patch", "update", "watch"]));
    assert_eq!(
        entry("namespaces/finalize"),
        json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]})
    );
    let names: Vec<&str> = d["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
    assert!(at("namespaces") < at("namespaces/finalize") && at("namespaces/finalize") < at("namespaces/status"));
    assert_eq!(c.delete(NAMESPACES).await.code, 405);
}

/// A server that starts on a storage holding a terminating namespace whose contents are gone
/// finishes it: the controller works from the state it finds, not only from changes it sees.
#[tokio::test]
async fn a_restarted_server_finishes_terminating_namespaces() {
    let dir = testing::temp_data_dir();
    let rv = {
        let s = ApiServer::builder().data_dir(&dir).start().await.unwrap();
        let c = Client::new(&s);
        testing::create_namespaces(&s, &["leaving"]).await.unwrap();
        let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
        assert_eq!(c.post("/api/v1/namespaces/leaving/configmaps", &held).await.code, 201);
        let mut w = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={}", s.resource_version())).await;
        assert_eq!(c.delete("/api/v1/namespaces/leaving").await.code, 200);
        // Once the controller says what remains, it has nothing more to do.
        until(&mut w, "the namespace's conditions", |e| {
            is(e, "MODIFIED", "leaving") && e["object"]["status"]["conditions"].is_array()
        })
        .await;
        let rv = s.resource_version();
        s.stop().await;
        rv
    };
    // While no server runs, the held object goes (its finalizer's owner removed it).
    let rv = {
        // (Once the server's background tasks are gone, it lets the directory go.)
        let storage = SqliteStorage::open_when_free(&dir, std::time::Duration::from_secs(30)).await.unwrap();
        let key = "/registry/configmaps/leaving/held".to_string();
        let kv = storage.get(&key).await.unwrap().expect("the held ConfigMap is stored");
        assert!(kv.mod_revision <= rv);
        storage.delete(key, kv.mod_revision).await.unwrap()
    };
    let s = ApiServer::builder().data_dir(&dir).start().await.unwrap();
    let c = Client::new(&s);
    let mut w = c.watch(&format!("{NAMESPACES}?watch=1&resourceVersion={rv}")).await;
    let e = until(&mut w, "the namespace deleted", |e| is(e, "DELETED", "leaving")).await;
    assert!(rv_of(&e["object"]) > rv);
    assert_eq!(c.get("/api/v1/namespaces/leaving").await.code, 404);
    let names: Vec<String> = s
        .list("namespaces", None)
        .await
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"], "each once");
    std::fs::remove_dir_all(&dir).ok();
}

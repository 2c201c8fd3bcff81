//! Claims and volumes as a kube-apiserver with its default admission plugins and
//! kube-controller-manager's protection controllers treat them, over HTTP: a claim created
//! without a class gets the default StorageClass; claims and volumes get their protection
//! finalizer, which is removed once the object is deleted and nothing uses it (a scheduled pod
//! naming the claim, a volume still bound) and given back to a live object that lost it; a bound
//! claim grows only when its StorageClass allows volume expansion. kube-rs sees the same.

mod common;

use common::*;
use serde_json::{Value, json};

const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";
const VOLUMES: &str = "/api/v1/persistentvolumes";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";
const MERGE: &str = "application/merge-patch+json";

fn claim(name: &str, class: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    if let Some(class) = class {
        c["spec"]["storageClassName"] = json!(class);
    }
    c
}

fn volume(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}})
}

fn storage_class(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations}, "provisioner": "disks.example.com"})
}

/// A pod scheduled to a node whose volume `volume` is the claim `claim`.
fn pod_using(name: &str, claim: &str) -> Value {
    let mut p = pod(name, json!({}));
    p["spec"]["nodeName"] = json!("node-1");
    p["spec"]["volumes"] = json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
    p
}

fn deleted(name: &'static str) -> impl FnMut(&Value) -> bool {
    move |e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name
}

#[tokio::test]
async fn a_claim_without_a_class_gets_the_default_and_every_claim_its_finalizer() {
    let s = server().await;
    let c = Client::new(&s);
    // No default class: the claim stays without one.
    let r = c.post(CLAIMS, &claim("before", None)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["spec"].get("storageClassName").is_none(), "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));

    for (name, annotations) in [
        ("fast", json!({})),
        ("standard", json!({"storageclass.kubernetes.io/is-default-class": "true"})),
        ("almost", json!({"storageclass.kubernetes.io/is-default-class": "True"})),
    ] {
        let r = c.post(CLASSES, &storage_class(name, annotations)).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let r = c.post(CLAIMS, &claim("data", None)).await;
    assert_eq!((r.code, &r.body["spec"]["storageClassName"]), (201, &json!("standard")), "{}", r.body);
    // A dry run answers what would be stored.
    let r = c.post(&format!("{CLAIMS}?dryRun=All"), &claim("dry", None)).await;
    assert_eq!((r.code, &r.body["spec"]["storageClassName"]), (201, &json!("standard")), "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    // A class named, even none (""), or the beta annotation, is kept.
    let r = c.post(CLAIMS, &claim("fast", Some("fast"))).await;
    assert_eq!(r.body["spec"]["storageClassName"], "fast", "{}", r.body);
    let r = c.post(CLAIMS, &claim("none", Some(""))).await;
    assert_eq!(r.body["spec"]["storageClassName"], "", "{}", r.body);
    let mut beta = claim("beta", None);
    beta["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "fast"});
    let r = c.post(CLAIMS, &beta).await;
    assert!(r.body["spec"].get("storageClassName").is_none(), "{}", r.body);
    // The finalizer is appended once, after the client's own.
    let mut held = claim("held", None);
    held["metadata"]["finalizers"] = json!(["example.com/keep", "kubernetes.io/pvc-protection"]);
    let r = c.post(CLAIMS, &held).await;
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/keep", "kubernetes.io/pvc-protection"]));
    let mut other = claim("other", None);
    other["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let r = c.post(CLAIMS, &other).await;
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/keep", "kubernetes.io/pvc-protection"]));
    // Volumes get theirs.
    let r = c.post(VOLUMES, &volume("pv-1")).await;
    assert_eq!((r.code, &r.body["metadata"]["finalizers"]), (201, &json!(["kubernetes.io/pv-protection"])));

    // kube-rs sees the same claim.
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let api: kube::Api<PersistentVolumeClaim> = kube::Api::default_namespaced(kube_client(&s).await);
    let data = api.get("data").await.unwrap();
    assert_eq!(data.spec.unwrap().storage_class_name.as_deref(), Some("standard"));
    assert_eq!(data.metadata.finalizers, Some(vec!["kubernetes.io/pvc-protection".to_string()]));
}

#[tokio::test]
async fn a_claim_is_deleted_once_no_scheduled_pod_uses_it() {
    let s = server().await;
    let c = Client::new(&s);
    for name in ["used", "free", "unscheduled", "later", "elsewhere"] {
        assert_eq!(c.post(CLAIMS, &claim(name, None)).await.code, 201);
    }
    assert_eq!(c.post(PODS, &pod_using("user", "used")).await.code, 201);
    // A pod not scheduled to a node does not hold its claim.
    let mut waiting = pod_using("waiting", "unscheduled");
    waiting["spec"].as_object_mut().unwrap().remove("nodeName");
    assert_eq!(c.post(PODS, &waiting).await.code, 201);
    // Nor does a pod of another namespace naming a claim of the same name.
    create_namespaces(&s, &["other"]).await.unwrap();
    let r = c.post("/api/v1/namespaces/other/pods", &pod_using("stranger", "elsewhere")).await;
    assert_eq!(r.code, 201, "{}", r.body);

    let listed = c.get(CLAIMS).await.body;
    let rv = listed["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{CLAIMS}?watch=true&resourceVersion={rv}")).await;
    let r = c.delete(&format!("{CLAIMS}/used")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    assert_eq!(c.delete(&format!("{CLAIMS}/unscheduled")).await.code, 200);
    until(&mut w, "the claim of the unscheduled pod deleted", deleted("unscheduled")).await;
    assert_eq!(c.delete(&format!("{CLAIMS}/elsewhere")).await.code, 200);
    until(&mut w, "the claim another namespace's pod names deleted", deleted("elsewhere")).await;
    assert_eq!(c.delete(&format!("{CLAIMS}/free")).await.code, 200);
    until(&mut w, "the free claim deleted", deleted("free")).await;
    // The passes that released those judged the used claim too: it is still there.
    let r = c.get(&format!("{CLAIMS}/used")).await;
    assert_eq!((r.code, &r.body["metadata"]["finalizers"]), (200, &json!(["kubernetes.io/pvc-protection"])));

    // A terminating pod still holds it; once the pod is gone, it goes.
    let r = c.delete(&format!("{PODS}/user")).await;
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    assert_eq!(c.delete(&format!("{CLAIMS}/later")).await.code, 200);
    until(&mut w, "a claim deleted after the pod was marked", deleted("later")).await;
    assert_eq!(c.get(&format!("{CLAIMS}/used")).await.code, 200);
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/user?gracePeriodSeconds=0"), Vec::new(), "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "the used claim deleted", deleted("used")).await;
    assert_eq!(c.get(&format!("{CLAIMS}/used")).await.code, 404);
}

#[tokio::test]
async fn a_volume_is_deleted_once_it_is_no_longer_bound() {
    let s = server().await;
    let c = Client::new(&s);
    for name in ["bound", "spare"] {
        assert_eq!(c.post(VOLUMES, &volume(name)).await.code, 201);
    }
    let r = c.patch(&format!("{VOLUMES}/bound/status"), MERGE, &json!({"status": {"phase": "Bound"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let rv = c.get(VOLUMES).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{VOLUMES}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(c.delete(&format!("{VOLUMES}/bound")).await.code, 200);
    assert_eq!(c.delete(&format!("{VOLUMES}/spare")).await.code, 200);
    until(&mut w, "the spare volume deleted", deleted("spare")).await;
    assert_eq!(c.get(&format!("{VOLUMES}/bound")).await.code, 200);
    let r = c.patch(&format!("{VOLUMES}/bound/status"), MERGE, &json!({"status": {"phase": "Released"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "the released volume deleted", deleted("bound")).await;
}

#[tokio::test]
async fn a_live_claim_that_loses_its_finalizer_gets_it_back() {
    let s = server().await;
    let c = Client::new(&s);
    let mut held = claim("data", None);
    held["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let r = c.post(CLAIMS, &held).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let rv = r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{CLAIMS}?watch=true&resourceVersion={rv}")).await;
    let r = c.patch(&format!("{CLAIMS}/data"), MERGE, &json!({"metadata": {"finalizers": ["example.com/keep"]}})).await;
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/keep"]), "{}", r.body);
    let e = until(&mut w, "the finalizer given back", |e| {
        e["object"]["metadata"]["finalizers"] == json!(["example.com/keep", "kubernetes.io/pvc-protection"])
    })
    .await;
    assert_eq!(e["type"], "MODIFIED");
    let managers: Vec<&str> = e["object"]["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kube-controller-manager"), "{e}");
}

#[tokio::test]
async fn a_bound_claim_grows_only_when_its_class_allows_expansion() {
    let s = server().await;
    let c = Client::new(&s);
    let mut elastic = storage_class("elastic", json!({}));
    elastic["allowVolumeExpansion"] = json!(true);
    assert_eq!(c.post(CLASSES, &elastic).await.code, 201);
    assert_eq!(c.post(CLASSES, &storage_class("fixed", json!({}))).await.code, 201);
    let bound = json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
    for (name, class) in
        [("fixed", Some("fixed")), ("elastic", Some("elastic")), ("none", None), ("gone", Some("gone"))]
    {
        assert_eq!(c.post(CLAIMS, &claim(name, class)).await.code, 201);
        assert_eq!(c.patch(&format!("{CLAIMS}/{name}/status"), MERGE, &bound).await.code, 200);
    }
    let grow = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});
    let r = c.patch(&format!("{CLAIMS}/elastic"), MERGE, &grow).await;
    assert_eq!((r.code, &r.body["spec"]["resources"]["requests"]["storage"]), (200, &json!("2Gi")), "{}", r.body);
    for name in ["fixed", "none", "gone"] {
        let r = c.patch(&format!("{CLAIMS}/{name}"), MERGE, &grow).await;
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("persistentvolumeclaims \"{name}\" is forbidden: only dynamically provisioned pvc \
                    can be resized and the storageclass that provisions the pvc must support resize"),
                "reason": "Forbidden", "details": {"name": name, "kind": "persistentvolumeclaims"}, "code": 403})
        );
    }
    // A dry run is judged the same; a write that does not grow the claim is not judged.
    let r = c.patch(&format!("{CLAIMS}/fixed?dryRun=All"), MERGE, &grow).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let r = c.patch(&format!("{CLAIMS}/fixed"), MERGE, &json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{CLAIMS}/fixed")).await.body["spec"]["resources"]["requests"]["storage"], "1Gi");
}

#[tokio::test]
async fn an_ephemeral_claim_goes_once_its_pod_is_shut_down() {
    let s = server().await;
    let c = Client::new(&s);
    let mut p = pod("runner", json!({}));
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    p["spec"]["nodeName"] = json!("node-1");
    p["spec"]["volumes"] = json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec":
        {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]);
    let r = c.post(PODS, &p).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let uid = r.body["metadata"]["uid"].as_str().unwrap().to_string();
    // The claim kube's ephemeral volume controller creates: named after the pod and volume, owned by it.
    let mut owned = claim("runner-scratch", None);
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "Pod", "name": "runner", "uid": uid, "controller": true}]);
    assert_eq!(c.post(CLAIMS, &owned).await.code, 201);
    // Another claim, deleted after it: once it is gone, the controller has judged the first.
    assert_eq!(c.post(CLAIMS, &claim("spare", None)).await.code, 201);

    let rv = c.get(CLAIMS).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{CLAIMS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(c.delete(&format!("{CLAIMS}/runner-scratch")).await.code, 200);
    assert_eq!(c.delete(&format!("{CLAIMS}/spare")).await.code, 200);
    until(&mut w, "the spare claim deleted", deleted("spare")).await;
    assert_eq!(c.get(&format!("{CLAIMS}/runner-scratch")).await.code, 200, "held by its running pod");
    // Deleted with a grace period of 0, the pod is shut down though its finalizer keeps it.
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/runner?gracePeriodSeconds=0"), Vec::new(), "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/runner")).await.code, 200);
    until(&mut w, "the ephemeral claim deleted", deleted("runner-scratch")).await;
}

#[tokio::test]
async fn a_class_written_just_before_a_claim_is_its_default_however_late_the_cache() {
    let s = server().await;
    let c = Client::new(&s);
    s.set_cache_lag(std::time::Duration::from_millis(300));
    let marked = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    assert_eq!(c.post(CLASSES, &storage_class("standard", marked)).await.code, 201);
    let r = c.post(CLAIMS, &claim("data", None)).await;
    assert_eq!((r.code, &r.body["spec"]["storageClassName"]), (201, &json!("standard")), "{}", r.body);
    // Numbers are quantities too: a bound claim of 1000 bytes grows to 2000 only if its class allows.
    let mut small = claim("small", Some("standard"));
    small["spec"]["resources"]["requests"]["storage"] = json!(1000);
    assert_eq!(c.post(CLAIMS, &small).await.code, 201);
    let bound = json!({"status": {"phase": "Bound", "capacity": {"storage": "1k"}}});
    assert_eq!(c.patch(&format!("{CLAIMS}/small/status"), MERGE, &bound).await.code, 200);
    let grow = json!({"spec": {"resources": {"requests": {"storage": 2000}}}});
    assert_eq!(c.patch(&format!("{CLAIMS}/small"), MERGE, &grow).await.code, 403);
    s.set_cache_lag(std::time::Duration::ZERO);
}

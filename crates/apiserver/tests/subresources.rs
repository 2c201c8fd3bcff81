//! The `status` and `scale` subresources over HTTP, against exchanges recorded from
//! kube-apiserver v1.35 (`tests/fixtures/kube-apiserver/40-*` … `46-*`): what each write may
//! change, how `metadata.generation` moves, the autoscaling/v1 `Scale`, discovery, and the
//! Status answers to bad requests.

mod common;

use common::recorded::{as_create_body, comparable, comparable_managed, recorded};
use common::*;
use informer_apiserver::{ResourceInfo, ScaleSubresource};
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/fixtures/deployments";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

fn generation(v: &Value) -> i64 {
    v["metadata"]["generation"].as_i64().expect("generation")
}

/// A request body recorded against kube-apiserver, pointed at our object.
fn retarget(mut body: Value, ours: &Value) -> Value {
    let m = body["metadata"].as_object_mut().expect("metadata");
    m.remove("managedFields");
    m.insert("uid".into(), ours["metadata"]["uid"].clone());
    m.insert("resourceVersion".into(), ours["metadata"]["resourceVersion"].clone());
    m.insert("creationTimestamp".into(), ours["metadata"]["creationTimestamp"].clone());
    body
}

/// The Deployment `api` as the recorded exchanges start from (3 replicas, no status), with
/// the managers kube-apiserver had recorded for it (three appliers).
async fn api_deployment(c: &Client) -> Value {
    let state = recorded("36-ssa-6-raw-apply-yaml-gamma-shared-ownership.txt").response;
    let r = c.post(DEPLOYMENTS, &as_create_body(&state)).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let mut d = r.body;
    d["metadata"]["managedFields"] = state["metadata"]["managedFields"].clone();
    let r = c.put(&format!("{DEPLOYMENTS}/api"), &d).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&state));
    r.body
}

#[tokio::test]
async fn deployment_writes_match_kube_apiserver() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let created = api_deployment(&c).await;
    let api = format!("{DEPLOYMENTS}/api");

    // 40: GET /scale.
    let scale = c.get(&format!("{api}/scale")).await;
    assert_eq!(scale.code, 200, "{:?}", scale.body);
    let want = recorded("40-subres-get-scale.txt").response;
    assert_eq!(comparable(&scale.body), comparable(&want));
    for f in ["uid", "resourceVersion", "creationTimestamp"] {
        assert_eq!(scale.body["metadata"][f], created["metadata"][f], "{f}");
    }
    let raw = std::str::from_utf8(&scale.raw).unwrap();
    assert!(raw.starts_with(r#"{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"api","#), "{raw}");

    // 41: kubectl scale's merge patch of /scale: spec.replicas of the Deployment, a new generation;
    // kubectl's `scale` entry (without a time, as kube records it) takes the replicas from the
    // appliers.
    let ex = recorded("41-subres-kubectl-scale-patch.txt");
    let body = serde_json::to_vec(&ex.request()).unwrap();
    let scaled = c.send_as(http::Method::PATCH, &format!("{api}/scale"), body, MERGE, ex.user_agent.as_deref()).await;
    assert_eq!(scaled.code, 200, "{:?}", scaled.body);
    assert_eq!(comparable(&scaled.body), comparable(&ex.response));
    let after = c.get(&api).await.body;
    assert_eq!(after["spec"]["replicas"], 4);
    assert_eq!(generation(&after), generation(&created) + 1);
    assert_eq!(scaled.body["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"]);
    assert_eq!(
        comparable_managed(&after)["metadata"]["managedFields"],
        comparable_managed(&recorded("42-subres-put-status.txt").request())["metadata"]["managedFields"]
    );

    // 42: PUT /status writes the status only (the spec and label changes of the body are ignored).
    let ex = recorded("42-subres-put-status.txt");
    let r = c.put(&format!("{api}/status"), &retarget(ex.request(), &after)).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&ex.response));
    assert_eq!(generation(&r.body), generation(&after));
    assert_eq!(c.get(&api).await.body, r.body);

    // 43: PATCH /status (the recorded strategic merge patch merged the conditions by type; this
    // merge patch carries both).
    let ex = recorded("43-subres-patch-status.txt");
    let mut patch = ex.request();
    patch["status"]["conditions"] = ex.response["status"]["conditions"].clone();
    let r = c.patch(&format!("{api}/status"), MERGE, &patch).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&ex.response));
    assert_eq!(generation(&r.body), generation(&after));

    // 44: PUT of the Deployment itself keeps the stored status; the annotation moves the generation.
    let ex = recorded("44-subres-put-main-ignores-status.txt");
    let before = r.body;
    let r = c.put(&api, &retarget(ex.request(), &before)).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&ex.response));
    assert_eq!(generation(&r.body), generation(&before) + 1);

    // 45: a spec change moves the generation.
    let ex = recorded("45-subres-spec-change-bumps-generation.txt");
    let before = r.body;
    let image =
        json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.example/app:9"}]);
    let r = c.patch(&api, JSON_PATCH, &image).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&ex.response));
    assert_eq!(generation(&r.body), generation(&before) + 1);

    // 46: label and status writes keep the generation; /scale and annotations move it.
    let g = generation(&r.body);
    let r = c.patch(&api, MERGE, &json!({"metadata": {"labels": {"step": "label"}}})).await;
    assert_eq!((r.code, generation(&r.body)), (200, g));
    let r = c.patch(&format!("{api}/status"), MERGE, &json!({"status": {"observedGeneration": g}})).await;
    assert_eq!((r.code, generation(&r.body), r.body["status"]["observedGeneration"].as_i64()), (200, g, Some(g)));
    let r = c.patch(&format!("{api}/scale"), MERGE, &json!({"spec": {"replicas": 5}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    let r = c.get(&api).await;
    assert_eq!((r.body["spec"]["replicas"].as_i64(), generation(&r.body)), (Some(5), g + 1));
    let r = c.patch(&api, MERGE, &json!({"metadata": {"annotations": {"note2": "x"}}})).await;
    assert_eq!((r.code, generation(&r.body)), (200, g + 2));
    assert_eq!(r.body["status"]["observedGeneration"], g);
}

#[tokio::test]
async fn pod_status_is_written_only_through_status() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(PODS, &pod("p", json!({"app": "web"}))).await.body;
    let path = format!("{PODS}/p");

    // PUT and PATCH of the pod itself keep the stored status.
    let mut body = created.clone();
    body["status"] = json!({"phase": "Running", "podIP": "10.0.0.9"});
    body["metadata"]["labels"]["app"] = json!("db");
    let r = c.put(&path, &body).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["status"], created["status"]);
    assert_eq!(r.body["metadata"]["labels"]["app"], "db");
    assert_eq!(generation(&r.body), 1, "no spec change");
    let r = c.patch(&path, MERGE, &json!({"status": {"phase": "Failed"}})).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["status"], created["status"]);
    let r = c.patch(&path, JSON_PATCH, &json!([{"op": "replace", "path": "/status/phase", "value": "Failed"}])).await;
    assert_eq!(r.body["status"], created["status"]);

    // PUT and PATCH of /status change the status (and the labels and annotations they carry),
    // never the spec.
    let mut body = r.body.clone();
    body["status"] = json!({"phase": "Running", "podIP": "10.0.0.9"});
    body["spec"]["nodeName"] = json!("elsewhere");
    body["metadata"]["annotations"] = json!({"a": "b"});
    let r = c.put(&format!("{path}/status"), &body).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    // (The QoS class the write leaves out is the stored one, as kube's strategy fills it; the
    // address leads `podIPs`, as kube's conversion keeps them.)
    let status =
        json!({"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.9"}], "qosClass": "BestEffort"});
    assert_eq!(r.body["status"], status);
    assert!(r.body["spec"].get("nodeName").is_none());
    assert_eq!(r.body["metadata"]["annotations"], json!({"a": "b"}));
    let r = c
        .patch(
            &format!("{path}/status"),
            JSON_PATCH,
            &json!([{"op": "add", "path": "/status/hostIP", "value": "1.2.3.4"}]),
        )
        .await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["status"]["hostIP"], "1.2.3.4");
    assert_eq!(generation(&r.body), 1);
    let got = c.get(&format!("{path}/status")).await;
    assert_eq!((got.code, &got.body), (200, &r.body));

    // A spec change moves the generation; a stale resourceVersion on /status is a conflict.
    let image = json!({"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}});
    let r = c.patch(&path, "application/strategic-merge-patch+json", &image).await;
    assert_eq!(generation(&r.body), 2, "{:?}", r.body);
    let mut stale = body.clone();
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let r = c.put(&format!("{path}/status"), &stale).await;
    assert_eq!(r.code, 409, "{:?}", r.body);
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn scale_of_replicasets_and_statefulsets() {
    let s = server().await;
    let c = Client::new(&s);
    for (plural, kind) in [("replicasets", "ReplicaSet"), ("statefulsets", "StatefulSet")] {
        let base = format!("/apis/apps/v1/namespaces/default/{plural}");
        let obj = json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                "template": {"metadata": {"labels": {"app": "w", "tier": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"replicas": 0}});
        let created = c.post(&base, &obj).await;
        assert_eq!(created.code, 201, "{:?}", created.body);
        let r = c
            .put(
                &format!("{base}/w/status"),
                &json!({"metadata": {"name": "w"}, "status": {"replicas": 2, "readyReplicas": 1}}),
            )
            .await;
        assert_eq!(r.code, 200, "{:?}", r.body);
        let scale = c.get(&format!("{base}/w/scale")).await;
        assert_eq!(scale.code, 200);
        assert_eq!(scale.body["spec"], json!({"replicas": 2}));
        assert_eq!(scale.body["status"], json!({"replicas": 2, "selector": "app=w,tier in (a,b)"}));
        assert_eq!(scale.body["metadata"]["resourceVersion"], r.body["metadata"]["resourceVersion"]);

        // PUT with the current resourceVersion, JSON patch, then a stale PUT.
        let mut put = scale.body.clone();
        put["spec"]["replicas"] = json!(6);
        let r = c.put(&format!("{base}/w/scale"), &put).await;
        assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(6)), "{:?}", r.body);
        let r = c
            .patch(
                &format!("{base}/w/scale"),
                JSON_PATCH,
                &json!([{"op": "replace", "path": "/spec/replicas", "value": 1}]),
            )
            .await;
        assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(1)), "{:?}", r.body);
        let stale = c.put(&format!("{base}/w/scale"), &put).await;
        assert_eq!(stale.code, 409, "{:?}", stale.body);
        assert_eq!(
            stale.body["message"],
            format!(
                "Operation cannot be fulfilled on {plural}.apps \"w\": the object has been modified; please apply your changes to the latest version and try again"
            )
        );
        let got = c.get(&format!("{base}/w")).await.body;
        assert_eq!(got["spec"]["replicas"], 1);
        // A StatefulSet's status always has its available replicas (kube writes the zero).
        let mut want = json!({"replicas": 2, "readyReplicas": 1});
        if kind == "StatefulSet" {
            want["availableReplicas"] = json!(0);
        }
        assert_eq!(got["status"], want);
        assert_eq!(generation(&got), 3, "two scale writes");
    }
}

#[tokio::test]
async fn bad_subresource_requests_are_kube_statuses() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let created = api_deployment(&c).await;
    let rv = rv_of(&created);
    let api = format!("{DEPLOYMENTS}/api");
    let not_found = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource", "reason": "NotFound", "details": {}, "code": 404});
    c.post(PODS, &pod("p", json!({}))).await;
    c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "cm"}})).await;
    for path in [
        format!("{api}/bogus"),
        format!("{PODS}/p/scale"),
        "/api/v1/namespaces/default/configmaps/cm/status".to_string(),
        "/api/v1/namespaces/default/configmaps/cm/scale".to_string(),
    ] {
        let r = c.get(&path).await;
        assert_eq!((r.code, &r.body), (404, &not_found), "{path}");
        let r = c.patch(&path, MERGE, &json!({"spec": {"replicas": 1}})).await;
        assert_eq!(r.code, 404, "{path}");
    }
    let missing = c.get(&format!("{DEPLOYMENTS}/nope/scale")).await;
    assert_eq!((missing.code, missing.body["message"].as_str()), (404, Some("deployments.apps \"nope\" not found")));

    // Only GET, PUT and PATCH are served on subresources.
    for path in [format!("{api}/scale"), format!("{api}/status")] {
        let r = c.delete(&path).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (405, Some("MethodNotAllowed")), "{path}");
        let r = c.post(&path, &json!({})).await;
        assert_eq!(r.code, 405, "{path}");
    }

    // Bad Scales: negative replicas, wrong types, wrong kind, another name, not JSON.
    let scale = format!("{api}/scale");
    let r = c.put(&scale, &json!({"metadata": {"name": "api"}, "spec": {"replicas": -1}})).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["message"],
        "Scale.autoscaling \"api\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.replicas");
    let r = c.patch(&scale, MERGE, &json!({"spec": {"replicas": -2}})).await;
    assert_eq!(r.code, 422);
    let r = c.patch(&scale, MERGE, &json!({"spec": {"replicas": "many"}})).await;
    assert_eq!(r.code, 400, "{:?}", r.body);
    assert_eq!(
        r.body["message"],
        "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
    );
    let r = c.put(&scale, &json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "api"}, "spec": {"replicas": 1}})).await;
    assert_eq!(r.code, 400, "{:?}", r.body);
    let r = c.put(&scale, &json!({"metadata": {"name": "other"}, "spec": {"replicas": 1}})).await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "the name of the object (other) does not match the name on the URL (api)");
    let r = c.send_raw(http::Method::PUT, &scale, b"{not json".to_vec(), "application/json").await;
    assert_eq!(r.code, 400);
    let r = c.patch(&scale, "application/json", &json!({"spec": {"replicas": 1}})).await;
    assert_eq!(r.code, 415);
    let r = c.patch(&scale, JSON_PATCH, &json!([{"op": "test", "path": "/spec/replicas", "value": 7}])).await;
    assert_eq!(r.code, 422);
    let r = c.patch(&format!("{api}/status"), MERGE, &json!({"metadata": {"name": "other"}})).await;
    assert_eq!(r.code, 400);

    // Nothing was written.
    let after = c.get(&api).await.body;
    assert_eq!(rv_of(&after), rv);
    assert_eq!(after, created);
}

#[tokio::test]
async fn discovery_lists_the_subresources() {
    let s = server().await;
    let c = Client::new(&s);
    let apps = c.get("/apis/apps/v1").await.body;
    let names: Vec<&str> = apps["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status"
        ]
    );
    let find =
        |doc: &Value, name: &str| doc["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned();
    assert_eq!(
        find(&apps, "statefulsets/scale").unwrap(),
        json!({"name": "statefulsets/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
               "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
    );
    assert_eq!(
        find(&apps, "deployments/status").unwrap(),
        json!({"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment",
               "verbs": ["get", "patch", "update"]})
    );
    let core = c.get("/api/v1").await.body;
    for with in ["pods/status", "namespaces/status", "services/status", "nodes/status"] {
        assert!(find(&core, with).is_some(), "{with}");
    }
    for without in ["configmaps/status", "secrets/status", "events/status", "pods/scale"] {
        assert!(find(&core, without).is_none(), "{without}");
    }
}

#[tokio::test]
async fn custom_resources_declare_their_subresources() {
    let scale = ScaleSubresource {
        spec_replicas_path: ".spec.size".into(),
        status_replicas_path: ".status.size".into(),
        label_selector_path: Some(".status.selector".into()),
        default_replicas: 0,
    };
    let s = informer_apiserver::testing::builder()
        .register(
            ResourceInfo::new("demo.example.org", "v1", "gadgets", "Gadget", true)
                .with_status_subresource()
                .with_scale_subresource(scale),
        )
        .register(ResourceInfo::new("demo.example.org", "v1", "plain", "Plain", true))
        .start()
        .await
        .unwrap();
    let c = Client::new(&s);
    let base = "/apis/demo.example.org/v1/namespaces/default";
    let r = c.post(&format!("{base}/gadgets"), &json!({"metadata": {"name": "g"}, "spec": {"size": 2}})).await;
    assert_eq!(r.code, 201);
    let r =
        c.patch(&format!("{base}/gadgets/g/status"), MERGE, &json!({"status": {"size": 2, "selector": "app=g"}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    let r = c.patch(&format!("{base}/gadgets/g"), MERGE, &json!({"status": {"size": 9}})).await;
    assert_eq!(r.body["status"], json!({"size": 2, "selector": "app=g"}));
    let r = c.patch(&format!("{base}/gadgets/g/scale"), MERGE, &json!({"spec": {"replicas": 3}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["spec"], json!({"replicas": 3}));
    assert_eq!(r.body["status"], json!({"replicas": 2, "selector": "app=g"}));
    let g = c.get(&format!("{base}/gadgets/g")).await.body;
    assert_eq!((g["spec"]["size"].as_i64(), generation(&g)), (Some(3), 2));

    // Without a status subresource, status is an ordinary field and there is no /status.
    c.post(&format!("{base}/plain"), &json!({"metadata": {"name": "p"}})).await;
    let r = c.patch(&format!("{base}/plain/p"), MERGE, &json!({"status": {"x": 1}})).await;
    assert_eq!(r.body["status"], json!({"x": 1}));
    assert_eq!(c.get(&format!("{base}/plain/p/status")).await.code, 404);
    let d = c.get("/apis/demo.example.org/v1").await.body;
    let names: Vec<&str> = d["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gadgets", "gadgets/status", "gadgets/scale", "plain"]);
}

#[tokio::test]
async fn replication_controllers_scale_as_kube_s_do() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let base = "/api/v1/namespaces/default/replicationcontrollers";
    let rc = json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {"labels": {"app": "web", "tier": "front"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(c.post(base, &rc).await.code, 201);
    let scale = c.get(&format!("{base}/web/scale")).await;
    assert_eq!(scale.code, 200, "{}", scale.body);
    assert_eq!((&scale.body["kind"], &scale.body["apiVersion"]), (&json!("Scale"), &json!("autoscaling/v1")));
    assert_eq!(scale.body["spec"], json!({"replicas": 1}));
    assert_eq!(scale.body["status"], json!({"replicas": 0, "selector": "app=web,tier=front"}));
    // kubectl scale writes the subresource.
    let dir = tempdir("kubectl-scale-rc");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = kubectl_versions().last().cloned().unwrap();
    let (ok, out, err) =
        kubectl_bin(&bin, &kc, &dir.join("cache"), &["scale", "rc", "web", "--replicas=3", "-n", "default"]).await;
    assert!(ok, "{out}{err}");
    assert_eq!(c.get(&format!("{base}/web")).await.body["spec"]["replicas"], 3);
}

#[tokio::test]
async fn status_writes_take_the_metadata_kubes_status_strategies_take() {
    let s = server().await;
    let c = Client::new(&s);
    // A pod's labels and annotations come with a /status write; its owners and deletion time
    // do not.
    let owner = c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "owner"}})).await.body;
    let mut body = pod("p", json!({"app": "web"}));
    body["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]);
    let created = c.post(PODS, &body).await.body;
    let mut body = created.clone();
    body["metadata"]["labels"] = json!({"app": "db"});
    body["metadata"]["annotations"] = json!({"seen": "yes"});
    body["metadata"]["ownerReferences"] = json!([]);
    body["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    body["status"]["phase"] = json!("Running");
    body["status"].as_object_mut().unwrap().remove("qosClass");
    let r = c.put(&format!("{PODS}/p/status"), &body).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(
        (&r.body["metadata"]["labels"], &r.body["metadata"]["annotations"]),
        (&json!({"app": "db"}), &json!({"seen": "yes"}))
    );
    assert_eq!(r.body["metadata"]["ownerReferences"], created["metadata"]["ownerReferences"]);
    assert!(r.body["metadata"].get("deletionTimestamp").is_none(), "{:?}", r.body);
    assert_eq!((&r.body["status"]["phase"], &r.body["status"]["qosClass"]), (&json!("Running"), &json!("BestEffort")));
    assert_eq!(generation(&r.body), 1);

    // A Deployment keeps its labels; its annotations come with the write, owned by its writer.
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(c.post(deployments, &d).await.code, 201);
    let patch =
        json!({"metadata": {"labels": {"app": "other"}, "annotations": {"note": "n"}}, "status": {"replicas": 0}});
    let r = c.patch(&format!("{deployments}/d/status?fieldManager=status-writer"), MERGE, &patch).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(
        (&r.body["metadata"]["labels"], &r.body["metadata"]["annotations"]),
        (&json!({"app": "d"}), &json!({"note": "n"}))
    );
    let entries = r.body["metadata"]["managedFields"].as_array().unwrap();
    let writer = entries.iter().find(|e| e["manager"] == "status-writer").expect("the writer's entry");
    assert_eq!(writer["subresource"], "status");
    assert!(writer["fieldsV1"]["f:metadata"]["f:annotations"].get("f:note").is_some(), "{writer}");
    assert!(writer["fieldsV1"]["f:metadata"].get("f:labels").is_none(), "{writer}");
    assert_eq!(generation(&r.body), 1, "annotations written through /status do not move the generation");

    // A ReplicaSet takes them all; a terminating one cannot gain a finalizer through its status,
    // and losing the last one there deletes it.
    let replicasets = "/apis/apps/v1/namespaces/default/replicasets";
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "rs", "labels": {"app": "rs"}, "finalizers": ["example.com/hold"]},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "rs"}}, "template": {"metadata": {"labels": {"app": "rs"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(c.post(replicasets, &rs).await.code, 201);
    let r = c.patch(&format!("{replicasets}/rs/status"), MERGE, &json!({"metadata": {"labels": {"tier": "x"}}})).await;
    assert_eq!((r.code, &r.body["metadata"]["labels"]), (200, &json!({"app": "rs", "tier": "x"})));
    let r =
        c.patch(&format!("{replicasets}/rs/status"), MERGE, &json!({"metadata": {"labels": {"bad key": "x"}}})).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.labels");
    assert_eq!(c.delete(&format!("{replicasets}/rs")).await.code, 200);
    let more = json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}});
    let r = c.patch(&format!("{replicasets}/rs/status"), MERGE, &more).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("no new finalizers can be added if the object is being deleted"),
        "{:?}",
        r.body
    );
    let r = c.patch(&format!("{replicasets}/rs/status"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(c.get(&format!("{replicasets}/rs")).await.code, 404);

    // A namespace keeps its name label; a volume's phase change gets a new transition time.
    assert_eq!(c.post("/api/v1/namespaces", &json!({"metadata": {"name": "st"}})).await.code, 201);
    let r = c.patch("/api/v1/namespaces/st/status", MERGE, &json!({"metadata": {"labels": null}})).await;
    assert_eq!((r.code, &r.body["metadata"]["labels"]), (200, &json!({"kubernetes.io/metadata.name": "st"})));
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv"}}});
    assert_eq!(c.post("/api/v1/persistentvolumes", &pv).await.code, 201);
    let long_ago = json!({"status": {"lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
    let r = c.patch("/api/v1/persistentvolumes/pv/status", MERGE, &long_ago).await;
    assert_eq!((r.code, &r.body["status"]["lastPhaseTransitionTime"]), (200, &json!("2020-01-01T00:00:00Z")));
    let r = c.patch("/api/v1/persistentvolumes/pv/status", MERGE, &json!({"status": {"phase": "Available"}})).await;
    assert_eq!(r.body["status"]["phase"], "Available");
    let moved = r.body["status"]["lastPhaseTransitionTime"].as_str().unwrap();
    assert!(moved > "2020-01-01T00:00:00Z" && moved.ends_with('Z'), "{moved}");

    // kubectl's `patch --subresource=status`.
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let bin = kubectl_versions().last().unwrap().clone();
    let dir = tempdir("kubectl-status");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let args = [
        "patch",
        "deployment",
        "d",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"metadata":{"annotations":{"by":"kubectl"}},"status":{"observedGeneration":1}}"#,
    ];
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &args).await;
    assert!(ok, "{bin}: {out}{err}");
    let got = c.get(&format!("{deployments}/d")).await.body;
    assert_eq!(
        (&got["metadata"]["annotations"], &got["status"]["observedGeneration"]),
        (&json!({"by": "kubectl", "note": "n"}), &json!(1))
    );
}

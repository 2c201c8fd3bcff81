//! ResourceQuotas as a cluster enforces them, over HTTP: the quota controller gives a quota its
//! `status` (`hard` from the spec, `used` counted), every create a quota tracks is charged to
//! `status.used` before it is stored and refused with kube's 403 past a limit, deletions and
//! finished pods are given back by the controller's recount, a dry run is judged and charges
//! nothing, and quotas are judged as kube judges them. kubectl, the Python client and kube-rs
//! see the same.

mod common;

use common::*;
use serde_json::{Value, json};

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";
const PODS: &str = "/api/v1/namespaces/default/pods";
const MERGE: &str = "application/merge-patch+json";

fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

fn pod_asking(name: &str, cpu: &str) -> Value {
    let mut p = pod(name, json!({}));
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": cpu, "memory": "64Mi"}});
    p
}

/// Creates `body` as a quota and waits for the controller to give it a status.
async fn counted_quota(c: &Client, body: Value) -> Value {
    let name = body["metadata"]["name"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{QUOTAS}?watch=true&fieldSelector=metadata.name={name}")).await;
    let r = c.post(QUOTAS, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"], json!({}), "a quota is created without status");
    until(&mut w, "the quota's status", |e| e["object"]["status"].get("used").is_some()).await["object"].clone()
}

/// The quota's `status.used` once the controller has recounted it to `want`.
async fn used_becomes(c: &Client, name: &str, want: Value) {
    let mut w = c.watch(&format!("{QUOTAS}?watch=true&fieldSelector=metadata.name={name}")).await;
    until(&mut w, &format!("used {want}"), |e| e["object"]["status"]["used"] == want).await;
}

#[tokio::test]
async fn pods_are_charged_refused_past_the_limit_and_given_back() {
    let s = server().await;
    let c = Client::new(&s);
    let q = counted_quota(
        &c,
        quota("compute", json!({"hard": {"pods": "2", "requests.cpu": "1000m", "requests.memory": "1Gi"}})),
    )
    .await;
    assert_eq!(
        q["status"],
        json!({"hard": {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"},
            "used": {"pods": "0", "requests.cpu": "0", "requests.memory": "0"}})
    );
    let managers = q["metadata"]["managedFields"].as_array().unwrap();
    assert!(managers.iter().any(|m| m["manager"] == "kube-controller-manager" && m["subresource"] == "status"), "{q}");

    // Each create is charged before it is answered.
    assert_eq!(c.post(PODS, &pod_asking("a", "500m")).await.code, 201);
    let r = c.post(PODS, &pod_asking("b", "250m")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let used = c.get(&format!("{QUOTAS}/compute")).await.body["status"]["used"].clone();
    assert_eq!(used, json!({"pods": "2", "requests.cpu": "750m", "requests.memory": "128Mi"}));

    // Past a limit: kube's 403 names what was asked, used and allowed, and nothing is stored.
    let r = c.post(PODS, &pod_asking("c", "100m")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"c\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2",
            "reason": "Forbidden", "details": {"name": "c", "kind": "pods"}, "code": 403})
    );
    assert_eq!(c.get(&format!("{PODS}/c")).await.code, 404);
    // A pod that does not say what the quota limits.
    let r = c.post(PODS, &pod("d", json!({}))).await;
    assert_eq!(
        (r.code, r.body["message"].as_str().unwrap()),
        (
            403,
            "pods \"d\" is forbidden: failed quota: compute: must specify requests.cpu for: c; requests.memory for: c"
        ),
        "{}",
        r.body
    );

    // A deleted pod is given back by the controller's recount; a finished one keeps only its count.
    assert_eq!(c.delete(&format!("{PODS}/b?gracePeriodSeconds=0")).await.code, 200);
    used_becomes(&c, "compute", json!({"pods": "1", "requests.cpu": "500m", "requests.memory": "64Mi"})).await;
    let mut done = c.get(&format!("{PODS}/a")).await.body;
    done["status"]["phase"] = json!("Succeeded");
    assert_eq!(c.put(&format!("{PODS}/a/status"), &done).await.code, 200);
    used_becomes(&c, "compute", json!({"pods": "0", "requests.cpu": "0", "requests.memory": "0"})).await;

    // A dry run is judged alike and charges nothing.
    let r = c.post(&format!("{PODS}?dryRun=All"), &pod_asking("e", "2")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("requested: requests.cpu=2, used: requests.cpu=0"));
    let r = c.post(&format!("{PODS}?dryRun=All"), &pod_asking("e", "1")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.get(&format!("{QUOTAS}/compute")).await.body["status"]["used"]["requests.cpu"], "0");

    // kube-rs reads the refusal as kube's.
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::default_namespaced(kube_client(&s).await);
    let big: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod_asking("big", "2")).unwrap();
    let kube::Error::Api(e) = api.create(&Default::default(), &big).await.unwrap_err() else { panic!() };
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "pods \"big\" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=0, \
         limited: requests.cpu=1"
    );
}

#[tokio::test]
async fn object_counts_services_and_scopes() {
    let s = server().await;
    let c = Client::new(&s);
    // (A cluster's namespaces hold a `kube-root-ca.crt` ConfigMap; a new one here holds none.)
    create_namespaces(&s, &["counted"]).await.unwrap();
    let quotas = "/api/v1/namespaces/counted/resourcequotas";
    let mut w = c.watch(&format!("{quotas}?watch=true")).await;
    let body =
        quota("counts", json!({"hard": {"configmaps": "1", "count/configmaps": "1", "services.nodeports": "1"}}));
    assert_eq!(c.post(quotas, &body).await.code, 201);
    until(&mut w, "the quota's status", |e| e["object"]["status"].get("used").is_some()).await;
    let cms = "/api/v1/namespaces/counted/configmaps";
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "one"}})).await.code, 201);
    let r = c.post(cms, &json!({"metadata": {"generateName": "two-"}})).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let msg = r.body["message"].as_str().unwrap();
    assert!(msg.starts_with("configmaps \"two-"), "{msg}");
    assert!(
        msg.ends_with(
            "is forbidden: exceeded quota: counts, requested: configmaps=1,count/configmaps=1, used: \
             configmaps=1,count/configmaps=1, limited: configmaps=1,count/configmaps=1"
        ),
        "{msg}"
    );

    // A Service is charged its node ports when it is created and when it takes more.
    let svcs = "/api/v1/namespaces/counted/services";
    let svc =
        json!({"metadata": {"name": "web"}, "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}});
    assert_eq!(c.post(svcs, &svc).await.code, 201);
    let r = c.patch(&format!("{svcs}/web"), MERGE, &json!({"spec": {"type": "NodePort"}})).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "services \"web\" is forbidden: exceeded quota: counts, requested: services.nodeports=2, used: \
         services.nodeports=0, limited: services.nodeports=1"
    );
    assert_eq!(c.get(&format!("{svcs}/web")).await.body["spec"]["type"], "ClusterIP");

    // A scoped quota counts only the pods in its scopes, and never other kinds.
    counted_quota(&c, quota("best-effort", json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}))).await;
    let r = c.post(PODS, &pod_asking("sized", "1")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.post(PODS, &pod("free", json!({}))).await.code, 201);
    let r = c.post(PODS, &pod("free2", json!({}))).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("exceeded quota: best-effort, requested: pods=1"));
    let priority = quota(
        "gold",
        json!({"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["gold"]}]}}),
    );
    counted_quota(&c, priority).await;
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "x"}})).await.code, 403, "the count quota still applies");
}

#[tokio::test]
async fn quotas_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(QUOTAS, &quota("bad", json!({"hard": {"pods": "1.5", "storage": "1"}, "scopes": ["Nope"]}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ResourceQuota \"bad\" is invalid: [spec.hard[pods]: Invalid value: \"1500m\": must be an integer, \
         spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota, spec.scopes: \
         Invalid value: [\"Nope\"]: unsupported scope]"
    );
    // Valid, with a request above its limit: kube's warning.
    let r = c
        .post(
            QUOTAS,
            &quota(
                "over",
                json!({"hard": {"requests.cpu": "2", "limits.cpu": "1", "memory": "2Gi",
        "limits.memory": "1Gi"}}),
            ),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(
        warnings,
        [
            "299 - \"ResourceQuota requests.cpu (2) should be less than limits.cpu (1)\"",
            "299 - \"ResourceQuota memory (2Gi) should be less than limits.memory (1Gi)\""
        ]
    );
    counted_quota(&c, quota("q", json!({"hard": {"pods": "3"}, "scopes": ["NotTerminating"]}))).await;
    // A status write needs the version it replaces.
    let mut status = c.get(&format!("{QUOTAS}/q")).await.body;
    status["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let r = c.put(&format!("{QUOTAS}/q/status"), &status).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["message"], "ResourceQuota \"q\" is invalid: resourceVersion: Required value");
    let r = c.patch(&format!("{QUOTAS}/q"), MERGE, &json!({"spec": {"scopes": ["Terminating"]}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ResourceQuota \"q\" is invalid: spec.scopes: Invalid value: [\"Terminating\"]: field is immutable"
    );
    // A raised limit is copied to the status by the controller.
    let mut w = c.watch(&format!("{QUOTAS}?watch=true&fieldSelector=metadata.name=q")).await;
    let r = c.patch(&format!("{QUOTAS}/q"), MERGE, &json!({"spec": {"hard": {"pods": "5"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "the new limit", |e| e["object"]["status"]["hard"]["pods"] == "5").await;
}

#[tokio::test]
async fn kubectl_and_the_python_client_read_quotas() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("resource-quotas");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let bins = kubectl_versions();
    let bin = bins.last().unwrap();
    let mut w = c.watch(&format!("{QUOTAS}?watch=true&fieldSelector=metadata.name=small")).await;
    let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "quota", "small", "--hard=pods=1,secrets=4"]).await;
    assert!(ok, "{out}{err}");
    until(&mut w, "the quota's status", |e| e["object"]["status"].get("used").is_some()).await;
    let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["run", "one", "--image=nginx"]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["run", "two", "--image=nginx"]).await;
    assert!(!ok, "{out}");
    assert!(
        err.contains(
            "pods \"two\" is forbidden: exceeded quota: small, requested: pods=1, used: pods=1, limited: pods=1"
        ),
        "{err}"
    );
    // kube's table: what is used of each limit, requests and limits apart.
    let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "quota"]).await;
    assert!(ok, "{err}");
    let lines: Vec<Vec<&str>> =
        out.lines().map(|l| l.split("  ").filter(|c| !c.is_empty()).map(str::trim).collect()).collect();
    assert_eq!(lines[0], ["NAME", "REQUEST", "LIMIT", "AGE"], "{out}");
    assert_eq!((lines[1][0], lines[1][1]), ("small", "pods: 1/1, secrets: 0/4"), "{out}");
    let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["describe", "quota", "small"]).await;
    assert!(ok, "{err}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.contains(&vec!["pods", "1", "1"]), "{out}");
    assert!(rows.contains(&vec!["secrets", "0", "4"]), "{out}");

    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
q = client.CoreV1Api().read_namespaced_resource_quota("small", "default")
print(json.dumps({"hard": q.status.hard, "used": q.status.used}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line, json!({"hard": {"pods": "1", "secrets": "4"}, "used": {"pods": "1", "secrets": "0"}}));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn concurrent_creates_never_pass_the_limit() {
    let s = server().await;
    let c = Client::new(&s);
    counted_quota(&c, quota("seven", json!({"hard": {"pods": "7"}}))).await;
    // Twenty creates at once, while the controller recounts after each one that lands.
    let creates = (0..20).map(|i| {
        let c = c.clone();
        async move { c.post(PODS, &pod(&format!("p{i}"), json!({}))).await }
    });
    let answers = futures_util::future::join_all(creates).await;
    let created = answers.iter().filter(|r| r.code == 201).count();
    assert_eq!(created, 7, "{:?}", answers.iter().map(|r| r.code).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.code != 201) {
        assert_eq!(r.code, 403, "{}", r.body);
        assert!(r.body["message"].as_str().unwrap().ends_with("used: pods=7, limited: pods=7"), "{}", r.body);
    }
    assert_eq!(c.get(PODS).await.body["items"].as_array().unwrap().len(), 7);
    assert_eq!(c.get(&format!("{QUOTAS}/seven")).await.body["status"]["used"], json!({"pods": "7"}));
}

#[tokio::test]
async fn custom_resources_are_counted_once_their_definition_is_served() {
    let s = server().await;
    let c = Client::new(&s);
    let mut w = c.watch(&format!("{QUOTAS}?watch=true")).await;
    let r = c.post(QUOTAS, &quota("crs", json!({"hard": {"count/gizmos.example.com": "1"}}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Nothing counts gizmos yet: the status names the limit and no usage.
    let e = until(&mut w, "the quota's status", |e| e["object"]["status"].get("hard").is_some()).await;
    assert_eq!(e["object"]["status"], json!({"hard": {"count/gizmos.example.com": "1"}}));

    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(c.post(crds, &crd).await.code, 201);
    // Once served, the controller counts them.
    until(&mut w, "gizmos counted", |e| e["object"]["status"]["used"] == json!({"count/gizmos.example.com": "0"}))
        .await;
    let gizmos = "/apis/example.com/v1/namespaces/default/gizmos";
    let gizmo = |name: &str| json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}});
    let r = c.post(gizmos, &gizmo("one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c.post(gizmos, &gizmo("two")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "gizmos.example.com \"two\" is forbidden: exceeded quota: crs, requested: count/gizmos.example.com=1, \
         used: count/gizmos.example.com=1, limited: count/gizmos.example.com=1"
    );
    assert_eq!(r.body["details"], json!({"name": "two", "group": "example.com", "kind": "gizmos"}));
}

#[tokio::test]
async fn limit_range_defaults_satisfy_a_compute_quota() {
    let s = server().await;
    let c = Client::new(&s);
    let ranges = "/api/v1/namespaces/default/limitranges";
    let range = json!({"metadata": {"name": "defaults"}, "spec": {"limits": [{"type": "Container",
        "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "100m", "memory": "64Mi"}}]}});
    assert_eq!(c.post(ranges, &range).await.code, 201);
    counted_quota(
        &c,
        quota("compute", json!({"hard": {"requests.cpu": "250m", "limits.cpu": "1", "requests.memory": "1Gi"}})),
    )
    .await;
    // LimitRanger runs first: the pod is charged the defaults it was given.
    let r = c.post(PODS, &pod("plain", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let used = c.get(&format!("{QUOTAS}/compute")).await.body["status"]["used"].clone();
    assert_eq!(used, json!({"limits.cpu": "500m", "requests.cpu": "100m", "requests.memory": "64Mi"}));
    let r = c.post(PODS, &pod("second", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c.post(PODS, &pod("third", json!({}))).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "pods \"third\" is forbidden: exceeded quota: compute, requested: limits.cpu=500m,requests.cpu=100m, \
         used: limits.cpu=1,requests.cpu=200m, limited: limits.cpu=1,requests.cpu=250m"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_etcd_share_a_quota() {
    use informer_apiserver::ApiServer;
    use informer_apiserver::etcd_process::EtcdProcess;
    let etcd = EtcdProcess::start().unwrap();
    let server = || ApiServer::builder().etcd(vec![etcd.url()]).etcd_prefix("/replicas").start();
    let (a, b) = (server().await.unwrap(), server().await.unwrap());
    let (ca, cb) = (Client::new(&a), Client::new(&b));
    counted_quota(&ca, quota("five", json!({"hard": {"pods": "5"}}))).await;
    // Both servers' controllers count the quota; creates through both at once.
    let mut w = cb.watch(&format!("{QUOTAS}?watch=true&fieldSelector=metadata.name=five")).await;
    until(&mut w, "the second server's view", |e| e["object"]["status"]["used"]["pods"] == "0").await;
    let creates = (0..16).map(|i| {
        let c = if i % 2 == 0 { ca.clone() } else { cb.clone() };
        async move { c.post(PODS, &pod(&format!("p{i}"), json!({}))).await }
    });
    let answers = futures_util::future::join_all(creates).await;
    let codes: Vec<u16> = answers.iter().map(|r| r.code).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 5, "{codes:?}");
    // Past the limit: kube's 403, or its 409 when the quota kept changing under four attempts.
    for r in answers.iter().filter(|r| r.code != 201) {
        assert!(r.code == 403 || r.code == 409 && r.body["details"]["kind"] == "resourcequotas", "{}", r.body);
    }
    assert_eq!(cb.get(PODS).await.body["items"].as_array().unwrap().len(), 5);
    // A deletion through one server is given back, whichever controller counts it.
    let first = answers.iter().find(|r| r.code == 201).unwrap().body["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(ca.delete(&format!("{PODS}/{first}?gracePeriodSeconds=0")).await.code, 200);
    used_becomes(&cb, "five", json!({"pods": "4"})).await;
    assert_eq!(cb.post(PODS, &pod("late", json!({}))).await.code, 201);
}

//! apiregistration.k8s.io/v1 APIServices over HTTP: the group listed first, the APIServices of
//! the built-in group versions registered at start-up and those of CustomResourceDefinitions
//! while they serve a version, available as local ones; APIServices backed by a service defaulted,
//! judged and printed as kube-apiserver v1.35 does, their status written through `status`.

mod common;

use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use common::*;
use serde_json::{Value, json};

const SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn the_served_group_versions_are_registered_as_local_api_services() {
    let s = server().await;
    let c = Client::new(&s);
    let apis = c.get("/apis").await;
    assert_eq!(apis.body["groups"][0]["name"], "apiregistration.k8s.io");

    let list = c.get(SERVICES).await;
    assert_eq!(list.code, 200, "{}", list.body);
    let mut listed = names(&list.body);
    listed.sort();
    let mut expected: Vec<String> = [
        "v1.",
        "v1.admissionregistration.k8s.io",
        "v1.apiextensions.k8s.io",
        "v1.apps",
        "v1.authentication.k8s.io",
        "v1.authorization.k8s.io",
        "v1.autoscaling",
        "v2.autoscaling",
        "v1.batch",
        "v1.certificates.k8s.io",
        "v1.coordination.k8s.io",
        "v1.discovery.k8s.io",
        "v1.events.k8s.io",
        "v1.flowcontrol.apiserver.k8s.io",
        "v1.networking.k8s.io",
        "v1.node.k8s.io",
        "v1.policy",
        "v1.rbac.authorization.k8s.io",
        "v1.resource.k8s.io",
        "v1.scheduling.k8s.io",
        "v1.storage.k8s.io",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    expected.sort();
    assert_eq!(listed, expected);

    let apps = c.get(&format!("{SERVICES}/v1.apps")).await.body;
    assert_eq!(apps["metadata"]["labels"], json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"}));
    assert_eq!(apps["metadata"].get("generation"), None);
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    let condition = &apps["status"]["conditions"][0];
    assert_eq!(
        (&condition["type"], &condition["status"], &condition["reason"], &condition["message"]),
        (&json!("Available"), &json!("True"), &json!("Local"), &json!("Local APIServices are always available"))
    );
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    let core = c.get(&format!("{SERVICES}/v1.")).await.body;
    assert_eq!(core["spec"], json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}));

    // A local APIService marked unavailable is made available again, as kube's local
    // availability controller does; relabelled, a built-in one is kept.
    let mut relabelled = apps.clone();
    relabelled["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"] = json!("true");
    let relabelled = c.put(&format!("{SERVICES}/v1.apps"), &relabelled).await;
    assert_eq!(relabelled.code, 200, "{}", relabelled.body);
    let mut broken = relabelled.body.clone();
    broken["status"]["conditions"][0]["status"] = json!("False");
    broken["status"]["conditions"][0]["reason"] = json!("Broken");
    let st = c.put(&format!("{SERVICES}/v1.apps/status"), &broken).await;
    assert_eq!((st.code, &st.body["status"]["conditions"][0]["reason"]), (200, &json!("Broken")));
    let from = rv_of(&st.body);
    let mut w =
        c.watch(&format!("{SERVICES}?watch=true&resourceVersion={from}&fieldSelector=metadata.name%3Dv1.apps")).await;
    let restored =
        until(&mut w, "v1.apps available again", |e| e["object"]["status"]["conditions"][0]["reason"] == "Local").await;
    assert_eq!(restored["type"], "MODIFIED");
    assert_eq!(restored["object"]["status"]["conditions"][0]["status"], "True");
    let kept = c.get(&format!("{SERVICES}/v1.apps")).await;
    assert_eq!(
        (kept.code, &kept.body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"]),
        (200, &json!("true"))
    );
}

#[tokio::test]
async fn custom_resource_group_versions_are_registered_while_served() {
    let s = server().await;
    let c = Client::new(&s);
    let list = c.get(SERVICES).await;
    let rv = list.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{SERVICES}?watch=true&resourceVersion={rv}")).await;
    let crd = crd_of("widget", "Widget", "Namespaced", json!({"type": "object"}));
    define(&c, &crd).await;
    let added = until(&mut w, "v1.example.com", |e| {
        e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "v1.example.com"
    })
    .await;
    let object = &added["object"];
    assert_eq!(object["metadata"]["labels"], json!({"kube-aggregator.kubernetes.io/automanaged": "true"}));
    assert_eq!(
        object["spec"],
        json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(object["status"]["conditions"][0]["reason"], "Local");
    let gone = c.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").await;
    assert_eq!(gone.code, 200, "{}", gone.body);
    until(&mut w, "v1.example.com deleted", |e| {
        e["type"] == "DELETED" && e["object"]["metadata"]["name"] == "v1.example.com"
    })
    .await;
    // The built-in ones stay.
    assert_eq!(c.get(&format!("{SERVICES}/v1.apps")).await.code, 200);
}

#[tokio::test]
async fn service_backed_api_services_are_defaulted_judged_and_written_as_in_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let metrics = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
            "groupPriorityMinimum": 100, "versionPriority": 100,
            "service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Passed"}]}});
    let r = c.post(SERVICES, &metrics).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["service"], json!({"namespace": "kube-system", "name": "metrics-server", "port": 443}));
    // A create starts without conditions: no check has run.
    assert_eq!(r.body["status"], json!({}));

    // `status` takes the status and nothing else.
    let mut reported = r.body.clone();
    reported["status"] = json!({"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound",
        "message": "service/metrics-server in \"kube-system\" is not present", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    reported["metadata"]["labels"] = json!({"changed": "yes"});
    reported["spec"]["versionPriority"] = json!(5);
    let st = c.put(&format!("{SERVICES}/v1beta1.metrics.k8s.io/status"), &reported).await;
    assert_eq!(st.code, 200, "{}", st.body);
    assert_eq!(st.body["status"]["conditions"][0]["reason"], "ServiceNotFound");
    assert_eq!(
        (&st.body["metadata"]["labels"]["k8s-app"], &st.body["spec"]["versionPriority"]),
        (&json!("metrics-server"), &json!(100))
    );

    let misnamed = c
        .post(
            SERVICES,
            &json!({"metadata": {"name": "metrics"}, "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                "groupPriorityMinimum": 100, "versionPriority": 100,
                "service": {"namespace": "kube-system", "name": "metrics-server", "port": 70000}}}),
        )
        .await;
    assert_eq!(misnamed.code, 422, "{}", misnamed.body);
    assert_eq!(
        misnamed.body["message"],
        "APIService.apiregistration.k8s.io \"metrics\" is invalid: [metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\", spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive]"
    );

    let dir = tempdir("kubectl-apiservices");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = kubectl_versions().last().unwrap().clone();
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &["get", "apiservices"]).await;
    assert!(ok, "{err}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap_or_default();
    assert_eq!(row("v1.apps")[1..3], ["Local", "True"]);
    assert_eq!(row("v1beta1.metrics.k8s.io")[1..4], ["kube-system/metrics-server", "False", "(ServiceNotFound)"]);
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &["get", "api-extensions", "-o", "name"]).await;
    assert!(ok && out.contains("apiservice.apiregistration.k8s.io/v1.apps"), "{out}{err}");
}

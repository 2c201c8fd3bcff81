//! PodDisruptionBudgets as a cluster keeps them, over HTTP: the disruption controller gives a
//! budget the status its pods add up to (pods expected from their controllers' replicas, Ready
//! pods, disruptions allowed), evictions spend it and the controller counts them back, evicted
//! pods that were not deleted and stale `DisruptionTarget` marks expire, and a budget that
//! cannot be judged allows nothing; the controller records kube-controller-manager's Events.
//! kube-rs and kubectl see the same.

mod common;

use common::*;
use serde_json::{Value, json};

const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
const MERGE: &str = "application/merge-patch+json";
const EVENTS: &str = "/api/v1/namespaces/default/events";

/// The Event `reason` about the object `name` once it satisfies `pred` (Events recorded before
/// included).
async fn event_when(c: &Client, name: &str, reason: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let mut w = c.watch(&format!("{EVENTS}?watch=true")).await;
    let found = until(&mut w, reason, |e| {
        let o = &e["object"];
        o["reason"] == reason && o["involvedObject"]["name"] == name && pred(o)
    })
    .await;
    found["object"].clone()
}

/// Creates a pod labelled `app` (controlled by `owner`, if any) and makes it Running and Ready.
async fn ready_pod(c: &Client, name: &str, app: &str, owner: Option<&Value>) {
    let mut p = pod(name, json!({"app": app}));
    if let Some(o) = owner {
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": o["apiVersion"], "kind": o["kind"],
            "name": o["metadata"]["name"], "uid": o["metadata"]["uid"], "controller": true}]);
    }
    let r = c.post(PODS, &p).await;
    assert_eq!(r.code, 201, "{}", r.body);
    set_ready(c, name, true).await;
}

async fn set_ready(c: &Client, name: &str, ready: bool) {
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
    let r = c.patch(&format!("{PODS}/{name}/status"), MERGE, &status).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

fn budget(name: &str, app: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec})
}

/// The budget's status once the controller's last write satisfies `pred`.
async fn status_when(c: &Client, name: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let mut w = c.watch(&format!("{PDBS}?watch=true&fieldSelector=metadata.name={name}")).await;
    until(&mut w, what, |e| pred(&e["object"]["status"])).await["object"]["status"].clone()
}

fn counts(status: &Value) -> (i64, i64, i64, i64) {
    let n = |k: &str| status[k].as_i64().unwrap_or(-1);
    (n("expectedPods"), n("currentHealthy"), n("desiredHealthy"), n("disruptionsAllowed"))
}

fn condition(status: &Value) -> (String, String, String) {
    let c = status["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"));
    let c = c.cloned().unwrap_or_default();
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (s("status"), s("reason"), s("message"))
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

async fn evict(c: &Client, name: &str) -> Resp {
    c.post(&format!("{PODS}/{name}/eviction"), &eviction(name)).await
}

/// A time `secs` seconds from now, as kube writes times.
fn at(secs: i64) -> String {
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[tokio::test]
async fn budgets_count_their_controllers_replicas_and_evictions_spend_them() {
    let s = server().await;
    let c = Client::new(&s);
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()}}});
    let r = c.post("/apis/apps/v1/namespaces/default/replicasets", &rs).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let rs = r.body;
    for name in ["web-0", "web-1", "web-2"] {
        ready_pod(&c, name, "web", Some(&rs)).await;
    }
    let r = c.post(PDBS, &budget("web", "web", json!({"maxUnavailable": 1}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = status_when(&c, "web", "one disruption allowed", |s| s["disruptionsAllowed"] == 1).await;
    assert_eq!(counts(&status), (3, 3, 2, 1));
    assert_eq!(condition(&status), ("True".into(), "SufficientPods".into(), String::new()));
    assert_eq!(status["observedGeneration"], 1);

    // An eviction spends it; the pod goes, and the controller counts the pods that remain.
    let r = evict(&c, "web-0").await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = status_when(&c, "web", "the evicted pod gone", |s| {
        s["currentHealthy"] == 2 && s.get("disruptedPods").is_none()
    })
    .await;
    assert_eq!(counts(&status), (3, 2, 2, 0));
    assert_eq!(condition(&status), ("False".into(), "InsufficientPods".into(), String::new()));
    let r = evict(&c, "web-1").await;
    assert_eq!(r.code, 429, "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "The disruption budget web needs 2 healthy pods and has 2 currently"
    );

    // A pod that stops being Ready is no longer healthy; a new Ready pod is.
    set_ready(&c, "web-1", false).await;
    status_when(&c, "web", "one healthy pod", |s| counts(s) == (3, 1, 2, 0)).await;
    ready_pod(&c, "web-3", "web", Some(&rs)).await;
    set_ready(&c, "web-1", true).await;
    let status = status_when(&c, "web", "three healthy pods", |s| counts(s) == (3, 3, 2, 1)).await;
    assert_eq!(condition(&status).1, "SufficientPods");

    // A new spec is observed: the budget's generation moves, and so does the status.
    let r = c.patch(&format!("{PDBS}/web"), MERGE, &json!({"spec": {"maxUnavailable": "67%"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let status = status_when(&c, "web", "the new spec observed", |s| s["observedGeneration"] == 2).await;
    // 67% of 3 rounds up to 3 unavailable: none need be healthy.
    assert_eq!(counts(&status), (3, 3, 0, 3));
}

#[tokio::test]
async fn pods_without_controllers_and_budgets_that_cannot_be_judged() {
    let s = server().await;
    let c = Client::new(&s);
    // An integer minAvailable counts the pods selected, whoever controls them.
    ready_pod(&c, "bare-0", "bare", None).await;
    ready_pod(&c, "bare-1", "bare", None).await;
    assert_eq!(c.post(PDBS, &budget("bare", "bare", json!({"minAvailable": 1}))).await.code, 201);
    let status = status_when(&c, "bare", "the bare pods counted", |s| s["expectedPods"] == 2).await;
    assert_eq!(counts(&status), (2, 2, 1, 1));
    // A percentage needs the pods' controllers: pods without one count nothing.
    let r = c.patch(&format!("{PDBS}/bare"), MERGE, &json!({"spec": {"minAvailable": "50%"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let status = status_when(&c, "bare", "the percentage observed", |s| s["observedGeneration"] == 2).await;
    assert_eq!(counts(&status), (0, 2, 0, 0));
    let event = event_when(&c, "bare", "UnmanagedPods", |_| true).await;
    assert_eq!(event["type"], "Warning");
    assert_eq!(
        event["message"],
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: bare,},\
         MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB \
         cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \
         \".spec.minAvailable\" field of the PDB to an integer value."
    );

    // A controller without a scale subresource cannot be counted: the budget allows nothing,
    // and its generation is not observed, so evictions are told to come back.
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec()}}});
    let r = c.post("/apis/apps/v1/namespaces/default/daemonsets", &ds).await;
    assert_eq!(r.code, 201, "{}", r.body);
    ready_pod(&c, "agent-0", "agent", Some(&r.body)).await;
    assert_eq!(c.post(PDBS, &budget("agent", "agent", json!({"maxUnavailable": 1}))).await.code, 201);
    let status = status_when(&c, "agent", "the failed sync", |s| condition(s).1 == "SyncFailed").await;
    assert_eq!(condition(&status).2, "daemonsets.apps does not implement the scale subresource");
    let event = event_when(&c, "agent", "CalculateExpectedPodCountFailed", |_| true).await;
    assert_eq!(
        (event["type"].as_str(), event["message"].as_str()),
        (
            Some("Warning"),
            Some(
                "Failed to calculate the number of expected pods: daemonsets.apps does not implement the scale subresource"
            )
        )
    );
    assert_eq!((status["disruptionsAllowed"].as_i64(), status.get("observedGeneration")), (Some(0), None));
    let r = evict(&c, "agent-0").await;
    assert_eq!(r.code, 429, "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "The disruption budget agent is still being processed by the server."
    );
    // A controller that is gone (where no garbage collector deletes its pods): no controller
    // is found for the pod.
    let s = informer_apiserver::testing::builder().garbage_collector(false).start().await.expect("start");
    let c = Client::new(&s);
    let ghost = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "uid": "0a0a"}});
    ready_pod(&c, "db-0", "db", Some(&ghost)).await;
    assert_eq!(c.post(PDBS, &budget("db", "db", json!({"maxUnavailable": "10%"}))).await.code, 201);
    let status = status_when(&c, "db", "the failed sync", |s| condition(s).1 == "SyncFailed").await;
    assert_eq!(condition(&status).2, "found no controllers for pod \"db-0\"");
}

#[tokio::test]
async fn the_controller_records_kubes_events_and_counts_their_repeats() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(PDBS, &budget("empty", "none", json!({"minAvailable": 1}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let uid = r.body["metadata"]["uid"].clone();
    let event = event_when(&c, "empty", "NoPods", |_| true).await;
    assert_eq!(
        (&event["type"], &event["message"], &event["source"], &event["reportingComponent"]),
        (
            &json!("Normal"),
            &json!("No matching pods found"),
            &json!({"component": "controllermanager"}),
            &json!("controllermanager")
        )
    );
    let involved = &event["involvedObject"];
    assert_eq!(
        (&involved["kind"], &involved["apiVersion"], &involved["namespace"], &involved["uid"]),
        (&json!("PodDisruptionBudget"), &json!("policy/v1"), &json!("default"), &uid)
    );
    assert!(event["metadata"]["name"].as_str().unwrap().starts_with("empty."), "{event}");
    // Judged again, the budget gets the same Event counted, not another one: once after the
    // controller's own status write (as kube's, which syncs on every update), and again after
    // each change.
    let r = c.patch(&format!("{PDBS}/empty"), MERGE, &json!({"spec": {"minAvailable": 2}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let again = event_when(&c, "empty", "NoPods", |e| e["count"].as_i64() >= Some(3)).await;
    assert_eq!(again["metadata"]["name"], event["metadata"]["name"]);
    assert_eq!(again["firstTimestamp"], event["firstTimestamp"]);
    let listed = c.get(EVENTS).await.body;
    let no_pods = listed["items"].as_array().unwrap().iter().filter(|e| e["reason"] == "NoPods").count();
    assert_eq!(no_pods, 1, "{listed}");

    // A pod two budgets select is named in a warning on the pod, with the first budget.
    for name in ["b", "a"] {
        assert_eq!(c.post(PDBS, &budget(name, "shared", json!({"maxUnavailable": 1}))).await.code, 201);
    }
    status_when(&c, "b", "budget b judged", |s| s.get("observedGeneration").is_some()).await;
    status_when(&c, "a", "budget a judged", |s| s.get("observedGeneration").is_some()).await;
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "shared"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "shared"}},
            "template": {"metadata": {"labels": {"app": "shared"}}, "spec": pod_spec()}}});
    let r = c.post("/apis/apps/v1/namespaces/default/replicasets", &rs).await;
    assert_eq!(r.code, 201, "{}", r.body);
    ready_pod(&c, "shared-0", "shared", Some(&r.body)).await;
    let event = event_when(&c, "shared-0", "MultiplePodDisruptionBudgets", |_| true).await;
    assert_eq!(
        event["message"],
        "Pod \"default\"/\"shared-0\" matches multiple PodDisruptionBudgets.  Chose \"a\" arbitrarily."
    );
    assert_eq!(event["involvedObject"]["kind"], "Pod");

    // kubectl describes the budget with its Events.
    let dir = tempdir("kubectl-pdb-events");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["describe", "pdb", "empty"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let line = out.lines().find(|l| l.contains("NoPods")).unwrap_or_else(|| panic!("{bin}: {out}"));
        assert!(
            line.contains("Normal") && line.contains("controllermanager") && line.contains("No matching pods found"),
            "{bin}: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn evicted_pods_not_deleted_and_stale_marks_expire() {
    let s = server().await;
    let c = Client::new(&s);
    for name in ["a", "b", "c"] {
        ready_pod(&c, name, "app", None).await;
    }
    assert_eq!(c.post(PDBS, &budget("app", "app", json!({"minAvailable": 1}))).await.code, 201);
    status_when(&c, "app", "two disruptions allowed", |s| counts(s) == (3, 3, 1, 2)).await;
    // Two pods evicted but not deleted: the one evicted three minutes ago is no longer expected
    // to go and counts again; the one evicted now does not.
    let (old, recent) = (at(-180), at(0));
    let disrupted = json!({"status": {"disruptedPods": {"a": old, "b": recent}}});
    let r = c.patch(&format!("{PDBS}/app/status"), MERGE, &disrupted).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let status = status_when(&c, "app", "the old eviction expired", |s| {
        s["disruptedPods"] == json!({"b": recent}) && s["currentHealthy"] == 2
    })
    .await;
    assert_eq!(counts(&status), (3, 2, 1, 1));
    // The pod is named in a warning (kube's text names the budget's namespace twice).
    let event = event_when(&c, "a", "NotDeleted", |_| true).await;
    assert_eq!(event["message"], "Pod was expected by PDB default/default to be deleted but it wasn't");
    assert_eq!((event["involvedObject"]["kind"].as_str(), event["type"].as_str()), (Some("Pod"), Some("Warning")));

    // A DisruptionTarget mark two minutes old on a pod that is still there is set to False.
    let mark = json!({"status": {"conditions": [{"type": "Ready", "status": "True"},
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting", "lastTransitionTime": at(-150)}]}});
    let mut w = c.watch(&format!("{PODS}?watch=true&fieldSelector=metadata.name=c")).await;
    let r = c.patch(&format!("{PODS}/c/status"), MERGE, &mark).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let cleared = until(&mut w, "the mark cleared", |e| {
        let conditions = e["object"]["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "DisruptionTarget" && c["status"] == "False")
    })
    .await;
    let conditions = cleared["object"]["status"]["conditions"].as_array().unwrap();
    let target = conditions.iter().find(|c| c["type"] == "DisruptionTarget").unwrap();
    assert!(target.get("reason").is_none() && target.get("message").is_none(), "{target}");
    let managers = cleared["object"]["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managers.iter().any(|m| m["manager"] == "kube-controller-manager" && m["subresource"] == "status"),
        "{managers:?}"
    );
    // A fresh mark stays: once the controller has read a later change (pod c no longer
    // Ready), pod a still has it.
    let fresh = json!({"status": {"conditions": [{"type": "Ready", "status": "True"},
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "lastTransitionTime": at(0)}]}});
    let r = c.patch(&format!("{PODS}/a/status"), MERGE, &fresh).await;
    assert_eq!(r.code, 200, "{}", r.body);
    set_ready(&c, "c", false).await;
    status_when(&c, "app", "pod c no longer healthy", |s| counts(s) == (3, 1, 1, 0)).await;
    let got = c.get(&format!("{PODS}/a")).await.body;
    assert_eq!(got["status"]["conditions"][1]["type"], "DisruptionTarget");
    assert_eq!(got["status"]["conditions"][1]["status"], "True");
}

#[tokio::test]
async fn custom_controllers_count_through_their_scale_and_clients_evict() {
    let s = server().await;
    let c = Client::new(&s);
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "replicators.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "replicators", "singular": "replicator", "kind": "Replicator", "listKind": "ReplicatorList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let mut w = c.watch(&format!("{crds}?watch=true")).await;
    assert_eq!(c.post(crds, &crd).await.code, 201);
    until(&mut w, "the definition established", |e| {
        let conditions = e["object"]["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True")
    })
    .await;
    let replicators = "/apis/example.com/v1/namespaces/default/replicators";
    let owner = json!({"apiVersion": "example.com/v1", "kind": "Replicator", "metadata": {"name": "r"},
        "spec": {"replicas": 4}});
    let created = c.post(replicators, &owner).await;
    assert_eq!(created.code, 201, "{}", created.body);
    for name in ["r-0", "r-1", "r-2"] {
        ready_pod(&c, name, "r", Some(&created.body)).await;
    }
    assert_eq!(c.post(PDBS, &budget("r", "r", json!({"minAvailable": "50%"}))).await.code, 201);
    // Four replicas expected, two needed, three healthy.
    let status = status_when(&c, "r", "the replicas counted", |s| s["expectedPods"] == 4).await;
    assert_eq!(counts(&status), (4, 3, 2, 1));

    // kube-rs evicts within the budget (a refusal, 429, it would retry for minutes, as it
    // retries every 429).
    use k8s_openapi::api::core::v1::Pod;
    let pods: kube::Api<Pod> = kube::Api::namespaced(kube_client(&s).await, "default");
    pods.evict("r-0", &Default::default()).await.expect("evicted");
    status_when(&c, "r", "the eviction counted", |s| counts(s) == (4, 2, 2, 0)).await;
    assert_eq!(evict(&c, "r-1").await.code, 429);

    // kubectl reads the budget's columns.
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let bin = kubectl_versions().last().unwrap().clone();
    let dir = tempdir("kubectl-pdb");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &["get", "pdb", "r"]).await;
    assert!(ok, "{bin}: {out}{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]);
    assert_eq!(lines[1][..4], ["r", "50%", "N/A", "0"]);
}

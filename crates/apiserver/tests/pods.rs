//! What kube-apiserver does with pods beyond storing them, over HTTP: graceful deletion (a pod
//! on a node is marked terminating for its grace period, shortened by later DELETEs, removed at
//! a period of 0; finalizers and watch events as kube gives them), evictions that respect
//! PodDisruptionBudgets (kube's 429s and budget status, `DisruptionTarget`, dry runs, admission
//! of `pods/eviction`), bindings that assign a pod to a node once, a namespace waiting for its
//! terminating pods, and these as kubectl (`delete`, `drain`), kube-rs (`evict`,
//! `create_subresource`) and the Python client (`create_namespaced_pod_eviction`) use them; what
//! a pod update may change, and containers' resource requests, limits and volume mounts.

mod common;

use common::*;
use serde_json::{Value, json};

const MERGE: &str = "application/merge-patch+json";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

/// A pod on node-1 (its grace period defaults to 30 seconds).
fn bound(name: &str, labels: Value) -> Value {
    let mut p = pod(name, labels);
    p["spec"]["nodeName"] = "node-1".into();
    p
}

/// Creates `pod` and reports it Running (and Ready when `ready`), as its kubelet would.
async fn running(c: &Client, pod: &Value, ready: bool) -> Value {
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    let r = c.post(PODS, pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
    let r = c.patch(&format!("{PODS}/{name}/status"), MERGE, &status).await;
    assert_eq!(r.code, 200, "{}", r.body);
    r.body
}

fn deadline_in(p: &Value) -> i64 {
    let t: jiff::Timestamp = p["metadata"]["deletionTimestamp"].as_str().expect("deletionTimestamp").parse().unwrap();
    t.as_second() - jiff::Timestamp::now().as_second()
}

/// A budget over `app=web`, with the status its controller would write.
async fn budget(c: &Client, name: &str, status: Value) {
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let r = c.post(PDBS, &pdb).await;
    assert_eq!(r.code, 201, "{}", r.body);
    if !status.is_null() {
        set_budget(c, name, status).await;
    }
}

async fn set_budget(c: &Client, name: &str, status: Value) {
    let r = c.patch(&format!("{PDBS}/{name}/status"), MERGE, &json!({"status": status})).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

/// A policy, bound with `Deny`, refusing with `message` the requests `rule` matches where
/// `expression` is false; in force once this returns.
async fn deny(c: &Client, name: &str, rule: Value, expression: &str, message: &str) {
    let group = "/apis/admissionregistration.k8s.io/v1";
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": expression, "message": message}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}});
    assert_eq!(c.post(&format!("{group}/validatingadmissionpolicies"), &policy).await.code, 201);
    assert_eq!(c.post(&format!("{group}/validatingadmissionpolicybindings"), &binding).await.code, 201);
    // A consistent read: the cache admission reads from holds both from here on.
    assert_eq!(c.get(&format!("{group}/validatingadmissionpolicybindings")).await.code, 200);
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

async fn evict(c: &Client, name: &str, body: &Value) -> Resp {
    c.post(&format!("{PODS}/{name}/eviction"), body).await
}

fn condition<'a>(p: &'a Value, kind: &str) -> Option<&'a Value> {
    p["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

#[tokio::test]
async fn a_bound_pod_terminates_for_its_grace_period() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(PODS, &bound("web", json!({}))).await.body;
    assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={}", rv_of(&created))).await;

    let r = c.delete(&format!("{PODS}/web")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "Pod", "a pod's DELETE answers the pod");
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(r.body["metadata"]["generation"], 2);
    let ahead = deadline_in(&r.body);
    assert!((25..=30).contains(&ahead), "terminating for 30 s: {ahead}");
    let terminating = c.get(&format!("{PODS}/web")).await;
    assert_eq!((terminating.code, &terminating.body["metadata"]), (200, &r.body["metadata"]));

    // Asking again changes nothing; a shorter period moves the deadline.
    let again = c.delete(&format!("{PODS}/web")).await;
    assert_eq!((again.code, rv_of(&again.body)), (200, rv_of(&r.body)));
    let longer = c.send_raw(http::Method::DELETE, &format!("{PODS}/web?gracePeriodSeconds=60"), vec![], "").await;
    assert_eq!(rv_of(&longer.body), rv_of(&r.body), "a longer period is not taken");
    let body =
        serde_json::to_vec(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5})).unwrap();
    let shorter = c.send_raw(http::Method::DELETE, &format!("{PODS}/web"), body, "application/json").await;
    assert_eq!(shorter.body["metadata"]["deletionGracePeriodSeconds"], 5);
    assert!((0..=5).contains(&deadline_in(&shorter.body)), "{}", shorter.body);
    assert_eq!(shorter.body["metadata"]["generation"], 2, "the generation moves once");

    let bad = c.send_raw(http::Method::DELETE, &format!("{PODS}/web?gracePeriodSeconds=soon"), vec![], "").await;
    assert_eq!(
        (bad.code, bad.body["message"].as_str()),
        (400, Some("strconv.ParseInt: parsing \"soon\": invalid syntax"))
    );

    // A period of 0 (a kubelet's last word, or a forced delete) removes it.
    let gone = c.send_raw(http::Method::DELETE, &format!("{PODS}/web?gracePeriodSeconds=0"), vec![], "").await;
    assert_eq!(gone.code, 200, "{}", gone.body);
    assert_eq!(c.get(&format!("{PODS}/web")).await.code, 404);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let e = w.next_within(SEC).await.expect("event");
        seen.push((
            e["type"].as_str().unwrap().to_string(),
            e["object"]["metadata"]["deletionGracePeriodSeconds"].clone(),
        ));
    }
    let expected = [("MODIFIED", 30), ("MODIFIED", 5), ("MODIFIED", 0), ("DELETED", 0)];
    assert_eq!(seen, expected.map(|(t, g)| (t.to_string(), json!(g))));
}

#[tokio::test]
async fn unbound_pods_go_at_once_and_finalizers_wait_for_the_period() {
    let s = server().await;
    let c = Client::new(&s);
    // A pod on no node has nothing to stop: marked with a period of 0, then gone.
    let created = c.post(PODS, &pod("pending", json!({}))).await.body;
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={}", rv_of(&created))).await;
    let r = c.delete(&format!("{PODS}/pending")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/pending")).await.code, 404);
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), &e["object"]["metadata"]["deletionGracePeriodSeconds"]),
        (Some("MODIFIED"), &json!(0))
    );
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(e["type"], "DELETED");
    assert_eq!(e["object"], r.body, "the answer is the pod as it went");

    // A bound pod whose finalizer goes during its period stays until the period is over.
    let mut held = bound("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(c.post(PODS, &held).await.code, 201);
    assert_eq!(c.delete(&format!("{PODS}/held")).await.body["metadata"]["deletionGracePeriodSeconds"], 30);
    let r = c.patch(&format!("{PODS}/held"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/held")).await.code, 200, "still terminating");
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/held?gracePeriodSeconds=0"), vec![], "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/held")).await.code, 404);

    // With a period of 0, removing the last finalizer removes the pod.
    let mut kept = pod("kept", json!({}));
    kept["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(c.post(PODS, &kept).await.code, 201);
    let r = c.delete(&format!("{PODS}/kept")).await;
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(c.get(&format!("{PODS}/kept")).await.code, 200);
    let r = c.patch(&format!("{PODS}/kept"), MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/kept")).await.code, 404);
}

#[tokio::test]
async fn evictions_respect_disruption_budgets() {
    let s = server_without_disruption_controller().await;
    let c = Client::new(&s);
    running(&c, &bound("web-0", json!({"app": "web"})), true).await;
    running(&c, &bound("web-1", json!({"app": "web"})), true).await;
    budget(&c, "web", Value::Null).await;

    // A budget its controller has not seen yet: try again later.
    let r = evict(&c, "web-0", &eviction("web-0")).await;
    assert_eq!(r.code, 429, "{}", r.body);
    assert_eq!(r.headers.get("retry-after").map(|v| v.to_str().unwrap()), Some("10"));
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Cannot evict pod as it would violate the pod's disruption budget.", "reason": "TooManyRequests",
            "details": {"causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web is still being processed by the server."}], "retryAfterSeconds": 10},
            "code": 429})
    );
    set_budget(
        &c,
        "web",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2,
        "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;

    // A dry run spends and deletes nothing (a policy/v1beta1 Eviction is read as well).
    let r = c.post(&format!("{PODS}/web-0/eviction?dryRun=All"), &eviction("web-0")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut v1beta1 = eviction("web-0");
    v1beta1["apiVersion"] = json!("policy/v1beta1");
    let r = c.post(&format!("{PODS}/web-0/eviction?dryRun=All"), &v1beta1).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.get(&format!("{PDBS}/web")).await.body["status"]["disruptionsAllowed"], 1);
    assert!(c.get(&format!("{PODS}/web-0")).await.body["metadata"].get("deletionTimestamp").is_none());

    let r = evict(&c, "web-0", &eviction("web-0")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}));
    let pdb = c.get(&format!("{PDBS}/web")).await.body;
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["web-0"].is_string(), "{pdb}");
    let allowed = condition(&pdb, "DisruptionAllowed").expect("condition");
    assert_eq!((allowed["status"].as_str(), allowed["reason"].as_str()), (Some("False"), Some("InsufficientPods")));
    let evicted = c.get(&format!("{PODS}/web-0")).await.body;
    let target = condition(&evicted, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target["reason"], "EvictionByEvictionAPI");
    assert_eq!(target["message"], "Eviction API: evicting");
    assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30, "evicted pods terminate gracefully");

    // No disruption left (its controller has seen web-0 go): refused, without Retry-After.
    set_budget(&c, "web", json!({"currentHealthy": 1})).await;
    let r = evict(&c, "web-1", &eviction("web-1")).await;
    assert_eq!(r.code, 429, "{}", r.body);
    assert!(r.headers.get("retry-after").is_none());
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(condition(&c.get(&format!("{PODS}/web-1")).await.body, "DisruptionTarget").is_none());
    // A pod already terminating is not held by its budget.
    assert_eq!(evict(&c, "web-0", &eviction("web-0")).await.code, 201);

    // A pod that is not Ready goes without spending a healthy budget.
    running(&c, &bound("web-2", json!({"app": "web"})), false).await;
    let r = evict(&c, "web-2", &eviction("web-2")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.get(&format!("{PDBS}/web")).await.body["status"]["disruptionsAllowed"], 0);

    // Two budgets over one pod: refused.
    budget(&c, "also", json!({"observedGeneration": 1, "disruptionsAllowed": 5})).await;
    let r = evict(&c, "web-1", &eviction("web-1")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );

    // A pending pod is not protected; the body must name the pod; only POST is served.
    assert_eq!(c.post(PODS, &pod("solo", json!({"app": "web"}))).await.code, 201);
    assert_eq!(evict(&c, "solo", &eviction("solo")).await.code, 201);
    assert_eq!(c.get(&format!("{PODS}/solo")).await.code, 404, "unbound: gone at once");
    let r = evict(&c, "web-1", &eviction("web-0")).await;
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some("name in URL does not match name in Eviction object")));
    assert_eq!(c.get(&format!("{PODS}/web-1/eviction")).await.code, 405);
    let r = evict(&c, "nope", &eviction("nope")).await;
    assert_eq!((r.code, r.body["message"].as_str()), (404, Some("pods \"nope\" not found")));
}

#[tokio::test]
async fn admission_judges_evictions_as_creates_of_pods_eviction() {
    let s = server().await;
    let c = Client::new(&s);
    let rule =
        json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]});
    let expression =
        "request.kind.kind != 'Eviction' || object.kind != 'Eviction' || object.metadata.name != 'guarded'";
    deny(&c, "guard", rule, expression, "guarded pods stay").await;
    running(&c, &bound("guarded", json!({})), true).await;
    running(&c, &bound("free", json!({})), true).await;
    let r = evict(&c, "guarded", &eviction("guarded")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().ends_with("denied request: guarded pods stay"), "{}", r.body);
    assert!(c.get(&format!("{PODS}/guarded")).await.body["metadata"].get("deletionTimestamp").is_none());
    // The pod's deletion itself is not judged again: a DELETE of pods is not matched here anyway,
    // and the eviction of another pod passes.
    assert_eq!(evict(&c, "free", &eviction("free")).await.code, 201);
}

#[tokio::test]
async fn a_binding_assigns_a_pod_once() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(PODS, &pod("p", json!({}))).await.body;
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={}", rv_of(&created))).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "p", "annotations": {"example.com/scheduler": "mine"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let r = c.post(&format!("{PODS}/p/binding"), &binding).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}));
    let p = c.get(&format!("{PODS}/p")).await.body;
    assert_eq!(p["spec"]["nodeName"], "node-1");
    assert_eq!(p["metadata"]["annotations"]["example.com/scheduler"], "mine");
    let scheduled = condition(&p, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert_eq!(p["metadata"]["generation"], created["metadata"]["generation"], "the server's own edit");
    assert_eq!(p["metadata"]["managedFields"], created["metadata"]["managedFields"]);
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((e["type"].as_str(), &e["object"]["spec"]["nodeName"]), (Some("MODIFIED"), &json!("node-1")));

    let r = c.post(&format!("{PODS}/p/binding"), &binding).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\""
    );
    assert_eq!(c.post(PODS, &pod("q", json!({}))).await.code, 201);
    let mut nameless = binding.clone();
    nameless["metadata"]["name"] = "q".into();
    nameless["target"] = json!({});
    let r = c.post(&format!("{PODS}/q/binding"), &nameless).await;
    assert_eq!((r.code, r.body["message"].as_str()), (500, Some("target.name: Required value")));
    let mut stale = binding.clone();
    stale["metadata"] = json!({"name": "q", "uid": "not-the-pod"});
    let r = c.post(&format!("{PODS}/q/binding"), &stale).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert!(c.get(&format!("{PODS}/q")).await.body["spec"].get("nodeName").is_none());

    // One object as a Table row (kubectl's `get pod q`) or as its metadata alone.
    let t = c.get_accepting(&format!("{PODS}/q"), "application/json;as=Table;v=v1;g=meta.k8s.io").await.body;
    assert_eq!((t["kind"].as_str(), t["rows"][0]["cells"][2].as_str()), (Some("Table"), Some("Pending")), "{t}");
    let m = c.get_accepting(&format!("{PODS}/q"), "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").await;
    assert_eq!(
        (m.body["kind"].as_str(), m.body["metadata"]["name"].as_str()),
        (Some("PartialObjectMetadata"), Some("q"))
    );
    assert!(m.body.get("spec").is_none());

    // Discovery names both subresources, the eviction in its own group.
    let v1 = c.get("/api/v1").await.body;
    let entry = |n: &str| v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == n).cloned();
    assert_eq!(entry("pods/binding").unwrap()["verbs"], json!(["create"]));
    let e = entry("pods/eviction").unwrap();
    assert_eq!(
        (e["group"].as_str(), e["version"].as_str(), e["kind"].as_str()),
        (Some("policy"), Some("v1"), Some("Eviction"))
    );
}

#[tokio::test]
async fn kube_rs_evicts_binds_and_deletes() {
    use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
    use kube::api::{Api, DeleteParams, EvictParams, PostParams};
    let s = server_without_disruption_controller().await;
    let c = Client::new(&s);
    let api: Api<Pod> = Api::default_namespaced(kube_client(&s).await);

    assert_eq!(c.post(PODS, &pod("sched", json!({}))).await.code, 201);
    let binding = Binding {
        metadata: kube::api::ObjectMeta { name: Some("sched".into()), ..Default::default() },
        target: ObjectReference { kind: Some("Node".into()), name: Some("node-1".into()), ..Default::default() },
    };
    let status: kube::core::Status =
        api.create_subresource("binding", "sched", &PostParams::default(), &binding).await.unwrap();
    assert!(status.is_success(), "{status:?}");
    assert_eq!(api.get("sched").await.unwrap().spec.unwrap().node_name.as_deref(), Some("node-1"));

    running(&c, &bound("web-0", json!({"app": "web"})), true).await;
    budget(
        &c,
        "web",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0}),
    )
    .await;
    // kube-rs sends its delete options as `delete_options`, a field an Eviction does not have
    // (dropped, as kube-apiserver drops it): the pod terminates for its own period.
    let params = EvictParams { delete_options: Some(DeleteParams::default().grace_period(0)), ..Default::default() };
    let status = api.evict("web-0", &params).await.unwrap();
    assert!(status.is_success(), "{status:?}");
    let evicted = api.get("web-0").await.unwrap();
    assert_eq!(evicted.metadata.deletion_grace_period_seconds, Some(30));
    assert_eq!(c.get(&format!("{PDBS}/web")).await.body["status"]["disruptionsAllowed"], 0);

    // A scheduled pod deleted as kube-rs deletes it is left terminating, then forced.
    let terminating = api.delete("sched", &DeleteParams::default()).await.unwrap().left().expect("the pod");
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    api.delete("sched", &DeleteParams::default().grace_period(0)).await.unwrap();
    assert!(api.get_opt("sched").await.unwrap().is_none());
}

#[tokio::test]
async fn kubectl_drains_a_node_through_evictions() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server_without_disruption_controller().await;
        let c = Client::new(&s);
        let dir = tempdir("kubectl-drain");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}});
        assert_eq!(c.post("/api/v1/nodes", &node).await.code, 201);
        running(&c, &bound("web-0", json!({"app": "web"})), true).await;
        running(&c, &bound("web-1", json!({"app": "web"})), true).await;
        budget(
            &c,
            "web",
            json!({"observedGeneration": 1, "disruptionsAllowed": 2, "currentHealthy": 2,
            "desiredHealthy": 0}),
        )
        .await;
        let args = ["drain", "node-1", "--force", "--grace-period=0", "--timeout=60s"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(ok, "{bin}: {out}{err}");
        let said = format!("{out}{err}");
        assert!(said.contains("evicting pod default/web-0") && said.contains("node/node-1 drained"), "{bin}: {said}");
        assert_eq!(c.get("/api/v1/nodes/node-1").await.body["spec"]["unschedulable"], true, "{bin}");
        assert_eq!(c.get(&format!("{PODS}/web-0")).await.code, 404, "{bin}");
        assert_eq!(c.get(&format!("{PODS}/web-1")).await.code, 404, "{bin}");
        let pdb = c.get(&format!("{PDBS}/web")).await.body;
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0, "{bin}: both went through the budget");
        assert_eq!(pdb["status"]["disruptedPods"].as_object().map(|d| d.len()), Some(2), "{bin}: {pdb}");

        // kubectl delete of a bound pod leaves it terminating; --force --grace-period=0 removes it.
        running(&c, &bound("last", json!({})), true).await;
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "pod", "last", "--wait=false"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "pod", "last", "--no-headers"]).await;
        assert!(ok && out.contains("Terminating"), "{bin}: {out}{err}");
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["delete", "pod", "last", "--force", "--grace-period=0"]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(c.get(&format!("{PODS}/last")).await.code, 404, "{bin}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn a_namespace_waits_for_its_terminating_pods() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["work"]).await.unwrap();
    let pods = "/api/v1/namespaces/work/pods";
    assert_eq!(c.post(pods, &bound("bound", json!({}))).await.code, 201);
    assert_eq!(c.post(pods, &pod("unbound", json!({}))).await.code, 201);
    let mut w = c.watch("/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3Dwork").await;
    assert_eq!(c.delete("/api/v1/namespaces/work").await.code, 200);
    // The namespace's controller deletes both: the unbound pod goes, the bound one terminates
    // (no kubelet finishes it) and keeps the namespace, as on a cluster whose node is away.
    until(&mut w, "content remaining", |e| {
        e["object"]["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == "NamespaceContentRemaining"
                && c["status"] == "True"
                && c["message"].as_str() == Some("Some resources are remaining: pods. has 1 resource instances")
        })
    })
    .await;
    assert_eq!(c.get(&format!("{pods}/unbound")).await.code, 404);
    let kept = c.get(&format!("{pods}/bound")).await.body;
    assert_eq!(kept["metadata"]["deletionGracePeriodSeconds"], 30, "{kept}");
    // No eviction or binding in a terminating namespace.
    let r = c.post(&format!("{pods}/bound/eviction"), &eviction("bound")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["details"]["causes"][0]["reason"], "NamespaceTerminating");
    // Its kubelet's last word: the pod goes, and the namespace with it.
    let r = c.send_raw(http::Method::DELETE, &format!("{pods}/bound?gracePeriodSeconds=0"), vec![], "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    until(&mut w, "the namespace's deletion", |e| e["type"] == "DELETED").await;
}

#[tokio::test]
async fn deletions_are_judged_once_with_the_period_they_take() {
    let s = server().await;
    let c = Client::new(&s);
    // A policy refusing every pod deletion does not stop an eviction (kube's eviction deletes
    // without judging the deletion again), nor a DELETE of a pod already terminating.
    let rule = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["pods"]});
    deny(&c, "keep-pods", rule, "oldObject.metadata.name == 'free'", "pods stay").await;
    running(&c, &bound("kept", json!({})), true).await;
    let before = c.get(&format!("{PODS}/kept")).await.body;
    let r = c.delete(&format!("{PODS}/kept")).await;
    assert_eq!(r.code, 422, "the policy judges a DELETE: {}", r.body);
    let r = evict(&c, "kept", &eviction("kept")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let evicted = c.get(&format!("{PODS}/kept")).await.body;
    assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(evicted["metadata"]["managedFields"], before["metadata"]["managedFields"], "the server's own mark");
    assert_eq!(c.delete(&format!("{PODS}/kept")).await.code, 200, "already terminating: nothing to judge");

    // A dry run of a deletion that would remove the pod answers it as it would go.
    running(&c, &pod("free", json!({})), true).await;
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/free?dryRun=All"), vec![], "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(c.get(&format!("{PODS}/free")).await.body["metadata"].get("deletionTimestamp").is_none());
    // A precondition the pod does not meet, in kube's words.
    let body = serde_json::to_vec(&json!({"preconditions": {"uid": "other"}})).unwrap();
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/free"), body, "application/json").await;
    assert_eq!(r.code, 409, "{}", r.body);
    let free_uid = c.get(&format!("{PODS}/free")).await.body["metadata"]["uid"].as_str().unwrap().to_string();
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on Pod \"free\": the UID in the precondition (other) does not match the UID in record ({free_uid}). The object might have been deleted and then recreated"
        )
    );
    // The older `bindings` resource binds the pod its Binding names.
    assert_eq!(c.post(PODS, &pod("late", json!({}))).await.code, 201);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "late", "uid": "ignored"},
        "target": {"kind": "Node", "name": "node-2"}});
    let r = c.post("/api/v1/namespaces/default/bindings", &binding).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.get(&format!("{PODS}/late")).await.body["spec"]["nodeName"], "node-2");
}

const PY_EVICT: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
body = client.V1Eviction(metadata=client.V1ObjectMeta(name="web-1", namespace="default"),
    delete_options=client.V1DeleteOptions(grace_period_seconds=0))
try:
    v1.create_namespaced_pod_eviction("web-1", "default", body)
    print(json.dumps({"evicted": "web-1"}), flush=True)
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}), flush=True)
body.metadata.name = "web-0"
v1.create_namespaced_pod_eviction("web-0", "default", body)
print(json.dumps({"evicted": "web-0"}), flush=True)
"#;

#[tokio::test]
async fn the_python_client_evicts_within_the_budget() {
    let s = server_without_disruption_controller().await;
    let c = Client::new(&s);
    let dir = common::tools::tempdir("python-evict");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    running(&c, &bound("web-0", json!({"app": "web"})), true).await;
    running(&c, &bound("web-1", json!({"app": "web"})), true).await;
    budget(
        &c,
        "web",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2}),
    )
    .await;
    // web-1 is held by the budget (the client's ApiException carries kube's Status); web-0 is
    // not Ready by then, so it goes without spending the budget it does not count in.
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    assert_eq!(c.patch(&format!("{PODS}/web-0/status"), MERGE, &status).await.code, 200);
    let out = common::tools::python(PY_EVICT, &[kc.to_str().unwrap()]).await;
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["status"], 429, "{lines:?}");
    assert_eq!(lines[0]["body"]["reason"], "TooManyRequests");
    assert_eq!(lines[1], json!({"evicted": "web-0"}));
    assert_eq!(c.get(&format!("{PODS}/web-0")).await.code, 404, "evicted with a period of 0");
    assert_eq!(c.get(&format!("{PODS}/web-1")).await.code, 200);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn pod_updates_change_only_what_kube_allows() {
    let s = server().await;
    let c = Client::new(&s);
    let mut body = pod("web", json!({"app": "web"}));
    body["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]);
    assert_eq!(c.post("/api/v1/namespaces/default/pods", &body).await.code, 201);
    let path = "/api/v1/namespaces/default/pods/web";
    let strategic = "application/strategic-merge-patch+json";
    // Images, labels and added tolerations change.
    let image = json!({"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}});
    assert_eq!(c.patch(path, strategic, &image).await.code, 200);
    assert_eq!(c.patch(path, MERGE, &json!({"metadata": {"labels": {"tier": "front"}}})).await.code, 200);
    let added = json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "other", "operator": "Exists"}]}});
    assert_eq!(c.patch(path, MERGE, &added).await.code, 200);
    // Anything else of the spec is kube's 422.
    let r = c.patch(path, MERGE, &json!({"spec": {"restartPolicy": "Never"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
        ),
        "{message}"
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec");
    let extra = json!({"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}});
    let r = c.patch(path, strategic, &extra).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"web\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );
    let removed = json!({"spec": {"tolerations": []}});
    let r = c.patch(path, MERGE, &removed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"web\" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
    );
    // A client that decodes into Go types writes back empties left out and quantities in
    // canonical form: the same pod to kube.
    let mut sent = pod("typed", json!({}));
    sent["spec"]["nodeSelector"] = json!({});
    sent["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1000m"}});
    assert_eq!(c.post("/api/v1/namespaces/default/pods", &sent).await.code, 201);
    let mut back = c.get("/api/v1/namespaces/default/pods/typed").await.body;
    back["spec"].as_object_mut().unwrap().remove("nodeSelector");
    back["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("1");
    back["metadata"]["labels"] = json!({"seen": "yes"});
    let r = c.put("/api/v1/namespaces/default/pods/typed", &back).await;
    assert_eq!(r.code, 200, "{}", r.body);

    // Status writes and bindings are not pod updates.
    let status = json!({"status": {"phase": "Running"}});
    assert_eq!(c.patch(&format!("{path}/status"), MERGE, &status).await.code, 200);
    let stored = c.get(path).await.body;
    assert_eq!(stored["spec"]["restartPolicy"], "Always");
    assert_eq!(stored["spec"]["containers"][0]["image"], "registry.k8s.io/pause:3.9");
}

#[tokio::test]
async fn container_resources_and_mounts_are_judged_wherever_a_pod_spec_is_written() {
    let s = server().await;
    let c = Client::new(&s);
    let mut over = pod("over", json!({}));
    over["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "2000m"}, "limits": {"cpu": "1"}});
    let r = c.post(PODS, &over).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"over\" is invalid: spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
    );
    assert_eq!(r.body["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(c.get(&format!("{PODS}/over")).await.code, 404);

    // A workload's template, at its path.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"memory": "-1"}}}]}}}});
    let r = c.post("/apis/apps/v1/namespaces/default/deployments", &deployment).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"web\" is invalid: [spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-1\": must be greater than or equal to 0, \
         spec.template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources]"
    );

    // A mount of a volume the template does not have, before the container's resources.
    let mut mounted = deployment.clone();
    mounted["metadata"]["name"] = json!("mounted");
    mounted["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    mounted["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data"}]);
    mounted["spec"]["template"]["spec"]["volumes"] = json!([{"name": "cache", "emptyDir": {}}]);
    let r = c.post("/apis/apps/v1/namespaces/default/deployments", &mounted).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"mounted\" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\""
    );
    mounted["spec"]["template"]["spec"]["volumes"][0]["name"] = json!("data");
    assert_eq!(c.post("/apis/apps/v1/namespaces/default/deployments", &mounted).await.code, 201);

    // A StatefulSet's template is judged with a volume for each of its volume claim templates.
    let stateful = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "postgres",
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
    let r = c.post("/apis/apps/v1/namespaces/default/statefulsets", &stateful).await;
    assert_eq!(r.code, 201, "{}", r.body);

    // A Job's template: its own faults, then the Job's restart policy.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox",
            "resources": {"limits": {"gpu": "1"}}}]}}}});
    let r = c.post("/apis/batch/v1/namespaces/default/jobs", &job).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Job.batch \"once\" is invalid: [spec.template.spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified, \
         spec.template.spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource for containers, \
         spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"]"
    );

    // A resize is held to the same rules.
    let mut fits = pod("fits", json!({}));
    fits["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}});
    assert_eq!(c.post(PODS, &fits).await.code, 201);
    let resize = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1500m"}}}]}});
    let r = c.patch(&format!("{PODS}/fits/resize"), "application/strategic-merge-patch+json", &resize).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"fits\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit of 1"
    );
}

#[tokio::test]
async fn pod_specs_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    // Containers: names, images, ports and environment, in kube's order; nothing is stored.
    let mut bad = pod("bad", json!({}));
    bad["spec"]["containers"] = json!([
        {"name": "app", "image": "nginx", "ports": [{"containerPort": 70000}], "env": [{"name": "A=B"}]},
        {"name": "app", "image": "nginx", "env": [{"name": "C", "value": "x",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
        {"name": "sidecar"},
    ]);
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"bad\" is invalid: [spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive, \
         spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '=', \
         spec.containers[1].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty, \
         spec.containers[1].name: Duplicate value: \"app\", \
         spec.containers[2].image: Required value]"
    );
    let causes: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["reason"].as_str().unwrap()).collect();
    assert_eq!(
        causes,
        ["FieldValueInvalid", "FieldValueInvalid", "FieldValueInvalid", "FieldValueDuplicate", "FieldValueRequired"]
    );
    assert_eq!(c.get(&format!("{PODS}/bad")).await.code, 404);
    let empty = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {"containers": []}});
    let r = c.post(PODS, &empty).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (422, Some("Pod \"empty\" is invalid: spec.containers: Required value"))
    );
    // An image with spaces: refused in a pod, not in a template.
    let mut spaced = pod("spaced", json!({}));
    spaced["spec"]["containers"][0]["image"] = json!("nginx ");
    let r = c.post(PODS, &spaced).await;
    assert_eq!(
        r.body["message"],
        "Pod \"spaced\" is invalid: spec.containers[0].image: Invalid value: \"nginx \": must not have leading or trailing whitespace"
    );
    let template = json!({"metadata": {"name": "spaced"}, "template": {"spec": spaced["spec"].clone()}});
    assert_eq!(c.post("/api/v1/namespaces/default/podtemplates", &template).await.code, 201);

    // Volumes: one type each, unique names; a pod is updated under the same rules.
    assert_eq!(c.post(PODS, &pod("kept", json!({}))).await.code, 201);
    let before = c.get(&format!("{PODS}/kept")).await.body;
    let mut update = before.clone();
    update["spec"]["volumes"] = json!([{"name": "data", "emptyDir": {}, "configMap": {"name": "c"}}]);
    let r = c.put(&format!("{PODS}/kept"), &update).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let first = r.body["details"]["causes"][0].clone();
    assert_eq!(
        first,
        json!({"reason": "FieldValueForbidden", "field": "spec.volumes[0].configMap",
            "message": "Forbidden: may not specify more than 1 volume type"})
    );
    assert_eq!(c.get(&format!("{PODS}/kept")).await.body, before);

    // Templates: at their path; a StatefulSet's with its claim templates as volumes.
    let stateful = |name: &str, container: &str| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                    "containers": [{"name": container, "image": "postgres",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                    "volumes": [{"name": "data", "emptyDir": {}, "hostPath": {"path": "/x"}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    };
    let statefulsets = "/apis/apps/v1/namespaces/default/statefulsets";
    let r = c.post(statefulsets, &stateful("db", "Postgres")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"][0]["field"], "spec.template.spec.containers[0].name",
        "the template's own volume of the claim's name is not judged: {}",
        r.body
    );
    assert_eq!(r.body["details"]["causes"].as_array().unwrap().len(), 1, "{}", r.body);
    assert_eq!(c.post(statefulsets, &stateful("db", "postgres")).await.code, 201);
}

#[tokio::test]
async fn kubectl_sees_kubes_refusal_of_a_bad_template() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let dir = tempdir("kubectl-template");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let args = ["create", "deployment", "web", "--image=nginx", "--port=70000"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "Deployment.apps \"web\" is invalid: spec.template.spec.containers[0].ports[0].containerPort: \
                 Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            "{bin}: {err}"
        );
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "deployments", "-o", "name"]).await;
        assert!(ok && out.trim().is_empty(), "{bin}: {out}{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn probes_hooks_and_tolerations_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = pod("probed", json!({}));
    bad["spec"]["containers"][0]["livenessProbe"] = json!({"periodSeconds": 5});
    bad["spec"]["containers"][0]["readinessProbe"] = json!({"httpGet": {"port": "web-port-too-long"}});
    bad["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox",
        "startupProbe": {"exec": {"command": ["true"]}}}]);
    bad["spec"]["tolerations"] = json!([{"key": "gpu", "operator": "Exists", "value": "yes"}]);
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"probed\" is invalid: [spec.containers[0].livenessProbe: Required value: must specify a handler type, \
         spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"web-port-too-long\": must be no more than 15 characters, \
         spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always, \
         spec.tolerations[0].operator: Invalid value: \"yes\": value must be empty when `operator` is 'Exists']"
    );
    assert_eq!(c.get(&format!("{PODS}/probed")).await.code, 404);
    // What kube defaults is not refused: zero thresholds, a path and scheme left out, a sidecar's probe.
    let mut good = pod("probed", json!({}));
    good["spec"]["containers"][0]["livenessProbe"] =
        json!({"httpGet": {"port": 8080}, "successThreshold": 0, "periodSeconds": 0});
    good["spec"]["initContainers"] = json!([{"name": "proxy", "image": "envoy", "restartPolicy": "Always",
        "readinessProbe": {"tcpSocket": {"port": 9901}}}]);
    good["spec"]["tolerations"] = json!([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let probe = &r.body["spec"]["containers"][0]["livenessProbe"];
    assert_eq!((&probe["successThreshold"], &probe["periodSeconds"]), (&json!(1), &json!(10)), "{probe}");
    assert_eq!(probe["httpGet"], json!({"port": 8080, "path": "/", "scheme": "HTTP"}));
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_refusal_of_a_probe() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-probes");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let manifest = |handler: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels:\n      \
             app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      \
             - name: c\n        image: nginx\n        livenessProbe:\n{handler}          initialDelaySeconds: 5\n"
        )
    };
    let file = dir.join("web.yaml");
    let f = file.to_str().unwrap().to_string();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        std::fs::write(&file, manifest("")).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", &f]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "The Deployment \"web\" is invalid: spec.template.spec.containers[0].livenessProbe: Required value: \
                 must specify a handler type"
            ),
            "{bin}: {err}"
        );
        assert_eq!(c.get("/apis/apps/v1/namespaces/default/deployments/web").await.code, 404, "{bin}");
        std::fs::write(&file, manifest("          httpGet:\n            port: 80\n")).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", &f]).await;
        assert!(ok, "{bin}: {out}{err}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "deployment", "web"]).await;
        assert!(ok, "{bin}: {out}{err}");
    }
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
probe = client.V1Probe(tcp_socket=client.V1TCPSocketAction(port=80), success_threshold=2)
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(
    containers=[client.V1Container(name="c", image="nginx", liveness_probe=probe)]))
try:
    core.create_namespaced_pod("default", pod)
    print(json.dumps({"created": True}))
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["status"], 422, "{line}");
    assert_eq!(
        line["body"]["message"],
        "Pod \"p\" is invalid: spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pod's `podIP`/`podIPs` and `hostIP`/`hostIPs`, and a node's `podCIDR`/`podCIDRs`, are kept
/// together as kube's conversion keeps them: the singular one, when written, leads the list (is
/// the list when they differ), and the list's first is the singular one.
#[tokio::test]
async fn singular_and_plural_addresses_are_kept_together() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("pods", pod("p", json!({}))).await.unwrap();
    let status = |body: Value| {
        let c = &c;
        async move {
            let r = c.patch(&format!("{PODS}/p/status"), "application/merge-patch+json", &body).await;
            assert_eq!(r.code, 200, "{:?}", r.body);
            r.body["status"].clone()
        }
    };
    let st = status(json!({"status": {"podIP": "10.0.0.1", "hostIP": "192.168.0.1"}})).await;
    assert_eq!((&st["podIPs"], &st["hostIPs"]), (&json!([{"ip": "10.0.0.1"}]), &json!([{"ip": "192.168.0.1"}])));
    let st = status(json!({"status": {"podIP": null, "podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::2"}]}})).await;
    assert_eq!((&st["podIP"], &st["podIPs"][1]["ip"]), (&json!("10.0.0.2"), &json!("fd00::2")));
    let st = status(json!({"status": {"podIP": "10.0.0.3"}})).await;
    assert_eq!((&st["podIP"], &st["podIPs"]), (&json!("10.0.0.3"), &json!([{"ip": "10.0.0.3"}])));
    let got = c.get(&format!("{PODS}/p")).await.body;
    assert_eq!(got["status"]["podIPs"], json!([{"ip": "10.0.0.3"}]));

    let node =
        s.create("nodes", json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.0.0/24"}})).await.unwrap();
    assert_eq!(node["spec"]["podCIDRs"], json!(["10.244.0.0/24"]));
}

/// A pod's status write is judged as kube judges it: addresses that are IPs, one per family, and a
/// nominated node that could be a node's name.
#[tokio::test]
async fn status_addresses_and_nominated_node_are_judged() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("pods", pod("p", json!({}))).await.unwrap();
    let path = format!("{PODS}/p/status");
    let patch = |body: Value| {
        let (c, path) = (&c, &path);
        async move { c.patch(path, "application/merge-patch+json", &body).await }
    };
    let r = patch(json!({"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}})).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"p\" is invalid: status.podIPs: Invalid value: [{\"IP\":\"10.0.0.1\"},{\"IP\":\"10.0.0.2\"}]: may specify no more than one IP for each IP family"
    );
    let r = patch(json!({"status": {"hostIP": "host-1"}})).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(
        r.body["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "field": "status.hostIPs[0]",
            "message": "Invalid value: \"host-1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"})
    );
    let r = patch(json!({"status": {"nominatedNodeName": "Node_1"}})).await;
    assert_eq!(
        (r.code, r.body["details"]["causes"][0]["field"].as_str()),
        (422, Some("status.nominatedNodeName")),
        "{:?}",
        r.body
    );
    let r =
        patch(json!({"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "nominatedNodeName": "node-1"}}))
            .await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["status"]["podIP"], "10.0.0.1");
}

/// A status write as kube-apiserver v1.35 takes it: alpha fields dropped, terminated containers
/// of a pod that does not restart them kept terminated, the QoS class and condition types judged.
#[tokio::test]
async fn status_writes_keep_what_kube_keeps() {
    let s = server().await;
    let c = Client::new(&s);
    let mut never = pod("p", json!({}));
    never["spec"]["restartPolicy"] = json!("Never");
    s.create("pods", never).await.unwrap();
    let path = format!("{PODS}/p/status");
    let patch = |body: Value| {
        let (c, path) = (&c, &path);
        async move { c.patch(path, "application/merge-patch+json", &body).await }
    };
    let done = json!({"status": {"containerStatuses": [{
        "name": "c", "image": "nginx", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
        "allocatedResourcesStatus": [{"name": "cpu", "resources": []}],
    }], "resources": {"requests": {"cpu": "1"}}}});
    let r = patch(done).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    let stored = &r.body["status"];
    assert!(stored["containerStatuses"][0].get("allocatedResourcesStatus").is_none(), "{stored}");
    assert!(stored.get("resources").is_none(), "{stored}");
    assert_eq!(stored["qosClass"], "BestEffort");

    let running = json!({"status": {"containerStatuses": [{
        "name": "c", "image": "nginx", "imageID": "", "ready": true, "restartCount": 1,
        "state": {"running": {}},
    }], "qosClass": "Guaranteed", "conditions": [{"type": "bad type", "status": "True"}]}});
    let r = patch(running).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    let causes: Vec<(&str, &str)> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            ("metadata.conditions[0].Type", "FieldValueInvalid"),
            ("status.qosClass", "FieldValueInvalid"),
            ("status.containerStatuses[0].state", "FieldValueForbidden"),
        ]
    );
    assert_eq!(r.body["details"]["causes"][2]["message"], "Forbidden: may not be transitioned to non-terminated state");
    let r = c.get(&format!("{PODS}/p")).await;
    assert_eq!(r.body["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
    // A write without a status keeps the QoS class.
    let r = patch(json!({"status": null})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["status"], json!({"qosClass": "BestEffort"}));
}

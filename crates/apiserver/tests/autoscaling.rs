//! HorizontalPodAutoscalers over HTTP in both versions kube-apiserver serves: autoscaling/v2 and
//! autoscaling/v1 show one set of objects, v1 with its CPU target and the rest in kube's
//! round-trip annotations; a v1 client reading and writing back loses nothing of a v2 object;
//! watches of either version see the writes of both; kubectl's `autoscale` and `get hpa`, and the
//! Python client's AutoscalingV1Api, work unchanged.

mod common;

use common::*;
use serde_json::{Value, json};

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn v2_hpa(name: &str) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}})
}

#[tokio::test]
async fn v1_and_v2_show_one_set_of_objects() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get("/apis/autoscaling").await;
    assert_eq!(
        (r.body["versions"][0]["version"].as_str(), r.body["versions"][1]["version"].as_str()),
        (Some("v2"), Some("v1"))
    );
    assert_eq!(r.body["preferredVersion"]["version"], "v2");
    let r = c.get("/apis/autoscaling/v1").await;
    assert_eq!(r.body["resources"][0]["name"], "horizontalpodautoscalers", "{}", r.body);
    assert_eq!(r.body["resources"][0]["shortNames"], json!(["hpa"]));

    let mut v1_watch = c.watch(&format!("{V1}?watch=true")).await;
    let created = c.post(V2, &v2_hpa("web")).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let added = until(&mut v1_watch, "the v1 ADDED", |e| e["type"] == "ADDED").await;
    assert_eq!(added["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(added["object"]["spec"]["targetCPUUtilizationPercentage"], 60);

    // v2's defaults complete the behavior.
    assert_eq!(created.body["spec"]["behavior"]["scaleUp"]["selectPolicy"], "Max");
    assert_eq!(created.body["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
    // v1: the CPU target, the other metric and the behavior in kube's annotations.
    let v1 = c.get(&format!("{V1}/web")).await.body;
    assert_eq!(
        v1["spec"],
        json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 60})
    );
    assert_eq!(v1["status"], json!({"currentReplicas": 0, "desiredReplicas": 0}));
    let annotations = &v1["metadata"]["annotations"];
    assert_eq!(
        annotations[METRICS],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#
    );
    assert_eq!(
        annotations[BEHAVIOR],
        concat!(
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},"#,
            r#"{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},"#,
            r#""ScaleDown":{"StabilizationWindowSeconds":120,"SelectPolicy":"Max","#,
            r#""Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":null}}"#
        )
    );
    assert_eq!(v1["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
    let listed = c.get(V1).await.body;
    assert_eq!(listed["kind"], "HorizontalPodAutoscalerList");
    assert_eq!(listed["apiVersion"], "autoscaling/v1");
    assert_eq!(listed["items"][0]["spec"]["targetCPUUtilizationPercentage"], 60);

    // A v1 client's read-modify-write keeps everything v1 cannot say.
    let mut v2_watch = c.watch(&format!("{V2}?watch=true&resourceVersion={}", rv_of(&v1))).await;
    let mut changed = v1.clone();
    changed["metadata"]["labels"] = json!({"team": "web"});
    changed["spec"]["targetCPUUtilizationPercentage"] = json!(70);
    let r = c.put(&format!("{V1}/web"), &changed).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(r.body["metadata"]["annotations"][METRICS], annotations[METRICS]);
    let modified = until(&mut v2_watch, "the v2 MODIFIED", |e| e["type"] == "MODIFIED").await;
    let v2 = c.get(&format!("{V2}/web")).await.body;
    assert_eq!(modified["object"], v2);
    assert_eq!(v2["metadata"]["labels"], json!({"team": "web"}));
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    let mut expected = created.body["spec"].clone();
    expected["metrics"] = json!([
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]);
    assert_eq!(v2["spec"], expected);

    // Writing v1's annotations through v2 stores nothing of them.
    let mut through_v2 = v2.clone();
    through_v2["metadata"]["annotations"] = json!({METRICS: "[]", "note": "kept"});
    let r = c.put(&format!("{V2}/web"), &through_v2).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["annotations"], json!({"note": "kept"}));

    // Created through v1 with no target: kube's 80% CPU default, and v1's status shape.
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}, "maxReplicas": 3}});
    let r = c.post(V1, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["minReplicas"], 1);
    assert_eq!(r.body["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(r.body["metadata"]["managedFields"][0]["apiVersion"], "autoscaling/v1");
    let v2 = c.get(&format!("{V2}/api")).await.body;
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    // Deleted through either version, gone from both.
    assert_eq!(c.delete(&format!("{V1}/api")).await.code, 200);
    assert_eq!(c.get(&format!("{V2}/api")).await.code, 404);
    assert_eq!(c.delete(&format!("{V2}/web")).await.code, 200);
    assert_eq!(c.get(&format!("{V1}/web")).await.code, 404);
}

#[tokio::test]
async fn status_written_through_v1_keeps_the_v2_details() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(V2, &v2_hpa("web")).await.code, 201);
    let status = json!({"status": {"currentReplicas": 3, "desiredReplicas": 4,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 75, "averageValue": "300m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"}]}});
    let r = c.patch(&format!("{V2}/web/status"), "application/merge-patch+json", &status).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let v1 = c.get(&format!("{V1}/web")).await.body;
    assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 75);
    assert_eq!(v1["status"]["desiredReplicas"], 4);
    assert_eq!(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/conditions"],
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"ReadyForNewScale"}]"#
    );
    // A v1 status update of the replicas alone leaves the rest as it was.
    let mut update = v1.clone();
    update["status"]["currentReplicas"] = json!(4);
    let r = c.put(&format!("{V1}/web/status"), &update).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let v2 = c.get(&format!("{V2}/web")).await.body;
    assert_eq!(v2["status"]["currentReplicas"], 4);
    assert_eq!(v2["status"]["currentMetrics"], status["status"]["currentMetrics"]);
    assert_eq!(v2["status"]["conditions"], status["status"]["conditions"]);
    assert_eq!(v2["spec"]["metrics"].as_array().map(Vec::len), Some(2));

    // A v1 replace of the resource without the annotations changes no status (nor the other
    // metric, which v1 cannot say without its annotation).
    let mut replaced = c.get(&format!("{V1}/web")).await.body;
    replaced["metadata"].as_object_mut().unwrap().remove("annotations");
    replaced["spec"]["maxReplicas"] = json!(12);
    let r = c.put(&format!("{V1}/web"), &replaced).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let v2 = c.get(&format!("{V2}/web")).await.body;
    assert_eq!(v2["spec"]["maxReplicas"], 12);
    assert_eq!(v2["status"]["conditions"], status["status"]["conditions"]);
    assert_eq!(v2["status"]["currentMetrics"], status["status"]["currentMetrics"]);
    assert_eq!(v2["spec"]["metrics"].as_array().map(Vec::len), Some(1), "{v2}");

    // A v1 status write carries status in its annotations: edited conditions are taken, and
    // without `current-metrics` the CPU utilization is the current metric.
    let mut update = c.get(&format!("{V1}/web")).await.body;
    let annotations = update["metadata"]["annotations"].as_object_mut().unwrap();
    annotations.remove("autoscaling.alpha.kubernetes.io/current-metrics");
    annotations.insert(
        "autoscaling.alpha.kubernetes.io/conditions".into(),
        json!(r#"[{"type":"ScalingActive","status":"False","lastTransitionTime":"2026-01-02T00:00:00Z","reason":"FailedGetResourceMetric"}]"#),
    );
    update["status"]["currentCPUUtilizationPercentage"] = json!(90);
    let r = c.put(&format!("{V1}/web/status"), &update).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let v2 = c.get(&format!("{V2}/web")).await.body;
    assert_eq!(
        v2["status"]["conditions"],
        json!([{"type": "ScalingActive", "status": "False", "lastTransitionTime": "2026-01-02T00:00:00Z", "reason": "FailedGetResourceMetric"}])
    );
    assert_eq!(
        v2["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 90}}}])
    );
    assert_eq!(v2["spec"]["maxReplicas"], 12);
}

const PY_V1: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.AutoscalingV1Api()
body = client.V1HorizontalPodAutoscaler(
    metadata=client.V1ObjectMeta(name="py"),
    spec=client.V1HorizontalPodAutoscalerSpec(
        scale_target_ref=client.V1CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web"),
        max_replicas=4, target_cpu_utilization_percentage=50))
v1.create_namespaced_horizontal_pod_autoscaler("default", body)
got = v1.read_namespaced_horizontal_pod_autoscaler("py", "default")
listed = v1.list_namespaced_horizontal_pod_autoscaler("default")
print(json.dumps({"v1_target": got.spec.target_cpu_utilization_percentage, "v1_min": got.spec.min_replicas,
    "listed": [h.metadata.name for h in listed.items]}))
"#;

#[tokio::test]
async fn the_python_client_uses_autoscaling_v1() {
    // This client knows autoscaling/v1 alone.
    let s = server().await;
    let c = Client::new(&s);
    let dir = common::tools::tempdir("python-hpa");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = common::tools::python(PY_V1, &[kc.to_str().unwrap()]).await;
    let got: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(got, json!({"v1_target": 50, "v1_min": 1, "listed": ["py"]}));
    let v2 = c.get(&format!("{V2}/py")).await.body;
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50, "{v2}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn kubectl_autoscales_and_lists() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    assert_eq!(c.post("/apis/apps/v1/namespaces/default/deployments", &deployment).await.code, 201);
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let dir = tempdir("kubectl-hpa");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["autoscale", "deployment", "web", "--max=5", "--cpu-percent=60"]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(out.trim(), "horizontalpodautoscaler.autoscaling/web autoscaled", "{bin}");
        let v2 = c.get(&format!("{V2}/web")).await.body;
        assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 60, "{bin}: {v2}");
        assert_eq!(v2["spec"]["maxReplicas"], 5);
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "hpa"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(lines[0], ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"], "{bin}: {out}");
        assert_eq!(lines[1][..6], ["web", "Deployment/web", "cpu:", "<unknown>/60%", "1", "5"], "{bin}: {out}");
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json"])
                .await;
        assert!(ok, "{bin}: {out}{err}");
        let v1: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (v1["apiVersion"].as_str(), v1["spec"]["targetCPUUtilizationPercentage"].as_i64()),
            (Some("autoscaling/v1"), Some(60))
        );
        assert_eq!(c.delete(&format!("{V2}/web")).await.code, 200);

        // A v1 manifest applied, changed and applied again (a strategic merge patch of the v1
        // form), then applied server-side.
        let manifest = |max: u32, cpu: u32| {
            format!(
                "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: applied\n  namespace: default\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n  maxReplicas: {max}\n  targetCPUUtilizationPercentage: {cpu}\n"
            )
        };
        let file = dir.join("hpa.yaml");
        for (max, cpu, extra) in [(4, 50, None), (6, 55, None), (7, 65, Some("--server-side"))] {
            std::fs::write(&file, manifest(max, cpu)).unwrap();
            let mut args = vec!["apply", "-f", file.to_str().unwrap()];
            args.extend(extra);
            let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
            assert!(ok, "{bin} {args:?}: {out}{err}");
            let v2 = c.get(&format!("{V2}/applied")).await.body;
            assert_eq!(v2["spec"]["maxReplicas"], max, "{bin} {args:?}: {v2}");
            assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], cpu, "{bin} {args:?}");
        }
        assert_eq!(c.delete(&format!("{V2}/applied")).await.code, 200);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn invalid_autoscalers_get_kubes_422_in_either_version() {
    let s = server().await;
    let c = Client::new(&s);
    let mut body = v2_hpa("bad");
    body["spec"]["minReplicas"] = json!(4);
    body["spec"]["maxReplicas"] = json!(3);
    let r = c.post(V2, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "HorizontalPodAutoscaler.autoscaling \"bad\" is invalid: spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"
    );
    assert_eq!(r.body["details"]["causes"].as_array().map(Vec::len), Some(1), "{}", r.body);

    // A v1 object is judged in the v2 form, with kube's v2 paths.
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}});
    let r = c.post(V1, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "HorizontalPodAutoscaler.autoscaling \"bad\" is invalid: spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"
    );
    assert_eq!(r.body["details"]["causes"].as_array().map(Vec::len), Some(1), "{}", r.body);
    // A behavior annotation without policies is judged before v2's defaults would fill them.
    let mut body = body.clone();
    body["spec"]["targetCPUUtilizationPercentage"] = json!(50);
    body["metadata"]["annotations"] = json!({BEHAVIOR: r#"{"ScaleUp":{"StabilizationWindowSeconds":30}}"#});
    let r = c.post(V1, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueRequired", "message": "Required value: must specify at least one Policy", "field": "spec.behavior.scaleUp.policies"}])
    );
    assert_eq!(c.get(&format!("{V2}/bad")).await.code, 404);
}

#[tokio::test]
async fn a_policy_for_v2_judges_v1_writes_in_the_v2_form() {
    let s = server().await;
    let c = Client::new(&s);
    let rule = |policy: Option<&str>| {
        let mut m = json!({"resourceRules": [{"apiGroups": ["autoscaling"], "apiVersions": ["v2"],
            "operations": ["CREATE", "UPDATE"], "resources": ["horizontalpodautoscalers"]}]});
        if let Some(p) = policy {
            m["matchPolicy"] = json!(p);
        }
        m
    };
    // Judged in binding-name order: `a-exact` would answer first if it judged a request.
    for (name, policy) in [("equivalent", None), ("a-exact", Some("Exact"))] {
        let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": {"matchConstraints": rule(policy), "validations": [
                {"expression": "object.spec.metrics.size() <= 1 && request.kind.version == 'v2' && request.requestKind.version == request.resource.version",
                 "messageExpression": "'judged as ' + request.kind.version + ' for ' + request.requestKind.version"}]}});
        let r = c.post("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", &body).await;
        assert_eq!(r.code, 201, "{}", r.body);
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}});
        let r = c.post("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", &binding).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    assert_eq!(c.get("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings").await.code, 200);
    // Through v1 the `equivalent` policy sees the v2 object (two metrics, one from the
    // annotation) and a request judged as v2 for v1; `a-exact` does not judge it.
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "annotations": {METRICS: r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}]"#}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
    let r = c.post(V1, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "horizontalpodautoscalers.autoscaling \"web\" is forbidden: ValidatingAdmissionPolicy 'equivalent' with binding 'equivalent' denied request: judged as v2 for v1"
    );
    // Through v2 both judge it.
    let mut v2 = v2_hpa("web");
    v2["spec"]["metrics"].as_array_mut().unwrap().truncate(1);
    assert_eq!(c.post(V2, &v2).await.code, 201);
    let r = c.post(V2, &v2_hpa("web2")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("'a-exact'"), "{}", r.body);
}

//! Workloads are judged as kube-apiserver judges them, over HTTP and through real clients:
//! selectors that match their templates, templates whose pods restart Always, selectors that do
//! not change, StatefulSets that change only what kube lets them; nothing refused is stored.

mod common;

use common::*;
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const STATEFULSETS: &str = "/apis/apps/v1/namespaces/default/statefulsets";
const MERGE: &str = "application/merge-patch+json";

fn deployment(name: &str, selector: Value, labels: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": selector, "template": {"metadata": {"labels": labels}, "spec": pod_spec()}}})
}

#[tokio::test]
async fn workloads_are_judged_over_http() {
    let s = server().await;
    let c = Client::new(&s);
    // A selector that does not pick the template's pods.
    let r =
        c.post(DEPLOYMENTS, &deployment("web", json!({"matchLabels": {"app": "web"}}), json!({"app": "api"}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"
    );
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "spec.template.metadata.labels",
            "message": "Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"}])
    );
    assert_eq!(c.get(&format!("{DEPLOYMENTS}/web")).await.code, 404);

    // No selector, pods that do not restart, both rolling parameters zero.
    let mut bad = deployment("bad", Value::Null, json!({"app": "bad"}));
    bad["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    bad["spec"]["strategy"] = json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}});
    let r = c.post(DEPLOYMENTS, &bad).await;
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"bad\" is invalid: [spec.selector: Required value, \
         spec.template.metadata.labels: Invalid value: {\"app\":\"bad\"}: `selector` does not match template `labels`, \
         spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\", \
         spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0]"
    );

    // A selector does not change; the rest of the spec may.
    let good = deployment("good", json!({"matchLabels": {"app": "good"}}), json!({"app": "good", "v": "1"}));
    assert_eq!(c.post(DEPLOYMENTS, &good).await.code, 201);
    let before = c.get(&format!("{DEPLOYMENTS}/good")).await.body;
    let narrower = json!({"spec": {"selector": {"matchLabels": {"v": "1"}}}});
    let r = c.patch(&format!("{DEPLOYMENTS}/good"), MERGE, &narrower).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"good\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"good\",\"v\":\"1\"}}: field is immutable"
    );
    assert_eq!(c.get(&format!("{DEPLOYMENTS}/good")).await.body, before);
    let scaled = c.patch(&format!("{DEPLOYMENTS}/good"), MERGE, &json!({"spec": {"replicas": 3}})).await;
    assert_eq!((scaled.code, &scaled.body["spec"]["replicas"]), (200, &json!(3)));
    let scale = json!({"spec": {"replicas": 5}});
    assert_eq!(c.patch(&format!("{DEPLOYMENTS}/good/scale"), MERGE, &scale).await.code, 200);

    // A StatefulSet: its service name stays, its template and replicas change.
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod_spec()},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
    assert_eq!(c.post(STATEFULSETS, &sts).await.code, 201);
    let stored = c.get(&format!("{STATEFULSETS}/db")).await.body;
    // What a client reads back it may send back.
    assert_eq!(c.put(&format!("{STATEFULSETS}/db"), &stored).await.code, 200);
    let r = c.patch(&format!("{STATEFULSETS}/db"), MERGE, &json!({"spec": {"serviceName": "other"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than \
         'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', \
         'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    );
    let image =
        json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "pause:3.11"}]}}}});
    let r = c.patch(&format!("{STATEFULSETS}/db"), "application/strategic-merge-patch+json", &image).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["template"]["spec"]["containers"][0]["image"], "pause:3.11");
    // Strategies kube knows: the StatefulSet's is judged, its pods' host names are the controller's.
    let strategy = json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}}});
    let r = c.patch(&format!("{STATEFULSETS}/db"), MERGE, &strategy).await;
    assert_eq!(
        r.body["message"],
        "StatefulSet.apps \"db\" is invalid: spec.updateStrategy.rollingUpdate: Invalid value: \
         {\"Partition\":1,\"MaxUnavailable\":null}: only allowed for updateStrategy 'RollingUpdate'"
    );
    let named = json!({"spec": {"template": {"spec": {"hostname": "db.0", "subdomain": "db"}}}});
    assert_eq!(c.patch(&format!("{STATEFULSETS}/db"), MERGE, &named).await.code, 200);
    let mut canary = deployment("canary", json!({"matchLabels": {"app": "c"}}), json!({"app": "c"}));
    canary["spec"]["strategy"] = json!({"type": "Canary"});
    let r = c.post(DEPLOYMENTS, &canary).await;
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"canary\" is invalid: spec.strategy: Unsupported value: \
         {\"Type\":\"Canary\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""
    );
}

const PY_CREATE: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
apps = client.AppsV1Api()
def deployment(labels):
    container = client.V1Container(name="c", image="registry.k8s.io/pause:3.10")
    return client.V1Deployment(metadata=client.V1ObjectMeta(name="web"), spec=client.V1DeploymentSpec(
        selector=client.V1LabelSelector(match_labels={"app": "web"}),
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
            spec=client.V1PodSpec(containers=[container]))))
try:
    apps.create_namespaced_deployment("default", deployment({"app": "api"}))
    print(json.dumps({"created": True}), flush=True)
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}), flush=True)
created = apps.create_namespaced_deployment("default", deployment({"app": "web"}))
print(json.dumps({"created": created.metadata.name}), flush=True)
"#;

#[tokio::test]
async fn the_python_client_gets_kubes_refusal() {
    let s = server().await;
    let dir = common::tools::tempdir("python-workloads");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = common::tools::python(PY_CREATE, &[kc.to_str().unwrap()]).await;
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["status"], 422, "{lines:?}");
    assert_eq!(lines[0]["body"]["reason"], "Invalid");
    assert_eq!(lines[0]["body"]["details"]["causes"][0]["field"], "spec.template.metadata.labels");
    assert_eq!(lines[1], json!({"created": "web"}));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn kubectl_applies_and_is_refused_as_by_kube() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let c = Client::new(&s);
        let dir = tempdir("kubectl-workloads");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let manifest = |labels: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels:\n      \
                 app: web\n  template:\n    metadata:\n      labels:\n        app: {labels}\n    spec:\n      containers:\n      \
                 - name: c\n        image: registry.k8s.io/pause:3.10\n"
            )
        };
        let file = dir.join("web.yaml");
        std::fs::write(&file, manifest("api")).unwrap();
        let f = file.to_str().unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(!ok, "{bin}: {out}");
        // kubectl words the 422 from its causes.
        assert!(
            err.contains(
                "The Deployment \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: \
                 `selector` does not match template `labels`"
            ),
            "{bin}: {err}"
        );
        assert_eq!(c.get(&format!("{DEPLOYMENTS}/web")).await.code, 404, "{bin}");
        std::fs::write(&file, manifest("web")).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(ok, "{bin}: {out}{err}");
        // Applied again unchanged, scaled and restarted: all accepted.
        for args in [
            vec!["apply", "-f", f],
            vec!["scale", "deployment/web", "--replicas=3"],
            vec!["rollout", "restart", "deployment/web"],
            vec!["set", "image", "deployment/web", "c=registry.k8s.io/pause:3.11"],
        ] {
            let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
            assert!(ok, "{bin} {args:?}: {out}{err}");
        }
        let d = c.get(&format!("{DEPLOYMENTS}/web")).await.body;
        assert_eq!(d["spec"]["replicas"], 3, "{bin}");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "registry.k8s.io/pause:3.11", "{bin}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

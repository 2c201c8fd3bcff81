//! PersistentVolumeClaims over HTTP as kube-apiserver takes them: specs judged (nothing stored
//! on refusal), data sources kept, dropped or copied as kube's create strategy does, specs that
//! change only by growing a bound claim, a StatefulSet's claim templates judged on create; and
//! what kubectl and the Python client see of it.

mod common;

use common::*;
use serde_json::{Value, json};

const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

fn claim(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec})
}

const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";

fn storage_class(name: &str, annotations: Value, expands: bool) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations}, "provisioner": "disks.example.com",
        "allowVolumeExpansion": expands})
}

fn sized(size: &str) -> Value {
    json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}})
}

#[tokio::test]
async fn claims_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let bad = claim(
        "data",
        json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "0"}},
            "volumeMode": "Raw"}),
    );
    let r = c.post(CLAIMS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "PersistentVolumeClaim \"data\" is invalid: [spec.accessModes: Forbidden: may not use ReadWriteOncePod with \
         other access modes, spec.resources[storage]: Invalid value: \"0\": must be greater than zero, \
         spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"]"
    );
    let r = c.post(CLAIMS, &claim("data", json!({}))).await;
    assert_eq!(
        r.body["message"],
        "PersistentVolumeClaim \"data\" is invalid: [spec.accessModes: Required value: at least 1 access mode is \
         required, spec.resources[storage]: Required value]"
    );
    assert_eq!(c.get(&format!("{CLAIMS}/data")).await.code, 404);

    // Data sources: an unknown kind alone is dropped, a snapshot is kept and mirrored.
    let mut foreign = sized("1Gi");
    foreign["dataSource"] = json!({"kind": "Foo", "name": "x"});
    let r = c.post(CLAIMS, &claim("foreign", foreign)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!((r.body["spec"].get("dataSource"), r.body["spec"].get("dataSourceRef")), (None, None));
    let mut restored = sized("1Gi");
    let snapshot = json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "nightly"});
    restored["dataSource"] = snapshot.clone();
    let r = c.post(CLAIMS, &claim("restored", restored)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!((&r.body["spec"]["dataSource"], &r.body["spec"]["dataSourceRef"]), (&snapshot, &snapshot));
    // Two sources that disagree.
    let mut both = sized("1Gi");
    both["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "a"});
    both["dataSourceRef"] = json!({"kind": "PersistentVolumeClaim", "name": "b"});
    let r = c.post(CLAIMS, &claim("both", both)).await;
    assert_eq!(
        r.body["message"],
        "PersistentVolumeClaim \"both\" is invalid: spec: Invalid value: {}: must match dataSourceRef"
    );
}

#[tokio::test]
async fn only_a_bound_claims_request_changes() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(CLASSES, &storage_class("elastic", json!({}), true)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut spec = sized("1Gi");
    spec["storageClassName"] = json!("elastic");
    let r = c.post(CLAIMS, &claim("data", spec)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let grow = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &grow).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except \
             resources.requests and volumeAttributesClassName for bound claims\n@@ "
        ),
        "{message}"
    );
    assert!(message.contains("\n-   \"storage\": \"1Gi\"\n+   \"storage\": \"2Gi\"\n"), "{message}");
    // Bound (as its controller marks it), it grows, and shrinks only while above its capacity.
    let bound = json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
    assert_eq!(c.patch(&format!("{CLAIMS}/data/status"), merge, &bound).await.code, 200);
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &grow).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["resources"]["requests"]["storage"], "2Gi");
    let back = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &back).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "PersistentVolumeClaim \"data\" is invalid: spec.resources.requests.storage: Forbidden: field can not be less \
         than status.capacity"
    );
    // Other fields stay, and a spec fault is reported twice among the causes, as kube does.
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &json!({"spec": {"accessModes": ["ReadWriteSome"]}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let fields: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["spec.accessModes", "spec.accessModes", "spec"], "{}", r.body);
    // A volume name is set once.
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &json!({"spec": {"volumeName": "pv-1"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c.patch(&format!("{CLAIMS}/data"), merge, &json!({"spec": {"volumeName": "pv-2"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except \
             resources.requests and volumeAttributesClassName for bound claims\n@@ "
        ) && message.contains("\n- \"VolumeName\": \"pv-1\",\n+ \"VolumeName\": \"pv-2\",\n"),
        "{message}"
    );
}

#[tokio::test]
async fn statefulset_claim_templates_are_judged_on_create() {
    let s = server().await;
    let c = Client::new(&s);
    let mut sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod_spec()},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}});
    let statefulsets = "/apis/apps/v1/namespaces/default/statefulsets";
    let r = c.post(statefulsets, &sts).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "StatefulSet.apps \"db\" is invalid: spec.volumeClaimTemplates[0].spec.accessModes: Required value: at least 1 \
         access mode is required"
    );
    sts["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = json!(["ReadWriteOnce"]);
    let r = c.post(statefulsets, &sts).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_claim_rules() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let dir = tempdir("kubectl-claims");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let file = dir.join("claim.yaml");
    let f = file.to_str().unwrap().to_string();
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  \
         resources:\n    requests:\n      storage: 1Gi\n",
    )
    .unwrap();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", &f]).await;
        assert!(ok, "{bin}: {out}{err}");
        let grow = r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#;
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["patch", "pvc", "data", "-p", grow]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "The PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation \
                 except resources.requests and volumeAttributesClassName for bound claims"
            ),
            "{bin}: {err}"
        );
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "pvc", "data"]).await;
        assert!(ok, "{bin}: {out}{err}");
    }
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
pvc = client.V1PersistentVolumeClaim(metadata=client.V1ObjectMeta(name="p"),
    spec=client.V1PersistentVolumeClaimSpec(access_modes=["ReadWriteMany"],
        resources=client.V1ResourceRequirements(requests={"storage": "-1Gi"})))
try:
    core.create_namespaced_persistent_volume_claim("default", pvc)
    print(json.dumps({"created": True}))
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["status"], 422, "{line}");
    assert_eq!(
        line["body"]["message"],
        "PersistentVolumeClaim \"p\" is invalid: spec.resources[storage]: Invalid value: \"-1Gi\": must be greater \
         than zero"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! Real clients against the server: kubectl, the official Python client and
//! kube-rs (`kube_runtime::watcher`, list-watch and streaming lists; strategic merge and JSON
//! patches from kube-rs and the Python client).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::tools::{kubectl_bin, self_signed, tempdir};
use common::*;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

async fn kubectl(kc: &std::path::Path, cache: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    kubectl_bin("kubectl", kc, cache, args).await
}

#[tokio::test]
async fn kubectl_crud_apply_and_watch() {
    // kubectl only sends bearer tokens over TLS: serve HTTPS with a
    // self-signed certificate and require a token.
    let dir = tempdir("kubectl");
    let (cert, key) = self_signed(&dir).await;
    let s = informer_apiserver::testing::builder().token("kt").tls(cert, key).start().await.unwrap();
    assert!(s.url().starts_with("https://"));
    let kc = dir.join("config");
    let cache = dir.join("cache");
    s.write_kubeconfig(&kc).unwrap();
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "pods"]).await;
    assert!(ok, "{out}{err}");
    assert!(err.contains("No resources found") || out.contains("No resources found"), "{out}{err}");

    let manifest = dir.join("pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kp\n  labels: {app: k}\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    )
    .unwrap();
    let (ok, out, err) = kubectl(&kc, &cache, &["create", "-f", manifest.to_str().unwrap(), "--validate=false"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("pod/kp created"), "{out}");
    // Server-side printing: kubectl shows the pod columns.
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "pods"]).await;
    assert!(ok, "{err}");
    let header: Vec<&str> = out.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "{out}");
    assert!(
        out.lines().nth(1).unwrap_or("").starts_with("kp ") && out.contains("0/1") && out.contains("Pending"),
        "{out}"
    );
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "pod", "kp", "-o", "json"]).await;
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["labels"]["app"], "k");
    // `all` is the category of the built-in workloads, as kube declares it.
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "all", "-o", "name"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.lines().any(|l| l == "pod/kp"), "{out}");

    let applied = dir.join("apply.yaml");
    std::fs::write(
        &applied,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ka\n  labels: {app: a}\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    )
    .unwrap();
    let (ok, out, err) = kubectl(&kc, &cache, &["apply", "-f", applied.to_str().unwrap(), "--validate=false"]).await;
    assert!(ok && out.contains("pod/ka created"), "{out}{err}");
    std::fs::write(
        &applied,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ka\n  labels: {app: b}\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    )
    .unwrap();
    let (ok, out, err) = kubectl(&kc, &cache, &["apply", "-f", applied.to_str().unwrap(), "--validate=false"]).await;
    assert!(ok && out.contains("pod/ka configured"), "{out}{err}");
    assert_eq!(s.get("pods", "default", "ka").await.unwrap()["metadata"]["labels"]["app"], "b");

    // kubectl get --watch: read the initial lines, see a new pod, then kill it.
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["get", "pods", "--watch", "--no-headers"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let l = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("kubectl watch output")
            .unwrap()
            .expect("line");
        seen.push(l);
    }
    assert!(seen[0].starts_with("ka ") && seen[1].starts_with("kp "), "{seen:?}");
    s.create("pods", pod("kw", json!({}))).await.unwrap();
    let l = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("kubectl watch event")
        .unwrap()
        .unwrap();
    assert!(l.starts_with("kw "), "{l}");
    child.kill().await.ok();

    let (ok, out, err) = kubectl(&kc, &cache, &["delete", "pod", "kp", "ka"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("pod \"kp\" deleted"), "{out}");
    assert_eq!(s.get("pods", "default", "kp").await.unwrap_err().code, 404);
    let (ok, _, err) = kubectl(&kc, &cache, &["get", "pod", "kp"]).await;
    assert!(!ok && err.contains("pods \"kp\" not found"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

const PY: &str = r#"
import sys, json
try:
    import kubernetes
except ImportError:
    print("IMPORT-ERROR", flush=True)
    sys.exit(3)
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_pod, namespace="default", timeout_seconds=30):
    print(json.dumps({"type": ev["type"], "name": ev["object"].metadata.name,
                      "rv": ev["object"].metadata.resource_version}), flush=True)
    if ev["type"] == "DELETED":
        w.stop()
"#;

#[tokio::test]
async fn python_client_watch() {
    let probe = Command::new("/usr/bin/python3").args(["-c", "import kubernetes"]).output().await;
    let importable = probe.map(|o| o.status.success()).unwrap_or(false);
    assert!(
        importable,
        "the Python Kubernetes client is not importable by /usr/bin/python3: install it with `apt-get install -y python3-kubernetes`"
    );
    let s = server().await;
    let dir = tempdir("python");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    s.create("pods", pod("py", json!({"app": "py"}))).await.unwrap();
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", PY, kc.to_str().unwrap()])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> serde_json::Value {
        let l = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("python output")
            .unwrap()
            .expect("python ended early");
        serde_json::from_str(&l).unwrap_or_else(|_| panic!("bad line {l}"))
    };
    let e = next().await;
    assert_eq!((e["type"].as_str(), e["name"].as_str()), (Some("ADDED"), Some("py")));
    s.patch("pods", "default", "py", &json!({"metadata": {"labels": {"x": "1"}}})).await.unwrap();
    let e = next().await;
    assert_eq!(e["type"], "MODIFIED");
    s.delete("pods", "default", "py").await.unwrap();
    let e = next().await;
    assert_eq!(e["type"], "MODIFIED", "a pod is written terminating before it goes");
    let e = next().await;
    assert_eq!(e["type"], "DELETED");
    assert_eq!(e["rv"], s.resource_version().to_string());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert!(status.success());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn kubectl_scale_deployment() {
    let dir = tempdir("kubectl-scale");
    let s = server().await;
    let (kc, cache) = (dir.join("config"), dir.join("cache"));
    s.write_kubeconfig(&kc).unwrap();
    let manifest = dir.join("web.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
    )
    .unwrap();
    let (ok, out, err) = kubectl(&kc, &cache, &["create", "-f", manifest.to_str().unwrap(), "--validate=false"]).await;
    assert!(ok && out.contains("deployment.apps/web created"), "{out}{err}");
    let (ok, out, err) = kubectl(&kc, &cache, &["scale", "deployment", "web", "--replicas=3"]).await;
    assert!(ok && out.contains("deployment.apps/web scaled"), "{out}{err}");
    let web = s.get("deployments", "default", "web").await.unwrap();
    assert_eq!(web["spec"]["replicas"], 3);
    assert_eq!(web["metadata"]["generation"], 2);
    // A precondition on the current replica count, as kubectl checks it.
    let (ok, out, err) =
        kubectl(&kc, &cache, &["scale", "deployment/web", "--current-replicas=2", "--replicas=5"]).await;
    assert!(!ok && err.contains("Expected replicas to be 2, was 3"), "{out}{err}");
    assert_eq!(s.get("deployments", "default", "web").await.unwrap()["spec"]["replicas"], 3);
    let (ok, out, err) =
        kubectl(&kc, &cache, &["scale", "deployment/web", "--current-replicas=3", "--replicas=5"]).await;
    assert!(ok, "{out}{err}");
    assert_eq!(s.get("deployments", "default", "web").await.unwrap()["spec"]["replicas"], 5);
    std::fs::remove_dir_all(&dir).ok();
}

/// A namespace created with kubectl shows kube's finalizer and phase; `kubectl delete namespace`
/// waits until the namespace and its contents are gone (the namespace controller empties it).
/// (`kubectl create namespace` and `kubectl create configmap` send protobuf, which this server
/// does not read: manifests are created instead.)
#[tokio::test]
async fn kubectl_namespace_lifecycle() {
    let dir = tempdir("kubectl-ns");
    let s = server().await;
    let (kc, cache) = (dir.join("config"), dir.join("cache"));
    s.write_kubeconfig(&kc).unwrap();
    let create = |name: &str, manifest: &str| {
        let path = dir.join(name);
        std::fs::write(&path, manifest).unwrap();
        path.to_str().unwrap().to_string()
    };
    let ns = create("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n");
    let cm = create("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n");
    let (ok, out, err) = kubectl(&kc, &cache, &["create", "-f", &ns, "--validate=false"]).await;
    assert!(ok && out.contains("namespace/x created"), "{out}{err}");
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "ns", "x", "-o", "json"]).await;
    assert!(ok, "{out}{err}");
    let ns: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    assert_eq!(ns["metadata"]["labels"], json!({"kubernetes.io/metadata.name": "x"}));
    let (ok, out, err) = kubectl(&kc, &cache, &["create", "-f", &cm, "-n", "x", "--validate=false"]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = kubectl(&kc, &cache, &["create", "-f", &cm, "-n", "missing", "--validate=false"]).await;
    assert!(!ok && err.contains("namespaces \"missing\" not found"), "{out}{err}");
    let (ok, out, err) = kubectl(&kc, &cache, &["delete", "namespace", "default"]).await;
    assert!(!ok && err.contains("this namespace may not be deleted"), "{out}{err}");
    // kubectl delete waits for the namespace to be gone.
    let (ok, out, err) = kubectl(&kc, &cache, &["delete", "namespace", "x"]).await;
    assert!(ok && out.contains("namespace \"x\" deleted"), "{out}{err}");
    assert_eq!(s.get("namespaces", "", "x").await.unwrap_err().code, 404);
    assert!(s.list("configmaps", Some("x")).await.unwrap().is_empty());
    let (ok, out, err) = kubectl(&kc, &cache, &["get", "ns", "x"]).await;
    assert!(!ok && err.contains("namespaces \"x\" not found"), "{out}{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn kube_rs_status_and_scale() {
    use k8s_openapi::api::apps::v1::Deployment;
    let s = server().await;
    let client = kube_client(&s).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created =
        pods.create(&PostParams::default(), &serde_json::from_value(pod("st", json!({}))).unwrap()).await.unwrap();
    // A plain replace keeps the stored status; replace_status writes it.
    let mut running = created.clone();
    running.status.get_or_insert_with(Default::default).phase = Some("Running".into());
    let kept = pods.replace("st", &PostParams::default(), &running).await.unwrap();
    assert_eq!(kept.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    let written = pods.replace_status("st", &PostParams::default(), &running).await.unwrap();
    assert_eq!(written.status.and_then(|s| s.phase).as_deref(), Some("Running"));
    let patched = pods
        .patch_status("st", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Succeeded"}})))
        .await
        .unwrap();
    assert_eq!(patched.status.and_then(|s| s.phase).as_deref(), Some("Succeeded"));

    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let d = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    deployments.create(&PostParams::default(), &serde_json::from_value(d).unwrap()).await.unwrap();
    let scale = deployments.get_scale("d").await.unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    assert_eq!(scale.status.and_then(|s| s.selector).as_deref(), Some("app=d"));
    let scaled = deployments
        .patch_scale("d", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}})))
        .await
        .unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(deployments.get("d").await.unwrap().spec.and_then(|s| s.replicas), Some(4));
}

async fn follow(config: watcher::Config) {
    let s = informer_apiserver::testing::builder().token("kr").start().await.unwrap();
    for i in 0..3 {
        s.create("pods", pod(&format!("pre{i}"), json!({"app": "kr"}))).await.unwrap();
    }
    let client = kube_client(&s).await;
    let api: Api<Pod> = Api::namespaced(client, "default");
    let mut stream = watcher(api.clone(), config).boxed();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("watcher event")
            .expect("stream ended")
            .expect("watcher error")
    };
    assert!(matches!(next().await, watcher::Event::Init));
    let mut init = Vec::new();
    loop {
        match next().await {
            watcher::Event::InitApply(p) => init.push(p.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            e => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(init, ["pre0", "pre1", "pre2"]);
    // Writes through kube-rs itself.
    let p: Pod = serde_json::from_value(pod("live", json!({"app": "kr"}))).unwrap();
    api.create(&PostParams::default(), &p).await.unwrap();
    match next().await {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("live")),
        e => panic!("unexpected {e:?}"),
    }
    api.patch("live", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"v": "2"}}})))
        .await
        .unwrap();
    match next().await {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.labels.unwrap()["v"], "2"),
        e => panic!("unexpected {e:?}"),
    }
    api.delete("live", &DeleteParams::default()).await.unwrap();
    match next().await {
        watcher::Event::Apply(p) => assert!(p.metadata.deletion_timestamp.is_some(), "terminating first: {p:?}"),
        e => panic!("unexpected {e:?}"),
    }
    match next().await {
        watcher::Event::Delete(p) => assert_eq!(p.metadata.name.as_deref(), Some("live")),
        e => panic!("unexpected {e:?}"),
    }
    // A dropped watch is resumed transparently from the last RV.
    s.drop_watches();
    s.create("pods", pod("after-drop", json!({}))).await.unwrap();
    match next().await {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("after-drop")),
        e => panic!("unexpected {e:?}"),
    }
}

#[tokio::test]
async fn kube_rs_watcher_list_watch() {
    follow(watcher::Config::default().page_size(2)).await;
}

#[tokio::test]
async fn kube_rs_watcher_streaming_lists() {
    follow(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn kube_rs_over_tls_with_token() {
    let dir = tempdir("kube-tls");
    let (cert, key) = self_signed(&dir).await;
    let s = informer_apiserver::testing::builder().token("tls-token").tls(cert, key).start().await.unwrap();
    s.create("pods", pod("secure", json!({}))).await.unwrap();
    let api: Api<Pod> = Api::namespaced(kube_client(&s).await, "default");
    let p = api.get("secure").await.unwrap();
    assert_eq!(p.metadata.name.as_deref(), Some("secure"));
    assert_eq!(s.request_counts().get, 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// A Deployment `name` with the containers `(name, image)`, as JSON.
fn deployment(name: &str, containers: &[(&str, &str)]) -> serde_json::Value {
    let containers: Vec<_> = containers.iter().map(|(n, i)| json!({"name": n, "image": i})).collect();
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}}})
}

#[tokio::test]
async fn kube_rs_patches_merge_lists_by_key() {
    use k8s_openapi::api::apps::v1::Deployment;
    let s = server().await;
    let deployments: Api<Deployment> = Api::namespaced(kube_client(&s).await, "default");
    let d = serde_json::from_value(deployment("web", &[("web", "nginx:1.27")])).unwrap();
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let pp = PatchParams::default();
    // A strategic merge patch adds a container by name; the other stays.
    let sidecar =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}});
    let d = deployments.patch("web", &pp, &Patch::Strategic(sidecar)).await.unwrap();
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(containers_of(&v), pairs(&[("sidecar", "busybox:1.37"), ("web", "nginx:1.27")]));
    // `$patch: delete` removes one by name.
    let delete = json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}});
    let d = deployments.patch("web", &pp, &Patch::Strategic(delete)).await.unwrap();
    assert_eq!(containers_of(&serde_json::to_value(&d).unwrap()), pairs(&[("web", "nginx:1.27")]));
    // A JSON patch addresses list elements by index.
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"}
    ]))
    .unwrap();
    let d = deployments.patch("web", &pp, &Patch::<()>::Json(ops)).await.unwrap();
    assert_eq!(containers_of(&serde_json::to_value(&d).unwrap()), pairs(&[("web", "nginx:1.28")]));
}

const PY_PATCH: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
apps = client.AppsV1Api()
# A dict body is sent as a strategic merge patch.
d = apps.patch_namespaced_deployment("web", "default",
    {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}})
print(json.dumps([[c.name, c.image] for c in d.spec.template.spec.containers]), flush=True)
# A list body is sent as a JSON patch.
d = apps.patch_namespaced_deployment("web", "default",
    [{"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "nginx:1.28"}])
print(json.dumps([[c.name, c.image] for c in d.spec.template.spec.containers]), flush=True)
"#;

#[tokio::test]
async fn python_client_patches_merge_lists_by_key() {
    let s = server().await;
    let dir = tempdir("python-patch");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    s.create("deployments", deployment("web", &[("web", "nginx:1.27")])).await.unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new("/usr/bin/python3").args(["-c", PY_PATCH, kc.to_str().unwrap()]).kill_on_drop(true).output(),
    )
    .await
    .expect("python timed out")
    .expect("python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        vec![
            json!([["sidecar", "busybox:1.37"], ["web", "nginx:1.27"]]),
            json!([["sidecar", "busybox:1.37"], ["web", "nginx:1.28"]])
        ]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Creates `v` through kube-rs's typed API and reads it back by name and in a list.
async fn round_trip<K>(api: &Api<K>, v: serde_json::Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let obj: K = serde_json::from_value(v).unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let name = created.meta().name.clone().unwrap();
    let read = api.get(&name).await.unwrap();
    assert_eq!(read.meta().uid, created.meta().uid);
    let listed = api.list(&Default::default()).await.unwrap();
    assert!(listed.items.iter().any(|o| o.meta().name.as_deref() == Some(name.as_str())), "{name} listed");
    read
}

#[tokio::test]
async fn kube_rs_writes_and_reads_the_built_in_kinds_operators_create() {
    use k8s_openapi::api::{
        apps::v1::DaemonSet,
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::{CronJob, Job},
        core::v1::{Endpoints, PersistentVolumeClaim, ServiceAccount},
        discovery::v1::EndpointSlice,
        networking::v1::{Ingress, NetworkPolicy},
        policy::v1::PodDisruptionBudget,
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
        storage::v1::StorageClass,
    };
    let s = server().await;
    let client = kube_client(&s).await;
    let ns = "default";
    let template = json!({"metadata": {"labels": {"app": "x"}},
                          "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});

    round_trip(&Api::<ServiceAccount>::namespaced(client.clone(), ns), json!({"metadata": {"name": "operator"}})).await;
    let rule = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]);
    round_trip(&Api::<Role>::namespaced(client.clone(), ns), json!({"metadata": {"name": "reader"}, "rules": rule}))
        .await;
    let binding = round_trip(
        &Api::<RoleBinding>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": "default"},
                            {"kind": "User", "name": "alice"}]}),
    )
    .await;
    // kube's defaults: a User's apiGroup is RBAC's.
    assert_eq!(binding.subjects.unwrap()[1].api_group.as_deref(), Some("rbac.authorization.k8s.io"));
    round_trip(&Api::<ClusterRole>::all(client.clone()), json!({"metadata": {"name": "reader"}, "rules": rule})).await;
    // Server-side apply, as operators write their RBAC.
    let roles = Api::<ClusterRole>::all(client.clone());
    let applied = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": "operator", "labels": {"app": "op"}},
                         "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]});
    let params = PatchParams::apply("operator").force();
    roles.patch("operator", &params, &Patch::Apply(&applied)).await.unwrap();
    let mut again = applied.clone();
    again["rules"][0]["verbs"] = json!(["get"]);
    let r = roles.patch("operator", &params, &Patch::Apply(&again)).await.unwrap();
    assert_eq!(r.rules.unwrap()[0].verbs, ["get"]);
    assert_eq!(r.metadata.managed_fields.unwrap()[0].manager.as_deref(), Some("operator"));
    round_trip(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        json!({"metadata": {"name": "reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"}}),
    )
    .await;

    let job = round_trip(
        &Api::<Job>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "migrate"}, "spec": {"template": template}}),
    )
    .await;
    let uid = job.metadata.uid.clone().unwrap();
    // A Job without labels takes its pods' labels.
    assert_eq!(job.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str), Some("x"));
    let spec = job.spec.unwrap();
    assert_eq!((spec.backoff_limit, spec.completions, spec.parallelism), (Some(6), Some(1), Some(1)));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    // As kube's Job strategy: pods labelled with the Job's name and uid, selected by the uid.
    let selected = spec.selector.unwrap().match_labels.unwrap();
    assert_eq!(selected.get("batch.kubernetes.io/controller-uid"), Some(&uid));
    let labels = spec.template.metadata.unwrap().labels.unwrap();
    assert_eq!(labels.get("batch.kubernetes.io/job-name").map(String::as_str), Some("migrate"));
    assert_eq!(labels.get("app").map(String::as_str), Some("x"));
    // As kube: a Job's pods must not restart Always, the pod default.
    let always = json!({"metadata": {"name": "forever"},
                        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let e = Api::<Job>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &serde_json::from_value(always).unwrap())
        .await
        .unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            r#"Job.batch "forever" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        )
    );
    let cron = round_trip(
        &Api::<CronJob>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "nightly"},
               "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": template}}}}),
    )
    .await;
    let cron = cron.spec.unwrap();
    assert_eq!(cron.concurrency_policy.as_deref(), Some("Allow"));
    // A CronJob's job template gets pod defaults only, not a Job's.
    let job_template = cron.job_template.spec.unwrap();
    assert_eq!(job_template.backoff_limit, None);
    assert_eq!(job_template.template.spec.unwrap().dns_policy.as_deref(), Some("ClusterFirst"));
    // A DaemonSet's pods restart Always.
    let mut daemon_template = template.clone();
    daemon_template["spec"].as_object_mut().unwrap().remove("restartPolicy");
    let ds = round_trip(
        &Api::<DaemonSet>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "agent"},
               "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": daemon_template}}),
    )
    .await;
    let generation = ds.metadata.annotations.as_ref().and_then(|a| a.get("deprecated.daemonset.template.generation"));
    assert_eq!(generation.map(String::as_str), Some("1"));
    assert_eq!(ds.spec.unwrap().update_strategy.unwrap().type_.as_deref(), Some("RollingUpdate"));
    // A change of the template moves the template generation.
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}});
    let ds = Api::<DaemonSet>::namespaced(client.clone(), ns)
        .patch("agent", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .unwrap();
    let generation = ds.metadata.annotations.as_ref().and_then(|a| a.get("deprecated.daemonset.template.generation"));
    assert_eq!(generation.map(String::as_str), Some("2"));
    round_trip(
        &Api::<PodDisruptionBudget>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "keep-one"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}),
    )
    .await;
    round_trip(
        &Api::<Ingress>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "web"}, "spec": {"rules": [{"host": "example.com"}]}}),
    )
    .await;
    let policy = round_trip(
        &Api::<NetworkPolicy>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
    )
    .await;
    let policy = policy.spec.unwrap();
    assert_eq!(policy.policy_types.unwrap(), ["Ingress", "Egress"]);
    assert_eq!(policy.egress.unwrap()[0].ports.as_ref().unwrap()[0].protocol.as_deref(), Some("TCP"));
    let pvc = round_trip(
        &Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "data"},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(pvc.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    round_trip(&Api::<Endpoints>::namespaced(client.clone(), ns), json!({"metadata": {"name": "web"}})).await;
    round_trip(
        &Api::<EndpointSlice>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "web-1"}, "addressType": "IPv4", "endpoints": []}),
    )
    .await;
    let hpa = round_trip(
        &Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), ns),
        json!({"metadata": {"name": "web"},
               "spec": {"maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}),
    )
    .await;
    let hpa = hpa.spec.unwrap();
    assert_eq!(hpa.min_replicas, Some(1));
    let cpu = hpa.metrics.unwrap()[0].resource.clone().unwrap();
    assert_eq!((cpu.name.as_str(), cpu.target.average_utilization), ("cpu", Some(80)));
    round_trip(
        &Api::<StorageClass>::all(client),
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/disk"}),
    )
    .await;
}

#[tokio::test]
async fn events_of_either_api_are_one_collection_as_in_kube() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event;
    let s = server().await;
    let client = kube_client(&s).await;
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    // Written through events.k8s.io/v1, as kube-rs's event recorder writes them.
    let e: Event = serde_json::from_value(json!({
        "metadata": {"name": "pulled"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "note": "image pulled",
        "reason": "Pulled", "type": "Normal", "action": "Pull",
        "reportingController": "example.com/operator", "reportingInstance": "operator-0"}))
    .unwrap();
    let created = events.create(&PostParams::default(), &e).await.unwrap();
    assert_eq!(created.note.as_deref(), Some("image pulled"));
    let as_core = core.get("pulled").await.unwrap();
    assert_eq!(as_core.message.as_deref(), Some("image pulled"));
    assert_eq!(as_core.involved_object.name.as_deref(), Some("p"));
    assert_eq!(as_core.reporting_component.as_deref(), Some("example.com/operator"));
    assert_eq!(as_core.metadata.resource_version, created.metadata.resource_version);
    // Written through core/v1, read through events.k8s.io/v1.
    let c: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "scheduled"}, "involvedObject": {"kind": "Pod", "name": "p"},
        "message": "assigned", "reason": "Scheduled", "type": "Normal", "count": 1}))
    .unwrap();
    core.create(&PostParams::default(), &c).await.unwrap();
    let as_events = events.get("scheduled").await.unwrap();
    assert_eq!(as_events.note.as_deref(), Some("assigned"));
    assert_eq!(as_events.deprecated_count, Some(1));
    assert_eq!(as_events.regarding.and_then(|r| r.name).as_deref(), Some("p"));
    let names: Vec<String> =
        events.list(&Default::default()).await.unwrap().items.into_iter().filter_map(|e| e.metadata.name).collect();
    assert_eq!(names, ["pulled", "scheduled"]);
    // An update through one API is seen through the other (a recorder counting a series, as
    // kube-rs's does); the rest of an events.k8s.io/v1 event is immutable; a delete removes both.
    let patch = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}});
    events.patch("pulled", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(core.get("pulled").await.unwrap().series.and_then(|s| s.count), Some(2));
    let patch = json!({"note": "image pulled again", "regarding": {"name": "q"}, "series": {"count": 1}});
    let e = events.patch("pulled", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            "Event \"pulled\" is invalid: [series.count: Invalid value: \"\": should be at least 2, involvedObject: \
             Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"default\",\"Name\":\"q\",\"UID\":\"\",\
             \"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable, message: Invalid \
             value: \"image pulled again\": field is immutable]"
        )
    );
    // Through core/v1, kube checks an update as it checks a create.
    let mut changed = core.get("pulled").await.unwrap();
    changed.message = Some("changed".into());
    core.replace("pulled", &PostParams::default(), &changed).await.unwrap();
    core.delete("pulled", &DeleteParams::default()).await.unwrap();
    assert!(events.get("pulled").await.is_err());

    // events.k8s.io/v1 events are checked as kube checks them: an event time, who reports it, its
    // type, no deprecated fields; named as kube's one Event type.
    let bad: Event = serde_json::from_value(json!({
        "metadata": {"name": "bad"}, "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Pulled", "type": "Odd", "deprecatedCount": 3}))
    .unwrap();
    let e = events.create(&PostParams::default(), &bad).await.unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            "Event \"bad\" is invalid: [eventTime: Required value, type: Invalid value: \"\": has invalid value: Odd, count: Invalid value: \"\": needs to be unset]"
        )
    );
    // A core/v1 event with an event time names who reports it (`reportingComponent` in that API).
    let timed: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "timed"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Pulled", "action": "Pull",
        "reportingInstance": "operator-0"}))
    .unwrap();
    let e = core.create(&PostParams::default(), &timed).await.unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert!(
        status.message.starts_with(
            "Event \"timed\" is invalid: [reportingComponent: Required value, reportingComponent: Invalid value: \"\": name part must be non-empty, "
        ),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn pods_take_the_priority_of_the_class_they_name_or_the_default_one() {
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    let s = server().await;
    let client = kube_client(&s).await;
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let mut names: Vec<String> =
        classes.list(&Default::default()).await.unwrap().items.into_iter().filter_map(|c| c.metadata.name).collect();
    names.sort();
    assert_eq!(
        names,
        ["system-cluster-critical", "system-node-critical"],
        "kube's system classes exist from the start"
    );
    let gold: PriorityClass = serde_json::from_value(json!({"metadata": {"name": "gold"}, "value": 1000,
        "preemptionPolicy": "Never"}))
    .unwrap();
    classes.create(&PostParams::default(), &gold).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = |name: &str, class: Option<&str>| {
        let mut p = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if let Some(c) = class {
            p["spec"]["priorityClassName"] = json!(c);
        }
        serde_json::from_value::<Pod>(p).unwrap()
    };
    let p = pods.create(&PostParams::default(), &pod("gold-pod", Some("gold"))).await.unwrap().spec.unwrap();
    assert_eq!((p.priority, p.preemption_policy.as_deref()), (Some(1000), Some("Never")));
    let e = pods.create(&PostParams::default(), &pod("tin-pod", Some("tin"))).await.unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (403, "pods \"tin-pod\" is forbidden: no PriorityClass with name tin was found")
    );
    // A global default class gives its priority and name to pods that name none.
    let silver: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": "silver"}, "value": 500, "globalDefault": true})).unwrap();
    classes.create(&PostParams::default(), &silver).await.unwrap();
    let p = pods.create(&PostParams::default(), &pod("plain-pod", None)).await.unwrap().spec.unwrap();
    assert_eq!((p.priority, p.priority_class_name.as_deref()), (Some(500), Some("silver")));
    assert_eq!(classes.get("silver").await.unwrap().preemption_policy.as_deref(), Some("PreemptLowerPriority"));

    // Classes are checked as kube checks them.
    let refused = |e: kube::Error| match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("{other}"),
    };
    let class = |v: Value| serde_json::from_value::<PriorityClass>(v).unwrap();
    let e = classes
        .create(
            &PostParams::default(),
            &class(json!({"metadata": {"name": "bronze"}, "value": 1,
        "globalDefault": true})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused(e),
        (403, "priorityclasses.scheduling.k8s.io \"bronze\" is forbidden: PriorityClass silver is already marked as default. Only one default can exist".to_string())
    );
    let e = classes
        .create(&PostParams::default(), &class(json!({"metadata": {"name": "platinum"}, "value": 2_000_000_000})))
        .await
        .unwrap_err();
    assert_eq!(
        refused(e),
        (422, "PriorityClass.scheduling.k8s.io \"platinum\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000".to_string())
    );
    let e = classes
        .create(&PostParams::default(), &class(json!({"metadata": {"name": "system-mine"}, "value": 1})))
        .await
        .unwrap_err();
    assert_eq!(
        refused(e),
        (422, "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class".to_string())
    );
    let e = classes
        .create(
            &PostParams::default(),
            &class(json!({"metadata": {"name": "tin"}, "value": 1, "preemptionPolicy": ""})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused(e),
        (422, "PriorityClass.scheduling.k8s.io \"tin\" is invalid: preemptionPolicy: Required value".to_string())
    );
    let e = classes.patch("gold", &PatchParams::default(), &Patch::Merge(json!({"value": 2000}))).await.unwrap_err();
    assert_eq!(
        refused(e),
        (
            422,
            "PriorityClass.scheduling.k8s.io \"gold\" is invalid: value: Forbidden: may not be changed in an update."
                .to_string()
        )
    );
}

#[tokio::test]
async fn reviews_answer_who_a_client_is_and_what_it_may_do() {
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let s = server().await;
    let client = kube_client(&s).await;
    // kube-rs, as a controller checking its permissions at start.
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let asked: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"verb": "update", "group": "apps", "resource": "deployments", "namespace": "default"}}
    }))
    .unwrap();
    let answer = reviews.create(&PostParams::default(), &asked).await.unwrap();
    assert!(answer.status.unwrap().allowed);
    let e = reviews
        .create(&PostParams::default(), &serde_json::from_value(json!({"spec": {}})).unwrap())
        .await
        .unwrap_err();
    let kube::Error::Api(status) = e else { panic!("{e}") };
    assert_eq!(status.code, 422, "{}", status.message);
    assert_eq!(
        status.message,
        ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );

    // kubectl's whoami and can-i, as the server's user and as one it impersonates.
    let dir = tempdir("kubectl-auth");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().cloned().unwrap();
    let run = |args: &'static [&'static str]| {
        let (bin, kc, cache) = (bin.clone(), kc.clone(), dir.join("cache"));
        async move { kubectl_bin(&bin, &kc, &cache, args).await }
    };
    let (ok, out, err) = run(&["auth", "whoami", "-o", "json"]).await;
    assert!(ok, "{out}{err}");
    let me: Value = serde_json::from_str(&out).unwrap();
    assert!(me["metadata"]["creationTimestamp"].is_string(), "{me}");
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
    );
    let (ok, out, err) = run(&["auth", "whoami", "--as=system:serviceaccount:ops:robot", "-o", "json"]).await;
    assert!(ok, "{out}{err}");
    let robot: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(robot["status"]["userInfo"]["username"], "system:serviceaccount:ops:robot");
    let (ok, out, err) = run(&["auth", "can-i", "delete", "deployments", "-n", "default"]).await;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "yes");
    let (ok, out, err) = run(&["auth", "can-i", "--list", "-n", "default"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.lines().any(|l| l.split_whitespace().next() == Some("*.*")), "{out}");
    // A namespaced review is created in a namespace: there is no cluster-wide path for it.
    let c = Client::new(&s);
    let local = json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods"}}});
    assert_eq!(c.post("/apis/authorization.k8s.io/v1/localsubjectaccessreviews", &local).await.code, 404);
    let r = c.post("/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", &local).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"\": must match metadata.namespace"
    );
}

//! Protobuf request bodies over HTTP: kubectl's `create configmap` and `create secret` as
//! recorded against kube-apiserver v1.35 (`tests/fixtures/kube-apiserver/50-*`, `51-*`, the
//! objects as kube-apiserver then showed them in JSON: `53-*`, `54-*`), kubectl's protobuf
//! creates of every version on the machine, and the Status answers to bodies that cannot be
//! read.

mod common;

use common::recorded::{comparable, recorded};
use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use common::*;
use informer_apiserver::ResourceInfo;
use serde_json::{Value, json};

#[tokio::test]
async fn kubectl_protobuf_creates_store_what_kube_apiserver_stores() {
    let s = server().await;
    let c = Client::new(&s);
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    for (create, view) in [
        ("50-proto-kubectl-create-configmap.txt", "53-proto-get-configmap-json-view.txt"),
        ("51-proto-kubectl-create-secret.txt", "54-proto-get-secret-json-view.txt"),
    ] {
        let step = recorded(create);
        assert_eq!(step.content_type, "application/vnd.kubernetes.protobuf");
        let r = c.send_raw(step.method.clone(), &step.path, step.request_body.clone(), &step.content_type).await;
        assert_eq!(r.code, 201, "{create}: {}", r.body);
        let expected = recorded(view).response;
        assert_eq!(comparable(&r.body), comparable(&expected), "{create}");
        // kube-apiserver keeps no generation for ConfigMaps and Secrets.
        assert_eq!(r.body["metadata"].get("generation"), expected["metadata"].get("generation"), "{create}");
        let name = expected["metadata"]["name"].as_str().unwrap();
        let plural = if expected["kind"] == "Secret" { "secrets" } else { "configmaps" };
        let stored = c.get(&format!("/api/v1/namespaces/fixtures/{plural}/{name}")).await;
        assert_eq!(comparable(&stored.body), comparable(&expected), "{create}: stored");
    }
}

#[tokio::test]
async fn unreadable_protobuf_bodies_are_refused_whole() {
    let s = informer_apiserver::testing::builder()
        .register(ResourceInfo::new("example.com", "v1", "widgets", "Widget", true))
        .start()
        .await
        .expect("start");
    let c = Client::new(&s);
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let configmap = recorded("50-proto-kubectl-create-configmap.txt").request_body;
    let secret = recorded("51-proto-kubectl-create-secret.txt").request_body;
    let pb = "application/vnd.kubernetes.protobuf";
    let configmaps = "/api/v1/namespaces/fixtures/configmaps";

    // Cut short: 400, nothing stored.
    let r = c.send_raw(http::Method::POST, configmaps, configmap[..configmap.len() - 9].to_vec(), pb).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{}", r.body);
    // Not an envelope at all.
    let r = c.send_raw(http::Method::POST, configmaps, b"{\"kind\":\"ConfigMap\"}".to_vec(), pb).await;
    assert_eq!(r.code, 400, "{}", r.body);
    // A Secret sent to the ConfigMaps.
    let r = c.send_raw(http::Method::POST, configmaps, secret, pb).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(c.get(configmaps).await.body["items"], json!([]));
    // Custom resources have no protobuf form.
    let widgets = "/apis/example.com/v1/namespaces/fixtures/widgets";
    let r = c.send_raw(http::Method::POST, widgets, configmap, pb).await;
    assert_eq!(r.code, 415, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
}

#[tokio::test]
async fn kubectl_create_sends_protobuf_and_succeeds() {
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-protobuf");
    let kc = dir.join("kubeconfig");
    s.write_kubeconfig(&kc).unwrap();
    for (i, bin) in kubectl_versions().iter().enumerate() {
        let ns = format!("pb-{i}");
        let cache = dir.join(format!("cache-{i}"));
        let run = |args: Vec<String>| {
            let (bin, kc, cache) = (bin.clone(), kc.clone(), cache.clone());
            async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (ok, out, err) = kubectl_bin(&bin, &kc, &cache, &args).await;
                assert!(ok, "{bin} {args:?}: {out}{err}");
            }
        };
        let a = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        run(a(&format!("create namespace {ns}"))).await;
        run(a(&format!("create configmap settings -n {ns} --from-literal=a=b --from-literal=c=d"))).await;
        run(a(&format!("create secret generic creds -n {ns} --from-literal=p=q"))).await;
        run(a(&format!("create deployment web -n {ns} --image=nginx:1.27 --replicas=0 --port=8080"))).await;
        run(a(&format!("create service clusterip web -n {ns} --tcp=80:8080"))).await;

        let get = |path: String| {
            let c = &c;
            async move { c.get(&path).await.body }
        };
        let cm = get(format!("/api/v1/namespaces/{ns}/configmaps/settings")).await;
        assert_eq!(cm["data"], json!({"a": "b", "c": "d"}), "{bin}");
        let secret = get(format!("/api/v1/namespaces/{ns}/secrets/creds")).await;
        assert_eq!((&secret["data"], &secret["type"]), (&json!({"p": "cQ=="}), &json!("Opaque")), "{bin}");
        let d = get(format!("/apis/apps/v1/namespaces/{ns}/deployments/web")).await;
        assert_eq!(d["spec"]["replicas"], 0, "{bin}: an explicit zero is kept");
        let container = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            (&container["image"], &container["ports"][0]["containerPort"]),
            (&json!("nginx:1.27"), &json!(8080))
        );
        assert_eq!(d["spec"]["selector"]["matchLabels"], json!({"app": "web"}), "{bin}");
        assert!(d["metadata"].get("creationTimestamp").and_then(Value::as_str).is_some(), "{bin}");
        let svc = get(format!("/api/v1/namespaces/{ns}/services/web")).await;
        let port = &svc["spec"]["ports"][0];
        assert_eq!((&port["port"], &port["targetPort"]), (&json!(80), &json!(8080)), "{bin}: {svc}");
    }
}

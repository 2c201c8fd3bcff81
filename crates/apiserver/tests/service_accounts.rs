//! Pods and their service accounts over HTTP, as kube-apiserver with kube-controller-manager
//! handles them: every namespace gets the account `default` (again when it is deleted), a pod
//! runs as it unless it names another, which must exist, and gets its API credentials mounted
//! as kube's ServiceAccount admission mounts them (or not, as the pod or its account chooses),
//! with the account's image pull secrets; an account that enforces its mountable secrets and a
//! mirror pod are refused in kube's words, and so are ephemeral containers the pod's account does
//! not allow; `kubectl run` and `kubectl create token` in a new namespace work as on a cluster.

mod common;

use common::*;
use serde_json::{Value, json};

fn pod_with(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn create_ns(c: &Client, name: &str) {
    let r = c.post("/api/v1/namespaces", &json!({"metadata": {"name": name}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn pods_run_as_the_default_account_every_namespace_gets_with_its_credentials_mounted() {
    let s = server().await;
    let c = Client::new(&s);
    create_ns(&c, "team").await;
    // Created at once after its namespace: admission waits for the account's controller.
    let spec = json!({
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [
            {"name": "app", "image": "nginx"},
            {"name": "own", "image": "nginx", "volumeMounts": [{"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}
        ],
        "volumes": [{"name": "mine", "emptyDir": {}}],
    });
    let r = c.post("/api/v1/namespaces/team/pods", &pod_with("web", spec)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let spec = &r.body["spec"];
    assert_eq!((&spec["serviceAccountName"], &spec["serviceAccount"]), (&json!("default"), &json!("default")));
    let volume = spec["volumes"][1].clone();
    let name = volume["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5, "{name}");
    assert_eq!(
        volume["projected"],
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]})
    );
    let mount = json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    assert_eq!(spec["initContainers"][0]["volumeMounts"], mount);
    assert_eq!(spec["containers"][0]["volumeMounts"], mount);
    assert_eq!(spec["containers"][1]["volumeMounts"][0]["name"], "mine", "a mount already there is kept");
    assert_eq!(spec["volumes"].as_array().unwrap().len(), 2);

    // The account is the controller's; deleted, it comes back.
    let accounts = "/api/v1/namespaces/team/serviceaccounts";
    let account = c.get(&format!("{accounts}/default")).await;
    assert_eq!(account.code, 200);
    assert_eq!(account.body.get("secrets"), None, "{}", account.body);
    let listed = c.get(accounts).await;
    let mut w = c
        .watch(&format!(
            "{accounts}?watch=1&resourceVersion={}",
            listed.body["metadata"]["resourceVersion"].as_str().unwrap()
        ))
        .await;
    assert_eq!(c.delete(&format!("{accounts}/default")).await.code, 200);
    until(&mut w, "the account deleted", |e| e["type"] == "DELETED").await;
    let again = until(&mut w, "the account created again", |e| e["type"] == "ADDED").await;
    assert_eq!(again["object"]["metadata"]["name"], "default");
    assert_ne!(again["object"]["metadata"]["uid"], account.body["metadata"]["uid"]);

    // A pod created just after the account went waits for it to come back, as kube retries it.
    assert_eq!(c.delete(&format!("{accounts}/default")).await.code, 200);
    let soon = pod_with("soon", json!({"containers": [{"name": "c", "image": "i"}]}));
    let r = c.post("/api/v1/namespaces/team/pods", &soon).await;
    assert_eq!((r.code, &r.body["spec"]["serviceAccountName"]), (201, &json!("default")), "{}", r.body);
}

#[tokio::test]
async fn the_account_named_must_exist_and_decides_what_is_mounted() {
    let s = server().await;
    let c = Client::new(&s);
    let accounts = "/api/v1/namespaces/default/serviceaccounts";
    let r = c
        .post(
            PODS,
            &pod_with("lost", json!({"serviceAccountName": "builder", "containers": [{"name": "c", "image": "i"}]})),
        )
        .await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "pods \"lost\" is forbidden: error looking up service account default/builder: serviceaccount \"builder\" not found"
    );

    // A pod with a generated name is named by its prefix, as kube names it.
    let spec = json!({"serviceAccountName": "builder", "containers": [{"name": "c", "image": "i"}]});
    let r = c.post(PODS, &json!({"metadata": {"generateName": "worker-"}, "spec": spec})).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "pods \"worker-\" is forbidden: error looking up service account default/builder: serviceaccount \"builder\" not found"
    );

    let builder = json!({"metadata": {"name": "builder"}, "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "registry"}]});
    assert_eq!(c.post(accounts, &builder).await.code, 201);
    // The deprecated field names the account too.
    let r = c
        .post(
            PODS,
            &pod_with("quiet", json!({"serviceAccount": "builder", "containers": [{"name": "c", "image": "i"}]})),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["serviceAccountName"], "builder");
    assert!(r.body["spec"].get("volumes").is_none(), "the account asks for no token: {}", r.body);
    assert_eq!(r.body["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
    // The pod's choice wins over the account's.
    let spec = json!({"serviceAccountName": "builder", "automountServiceAccountToken": true,
        "imagePullSecrets": [{"name": "own"}], "containers": [{"name": "c", "image": "i"}]});
    let r = c.post(PODS, &pod_with("loud", spec)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["volumes"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["spec"]["imagePullSecrets"], json!([{"name": "own"}]));

    // An account that enforces its mountable secrets.
    let strict = json!({"metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
        "secrets": [{"name": "allowed"}]});
    assert_eq!(c.post(accounts, &strict).await.code, 201);
    let env = json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "other", "key": "p"}}}]);
    let spec = json!({"serviceAccountName": "strict", "containers": [{"name": "app", "image": "i", "env": env}]});
    let r = c.post(PODS, &pod_with("sneaky", spec)).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "pods \"sneaky\" is forbidden: container app with envVar PASSWORD referencing secret.secretName=\"other\" \
         is not allowed because service account strict does not reference that secret"
    );

    // Mirror pods are not given an account, and may not name one.
    let mirror = |name: &str, mut spec: Value| {
        spec["nodeName"] = json!("node-1");
        json!({"metadata": {"name": name, "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": spec})
    };
    let r = c.post(PODS, &mirror("static", json!({"containers": [{"name": "c", "image": "i"}]}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(
        r.body["spec"].get("serviceAccountName").is_none() && r.body["spec"].get("volumes").is_none(),
        "{}",
        r.body
    );
    let r = c
        .post(
            PODS,
            &mirror("named", json!({"serviceAccountName": "builder", "containers": [{"name": "c", "image": "i"}]})),
        )
        .await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["message"], "pods \"named\" is forbidden: a mirror pod may not reference service accounts");
}

#[tokio::test]
async fn ephemeral_containers_are_judged_by_the_pods_account() {
    let s = server().await;
    let c = Client::new(&s);
    create_ns(&c, "debug").await;
    let accounts = "/api/v1/namespaces/debug/serviceaccounts";
    let strict = json!({"metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
        "secrets": [{"name": "allowed"}]});
    assert_eq!(c.post(accounts, &strict).await.code, 201);
    let spec = json!({"serviceAccountName": "strict", "containers": [{"name": "app", "image": "i"}]});
    let r = c.post("/api/v1/namespaces/debug/pods", &pod_with("web", spec)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let ephemeral = "/api/v1/namespaces/debug/pods/web/ephemeralcontainers";
    let debugger = |secret: &str| {
        json!([{"name": "debugger", "image": "busybox", "targetContainerName": "app",
            "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "t"}}}]}])
    };
    let mut with = r.body.clone();
    with["spec"]["ephemeralContainers"] = debugger("other");
    // kube's plugin refuses with a plain error, which kube answers as a 500 without a reason.
    let refused = c.put(ephemeral, &with).await;
    assert_eq!(
        (refused.code, &refused.body),
        (
            500,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "ephemeral container debugger with envVar TOKEN referencing secret.secretName=\"other\" is not allowed because service account strict does not reference that secret",
            "code": 500})
        )
    );
    with["spec"]["ephemeralContainers"] = debugger("allowed");
    let added = c.put(ephemeral, &with).await;
    assert_eq!(added.code, 200, "{}", added.body);
    // The account must still exist.
    assert_eq!(c.delete(&format!("{accounts}/strict")).await.code, 200);
    let mut more = added.body.clone();
    more["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(json!({"name": "second", "image": "busybox"}));
    let gone = c.put(ephemeral, &more).await;
    assert_eq!(gone.code, 403, "{}", gone.body);
    assert_eq!(
        gone.body["message"],
        "pods \"web\" is forbidden: error looking up service account debug/strict: serviceaccount \"strict\" not found"
    );
}

#[tokio::test]
async fn kubectl_runs_a_pod_and_creates_a_token_in_a_new_namespace() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let dir = tempdir("kubectl-service-accounts");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let bin = kubectl_versions().last().unwrap().clone();
    let run = |args: &'static [&'static str]| {
        let (bin, kc, cache) = (bin.clone(), kc.clone(), cache.clone());
        async move { kubectl_bin(&bin, &kc, &cache, args).await }
    };
    let (ok, out, err) = run(&["create", "namespace", "fresh"]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = run(&["run", "web", "-n", "fresh", "--image=nginx"]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) =
        run(&["get", "pod", "web", "-n", "fresh", "-o", "jsonpath={.spec.serviceAccountName} {.spec.volumes[0].name}"])
            .await;
    assert!(ok && out.starts_with("default kube-api-access-"), "{out}{err}");
    let (ok, out, err) = run(&["create", "token", "default", "-n", "fresh"]).await;
    assert!(ok && out.split('.').count() == 3, "{out}{err}");
}

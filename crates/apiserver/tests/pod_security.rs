//! PodSecurity admission over HTTP, as kube-apiserver's default configuration applies it: a
//! namespace's `pod-security.kubernetes.io/*` labels refuse pods that break the enforced level
//! with kube's 403, warn of pods and workload templates that break the warned level, refuse
//! labels kube cannot read, and warn of existing pods when the enforced level is tightened;
//! kubectl shows the same refusals and warnings.

mod common;

use common::*;
use serde_json::{Value, json};

const NAMESPACES: &str = "/api/v1/namespaces";

fn warnings(r: &Resp) -> Vec<String> {
    r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
}

async fn namespace(c: &Client, name: &str, labels: Value) {
    let r = c.post(NAMESPACES, &json!({"metadata": {"name": name, "labels": labels}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

fn plain_pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
}

/// A pod that meets the restricted level.
fn restricted_pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

const RESTRICTED_FAILURES: &str = concat!(
    r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
    r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
    r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
    r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
);

#[tokio::test]
async fn the_enforced_level_refuses_pods_and_the_warned_level_warns() {
    let s = server().await;
    let c = Client::new(&s);
    namespace(&c, "locked", json!({"pod-security.kubernetes.io/enforce": "restricted"})).await;
    let pods = "/api/v1/namespaces/locked/pods";
    let r = c.post(pods, &plain_pod("web")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(
        r.body["message"],
        format!("pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_FAILURES}")
    );
    assert_eq!(r.body["details"], json!({"name": "web", "kind": "pods"}));
    assert_eq!(c.get(&format!("{pods}/web")).await.code, 404);
    // A dry run is judged too.
    let r = c.post(&format!("{pods}?dryRun=All"), &plain_pod("web")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let r = c.post(pods, &restricted_pod("web")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));

    // Warned, not enforced: created, with kube's warning naming the level's version.
    let labels =
        json!({"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.29"});
    namespace(&c, "watched", labels).await;
    let mut host = plain_pod("host");
    host["spec"]["hostNetwork"] = json!(true);
    host["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}]);
    let r = c.post("/api/v1/namespaces/watched/pods", &host).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [
            r#"299 - "would violate PodSecurity \"baseline:v1.29\": host namespaces (hostNetwork=true), hostPort (container \"c\" uses hostPort 80)""#
        ]
    );

    // A namespace without labels takes every pod.
    let mut privileged = plain_pod("root");
    privileged["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
    let r = c.post("/api/v1/namespaces/default/pods", &privileged).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(warnings(&r).is_empty());
}

#[tokio::test]
async fn workloads_are_warned_of_never_refused() {
    let s = server().await;
    let c = Client::new(&s);
    namespace(&c, "locked", json!({"pod-security.kubernetes.io/enforce": "restricted"})).await;
    let deployment = json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": plain_pod("x")["spec"].clone()}}});
    let r = c.post("/apis/apps/v1/namespaces/locked/deployments", &deployment).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [format!(
            "299 - \"would violate PodSecurity \\\"restricted:latest\\\": {}\"",
            RESTRICTED_FAILURES.replace('"', "\\\"")
        )]
    );
    let cronjob = json!({"metadata": {"name": "nightly"}, "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}}}}}});
    let r = c.post("/apis/batch/v1/namespaces/locked/cronjobs", &cronjob).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let w = warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains(r#"privileged (container \"c\" must not set securityContext.privileged=true)"#), "{w:?}");
}

#[tokio::test]
async fn namespace_labels_are_checked_and_tightening_warns_of_existing_pods() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c
        .post(
            NAMESPACES,
            &json!({"metadata": {"name": "bad", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}}),
        )
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );

    namespace(&c, "apps", json!({})).await;
    let pods = "/api/v1/namespaces/apps/pods";
    for name in ["web-1", "web-2"] {
        assert_eq!(c.post(pods, &plain_pod(name)).await.code, 201);
    }
    assert_eq!(c.post(pods, &restricted_pod("ok")).await.code, 201);
    let mut host = plain_pod("host");
    host["spec"]["hostPID"] = json!(true);
    assert_eq!(c.post(pods, &host).await.code, 201);
    let label = |level: &str| json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}});
    let r = c.patch(&format!("{NAMESPACES}/apps"), "application/merge-patch+json", &label("baseline")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [
            r#"299 - "existing pods in namespace \"apps\" violate the new PodSecurity enforce level \"baseline:latest\"""#,
            r#"299 - "host: host namespaces""#,
        ]
    );
    let r = c.patch(&format!("{NAMESPACES}/apps"), "application/merge-patch+json", &label("restricted")).await;
    assert_eq!(
        warnings(&r),
        [
            r#"299 - "existing pods in namespace \"apps\" violate the new PodSecurity enforce level \"restricted:latest\"""#,
            r#"299 - "host: host namespaces, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile""#,
            r#"299 - "web-1 (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile""#,
        ]
    );
    // Loosening warns of nothing.
    let r = c.patch(&format!("{NAMESPACES}/apps"), "application/merge-patch+json", &label("baseline")).await;
    assert_eq!((r.code, warnings(&r).len()), (200, 0));

    // Existing pods are judged again when their images change, not when their labels do.
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{NAMESPACES}/apps"), merge, &label("restricted")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c.patch(&format!("{pods}/web-1"), merge, &json!({"metadata": {"labels": {"app": "web"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let image = json!({"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}});
    let r = c.patch(&format!("{pods}/web-1"), "application/strategic-merge-patch+json", &image).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with(r#"pods "web-1" is forbidden: violates PodSecurity "restricted:latest""#), "{message}");

    // Labels kube cannot read are refused when a write sets them.
    let odd = json!({"metadata": {"labels": {"pod-security.kubernetes.io/warn-version": "1.2"}}});
    let r = c.patch(&format!("{NAMESPACES}/apps"), merge, &odd).await;
    assert_eq!(r.code, 422, "{}", r.body);
}

#[tokio::test]
async fn kubectl_shows_the_refusal_and_the_warnings() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    namespace(&c, "locked", json!({"pod-security.kubernetes.io/enforce": "restricted"})).await;
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let dir = tempdir("kubectl-psa");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["run", "web", "-n", "locked", "--image=registry.k8s.io/pause:3.10"]).await;
        assert!(!ok, "{bin}: {out}{err}");
        assert_eq!(
            err.trim(),
            format!(
                "Error from server (Forbidden): pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": {}",
                RESTRICTED_FAILURES.replace("\"c\"", "\"web\"")
            ),
            "{bin}"
        );
        let (ok, out, err) = kubectl_bin(
            bin,
            &kc,
            &cache,
            &["create", "deployment", "web", "-n", "locked", "--image=registry.k8s.io/pause:3.10"],
        )
        .await;
        assert!(ok, "{bin}: {out}{err}");
        assert!(err.starts_with("Warning: would violate PodSecurity \"restricted:latest\": "), "{bin}: {err}");
        assert_eq!(c.delete("/apis/apps/v1/namespaces/locked/deployments/web").await.code, 200);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

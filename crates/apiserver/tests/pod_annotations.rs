//! The annotations kube gives a meaning on pods and pod templates, judged over HTTP as
//! kube-apiserver judges them: mirror pods, tolerations written as JSON, the deletion cost,
//! seccomp and AppArmor profiles (a created pod's AppArmor annotations becoming its containers'
//! profiles), what a pod's update and `/status` write may not change of them, and a template's
//! own labels and annotations; with what kubectl and the Python client see of them.

mod common;

use common::*;
use serde_json::{Value, json};

const APP_ARMOR_C: &str = "container.apparmor.security.beta.kubernetes.io/c";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn annotated(name: &str, annotations: Value) -> Value {
    let mut p = pod(name, json!({}));
    p["metadata"]["annotations"] = annotations;
    p
}

fn causes(body: &Value) -> Vec<String> {
    let list = body["details"]["causes"].as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter().map(|c| format!("{}: {}", c["field"].as_str().unwrap(), c["message"].as_str().unwrap())).collect()
}

#[tokio::test]
async fn pod_specific_annotations_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let bad = annotated(
        "p",
        json!({
            "kubernetes.io/config.mirror": "abc",
            "scheduler.alpha.kubernetes.io/tolerations": r#"[{"key": "gpu", "operator": "Exists", "value": "yes"}]"#,
            DELETION_COST: "007",
            "seccomp.security.alpha.kubernetes.io/pod": "localhost/../etc/profile",
            "container.apparmor.security.beta.kubernetes.io/sidecar": "localhost/p",
            APP_ARMOR_C: "enforce",
        }),
    );
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"p\" is invalid: [\
         metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"abc\": must set spec.nodeName if mirror pod \
         annotation is set, \
         metadata.annotations.scheduler.alpha.kubernetes.io/tolerations[0].operator: Invalid value: \"yes\": value must be \
         empty when `operator` is 'Exists', \
         metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"007\": must be a 32bit integer, \
         metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"../etc/profile\": must not contain \
         '..', \
         metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Invalid value: \"enforce\": invalid \
         AppArmor profile name: \"enforce\", \
         metadata.annotations[container.apparmor.security.beta.kubernetes.io/sidecar]: Invalid value: \"sidecar\": \
         container not found]"
    );
    assert_eq!(r.body["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(c.get(&format!("{PODS}/p")).await.code, 404);

    // Tolerations that are not JSON get the decoder's message, after the metadata's own causes.
    let r =
        c.post(PODS, &annotated("p", json!({"Bad Key": "", "scheduler.alpha.kubernetes.io/tolerations": "[1]"}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let found = causes(&r.body);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("metadata.annotations: Invalid value: \"Bad Key\": "), "{found:?}");
    assert_eq!(
        found[1],
        "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/tolerations\": json: cannot unmarshal \
         number into Go value of type core.Toleration"
    );
    let r = c.post(PODS, &annotated("p", json!({"scheduler.alpha.kubernetes.io/tolerations": "[{"}))).await;
    assert_eq!(
        causes(&r.body),
        [
            "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/tolerations\": unexpected end of JSON input"
        ]
    );

    // What kube accepts.
    let mut good = annotated(
        "p",
        json!({
            "kubernetes.io/config.mirror": "abc",
            "scheduler.alpha.kubernetes.io/tolerations": r#"[{"Key": "gpu", "Operator": "Exists"}]"#,
            DELETION_COST: "-20",
            "seccomp.security.alpha.kubernetes.io/pod": "docker/default",
        }),
    );
    good["spec"]["nodeName"] = json!("node-1");
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn a_created_pods_app_armor_annotations_become_its_profiles() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(PODS, &annotated("p", json!({APP_ARMOR_C: "localhost/k8s-nginx"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["spec"]["containers"][0]["securityContext"]["appArmorProfile"],
        json!({"type": "Localhost", "localhostProfile": "k8s-nginx"})
    );
    let warning = r.headers.get("warning").map(|w| w.to_str().unwrap().to_string());
    assert_eq!(
        warning.as_deref(),
        Some(
            "299 - \"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use \
             the \\\"appArmorProfile\\\" field instead\""
        )
    );
    // A container's own profile is kept: one its annotation disagrees with is refused.
    let mut both = annotated("q", json!({APP_ARMOR_C: "runtime/default"}));
    both["spec"]["containers"][0]["securityContext"] = json!({"appArmorProfile": {"type": "Unconfined"}});
    let r = c.post(PODS, &both).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r.body),
        [
            "spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must \
          match"
        ]
    );
}

#[tokio::test]
async fn updates_and_status_writes_keep_mirror_and_app_armor_annotations() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(PODS, &annotated("p", json!({APP_ARMOR_C: "runtime/default", "team": "a"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let path = format!("{PODS}/p");
    let merge = "application/merge-patch+json";

    let r = c.patch(&path, merge, &json!({"metadata": {"annotations": {APP_ARMOR_C: null}}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"p\" is invalid: metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: may \
         not remove or update AppArmor annotations"
    );
    // An update judges the annotations twice, as kube does: the message names the cause once.
    let r = c.patch(&path, merge, &json!({"metadata": {"annotations": {DELETION_COST: "1e3"}}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let cost = "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"1e3\": must be a \
                32bit integer";
    assert_eq!(causes(&r.body), [cost, cost]);
    assert_eq!(r.body["message"], format!("Pod \"p\" is invalid: {cost}"));
    // Other annotations change freely.
    let r = c.patch(&path, merge, &json!({"metadata": {"annotations": {"team": "b", DELETION_COST: "5"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);

    // Through `/status`: the update's rules, then the annotations judged once.
    let r = c
        .patch(
            &format!("{path}/status"),
            merge,
            &json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}),
        )
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r.body),
        [
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
            "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror \
             pod annotation is set",
        ]
    );
    let stored = c.get(&path).await.body;
    assert_eq!(
        stored["metadata"]["annotations"],
        json!({APP_ARMOR_C: "runtime/default", "team": "b", DELETION_COST: "5"})
    );
}

#[tokio::test]
async fn a_templates_labels_and_annotations_are_judged() {
    let s = server().await;
    let c = Client::new(&s);
    let mut spec = workload_spec("web");
    spec["template"]["metadata"]["labels"]["tier"] = json!("front end");
    spec["template"]["metadata"]["annotations"] =
        json!({DELETION_COST: "x", "seccomp.security.alpha.kubernetes.io/pod": "unconfined"});
    spec["template"]["spec"]["securityContext"] = json!({"seccompProfile": {"type": "RuntimeDefault"}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec});
    let r = c.post("/apis/apps/v1/namespaces/default/deployments", &deployment).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let found = causes(&r.body);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found[0].starts_with("spec.template.labels: Invalid value: \"front end\": a valid label must be"),
        "{found:?}"
    );
    assert_eq!(
        found[1..],
        [
            "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"x\": must be a 32bit \
             integer",
            "spec.template.spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must \
             match",
        ]
    );
    // A CronJob's template and a PodTemplate's, at their paths.
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": {
            "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/x": "unconfined"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    let r = c.post("/apis/batch/v1/namespaces/default/cronjobs", &cron).await;
    assert_eq!(
        causes(&r.body),
        [
            "spec.jobTemplate.spec.template.annotations[container.apparmor.security.beta.kubernetes.io/x]: Invalid value: \
          \"x\": container not found"
        ]
    );
    let template = json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": {
        "metadata": {"annotations": {"kubernetes.io/config.mirror": ""}}, "spec": pod_spec()}});
    let r = c.post("/api/v1/namespaces/default/podtemplates", &template).await;
    assert_eq!(
        causes(&r.body),
        [
            "template.annotations[kubernetes.io/config.mirror]: Invalid value: \"\": must set spec.nodeName if mirror pod \
          annotation is set"
        ]
    );
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_answers() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-pod-annotations");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let r = c.post(PODS, &annotated("p", json!({APP_ARMOR_C: "unconfined"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let (ok, out, err) = kubectl_bin(
            bin,
            &kc,
            &cache,
            &["annotate", "pod", "p", "--overwrite", &format!("{APP_ARMOR_C}=runtime/default")],
        )
        .await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "The Pod \"p\" is invalid: metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: \
                 Forbidden: may not remove or update AppArmor annotations"
            ),
            "{bin}: {err}"
        );
        let (ok, out, err) =
            kubectl_bin(bin, &kc, &cache, &["annotate", "pod", "p", "--overwrite", &format!("{DELETION_COST}=-3")])
                .await;
        assert!(ok, "{bin}: {out}{err}");
    }
    assert_eq!(c.get(&format!("{PODS}/p")).await.body["metadata"]["annotations"][APP_ARMOR_C], "unconfined");
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="q", annotations={"controller.kubernetes.io/pod-deletion-cost": "+1"}),
    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))
try:
    core.create_namespaced_pod("default", pod)
    refused = None
except ApiException as e:
    refused = {"status": e.status, "body": json.loads(e.body)}
print(json.dumps({"refused": refused}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["refused"]["status"], 422, "{line}");
    assert_eq!(
        line["refused"]["body"]["message"],
        "Pod \"q\" is invalid: metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+1\": \
         must be a 32bit integer"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

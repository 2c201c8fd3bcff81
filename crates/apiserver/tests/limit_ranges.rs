//! LimitRanges as kube-apiserver applies them, over HTTP: a LimitRange is stored with kube's
//! defaults; a pod created in its namespace gets the default requests and limits its containers
//! lack (and the annotation that says so); a pod or claim outside the ranges is refused with
//! kube's 403 and nothing is stored; a resize is judged, a plain pod update is not. The Python
//! client and kube-rs see the same.

mod common;

use common::*;
use serde_json::{Value, json};

const RANGES: &str = "/api/v1/namespaces/default/limitranges";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";
const MERGE: &str = "application/merge-patch+json";

fn limit_range(name: &str, limits: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": limits}})
}

fn pod_with(name: &str, resources: Value) -> Value {
    let mut p = pod(name, json!({}));
    p["spec"]["containers"][0]["resources"] = resources;
    p
}

#[tokio::test]
async fn a_pod_gets_the_defaults_its_containers_lack() {
    let s = server().await;
    let c = Client::new(&s);
    // Created just before the pod: the pod sees it.
    let r = c
        .post(
            RANGES,
            &limit_range(
                "cpu",
                json!([{"type": "Container", "max": {"cpu": "2"}, "defaultRequest": {"cpu": "250m"},
                    "min": {"memory": "64Mi"}}]),
            ),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // kube's defaults: `default` from `max`, `defaultRequest` from `min` where nothing else gives one.
    assert_eq!(r.body["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
    assert_eq!(r.body["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "250m", "memory": "64Mi"}));
    // One created without a name is named with a UUID, as kube's strategy names it.
    let r = c
        .post(RANGES, &json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {}, "spec": {"limits": []}}))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["name"].as_str().unwrap().len(), 36, "{}", r.body);

    let r = c.post(PODS, &pod("web", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "2"}, "requests": {"cpu": "250m", "memory": "64Mi"}})
    );
    assert_eq!(
        r.body["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu limit for container c"
    );
    assert_eq!(r.body["status"]["qosClass"], "Burstable");
    // What a container sets stays; a limit alone is its request too (kube's pod defaults).
    let r = c.post(PODS, &pod_with("own", json!({"limits": {"cpu": "1", "memory": "128Mi"}}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "1", "memory": "128Mi"}})
    );
    assert!(r.body["metadata"].get("annotations").is_none(), "{}", r.body);

    // The Python client reads the pod as stored.
    let dir = common::tools::tempdir("limit-ranges");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
pod = client.CoreV1Api().read_namespaced_pod("web", "default")
r = pod.spec.containers[0].resources
print(json.dumps({"limits": r.limits, "requests": r.requests,
    "annotation": pod.metadata.annotations["kubernetes.io/limit-ranger"]}))
"#;
    let line = common::tools::python_json(script, &kc).await;
    assert_eq!(line["limits"], json!({"cpu": "2"}), "{line}");
    assert_eq!(line["requests"], json!({"cpu": "250m", "memory": "64Mi"}), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn pods_and_claims_outside_the_ranges_are_refused() {
    let s = server().await;
    let c = Client::new(&s);
    let limits = json!([
        {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "4"}},
        {"type": "Pod", "max": {"memory": "1Gi"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]);
    assert_eq!(c.post(RANGES, &limit_range("bounds", limits)).await.code, 201);

    let big =
        pod_with("big", json!({"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}));
    let r = c.post(PODS, &big).await;
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"big\" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, cpu max \
                limit to request ratio per Container is 4, but provided ratio is 20.000000, maximum memory usage per \
                Pod is 1Gi, but limit is 2Gi]",
            "reason": "Forbidden", "details": {"name": "big", "kind": "pods"}, "code": 403})
    );
    assert_eq!(c.get(&format!("{PODS}/big")).await.code, 404);
    // A dry run is judged the same.
    assert_eq!(c.post(&format!("{PODS}?dryRun=All"), &big).await.code, 403);

    let claim = |name: &str, size: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}})
    };
    let r = c.post(CLAIMS, &claim("small", "500Mi")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "persistentvolumeclaims \"small\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but \
         request is 500Mi"
    );
    assert_eq!(c.post(CLAIMS, &claim("fits", "2Gi")).await.code, 201);

    // kube-rs gets the same refusal; the container's limit is the range's default (its `max`).
    use k8s_openapi::api::core::v1::Pod;
    let api: kube::Api<Pod> = kube::Api::default_namespaced(kube_client(&s).await);
    let pod: Pod = serde_json::from_value(pod_with("tiny", json!({"requests": {"cpu": "10m"}}))).unwrap();
    let kube::Error::Api(e) = api.create(&Default::default(), &pod).await.unwrap_err() else { panic!() };
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "pods \"tiny\" is forbidden: [minimum cpu usage per Container is 100m, but request is 10m, cpu max limit to \
         request ratio per Container is 4, but provided ratio is 100.000000, maximum memory usage per Pod is 1Gi.  No \
         limit is specified]"
    );
}

#[tokio::test]
async fn updates_are_judged_where_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let within = json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}});
    assert_eq!(c.post(PODS, &pod_with("web", within)).await.code, 201);
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}});
    assert_eq!(c.post(CLAIMS, &claim).await.code, 201);
    let limits = json!([{"type": "Container", "max": {"cpu": "1"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]);
    assert_eq!(c.post(RANGES, &limit_range("bounds", limits)).await.code, 201);

    // A plain pod update is not judged; a claim update is, whatever it changes.
    let label = json!({"metadata": {"labels": {"a": "b"}}});
    assert_eq!(c.patch(&format!("{PODS}/web"), MERGE, &label).await.code, 200);
    let r = c.patch(&format!("{CLAIMS}/data"), MERGE, &label).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "persistentvolumeclaims \"data\" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but \
         request is 20Gi"
    );
    // A resize is.
    let grow = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}});
    let r = c.patch(&format!("{PODS}/web/resize"), "application/strategic-merge-patch+json", &grow).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["message"], "pods \"web\" is forbidden: maximum cpu usage per Container is 1, but limit is 2");
    let fits = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}});
    let r = c.patch(&format!("{PODS}/web/resize"), "application/strategic-merge-patch+json", &fits).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn a_limit_range_out_of_order_is_refused() {
    let s = server().await;
    let c = Client::new(&s);
    // `max` below `min`: with kube's defaults (`default` and `defaultRequest` from `max`) three faults.
    let r = c
        .post(RANGES, &limit_range("bad", json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}])))
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "LimitRange \"bad\" is invalid: [spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than \
         max value 1, spec.limits[0].defaultRequest[cpu]: Invalid value: \"1\": min value 2 is greater than default \
         request value 1, spec.limits[0].default[cpu]: Invalid value: \"2\": min value 2 is greater than default value 1]"
    );
    let r = c.post(RANGES, &limit_range("pods", json!([{"type": "Pod", "default": {"cpu": "1"}}]))).await;
    assert_eq!(
        (r.code, &r.body["message"]),
        (
            422,
            &json!(
                "LimitRange \"pods\" is invalid: spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"
            )
        ),
        "{}",
        r.body
    );
    assert_eq!(c.get(RANGES).await.body["items"], json!([]));
}

#[tokio::test]
async fn a_pod_sees_the_ranges_written_before_it_however_late_the_cache() {
    let s = server().await;
    let c = Client::new(&s);
    // A cache behind its storage: the LimitRange written just before the pod still applies, and
    // one deleted just before no longer does.
    s.set_cache_lag(std::time::Duration::from_millis(300));
    let range = limit_range("cpu", json!([{"type": "Container", "default": {"cpu": 1}, "max": {"cpu": 2}}]));
    assert_eq!(c.post(RANGES, &range).await.code, 201);
    let r = c.post(PODS, &pod("first", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "1"}));
    // Quantities sent as JSON numbers (kubectl's YAML `cpu: 3`) are judged as strings are.
    let r = c.post(PODS, &pod_with("numeric", json!({"limits": {"cpu": 3}}))).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "pods \"numeric\" is forbidden: maximum cpu usage per Container is 2, but limit is 3"
    );
    assert_eq!(c.post(PODS, &pod_with("fits", json!({"limits": {"cpu": 2}}))).await.code, 201);

    assert_eq!(c.delete(&format!("{RANGES}/cpu")).await.code, 200);
    let r = c.post(PODS, &pod("after", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["spec"]["containers"][0]["resources"].get("limits").is_none(), "{}", r.body);
    s.set_cache_lag(std::time::Duration::ZERO);
}

#[tokio::test]
async fn several_ranges_each_give_what_the_first_does_not() {
    let s = server().await;
    let c = Client::new(&s);
    let a =
        limit_range("a", json!([{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}}]));
    let b = limit_range("b", json!([{"type": "Container", "default": {"cpu": "2", "memory": "1Gi"}}]));
    assert_eq!(c.post(RANGES, &b).await.code, 201);
    assert_eq!(c.post(RANGES, &a).await.code, 201);
    let mut p = pod("web", json!({}));
    p["spec"]["initContainers"] = json!([{"name": "setup", "image": "busybox"}]);
    let r = c.post(PODS, &p).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // `a` (first by name) gives cpu; `b` gives memory, and its words are the annotation's.
    assert_eq!(
        r.body["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})
    );
    assert_eq!(r.body["spec"]["initContainers"][0]["resources"], r.body["spec"]["containers"][0]["resources"]);
    assert_eq!(
        r.body["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: memory request for container c; memory limit for container c; memory request for \
         init container setup; memory limit for init container setup"
    );
    // A generated name is the one the refusal names.
    let mut big = pod_with("", json!({"limits": {"cpu": "1", "memory": "2Gi"}}));
    big["metadata"] = json!({"generateName": "big-"});
    let max = limit_range("max", json!([{"type": "Container", "max": {"memory": "1Gi"}}]));
    assert_eq!(c.post(RANGES, &max).await.code, 201);
    let r = c.post(PODS, &big).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let name = r.body["details"]["name"].as_str().unwrap();
    assert!(name.starts_with("big-") && name.len() == 9, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!("pods \"{name}\" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi")
    );
}

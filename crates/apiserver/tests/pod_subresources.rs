//! A pod's `ephemeralcontainers` and `resize` subresources over HTTP, as kube-apiserver v1.35
//! serves them: each reads and writes the whole pod but changes only its part of the spec
//! (the rest of a body is dropped, not refused), moves the generation when it changes it, is
//! recorded under its subresource in managed fields, refuses with kube's 422s, is listed in
//! discovery and OpenAPI, and is judged by PodSecurity; and as kubectl (`debug`,
//! `patch --subresource resize`) and kube-rs (`patch_ephemeral_containers`, `patch_resize`) use
//! them, and the Python client (`patch_namespaced_pod_ephemeralcontainers`,
//! `replace_namespaced_pod_ephemeralcontainers`).

mod common;

use common::*;
use serde_json::{Value, json};

const STRATEGIC: &str = "application/strategic-merge-patch+json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// A Burstable pod: CPU and memory requested, memory limited.
fn sized(name: &str) -> Value {
    let mut p = pod(name, json!({"app": name}));
    p["spec"]["containers"][0]["resources"] =
        json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}});
    p
}

fn message(r: &Resp) -> &str {
    r.body["message"].as_str().unwrap_or_default()
}

fn managers_of(pod: &Value) -> Vec<(String, String)> {
    pod["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let sub = m["subresource"].as_str().unwrap_or_default().to_string();
            (m["manager"].as_str().unwrap().to_string(), sub)
        })
        .collect()
}

#[tokio::test]
async fn ephemeral_containers_are_added_through_their_subresource_only() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &sized("web")).await.code, 201);
    let path = format!("{PODS}/web/ephemeralcontainers");
    let got = c.get(&path).await;
    assert_eq!((got.code, got.body["kind"].as_str()), (200, Some("Pod")), "{}", got.body);

    // Added, with a label and a spec change in the same body: those are dropped, not refused.
    let add = json!({"metadata": {"labels": {"debugged": "yes"}}, "spec": {"restartPolicy": "Never",
        "ephemeralContainers": [{"name": "debug", "image": "busybox", "targetContainerName": "c",
            "stdin": true, "tty": true}]}});
    let r = c.patch(&format!("{path}?fieldManager=debugger"), STRATEGIC, &add).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let p = &r.body;
    assert_eq!(p["kind"], "Pod");
    assert_eq!(p["metadata"]["generation"], 2);
    assert_eq!(p["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(p["spec"]["restartPolicy"], "Always");
    let debug = &p["spec"]["ephemeralContainers"][0];
    assert_eq!((debug["name"].as_str(), debug["imagePullPolicy"].as_str()), (Some("debug"), Some("Always")));
    assert_eq!(debug["terminationMessagePolicy"], "File", "decoded with the container defaults");
    assert!(managers_of(p).contains(&("debugger".into(), "ephemeralcontainers".into())), "{p}");
    assert_eq!(c.get(&format!("{PODS}/web")).await.body["spec"]["ephemeralContainers"][0]["name"], "debug");

    // The same body again changes nothing: the generation stays.
    let r = c.patch(&format!("{path}?fieldManager=debugger"), STRATEGIC, &add).await;
    assert_eq!((r.code, r.body["metadata"]["generation"].as_i64()), (200, Some(2)), "{}", r.body);

    // A PUT of the whole pod adds another.
    let mut whole = r.body.clone();
    whole["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(json!({"name": "two", "image": "busybox"}));
    let r = c.put(&path, &whole).await;
    assert_eq!((r.code, r.body["metadata"]["generation"].as_i64()), (200, Some(3)), "{}", r.body);

    // Existing ones are neither removed nor changed.
    let removed = json!([{"op": "remove", "path": "/spec/ephemeralContainers/0"}]);
    let r = c.patch(&path, JSON_PATCH, &removed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be removed\n"
    );
    let changed = json!([{"op": "replace", "path": "/spec/ephemeralContainers/0/image", "value": "busybox:2"}]);
    let r = c.patch(&path, JSON_PATCH, &changed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(
        message(&r).starts_with(
            "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be changed\n@@ -1,"
        ),
        "{}",
        message(&r)
    );
    assert!(message(&r).contains("\n- \"image\": \"busybox\",\n+ \"image\": \"busybox:2\",\n"), "{}", message(&r));

    // What an ephemeral container cannot have, and names that clash or target nothing.
    let bad = json!({"spec": {"ephemeralContainers": [{"name": "c", "image": "busybox",
        "targetContainerName": "nope", "ports": [{"containerPort": 80}],
        "readinessProbe": {"exec": {"command": ["true"]}}}]}});
    let r = c.patch(&path, STRATEGIC, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let causes: Vec<(&str, &str, &str)> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["reason"].as_str().unwrap(), c["field"].as_str().unwrap(), c["message"].as_str().unwrap()))
        .collect();
    let at = |i: usize, f: &str| format!("spec.ephemeralContainers[{i}].{f}");
    // A strategic merge patch puts the new container first.
    assert_eq!(
        causes,
        [
            ("FieldValueDuplicate", at(0, "name").as_str(), "Duplicate value: \"c\""),
            ("FieldValueNotFound", at(0, "targetContainerName").as_str(), "Not found: \"nope\""),
            ("FieldValueForbidden", at(0, "ports").as_str(), "Forbidden: cannot be set for an Ephemeral Container"),
            (
                "FieldValueForbidden",
                at(0, "readinessProbe").as_str(),
                "Forbidden: cannot be set for an Ephemeral Container"
            ),
        ]
    );

    // A mount of a volume the pod does not have.
    let mounting = json!({"spec": {"ephemeralContainers": [{"name": "mounting", "image": "busybox",
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}});
    let r = c.patch(&path, STRATEGIC, &mounting).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "Pod \"web\" is invalid: spec.ephemeralContainers[0].volumeMounts[0].name: Not found: \"data\""
    );

    // Not through the pod itself, nor on create.
    let mut main = c.get(&format!("{PODS}/web")).await.body;
    main["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(json!({"name": "three", "image": "busybox"}));
    let r = c.put(&format!("{PODS}/web"), &main).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(message(&r).contains("spec: Forbidden: pod updates may not change fields other than"), "{}", message(&r));
    let mut created = pod("born-debugged", json!({}));
    created["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    let r = c.post(PODS, &created).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "Pod \"born-debugged\" is invalid: spec.ephemeralContainers: Forbidden: cannot be set on create"
    );
    assert_eq!(c.get(&format!("{PODS}/born-debugged")).await.code, 404);

    // Static pods take none; other verbs and other resources have no such subresource.
    let mut mirror = pod("mirror", json!({}));
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc"});
    mirror["spec"]["nodeName"] = json!("node-1");
    assert_eq!(c.post(PODS, &mirror).await.code, 201);
    let r = c.patch(&format!("{PODS}/mirror/ephemeralcontainers"), STRATEGIC, &add).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "Pod \"mirror\" is invalid: []: Forbidden: static pods do not support ephemeral containers"
    );
    assert_eq!(c.post(&path, &add).await.code, 405);
    assert_eq!(c.delete(&path).await.code, 405);
    assert_eq!(c.get("/api/v1/namespaces/default/configmaps/x/ephemeralcontainers").await.code, 404);
    assert_eq!(c.get(&format!("{PODS}/absent/ephemeralcontainers")).await.code, 404);
}

#[tokio::test]
async fn resize_changes_cpu_and_memory_only() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &sized("web")).await.code, 201);
    let path = format!("{PODS}/web/resize");
    let got = c.get(&path).await;
    assert_eq!((got.code, got.body["status"]["qosClass"].as_str()), (200, Some("Burstable")), "{}", got.body);

    // CPU up, memory limit down; the image, a label and the status in the same body are dropped.
    let resize = json!({"metadata": {"labels": {"resized": "yes"}}, "status": {"phase": "Failed"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "96Mi"}}}]}});
    let r = c.patch(&format!("{path}?fieldManager=resizer"), STRATEGIC, &resize).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let p = &r.body;
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "96Mi"}})
    );
    assert_eq!(p["spec"]["containers"][0]["image"], "registry.k8s.io/pause:3.10");
    assert_eq!(p["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(p["metadata"]["generation"], 2);
    assert!(managers_of(p).contains(&("resizer".into(), "resize".into())), "{p}");

    // Server-side apply through the subresource owns the resources it sets, not what it cannot
    // change (a label, a container's name or image).
    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"x": "y"}},
        "spec": {"containers": [{"name": "c", "image": "other", "resources": {"requests": {"cpu": "300m"}}}]}});
    let r = c
        .send_raw(
            http::Method::PATCH,
            &format!("{path}?fieldManager=tuner&force=true"),
            serde_json::to_vec(&applied).unwrap(),
            "application/apply-patch+yaml",
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(r.body["spec"]["containers"][0]["resources"]["requests"]["cpu"], "300m");
    let tuner =
        r.body["metadata"]["managedFields"].as_array().unwrap().iter().find(|m| m["manager"] == "tuner").cloned();
    let tuner = tuner.unwrap_or_else(|| panic!("{}", r.body));
    assert_eq!((tuner["operation"].as_str(), tuner["subresource"].as_str()), (Some("Apply"), Some("resize")));
    let item = &tuner["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(item["f:resources"], json!({"f:requests": {"f:cpu": {}}}), "{tuner}");
    assert!(item.get("f:name").is_none() && item.get("f:image").is_none(), "{tuner}");
    assert_eq!(tuner["fieldsV1"].as_object().unwrap().keys().collect::<Vec<_>>(), ["f:spec"], "{tuner}");

    let refused = |resources: Value| json!({"spec": {"containers": [{"name": "c", "resources": resources}]}});
    // Requests go, so does the QoS class.
    let r = c.patch(&path, MERGE, &json!({"spec": {"containers": [{"name": "c", "image": "x"}]}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "Pod \"web\" is invalid: [spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing, \
         spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed, \
         spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed]"
    );
    let guaranteed =
        refused(json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}));
    let r = c.patch(&path, STRATEGIC, &guaranteed).await;
    assert_eq!(
        (r.code, message(&r)),
        (
            422,
            "Pod \"web\" is invalid: spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"
        )
    );
    let storage = refused(json!({"requests": {"ephemeral-storage": "1Gi"}}));
    let r = c.patch(&path, STRATEGIC, &storage).await;
    assert_eq!(
        (r.code, message(&r)),
        (422, "Pod \"web\" is invalid: spec: Forbidden: only cpu and memory resources are mutable")
    );
    let mut added = c.get(&path).await.body;
    added["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "x"}));
    let r = c.patch(&path, MERGE, &added).await;
    assert_eq!(
        (r.code, message(&r)),
        (422, "Pod \"web\" is invalid: spec.containers: Forbidden: containers may not be added or removed on resize")
    );
    // Nothing refused was written.
    let stored = c.get(&format!("{PODS}/web")).await.body;
    assert_eq!(stored["metadata"]["generation"], 3);
    assert_eq!(stored["spec"]["containers"][0]["resources"]["requests"]["cpu"], "300m");

    // A node that reports no resources for its running container cannot resize.
    let status = json!({"status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
        "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}});
    assert_eq!(c.patch(&format!("{PODS}/web/status"), MERGE, &status).await.code, 200);
    let r = c.patch(&path, STRATEGIC, &refused(json!({"requests": {"cpu": "300m"}}))).await;
    assert_eq!(
        (r.code, message(&r)),
        (422, "Pod \"web\" is invalid: spec: Forbidden: Pod running on node without support for resize")
    );
}

#[tokio::test]
async fn discovery_openapi_and_admission_know_the_subresources() {
    let s = server().await;
    let c = Client::new(&s);
    let core = c.get("/api/v1").await.body;
    let find = |name: &str| core["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned();
    for name in ["pods/ephemeralcontainers", "pods/resize"] {
        assert_eq!(
            find(name),
            Some(json!({"name": name, "singularName": "", "namespaced": true, "kind": "Pod",
                "verbs": ["get", "patch", "update"]}))
        );
    }
    let v3 = c.get("/openapi/v3/api/v1").await.body;
    let paths = &v3["paths"];
    let ephemeral = &paths["/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers"];
    assert_eq!(ephemeral["patch"]["operationId"], "patchCoreV1NamespacedPodEphemeralcontainers");
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/resize"]["put"]["operationId"],
        "replaceCoreV1NamespacedPodResize"
    );

    // PodSecurity judges an added ephemeral container against the namespace's level.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "locked",
        "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}});
    assert_eq!(c.post("/api/v1/namespaces", &ns).await.code, 201);
    let pods = "/api/v1/namespaces/locked/pods";
    assert_eq!(c.post(pods, &pod("web", json!({}))).await.code, 201);
    let privileged = json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox",
        "securityContext": {"privileged": true}}]}});
    let r = c.patch(&format!("{pods}/web/ephemeralcontainers"), STRATEGIC, &privileged).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(
        message(&r).starts_with("pods \"web\" is forbidden: violates PodSecurity \"baseline:latest\""),
        "{}",
        message(&r)
    );
    let plain = json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
    assert_eq!(c.patch(&format!("{pods}/web/ephemeralcontainers"), STRATEGIC, &plain).await.code, 200);
}

#[tokio::test]
async fn kube_rs_patches_both_subresources() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, Patch, PatchParams};
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &sized("web")).await.code, 201);
    let pods: Api<Pod> = Api::namespaced(kube_client(&s).await, "default");
    // The creator owns the CPU request already: the apply takes it over.
    let params = PatchParams::apply("kube-rs-test").force();
    let debug = json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
    let p = pods.patch_ephemeral_containers("web", &PatchParams::default(), &Patch::Strategic(debug)).await.unwrap();
    let ephemeral = p.spec.as_ref().unwrap().ephemeral_containers.as_ref().unwrap();
    assert_eq!(ephemeral[0].name, "debug");
    assert_eq!(pods.get_ephemeral_containers("web").await.unwrap().metadata.generation, Some(2));
    let resize = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c",
        "resources": {"requests": {"cpu": "500m"}}}]}});
    let p = pods.patch_resize("web", &params, &Patch::Apply(resize)).await.unwrap();
    let requests = p.spec.unwrap().containers[0].resources.clone().unwrap().requests.unwrap();
    assert_eq!(requests["cpu"].0, "500m");
    let refused = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "ephemeral-storage": "1Gi"}}}]}});
    match pods.patch_resize("web", &PatchParams::default(), &Patch::Strategic(refused)).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
            assert_eq!(e.message, "Pod \"web\" is invalid: spec: Forbidden: only cpu and memory resources are mutable");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn kubectl_debugs_and_resizes() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-pod-subresources");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    assert_eq!(c.post(PODS, &sized("web")).await.code, 201);
    for (i, bin) in [versions.first().unwrap(), versions.last().unwrap()].into_iter().enumerate() {
        // `kubectl debug` with a new container each time: a strategic merge patch of the
        // subresource (with `$setElementOrder` once there is one already).
        let name = format!("debug-{i}");
        let args = ["debug", "web", "--image=busybox", "--target=c", "-c", &name];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(ok, "{bin}: {out}{err}");
        let p = c.get(&format!("{PODS}/web")).await.body;
        let names: Vec<&str> =
            p["spec"]["ephemeralContainers"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, (0..=i).map(|j| format!("debug-{j}")).collect::<Vec<_>>(), "{bin}");
        assert_eq!(p["spec"]["ephemeralContainers"][i]["targetContainerName"], "c", "{bin}");
    }
    // `--subresource resize` is kubectl's from 1.32 on.
    let bin = versions.last().unwrap();
    let patch = r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]}}"#;
    let (ok, out, err) =
        kubectl_bin(bin, &kc, &cache, &["patch", "pod", "web", "--subresource", "resize", "-p", patch]).await;
    assert!(ok && out.contains("pod/web patched"), "{bin}: {out}{err}");
    let p = c.get(&format!("{PODS}/web")).await.body;
    assert_eq!(p["spec"]["containers"][0]["resources"]["requests"]["cpu"], "200m");
    let (ok, out, err) =
        kubectl_bin(bin, &kc, &cache, &["get", "pod", "web", "--subresource", "resize", "-o", "name"]).await;
    assert!(ok && out.trim() == "pod/web", "{bin}: {out}{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Python client adds an ephemeral container with a patch, another with a replace, and
/// reads kube's Status when it changes one that is there.
const PY_EPHEMERAL: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
patch = {"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox", "targetContainerName": "c"}]}}
pod = v1.patch_namespaced_pod_ephemeralcontainers("web", "default", patch)
print(json.dumps([e.name for e in pod.spec.ephemeral_containers]), flush=True)
pod = v1.read_namespaced_pod_ephemeralcontainers("web", "default")
pod.spec.ephemeral_containers.append(client.V1EphemeralContainer(name="shell", image="busybox"))
pod = v1.replace_namespaced_pod_ephemeralcontainers("web", "default", pod)
print(json.dumps([e.name for e in pod.spec.ephemeral_containers]), flush=True)
pod.spec.ephemeral_containers[0].image = "busybox:2"
try:
    v1.replace_namespaced_pod_ephemeralcontainers("web", "default", pod)
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}), flush=True)
"#;

#[tokio::test]
async fn the_python_client_adds_ephemeral_containers() {
    let s = server().await;
    let c = Client::new(&s);
    let dir = common::tools::tempdir("python-ephemeral");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    assert_eq!(c.post(PODS, &sized("web")).await.code, 201);
    let out = common::tools::python(PY_EPHEMERAL, &[kc.to_str().unwrap()]).await;
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0], json!(["debug"]));
    assert_eq!(lines[1], json!(["debug", "shell"]));
    assert_eq!(lines[2]["status"], 422, "{out}");
    let message = lines[2]["body"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be changed\n"
        ),
        "{message}"
    );
    let p = c.get(&format!("{PODS}/web")).await.body;
    assert_eq!(p["metadata"]["generation"], 3);
    assert_eq!(p["spec"]["ephemeralContainers"][0]["image"], "busybox");
    std::fs::remove_dir_all(&dir).ok();
}

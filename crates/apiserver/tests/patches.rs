//! PATCH over HTTP against exchanges recorded from kube-apiserver v1.35
//! (`tests/fixtures/kube-apiserver/05-*` … `26-*`): strategic merge patches with every
//! directive, kubectl's client-side apply patches, JSON merge and JSON patches, and the Status
//! answers to bad patches and media types. Each step starts from the object kube-apiserver held
//! before it, sends the recorded request and compares the whole answer with kube-apiserver's.

mod common;

use common::recorded::{as_create_body, comparable, comparable_managed, recorded, send};
use common::*;
use serde_json::{Value, json};

/// Puts `state` in place as the object the recorded request addresses.
async fn seed(c: &Client, collection: &str, state: &Value) {
    // The namespace may exist already (a 409 then).
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let name = state["metadata"]["name"].as_str().expect("a name");
    let path = format!("{collection}/{name}");
    c.patch(&path, "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;
    c.delete(&path).await;
    let r = c.post(collection, &as_create_body(state)).await;
    assert_eq!(r.code, 201, "seeding {name}: {}", r.body);
    // Then kube-apiserver's managers of that state, as a client may set them.
    if let Some(managed) = state["metadata"].get("managedFields") {
        let mut obj = r.body;
        obj["metadata"]["managedFields"] = managed.clone();
        let r = c.put(&path, &obj).await;
        assert_eq!(r.code, 200, "seeding the managers of {name}: {}", r.body);
        assert_eq!(
            comparable_managed(&r.body)["metadata"]["managedFields"],
            comparable_managed(state)["metadata"]["managedFields"]
        );
    }
}

/// Seeds the state before `file` (its managers included), sends its request, and compares
/// status and body, managers included.
async fn replay(c: &Client, collection: &str, before: &Value, file: &str) -> Value {
    seed(c, collection, before).await;
    let step = recorded(file);
    let r = send(c, &step).await;
    assert_eq!(r.code, step.status, "{file}: {}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&step.response), "{file}");
    r.body
}

fn response(file: &str) -> Value {
    recorded(file).response
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/fixtures/deployments";
const CONFIGMAPS: &str = "/api/v1/namespaces/fixtures/configmaps";

#[tokio::test]
async fn kubectl_client_side_apply_patches_change_one_container_and_remove_another() {
    let s = server().await;
    let c = Client::new(&s);
    // 04: the first apply creates the Deployment, kubectl-client-side-apply owning what it sent
    // and what the API's defaults filled in.
    fixtures_namespace(&c).await;
    let step = recorded("04-csa-1-create-post.txt");
    let r = send(&c, &step).await;
    assert_eq!(r.code, step.status, "{}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&step.response));
    replay(&c, DEPLOYMENTS, &response("04-csa-1-create-post.txt"), "05-csa-2-patch-change-image.txt").await;
    let out =
        replay(&c, DEPLOYMENTS, &response("05-csa-2-patch-change-image.txt"), "06-csa-3-patch-remove-container.txt")
            .await;
    assert_eq!(out["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn strategic_merge_patches_merge_containers_by_name() {
    let s = server().await;
    let c = Client::new(&s);
    // A container added by name lands first, with kube's defaults; the one already there keeps
    // its fields. `$patch: replace` as a list element: the list is the patch's other elements.
    let steps = [
        ("06-csa-3-patch-remove-container.txt", "10-smp-0-add-container-back.txt"),
        ("10-smp-0-add-container-back.txt", "11-smp-1-change-image-by-name.txt"),
        ("11-smp-1-change-image-by-name.txt", "12-smp-2-patch-delete-container.txt"),
        ("12-smp-2-patch-delete-container.txt", "13-smp-3-patch-replace-list.txt"),
    ];
    for (before, step) in steps {
        replay(&c, DEPLOYMENTS, &response(before), step).await;
    }
}

#[tokio::test]
async fn retain_keys_and_primitive_list_directives() {
    let s = server().await;
    let c = Client::new(&s);
    // Without $retainKeys the old rollingUpdate stays and validation refuses the result.
    let before = response("13-smp-3-patch-replace-list.txt");
    replay(&c, DEPLOYMENTS, &before, "14-smp-4a-strategy-recreate-without-retainkeys-422.txt").await;
    let kept = c.get(&format!("{DEPLOYMENTS}/api")).await;
    assert_eq!(comparable(&kept.body), comparable(&before), "a refused patch changes nothing");
    let steps = [
        ("13-smp-3-patch-replace-list.txt", "15-smp-4b-strategy-retainkeys.txt"),
        ("15-smp-4b-strategy-retainkeys.txt", "16-smp-5a-add-finalizers.txt"),
        ("16-smp-5a-add-finalizers.txt", "17-smp-5b-deleteFromPrimitiveList-finalizers.txt"),
        ("17-smp-5b-deleteFromPrimitiveList-finalizers.txt", "18-smp-5c-merge-primitive-list.txt"),
    ];
    for (before, step) in steps {
        replay(&c, DEPLOYMENTS, &response(before), step).await;
    }
    // Leave nothing holding the object.
    let r = c
        .patch(
            &format!("{DEPLOYMENTS}/api"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(r.code, 200);
}

#[tokio::test]
async fn strategic_merge_patches_of_maps() {
    let s = server().await;
    let c = Client::new(&s);
    let steps = [
        ("19-smp-6a-configmap-create.txt", "20-smp-6b-configmap-data.txt"),
        ("20-smp-6b-configmap-data.txt", "21-smp-6c-configmap-data-patch-replace.txt"),
        ("21-smp-6c-configmap-data-patch-replace.txt", "22-smp-6d-configmap-merge-patch.txt"),
    ];
    for (before, step) in steps {
        replay(&c, CONFIGMAPS, &response(before), step).await;
    }
}

#[tokio::test]
async fn merge_patches_replace_lists_and_json_patches_test_values() {
    let s = server().await;
    let c = Client::new(&s);
    // The state before the merge patch: proxy added back in front of app:4.
    let mut before = response("18-smp-5c-merge-primitive-list.txt");
    let proxy = response("10-smp-0-add-container-back.txt")["spec"]["template"]["spec"]["containers"][0].clone();
    let app = before["spec"]["template"]["spec"]["containers"][0].clone();
    before["spec"]["template"]["spec"]["containers"] = json!([proxy, app]);
    before["metadata"].as_object_mut().unwrap().remove("finalizers");
    seed(&c, DEPLOYMENTS, &before).await;
    let step = recorded("23-merge-patch-containers-replaces-list.txt");
    let r = send(&c, &step).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(comparable(&r.body), comparable(&step.response), "the list is replaced, defaults filled in");
    assert_eq!(containers_of(&r.body), [("app".to_string(), "registry.example/app:5".to_string())]);
    replay(&c, DEPLOYMENTS, &response("23-merge-patch-containers-replaces-list.txt"), "24-json-patch-ops.txt").await;
    replay(&c, DEPLOYMENTS, &response("24-json-patch-ops.txt"), "25-json-patch-test-fails.txt").await;
}

#[tokio::test]
async fn patch_media_types_are_refused_as_kube_apiserver_refuses_them() {
    let s = server_with_widgets().await;
    let c = Client::new(&s);
    replay(&c, DEPLOYMENTS, &response("24-json-patch-ops.txt"), "26-smp-unsupported-content-type-415.txt").await;
    // A strategic merge patch of a type without a built-in schema: 415 naming the types taken.
    let widgets = "/apis/example.com/v1/namespaces/fixtures/widgets";
    assert_eq!(c.post(widgets, &json!({"metadata": {"name": "w"}, "spec": {"a": [1]}})).await.code, 201);
    let r =
        c.patch(&format!("{widgets}/w"), "application/strategic-merge-patch+json", &json!({"spec": {"a": [2]}})).await;
    assert_eq!(r.code, 415);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let r = c.patch(&format!("{widgets}/w"), "application/merge-patch+json", &json!({"spec": {"a": [2]}})).await;
    assert_eq!((r.code, &r.body["spec"]["a"]), (200, &json!([2])));
}

#[tokio::test]
async fn bad_strategic_merge_patches_get_kube_statuses_and_change_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    let before = response("12-smp-2-patch-delete-container.txt");
    seed(&c, DEPLOYMENTS, &before).await;
    let path = format!("{DEPLOYMENTS}/api");
    // Go's errors pass through kube-apiserver as 500s without a reason or details; malformed
    // directives are 400s; a body that is not an object gets Go's own decoding message.
    let cases = [
        (
            json!({"spec": {"strategy": {"$patch": "bogus"}}}),
            500,
            "",
            "unknown patch type: bogus in map: map[$patch:bogus]",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx:2"}]}}}}),
            500,
            "",
            "map: map[image:nginx:2] does not contain declared merge key: name",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
            500,
            "",
            "merging lists cannot yet be specified in the patch",
        ),
        (
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "zz"}], "containers": [{"name": "app"}]}}}}),
            500,
            "",
            "The order in patch list:\n[map[name:app]]\n doesn't match $setElementOrder list:\n[map[name:zz]]\n",
        ),
        (
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": "app"}}}}),
            500,
            "",
            "expected a []interface {}, but received a string",
        ),
        (
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            400,
            "BadRequest",
            "invalid patch format of retainKeys",
        ),
        (
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
            400,
            "BadRequest",
            "invalid patch format of retainKeys",
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveListX": ["a"]}}),
            400,
            "BadRequest",
            "invalid patch format of primitive list",
        ),
        (
            json!({"spec": {"template": {"spec": {"$setElementOrderX": []}}}}),
            400,
            "BadRequest",
            "invalid patch format of setElementOrder list",
        ),
        (
            json!([1, 2]),
            400,
            "BadRequest",
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            json!("spec"),
            400,
            "BadRequest",
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
    ];
    let smp = "application/strategic-merge-patch+json";
    for (patch, code, reason, message) in cases {
        let r = c.patch(&path, smp, &patch).await;
        assert_eq!(r.code, code, "{patch}: {}", r.body);
        assert_eq!(r.body["kind"], "Status");
        assert_eq!(r.body["message"], message, "{patch}");
        assert_eq!(r.body.get("reason").and_then(Value::as_str).unwrap_or_default(), reason, "{patch}");
        assert!(r.body.get("details").is_none(), "{patch}: {}", r.body);
    }
    for (body, message) in [
        (&b"{not json"[..], "invalid character 'n' looking for beginning of object key string"),
        (b"", "unexpected end of JSON input"),
        (b"{\"spec\": {}} x", "invalid character 'x' after top-level value"),
    ] {
        let r = c.send_raw(http::Method::PATCH, &path, body.to_vec(), smp).await;
        assert_eq!((r.code, &r.body["message"]), (400, &json!(message)), "{}", String::from_utf8_lossy(body));
    }
    let after = c.get(&path).await;
    assert_eq!(comparable(&after.body), comparable(&before), "no bad patch changed the object");
    // `null` is an empty patch; a delete list that is not a list is passed over.
    for body in [&b"null"[..], br#"{"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}"#] {
        let r = c.send_raw(http::Method::PATCH, &path, body.to_vec(), smp).await;
        assert_eq!(r.code, 200, "{}", r.body);
        assert_eq!(r.body["metadata"]["resourceVersion"], after.body["metadata"]["resourceVersion"], "a no-op");
    }
    // The body is read only once the object is found.
    let missing = format!("{DEPLOYMENTS}/missing");
    for body in [&b"[1, 2]"[..], b"{not json"] {
        let r = c.send_raw(http::Method::PATCH, &missing, body.to_vec(), smp).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (404, Some("NotFound")), "{}", r.body);
    }
}

/// A Deployment `name` in `fixtures` with containers of these names.
async fn deployment_with_containers(c: &Client, name: &str, containers: &[&str]) -> String {
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let containers: Vec<Value> = containers.iter().map(|n| json!({"name": n, "image": format!("{n}:1")})).collect();
    let body = json!({"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}}});
    let r = c.post(DEPLOYMENTS, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    format!("{DEPLOYMENTS}/{name}")
}

fn container_names(v: &Value) -> Vec<String> {
    containers_of(v).into_iter().map(|(n, _)| n).collect()
}

#[tokio::test]
async fn set_element_order_sees_the_live_list_as_kubes_merge_leaves_it() {
    let s = server().await;
    let c = Client::new(&s);
    let path = deployment_with_containers(&c, "mesh", &["app", "old", "istio-proxy"]).await;
    // kube deletes `old` inside the live list's array and the new container takes the place
    // freed at its end, so `istio-proxy` reads as coming before `new`.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "new"}],
        "containers": [{"name": "new", "image": "new:1"}, {"$patch": "delete", "name": "old"}]}}}});
    let r = c.patch(&path, "application/strategic-merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(container_names(&r.body), ["app", "istio-proxy", "new"]);
    // An empty order list takes any patch list; the new container sorts after the live ones.
    let patch = json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [],
        "containers": [{"name": "late", "image": "late:1"}]}}}});
    let r = c.patch(&path, "application/strategic-merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(container_names(&r.body), ["app", "istio-proxy", "new", "late"]);
}

#[tokio::test]
async fn stored_elements_without_their_merge_key_refuse_a_merge() {
    let s = server().await;
    let c = Client::new(&s);
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let pods = "/api/v1/namespaces/fixtures/pods";
    let mut spec = pod_spec();
    spec["imagePullSecrets"] = json!([{}]);
    let r = c.post(pods, &json!({"metadata": {"name": "nameless-secret"}, "spec": spec})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["imagePullSecrets"], json!([{}]));
    let path = format!("{pods}/nameless-secret");
    let patch = json!({"spec": {"imagePullSecrets": [{"name": "reg"}]}});
    let r = c.patch(&path, "application/strategic-merge-patch+json", &patch).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "map: map[] does not contain declared merge key: name");
    assert!(r.body.get("reason").is_none() && r.body.get("details").is_none(), "{}", r.body);
}

#[tokio::test]
async fn primitive_lists_merge_without_repeating_the_servers_values() {
    let s = server().await;
    let c = Client::new(&s);
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let body = json!({"metadata": {"name": "twice", "finalizers": ["example.com/a", "example.com/a"]}});
    assert_eq!(c.post(CONFIGMAPS, &body).await.code, 201);
    let path = format!("{CONFIGMAPS}/twice");
    let patch = json!({"metadata": {"finalizers": ["example.com/b"]}});
    let r = c.patch(&path, "application/strategic-merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/b", "example.com/a"]));
    let r = c.patch(&path, "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn custom_resources_take_no_strategic_merge_patch_on_scale_either() {
    let s = server().await;
    let c = Client::new(&s);
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "fixtures"}})).await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let mut w = c.watch(&format!("{crds}?watch=1&fieldSelector=metadata.name%3Dgadgets.demo.example.org")).await;
    let r = c.post(crds, &recorded("90-crd-create.txt").request()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    until(&mut w, "the definition to be established", |e| {
        e["object"]["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
    })
    .await;
    let gadgets = "/apis/demo.example.org/v1/namespaces/fixtures/gadgets";
    let r = c.post(gadgets, &recorded("93-cr-create-valid-defaulting.txt").request()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let scale = format!("{gadgets}/gizmo/scale");
    let r = c.patch(&scale, "application/strategic-merge-patch+json", &json!({"spec": {"replicas": 4}})).await;
    assert_eq!(r.code, 415, "{}", r.body);
    assert_eq!(r.body, recorded("99c-cr-smp-415.txt").response);
    let r = c.patch(&scale, "application/merge-patch+json", &json!({"spec": {"replicas": 4}})).await;
    assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(4)), "{}", r.body);
}

#[tokio::test]
async fn kubectl_reports_a_strategic_merge_patch_error_in_kubes_words() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    deployment_with_containers(&c, "web", &["app"]).await;
    let dir = tempdir("kubectl-smp");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = kubectl_versions().pop().expect("a kubectl");
    let patch = r#"{"spec":{"template":{"spec":{"containers":[{"image":"nginx:2"}]}}}}"#;
    let args = ["patch", "deployment", "web", "-n", "fixtures", "--type", "strategic", "-p", patch];
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &args).await;
    assert!(!ok, "{bin}: {out}{err}");
    assert_eq!(
        err.trim_end(),
        "Error from server: map: map[image:nginx:2] does not contain declared merge key: name",
        "{bin}"
    );
}

#[tokio::test]
async fn json_and_merge_patches_are_decoded_in_go_s_words() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["fixtures"]).await.unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"a": "1"}});
    assert_eq!(c.post(CONFIGMAPS, &cm).await.code, 201);
    let path = format!("{CONFIGMAPS}/p");
    let patch = |body: &str, ct: &str, query: &str| {
        let (c, path) = (&c, &path);
        let (body, ct, query) = (body.as_bytes().to_vec(), ct.to_string(), query.to_string());
        async move { c.send_raw(http::Method::PATCH, &format!("{path}{query}"), body, &ct).await }
    };
    const JSON: &str = "application/json-patch+json";
    const MERGE: &str = "application/merge-patch+json";
    for (body, ct, message) in [
        (r#"{"op":"add"}"#, JSON, "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"),
        ("[1]", JSON, "json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
        (r#"[{"op":1}]"#, JSON, "json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"),
        ("{bad", MERGE, "invalid character 'b' looking for beginning of object key string"),
        ("", MERGE, "unexpected end of JSON input"),
        ("{} x", MERGE, "invalid character 'x' after top-level value"),
        ("[1]", MERGE, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
    ] {
        let r = patch(body, ct, "").await;
        assert_eq!(r.code, 400, "{body}: {}", r.body);
        assert_eq!(r.body["message"], format!("error decoding patch: {message}"), "{body}");
    }
    // A null merge patch is the merge library's refusal; without strict decoding
    // (fieldValidation=Ignore) the JSON patch library's words, and the merge library's.
    let r = patch("null", MERGE, "").await;
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some("Invalid JSON Patch")), "{}", r.body);
    let r = patch(r#"{"op":"add"}"#, JSON, "?fieldValidation=Ignore").await;
    let message = "json: cannot unmarshal object into Go value of type jsonpatch.Patch";
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some(message)), "{}", r.body);
    let r = patch("{bad", MERGE, "?fieldValidation=Ignore").await;
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some("Invalid JSON Patch")), "{}", r.body);
    // All of it once the object is found: a missing one is 404 whatever the body.
    let r = c.send_raw(http::Method::PATCH, &format!("{CONFIGMAPS}/none"), b"{bad".to_vec(), MERGE).await;
    assert_eq!(r.code, 404, "{}", r.body);
    // An operation that cannot apply is the JSON patch library's 422.
    let r = patch(r#"[{"op":"frob","path":"/data/a"}]"#, JSON, "").await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    assert_eq!(r.body["message"], "the server rejected our request due to an error in our request");
    // Members a JSON patch operation does not have are unknown fields: warned of, or refused.
    let op = r#"[{"op":"replace","path":"/data/a","value":"2","bogus":1}]"#;
    let r = patch(op, JSON, "?fieldValidation=Strict").await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().ends_with(r#"strict decoding error: json patch unknown field "[0].bogus""#),
        "{}",
        r.body
    );
    let r = patch(op, JSON, "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(warnings, [r#"299 - "json patch unknown field \"[0].bogus\"""#]);
    assert_eq!(r.body["data"]["a"], "2");
    // At most 10,000 operations.
    let ops = vec![json!({"op": "test", "path": "/data/a", "value": "2"}); 10_001];
    let r = patch(&serde_json::to_string(&ops).unwrap(), JSON, "").await;
    assert_eq!((r.code, r.body["reason"].as_str()), (413, Some("RequestEntityTooLarge")), "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    assert_eq!(c.get(&path).await.body["data"], json!({"a": "2"}));
}

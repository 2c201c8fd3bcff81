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
    let smp = "application/strategic-merge-patch+json";
    let cases = [
        (json!({"spec": {"strategy": {"$patch": "bogus"}}}), 500, "InternalError"),
        (json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}), 500, "InternalError"),
        (json!({"spec": {"strategy": {"$retainKeys": "type"}}}), 400, "BadRequest"),
        (json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}), 400, "BadRequest"),
        (
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "zz"}], "containers": [{"name": "app"}]}}}}),
            400,
            "BadRequest",
        ),
        (json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}), 400, "BadRequest"),
        (json!([1, 2]), 400, "BadRequest"),
    ];
    for (patch, code, reason) in cases {
        let r = c.patch(&path, smp, &patch).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (code, Some(reason)), "{patch}: {}", r.body);
        assert_eq!(r.body["kind"], "Status");
    }
    let r = c.send_raw(http::Method::PATCH, &path, b"{not json".to_vec(), smp).await;
    assert_eq!(r.code, 400);
    let after = c.get(&path).await;
    assert_eq!(comparable(&after.body), comparable(&before), "no bad patch changed the object");
}

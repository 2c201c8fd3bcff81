//! CustomResourceDefinitions over HTTP against kube-apiserver v1.35's answers
//! (`tests/fixtures/kube-apiserver/90-*` … `99f-*`): a definition is created, established and
//! served in discovery; its custom resources are defaulted, pruned and validated with its
//! structural schema, printed with its printer columns, and have its `status` and `scale`
//! subresources. Then what the samples do not show: name conflicts, the definition's own
//! validation, deletion (objects first, then the definition, then its kinds), several versions,
//! selectable fields, watches, and definitions that survive a restart.

mod common;

use std::time::Duration;

use common::recorded::{comparable, comparable_managed, recorded};
use common::*;
use http::Method;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// An object without what differs between two servers, conditions' times included; a Table's
/// rows' objects alike.
fn normalized(v: &Value) -> Value {
    let mut v = comparable(v);
    if let Some(conds) = v.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
        for c in conds {
            if let Some(m) = c.as_object_mut() {
                m.remove("lastTransitionTime");
            }
        }
    }
    if let Some(rows) = v.get_mut("rows").and_then(Value::as_array_mut) {
        for r in rows {
            r["object"] = comparable(&r["object"]);
        }
    }
    if v.get("kind") == Some(&json!("Table"))
        && let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.remove("resourceVersion");
    }
    v
}

/// Sends a recorded request and checks the answer against kube-apiserver's: status, body
/// (normalized) and Warning headers. Returns our answer.
async fn replay(c: &Client, file: &str) -> Resp {
    let step = recorded(file);
    let r = if step.path.contains("/gadgets") && step.method == http::Method::GET && file.starts_with("97") {
        c.get_accepting(&step.path, "application/json;as=Table;v=v1;g=meta.k8s.io").await
    } else {
        c.send_raw(step.method.clone(), &step.path, step.request_body.clone(), &step.content_type).await
    };
    assert_eq!(r.code, step.status, "{file}: {}", r.body);
    assert_eq!(normalized(&r.body), normalized(&step.response), "{file}");
    let warnings: Vec<String> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings, step.warnings, "{file}");
    r
}

/// Polls `cond` (every few milliseconds, for at most 10 s).
async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn established(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
}

async fn wait_established(c: &Client, name: &str) {
    let path = format!("{CRDS}/{name}");
    eventually("the definition is established", || async { established(&c.get(&path).await.body) }).await;
}

/// Defines the namespaced kind `kind` (`<singular>s.example.com`, served in v1 with `spec` as
/// the schema of its spec), waits until it is established, and answers its collection in
/// `default`.
async fn define_namespaced(c: &Client, singular: &str, kind: &str, spec: Value) -> String {
    assert_eq!(c.post(CRDS, &crd_of(singular, kind, "Namespaced", spec)).await.code, 201);
    wait_established(c, &format!("{singular}s.example.com")).await;
    format!("/apis/example.com/v1/namespaces/default/{singular}s")
}

/// The Gadget definition of the samples (`90-crd-create.txt`).
fn gadget_crd() -> Value {
    recorded("90-crd-create.txt").request()
}

#[tokio::test]
async fn gadgets_answer_as_kube_apiserver_does() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["fixtures"]).await.unwrap();
    replay(&c, "90-crd-create.txt").await;
    wait_established(&c, "gadgets.demo.example.org").await;
    for file in [
        "91-crd-get-established.txt",
        "92-crd-discovery-group-version.txt",
        "92b-crd-discovery-group.txt",
        "93-cr-create-valid-defaulting.txt",
        "94-cr-unknown-field-ignore-pruned.txt",
        "95-cr-unknown-field-strict-400.txt",
        "95b-cr-unknown-field-warn.txt",
        "96-cr-minimum-violation-422.txt",
        "96b-cr-multiple-violations-422.txt",
        "96c-cr-wrong-type-422.txt",
        "97-cr-list-as-table.txt",
        "98-cr-patch-status.txt",
        "99-cr-get-scale.txt",
        "99b-cr-patch-scale.txt",
        "99c-cr-smp-415.txt",
        "99d-cr-get-after.txt",
        "99e-cr-ssa-apply-conflict-with-defaulted-field-409.txt",
    ] {
        replay(&c, file).await;
    }
    // The status the controllers wrote is kube-apiserver's, as the recorded definition says.
    let crd = c.get(&format!("{CRDS}/gadgets.demo.example.org")).await.body;
    let status_managers = |crd: &Value| -> Vec<Value> {
        let entries = crd["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
        entries.into_iter().filter(|e| e["subresource"] == "status").map(|e| e["manager"].clone()).collect()
    };
    let recorded_crd = recorded("91-crd-get-established.txt").response;
    assert_eq!(status_managers(&crd), status_managers(&recorded_crd));
    assert_eq!(status_managers(&crd), [json!("kube-apiserver")]);
    // Server-side apply on the custom resource: the defaulted `spec.mode` belongs to the
    // creating manager, so another's apply conflicts until forced; every manager's fields as
    // kube-apiserver records them.
    let forced = replay(&c, "99f-cr-ssa-apply-force.txt").await;
    let kubes = recorded("99f-cr-ssa-apply-force.txt").response;
    assert_eq!(comparable_managed(&forced.body), comparable_managed(&kubes));
    let gizmo = c.get("/apis/demo.example.org/v1/namespaces/fixtures/gadgets/gizmo").await.body;
    assert_eq!(
        gizmo["metadata"]["generation"], 3,
        "the scale write and the apply moved the generation, the status write did not"
    );
    // Aggregated discovery lists the kind with its subresources.
    let aggregated =
        c.get_accepting("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").await;
    assert_eq!(
        aggregated.headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let group = aggregated.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "demo.example.org")
        .expect("the group is listed")
        .clone();
    let gadgets = &group["versions"][0]["resources"][0];
    assert_eq!(
        (&gadgets["resource"], &gadgets["scope"], &gadgets["responseKind"]["kind"]),
        (&json!("gadgets"), &json!("Namespaced"), &json!("Gadget"))
    );
    let subresources: Vec<&Value> =
        gadgets["subresources"].as_array().unwrap().iter().map(|s| &s["subresource"]).collect();
    // The apiextensions server lists status before scale.
    assert_eq!(subresources, [&json!("status"), &json!("scale")]);
    // The definition's other names and the groups list.
    let groups = c.get("/apis").await.body;
    assert!(groups["groups"].as_array().unwrap().iter().any(|g| g["name"] == "demo.example.org"));
    assert_eq!(c.get("/apis/demo.example.org/v1/namespaces/fixtures/gadgets?labelSelector=x%3Dy").await.code, 200);
    // Across namespaces its objects are listed and watched, not deleted (kube's CRD handler
    // passes such a request on, to a 404).
    assert_eq!(c.delete("/apis/demo.example.org/v1/gadgets").await.code, 404);
    assert_eq!(c.get("/apis/demo.example.org/v1/gadgets").await.code, 200);
    assert!(s.get("gd", "fixtures", "gizmo").await.is_ok(), "found by short name");
}

#[tokio::test]
async fn a_definition_is_validated_and_names_in_use_are_not_accepted() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = gadget_crd();
    bad["metadata"]["name"] = json!("widgets.demo.example.org");
    bad["spec"]["versions"][0]["storage"] = json!(false);
    let r = c.post(CRDS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    let fields: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    // No storage version: none is stored either.
    assert_eq!(fields, ["metadata.name", "spec.versions", "status.storedVersions"]);
    assert_eq!(r.body["details"]["causes"][2]["message"], "Invalid value: null: must have at least one stored version");
    // Two: the first is the one stored; versions named twice; a version without a schema.
    let mut two = gadget_crd();
    let version = two["spec"]["versions"][0].clone();
    let mut second = version.clone();
    second["schema"] = Value::Null;
    two["spec"]["versions"] = json!([version, second]);
    let two = c.post(CRDS, &two).await;
    assert_eq!(
        causes(&two)
            .into_iter()
            .map(|(_, field, message)| format!("{field}: {message}"))
            .filter(|m| !m.starts_with("spec.versions[1].additionalPrinterColumns"))
            .collect::<Vec<_>>(),
        [
            "spec.versions[1].schema.openAPIV3Schema: Required value",
            "spec.versions: Invalid value: [\"v1\",\"v1\"]: must contain unique version names",
            "spec.versions: Invalid value: [\"v1\",\"v1\"]: must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v1",
        ],
        "{}",
        two.body
    );
    assert!(
        r.body["message"].as_str().unwrap().starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.demo.example.org\" is invalid: [metadata.name: Invalid value: \"widgets.demo.example.org\": must be spec.names.plural+\".\"+spec.group, spec.versions: Invalid value: "
        ),
        "{}",
        r.body["message"]
    );
    // JSON-Schema keywords kube does not take, even where kubectl's strict decoding knows them.
    let mut keywords = gadget_crd();
    let schema = &mut keywords["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    schema["properties"]["spec"]["patternProperties"] = json!({"^x-": {"type": "string"}});
    schema["properties"]["spec"]["allOf"] = json!([{"$ref": "#/definitions/base"}]);
    let r = c.post(&format!("{CRDS}?fieldValidation=Strict"), &keywords).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    for part in [
        "spec.validation.openAPIV3Schema.properties[spec].patternProperties: Forbidden: patternProperties is not supported",
        "spec.validation.openAPIV3Schema.properties[spec].allOf[0].$ref: Forbidden: $ref is not supported",
    ] {
        assert!(message.contains(part), "{message}");
    }
    assert_eq!(c.post(CRDS, &gadget_crd()).await.code, 201);
    wait_established(&c, "gadgets.demo.example.org").await;
    // Another definition of the group wanting the same kind.
    let mut other = gadget_crd();
    other["metadata"]["name"] = json!("gizmos.demo.example.org");
    other["spec"]["names"] = json!({"plural": "gizmos", "kind": "Gadget", "listKind": "GizmoList"});
    assert_eq!(c.post(CRDS, &other).await.code, 201);
    let path = format!("{CRDS}/gizmos.demo.example.org");
    eventually("the conflict is reported", || async {
        let b = c.get(&path).await.body;
        b["status"]["conditions"].as_array().is_some_and(|c| !c.is_empty())
    })
    .await;
    let b = c.get(&path).await.body;
    let conds = &b["status"]["conditions"];
    assert_eq!(conds[0]["type"], "NamesAccepted");
    assert_eq!((conds[0]["status"].as_str(), conds[0]["reason"].as_str()), (Some("False"), Some("KindConflict")));
    assert_eq!(conds[0]["message"], "\"Gadget\" is already in use");
    assert_eq!((conds[1]["type"].as_str(), conds[1]["status"].as_str()), (Some("Established"), Some("False")));
    assert_eq!(c.get("/apis/demo.example.org/v1/namespaces/default/gizmos").await.code, 404, "not served");
    // Deleted, it says it never was established, then goes.
    let rv = b["metadata"]["resourceVersion"].as_str().unwrap();
    let mut w = c
        .watch(&format!("{CRDS}?watch=true&fieldSelector=metadata.name%3Dgizmos.demo.example.org&resourceVersion={rv}"))
        .await;
    assert_eq!(c.delete(&path).await.code, 200);
    let mut reasons = Vec::new();
    loop {
        let ev = w.next_within(SEC).await.expect("an event");
        let terminating = ev["object"]["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Terminating").cloned());
        if let Some(t) = terminating {
            reasons.push(format!("{}/{}", t["status"].as_str().unwrap(), t["reason"].as_str().unwrap()));
        }
        if ev["type"] == "DELETED" {
            break;
        }
    }
    reasons.dedup();
    assert_eq!(reasons, ["True/InstanceDeletionPending", "True/InstanceDeletionInProgress", "False/NeverEstablished"]);
}

#[tokio::test]
async fn deleting_a_definition_deletes_its_objects_then_stops_serving_it() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &gadget_crd()).await.code, 201);
    wait_established(&c, "gadgets.demo.example.org").await;
    let base = "/apis/demo.example.org/v1/namespaces/default/gadgets";
    for n in ["a", "b"] {
        let r = c.post(base, &json!({"apiVersion": "demo.example.org/v1", "kind": "Gadget", "metadata": {"name": n}, "spec": {"replicas": 1}})).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    // A policy refusing every deletion of a gadget: the definition's cleanup is not asked, as
    // kube's finalizer deletes straight from the registry.
    refuse_deletes(&c, "keep-gadgets", ("demo.example.org", "gadgets"), "gadgets stay").await;
    let refused = c.delete(&format!("{base}/a")).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    let list = c.get(base).await.body;
    let mut w = c
        .watch(&format!("{base}?watch=true&resourceVersion={}", list["metadata"]["resourceVersion"].as_str().unwrap()))
        .await;
    let r = c.delete(&format!("{CRDS}/gadgets.demo.example.org")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]));
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    let deleted: Vec<String> = {
        let mut names = Vec::new();
        while names.len() < 2 {
            let ev = w.next_within(SEC).await.expect("an event");
            assert_eq!(ev["type"], "DELETED", "{ev}");
            names.push(ev["object"]["metadata"]["name"].as_str().unwrap().to_string());
        }
        names
    };
    assert_eq!(deleted.len(), 2);
    eventually("the definition is gone", || async {
        c.get(&format!("{CRDS}/gadgets.demo.example.org")).await.code == 404
    })
    .await;
    w.expect_end(SEC).await;
    assert_eq!(c.get(base).await.code, 404);
    assert_eq!(c.get("/apis/demo.example.org/v1").await.code, 404);
    assert!(!c.get("/apis").await.body["groups"].as_array().unwrap().iter().any(|g| g["name"] == "demo.example.org"));
    // Created again, it starts empty.
    assert_eq!(c.post(CRDS, &gadget_crd()).await.code, 201);
    wait_established(&c, "gadgets.demo.example.org").await;
    assert_eq!(c.get(base).await.body["items"], json!([]));
}

#[tokio::test]
async fn a_watcher_behind_gets_the_deletions_of_a_deleted_definition_s_objects() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"data": {"type": "string"}}});
    let base = &define_namespaced(&c, "crate", "Crate", spec).await;
    let rv = c.get(base).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{base}?watch=true&resourceVersion={rv}")).await;
    // 24 MB of objects, which the client does not read yet: more than the connection's buffers hold, so
    // the watch is still sending their ADDED events when the definition is gone.
    let data = "x".repeat(1_000_000);
    const N: usize = 24;
    for i in 0..N {
        let body = json!({"apiVersion": "example.com/v1", "kind": "Crate", "metadata": {"name": format!("c{i}")},
            "spec": {"data": data}});
        assert_eq!(c.post(base, &body).await.code, 201);
    }
    assert_eq!(c.delete(&format!("{CRDS}/crates.example.com")).await.code, 200);
    eventually("the definition is gone", || async { c.get(&format!("{CRDS}/crates.example.com")).await.code == 404 })
        .await;
    assert_eq!(c.get(base).await.code, 404);
    // Read now: every ADDED, then every DELETED, then the end.
    let (mut added, mut deleted) = (Vec::new(), Vec::new());
    while let Some(ev) = w.next_within(Duration::from_secs(60)).await {
        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
        match ev["type"].as_str() {
            Some("ADDED") if deleted.is_empty() => added.push(name),
            Some("DELETED") => deleted.push(name),
            other => panic!("unexpected event {other:?} after {} deletions", deleted.len()),
        }
    }
    assert!(!w.broken, "the watch ends cleanly");
    assert_eq!(added.len(), N);
    deleted.sort();
    added.sort();
    assert_eq!(deleted, added, "a watcher behind gets every deletion before its watch ends");
}

#[tokio::test]
async fn objects_stored_before_the_kind_was_renamed_are_served_and_written() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    let base = &define_namespaced(&c, "multi", "Multi", spec).await;
    for name in ["a", "b"] {
        let body =
            json!({"apiVersion": "example.com/v1", "kind": "Multi", "metadata": {"name": name}, "spec": {"size": 1}});
        assert_eq!(c.post(base, &body).await.code, 201);
    }
    let mut renamed = c.get(&format!("{CRDS}/multis.example.com")).await.body;
    renamed["spec"]["names"]["kind"] = json!("Multi2");
    renamed["spec"]["names"]["listKind"] = json!("Multi2List");
    assert_eq!(c.put(&format!("{CRDS}/multis.example.com"), &renamed).await.code, 200);
    eventually("the new kind is served", || async {
        let v1 = c.get("/apis/example.com/v1").await.body;
        v1["resources"].as_array().is_some_and(|r| r.iter().any(|r| r["kind"] == "Multi2"))
    })
    .await;
    // Served under the version's apiVersion and the definition's kind.
    let r = c.get(&format!("{base}/a")).await;
    assert_eq!((r.code, r.body["kind"].as_str()), (200, Some("Multi2")), "{}", r.body);
    assert_eq!(r.body["spec"]["size"], 1);
    let list = c.get(base).await.body;
    assert_eq!(list["kind"], "Multi2List");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(2), "{list}");
    let mut a = r.body.clone();
    a["kind"] = json!("Multi2");
    a["spec"]["size"] = json!(2);
    let r = c.put(&format!("{base}/a"), &a).await;
    assert_eq!((r.code, r.body["kind"].as_str()), (200, Some("Multi2")), "{}", r.body);
    assert_eq!(c.delete(&format!("{base}/b")).await.code, 200);
    assert_eq!(c.get(&format!("{base}/b")).await.code, 404);
}

/// A definition with two served versions (v1 stored), a printer column, a selectable field of
/// v1 alone and no subresources. (The versions' schemas differ: kube refuses selectable fields
/// of one version when every version has the same schema.)
fn widgets_crd() -> Value {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "string", "default": "small"}, "color": {"type": "string"}}}}});
    let mut beta = schema.clone();
    beta["description"] = json!("A widget (beta).");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "categories": ["all"]},
                 "versions": [
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": {"openAPIV3Schema": beta}},
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                     "selectableFields": [{"jsonPath": ".spec.color"}]}]}
    })
}

#[tokio::test]
async fn a_version_once_stored_stays_in_the_definition() {
    let s = server().await;
    let c = Client::new(&s);
    let mut crd = widgets_crd();
    crd["spec"]["versions"][0]["storage"] = json!(true);
    crd["spec"]["versions"][1]["storage"] = json!(false);
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    let path = format!("{CRDS}/widgets.example.com");
    // (Merge patches: the definition's controller writes its status meanwhile.)
    let mut versions = crd["spec"]["versions"].clone();
    versions[0]["storage"] = json!(false);
    versions[1]["storage"] = json!(true);
    let r = c.patch(&path, "application/merge-patch+json", &json!({"spec": {"versions": versions}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["storedVersions"], json!(["v1beta1", "v1"]));
    let only_v1 = json!({"spec": {"versions": [versions[1].clone()]}});
    let r = c.patch(&path, "application/merge-patch+json", &only_v1).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: status.storedVersions[0]: \
         Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must \
         remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes \
         v1beta1 from status.storedVersions"
    );
    // A storage migration takes the old version out of the stored ones through the status,
    // which judges them no more than kube's status strategy does; then it may go.
    let migrated = json!({"status": {"storedVersions": ["v1"]}});
    let r = c.patch(&format!("{path}/status"), "application/merge-patch+json", &migrated).await;
    assert_eq!((r.code, &r.body["status"]["storedVersions"]), (200, &json!(["v1"])), "{}", r.body);
    assert_eq!(c.patch(&path, "application/merge-patch+json", &only_v1).await.code, 200);
    let r = c
        .patch(&format!("{path}/status"), "application/merge-patch+json", &json!({"status": {"storedVersions": []}}))
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn versions_are_served_and_objects_stored_in_the_storage_version() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &widgets_crd()).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    let group = c.get("/apis/example.com").await.body;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);
    let r = c.post("/apis/example.com/v1beta1/widgets", &json!({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"color": "red"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "example.com/v1beta1");
    assert_eq!(r.body["spec"], json!({"color": "red", "size": "small"}));
    assert_eq!(r.headers["warning"], "299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\"");
    let v1 = c.get("/apis/example.com/v1/widgets/w").await;
    assert_eq!(v1.body["apiVersion"], "example.com/v1");
    assert_eq!(v1.body["metadata"]["resourceVersion"], r.body["metadata"]["resourceVersion"]);
    let layout = s.store().cache().layout().clone();
    let key = layout.object_key(s.store().registry().find("example.com", "v1", "widgets").unwrap(), "", "w");
    assert_eq!(key, format!("{}/example.com/widgets/w", layout.prefix()), "kube-apiserver's layout");
    let stored = s.store().storage().get(&key).await.unwrap().expect("stored");
    let stored: Value = serde_json::from_slice(&stored.value).unwrap();
    assert_eq!(stored["apiVersion"], "example.com/v1", "stored in the storage version");
    // Selectable fields.
    let r =
        c.post("/apis/example.com/v1/widgets", &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": {"color": "blue"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let sel = c.get("/apis/example.com/v1/widgets?fieldSelector=spec.color%3Dblue").await.body;
    let names: Vec<&str> =
        sel["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x"]);
    let bad = c.get("/apis/example.com/v1beta1/widgets?fieldSelector=spec.color%3Dblue").await;
    assert_eq!(bad.code, 400, "v1beta1 does not declare the field: {}", bad.body);
    // Default printer columns: Name and Age.
    let t = c.get_accepting("/apis/example.com/v1/widgets", "application/json;as=Table;v=v1;g=meta.k8s.io").await.body;
    let cols: Vec<&str> =
        t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(cols, ["Name", "Age"]);
    // A write in v1 seen by a v1beta1 watcher, converted.
    let mut w = c.watch("/apis/example.com/v1beta1/widgets?watch=true&fieldSelector=metadata.name%3Dw").await;
    let ev = w.next_within(SEC).await.unwrap();
    assert_eq!(
        (ev["type"].as_str(), ev["object"]["apiVersion"].as_str()),
        (Some("ADDED"), Some("example.com/v1beta1"))
    );
    let r = c
        .patch("/apis/example.com/v1/widgets/w", "application/merge-patch+json", &json!({"spec": {"size": "large"}}))
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let ev = w.next_within(SEC).await.unwrap();
    assert_eq!(ev["type"], "MODIFIED");
    assert_eq!(ev["object"]["apiVersion"], "example.com/v1beta1");
    assert_eq!(ev["object"]["spec"]["size"], "large");
    assert_eq!(ev["object"]["metadata"]["generation"], 2);
}

#[tokio::test]
async fn definitions_and_their_objects_survive_a_restart() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &widgets_crd()).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    let r = c
        .post(
            "/apis/example.com/v1/widgets",
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "kept"}, "spec": {}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    s.restart().await.unwrap();
    assert!(s.wait_ready(Duration::from_secs(10)).await);
    let r = c.get("/apis/example.com/v1/widgets/kept").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["size"], "small");
    assert_eq!(c.get("/apis/example.com/v1beta1/widgets").await.body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_builder_installs_definitions_before_start_returns() {
    let yaml = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gears.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: gears, kind: Gear}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#;
    let s = informer_apiserver::testing::builder().crd(yaml).start().await.unwrap();
    let c = Client::new(&s);
    assert_eq!(c.get("/apis/example.com/v1/namespaces/default/widgets").await.code, 200);
    assert_eq!(c.get("/apis/example.com/v1/gears").await.code, 200);
    let bad = informer_apiserver::testing::builder().crd("kind: Pod\n").start().await;
    assert!(bad.is_err());
    let mut invalid: Value = gadget_crd();
    invalid["spec"]["scope"] = json!("Everywhere");
    let e = informer_apiserver::testing::builder().crd(invalid.to_string()).start().await.err().unwrap();
    assert!(e.to_string().contains("spec.scope: Unsupported value"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_on_one_etcd_serves_a_definition_created_through_any_of_them() {
    let etcd = informer_apiserver::etcd_process::EtcdProcess::start().unwrap();
    let start = || informer_apiserver::ApiServer::builder().etcd(vec![etcd.url()]).etcd_prefix("/replicas").start();
    let (a, b) = (start().await.unwrap(), start().await.unwrap());
    let (ca, cb) = (Client::new(&a), Client::new(&b));
    assert_eq!(ca.post(CRDS, &widgets_crd()).await.code, 201);
    // Served by B as soon as B's watch of etcd shows it established.
    let path = "/apis/example.com/v1/widgets";
    eventually("the other replica serves the kind", || async { cb.get(path).await.code == 200 }).await;
    let r = cb
        .post(
            path,
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "from-b"}, "spec": {}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let got = ca.get(&format!("{path}/from-b")).await;
    assert_eq!(got.code, 200, "{}", got.body);
    assert_eq!(got.body["spec"]["size"], "small");
    // Deleted through B: both stop serving it.
    assert_eq!(cb.delete(&format!("{CRDS}/widgets.example.com")).await.code, 200);
    eventually("A stops serving it", || async { ca.get(path).await.code == 404 }).await;
    eventually("B stops serving it", || async { cb.get(path).await.code == 404 }).await;
}

#[tokio::test]
async fn a_new_server_on_a_data_directory_serves_its_definitions_from_the_start() {
    let dir = informer_apiserver::testing::temp_data_dir();
    {
        let s = informer_apiserver::ApiServer::builder().data_dir(&dir).start().await.unwrap();
        let c = Client::new(&s);
        assert_eq!(c.post(CRDS, &widgets_crd()).await.code, 201);
        wait_established(&c, "widgets.example.com").await;
        let r = c
            .post("/apis/example.com/v1/widgets", &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "kept"}, "spec": {"color": "red"}}))
            .await;
        assert_eq!(r.code, 201, "{}", r.body);
        s.stop().await;
    }
    // Installed again, changed, as envtest reinstalls definitions: the stored one is updated.
    let mut changed = widgets_crd();
    changed["spec"]["names"]["categories"] = json!(["all", "toys"]);
    let s = informer_apiserver::ApiServer::builder().data_dir(&dir).crd(changed.to_string()).start().await.unwrap();
    let c = Client::new(&s);
    let stored = c.get(&format!("{CRDS}/widgets.example.com")).await;
    assert_eq!(stored.body["spec"]["names"]["categories"], json!(["all", "toys"]), "{}", stored.body);
    let r = c.get("/apis/example.com/v1beta1/widgets/kept").await;
    assert_eq!(r.code, 200, "served as soon as start() returns: {}", r.body);
    assert_eq!(
        (r.body["apiVersion"].as_str(), r.body["spec"]["color"].as_str()),
        (Some("example.com/v1beta1"), Some("red"))
    );
    let rl = c.get("/apis/example.com/v1").await.body;
    assert_eq!(rl["resources"][0]["name"], "widgets");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_custom_objects_once() {
    let s = server().await;
    let c = Client::new(&s);
    let mut crd = widgets_crd();
    crd["spec"]["scope"] = json!("Namespaced");
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    create_namespaces(&s, &["doomed"]).await.unwrap();
    let base = "/apis/example.com/v1/namespaces/doomed/widgets";
    let r = c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["example.com/hold"]}, "spec": {}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.delete("/api/v1/namespaces/doomed").await.code, 200);
    eventually("the namespace reports what remains", || async {
        let ns = c.get("/api/v1/namespaces/doomed").await.body;
        ns["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "NamespaceContentRemaining"))
    })
    .await;
    let ns = c.get("/api/v1/namespaces/doomed").await.body;
    let remaining = ns["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "NamespaceContentRemaining")
        .unwrap()
        .clone();
    assert_eq!(remaining["message"], "Some resources are remaining: widgets.example.com has 1 resource instances");
    let r =
        c.patch(&format!("{base}/w"), "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    eventually("the namespace is gone", || async { c.get("/api/v1/namespaces/doomed").await.code == 404 }).await;
}

#[tokio::test]
async fn a_changed_schema_applies_to_stored_objects_and_lists_page_and_render() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &widgets_crd()).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    let base = "/apis/example.com/v1/widgets";
    for n in ["a", "b", "c"] {
        assert_eq!(
            c.post(
                base,
                &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": n}, "spec": {}})
            )
            .await
            .code,
            201
        );
    }
    // Paging.
    let p1 = c.get(&format!("{base}?limit=2")).await.body;
    assert_eq!(p1["items"].as_array().unwrap().len(), 2);
    assert_eq!(p1["metadata"]["remainingItemCount"], 1);
    let token = p1["metadata"]["continue"].as_str().unwrap();
    let p2 = c.get(&format!("{base}?limit=2&continue={token}")).await.body;
    assert_eq!(p2["items"][0]["metadata"]["name"], "c");
    // Metadata only.
    let m = c.get_accepting(&format!("{base}/a"), "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").await;
    assert_eq!(m.code, 200, "{}", m.body);
    // A default added to the definition shows on the objects stored before it.
    let before = c.get(base).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut watch = c.watch(&format!("{base}?watch=true&resourceVersion={before}")).await;
    let mut crd = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    for v in crd["spec"]["versions"].as_array_mut().unwrap() {
        v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]["default"] = json!("grey");
    }
    let r = c.put(&format!("{CRDS}/widgets.example.com"), &crd).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 2);
    eventually("the new default is served", || async {
        c.get(&format!("{base}/a")).await.body["spec"]["color"] == "grey"
    })
    .await;
    // As kube replaces the resource's storage: the open watch ends, and one from before the
    // change is too old, so an informer lists again and sees the default.
    while let Some(ev) = watch.next_within(SEC).await {
        assert_eq!(ev["type"], "ERROR", "{ev}");
        assert_eq!(ev["object"]["code"], 410, "{ev}");
    }
    let mut again = c.watch(&format!("{base}?watch=true&resourceVersion={before}")).await;
    let ev = again.next_within(SEC).await.expect("an event");
    assert_eq!((&ev["type"], &ev["object"]["code"]), (&json!("ERROR"), &json!(410)), "{ev}");
    let listed = c.get(base).await.body;
    assert!(listed["items"].as_array().unwrap().iter().all(|i| i["spec"]["color"] == "grey"), "{listed}");
    // Adding a version serves the objects in it.
    let mut crd = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    let mut v2 = crd["spec"]["versions"][1].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    assert_eq!(c.put(&format!("{CRDS}/widgets.example.com"), &crd).await.code, 200);
    eventually("v2 is served", || async { c.get("/apis/example.com/v2/widgets").await.code == 200 }).await;
    let v2list = c.get("/apis/example.com/v2/widgets").await.body;
    assert_eq!(v2list["items"].as_array().unwrap().len(), 3);
    assert_eq!(v2list["items"][0]["apiVersion"], "example.com/v2");
    assert_eq!(c.get("/apis/example.com").await.body["preferredVersion"]["version"], "v2");
}

/// A definition of one served and stored version `v1` of `<singular>s.example.com`, whose
/// `spec` has the schema given.
fn sprockets_crd() -> Value {
    let spec = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas cannot be larger than maxReplicas"},
            {"rule": "!has(self.replicas) || self.replicas <= 10",
             "messageExpression": "'replicas ' + string(self.replicas) + ' is over 10'",
             "reason": "FieldValueForbidden", "fieldPath": ".replicas"}
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "replicas": {"type": "integer"},
            "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]}
        }
    });
    crd_of("sprocket", "Sprocket", "Cluster", spec)
}

/// The causes of a 422, as (reason, field, message).
fn causes(r: &Resp) -> Vec<(String, String, String)> {
    r.body["details"]["causes"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

fn cause(reason: &str, field: &str, message: &str) -> (String, String, String) {
    (reason.into(), field.into(), message.into())
}

#[tokio::test]
async fn validation_rules_judge_every_write_in_kube_words() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &sprockets_crd()).await.code, 201);
    wait_established(&c, "sprockets.example.com").await;
    // A definition whose rule does not compile, or uses oldSelf where nothing correlates, is refused.
    let mut broken = sprockets_crd();
    broken["metadata"]["name"] = json!("brokens.example.com");
    broken["spec"]["names"] = json!({"plural": "brokens", "singular": "broken", "kind": "Broken"});
    let schema = &mut broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    schema["properties"]["spec"]["x-kubernetes-validations"][0]["rule"] = json!("self.minReplicas <=");
    // A rule naming a field the schema lacks is refused when the definition is written.
    schema["properties"]["spec"]["x-kubernetes-validations"][1]["rule"] = json!("self.replica <= 10");
    schema["properties"]["tags"] = json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64,
        "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}});
    let r = c.post(CRDS, &broken).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let found = causes(&r);
    let fields: Vec<&str> = found.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule",
            "spec.validation.openAPIV3Schema.properties[tags].items.x-kubernetes-validations[0].rule",
        ],
        "{found:?}"
    );
    assert!(found[0].2.contains("compilation failed: ERROR: <input>:1:20: Syntax error: "), "{found:?}");
    assert!(
        found[1].2.ends_with(
            "compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n | self.replica <= 10\n | ....^"
        ),
        "{found:?}"
    );
    assert_eq!(c.get(&format!("{CRDS}/brokens.example.com")).await.code, 404);

    let base = "/apis/example.com/v1/sprockets";
    let sprocket = |name: &str, spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Sprocket", "metadata": {"name": name}, "spec": spec});

    let ok = c.post(base, &sprocket("ok", json!({"minReplicas": 1, "maxReplicas": 8, "mode": "fast"}))).await;
    assert_eq!(ok.code, 201, "{}", ok.body);

    // A false rule, with its message.
    let r = c.post(base, &sprocket("bad", json!({"minReplicas": 3, "maxReplicas": 2}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["message"],
        "Sprocket.example.com \"bad\" is invalid: spec: Invalid value: minReplicas cannot be larger than maxReplicas"
    );
    assert_eq!(
        causes(&r),
        vec![cause("FieldValueInvalid", "spec", "Invalid value: minReplicas cannot be larger than maxReplicas")]
    );

    // messageExpression, reason and fieldPath.
    let r = c.post(base, &sprocket("many", json!({"minReplicas": 1, "maxReplicas": 2, "replicas": 11}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), vec![cause("FieldValueForbidden", "spec.replicas", "Forbidden: replicas 11 is over 10")]);

    // An error while evaluating names the rule.
    let r = c.post(base, &sprocket("partial", json!({"minReplicas": 1}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        vec![cause(
            "FieldValueInvalid",
            "spec",
            "Invalid value: \"object\": no such key: maxReplicas evaluating rule: minReplicas cannot be larger than maxReplicas"
        )]
    );

    // A schema error of the kind that blocks rules: they are not evaluated.
    let r = c.post(base, &sprocket("typed", json!({"minReplicas": "x", "maxReplicas": 2}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let found = causes(&r);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "FieldValueTypeInvalid");
    assert_eq!(
        found[1],
        cause(
            "FieldValueInvalid",
            "<nil>",
            "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        )
    );

    // A transition rule: runs on updates, against the stored value.
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"spec": {"mode": "slow"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), vec![cause("FieldValueInvalid", "spec.mode", "Invalid value: \"slow\": mode is immutable")]);
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"spec": {"maxReplicas": 9}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // Nothing was written by the refused writes.
    assert_eq!(c.get(&format!("{base}/ok")).await.body["spec"]["mode"], "fast");
    assert_eq!(c.get(&format!("{base}/bad")).await.code, 404);

    // A rule added later does not refuse values an update leaves as they are.
    let mut crd = c.get(&format!("{CRDS}/sprockets.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"rule": "self.maxReplicas <= 5", "message": "at most 5"}));
    // The schema is tightened too: the stored "fast" is now too long.
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"]["maxLength"] =
        json!(3);
    let r = c.put(&format!("{CRDS}/sprockets.example.com"), &crd).await;
    assert_eq!(r.code, 200, "{}", r.body);
    eventually("the new rule is in force", || async {
        c.post(base, &sprocket("big", json!({"minReplicas": 1, "maxReplicas": 6}))).await.code == 422
    })
    .await;
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"metadata": {"labels": {"tier": "gold"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // The rule still fails there: the client is warned.
    assert_eq!(r.headers["warning"], "299 - \"spec: Invalid value: at most 5\"");
    // A changed spec is judged by the new rule; its unchanged mode is not judged by the new
    // maxLength (kube's ratcheting), until it changes.
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"spec": {"minReplicas": 2}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), vec![cause("FieldValueInvalid", "spec", "Invalid value: at most 5")]);
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"spec": {"maxReplicas": 5, "mode": "slow"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        vec![
            cause("FieldValueTooLong", "spec.mode", "Too long: may not be more than 3 bytes"),
            cause(
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ),
        ]
    );
    let r = c.patch(&format!("{base}/ok"), merge, &json!({"spec": {"maxReplicas": 5}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn validation_rules_use_kube_s_libraries_and_two_variable_comprehensions() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {
        "memory": {"type": "string", "x-kubernetes-validations": [
            {"rule": "quantity(self).isLessThan(quantity('1Gi'))", "message": "memory must be under 1Gi"}]},
        "endpoint": {"type": "string", "x-kubernetes-validations": [
            {"rule": "isURL(self) && url(self).getScheme() == 'https'", "message": "endpoint must be an https URL"}]},
        "address": {"type": "string", "x-kubernetes-validations": [
            {"rule": "cidr('10.0.0.0/8').containsIP(self)", "message": "address must be in 10.0.0.0/8"}]},
        "service": {"type": "string", "maxLength": 63, "x-kubernetes-validations": [
            {"rule": "!format.dns1035Label().validate(self).hasValue()",
             "messageExpression": "format.dns1035Label().validate(self).value().join(', ')"}]},
        "limits": {"type": "object", "additionalProperties": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.all(k, v, v <= 10 || k.startsWith('big-'))", "message": "only big- limits exceed 10"}]},
        "ports": {"type": "array", "maxItems": 64, "items": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.all(i, p, i == 0 || p > self[i - 1])", "message": "ports must increase"},
            {"rule": "self.transformList(i, p, p * 2).all(p, p < 131072)", "message": "ports must be valid"}]}
    }});
    let crd = crd_of("probe", "Probe", "Cluster", spec);
    let r = c.post(CRDS, &crd).await;
    assert_eq!(r.code, 201, "{}", r.body);
    wait_established(&c, "probes.example.com").await;
    let base = "/apis/example.com/v1/probes";
    let probe = |name: &str, spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": name}, "spec": spec});
    let good = json!({"memory": "512Mi", "endpoint": "https://probe.example.com:8443/health", "address": "10.1.2.3",
                      "service": "web-1", "limits": {"cpu": 4, "big-memory": 64}, "ports": [80, 443, 8443]});
    let r = c.post(base, &probe("good", good)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let bad = json!({"memory": "2G", "endpoint": "http://probe.example.com/", "address": "192.168.0.1",
                     "service": "1-web", "limits": {"cpu": 40}, "ports": [443, 80]});
    let r = c.post(base, &probe("bad", bad)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        vec![
            cause("FieldValueInvalid", "spec.address", "Invalid value: \"192.168.0.1\": address must be in 10.0.0.0/8"),
            cause(
                "FieldValueInvalid",
                "spec.endpoint",
                "Invalid value: \"http://probe.example.com/\": endpoint must be an https URL"
            ),
            cause("FieldValueInvalid", "spec.limits", "Invalid value: only big- limits exceed 10"),
            cause("FieldValueInvalid", "spec.memory", "Invalid value: \"2G\": memory must be under 1Gi"),
            cause("FieldValueInvalid", "spec.ports", "Invalid value: ports must increase"),
            cause(
                "FieldValueInvalid",
                "spec.service",
                "Invalid value: \"1-web\": a DNS-1035 label must consist of lower case alphanumeric characters or \
                 '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  \
                 or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ),
        ]
    );
    // A value the library cannot read is an evaluation error in kube's words.
    let r = c.post(base, &probe("unread", json!({"memory": "lots"}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        vec![cause(
            "FieldValueInvalid",
            "spec.memory",
            "Invalid value: \"string\": quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be under 1Gi"
        )]
    );
}

#[tokio::test]
async fn a_default_that_breaks_its_schema_or_rules_refuses_the_definition() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {
        "replicas": {"type": "integer", "default": "three"},
        "worker": {"type": "object", "default": {},
            "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.min <= self.max"}]},
        "version": {"type": "string", "default": "1.2",
            "x-kubernetes-validations": [{"rule": "isSemver(self)", "message": "must be a semantic version"}]}
    }});
    let crd = crd_of("pool", "Pool", "Cluster", spec);
    let r = c.post(CRDS, &crd).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
    assert_eq!(
        causes(&r),
        vec![
            cause(
                "FieldValueTypeInvalid",
                &format!("{at}[replicas].default"),
                &format!(
                    "Invalid value: \"string\": {at}[replicas].default in body must be of type integer: \"string\""
                )
            ),
            cause(
                "FieldValueInvalid",
                &format!("{at}[version].default"),
                "Invalid value: \"1.2\": must be a semantic version"
            ),
            cause(
                "FieldValueInvalid",
                &format!("{at}[worker].default"),
                "Invalid value: \"object\": no such key: min evaluating rule: self.min <= self.max"
            ),
        ]
    );
    assert_eq!(c.get(&format!("{CRDS}/pools.example.com")).await.code, 404);
}

/// A definition of `hosts.example.com` whose `spec` has the schema given.
fn hosts_crd(spec: Value) -> Value {
    crd_of("host", "Host", "Namespaced", spec)
}

#[tokio::test]
async fn rules_over_kube_s_cost_budget_refuse_the_definition() {
    let s = server().await;
    let c = Client::new(&s);
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, \
                and strings are declared)";
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[names]";
    // A pattern matched against every item of a list and strings without limits: kube estimates
    // a million items of three million characters.
    let unbounded = json!({"type": "object", "properties": {"names": {
        "type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(n, n.matches('^[a-z0-9.-]+$'))"}]}}});
    let r = c.post(CRDS, &hosts_crd(unbounded)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            cause(
                "FieldValueForbidden",
                &format!("{at}.x-kubernetes-validations[0].rule"),
                &format!("Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}")
            ),
            cause(
                "FieldValueForbidden",
                &format!("{at}.x-kubernetes-validations[0].rule"),
                "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            cause(
                "FieldValueForbidden",
                "spec.validation.openAPIV3Schema",
                &format!(
                    "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema \
                     exceeds budget by factor of more than 100x {hint}"
                )
            ),
        ]
    );
    // A rule on each of a hundred unbounded strings: 629,147 units a run, a hundred runs.
    let per_item = json!({"type": "object", "properties": {"names": {
        "type": "array", "maxItems": 100,
        "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}});
    let r = c.post(CRDS, &hosts_crd(per_item)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [cause(
            "FieldValueForbidden",
            &format!("{at}.items.x-kubernetes-validations[0].rule"),
            &format!("Forbidden: estimated rule cost exceeds budget by factor of 6.3x {hint}")
        )]
    );
    // Bounded as kube suggests, the first rule is cheap and the definition is served.
    let bounded = json!({"type": "object", "properties": {"names": {
        "type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 253},
        "x-kubernetes-validations": [{"rule": "self.all(n, n.matches('^[a-z0-9.-]+$'))"}]}}});
    let r = c.post(CRDS, &hosts_crd(bounded)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    wait_established(&c, "hosts.example.com").await;
    let host = json!({"apiVersion": "example.com/v1", "kind": "Host", "metadata": {"name": "a"},
                      "spec": {"names": ["a.example.com", "B"]}});
    let r = c.post("/apis/example.com/v1/namespaces/default/hosts", &host).await;
    assert_eq!(r.code, 422, "{}", r.body);
}

#[tokio::test]
async fn status_writes_get_the_schema_s_defaults() {
    let s = server().await;
    let c = Client::new(&s);
    let status = json!({"type": "object", "properties": {
        "phase": {"type": "string", "default": "Pending"},
        "workers": {"type": "object", "default": {}, "properties": {"ready": {"type": "integer", "default": 0}}}}});
    let mut crd =
        crd_of("job", "Job", "Namespaced", json!({"type": "object", "properties": {"size": {"type": "integer"}}}));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = status;
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "jobs.example.com").await;
    let base = "/apis/example.com/v1/namespaces/default/jobs";
    let r = c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "a"}, "spec": {"size": 1}, "status": {"phase": "Done"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body.get("status").is_none(), "{}", r.body);
    // A status written without the defaulted fields is stored with them, as sent by PUT…
    let mut obj = r.body;
    obj["status"] = json!({"workers": {}});
    let r = c.put(&format!("{base}/a/status"), &obj).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], json!({"phase": "Pending", "workers": {"ready": 0}}));
    let stored = c.get(&format!("{base}/a")).await.body;
    assert_eq!(stored["status"], r.body["status"]);
    assert_eq!(stored["metadata"]["resourceVersion"], r.body["metadata"]["resourceVersion"]);
    // …and by a merge patch that removes one.
    let r =
        c.patch(&format!("{base}/a/status"), "application/merge-patch+json", &json!({"status": {"phase": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], json!({"phase": "Pending", "workers": {"ready": 0}}));
    // Sending the defaults again is no change.
    assert_eq!(r.body["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
}

/// A change of a definition this server answered is in force for the next request, however far
/// behind its watch cache is.
#[tokio::test]
async fn a_definition_change_answered_is_in_force_for_the_next_request() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    assert_eq!(c.post(CRDS, &crd_of("knob", "Knob", "Namespaced", spec)).await.code, 201);
    wait_established(&c, "knobs.example.com").await;
    s.set_cache_lag(Duration::from_millis(300));
    let mut crd = c.get(&format!("{CRDS}/knobs.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["maximum"] =
        json!(3);
    assert_eq!(c.put(&format!("{CRDS}/knobs.example.com"), &crd).await.code, 200);
    let r = c
        .post(
            "/apis/example.com/v1/namespaces/default/knobs",
            &json!({"apiVersion": "example.com/v1", "kind": "Knob", "metadata": {"name": "k"}, "spec": {"size": 5}}),
        )
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    s.set_cache_lag(Duration::ZERO);
}

/// The wait for a definition change to be in force is part of the request, held to its deadline
/// as kube's deadline holds everything after it is set (authentication included).
#[tokio::test]
async fn the_wait_for_a_definition_change_is_held_to_the_request_deadline() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    assert_eq!(c.post(CRDS, &crd_of("dial", "Dial", "Namespaced", spec)).await.code, 201);
    wait_established(&c, "dials.example.com").await;
    s.set_cache_lag(Duration::from_secs(5));
    let mut crd = c.get(&format!("{CRDS}/dials.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["maximum"] =
        json!(3);
    assert_eq!(c.put(&format!("{CRDS}/dials.example.com"), &crd).await.code, 200);
    let dial = json!({"apiVersion": "example.com/v1", "kind": "Dial", "metadata": {"name": "d"}, "spec": {"size": 1}});
    let r = c.post("/apis/example.com/v1/namespaces/default/dials?timeout=100ms", &dial).await;
    assert_eq!(r.code, 504, "{}", String::from_utf8_lossy(&r.raw));
    s.set_cache_lag(Duration::ZERO);
    let r = c.post("/apis/example.com/v1/namespaces/default/dials", &dial).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn set_and_map_lists_hold_each_element_once() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {
        "size": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}}}});
    let status = json!({"type": "object", "properties": {"conditions": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
        "items": {"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string"}, "status": {"type": "string"}}}}}});
    let mut crd = crd_of("probe", "Probe", "Namespaced", spec);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = status;
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "probes.example.com").await;
    let base = "/apis/example.com/v1/namespaces/default/probes";
    // Stored before the tags became a set.
    let r = c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "old"}, "spec": {"size": 1, "tags": ["a", "a"]}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut crd = c.get(&format!("{CRDS}/probes.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"]["x-kubernetes-list-type"] =
        json!("set");
    let r = c.put(&format!("{CRDS}/probes.example.com"), &crd).await;
    assert_eq!(r.code, 200, "{}", r.body);

    let r = c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "p"}, "spec": {"tags": ["a", "b", "a"]}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), [cause("FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"a\"")]);
    assert_eq!(r.body["message"], "Probe.example.com \"p\" is invalid: spec.tags[2]: Duplicate value: \"a\"");
    // An object that already repeats may be updated as long as it does.
    let r = c.patch(&format!("{base}/old"), "application/merge-patch+json", &json!({"spec": {"size": 2}})).await;
    assert_eq!(r.code, 200, "{}", r.body);

    let r = c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "p"}, "spec": {"tags": ["a", "b"]}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let conditions = json!({"status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}});
    let r = c.patch(&format!("{base}/p/status"), "application/merge-patch+json", &conditions).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [cause("FieldValueDuplicate", "status.conditions[2]", "Duplicate value: {\"type\":\"Ready\"}")]
    );
    let stored = c.get(&format!("{base}/p")).await.body;
    assert!(stored.get("status").is_none(), "{stored}");
}

#[tokio::test]
async fn a_terminating_definition_refuses_creates_and_unknown_subresources_are_missing_objects() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CRDS, &gadget_crd()).await.code, 201);
    wait_established(&c, "gadgets.demo.example.org").await;
    let base = "/apis/demo.example.org/v1/namespaces/default/gadgets";
    let held = json!({"apiVersion": "demo.example.org/v1", "kind": "Gadget",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "spec": {"replicas": 1}});
    assert_eq!(c.post(base, &held).await.code, 201);
    // A definition without subresources answers them as a missing object.
    assert_eq!(c.post(CRDS, &widgets_crd()).await.code, 201);
    wait_established(&c, "widgets.example.com").await;
    let r = c
        .post(
            "/apis/example.com/v1/widgets",
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    for sub in ["status", "scale"] {
        let r = c.get(&format!("/apis/example.com/v1/widgets/w/{sub}")).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (404, Some("NotFound")), "{}", r.body);
        assert_eq!(r.body["message"], "widgets.example.com \"w\" not found");
        assert_eq!(r.body["details"]["name"], "w");
    }

    assert_eq!(c.delete(&format!("{CRDS}/gadgets.demo.example.org")).await.code, 200);
    eventually("the object is being deleted", || async {
        c.get(&format!("{base}/held")).await.body["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    let new = json!({"apiVersion": "demo.example.org/v1", "kind": "Gadget", "metadata": {"name": "new"}, "spec": {"replicas": 1}});
    let r = c.post(base, &new).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (403, Some("Forbidden")), "{}", r.body);
    assert_eq!(
        r.body["message"],
        "gadgets.demo.example.org \"new\" is forbidden: create not allowed while custom resource definition is terminating"
    );
    // Discovery offers only reads and deletions meanwhile; the condition tells why it waits.
    let listed = c.get("/apis/demo.example.org/v1").await.body;
    let gadgets = listed["resources"].as_array().unwrap().iter().find(|r| r["name"] == "gadgets").unwrap().clone();
    assert_eq!(gadgets["verbs"], json!(["delete", "deletecollection", "get", "list", "watch"]));
    let crd = c.get(&format!("{CRDS}/gadgets.demo.example.org")).await.body;
    let terminating =
        crd["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Terminating").unwrap().clone();
    assert_eq!(
        (&terminating["status"], &terminating["reason"], &terminating["message"]),
        (&json!("True"), &json!("InstanceDeletionInProgress"), &json!("CustomResource deletion is in progress"))
    );
    // Once the last object lets go, the definition goes.
    let r = c
        .patch(&format!("{base}/held"), "application/merge-patch+json", &json!({"metadata": {"finalizers": null}}))
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    eventually("the definition is gone", || async {
        c.get(&format!("{CRDS}/gadgets.demo.example.org")).await.code == 404
    })
    .await;
}

#[tokio::test]
async fn nulls_below_lists_and_maps_are_dropped_or_defaulted() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {
        "rules": {"type": "array", "items": {"type": "object", "properties": {"host": {"type": "string"}}}},
        "limits": {"type": "object", "additionalProperties": {"type": "integer", "default": 5}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
    let base = &define_namespaced(&c, "route", "Route", spec).await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Route", "metadata": {"name": "r"},
        "spec": {"rules": [{"host": null}], "limits": {"cpu": null}, "labels": {"a": null, "b": "c"}}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"], json!({"rules": [{}], "limits": {"cpu": 5}, "labels": {"b": "c"}}));
}

#[tokio::test]
async fn a_custom_resource_refuses_patch_media_types_first_in_its_handler_s_words() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    let base = &define_namespaced(&c, "knob", "Knob", spec).await;
    assert_eq!(
        c.post(
            base,
            &json!({"apiVersion": "example.com/v1", "kind": "Knob", "metadata": {"name": "k"}, "spec": {"size": 1}})
        )
        .await
        .code,
        201
    );
    let words = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
    for (ct, query) in [("text/plain", ""), ("application/strategic-merge-patch+json", "?fieldValidation=Bogus")] {
        let r = c.send_raw(http::Method::PATCH, &format!("{base}/k{query}"), b"{}".to_vec(), ct).await;
        assert_eq!((r.code, r.body["message"].as_str()), (415, Some(words)), "{ct}");
    }
}

#[tokio::test]
async fn schema_validation_speaks_as_kube_openapi_does() {
    let s = server().await;
    let c = Client::new(&s);
    // The schema kube-rs derives for `Vec<String>` with a minimum, `Option<Level>`, a `u32`
    // with bounds written as floats, and a URL.
    let spec = json!({"type": "object", "properties": {
        "hosts": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "level": {"type": "string", "enum": ["Low", "High"], "nullable": true},
        "port": {"type": "integer", "format": "uint32", "minimum": 0.0, "maximum": 65535.0},
        "count": {"type": "integer", "format": "int32"},
        "endpoint": {"type": "string", "format": "uri"}}});
    let base = &define_namespaced(&c, "probe", "Probe", spec).await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "p"},
        "spec": {"hosts": [], "level": null, "port": 70000, "endpoint": "not a uri"}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            cause(
                "FieldValueTypeInvalid",
                "spec.endpoint",
                "Invalid value: \"not a uri\": spec.endpoint in body must be of type uri: \"not a uri\""
            ),
            cause(
                "FieldValueInvalid",
                "spec.hosts",
                "Invalid value: 0: spec.hosts in body should have at least 1 items"
            ),
            cause(
                "FieldValueNotSupported",
                "spec.level",
                "Unsupported value: null: supported values: \"Low\", \"High\""
            ),
            cause(
                "FieldValueInvalid",
                "spec.port",
                "Invalid value: 70000: spec.port in body should be less than or equal to 65535"
            ),
        ]
    );
    // Numbers' formats are not checked (kube strips them from the schema).
    let body = json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "p"},
        "spec": {"hosts": ["a"], "level": "Low", "count": 5_000_000_000_i64, "endpoint": "https://example.com/x"}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn a_status_write_is_judged_by_the_status_schema_alone() {
    let s = server().await;
    let c = Client::new(&s);
    let status = json!({"type": "object", "properties": {"phase": {"type": "string", "enum": ["Ready", "Failed"]}}});
    let mut crd =
        crd_of("task", "Task", "Namespaced", json!({"type": "object", "properties": {"size": {"type": "integer"}}}));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = status;
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "tasks.example.com").await;
    let base = "/apis/example.com/v1/namespaces/default/tasks";
    assert_eq!(
        c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t"}})).await.code,
        201
    );
    // The definition comes to require a spec the stored object does not have.
    let mut crd = c.get(&format!("{CRDS}/tasks.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["required"] = json!(["spec"]);
    assert_eq!(c.put(&format!("{CRDS}/tasks.example.com"), &crd).await.code, 200);

    let status = |phase: &str| json!({"status": {"phase": phase}});
    let r = c.patch(&format!("{base}/t/status"), "application/merge-patch+json", &status("Ready")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c.patch(&format!("{base}/t/status"), "application/merge-patch+json", &status("Lost")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [cause(
            "FieldValueNotSupported",
            "status.phase",
            "Unsupported value: \"Lost\": supported values: \"Ready\", \"Failed\""
        )]
    );
    // The main resource is judged whole.
    let r = c
        .patch(&format!("{base}/t"), "application/merge-patch+json", &json!({"metadata": {"labels": {"a": "b"}}}))
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), [cause("FieldValueRequired", "spec", "Required value")]);
}

#[tokio::test]
async fn a_body_of_another_kind_is_refused_for_its_kind_alone() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}});
    let base = &define_namespaced(&c, "task", "Task", spec).await;
    // Read as unstructured: the kind is judged first, and alone (the missing size is not).
    let body = json!({"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "t"}, "spec": {}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["message"], "Task.example.com \"t\" is invalid: kind: Invalid value: \"Job\": must be Task");
    assert_eq!(causes(&r), [cause("FieldValueInvalid", "kind", "Invalid value: \"Job\": must be Task")]);
    assert_eq!(r.body["details"]["kind"], "Task");
    assert_eq!(c.get(&format!("{base}/t")).await.code, 404);
    // A patch that changes the kind of a stored object likewise.
    let task = json!({"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t"}, "spec": {"size": 1}});
    let r = c.post(base, &task).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let patch = json!([{"op": "replace", "path": "/kind", "value": "Job"}]);
    let r = c.patch(&format!("{base}/t"), "application/json-patch+json", &patch).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), [cause("FieldValueInvalid", "kind", "Invalid value: \"Job\": must be Task")]);
    assert_eq!(c.get(&format!("{base}/t")).await.body["kind"], "Task");
}

#[tokio::test]
async fn a_custom_resource_s_body_names_its_kind_and_api_version() {
    let s = server().await;
    let c = Client::new(&s);
    let base = &define_namespaced(&c, "task", "Task", json!({"type": "object"})).await;
    // Read as unstructured, a body has no kind but its own.
    let body = json!({"apiVersion": "example.com/v1", "metadata": {"name": "t"}, "spec": {}});
    let r = c.send_raw(Method::POST, base, format!("  {body}\n").into_bytes(), "application/json").await;
    assert_eq!(r.code, 400, "{}", r.body);
    let missing = format!("Task in version \"v1\" cannot be handled as a Task: Object 'Kind' is missing in '{body}'");
    assert_eq!((r.body["reason"].as_str(), r.body["message"].as_str()), (Some("BadRequest"), Some(&*missing)));
    let body = json!({"apiVersion": "example.com/v2", "metadata": {"name": "t"}});
    let r = c.post(base, &body).await;
    let missing = format!("Task in version \"v2\" cannot be handled as a Task: Object 'Kind' is missing in '{body}'");
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some(&*missing)));
    // Nor an apiVersion.
    let r = c.post(base, &json!({"kind": "Task", "metadata": {"name": "t"}, "spec": {}})).await;
    let expected = "the API version in the data () does not match the expected API version (example.com/v1)";
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some(expected)));
    // Both are checked for an update as well.
    let good = json!({"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t"}, "spec": {}});
    assert_eq!(c.post(base, &good).await.code, 201);
    let r = c.put(&format!("{base}/t"), &json!({"kind": "Task", "metadata": {"name": "t"}, "spec": {"x": 1}})).await;
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some(expected)));
    let r = c.put(&format!("{base}/t"), &json!({"apiVersion": "example.com/v1", "metadata": {"name": "t"}})).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(c.get(&format!("{base}/t")).await.body["spec"], json!({}));
    // An apiVersion that is no group/version, for any kind.
    let body = json!({"apiVersion": "a/b/c", "kind": "Task", "metadata": {"name": "u"}});
    let r = c.post(base, &body).await;
    let text = body.to_string();
    let expected = format!(
        "the object provided is unrecognized (must be of type Task): unexpected GroupVersion string: a/b/c ({} ...)",
        &text[..30]
    );
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some(&*expected)));
    let r =
        c.post("/api/v1/namespaces/default/configmaps", &json!({"apiVersion": "v1", "kind": 5, "metadata": {}})).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().starts_with(
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ("
        ),
        "{}",
        r.body
    );
    assert_eq!(c.get(&format!("{base}/u")).await.code, 404);
    // A built-in kind takes both from the request.
    let r = c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "cm"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn metadata_is_coerced_as_object_meta_and_unknown_fields_come_sorted() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}}});
    let base = &define_namespaced(&c, "bag", "Bag", spec).await;
    let mut items: Vec<Value> = (0..11).map(|_| json!({})).collect();
    items[2] = json!({"x": 1});
    items[10] = json!({"x": 1});
    let body = json!({"apiVersion": "example.com/v1", "kind": "Bag", "metadata": {"name": "b", "labels": {}, "finalizers": [], "annotations": null, "colour": "red"},
        "spec": {"items": items}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(
        warnings,
        [
            "299 - \"unknown field \\\"metadata.colour\\\"\"",
            "299 - \"unknown field \\\"spec.items[10].x\\\"\"",
            "299 - \"unknown field \\\"spec.items[2].x\\\"\"",
        ]
    );
    let meta = c.get(&format!("{base}/b")).await.body["metadata"].clone();
    for gone in ["labels", "finalizers", "annotations", "colour"] {
        assert!(meta.get(gone).is_none(), "{gone}: {meta}");
    }
    let mut strict = body.clone();
    strict["metadata"]["name"] = json!("s");
    let r = c.post(&format!("{base}?fieldValidation=Strict"), &strict).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Bag in version \"v1\" cannot be handled as a Bag: strict decoding error: unknown field \"metadata.colour\", unknown field \"spec.items[10].x\", unknown field \"spec.items[2].x\""
    );
    // A patch is judged on what it makes of the object: 422 on `patch`.
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{base}/b?fieldValidation=Strict"), merge, &json!({"spec": {"colour": "red"}})).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    assert_eq!(r.body["details"]["causes"][0]["field"], "patch");
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"), "{message}");
    assert!(message.ends_with("\": strict decoding error: unknown field \"spec.colour\""), "{message}");
}

#[tokio::test]
async fn added_finalizers_without_a_domain_and_path_are_warned_of() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    let base = &define_namespaced(&c, "lock", "Lock", spec).await;
    let warnings = |r: &Resp| -> Vec<String> {
        r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
    };
    let body = json!({"apiVersion": "example.com/v1", "kind": "Lock", "metadata": {"name": "l", "finalizers": ["myfin", "example.com/ok", "orphan", "example.com"]}});
    let r = c.post(base, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [
            "299 - \"metadata.finalizers: \\\"example.com\\\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers\"",
            "299 - \"metadata.finalizers: \\\"myfin\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\"",
        ]
    );
    // Only what an update adds is warned of.
    let patch = json!({"metadata": {"finalizers": ["myfin", "example.com/ok", "orphan", "example.com", "zz"]}});
    let r = c.patch(&format!("{base}/l"), "application/merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [
            "299 - \"metadata.finalizers: \\\"zz\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\""
        ]
    );
    let r = c.patch(&format!("{base}/l"), "application/merge-patch+json", &json!({"spec": {"size": 1}})).await;
    assert_eq!((r.code, warnings(&r).len()), (200, 0), "{}", r.body);
}

#[tokio::test]
async fn fields_no_schema_holds_are_not_stored_or_served() {
    let s = server().await;
    let c = Client::new(&s);
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}, "color": {"type": "string"}}}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}, "shape": {"type": "string"}, "mode": {"type": "string", "default": "auto"}}}}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "tiles.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"plural": "tiles", "singular": "tile", "kind": "Tile"},
                 "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": v1}},
                    {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}}]}
    });
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "tiles.example.com").await;
    // Written in v2, stored in v1: v1's schema has no shape.
    let r = c
        .post("/apis/example.com/v2/tiles", &json!({"apiVersion": "example.com/v2", "kind": "Tile", "metadata": {"name": "t"}, "spec": {"size": 1, "shape": "round"}}))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"], json!({"size": 1}));
    let r = c
        .post("/apis/example.com/v1/tiles", &json!({"apiVersion": "example.com/v1", "kind": "Tile", "metadata": {"name": "u"}, "spec": {"size": 2, "color": "red"}}))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Read in v2, whose schema has no color: v2's own default is not added to an object stored
    // in v1.
    assert_eq!(c.get("/apis/example.com/v2/tiles/u").await.body["spec"], json!({"size": 2}));
    assert_eq!(c.get("/apis/example.com/v1/tiles/u").await.body["spec"], json!({"size": 2, "color": "red"}));
    // A schema that drops a field no longer serves it from stored objects.
    let mut crd = c.get(&format!("{CRDS}/tiles.example.com")).await.body;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("color");
    assert_eq!(c.put(&format!("{CRDS}/tiles.example.com"), &crd).await.code, 200);
    eventually("the stored color is no longer served", || async {
        c.get("/apis/example.com/v1/tiles/u").await.body["spec"] == json!({"size": 2})
    })
    .await;
}

#[tokio::test]
async fn a_scale_patch_of_an_object_without_replicas_must_set_them() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"replicas": {"type": "integer"}}});
    let mut crd = crd_of("pool", "Pool", "Namespaced", spec);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] =
        json!({"type": "object", "properties": {"replicas": {"type": "integer"}}});
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "pools.example.com").await;
    let base = "/apis/example.com/v1/namespaces/default/pools";
    assert_eq!(
        c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {}}))
            .await
            .code,
        201
    );
    let r = c.get(&format!("{base}/p/scale")).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (500, Some("InternalError")), "{}", r.body);
    assert_eq!(r.body["message"], "Internal error occurred: the spec replicas field \".spec.replicas\" does not exist");
    let merge = |body: Value| {
        let c = &c;
        async move { c.patch(&format!("{base}/p/scale"), "application/merge-patch+json", &body).await }
    };
    let r = merge(json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{}", r.body);
    assert_eq!(r.body["message"], "the spec replicas field \".spec.replicas\" cannot be empty");
    let r = merge(json!({"spec": {"replicas": 2}})).await;
    assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(2)), "{}", r.body);
    // Once set, a patch that leaves them keeps them, and the Scale reads.
    let r = merge(json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(2)), "{}", r.body);
    assert_eq!(c.get(&format!("{base}/p/scale")).await.body["spec"]["replicas"], 2);
}

#[tokio::test]
async fn selectable_fields_name_scalar_fields_of_the_schema() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"color": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}});
    let mut crd = crd_of("paint", "Paint", "Namespaced", spec);
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.tags"}, {"jsonPath": ".spec.hue"}, {"jsonPath": ".spec.color"}]);
    let r = c.post(CRDS, &crd).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            cause(
                "FieldValueInvalid",
                "spec.selectableFields[1].jsonPath",
                "Invalid value: \".spec.tags\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."
            ),
            cause(
                "FieldValueInvalid",
                "spec.selectableFields[2].jsonPath",
                "Invalid value: \".spec.hue\": is an invalid path: does not refer to a valid field"
            ),
            cause("FieldValueDuplicate", "spec.selectableFields[3].jsonPath", "Duplicate value: \".spec.color\""),
        ]
    );
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
}

#[tokio::test]
async fn the_schema_may_restrict_names() {
    let s = server().await;
    let c = Client::new(&s);
    let mut crd = crd_of("tag", "Tag", "Namespaced", json!({"type": "object"}));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
        json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}});
    assert_eq!(c.post(CRDS, &crd).await.code, 201);
    wait_established(&c, "tags.example.com").await;
    let base = "/apis/example.com/v1/namespaces/default/tags";
    assert_eq!(
        c.post(base, &json!({"apiVersion": "example.com/v1", "kind": "Tag", "metadata": {"name": "short"}})).await.code,
        201
    );
    let r = c
        .post(base, &json!({"apiVersion": "example.com/v1", "kind": "Tag", "metadata": {"name": "much-too-long"}}))
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r), [cause("FieldValueTooLong", "metadata.name", "Too long: may not be more than 8 bytes")]);
}

#[tokio::test]
async fn embedded_resources_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}});
    let base = &define_namespaced(&c, "blueprint", "Blueprint", spec).await;
    let ok = json!({"apiVersion": "example.com/v1", "kind": "Blueprint", "metadata": {"name": "ok"}, "spec": {"template": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"labels": {"app": "x"}, "colour": "red", "creationTimestamp": null, "annotations": {}}, "data": {"a": "b"}}}});
    let r = c.post(base, &ok).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["template"]["data"], json!({"a": "b"}));
    // The embedded metadata is taken as ObjectMeta decodes it.
    assert_eq!(r.body["spec"]["template"]["metadata"], json!({"labels": {"app": "x"}}));
    assert_eq!(r.headers["warning"], "299 - \"unknown field \\\"spec.template.metadata.colour\\\"\"");
    let bad = json!({"apiVersion": "example.com/v1", "kind": "Blueprint", "metadata": {"name": "bad"}, "spec": {"template": {"kind": "",
        "metadata": {"labels": {"a b": "c"}}}}});
    let r = c.post(base, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let fields: Vec<String> = causes(&r).into_iter().map(|(reason, field, _)| format!("{reason} {field}")).collect();
    assert_eq!(
        fields,
        [
            "FieldValueRequired spec.template.apiVersion",
            "FieldValueInvalid spec.template.kind",
            "FieldValueInvalid spec.template.metadata.labels",
        ]
    );
}

#[tokio::test]
async fn a_definition_s_delete_preconditions_are_judged_in_its_registry_s_words() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(CRDS, &crd_of("task", "Task", "Namespaced", json!({"type": "object"}))).await;
    assert_eq!(r.code, 201);
    let uid = r.body["metadata"]["uid"].as_str().unwrap().to_string();
    let path = format!("{CRDS}/tasks.example.com");
    let delete = |pre: Value| {
        let body = serde_json::to_vec(&json!({"preconditions": pre})).unwrap();
        c.send_raw(http::Method::DELETE, &path, body, "application/json")
    };
    let r = delete(json!({"uid": "other"})).await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io \"tasks.example.com\": Precondition failed: UID in precondition: other, UID in object meta: {uid}"
        )
    );
    wait_established(&c, "tasks.example.com").await;
    let rv = rv_of(&c.get(&path).await.body);
    let r = delete(json!({"resourceVersion": "1"})).await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io \"tasks.example.com\": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: {rv}"
        )
    );
    assert_eq!(delete(json!({"uid": uid})).await.code, 200);
}

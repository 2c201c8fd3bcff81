//! Server-side apply over HTTP, against the exchanges recorded from kube-apiserver v1.35
//! (`tests/fixtures/kube-apiserver/30-*` … `37-*`): kubectl's applies by two managers, the
//! conflict and its forced resolution, fields removed when their applier stops applying them,
//! shared ownership, raw YAML bodies, and the Status answers to bad applies. Every answer is
//! compared whole with kube-apiserver's, `managedFields` included. Then writes that would
//! change nothing but the time of a `managedFields` entry (re-applies of a configuration the
//! stored object normalises, an update the store reverts): no new resourceVersion, no event.
//! Custom resources merge by their definition's schema: a list-map key an element leaves out
//! takes the schema's default, fields below `x-kubernetes-preserve-unknown-fields` are applied
//! (and pruned from the stored object where the structural schema does not keep them), and an
//! embedded resource's metadata merges as ObjectMeta.

mod common;

use common::recorded::{comparable_managed, recorded, send};
use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/fixtures/deployments";
const APPLY: &str = "application/apply-patch+yaml";

/// Sends the recorded request and compares status and whole body (managedFields included).
async fn replay(c: &Client, file: &str) -> Value {
    let step = recorded(file);
    let r = send(c, &step).await;
    assert_eq!(r.code, step.status, "{file}: {}", r.body);
    assert_eq!(comparable_managed(&r.body), comparable_managed(&step.response), "{file}");
    r.body
}

/// The entries' managers and operations, in the order the server wrote them.
fn managers(v: &Value) -> Vec<(String, String)> {
    v["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (e["manager"].as_str().unwrap_or("").to_string(), e["operation"].as_str().unwrap_or("").to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The (manager, operation) pairs of `metadata.managedFields` sorted as kube-apiserver sorts
/// them: by operation, the second of their time, then manager.
fn managers_in_kube_order(v: &Value) -> Vec<(String, String)> {
    let mut entries: Vec<(String, i64, String)> = v["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    let second =
                        e["time"].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, |t| t.as_second());
                    let text = |k: &str| e[k].as_str().unwrap_or("").to_string();
                    (text("operation"), second, text("manager"))
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    entries.into_iter().map(|(operation, _, manager)| (manager, operation)).collect()
}

#[tokio::test]
async fn kubectl_server_side_applies_match_kube_apiserver() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let api = format!("{DEPLOYMENTS}/api");

    // 30: alpha's apply creates the Deployment (201), owning exactly what it applied.
    let created = replay(&c, "30-ssa-1-alpha-apply.txt").await;
    assert_eq!(created["metadata"]["generation"], 1);
    let got = c.get(&api).await;
    assert_eq!(comparable_managed(&got.body), comparable_managed(&recorded("31-ssa-1b-get-after-alpha.txt").response));

    assert_eq!(got.body["metadata"]["generation"], 1);

    // 32: beta wants another replica count: a conflict with alpha, nothing written.
    replay(&c, "32-ssa-2-beta-conflict-409.txt").await;
    assert_eq!(c.get(&api).await.body["metadata"]["resourceVersion"], got.body["metadata"]["resourceVersion"]);

    // 33: --force-conflicts: beta takes spec.replicas from alpha.
    assert_eq!(replay(&c, "33-ssa-3-beta-force-conflicts.txt").await["metadata"]["generation"], 2);
    let got = c.get(&api).await;
    assert_eq!(
        comparable_managed(&got.body),
        comparable_managed(&recorded("33-ssa-3b-get-after-beta-force.txt").response)
    );

    // 34: alpha stops applying replicas (beta's: kept), the proxy container and its owner label
    // (its alone: removed).
    assert_eq!(replay(&c, "34-ssa-4-alpha-removes-fields.txt").await["metadata"]["generation"], 3);
    let got = c.get(&api).await;
    assert_eq!(
        comparable_managed(&got.body),
        comparable_managed(&recorded("34-ssa-4b-get-after-alpha-removal.txt").response)
    );

    // 35: a raw YAML apply by gamma of another replica count conflicts with beta.
    replay(&c, "35-ssa-5-raw-apply-yaml-gamma-conflict-409.txt").await;
    // 36: the same count: shared ownership of spec.replicas, and gamma's new label.
    let shared = replay(&c, "36-ssa-6-raw-apply-yaml-gamma-shared-ownership.txt").await;
    assert_eq!(shared["metadata"]["generation"], 3, "a label is not the spec");
    // kube orders the entries by operation, then by the second of their time, then by manager:
    // alpha, beta and gamma when all three applied within one second (as recorded), otherwise
    // by when each last changed what it owns.
    let mut applied = managers(&shared);
    applied.sort();
    assert_eq!(
        applied,
        [("alpha".into(), "Apply".into()), ("beta".into(), "Apply".into()), ("gamma".into(), "Apply".into())]
    );
    assert_eq!(managers(&shared), managers_in_kube_order(&shared));
    // 37: an apply without fieldManager is refused on its options.
    replay(&c, "37-ssa-7-apply-missing-fieldmanager-422.txt").await;
}

#[tokio::test]
async fn reapplying_the_same_configuration_writes_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let step = recorded("30-ssa-1-alpha-apply.txt");
    let first = send(&c, &step).await;
    assert_eq!(first.code, 201, "{}", first.body);
    let again = send(&c, &step).await;
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(again.body, first.body, "the same object at the same resourceVersion");
}

/// A PATCH with `application/apply-patch+yaml` and the given query.
async fn apply(c: &Client, path: &str, query: &str, body: &str) -> Resp {
    c.send_raw(http::Method::PATCH, &format!("{path}?{query}"), body.as_bytes().to_vec(), APPLY).await
}

fn warnings(r: &Resp) -> Vec<String> {
    r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn bad_applies_get_kube_statuses_and_change_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    assert_eq!(send(&c, &recorded("30-ssa-1-alpha-apply.txt")).await.code, 201);
    let api = format!("{DEPLOYMENTS}/api");
    let before = c.get(&api).await.body;
    let dup = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 2\n  replicas: 2\n";
    let long = format!("fieldManager={}", "m".repeat(129));
    let cases: [(&str, String, u16, &str); 8] = [
        ("fieldManager=x", r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api"}}"#.into(), 400, "invalid object type: /v1, Kind=Pod"),
        (
            "fieldManager=x",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","managedFields":[{"manager":"x"}]}}"#.into(),
            400,
            "metadata.managedFields must be nil",
        ),
        (
            "fieldManager=x",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"fixtures"},"spec":{"bogus":1}}"#.into(),
            500,
            "failed to create typed patch object (fixtures/api; apps/v1, Kind=Deployment): .spec.bogus: field not declared in schema",
        ),
        (
            "fieldManager=x",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other"}}"#.into(),
            400,
            "the name of the object (other) does not match the name on the URL (api)",
        ),
        (
            "fieldManager=x",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other","namespace":"elsewhere"}}"#.into(),
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "fieldManager=alpha&fieldValidation=Strict",
            dup.into(),
            400,
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"replicas\" already set in map",
        ),
        (&long, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"}}"#.into(), 422,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"),
        ("fieldManager=x", "apiVersion: apps/v1\nkind: [\n".into(), 400, ""),
    ];
    for (query, body, code, message) in cases {
        let r = apply(&c, &api, query, &body).await;
        assert_eq!(r.code, code, "{query} {body}: {}", r.body);
        assert_eq!(r.body["kind"], "Status");
        if message.is_empty() {
            assert!(r.body["message"].as_str().unwrap().starts_with("error decoding YAML: "), "{}", r.body);
        } else {
            assert_eq!(r.body["message"], message, "{body}");
        }
        assert_eq!(r.body.get("reason").is_none(), code == 500, "kube's 500s here have no reason: {}", r.body);
    }
    // An apply that creates must name its object.
    let unnamed = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"a":"b"}}}"#;
    let r = apply(&c, &format!("{DEPLOYMENTS}/new"), "fieldManager=x", unnamed).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "the name of the object (new based on URL) was undeterminable: name must be provided"
    );
    // `force` is for apply patches only.
    let r = c.patch(&format!("{api}?force=true"), "application/merge-patch+json", &json!({})).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            422,
            Some(
                "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
            )
        )
    );
    assert_eq!(c.get(&api).await.body, before, "no bad apply changed the object");
    // Duplicate keys under Warn (the default): applied, with go-yaml's complaint as a warning (by
    // a manager of its own, which keeps alpha's selector and template).
    let r = apply(&c, &api, "fieldManager=gamma", dup).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(warnings(&r), [r#"299 - "line 7: key \"replicas\" already set in map""#]);
}

/// The entry of `manager` (any operation) in an object's managedFields.
fn entry<'a>(v: &'a Value, manager: &str, subresource: Option<&str>) -> &'a Value {
    v["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager && e["subresource"].as_str() == subresource))
        .unwrap_or_else(|| panic!("no entry of {manager} in {v}"))
}

#[tokio::test]
async fn applies_through_status_own_only_the_status() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    assert_eq!(send(&c, &recorded("30-ssa-1-alpha-apply.txt")).await.code, 201);
    let status = format!("{DEPLOYMENTS}/api/status");
    let config = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"},"spec":{"replicas":9},
        "status":{"replicas":1,"conditions":[{"type":"Available","status":"True"}]}}"#;
    let r = apply(&c, &status, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 2, "a status apply changes only the status");
    assert_eq!(r.body["status"]["replicas"], 1);
    let e = entry(&r.body, "ctrl", Some("status"));
    assert_eq!(e["operation"], "Apply");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
    );
    // The next status apply leaves out the replicas: only ctrl had them, they go.
    let config = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"},
        "status":{"conditions":[{"type":"Available","status":"True"}]}}"#;
    let r = apply(&c, &status, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["status"].get("replicas").is_none(), "{}", r.body);
    // (Go writes the condition's unset times, held by value, as null.)
    assert_eq!(
        r.body["status"]["conditions"],
        json!([{"type": "Available", "status": "True", "lastUpdateTime": null, "lastTransitionTime": null}])
    );
    // /status of an object that does not exist is not created.
    let nope = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nope"},"status":{"replicas":1}}"#;
    let r = apply(&c, &format!("{DEPLOYMENTS}/nope/status"), "fieldManager=ctrl", nope).await;
    assert_eq!(r.code, 404, "{}", r.body);
}

#[tokio::test]
async fn dry_run_applies_store_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let step = recorded("30-ssa-1-alpha-apply.txt");
    let body = String::from_utf8(step.request_body.clone()).unwrap();
    let api = format!("{DEPLOYMENTS}/api");
    let r = apply(&c, &api, "fieldManager=alpha&dryRun=All", &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(entry(&r.body, "alpha", None)["operation"], "Apply");
    assert_eq!(c.get(&api).await.code, 404);
    assert_eq!(apply(&c, &api, "fieldManager=alpha", &body).await.code, 201);
    let stored = c.get(&api).await.body;
    let r = apply(&c, &api, "fieldManager=alpha&dryRun=All", &body.replace("\"replicas\": 2", "\"replicas\": 7")).await;
    assert_eq!((r.code, &r.body["spec"]["replicas"]), (200, &json!(7)), "{}", r.body);
    assert_eq!(c.get(&api).await.body, stored);
}

#[tokio::test]
async fn updates_reset_replace_or_keep_managed_fields_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let cms = "/api/v1/namespaces/fixtures/configmaps";
    let r =
        c.post(&format!("{cms}?fieldManager=creator"), &json!({"metadata": {"name": "cm"}, "data": {"a": "1"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let cm = format!("{cms}/cm");
    // A client that does not know managedFields (leaves them out) keeps them.
    let mut body = r.body.clone();
    body["metadata"].as_object_mut().unwrap().remove("managedFields");
    body["data"]["b"] = json!("2");
    let r = c.put(&format!("{cm}?fieldManager=editor"), &body).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(entry(&r.body, "creator", None)["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
    assert_eq!(entry(&r.body, "editor", None)["fieldsV1"], json!({"f:data": {"f:b": {}}}));
    // Entries a client sends replace them.
    let mut body = r.body.clone();
    body["metadata"]["managedFields"] = json!([{"manager": "someone", "operation": "Update", "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}}]);
    let r = c.put(&cm, &body).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(managers(&r.body), [("someone".into(), "Update".into())]);
    assert_eq!(entry(&r.body, "someone", None)["time"], "2026-01-01T00:00:00Z");
    // Entries it cannot have are ignored (the live ones stay).
    let mut bad = r.body.clone();
    bad["metadata"]["managedFields"] =
        json!([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    let r = c.put(&cm, &bad).await;
    assert_eq!((r.code, managers(&r.body)), (200, vec![("someone".into(), "Update".into())]));
    // `[]` resets them; an unchanged object then has none.
    let mut reset = r.body.clone();
    reset["metadata"]["managedFields"] = json!([]);
    let r = c.put(&cm, &reset).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["metadata"].get("managedFields").is_none(), "{}", r.body);
    // Updates record nothing until the next apply, as kube's field manager skips them.
    let r = c.patch(&cm, "application/merge-patch+json", &json!({"data": {"c": "3"}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["metadata"].get("managedFields").is_none(), "{}", r.body);
    // The first apply finds the fields it did not record given to `before-first-apply`.
    let config = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"c": "4"}}"#;
    let r = apply(&c, &cm, "fieldManager=applier", config).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.c"
    );
    let r = apply(&c, &cm, "fieldManager=applier&force=true", config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(managers(&r.body), [("applier".into(), "Apply".into()), ("before-first-apply".into(), "Update".into())]);
    assert_eq!(
        entry(&r.body, "before-first-apply", None)["fieldsV1"],
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
}

#[tokio::test]
async fn a_scale_of_an_object_without_managers_records_none() {
    let s = server().await;
    let c = Client::new(&s);
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(c.post(deployments, &deployment("web", 1)).await.code, 201);
    let path = format!("{deployments}/web");
    let r = c.patch(&path, "application/merge-patch+json", &json!({"metadata": {"managedFields": []}})).await;
    assert!(r.body["metadata"].get("managedFields").is_none(), "{}", r.body);
    let r = c.patch(&format!("{path}/scale"), "application/merge-patch+json", &json!({"spec": {"replicas": 3}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let stored = c.get(&path).await.body;
    assert_eq!(stored["spec"]["replicas"], 3);
    assert!(stored["metadata"].get("managedFields").is_none(), "{stored}");
}

#[tokio::test]
async fn update_managers_beyond_ten_merge_into_ancient_changes() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let cms = "/api/v1/namespaces/fixtures/configmaps";
    // Created with a field, so that its creator is recorded (an object created with none has no
    // managers, and kube records no update of it before an apply).
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "cm"}, "data": {"init": "v"}})).await.code, 201);
    let mut last = Value::Null;
    for i in 0..12 {
        let patch = json!({"data": {format!("k{i}"): "v"}});
        let r = c.patch(&format!("{cms}/cm?fieldManager=m{i:02}"), "application/merge-patch+json", &patch).await;
        assert_eq!(r.code, 200, "{}", r.body);
        last = r.body;
    }
    let names: Vec<String> = managers(&last).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names.contains(&"ancient-changes".to_string()), "{names:?}");
    assert!(names.contains(&"m11".to_string()), "{names:?}");
    // Every field is still owned by someone.
    let owned: usize = last["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["fieldsV1"]["f:data"].as_object().map(|d| d.keys().filter(|k| k.starts_with("f:")).count()).unwrap_or(0)
        })
        .sum();
    assert_eq!(owned, 13);
}

#[tokio::test]
async fn custom_resources_merge_by_the_deduced_schema() {
    let s = server_with_widgets().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let w = "/apis/example.com/v1/namespaces/fixtures/widgets/w";
    let a = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"1"},"finalizers":["x/a"]},
        "spec":{"size":1,"tags":["p","q"],"nested":{"x":1}}}"#;
    let r = apply(&c, w, "fieldManager=a", a).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Maps are granular (their keys members: `.`), lists atomic; metadata is ObjectMeta
    // (finalizers a set).
    assert_eq!(
        entry(&r.body, "a", None)["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"x/a\"": {}}, "f:labels": {"f:a": {}}},
            "f:spec": {".": {}, "f:nested": {".": {}, "f:x": {}}, "f:size": {}, "f:tags": {}}})
    );
    // Another manager adds a map key without conflict, but an atomic list is one field.
    let b = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"nested":{"y":2}}}"#;
    let r = apply(&c, w, "fieldManager=b", b).await;
    assert_eq!((r.code, &r.body["spec"]["nested"]), (200, &json!({"x": 1, "y": 2})), "{}", r.body);
    let b = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"nested":{"y":2},"tags":["r"]}}"#;
    let r = apply(&c, w, "fieldManager=b", b).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(r.body["message"], "Apply failed with 1 conflict: conflict with \"a\": .spec.tags");
}

/// A Deployment manifest with the given replicas and containers.
fn manifest(name: &str, replicas: Option<u32>, containers: &[(&str, &str)]) -> String {
    let mut out = format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n");
    if let Some(r) = replicas {
        out.push_str(&format!("  replicas: {r}\n"));
    }
    if containers.is_empty() {
        return out;
    }
    out.push_str(&format!(
        "  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n"
    ));
    for (n, image) in containers {
        out.push_str(&format!("      - name: {n}\n        image: {image}\n"));
    }
    out
}

#[tokio::test]
async fn kubectl_server_side_apply_conflicts_and_force_on_every_version() {
    let s = server().await;
    let dir = tempdir("kubectl-ssa");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let (mine, theirs) = (dir.join("mine.yaml"), dir.join("theirs.yaml"));
    let (mine, theirs) = (mine.to_str().unwrap(), theirs.to_str().unwrap());
    for bin in kubectl_versions() {
        let cache = dir.join(format!("cache-{}", bin.rsplit('/').next().unwrap()));
        let name = format!("ssa-{}", bin.rsplit('.').next().unwrap());
        let run = |args: Vec<&str>| {
            let (bin, kc, cache) = (bin.clone(), kc.clone(), cache.clone());
            let args: Vec<String> = args.into_iter().map(str::to_string).collect();
            async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                kubectl_bin(&bin, &kc, &cache, &args).await
            }
        };
        std::fs::write(mine, manifest(&name, Some(2), &[("web", "nginx:1.27"), ("sidecar", "busybox:1.36")])).unwrap();
        let (ok, out, err) = run(vec!["apply", "--server-side", "-f", mine]).await;
        assert!(ok && out.contains("serverside-applied"), "{bin}: {out}{err}");
        // Another manager wants other replicas: kubectl reports the conflict and changes nothing.
        std::fs::write(theirs, manifest(&name, Some(3), &[])).unwrap();
        let (ok, out, err) = run(vec!["apply", "--server-side", "--field-manager=autoscaler", "-f", theirs]).await;
        assert!(!ok, "{bin}: {out}{err}");
        assert!(err.contains("conflict with \"kubectl\": .spec.replicas"), "{bin}: {err}");
        let stored = s.get("deployments", "default", &name).await.unwrap();
        assert_eq!(stored["spec"]["replicas"], 2, "{bin}");
        // --force-conflicts takes them.
        let (ok, out, err) =
            run(vec!["apply", "--server-side", "--field-manager=autoscaler", "--force-conflicts", "-f", theirs]).await;
        assert!(ok, "{bin}: {out}{err}");
        let stored = s.get("deployments", "default", &name).await.unwrap();
        assert_eq!(stored["spec"]["replicas"], 3, "{bin}");
        assert_eq!(entry(&stored, "autoscaler", None)["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}), "{bin}");
        // kubectl stops applying replicas (the autoscaler's: kept) and the sidecar (its alone: gone).
        std::fs::write(mine, manifest(&name, None, &[("web", "nginx:1.27")])).unwrap();
        let (ok, out, err) = run(vec!["apply", "--server-side", "-f", mine]).await;
        assert!(ok, "{bin}: {out}{err}");
        let stored = s.get("deployments", "default", &name).await.unwrap();
        assert_eq!(stored["spec"]["replicas"], 3, "{bin}");
        let names: Vec<&str> = stored["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["web"], "{bin}");
    }
}

#[tokio::test]
async fn kube_rs_patch_apply_conflicts_then_forces() {
    let s = server().await;
    let api: Api<Deployment> = Api::namespaced(kube_client(&s).await, "default");
    let desired: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api.patch("web", &PatchParams::apply("team-a"), &Patch::Apply(&desired)).await.unwrap();
    let entries = created.metadata.managed_fields.clone().unwrap_or_default();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].manager.as_deref(), entries[0].operation.as_deref()), (Some("team-a"), Some("Apply")));
    assert_eq!(created.spec.as_ref().and_then(|s| s.replicas), Some(2));
    // Applying the same configuration again changes nothing.
    let again = api.patch("web", &PatchParams::apply("team-a"), &Patch::Apply(&desired)).await.unwrap();
    assert_eq!(again.metadata.resource_version, created.metadata.resource_version);

    let scale =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let err = api.patch("web", &PatchParams::apply("team-b"), &Patch::Apply(&scale)).await.unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
            assert_eq!(status.message, "Apply failed with 1 conflict: conflict with \"team-a\": .spec.replicas");
        }
        other => panic!("a conflict, got {other:?}"),
    }
    let forced = api.patch("web", &PatchParams::apply("team-b").force(), &Patch::Apply(&scale)).await.unwrap();
    assert_eq!(forced.spec.as_ref().and_then(|s| s.replicas), Some(5));
    let mut managers: Vec<String> =
        forced.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|e| e.manager).collect();
    managers.sort();
    assert_eq!(managers, ["team-a", "team-b"]);
    // team-a still has its containers; replicas are team-b's now.
    let stored = s.get("deployments", "default", "web").await.unwrap();
    assert_eq!(entry(&stored, "team-b", None)["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(entry(&stored, "team-a", None)["fieldsV1"]["f:spec"].get("f:replicas").is_none());
}

#[tokio::test]
async fn a_null_over_another_manager_s_field_conflicts_and_force_takes_it() {
    let s = server().await;
    let c = Client::new(&s);
    let path = "/api/v1/namespaces/default/configmaps/settings";
    let first = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                    "data": {"mode": "fast", "level": "3"}}"#;
    assert_eq!(apply(&c, path, "fieldManager=team-a", first).await.code, 201);
    let nulled = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                     "data": {"mode": null}}"#;
    let r = apply(&c, path, "fieldManager=team-b", nulled).await;
    assert_eq!((r.code, &r.body["reason"]), (409, &json!("Conflict")), "{}", r.body);
    assert_eq!(r.body["message"], "Apply failed with 1 conflict: conflict with \"team-a\": .data.mode");
    assert_eq!(c.get(path).await.body["data"], json!({"mode": "fast", "level": "3"}));
    let r = apply(&c, path, "fieldManager=team-b&force=true", nulled).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // As Go's map of strings holds a null: the empty string.
    assert_eq!(r.body["data"], json!({"level": "3", "mode": ""}));
    let stored = s.get("configmaps", "default", "settings").await.unwrap();
    assert_eq!(entry(&stored, "team-a", None)["fieldsV1"], json!({"f:data": {"f:level": {}}}));
    assert_eq!(entry(&stored, "team-b", None)["fieldsV1"], json!({"f:data": {"f:mode": {}}}));
}

#[tokio::test]
async fn kubectl_moves_from_client_side_to_server_side_apply() {
    let s = server().await;
    let dir = tempdir("kubectl-csa-ssa");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let file = dir.join("mine.yaml");
    let f = file.to_str().unwrap();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let cache = dir.join(format!("cache-{}", bin.rsplit('/').next().unwrap()));
        let name = format!("move-{}", bin.rsplit('.').next().unwrap());
        std::fs::write(&file, manifest(&name, Some(2), &[("web", "nginx:1.27")])).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", f]).await;
        assert!(ok && out.contains("created"), "{bin}: {out}{err}");
        // The fields client-side apply set are kubectl-client-side-apply's; its last-applied
        // configuration shows they are what kubectl applied, so server-side apply takes them.
        std::fs::write(&file, manifest(&name, Some(2), &[("web", "nginx:1.28")])).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "--server-side", "-f", f]).await;
        assert!(ok && out.contains("serverside-applied"), "{bin}: {out}{err}");
        let stored = s.get("deployments", "default", &name).await.unwrap();
        assert_eq!(stored["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28", "{bin}");
        let image = "f:image";
        let kubectl = entry(&stored, "kubectl", None);
        assert_eq!(kubectl["operation"], "Apply", "{bin}");
        assert!(
            kubectl["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
                .get(image)
                .is_some(),
            "{bin}: {stored}"
        );
        // The last-applied configuration follows, for a later client-side apply.
        let last: Value = serde_json::from_str(
            stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(last["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28", "{bin}");
        // A field last applied with another value than the live one is not kubectl's to take.
        let mut other = s.get("deployments", "default", &name).await.unwrap();
        other["spec"]["replicas"] = json!(4);
        other["metadata"].as_object_mut().unwrap().remove("managedFields");
        let c = Client::new(&s);
        let r = c.put(&format!("/apis/apps/v1/namespaces/default/deployments/{name}?fieldManager=hpa"), &other).await;
        assert_eq!(r.code, 200, "{}", r.body);
        std::fs::write(&file, manifest(&name, Some(5), &[("web", "nginx:1.28")])).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "--server-side", "-f", f]).await;
        assert!(!ok && err.contains("conflict with \"hpa\" using apps/v1: .spec.replicas"), "{bin}: {out}{err}");
    }
}

#[tokio::test]
async fn concurrent_applies_by_many_managers_all_land() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let cm = "/api/v1/namespaces/fixtures/configmaps/shared";
    let applies = (0..12).map(|i| {
        let c = Client::new(&s);
        async move {
            let body = format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"shared","labels":{{"l{i}":"x"}}}},"data":{{"k{i}":"v"}}}}"#
            );
            let r = apply(&c, cm, &format!("fieldManager=m{i}"), &body).await;
            assert!(r.code == 200 || r.code == 201, "{}", r.body);
        }
    });
    futures_util::future::join_all(applies).await;
    let got = c.get(cm).await.body;
    for i in 0..12 {
        assert_eq!(got["data"][format!("k{i}")], "v", "{got}");
        assert_eq!(got["metadata"]["labels"][format!("l{i}")], "x", "{got}");
        let e = entry(&got, &format!("m{i}"), None);
        assert_eq!(e["operation"], "Apply");
        assert_eq!(
            e["fieldsV1"],
            json!({"f:data": {format!("f:k{i}"): {}}, "f:metadata": {"f:labels": {format!("f:l{i}"): {}}}})
        );
    }
}

/// The time of `manager`'s entry (through the resource itself).
fn time_of(v: &Value, manager: &str) -> Value {
    entry(v, manager, None)["time"].clone()
}

/// Gives `manager`'s entry of the object at `path` a time in the past, in a PUT that also sets
/// an annotation (a write changing only managedFields times is none), as `editor`; returns the
/// stored object.
async fn age_entry(c: &Client, path: &str, manager: &str) -> Value {
    let mut body = c.get(path).await.body;
    for e in body["metadata"]["managedFields"].as_array_mut().unwrap() {
        if e["manager"] == manager {
            e["time"] = json!("2020-01-01T00:00:00Z");
        }
    }
    body["metadata"]["annotations"] = json!({"note": "aged"});
    let r = c.put(&format!("{path}?fieldManager=editor"), &body).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(time_of(&r.body, manager), "2020-01-01T00:00:00Z", "{}", r.body);
    r.body
}

/// Writes nothing but a change of the `note` annotation to the object at `path` and returns
/// its resourceVersion: the event a watch must see next when the writes before it stored
/// nothing.
async fn next_real_write(c: &Client, path: &str) -> String {
    let patch = json!({"metadata": {"annotations": {"note": "changed"}}});
    let r = c.patch(&format!("{path}?fieldManager=editor"), "application/merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn reapplying_what_the_stored_object_normalises_away_writes_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let api = format!("{DEPLOYMENTS}/loop");
    // Empty lists and maps the Go types leave out, and a status the resource itself ignores:
    // the stored object never has them, so every apply of this configuration merges a
    // different object than the stored one.
    let config = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"loop","labels":{}},
        "spec":{"replicas":1,"selector":{"matchLabels":{"app":"loop"}},
          "template":{"metadata":{"labels":{"app":"loop"}},
            "spec":{"containers":[{"name":"c","image":"nginx","env":[],"ports":[]}],"tolerations":[]}}},
        "status":{"replicas":7}}"#;
    let r = apply(&c, &api, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let aged = age_entry(&c, &api, "ctrl").await;
    let rv = aged["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{DEPLOYMENTS}?watch=true&resourceVersion={rv}")).await;

    // The same configuration again: kube's store finds only the entry's time changed, puts it
    // back and writes nothing.
    let r = apply(&c, &api, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["resourceVersion"], rv.as_str(), "{}", r.body);
    assert_eq!(time_of(&r.body, "ctrl"), "2020-01-01T00:00:00Z");
    assert_eq!(c.get(&api).await.body, aged, "the stored object is unchanged");

    // The watch's next event is the next real write, not the apply.
    let changed = next_real_write(&c, &api).await;
    let ev = w.next_within(EVENT).await.expect("an event");
    assert_eq!(
        (ev["type"].as_str(), ev["object"]["metadata"]["resourceVersion"].as_str()),
        (Some("MODIFIED"), Some(changed.as_str()))
    );
}

#[tokio::test]
async fn an_update_changing_only_an_entry_s_time_writes_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let cms = "/api/v1/namespaces/fixtures/configmaps";
    let cm = format!("{cms}/held");
    let r = c.post(cms, &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(c.delete(&cm).await.code, 200);
    let deleting = c.get(&cm).await.body;
    let deleted_at = deleting["metadata"]["deletionTimestamp"].clone();
    assert!(deleted_at.is_string(), "{deleting}");

    // editor sends another deletion time: an update cannot change it (the stored one is put
    // back), but editor's manager takes the field it sent changed.
    let mut moved = deleting.clone();
    moved["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    moved["metadata"].as_object_mut().unwrap().remove("managedFields");
    let r = c.put(&format!("{cm}?fieldManager=editor"), &moved).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["deletionTimestamp"], deleted_at);
    assert_eq!(
        entry(&r.body, "editor", None)["fieldsV1"],
        json!({"f:metadata": {"f:deletionTimestamp": {}}}),
        "{}",
        r.body
    );
    // The entries replaced by editor's alone, its time in the past (kube sorts entries by
    // time: with one entry, a time that moves cannot reorder them).
    let mut aged = r.body.clone();
    let mut own = entry(&r.body, "editor", None).clone();
    own["time"] = json!("2020-01-01T00:00:00Z");
    aged["metadata"]["managedFields"] = json!([own]);
    let r = c.put(&format!("{cm}?fieldManager=ager"), &aged).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(managers(&r.body), [("editor".into(), "Update".into())]);
    assert_eq!(time_of(&r.body, "editor"), "2020-01-01T00:00:00Z", "{}", r.body);
    let rv = r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let stored = c.get(&cm).await.body;
    let mut w = c.watch(&format!("{cms}?watch=true&resourceVersion={rv}")).await;

    // The same change again: the field manager moves editor's time, the store puts the deletion
    // time back; nothing but that time differs, so nothing is written.
    let mut again = stored.clone();
    again["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    again["metadata"].as_object_mut().unwrap().remove("managedFields");
    let r = c.put(&format!("{cm}?fieldManager=editor"), &again).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["resourceVersion"], rv.as_str(), "{}", r.body);
    assert_eq!(time_of(&r.body, "editor"), "2020-01-01T00:00:00Z");
    assert_eq!(c.get(&cm).await.body, stored, "the stored object is unchanged");

    let changed = next_real_write(&c, &cm).await;
    let ev = w.next_within(EVENT).await.expect("an event");
    assert_eq!(
        (ev["type"].as_str(), ev["object"]["metadata"]["resourceVersion"].as_str()),
        (Some("MODIFIED"), Some(changed.as_str()))
    );
}

/// A server serving `portals.example.com/v1` (kind Portal, namespaced), whose `spec` has the
/// schema given.
async fn server_with_portals(spec: Value) -> informer_apiserver::ApiServer {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "portals.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "portals", "kind": "Portal"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}
    });
    informer_apiserver::testing::builder().crd(crd.to_string()).start().await.expect("start")
}

const PORTALS: &str = "/apis/example.com/v1/namespaces/default/portals";

#[tokio::test]
async fn list_map_keys_left_out_take_the_schema_s_default() {
    let s = server_with_portals(json!({"type": "object", "properties": {"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
        "items": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"},
            "name": {"type": "string"}}}}}}))
    .await;
    let c = Client::new(&s);
    let p = format!("{PORTALS}/p");
    let config = r#"{"apiVersion":"example.com/v1","kind":"Portal","metadata":{"name":"p"},
        "spec":{"ports":[{"port":80,"name":"http"},{"port":53,"protocol":"UDP"}]}}"#;
    let r = apply(&c, &p, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // The element without a protocol is the one the schema defaults to TCP.
    assert_eq!(
        entry(&r.body, "ctrl", None)["fieldsV1"],
        json!({"f:spec": {"f:ports": {
            "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}},
            "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}, "f:protocol": {}}}}})
    );
    assert_eq!(
        r.body["spec"]["ports"],
        json!([{"port": 80, "name": "http", "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
    // Re-applied, it is the same element: nothing is added.
    let again = apply(&c, &p, "fieldManager=ctrl", config).await;
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(again.body["spec"]["ports"], r.body["spec"]["ports"]);
    // Another manager naming the defaulted key shares the element.
    let other = r#"{"apiVersion":"example.com/v1","kind":"Portal","metadata":{"name":"p"},
        "spec":{"ports":[{"port":80,"protocol":"TCP","name":"http"}]}}"#;
    let r = apply(&c, &p, "fieldManager=other", other).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["ports"].as_array().map(Vec::len), Some(2), "{}", r.body);
}

#[tokio::test]
async fn unknown_fields_below_a_preserving_schema_are_applied_then_pruned() {
    let s = server_with_portals(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"nested": {"type": "object", "properties": {
            "a": {"type": "string"},
            "deeper": {"type": "object", "properties": {"x": {"type": "integer"}}}}}}}))
    .await;
    let c = Client::new(&s);
    let p = format!("{PORTALS}/p");
    let config = r#"{"apiVersion":"example.com/v1","kind":"Portal","metadata":{"name":"p"},
        "spec":{"free":{"k":1},"nested":{"a":"x","b":"y","deeper":{"x":1,"z":2}}}}"#;
    let r = apply(&c, &p, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Where the schema keeps unknown fields they are stored; below, in objects that declare
    // their properties, the structural schema prunes them.
    assert_eq!(r.body["spec"], json!({"free": {"k": 1}, "nested": {"a": "x", "deeper": {"x": 1}}}));
    // Structured merge inherits the preservation: the applier owns all it applied.
    assert_eq!(
        entry(&r.body, "ctrl", None)["fieldsV1"],
        json!({"f:spec": {"f:free": {".": {}, "f:k": {}}, "f:nested": {"f:a": {}, "f:b": {},
            "f:deeper": {"f:x": {}, "f:z": {}}}}})
    );
    assert_eq!(c.get(&p).await.body["spec"], r.body["spec"]);
    let r = apply(&c, &p, "fieldManager=ctrl", config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["nested"], json!({"a": "x", "deeper": {"x": 1}}));
}

#[tokio::test]
async fn embedded_resources_merge_their_metadata_as_object_meta() {
    let s = server_with_portals(json!({"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}))
    .await;
    let c = Client::new(&s);
    let p = format!("{PORTALS}/p");
    let config = |finalizer: &str, owner: &str| {
        format!(
            r#"{{"apiVersion":"example.com/v1","kind":"Portal","metadata":{{"name":"p"}},
            "spec":{{"template":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"t","finalizers":["{finalizer}"],
              "ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"{owner}","uid":"{owner}-uid"}}]}}}}}}}}"#
        )
    };
    let r = apply(&c, &p, "fieldManager=a", &config("example.com/a", "one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        entry(&r.body, "a", None)["fieldsV1"]["f:spec"]["f:template"]["f:metadata"],
        json!({"f:finalizers": {"v:\"example.com/a\"": {}}, "f:name": {},
            "f:ownerReferences": {"k:{\"uid\":\"one-uid\"}": {}}})
    );
    // Finalizers are a set and owner references keyed by uid: another manager's are added,
    // without conflict (only the name is shared).
    let r = apply(&c, &p, "fieldManager=b", &config("example.com/b", "two")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let meta = &r.body["spec"]["template"]["metadata"];
    assert_eq!(meta["finalizers"], json!(["example.com/a", "example.com/b"]), "{}", r.body);
    let uids: Vec<&str> =
        meta["ownerReferences"].as_array().unwrap().iter().map(|o| o["uid"].as_str().unwrap()).collect();
    assert_eq!(uids, ["one-uid", "two-uid"]);
}

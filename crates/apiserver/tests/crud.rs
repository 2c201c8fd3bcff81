//! CRUD over HTTP: status codes, bodies, metadata, preconditions, patches,
//! and bad input.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn create_get_update_patch_delete() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(PODS, &pod("a", json!({"app": "x"}))).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let m = &r.body["metadata"];
    assert_eq!(r.body["kind"], "Pod");
    assert_eq!(r.body["apiVersion"], "v1");
    assert_eq!(m["namespace"], "default");
    assert_eq!(m["generation"], 1);
    assert_eq!(m["uid"].as_str().unwrap().len(), 36);
    assert!(m["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(r.body["status"]["phase"], "Pending");
    let rv1 = rv_of(&r.body);
    assert_eq!(rv1, s.resource_version());
    // Key order like kube-apiserver.
    let raw = std::str::from_utf8(&r.raw).unwrap();
    assert!(
        raw.starts_with(r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"default","uid":"#),
        "{raw}"
    );

    let g = c.get(&format!("{PODS}/a")).await;
    assert_eq!(g.code, 200);
    assert_eq!(g.body, r.body);

    // Duplicate -> 409 AlreadyExists.
    let d = c.post(PODS, &pod("a", json!({}))).await;
    assert_eq!(d.code, 409);
    assert_eq!(d.body["reason"], "AlreadyExists");
    assert_eq!(d.body["message"], "pods \"a\" already exists");
    assert_eq!(d.body["details"], json!({"name": "a", "kind": "pods"}));

    // PUT with stale RV -> 409 Conflict.
    let mut upd = r.body.clone();
    upd["metadata"]["resourceVersion"] = json!("1");
    let u = c.put(&format!("{PODS}/a"), &upd).await;
    assert_eq!(u.code, 409);
    assert_eq!(u.body["reason"], "Conflict");
    assert_eq!(
        u.body["message"],
        "Operation cannot be fulfilled on pods \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // PUT with current RV changing spec -> generation 2.
    let mut upd = r.body.clone();
    upd["spec"]["containers"][0]["image"] = json!("nginx");
    let u = c.put(&format!("{PODS}/a"), &upd).await;
    assert_eq!(u.code, 200, "{:?}", u.body);
    assert_eq!(u.body["metadata"]["generation"], 2);
    assert_eq!(u.body["metadata"]["uid"], r.body["metadata"]["uid"]);
    let rv2 = rv_of(&u.body);
    assert!(rv2 > rv1);

    // Label-only merge patch: generation unchanged.
    let p = c
        .patch(
            &format!("{PODS}/a"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"touched": "yes"}}}),
        )
        .await;
    assert_eq!(p.code, 200);
    assert_eq!(p.body["metadata"]["labels"], json!({"app": "x", "touched": "yes"}));
    assert_eq!(p.body["metadata"]["generation"], 2);

    // Strategic merge patch is treated as a merge patch.
    let p = c
        .patch(
            &format!("{PODS}/a"),
            "application/strategic-merge-patch+json",
            &json!({"metadata": {"labels": {"touched": null}}}),
        )
        .await;
    assert_eq!(p.code, 200);
    assert_eq!(p.body["metadata"]["labels"], json!({"app": "x"}));

    // JSON patch.
    let p = c
        .patch(
            &format!("{PODS}/a"),
            "application/json-patch+json",
            &json!([{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}]),
        )
        .await;
    assert_eq!(p.code, 200, "{:?}", p.body);
    assert_eq!(p.body["metadata"]["annotations"], json!({"k": "v"}));

    // Unsupported patch type -> 415.
    let p = c.patch(&format!("{PODS}/a"), "text/plain", &json!({})).await;
    assert_eq!(p.code, 415);

    // No-op update does not bump the RV.
    let before = s.resource_version();
    let cur = c.get(&format!("{PODS}/a")).await.body;
    let u = c.put(&format!("{PODS}/a"), &cur).await;
    assert_eq!(u.code, 200);
    assert_eq!(s.resource_version(), before);

    // Delete returns the last state with the deletion RV.
    let del = c.delete(&format!("{PODS}/a")).await;
    assert_eq!(del.code, 200);
    assert_eq!(rv_of(&del.body), s.resource_version());
    assert_eq!(del.body["metadata"]["name"], "a");

    let g = c.get(&format!("{PODS}/a")).await;
    assert_eq!(g.code, 404);
    assert_eq!(
        g.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "pods \"a\" not found", "reason": "NotFound",
               "details": {"name": "a", "kind": "pods"}, "code": 404})
    );
    let d = c.delete(&format!("{PODS}/a")).await;
    assert_eq!(d.code, 404);
}

#[tokio::test]
async fn apps_group_and_cluster_scoped() {
    let s = server().await;
    let c = Client::new(&s);
    let mut dep =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": workload_spec("d")});
    dep["spec"]["replicas"] = json!(1);
    create_namespaces(&s, &["ns1"]).await.unwrap();
    let r = c.post("/apis/apps/v1/namespaces/ns1/deployments", &dep).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["metadata"]["namespace"], "ns1");
    let g = c.get("/apis/apps/v1/namespaces/ns1/deployments/x").await;
    assert_eq!(g.body["message"], "deployments.apps \"x\" not found");
    assert_eq!(g.body["details"], json!({"name": "x", "group": "apps", "kind": "deployments"}));

    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "ignored"}});
    let r = c.post("/api/v1/nodes", &node).await;
    assert_eq!(r.code, 201);
    assert!(r.body["metadata"].get("namespace").is_none());
    let l = c.get("/api/v1/namespaces").await;
    let names: Vec<&str> =
        l.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system", "ns1"]);
}

#[tokio::test]
async fn status_subresource_and_generate_name() {
    let s = server().await;
    let c = Client::new(&s);
    let mut p = pod("", json!({}));
    p["metadata"] = json!({"generateName": "web-"});
    let r = c.post(PODS, &p).await;
    assert_eq!(r.code, 201);
    let name = r.body["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    // As kube's generator: at most 58 bytes of a long base, for a name of 63.
    let base = "a".repeat(70);
    p["metadata"] = json!({"generateName": base});
    let r = c.post(PODS, &p).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let long = r.body["metadata"]["name"].as_str().unwrap();
    assert!(long.len() == 63 && long.starts_with(&base[..58]), "{long}");
    let st = c
        .patch(
            &format!("{PODS}/{name}/status"),
            "application/merge-patch+json",
            &json!({"status": {"phase": "Running"}, "metadata": {"labels": {"via": "status"}},
                "spec": {"activeDeadlineSeconds": 5}}),
        )
        .await;
    assert_eq!(st.code, 200);
    assert_eq!(st.body["status"]["phase"], "Running");
    // As kube's pod status strategy: the labels are taken, the spec is not.
    assert_eq!(st.body["metadata"]["labels"], json!({"via": "status"}));
    assert!(st.body["spec"].get("activeDeadlineSeconds").is_none());
}

/// The names a server seeded with `seed` gives its first `n` configmaps created with
/// `generateName: cm-`.
async fn generated_names(seed: u64, n: usize) -> Vec<String> {
    let s = informer_apiserver::testing::builder().generated_name_seed(seed).start().await.unwrap();
    let c = Client::new(&s);
    let mut names = Vec::new();
    for _ in 0..n {
        let r = c.post(CONFIGMAPS, &json!({"metadata": {"generateName": "cm-"}})).await;
        assert_eq!(r.code, 201, "{}", r.body);
        names.push(r.body["metadata"]["name"].as_str().unwrap().to_string());
    }
    names
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn a_taken_generated_name_is_tried_again_then_refused_as_kube() {
    let names = generated_names(42, 8).await;
    assert_eq!(names.iter().collect::<std::collections::HashSet<_>>().len(), 8, "{names:?}");
    // The same seed names alike: when the first two names are taken, a create gets the third.
    let s = informer_apiserver::testing::builder().generated_name_seed(42).start().await.unwrap();
    let c = Client::new(&s);
    for n in &names[..2] {
        assert_eq!(c.post(CONFIGMAPS, &json!({"metadata": {"name": n}})).await.code, 201);
    }
    let dry = c.post(&format!("{CONFIGMAPS}?dryRun=All"), &json!({"metadata": {"generateName": "cm-"}})).await;
    assert_eq!((dry.code, &dry.body["metadata"]["name"]), (201, &json!(names[2])), "{}", dry.body);
    assert_eq!(c.get(&format!("{CONFIGMAPS}/{}", names[2])).await.code, 404);
    // Each attempt draws a new name: the dry run drew three.
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"generateName": "cm-"}, "data": {"k": "v"}})).await;
    assert_eq!((r.code, &r.body["metadata"]["name"]), (201, &json!(names[3])), "{}", r.body);
    assert_eq!(r.body["data"], json!({"k": "v"}));

    // Eight names taken: kube's GenerateNameConflict, naming the last one tried.
    let s = informer_apiserver::testing::builder().generated_name_seed(42).start().await.unwrap();
    let c = Client::new(&s);
    for n in &names {
        assert_eq!(c.post(CONFIGMAPS, &json!({"metadata": {"name": n}})).await.code, 201);
    }
    let rv = s.resource_version();
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"generateName": "cm-"}})).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(r.body["reason"], "AlreadyExists");
    assert_eq!(r.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let last = &names[7];
    assert_eq!(
        r.body["message"],
        format!(
            "configmaps \"{last}\" already exists, the server was not able to generate a unique name for the object"
        )
    );
    assert_eq!(r.body["details"], json!({"name": last, "kind": "configmaps", "retryAfterSeconds": 1}));
    assert_eq!(s.resource_version(), rv, "nothing was written");
    // A name given beside a generateName is not tried again, but its conflict is worded alike.
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"name": names[0], "generateName": "cm-"}})).await;
    assert_eq!((r.code, r.headers.get("retry-after").is_some()), (409, true), "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "configmaps \"{}\" already exists, the server was not able to generate a unique name for the object",
            names[0]
        )
    );
}

#[tokio::test]
async fn bad_input_is_a_status_and_writes_nothing() {
    let s = informer_apiserver::testing::builder().body_limit(64 * 1024).start().await.unwrap();
    let c = Client::new(&s);
    let rv0 = s.resource_version();

    let r = c.send_raw(http::Method::POST, PODS, b"{not json".to_vec(), "application/json").await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["reason"], "BadRequest");
    assert_eq!(
        r.body["message"],
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)"
    );
    let cut = br#"{"apiVersion":"v1","kind":"Pod","metadata":"#.to_vec();
    let r = c.send_raw(http::Method::POST, PODS, cut, "application/json").await;
    assert_eq!(
        r.body["message"],
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\":\"v1\",\"kind\":\"Pod ...)"
    );

    let r = c.post(PODS, &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}})).await;
    assert_eq!(r.code, 400);
    let r = c.post(PODS, &json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "x"}})).await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "the API version in the data (apps/v1) does not match the expected API version (v1)");

    let r = c.post(PODS, &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {}})).await;
    assert_eq!(r.code, 422);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["message"],
        "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name");

    let r = c.post(PODS, &json!({"metadata": {"name": "Bad_Name"}})).await;
    assert_eq!(r.code, 422);
    let r = c.post(PODS, &json!({"metadata": {"name": "x", "labels": {"a": 1}}})).await;
    assert_eq!(r.code, 400);
    let r = c.post(PODS, &json!([1, 2])).await;
    assert_eq!(r.code, 400);
    let r = c.post("/api/v1/namespaces/other/pods", &json!({"metadata": {"name": "x", "namespace": "default"}})).await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );

    let huge = vec![b' '; 100 * 1024];
    let r = c.send_raw(http::Method::POST, PODS, huge, "application/json").await;
    assert_eq!(r.code, 413);
    assert_eq!(r.body["reason"], "RequestEntityTooLarge");

    let r = c.get("/api/v1/namespaces/default/widgets").await;
    assert_eq!(r.code, 404);
    assert_eq!(r.body["message"], "the server could not find the requested resource");
    // Outside the built-in API, Go's plain-text 404, as kube-apiserver answers.
    for path in ["/apis/nope/v1", "/apis/nope", "/apis/apps/v9", "/apis/nope.io/v1/namespaces/default/things"] {
        let r = c.get(path).await;
        assert_eq!(r.code, 404, "{path}");
        assert_eq!(r.raw.as_ref(), b"404 page not found\n", "{path}");
        assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8", "{path}");
    }
    let r = c.get("/totally/unknown").await;
    assert_eq!(r.code, 404);

    let r = c.get(&format!("{PODS}?labelSelector=a%20in%20x")).await;
    assert_eq!(r.code, 400);
    let r = c.get(&format!("{PODS}?fieldSelector=spec.foo%3Dbar")).await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "field label not supported: spec.foo");
    let r = c.get(&format!("{PODS}?limit=abc")).await;
    assert_eq!(r.code, 400);

    // PUT name mismatch.
    c.post(PODS, &pod("p", json!({}))).await;
    let rv1 = s.resource_version();
    let r = c.put(&format!("{PODS}/p"), &pod("q", json!({}))).await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "the name of the object (q) does not match the name on the URL (p)");
    let r = c.put(&format!("{PODS}/zz"), &pod("zz", json!({}))).await;
    assert_eq!(r.code, 404);
    let r = c
        .patch(
            &format!("{PODS}/p"),
            "application/json-patch+json",
            &json!([{"op": "test", "path": "/spec/x", "value": 1}]),
        )
        .await;
    assert_eq!(r.code, 422);
    assert_eq!(s.resource_version(), rv1);
    assert_eq!(rv1, rv0 + 1);
}

#[tokio::test]
async fn in_process_access() {
    let s = server().await;
    let created = s.create("pods", pod("a", json!({"x": "1"}))).await.unwrap();
    assert_eq!(created["metadata"]["namespace"], "default");
    let n = s.create_many("pods", (0..100).map(|i| pod(&format!("p{i:03}"), json!({}))).collect()).await.unwrap();
    assert_eq!(n, s.resource_version());
    assert_eq!(s.list("pods", Some("default")).await.unwrap().len(), 101);
    let got = s.get("pods", "default", "p007").await.unwrap();
    assert_eq!(got["metadata"]["name"], "p007");
    let p = s.patch("po", "default", "a", &json!({"metadata": {"labels": {"x": "2"}}})).await.unwrap();
    assert_eq!(p["metadata"]["labels"]["x"], "2");
    let mut u = p.clone();
    u["spec"]["containers"][0]["image"] = json!("registry.k8s.io/pause:3.9");
    let u2 = s.update("Pod", u).await.unwrap();
    assert_eq!(u2["metadata"]["generation"], 2);
    let d = s.delete("pods", "default", "a").await.unwrap();
    assert_eq!(rv_of(&d), s.resource_version());
    assert_eq!(s.get("pods", "default", "a").await.unwrap_err().code, 404);
    assert!(s.create_many("pods", vec![pod("p001", json!({}))]).await.is_err());
    create_namespaces(&s, &["x"]).await.unwrap();
    let dep = s
        .create("deployments.apps", json!({"metadata": {"name": "d", "namespace": "x"}, "spec": workload_spec("d")}))
        .await
        .unwrap();
    assert_eq!(dep["apiVersion"], "apps/v1");
    assert_eq!(s.create("widgets", json!({})).await.unwrap_err().code, 404);
}

#[tokio::test]
async fn finalizers_delay_deletion() {
    let s = server().await;
    let c = Client::new(&s);
    let mut p = pod("f", json!({}));
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    c.post(PODS, &p).await;
    let start = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}")).await;
    let d = c.delete(&format!("{PODS}/f")).await;
    assert_eq!(d.code, 200);
    assert!(d.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(d.body["metadata"]["generation"], 2);
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(e["type"], "MODIFIED");
    // Deleting again changes nothing.
    let again = c.delete(&format!("{PODS}/f")).await;
    assert_eq!(again.body, d.body);
    assert_eq!(c.get(&format!("{PODS}/f")).await.code, 200);
    let r =
        c.patch(&format!("{PODS}/f"), "application/merge-patch+json", &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200);
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(e["type"], "DELETED");
    assert_eq!(rv_of(&e["object"]), s.resource_version());
    assert_eq!(c.get(&format!("{PODS}/f")).await.code, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_get_distinct_increasing_rvs() {
    let s = std::sync::Arc::new(server().await);
    s.create("configmaps", json!({"metadata": {"name": "counter"}, "data": {"n": "0"}})).await.unwrap();
    let mut hs = Vec::new();
    for t in 0..4 {
        let s = s.clone();
        hs.push(tokio::spawn(async move {
            for i in 0..200 {
                s.patch("configmaps", "default", "counter", &json!({"data": {format!("t{t}"): i.to_string()}}))
                    .await
                    .unwrap();
            }
        }));
    }
    for h in hs {
        h.await.unwrap();
    }
    let cm = s.get("configmaps", "default", "counter").await.unwrap();
    for t in 0..4 {
        assert_eq!(cm["data"][format!("t{t}")], "199");
    }
    assert_eq!(rv_of(&cm), s.resource_version());
}

#[tokio::test]
async fn unacceptable_media_types_are_406() {
    let s = server().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let get = |accept: &'static str| {
        let req = http::Request::get(format!("{}{PODS}", s.url()))
            .header("accept", accept)
            .body(http_body_util::Empty::new())
            .unwrap();
        client.request(req)
    };
    assert_eq!(get("text/html").await.unwrap().status(), 406);
    assert_eq!(get("application/vnd.kubernetes.protobuf, application/json").await.unwrap().status(), 200);
    assert_eq!(get("*/*").await.unwrap().status(), 200);
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let r = c.post(&format!("{PODS}?dryRun=All"), &pod("d", json!({}))).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["metadata"]["name"], "d");
    assert!(r.body["metadata"].get("resourceVersion").is_none());
    assert_eq!(c.get(&format!("{PODS}/d")).await.code, 404);
    c.post(PODS, &pod("d", json!({}))).await;
    let rv1 = s.resource_version();
    let p = c
        .patch(
            &format!("{PODS}/d?dryRun=All"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!(p.code, 200);
    assert_eq!(p.body["metadata"]["labels"]["x"], "y");
    let d = c.send_raw(http::Method::DELETE, &format!("{PODS}/d?dryRun=All"), Vec::new(), "application/json").await;
    assert_eq!(d.code, 200);
    assert_eq!(s.resource_version(), rv1);
    assert!(s.get("pods", "default", "d").await.unwrap()["metadata"]["labels"].get("x").is_none());
    assert_eq!(rv1, rv + 1);
    // A dry run asks the storage whether the name is taken, as a create would.
    let r = c.post(&format!("{PODS}?dryRun=All"), &pod("d", json!({}))).await;
    assert_eq!(r.code, 409);
    assert_eq!(r.body["message"], "pods \"d\" already exists");
    // Only `All` is a dry run.
    let r = c.post(&format!("{PODS}?dryRun=Maybe"), &pod("e", json!({}))).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Maybe\"]: supported values: \"All\""
    );
    assert_eq!(s.resource_version(), rv1);
}

#[tokio::test]
async fn a_name_held_by_an_object_being_deleted_says_so() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(c.post(cms, &cm).await.code, 201);
    assert_eq!(c.delete(&format!("{cms}/held")).await.code, 200);
    for path in [cms.to_string(), format!("{cms}?dryRun=All")] {
        let r = c.post(&path, &json!({"metadata": {"name": "held"}})).await;
        assert_eq!(r.code, 409, "{path}");
        assert_eq!(r.body["reason"], "AlreadyExists");
        assert_eq!(r.body["message"], "object is being deleted: configmaps \"held\" already exists", "{path}");
    }
}

#[tokio::test]
async fn events_are_created_by_put_and_patches_keep_their_namespace() {
    let s = server().await;
    let c = Client::new(&s);
    let event = |name: &str| {
        json!({"metadata": {"name": name, "namespace": "default"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
               "reason": "Tested", "message": "m", "type": "Normal"})
    };
    let r = c.put("/api/v1/namespaces/default/events/e1", &event("e1")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c
        .put(
            "/apis/events.k8s.io/v1/namespaces/default/events/e2",
            &json!({"metadata": {"name": "e2", "namespace": "default"}, "eventTime": "2026-01-01T00:00:00.000000Z",
                    "reportingController": "example.com/c", "reportingInstance": "i", "action": "Test", "reason": "Tested",
                    "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "type": "Normal"}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // `source` selects by the source's component, else the reporting controller, in both APIs.
    for (api, source, want) in [
        ("/api/v1", "example.com/c", "e2"),
        ("/apis/events.k8s.io/v1", "example.com/c", "e2"),
        ("/apis/events.k8s.io/v1", "nobody", ""),
    ] {
        let r = c.get(&format!("{api}/namespaces/default/events?fieldSelector=source%3D{source}")).await;
        assert_eq!(r.code, 200, "{api}: {}", r.body);
        let names: Vec<&str> =
            r.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names.join(","), want, "{api} source={source}");
    }
    // A patch may not move an object to another namespace.
    let r = c
        .patch(
            "/api/v1/namespaces/default/events/e1",
            "application/merge-patch+json",
            &json!({"metadata": {"namespace": "kube-system"}}),
        )
        .await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

/// Events expire their TTL after their last write (kube-apiserver's `--event-ttl`): watchers of
/// both Event APIs see them deleted, never sooner than the TTL after the write, and a finalizer
/// does not hold one (the storage forgets it, as etcd does when its lease expires).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_their_ttl_after_their_last_write() {
    let ttl = Duration::from_millis(800);
    let s = informer_apiserver::testing::builder().event_ttl(ttl).start().await.unwrap();
    let c = Client::new(&s);
    let core = "/api/v1/namespaces/default/events";
    let event = |name: &str| {
        json!({"metadata": {"name": name, "finalizers": ["example.com/keep"]},
               "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
               "reason": "Tested", "message": "m", "type": "Normal"})
    };
    let rv = s.resource_version();
    let mut core_watch = c.watch(&format!("{core}?watch=1&resourceVersion={rv}")).await;
    let mut new_watch = c.watch(&format!("/apis/events.k8s.io/v1/events?watch=1&resourceVersion={rv}")).await;
    let created = std::time::Instant::now();
    assert_eq!(c.post(core, &event("created")).await.code, 201);
    assert_eq!(c.post(core, &event("renewed")).await.code, 201);
    let renewed = std::time::Instant::now();
    let r = c.patch(&format!("{core}/renewed"), "application/merge-patch+json", &json!({"count": 2})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let mut deleted = std::collections::BTreeMap::new();
    while deleted.len() < 2 {
        let e = core_watch.next_within(10 * SEC).await.expect("an event");
        if e["type"] == "DELETED" {
            deleted.insert(e["object"]["metadata"]["name"].as_str().unwrap().to_string(), std::time::Instant::now());
        }
    }
    assert!(deleted["created"] - created >= ttl, "expired after {:?}", deleted["created"] - created);
    assert!(deleted["renewed"] - renewed >= ttl, "expired {:?} after its last write", deleted["renewed"] - renewed);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = new_watch.next_within(10 * SEC).await.expect("an event");
        if e["type"] == "DELETED" {
            seen.push(e["object"]["metadata"]["name"].as_str().unwrap().to_string());
        }
    }
    seen.sort();
    assert_eq!(seen, ["created", "renewed"]);
    assert_eq!(c.get(&format!("{core}/created")).await.code, 404);
}

/// Writes are judged against the stored object even while the watch cache is behind the last
/// write: a no-op and a dry run answer the stored version, and a patch or an apply that fails
/// against the cache's version is tried again against the storage's, as kube-apiserver's
/// GuaranteedUpdate re-reads its storage before it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_judged_against_the_stored_object_while_the_cache_lags() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(PODS, &pod("p", json!({"app": "web"}))).await.body;
    let path = format!("{PODS}/p");
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    // The cache has the pod, then falls behind.
    assert_eq!(c.get(&format!("{path}?resourceVersion={rv}")).await.code, 200);
    s.set_cache_lag(std::time::Duration::from_secs(3));
    let mut body = created.clone();
    body["metadata"]["labels"]["app"] = json!("db");
    let updated = c.put(&path, &body).await;
    assert_eq!(updated.code, 200, "{:?}", updated.body);
    let rv2 = updated.body["metadata"]["resourceVersion"].clone();

    // The pod's own PATCH ignores status: a no-op against the stored version.
    let r = c.patch(&path, "application/merge-patch+json", &json!({"status": {"phase": "Failed"}})).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!((&r.body["metadata"]["labels"]["app"], &r.body["metadata"]["resourceVersion"]), (&json!("db"), &rv2));
    let r = c
        .patch(
            &format!("{path}?dryRun=All"),
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"a": "b"}}}),
        )
        .await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(
        (&r.body["metadata"]["labels"]["app"], &r.body["metadata"]["annotations"]["a"]),
        (&json!("db"), &json!("b"))
    );
    // A patch that only applies to the stored version, and an apply that conflicts only with the
    // cache's version (another manager set `app` to "web" there), are judged against the storage's.
    let test_op = json!([{"op": "test", "path": "/metadata/labels/app", "value": "db"}]);
    let r = c.patch(&path, "application/json-patch+json", &test_op).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    let config = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "db"}}});
    let r = c.patch(&format!("{path}?fieldManager=other"), "application/apply-patch+yaml", &config).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    // A PUT /status with the answered resourceVersion is current.
    let mut status = r.body.clone();
    status["status"] = json!({"phase": "Running"});
    let r = c.put(&format!("{path}/status"), &status).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    s.set_cache_lag(std::time::Duration::ZERO);
}

/// A delete that has nothing to write (the object waits for its finalizers already) answers on
/// the stored object, not on a cached one the cache has not replaced yet: an object deleted and
/// made again while the cache lags is deleted in its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_is_not_answered_on_a_stale_cached_object() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let path = format!("{cms}/held");
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/keep"]}});
    let first = c.post(cms, &held).await.body;
    assert_eq!(c.delete(&path).await.code, 200);
    let marked = c.get(&path).await.body;
    let rv = marked["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    // The cache holds the first object, marked; then falls behind.
    assert_eq!(c.get(&format!("{path}?resourceVersion={rv}")).await.code, 200);
    s.set_cache_lag(std::time::Duration::from_secs(3));
    let mut released = marked;
    released["metadata"]["finalizers"] = json!([]);
    assert_eq!(c.put(&path, &released).await.code, 200);
    let second = c.post(cms, &held).await;
    assert_eq!(second.code, 201, "{}", second.body);
    assert_ne!(second.body["metadata"]["uid"], first["metadata"]["uid"]);
    let r = c.delete(&path).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["uid"], second.body["metadata"]["uid"], "the new object answers");
    assert!(r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.body);
    s.set_cache_lag(std::time::Duration::ZERO);
    let stored = s.get("configmaps", "default", "held").await.unwrap();
    assert_eq!(stored["metadata"]["uid"], second.body["metadata"]["uid"]);
    assert!(stored["metadata"]["deletionTimestamp"].is_string(), "{stored}");
}

#[tokio::test]
async fn unreadable_bodies_are_refused() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.send_raw(http::Method::POST, PODS, b"k8s\x00\x0a".to_vec(), "application/vnd.kubernetes.protobuf").await;
    assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{}", r.body);
    let r = c.send_raw(http::Method::POST, PODS, b"name: x".to_vec(), "text/plain").await;
    assert_eq!(r.code, 415);
    assert_eq!(r.body["reason"], "UnsupportedMediaType");
    assert_eq!(s.list("pods", None).await.unwrap().len(), 0);
}

#[tokio::test]
async fn a_collection_delete_answers_what_it_listed() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, finalizers: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "labels": {"batch": "one"}, "finalizers": finalizers}})
    };
    let mut listed = Vec::new();
    for (name, finalizers) in [("a", json!([])), ("b", json!(["example.com/hold"])), ("c", json!([]))] {
        let r = c.post(cms, &cm(name, finalizers)).await;
        assert_eq!(r.code, 201, "{}", r.body);
        listed.push(r.body);
    }
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "other"}})).await.code, 201);
    let r = c.delete(&format!("{cms}?labelSelector=batch%3Done")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "ConfigMapList");
    // The objects as they were listed, before their deletion.
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for (item, created) in items.iter().zip(&listed) {
        assert_eq!(item["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
        assert!(item["metadata"].get("deletionTimestamp").is_none());
    }
    assert_eq!(c.get(&format!("{cms}/a")).await.code, 404);
    assert!(c.get(&format!("{cms}/b")).await.body["metadata"]["deletionTimestamp"].is_string(), "held");
    assert_eq!(c.get(&format!("{cms}/c")).await.code, 404);
    assert_eq!(c.get(&format!("{cms}/other")).await.code, 200);
    // A deletion that fails is the answer (here: a precondition no object meets).
    let body = serde_json::to_vec(&json!({"preconditions": {"uid": "nope"}})).unwrap();
    let r = c.send_raw(http::Method::DELETE, cms, body, "application/json").await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(c.get(&format!("{cms}/other")).await.code, 200);
}

#[tokio::test]
async fn a_collection_delete_with_a_limit_deletes_one_page_and_continues() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    for name in ["p1", "p2", "p3", "p4", "p5"] {
        assert_eq!(c.post(cms, &json!({"metadata": {"name": name}})).await.code, 201);
    }
    let names = |r: &Resp| -> Vec<String> {
        r.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().into()).collect()
    };
    let r = c.delete(&format!("{cms}?limit=2")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(names(&r), ["p1", "p2"]);
    // The page as a LIST answers it: its continue token deletes the next one.
    assert_eq!(r.body["metadata"]["remainingItemCount"], 3);
    let token = r.body["metadata"]["continue"].as_str().unwrap().to_string();
    let left = c.get(cms).await;
    assert_eq!(names(&left), ["p3", "p4", "p5"]);
    let r = c.delete(&format!("{cms}?limit=2&continue={token}")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(names(&r), ["p3", "p4"]);
    assert_eq!(names(&c.get(cms).await), ["p5"]);
    // Without a limit, every page.
    let r = c.delete(cms).await;
    assert_eq!((r.code, names(&r)), (200, vec!["p5".to_string()]));
    assert!(r.body["metadata"].get("continue").is_none(), "{}", r.body);
    assert_eq!(names(&c.get(cms).await), Vec::<String>::new());
    // Across namespaces a collection is only listed and watched, as kube routes it.
    assert_eq!(c.post(cms, &json!({"metadata": {"name": "kept"}})).await.code, 201);
    let r = c.delete("/api/v1/configmaps").await;
    assert_eq!((r.code, &r.body["reason"]), (405, &json!("MethodNotAllowed")), "{}", r.body);
    assert_eq!(names(&c.get(cms).await), ["kept"]);
}

#[tokio::test]
async fn a_namespaced_kind_is_only_listed_and_watched_across_namespaces() {
    let s = server().await;
    let c = Client::new(&s);
    // A create there is refused as kube-apiserver refuses it (kube-rs's `Api::all(..).create`).
    let r = c.post("/api/v1/configmaps", &json!({"metadata": {"name": "x", "namespace": "default"}})).await;
    assert_eq!(r.code, 405, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed", "details": {}, "code": 405})
    );
    assert!(s.get("configmaps", "default", "x").await.is_err());
    assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "x"}})).await.code, 201);
    // No object path is routed across namespaces, whatever the method.
    for r in [
        c.get("/api/v1/configmaps/x").await,
        c.put("/api/v1/configmaps/x", &json!({"metadata": {"name": "x", "namespace": "default"}})).await,
        c.delete("/api/v1/configmaps/x").await,
        c.get("/apis/apps/v1/deployments/web/scale").await,
    ] {
        assert_eq!((r.code, &r.body["message"]), (404, &json!("the server could not find the requested resource")));
    }
    assert_eq!(c.get("/api/v1/configmaps").await.code, 200);
    assert!(s.get("configmaps", "default", "x").await.is_ok());
    // The deprecated watch paths are watched, never written, and name no subresource.
    let watch = "/api/v1/watch/namespaces/default/configmaps";
    let r = c.post(watch, &json!({"metadata": {"name": "y"}})).await;
    assert_eq!((r.code, &r.body["reason"]), (405, &json!("MethodNotAllowed")));
    assert_eq!(c.delete(&format!("{watch}/x")).await.code, 405);
    assert!(s.get("configmaps", "default", "y").await.is_err() && s.get("configmaps", "default", "x").await.is_ok());
    let r = c.get("/api/v1/watch/namespaces/default/pods/web/status").await;
    assert_eq!((r.code, &r.body["message"]), (404, &json!("the server could not find the requested resource")));
    // kube's custom resource handler passes both on, to Go's plain 404.
    define(&c, &crd_of("widget", "Widget", "Namespaced", json!({"type": "object"}))).await;
    for r in [
        c.post("/apis/example.com/v1/widgets", &json!({"metadata": {"name": "w", "namespace": "default"}})).await,
        c.get("/apis/example.com/v1/widgets/w").await,
        c.delete("/apis/example.com/v1/widgets").await,
    ] {
        assert_eq!((r.code, r.raw.as_ref()), (404, &b"404 page not found\n"[..]));
    }
    assert_eq!(c.get("/apis/example.com/v1/widgets").await.code, 200);
}

#[tokio::test]
async fn a_version_precondition_is_compared_as_written() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let r = c.post(cms, &json!({"metadata": {"name": "held"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let rv = r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    // kube compares the strings: a version written with a leading zero, or not a number at all,
    // is a precondition the object does not meet (a conflict, not a bad request).
    for wanted in [format!("0{rv}"), "abc".to_string(), String::new()] {
        let body = serde_json::to_vec(&json!({"preconditions": {"resourceVersion": wanted}})).unwrap();
        let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), body, "application/json").await;
        assert_eq!((r.code, r.body["reason"].as_str()), (409, Some("Conflict")), "{}", r.body);
        assert_eq!(
            r.body["message"],
            format!(
                "Operation cannot be fulfilled on ConfigMap \"held\": the ResourceVersion in the precondition \
                 ({wanted}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
            )
        );
    }
    assert_eq!(c.get(&format!("{cms}/held")).await.code, 200);
    let body = serde_json::to_vec(&json!({"preconditions": {"resourceVersion": rv}})).unwrap();
    let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), body, "application/json").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{cms}/held")).await.code, 404);
}

/// A DELETE's options in YAML are read as JSON ones are; a body in a media type kube reads no
/// options in is its 415, the object left as it was.
#[tokio::test]
async fn delete_options_come_in_yaml_too() {
    let s = server().await;
    let c = Client::new(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    let r = c.post(cms, &json!({"metadata": {"name": "held"}})).await;
    let rv = r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), b"dryRun: [All]\n".to_vec(), "text/plain").await;
    assert_eq!((r.code, r.body["reason"].as_str()), (415, Some("UnsupportedMediaType")), "{}", r.body);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let stale = "preconditions:\n  resourceVersion: \"1\"\n".as_bytes().to_vec();
    let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), stale, "application/yaml").await;
    assert_eq!((r.code, r.body["reason"].as_str()), (409, Some("Conflict")), "{}", r.body);
    let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), b"a: [1\n".to_vec(), "application/yaml").await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().starts_with("error converting YAML to JSON: "), "{}", r.body);
    assert_eq!(c.get(&format!("{cms}/held")).await.code, 200);
    let body = format!("apiVersion: v1\nkind: DeleteOptions\npreconditions:\n  resourceVersion: \"{rv}\"\n");
    let r = c.send_raw(http::Method::DELETE, &format!("{cms}/held"), body.into_bytes(), "application/yaml").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{cms}/held")).await.code, 404);
}

/// Objects read back in the form kube-apiserver's Go types write them, whatever the request
/// left out: an Event's source, times and reporting fields; a Role's rules; a pod condition's
/// probe time; and without the zeros and empty strings Go holds by value (`paused: false`,
/// `nodeName: ""`).
#[tokio::test]
async fn objects_read_back_with_the_fields_go_always_writes() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "fixtures"}, "reason": "R",
        "message": "m", "count": 0});
    let r = c.post("/api/v1/namespaces/fixtures/events", &event).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let got = c.get("/api/v1/namespaces/fixtures/events/e").await.body;
    for (field, want) in [
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
    ] {
        assert_eq!(got.get(field), Some(&want), "{field}: {got}");
    }
    assert!(got.get("count").is_none(), "{got}");
    // Written back as read, the Event is unchanged: no new version.
    let again = c.put("/api/v1/namespaces/fixtures/events/e", &got).await;
    assert_eq!((again.code, &again.body["metadata"]["resourceVersion"]), (200, &got["metadata"]["resourceVersion"]));

    let r = c
        .post("/apis/rbac.authorization.k8s.io/v1/namespaces/fixtures/roles", &json!({"metadata": {"name": "r"}}))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body.as_object().unwrap().get("rules").is_some_and(Value::is_null), "{}", r.body);

    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert_eq!(c.post("/api/v1/namespaces/fixtures/pods", &pod).await.code, 201);
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
        "lastTransitionTime": "2026-11-28T05:00:00Z"}]}});
    let r = c.patch("/api/v1/namespaces/fixtures/pods/p/status", "application/merge-patch+json", &status).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["status"]["conditions"][0],
        json!({"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-28T05:00:00Z"})
    );

    let deployment = json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "paused": false, "minReadySeconds": 0,
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let r = c.post("/apis/apps/v1/namespaces/fixtures/deployments", &deployment).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 0);
    assert!(r.body["spec"].get("paused").is_none() && r.body["spec"].get("minReadySeconds").is_none(), "{}", r.body);

    // An empty string Go holds by value is no value: neither stored nor owned; one Go holds by
    // pointer is (a claim's `storageClassName: ""` asks for no class).
    let pod = json!({"metadata": {"name": "q", "generateName": ""}, "spec": {"nodeName": "", "hostname": "",
        "containers": [{"name": "c", "image": "i", "workingDir": ""}]}});
    let r = c.post("/api/v1/namespaces/fixtures/pods", &pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let spec = &r.body["spec"];
    assert!(spec.get("nodeName").is_none() && spec.get("hostname").is_none(), "{spec}");
    assert!(spec["containers"][0].get("workingDir").is_none() && r.body["metadata"].get("generateName").is_none());
    let owned = r.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].clone();
    assert!(owned.get("f:nodeName").is_none() && owned.get("f:hostname").is_none(), "{owned}");
    let claim = json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "", "volumeName": "",
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let r = c.post("/api/v1/namespaces/fixtures/persistentvolumeclaims", &claim).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["storageClassName"], "");
    assert!(r.body["spec"].get("volumeName").is_none(), "{}", r.body);
    let owned = &r.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(owned.get("f:storageClassName").is_some() && owned.get("f:volumeName").is_none(), "{owned}");
}

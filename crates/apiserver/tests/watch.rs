//! WATCH over HTTP: replay, 410, initial events, WatchList end bookmark,
//! periodic and pre-timeout bookmarks, selector transitions, drops.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn typ(e: &Value) -> &str {
    e["type"].as_str().unwrap()
}

fn name(e: &Value) -> &str {
    e["object"]["metadata"]["name"].as_str().unwrap_or("")
}

#[tokio::test]
async fn replay_from_rv_then_live() {
    let s = server().await;
    let c = Client::new(&s);
    let start = s.resource_version();
    s.create("pods", pod("w", json!({"app": "sample"}))).await.unwrap();
    s.patch("pods", "default", "w", &json!({"metadata": {"labels": {"touched": "yes"}}})).await.unwrap();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}")).await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "ADDED");
    assert_eq!(e["object"]["kind"], "Pod");
    assert_eq!(e["object"]["apiVersion"], "v1");
    assert_eq!(rv_of(&e["object"]), start + 1);
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "MODIFIED");
    assert_eq!(e["object"]["metadata"]["labels"]["touched"], "yes");
    let del = s.delete("pods", "default", "w").await.unwrap();
    // A pod is written terminating before it goes (a pod on no node: with a period of 0).
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "MODIFIED");
    assert_eq!(e["object"]["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(e["object"]["metadata"]["deletionTimestamp"].is_string(), "{e}");
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "DELETED");
    assert_eq!(e["object"], del);
    assert_eq!(rv_of(&e["object"]), s.resource_version());
    // Other namespaces are not seen by a namespaced watch.
    create_namespaces(&s, &["other"]).await.unwrap();
    s.create("pods", json!({"metadata": {"name": "x", "namespace": "other"}, "spec": pod_spec()})).await.unwrap();
    s.create("pods", pod("y", json!({}))).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(name(&e), "y");
}

#[tokio::test]
async fn too_old_rv_is_an_error_event() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("pods", pod("a", json!({}))).await.unwrap();
    s.create("pods", pod("b", json!({}))).await.unwrap();
    let old = s.resource_version() - 1;
    let compacted = s.compact().await.unwrap();
    // The server that compacted still replays its events, as kube-apiserver's watch cache
    // (`watch-rvold-after-compaction-same-apiserver.jsonl`); lists of those states are gone.
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={old}")).await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((typ(&e), name(&e)), ("ADDED", "b"));
    drop(w);
    let r = c.get(&format!("{PODS}?resourceVersion={old}&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 410);
    assert_eq!(r.body["message"], "The resourceVersion for the provided list is too old.");
    // A server whose cache is rebuilt from the compacted storage cannot.
    s.restart().await.unwrap();
    assert!(s.wait_ready(SEC).await, "the cache is rebuilt");
    let c = Client::new(&s);
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={old}")).await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(
        e,
        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": format!("too old resource version: {old} ({compacted})"),
            "reason": "Expired", "code": 410}})
    );
    w.expect_end(SEC).await;
    // RV 1 on a history that starts at 0 is fine on a fresh server (on etcd, whose history other
    // programs share, the cache starts at the current revision, as kube-apiserver's).
    let s2 = server().await;
    let mut w = Client::new(&s2).watch("/api/v1/namespaces?watch=1&resourceVersion=1").await;
    let e = w.next_within(SEC).await.unwrap();
    if informer_apiserver::testing::backend() == informer_apiserver::testing::Backend::Etcd {
        assert_eq!(e["object"]["code"], 410);
    } else {
        assert_eq!(name(&e), "kube-node-lease");
    }
}

#[tokio::test]
async fn rv0_and_unset_send_initial_state_sorted() {
    let s = server().await;
    let c = Client::new(&s);
    for n in ["c", "a", "b"] {
        s.create("pods", pod(n, json!({}))).await.unwrap();
    }
    for q in ["resourceVersion=0", "resourceVersion="] {
        let mut w = c.watch(&format!("{PODS}?watch=true&{q}")).await;
        for n in ["a", "b", "c"] {
            let e = w.next_within(SEC).await.unwrap();
            assert_eq!((typ(&e), name(&e)), ("ADDED", n));
        }
        s.create("pods", pod(&format!("d{}", q.len()), json!({}))).await.unwrap();
        let e = w.next_within(SEC).await.unwrap();
        assert_eq!(typ(&e), "ADDED", "no end bookmark without allowWatchBookmarks");
    }
}

#[tokio::test]
async fn send_initial_events_end_bookmark() {
    let s = server().await;
    let c = Client::new(&s);
    for n in ["a", "b"] {
        s.create("pods", pod(n, json!({}))).await.unwrap();
    }
    let rv = s.resource_version();
    let q = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut w = c.watch(&format!("{PODS}?{q}")).await;
    assert_eq!(name(&w.next_within(SEC).await.unwrap()), "a");
    assert_eq!(name(&w.next_within(SEC).await.unwrap()), "b");
    // Byte for byte as kube-apiserver sends it: an empty Pod as its Go type writes it.
    let line = w.next_line().await.unwrap();
    assert_eq!(
        String::from_utf8(line).unwrap(),
        format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":\
             {{\"resourceVersion\":\"{rv}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}},\
             \"spec\":{{\"containers\":null}},\"status\":{{}}}}}}\n"
        )
    );
    // With an explicit RV too.
    let mut w = c.watch(&format!("{PODS}?{q}&resourceVersion={}", rv - 1)).await;
    w.next_within(SEC).await.unwrap();
    w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&w.next_within(SEC).await.unwrap()), "BOOKMARK");
    // Without bookmarks: ADDEDs and no marker.
    let mut w = c
        .watch(&format!("{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"))
        .await;
    assert_eq!(typ(&w.next_within(SEC).await.unwrap()), "ADDED");
    assert_eq!(typ(&w.next_within(SEC).await.unwrap()), "ADDED");
    w.expect_end(SEC).await;
    // RV unset + allowWatchBookmarks: WatchList defaulting adds the marker.
    let mut w = c.watch(&format!("{PODS}?watch=1&allowWatchBookmarks=true")).await;
    w.next_within(SEC).await.unwrap();
    w.next_within(SEC).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

/// A bookmark carries an empty object of the watched kind as its Go type writes it; a custom
/// resource, unstructured in kube-apiserver, carries only its metadata.
#[tokio::test]
async fn bookmarks_are_empty_objects_of_the_watched_kind() {
    let s = server().await;
    let c = Client::new(&s);
    define(&c, &crd_of("gadget", "Gadget", "Namespaced", json!({"type": "object"}))).await;
    let cases = [
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"kind": "Deployment", "apiVersion": "apps/v1",
                "spec": {"selector": null, "strategy": {}, "template": {"metadata": {}, "spec": {"containers": null}}},
                "status": {}}),
        ),
        ("/api/v1/namespaces/default/configmaps", json!({"kind": "ConfigMap", "apiVersion": "v1"})),
        ("/apis/example.com/v1/namespaces/default/gadgets", json!({"kind": "Gadget", "apiVersion": "example.com/v1"})),
    ];
    let rv = s.resource_version();
    for (path, mut want) in cases {
        let mut w = c
            .watch(&format!(
                "{path}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
            ))
            .await;
        let e = w.next_within(SEC).await.unwrap();
        assert_eq!(typ(&e), "BOOKMARK", "{e}");
        want["metadata"] =
            json!({"resourceVersion": rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}});
        assert_eq!(e["object"], want, "{path}");
    }
    // Seen as metadata only, byte for byte as kube writes it.
    let meta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let q = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut w = c.watch_accepting(&format!("/api/v1/namespaces/default/configmaps?{q}"), meta).await;
    assert_eq!(
        String::from_utf8(w.next_line().await.unwrap()).unwrap(),
        format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\
             \"metadata\":{{\"resourceVersion\":\"{rv}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n"
        )
    );
}

#[tokio::test]
async fn watch_option_validation() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get(&format!("{PODS}?watch=1&sendInitialEvents=true")).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [{"reason": "FieldValueForbidden",
                "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", "field": "resourceVersionMatch"}]},
            "code": 422})
    );
    let r = c.get(&format!("{PODS}?watch=1&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(r.code, 422);
    let r = c.get(&format!("{PODS}?watch=1&labelSelector=%3D%3D")).await;
    assert_eq!(r.code, 400);
    // kube's cacher hands the versioner's error back as it is: a 500 without a reason.
    let r = c.get(&format!("{PODS}?watch=1&resourceVersion=abc")).await;
    assert_eq!(r.code, 500);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
            "code": 500})
    );
    let r = c.get(&format!("{PODS}?resourceVersion=abc")).await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.body["message"],
        "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
}

#[tokio::test]
async fn a_resource_version_the_cache_has_not_reached() {
    let s = informer_apiserver::testing::builder().too_large_rv_wait(Duration::from_millis(100)).start().await.unwrap();
    let c = Client::new(&s);
    // A watch starts at once and sends what comes after its resourceVersion.
    let from = s.resource_version() + 2;
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={from}")).await;
    let mut after = Vec::new();
    for p in ["a", "b", "c", "d"] {
        let created = s.create("pods", pod(p, json!({}))).await.unwrap();
        if rv_of(&created) > from {
            after.push(p);
        }
    }
    assert!(after.len() >= 2 && !after.contains(&"a"), "{after:?}");
    for p in after {
        assert_eq!(name(&w.next_within(SEC).await.unwrap()), p);
    }
    // A streaming list waits for the cache, then answers with one ERROR event.
    let far = s.resource_version() + 1000;
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={far}"
        ))
        .await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert_eq!(e["object"]["reason"], "Timeout");
    assert_eq!(e["object"]["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    w.expect_end(SEC).await;
    // A list says when to come back, as kube's error writer does.
    let r = c.get(&format!("{PODS}?resourceVersion={far}&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(r.code, 504);
    assert_eq!(r.headers.get("retry-after").map(|v| v.to_str().unwrap()), Some("1"));
}

#[tokio::test]
async fn deprecated_watch_paths_and_bare_flags_watch() {
    let s = server().await;
    let c = Client::new(&s);
    let from = s.resource_version();
    // `/watch/…/pods/b` watches pod b alone, whatever `watch` says.
    let mut one = c.watch(&format!("/api/v1/watch/namespaces/default/pods/b?watch=false&resourceVersion={from}")).await;
    // A bare `watch` is true, as kube's parameter codec reads it.
    let mut all = c.watch(&format!("{PODS}?watch&resourceVersion={from}")).await;
    for p in ["a", "b"] {
        s.create("pods", pod(p, json!({}))).await.unwrap();
    }
    assert_eq!(name(&one.next_within(SEC).await.unwrap()), "b");
    assert_eq!(name(&all.next_within(SEC).await.unwrap()), "a");
    assert_eq!(name(&all.next_within(SEC).await.unwrap()), "b");
    let r = c.get("/api/v1/watch/namespaces/default/pods/b?fieldSelector=metadata.name%3Da").await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "fieldSelector metadata.name doesn't match requested name");
    let mut named = c.watch("/api/v1/watch/namespaces/default/pods/b?fieldSelector=metadata.name%3Db").await;
    let e = named.next_within(SEC).await.unwrap();
    assert_eq!((typ(&e), name(&e)), ("ADDED", "b"), "the state first, without a resourceVersion");
    s.patch("pods", "default", "a", &json!({"metadata": {"labels": {"x": "1"}}})).await.unwrap();
    s.patch("pods", "default", "b", &json!({"metadata": {"labels": {"x": "1"}}})).await.unwrap();
    let e = named.next_within(SEC).await.unwrap();
    assert_eq!((typ(&e), name(&e)), ("MODIFIED", "b"));
}

#[tokio::test]
async fn bookmarks_periodic_only_when_rv_advanced_and_before_timeout() {
    let s = informer_apiserver::testing::builder()
        .bookmark_interval(Duration::from_millis(100))
        .bookmark_before_timeout(Duration::from_millis(1500))
        .start()
        .await
        .unwrap();
    let c = Client::new(&s);
    let start = s.resource_version();
    let mut w =
        c.watch(&format!("{PODS}?watch=1&allowWatchBookmarks=true&resourceVersion={start}&timeoutSeconds=2")).await;
    s.create("pods", pod("a", json!({}))).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "ADDED");
    // A write to another resource advances the RV: the next bookmark has it.
    s.create("configmaps", json!({"metadata": {"name": "cm"}})).await.unwrap();
    let rv = s.resource_version();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(
        e,
        json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()},
            "spec": {"containers": null}, "status": {}}})
    );
    // Idle: no periodic bookmark, but one before the deadline, then the end.
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "BOOKMARK");
    assert_eq!(rv_of(&e["object"]), rv);
    w.expect_end(SEC).await;
    // A watch whose resourceVersion never moves past its start gets no bookmark at all.
    let mut idle =
        c.watch(&format!("{PODS}?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=2")).await;
    idle.expect_end(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn selector_transitions() {
    let s = server().await;
    let c = Client::new(&s);
    let start = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}&labelSelector=app%3Dweb")).await;
    s.create("pods", pod("p", json!({"app": "db"}))).await.unwrap();
    let m = s.patch("pods", "default", "p", &json!({"metadata": {"labels": {"app": "web"}}})).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "ADDED");
    assert_eq!(e["object"], m);
    s.patch("pods", "default", "p", &json!({"metadata": {"annotations": {"x": "1"}}})).await.unwrap();
    assert_eq!(typ(&w.next_within(SEC).await.unwrap()), "MODIFIED");
    let before = s.get("pods", "default", "p").await.unwrap();
    s.patch("pods", "default", "p", &json!({"metadata": {"labels": {"app": "db"}}})).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!(typ(&e), "DELETED");
    assert_eq!(e["object"]["metadata"]["labels"]["app"], "web", "previous content");
    assert_eq!(rv_of(&e["object"]), s.resource_version(), "new RV");
    assert_eq!(e["object"]["metadata"]["uid"], before["metadata"]["uid"]);
    s.delete("pods", "default", "p").await.unwrap();
    s.create("pods", pod("q", json!({"app": "web"}))).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((typ(&e), name(&e)), ("ADDED", "q"));
    // Field selector on a cluster-wide watch.
    let mut w = c
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={}&fieldSelector=metadata.name%3Dz",
            s.resource_version()
        ))
        .await;
    create_namespaces(&s, &["n2"]).await.unwrap();
    s.create("pods", json!({"metadata": {"name": "y", "namespace": "n2"}, "spec": pod_spec()})).await.unwrap();
    s.create("pods", json!({"metadata": {"name": "z", "namespace": "n2"}, "spec": pod_spec()})).await.unwrap();
    assert_eq!(name(&w.next_within(SEC).await.unwrap()), "z");
}

#[tokio::test]
async fn timeout_drop_and_slow_stream() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=1")).await;
    w.expect_end(SEC).await;

    let mut w1 = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    let mut w2 = c.watch(&format!("/api/v1/configmaps?watch=1&resourceVersion={rv}")).await;
    s.create("pods", pod("a", json!({}))).await.unwrap();
    assert_eq!(name(&w1.next_within(SEC).await.unwrap()), "a");
    s.drop_watches();
    w1.expect_end(SEC).await;
    w2.expect_end(SEC).await;

    s.set_stream_delay(Duration::from_millis(100));
    let t = std::time::Instant::now();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    s.create("pods", pod("b", json!({}))).await.unwrap();
    w.next_within(SEC).await.unwrap();
    w.next_within(SEC).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(100), "events were delayed");
    s.set_stream_delay(Duration::ZERO);
}

#[tokio::test]
async fn many_events_are_batched_and_ordered() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let objs: Vec<Value> = (0..5000).map(|i| pod(&format!("p{i:05}"), json!({}))).collect();
    s.create_many("pods", objs).await.unwrap();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    let mut last = rv;
    for _ in 0..5000 {
        let e = w.next_within(SEC).await.unwrap();
        let r = rv_of(&e["object"]);
        assert!(r > last);
        last = r;
    }
    assert_eq!(last, s.resource_version());
}

#[tokio::test]
async fn every_watcher_gets_the_same_bytes_for_an_event() {
    // Watchers at the head send an event's shared line; a selector watcher sends it too while the
    // object stays selected; a replay reaching events out of the window of shared lines encodes
    // them itself. All must be the same bytes.
    let s = server().await;
    let c = Client::new(&s);
    let start = s.resource_version();
    let mut live = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}")).await;
    let mut selected = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}&labelSelector=app%3Dsample")).await;
    let n = informer_apiserver::watch_cache::RECENT_LINES + 20;
    for i in 0..n {
        s.create("pods", pod(&format!("p{i:04}"), json!({"app": "sample"}))).await.unwrap();
        if i % 2 == 1 {
            s.patch("pods", "default", &format!("p{i:04}"), &json!({"metadata": {"labels": {"i": i.to_string()}}}))
                .await
                .unwrap();
        }
    }
    let mut replay = c.watch(&format!("{PODS}?watch=1&resourceVersion={start}")).await;
    let mut last = Value::Null;
    for _ in 0..n + n / 2 {
        let a = tokio::time::timeout(SEC, live.next_line()).await.unwrap().unwrap();
        let b = tokio::time::timeout(SEC, selected.next_line()).await.unwrap().unwrap();
        let r = tokio::time::timeout(SEC, replay.next_line()).await.unwrap().unwrap();
        assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
        assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&r));
        last = serde_json::from_slice(&a).unwrap();
    }
    assert_eq!(rv_of(&last["object"]), s.resource_version(), "every event compared");
}

#[tokio::test]
async fn watch_over_http2_cleartext() {
    use http_body_util::{BodyExt, Empty};
    let s = server().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Empty<bytes::Bytes>>();
    let rv = s.resource_version();
    let uri: http::Uri = format!("{}{PODS}?watch=1&resourceVersion={rv}", s.url()).parse().unwrap();
    let resp = client.get(uri).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.headers()["content-type"], "application/json");
    s.create("pods", pod("h2", json!({}))).await.unwrap();
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    while !buf.contains(&b'\n') {
        let f = tokio::time::timeout(SEC, body.frame()).await.unwrap().unwrap().unwrap();
        if let Some(d) = f.data_ref() {
            buf.extend_from_slice(d);
        }
    }
    let e: Value = serde_json::from_slice(&buf[..buf.iter().position(|b| *b == b'\n').unwrap()]).unwrap();
    assert_eq!(name(&e), "h2");
}

#[tokio::test]
async fn compaction_does_not_break_caught_up_watchers() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("pods", pod("a", json!({}))).await.unwrap();
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    s.create("configmaps", json!({"metadata": {"name": "c"}, "spec": pod_spec()})).await.unwrap();
    s.compact().await.unwrap();
    s.create("pods", pod("b", json!({}))).await.unwrap();
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((typ(&e), name(&e)), ("ADDED", "b"));
}

#[tokio::test]
async fn absurd_parameters_do_not_crash() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=9223372036854775807")).await;
    s.create("pods", pod("a", json!({}))).await.unwrap();
    assert_eq!(name(&w.next_within(SEC).await.unwrap()), "a");
    for q in [
        "limit=-5",
        "limit=99999999999999999999",
        "timeoutSeconds=-1&limit=1",
        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiLi4vLi4ifQ",
        "labelSelector=a%20in%20(",
        "labelSelector=!",
        "fieldSelector=%3D%3D%3D",
        "resourceVersion=-1",
        "sendInitialEvents=maybe",
    ] {
        let r = c.get(&format!("{PODS}?{q}")).await;
        assert!(r.code == 200 || r.code == 400 || r.code == 422, "{q}: {}", r.code);
        if r.code != 200 {
            assert_eq!(r.body["kind"], "Status", "{q}");
        }
    }
    // A negative timeout ends the watch at once (kube's timer has fired), with no event.
    let now = s.resource_version();
    let r = c.get(&format!("{PODS}?watch=1&resourceVersion={now}&timeoutSeconds=-1")).await;
    assert_eq!(r.code, 200);
    assert!(r.raw.is_empty(), "{:?}", r.raw);
}

#[tokio::test]
async fn watcher_falling_behind_the_history_is_ended() {
    let s = informer_apiserver::testing::builder().history_capacity(5).start().await.unwrap();
    let c = Client::new(&s);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    s.set_stream_delay(Duration::from_millis(200));
    for i in 0..20 {
        s.create("pods", pod(&format!("p{i:02}"), json!({}))).await.unwrap();
    }
    let mut got = 0;
    while let Some(e) = w.next_within(SEC).await {
        if typ(&e) == "ERROR" {
            assert_eq!(e["object"]["code"], 410);
            break;
        }
        got += 1;
    }
    assert!(got < 20, "a watcher behind the history must not silently skip events");
}

#[tokio::test]
async fn legacy_watch_path() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("/api/v1/watch/namespaces/default/pods?resourceVersion={rv}")).await;
    s.create("pods", pod("lw", json!({}))).await.unwrap();
    assert_eq!(name(&w.next_within(SEC).await.unwrap()), "lw");
}

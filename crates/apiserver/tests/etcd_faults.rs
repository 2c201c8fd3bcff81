//! The server on a real etcd under faults: etcd unreachable (a TCP proxy between the server and
//! etcd refuses and resets connections), etcd compacted while the server was cut off, and values
//! in etcd that are not objects of their resource.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, PODS, SEC, pod, rv_of};
use informer_apiserver::ApiServer;
use informer_apiserver::etcd_process::EtcdProcess;
use informer_apiserver::storage::Storage;
use informer_apiserver::storage::etcd::{EtcdOptions, EtcdStorage};
use informer_apiserver::testing::TcpProxy;
use serde_json::json;

async fn server_on(endpoint: String, prefix: &str) -> ApiServer {
    ApiServer::builder().etcd(vec![endpoint]).etcd_prefix(prefix).start().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_unreachable_fails_writes_in_bounded_time_and_keeps_serving_the_cache() {
    let etcd = EtcdProcess::start().unwrap();
    let etcd_addr = etcd.url().trim_start_matches("http://").parse().unwrap();
    let proxy = TcpProxy::start(etcd_addr).await.unwrap();
    let s = server_on(proxy.url(), "/unreachable").await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &pod("a", json!({}))).await.code, 201);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    assert!(s.wait_for_watches(1, SEC).await);

    proxy.set_blocked(true);
    proxy.reset_connections();
    let t = Instant::now();
    let r = c.post(PODS, &pod("b", json!({}))).await;
    assert!(t.elapsed() < Duration::from_secs(12), "a write failed after {:?}", t.elapsed());
    assert_eq!(r.code, 504, "{:?}", r.body);
    assert_eq!(r.body["reason"], "Timeout");
    assert_eq!(
        r.body["message"],
        "The create operation against pods could not be completed at this time, please try again."
    );
    // Reads the cache can answer go on; consistent reads fail cleanly.
    let l = c.get(&format!("{PODS}?resourceVersion=0")).await;
    assert_eq!(l.code, 200);
    assert_eq!(l.body["items"].as_array().unwrap().len(), 1);
    let t = Instant::now();
    let l = c.get(PODS).await;
    assert!(t.elapsed() < Duration::from_secs(12));
    assert_eq!(l.code, 504, "{:?}", l.body);
    assert_eq!(s.open_watches(), 1, "the watch stays open");
    // The health endpoints say so, as kube-apiserver's etcd checks do.
    let text = |r: &common::Resp| String::from_utf8(r.raw.to_vec()).unwrap();
    let r = c.get("/readyz/etcd").await;
    assert_eq!(r.code, 500);
    assert!(text(&r).starts_with("internal server error: error getting data from etcd: "), "{}", text(&r));
    let r = c.get("/livez?verbose").await;
    assert_eq!(r.code, 500);
    assert!(text(&r).starts_with("[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n"), "{}", text(&r));
    assert!(text(&r).ends_with("livez check failed\n"), "{}", text(&r));

    // etcd is back: the cache resumes from its revision, the open watch goes on.
    proxy.set_blocked(false);
    let created = c.post(PODS, &pod("c", json!({}))).await;
    assert_eq!(created.code, 201, "{:?}", created.body);
    let e = w.next_within(Duration::from_secs(15)).await.unwrap();
    assert_eq!((e["type"].as_str(), e["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("c")));
    assert_eq!(rv_of(&e["object"]), rv_of(&created.body));
    let names: Vec<String> = c.get(PODS).await.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a", "c"], "nothing of the failed write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_cut_off_during_a_compaction_rebuilds_and_its_watchers_relist() {
    let etcd = EtcdProcess::start().unwrap();
    let etcd_addr = etcd.url().trim_start_matches("http://").parse().unwrap();
    let proxy = TcpProxy::start(etcd_addr).await.unwrap();
    let a = server_on(proxy.url(), "/compacted").await;
    let b = server_on(etcd.url(), "/compacted").await;
    let (ca, cb) = (Client::new(&a), Client::new(&b));
    for i in 0..5 {
        assert_eq!(cb.post(PODS, &pod(&format!("p{i}"), json!({}))).await.code, 201);
    }
    let seen = ca.get(PODS).await;
    let rv = seen.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = ca.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    assert!(a.wait_for_watches(1, SEC).await);

    proxy.set_blocked(true);
    proxy.reset_connections();
    for i in 5..15 {
        assert_eq!(cb.post(PODS, &pod(&format!("p{i}"), json!({}))).await.code, 201);
    }
    assert_eq!(cb.delete(&format!("{PODS}/p0")).await.code, 200);
    b.compact().await.unwrap();
    proxy.set_blocked(false);

    // A's watch of etcd cannot resume from its revision: A rebuilds its cache and ends every
    // watch; a watcher's resourceVersion is then too old (410) and it relists.
    w.expect_end(Duration::from_secs(20)).await;
    assert!(a.wait_ready(Duration::from_secs(20)).await);
    let mut w = ca.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((e["type"].as_str(), e["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
    let listed = ca.get(PODS).await;
    assert_eq!(listed.body, cb.get(PODS).await.body, "the rebuilt cache has etcd's state");
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_that_are_not_objects_are_skipped() {
    let etcd = EtcdProcess::start().unwrap();
    let raw = EtcdStorage::connect(EtcdOptions::new(vec![etcd.url()])).await.unwrap();
    let put = |key: &str, value: &'static [u8]| raw.create(key.to_string(), Bytes::from_static(value));
    put("/bad/registry/configmaps/default/garbage", b"{not json").await.unwrap();
    put(
        "/bad/registry/configmaps/default/wrong-kind",
        br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"wrong-kind"}}"#,
    )
    .await
    .unwrap();
    put(
        "/bad/registry/configmaps/default/good",
        br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"good","namespace":"default"},"data":{"a":"b"}}"#,
    )
    .await
    .unwrap();
    // At start and later: skipped, logged, never a crash.
    let s = server_on(etcd.url(), "/bad/registry").await;
    let c = Client::new(&s);
    put("/bad/registry/configmaps/default/garbage2", b"\xff\xfe").await.unwrap();
    assert_eq!(
        c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "later"}})).await.code,
        201
    );
    let names: Vec<String> = c.get("/api/v1/namespaces/default/configmaps").await.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["good", "later"]);
    assert_eq!(c.get("/api/v1/namespaces/default/configmaps/good").await.body["data"]["a"], "b");
}

//! LIST over HTTP: paging, continue tokens, resourceVersion semantics,
//! compaction 410s, selectors, option validation.

mod common;

use std::time::Duration;

use common::*;
use informer_apiserver::{ApiServer, StorageConfig};
use serde_json::{Value, json};

fn names(v: &Value) -> Vec<String> {
    v["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

async fn five(s: &ApiServer) {
    for n in ["sample-a", "sample-b", "sample-c", "sample-d", "sample-e"] {
        s.create("pods", pod(n, json!({"app": "sample"}))).await.unwrap();
    }
}

#[tokio::test]
async fn paging_like_kube() {
    let s = server().await;
    five(&s).await;
    create_namespaces(&s, &["zz"]).await.unwrap();
    s.create("pods", json!({"metadata": {"name": "other", "namespace": "zz"}, "spec": pod_spec()})).await.unwrap();
    let c = Client::new(&s);
    let rv = s.resource_version();
    let p1 = c.get(&format!("{PODS}?limit=2")).await;
    assert_eq!(p1.code, 200);
    assert_eq!(p1.body["kind"], "PodList");
    assert_eq!(p1.body["apiVersion"], "v1");
    assert_eq!(names(&p1.body), ["sample-a", "sample-b"]);
    assert_eq!(p1.body["metadata"]["remainingItemCount"], 3);
    assert!(p1.body["items"][0].get("kind").is_none(), "typed list items carry no kind");
    let tok = p1.body["metadata"]["continue"].as_str().unwrap().to_string();
    // Same encoding as the real capture (different RV).
    let expect = format!("{{\"v\":\"meta.k8s.io/v1\",\"rv\":{rv},\"start\":\"/sample-b\\u0000\"}}");
    use base64::Engine;
    let dec = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&tok).unwrap();
    assert_eq!(String::from_utf8(dec).unwrap(), expect);

    // Writes between pages do not show up: all pages at the first RV.
    s.create("pods", pod("sample-bb", json!({}))).await.unwrap();
    s.delete("pods", "default", "sample-d").await.unwrap();
    let p2 = c.get(&format!("{PODS}?limit=2&continue={tok}")).await;
    assert_eq!(p2.code, 200, "{:?}", p2.body);
    assert_eq!(names(&p2.body), ["sample-c", "sample-d"]);
    assert_eq!(p2.body["metadata"]["resourceVersion"], rv.to_string());
    assert_eq!(p2.body["metadata"]["remainingItemCount"], 1);
    let tok2 = p2.body["metadata"]["continue"].as_str().unwrap();
    let p3 = c.get(&format!("{PODS}?limit=2&continue={tok2}")).await;
    assert_eq!(names(&p3.body), ["sample-e"]);
    assert!(p3.body["metadata"].get("continue").is_none());
    assert!(p3.body["metadata"].get("remainingItemCount").is_none());

    // All namespaces, sorted by namespace/name.
    let all = c.get("/api/v1/pods").await;
    assert_eq!(names(&all.body).last().unwrap(), "other");
    assert_eq!(all.body["metadata"]["resourceVersion"], s.resource_version().to_string());

    // RV with continue -> 400.
    let r = c.get(&format!("{PODS}?limit=2&continue={tok}&resourceVersion=5")).await;
    assert_eq!(r.code, 400);
    assert_eq!(r.body["message"], "specifying resource version is not allowed when using continue");
    let r = c.get(&format!("{PODS}?limit=2&continue=garbage!")).await;
    assert_eq!(r.code, 400);

    // Continued with RV "0": the rest at once, as kube's cacher drops the limit.
    let rest = c.get(&format!("{PODS}?limit=2&continue={tok}&resourceVersion=0")).await;
    assert_eq!(rest.code, 200, "{}", rest.body);
    assert_eq!(names(&rest.body), ["sample-c", "sample-d", "sample-e"]);
    assert!(rest.body["metadata"].get("continue").is_none());

    // Selector pages: no remainingItemCount.
    let r = c.get(&format!("{PODS}?limit=1&labelSelector=app%3Dsample")).await;
    assert_eq!(names(&r.body), ["sample-a"]);
    assert!(r.body["metadata"]["continue"].is_string());
    assert!(r.body["metadata"].get("remainingItemCount").is_none());
}

#[tokio::test]
async fn continue_after_compaction_is_410_with_fresh_token() {
    let s = server().await;
    five(&s).await;
    let c = Client::new(&s);
    let p1 = c.get(&format!("{PODS}?limit=2")).await;
    let tok = p1.body["metadata"]["continue"].as_str().unwrap().to_string();
    s.create("pods", pod("sample-f", json!({}))).await.unwrap();
    s.compact().await.unwrap();
    let r = c.get(&format!("{PODS}?limit=2&continue={tok}")).await;
    assert_eq!(r.code, 410);
    assert_eq!(r.body["reason"], "Expired");
    assert!(r.body["message"].as_str().unwrap().starts_with("The provided continue parameter is too old"));
    let fresh = r.body["metadata"]["continue"].as_str().unwrap();
    use base64::Engine;
    let dec = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(fresh).unwrap();
    assert_eq!(String::from_utf8(dec).unwrap(), r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"sample-b\u0000"}"#);
    // The inconsistent token continues at the latest state.
    let r = c.get(&format!("{PODS}?limit=10&continue={fresh}")).await;
    assert_eq!(r.code, 200);
    assert_eq!(names(&r.body), ["sample-c", "sample-d", "sample-e", "sample-f"]);
    assert_eq!(r.body["metadata"]["resourceVersion"], s.resource_version().to_string());
}

/// A list at a revision older than the watch cache's history is read from the storage, as kube's
/// cacher delegates it to etcd: continue tokens and Exact lists keep working until the storage
/// compacts that revision. Each engine is the test's own (a compaction is the whole storage's).
#[tokio::test]
async fn pages_older_than_the_cache_history_are_read_from_the_storage() {
    let etcd = informer_apiserver::etcd_process::EtcdProcess::start().unwrap();
    let engines = [
        StorageConfig::Memory,
        StorageConfig::Sqlite(informer_apiserver::testing::temp_data_dir()),
        StorageConfig::Etcd { endpoints: vec![etcd.url()] },
    ];
    for storage in engines {
        let name = format!("{storage:?}");
        let s = ApiServer::builder().storage(storage).history_capacity(5).start().await.unwrap();
        five(&s).await;
        let c = Client::new(&s);
        let p1 = c.get(&format!("{PODS}?limit=2")).await;
        assert_eq!(p1.code, 200, "{name}");
        let rv = p1.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        let tok = p1.body["metadata"]["continue"].as_str().unwrap().to_string();
        // More changes than the cache keeps, one of them to an object of the next page.
        for i in 0..10 {
            let label = json!({"metadata": {"labels": {"round": i.to_string()}}});
            let r = c.patch(&format!("{PODS}/sample-c"), "application/merge-patch+json", &label).await;
            assert_eq!(r.code, 200, "{name}: {}", r.body);
        }
        let p2 = c.get(&format!("{PODS}?limit=2&continue={tok}")).await;
        assert_eq!(p2.code, 200, "{name}: {}", p2.body);
        assert_eq!(names(&p2.body), ["sample-c", "sample-d"], "{name}");
        assert_eq!(p2.body["metadata"]["resourceVersion"], rv.as_str(), "{name}");
        assert_eq!(p2.body["items"][0]["metadata"]["labels"], json!({"app": "sample"}), "{name}: as it was");
        assert_eq!(p2.body["metadata"]["remainingItemCount"], 1, "{name}");
        let exact = c.get(&format!("{PODS}?resourceVersion={rv}&resourceVersionMatch=Exact")).await;
        assert_eq!(exact.code, 200, "{name}: {}", exact.body);
        assert_eq!(names(&exact.body).len(), 5, "{name}");
        assert_eq!(exact.body["metadata"]["resourceVersion"], rv.as_str(), "{name}");
        // Once the storage has compacted it: 410, as before.
        s.compact().await.unwrap();
        let r = c.get(&format!("{PODS}?limit=2&continue={tok}")).await;
        assert_eq!((r.code, &r.body["reason"]), (410, &json!("Expired")), "{name}: {}", r.body);
        let r = c.get(&format!("{PODS}?resourceVersion={rv}&resourceVersionMatch=Exact")).await;
        assert_eq!(r.code, 410, "{name}: {}", r.body);
        assert_eq!(r.body["message"], "The resourceVersion for the provided list is too old.", "{name}");
    }
}

#[tokio::test]
async fn resource_version_semantics() {
    let s = server().await;
    five(&s).await;
    let c = Client::new(&s);
    let rv_mid = s.resource_version();
    s.delete("pods", "default", "sample-a").await.unwrap();
    s.patch("pods", "default", "sample-b", &json!({"metadata": {"labels": {"app": "changed"}}})).await.unwrap();
    s.create("pods", pod("sample-z", json!({}))).await.unwrap();
    let now = s.resource_version();

    // Exact from history.
    let r = c.get(&format!("{PODS}?resourceVersion={rv_mid}&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 200);
    assert_eq!(names(&r.body), ["sample-a", "sample-b", "sample-c", "sample-d", "sample-e"]);
    assert_eq!(r.body["items"][1]["metadata"]["labels"]["app"], "sample");
    assert_eq!(r.body["metadata"]["resourceVersion"], rv_mid.to_string());
    // Legacy: limit + RV => exact.
    let r = c.get(&format!("{PODS}?resourceVersion={rv_mid}&limit=2")).await;
    assert_eq!(names(&r.body), ["sample-a", "sample-b"]);
    let tok = r.body["metadata"]["continue"].as_str().unwrap();
    let r = c.get(&format!("{PODS}?limit=10&continue={tok}")).await;
    assert_eq!(names(&r.body), ["sample-c", "sample-d", "sample-e"]);
    // NotOlderThan => latest.
    let r = c.get(&format!("{PODS}?resourceVersion={rv_mid}&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(r.body["metadata"]["resourceVersion"], now.to_string());
    assert_eq!(names(&r.body).len(), 5);
    let r = c.get(&format!("{PODS}?resourceVersion={rv_mid}")).await;
    assert_eq!(r.body["metadata"]["resourceVersion"], now.to_string());
    // RV=0 ignores limit.
    let r = c.get(&format!("{PODS}?resourceVersion=0&limit=1")).await;
    assert_eq!(names(&r.body).len(), 5);
    assert!(r.body["metadata"].get("continue").is_none());

    // Compacted => 410.
    s.compact().await.unwrap();
    let r = c.get(&format!("{PODS}?resourceVersion={rv_mid}&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 410);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "The resourceVersion for the provided list is too old.", "reason": "Expired", "code": 410})
    );
    // Exact at the compaction RV itself still works.
    let r = c.get(&format!("{PODS}?resourceVersion={now}&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 200);
}

#[tokio::test]
async fn future_rv_waits_then_504() {
    let s = informer_apiserver::testing::builder().too_large_rv_wait(Duration::from_millis(300)).start().await.unwrap();
    let c = Client::new(&s);
    let fut = s.resource_version() + 10;
    let r = c.get(&format!("{PODS}?resourceVersion={fut}&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(r.code, 504);
    assert_eq!(r.body["reason"], "Timeout");
    assert_eq!(
        r.body["message"],
        format!("Timeout: Too large resource version: {fut}, current: {}", s.resource_version())
    );
    assert_eq!(r.body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    assert_eq!(r.body["details"]["retryAfterSeconds"], 1);
    // A write arriving while waiting satisfies the request.
    let next = s.resource_version() + 1;
    let c2 = Client::new(&s);
    let h = tokio::spawn(async move {
        c2.get(&format!("{PODS}?resourceVersion={next}&resourceVersionMatch=NotOlderThan")).await
    });
    // Whether the request is already parked or not, the write satisfies it.
    tokio::task::yield_now().await;
    s.create("pods", pod("late", json!({}))).await.unwrap();
    let r = h.await.unwrap();
    assert_eq!(r.code, 200);
    assert_eq!(names(&r.body), ["late"]);
}

#[tokio::test]
async fn selectors() {
    let s = server().await;
    let c = Client::new(&s);
    s.create(
        "pods",
        json!({"metadata": {"name": "a", "labels": {"env": "prod", "tier": "web"}}, "spec": {"nodeName": "n1", "containers": pod_spec()["containers"]}}),
    )
    .await
    .unwrap();
    s.create("pods", json!({"metadata": {"name": "b", "labels": {"env": "dev"}}, "spec": {"nodeName": "n2", "containers": pod_spec()["containers"]}}))
        .await
        .unwrap();
    s.patch_status("pods", "default", "b", &json!({"status": {"phase": "Running"}})).await.unwrap();
    s.create("pods", json!({"metadata": {"name": "c"}, "spec": pod_spec()})).await.unwrap();
    for (q, want) in [
        ("labelSelector=env%3Dprod", vec!["a"]),
        ("labelSelector=env%3D%3Dprod", vec!["a"]),
        ("labelSelector=env!%3Dprod", vec!["b", "c"]),
        ("labelSelector=env%20in%20(prod%2Cdev)", vec!["a", "b"]),
        ("labelSelector=env%20notin%20(prod)", vec!["b", "c"]),
        ("labelSelector=env", vec!["a", "b"]),
        ("labelSelector=!env", vec!["c"]),
        ("labelSelector=env%3Dprod%2Ctier%3Dweb", vec!["a"]),
        ("fieldSelector=metadata.name%3Db", vec!["b"]),
        ("fieldSelector=spec.nodeName%3Dn1", vec!["a"]),
        ("fieldSelector=status.phase%3DPending", vec!["a", "c"]),
        ("fieldSelector=status.phase!%3DPending", vec!["b"]),
        ("fieldSelector=metadata.namespace%3Ddefault&labelSelector=env", vec!["a", "b"]),
    ] {
        let r = c.get(&format!("{PODS}?{q}")).await;
        assert_eq!(r.code, 200, "{q}: {:?}", r.body);
        assert_eq!(names(&r.body), want, "{q}");
    }
}

#[tokio::test]
async fn list_option_validation() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get(&format!("{PODS}?resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    let r = c.get(&format!("{PODS}?resourceVersion=0&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 422);
    let r = c.get(&format!("{PODS}?resourceVersion=1&resourceVersionMatch=Bogus")).await;
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["reason"], "FieldValueNotSupported");
    let r = c.get(&format!("{PODS}?sendInitialEvents=true")).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
    );
    let r = c.get(&format!("{PODS}?resourceVersion=abc")).await;
    assert_eq!(r.code, 400);
    // A watch from RV ""/"0" is a streaming list once defaulted (resourceVersionMatch
    // NotOlderThan), which a continue token cannot go with.
    let r = c.get(&format!("{PODS}?watch=1&continue=abc")).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
    );
}

#[tokio::test]
async fn get_with_resource_version_reads_the_cache_no_older_than_it() {
    let s = informer_apiserver::testing::builder().too_large_rv_wait(Duration::from_millis(200)).start().await.unwrap();
    s.create("pods", pod("a", json!({}))).await.unwrap();
    let c = Client::new(&s);
    let pod_a = format!("{PODS}/a");
    for rv in ["0".to_string(), s.resource_version().to_string()] {
        let r = c.get(&format!("{pod_a}?resourceVersion={rv}")).await;
        assert_eq!(r.code, 200, "{rv}: {}", r.body);
        assert_eq!(r.body["metadata"]["name"], "a");
    }
    let fut = s.resource_version() + 5;
    let r = c.get(&format!("{pod_a}?resourceVersion={fut}")).await;
    assert_eq!(r.code, 504, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!("Timeout: Too large resource version: {fut}, current: {}", s.resource_version())
    );
    assert_eq!(r.body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    let r = c.get(&format!("{pod_a}?resourceVersion=abc")).await;
    assert_eq!(r.code, 500);
    assert_eq!(
        r.body["message"],
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
}

/// 10,000 objects of 4 KB, created in one call (on etcd: more than its request deadline allows
/// if sent all at once), come back whole in one LIST and in 20 pages of 500.
#[tokio::test]
async fn ten_thousand_objects_list_whole_and_in_pages() {
    let s = server().await;
    let big = "x".repeat(4000);
    let objs: Vec<Value> = (0..10_000)
        .map(|i| json!({"metadata": {"name": format!("p{i:05}"), "labels": {"app": "bench"}}, "spec": {"blob": big, "containers": pod_spec()["containers"]}}))
        .collect();
    s.create_many("pods", objs).await.unwrap();
    let c = Client::new(&s);
    let t = std::time::Instant::now();
    let r = c.get(PODS).await;
    let took = t.elapsed();
    assert_eq!(r.body["items"].as_array().unwrap().len(), 10_000);
    eprintln!("LIST 10k pods ({} bytes) took {took:?}", r.raw.len());
    let mut pages = 0;
    let mut tok = String::new();
    loop {
        let q = if tok.is_empty() { format!("{PODS}?limit=500") } else { format!("{PODS}?limit=500&continue={tok}") };
        let r = c.get(&q).await;
        pages += 1;
        match r.body["metadata"]["continue"].as_str() {
            Some(t) => tok = t.to_string(),
            None => break,
        }
    }
    assert_eq!(pages, 20);
}

/// A list larger than one chunk is sent as it is encoded (chunked transfer, no Content-Length),
/// and its bytes are those of the objects: every item equals the object read on its own, in whole
/// pods and in PartialObjectMetadata.
#[tokio::test]
async fn large_lists_stream_in_chunks_with_every_item_intact() {
    let s = server().await;
    let blob = "y".repeat(1500);
    let objs: Vec<Value> =
        (0..200).map(|i| json!({"metadata": {"name": format!("p{i:03}")}, "spec": {"blob": blob, "containers": pod_spec()["containers"]}})).collect();
    s.create_many("pods", objs).await.unwrap();
    let c = Client::new(&s);
    let r = c.get(PODS).await;
    assert_eq!(r.code, 200);
    assert!(r.raw.len() > 4 * 64 * 1024, "several chunks: {}", r.raw.len());
    assert!(r.headers.get("content-length").is_none(), "{:?}", r.headers);
    assert_eq!(r.headers.get("transfer-encoding").map(|v| v.to_str().unwrap()), Some("chunked"));
    let items = r.body["items"].as_array().expect("a whole list");
    assert_eq!(items.len(), 200);
    for (i, item) in items.iter().enumerate() {
        let mut one = c.get(&format!("{PODS}/p{i:03}")).await.body;
        let o = one.as_object_mut().unwrap();
        o.remove("kind");
        o.remove("apiVersion");
        assert_eq!(item, &one, "item {i}");
    }
    let meta = c.get_accepting(PODS, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").await;
    assert_eq!(meta.body["kind"], "PartialObjectMetadataList");
    let names: Vec<&str> =
        meta.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 200);
    assert_eq!((names[0], names[199]), ("p000", "p199"));
}

/// Field selectors read the fields kube computes (defaults of Go bools and integers, a pod's
/// first address, an Event's source), accept the labels kube's conversions accept and refuse the
/// others with its messages, after the list options are judged; kubectl's node query works.
#[tokio::test]
async fn field_selectors_read_and_refuse_as_kube_converts_them() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("nodes", json!({"metadata": {"name": "n1"}})).await.unwrap();
    s.create("nodes", json!({"metadata": {"name": "n2"}, "spec": {"unschedulable": true}})).await.unwrap();
    s.create(
        "pods",
        json!({"metadata": {"name": "a"}, "spec": {"nodeName": "n1", "containers": pod_spec()["containers"]}}),
    )
    .await
    .unwrap();
    let host =
        json!({"metadata": {"name": "b"}, "spec": {"hostNetwork": true, "containers": pod_spec()["containers"]}});
    s.create("pods", host).await.unwrap();
    s.patch_status("pods", "default", "a", &json!({"status": {"podIPs": [{"ip": "10.0.0.7"}]}})).await.unwrap();
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": pod_spec()["containers"]}}}});
    s.create("jobs", job).await.unwrap();
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"},
        "reason": "Started", "reportingComponent": "kubelet", "reportingInstance": "n1", "source": {}});
    s.create("events", event).await.unwrap();

    let names_at = |path: String| {
        let c = &c;
        async move {
            let r = c.get(&path).await;
            assert_eq!(r.code, 200, "{path}: {:?}", r.body);
            names(&r.body)
        }
    };
    assert_eq!(names_at("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse".into()).await, ["n1"]);
    assert_eq!(names_at("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue".into()).await, ["n2"]);
    assert_eq!(names_at(format!("{PODS}?fieldSelector=spec.hostNetwork%3Dfalse")).await, ["a"]);
    assert_eq!(names_at(format!("{PODS}?fieldSelector=status.podIP%3D10.0.0.7")).await, ["a"]);
    assert_eq!(names_at(format!("{PODS}?fieldSelector=spec.host%3Dn1")).await, ["a"]);
    assert_eq!(names_at(format!("{PODS}?fieldSelector=status.podIPs%3D")).await, ["a", "b"]);
    assert_eq!(names_at(format!("{PODS}?fieldSelector=%2Cmetadata.name%3Da%2C")).await, ["a"]);
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    assert_eq!(names_at(format!("{jobs}?fieldSelector=status.successful%3D0")).await, ["j"]);
    assert!(names_at(format!("{jobs}?fieldSelector=status.successful%3D1")).await.is_empty());
    let events = "/api/v1/namespaces/default/events";
    assert_eq!(names_at(format!("{events}?fieldSelector=source%3Dkubelet")).await, ["e"]);
    // A cluster-scoped kind of kube's default conversion takes `metadata.namespace`: its objects
    // have none.
    let volume = json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv"}}});
    s.create("persistentvolumes", volume).await.unwrap();
    assert_eq!(names_at("/api/v1/persistentvolumes?fieldSelector=metadata.namespace%3D".into()).await, ["pv"]);
    assert!(names_at("/api/v1/persistentvolumes?fieldSelector=metadata.namespace%3Ddefault".into()).await.is_empty());

    for (path, message) in [
        (format!("{PODS}?fieldSelector=spec.foo%3Dx"), "field label not supported: spec.foo"),
        (format!("{PODS}?fieldSelector=metadata.name%20%3Da"), "field label not supported: metadata.name "),
        (
            "/api/v1/namespaces/default/configmaps?fieldSelector=data.a%3Dx".into(),
            "\"data.a\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
        ("/api/v1/nodes?fieldSelector=metadata.namespace%3Dx".into(), "field label not supported: metadata.namespace"),
        (
            format!("{jobs}?fieldSelector=status.succeeded%3D1"),
            "field label \"status.succeeded\" not supported for batchv1.Job",
        ),
        (
            format!("{PODS}?fieldSelector=metadata.name%3Da%3Db"),
            "invalid field selector: unescaped character in value: 61",
        ),
        (format!("{PODS}?fieldSelector=phase"), "invalid selector: 'phase'; can't understand 'phase'"),
        (
            format!("{PODS}?labelSelector=a%3Db-"),
            "unable to parse requirement: values[0][a]: Invalid value: \"b-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        // The selectors' syntax is read before the list options are judged…
        (
            format!("{PODS}?labelSelector=-a&resourceVersionMatch=Exact"),
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ] {
        let r = c.get(&path).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{path}: {:?}", r.body);
        assert_eq!(r.body["message"], message, "{path}");
    }
    // …and the field labels after.
    let r = c.get(&format!("{PODS}?fieldSelector=spec.foo%3Dx&resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    // A collection delete judges its list options too, and deletes nothing.
    let r = c.delete(&format!("{PODS}?resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(names_at(PODS.into()).await, ["a", "b"]);

    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    let dir = tempdir("kubectl-field-selectors");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let args = ["get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &dir.join("cache"), &args).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(out.trim(), "node/n1", "{bin}");
    }
}

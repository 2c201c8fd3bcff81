//! Server-level behaviour: discovery, auth, fault injection, latency,
//! restart keeping state, kubeconfig.

mod common;

use std::time::Duration;

use common::*;
use informer_apiserver::ApiServer;
use serde_json::json;

#[tokio::test]
async fn discovery_documents() {
    let s = server().await;
    let c = Client::new(&s);
    let v = c.get("/version").await;
    assert_eq!(v.body["gitVersion"], "v1.35.0");
    assert_eq!(v.body["major"], "1");
    let api = c.get("/api").await;
    assert_eq!(api.body["kind"], "APIVersions");
    assert_eq!(api.body["versions"], json!(["v1"]));
    let v1 = c.get("/api/v1").await;
    assert_eq!(v1.body["kind"], "APIResourceList");
    assert_eq!(v1.body["groupVersion"], "v1");
    let pods = v1.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods").unwrap().clone();
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert!(pods["verbs"].as_array().unwrap().contains(&json!("watch")));
    let apis = c.get("/apis").await;
    assert_eq!(apis.body["kind"], "APIGroupList");
    // kube-apiserver lists its aggregator's group first, then apps.
    assert_eq!(apis.body["groups"][0]["name"], "apiregistration.k8s.io");
    assert_eq!(apis.body["groups"][1]["name"], "apps");
    assert_eq!(apis.body["groups"][1]["preferredVersion"]["groupVersion"], "apps/v1");
    let apps = c.get("/apis/apps/v1").await;
    assert_eq!(apps.body["groupVersion"], "apps/v1");
    let g = c.get("/apis/apps").await;
    assert_eq!(g.body["kind"], "APIGroup");
    assert_eq!(c.get("/healthz").await.code, 200);
}

#[tokio::test]
async fn custom_resource_registration() {
    let s = informer_apiserver::testing::builder()
        .register(
            informer_apiserver::ResourceInfo::new("example.com", "v1", "widgets", "Widget", true)
                .with_short_names(&["wd"]),
        )
        .start()
        .await
        .unwrap();
    let c = Client::new(&s);
    let r = c
        .post(
            "/apis/example.com/v1/namespaces/default/widgets",
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}),
        )
        .await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let l = c.get("/apis/example.com/v1/namespaces/default/widgets").await;
    assert_eq!(l.body["kind"], "WidgetList");
    assert_eq!(l.body["apiVersion"], "example.com/v1");
    assert_eq!(l.body["items"][0]["kind"], "Widget", "custom resource list items carry kind");
    let apis = c.get("/apis").await;
    assert!(apis.body["groups"].as_array().unwrap().iter().any(|g| g["name"] == "example.com"));
    assert_eq!(s.list("wd", None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn bearer_token_auth() {
    let s = informer_apiserver::testing::builder().token("sekret").start().await.unwrap();
    let r = Client::new(&s).get(PODS).await;
    assert_eq!(r.code, 401);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    let r = Client::new(&s).with_token("wrong").get(PODS).await;
    assert_eq!(r.code, 401);
    let r = Client::new(&s).with_token("sekret").get(PODS).await;
    assert_eq!(r.code, 200);
    assert!(s.kubeconfig_yaml().contains("token: sekret"));
    // Probes and version checks need no credentials (kube's system:public-info-viewer).
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        assert_eq!(Client::new(&s).get(path).await.code, 200, "{path}");
    }
    for path in ["/api", "/readyz/ping"] {
        assert_eq!(Client::new(&s).get(path).await.code, 401, "{path}");
    }
}

#[tokio::test]
async fn health_endpoints_list_their_checks_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    let text = |r: &Resp| String::from_utf8(r.raw.to_vec()).unwrap();
    let r = c.get("/readyz").await;
    assert_eq!((r.code, text(&r)), (200, "ok".to_string()));
    // kube-apiserver v1.35's checks, in its order.
    let hooks = [
        "start-apiserver-admission-initializer",
        "generic-apiserver-start-informers",
        "priority-and-fairness-config-consumer",
        "priority-and-fairness-filter",
        "storage-object-count-tracker-hook",
        "start-apiextensions-informers",
        "start-apiextensions-controllers",
        "crd-informer-synced",
        "start-system-namespaces-controller",
        "start-cluster-authentication-info-controller",
        "start-kube-apiserver-identity-lease-controller",
        "start-kube-apiserver-identity-lease-garbage-collector",
        "storage-readiness",
        "start-legacy-token-tracking-controller",
        "start-service-ip-repair-controllers",
        "rbac/bootstrap-roles",
        "scheduling/bootstrap-system-priority-classes",
        "priority-and-fairness-config-producer",
        "bootstrap-controller",
        "start-kubernetes-service-cidr-controller",
        "aggregator-reload-proxy-client-cert",
        "start-kube-aggregator-informers",
        "apiservice-status-local-available-controller",
        "apiservice-status-remote-available-controller",
        "apiservice-registration-controller",
        "apiservice-discovery-controller",
        "kube-apiserver-autoregistration",
    ];
    let hooks: String = hooks.iter().map(|h| format!("[+]poststarthook/{h} ok\n")).collect::<String>()
        + "[+]autoregister-completion ok\n[+]poststarthook/apiservice-openapi-controller ok\n\
           [+]poststarthook/apiservice-openapiv3-controller ok\n";
    let r = c.get("/readyz?verbose").await;
    let ready = format!("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n{hooks}");
    assert_eq!(text(&r), format!("{ready}[+]shutdown ok\nreadyz check passed\n"));
    let r = c.get("/livez?verbose=1").await;
    assert_eq!(text(&r), format!("[+]ping ok\n[+]log ok\n[+]etcd ok\n{hooks}livez check passed\n"));
    for path in ["/readyz/shutdown", "/readyz/etcd", "/livez/poststarthook/rbac/bootstrap-roles", "/healthz/log"] {
        let r = c.get(path).await;
        assert_eq!((r.code, text(&r)), (200, "ok".to_string()), "{path}");
    }
    for path in [
        "/readyz/nonesuch",
        "/livez/shutdown",
        "/readyz/",
        "/readyz//ping",
        "/readyz/poststarthook//rbac/bootstrap-roles",
    ] {
        assert_eq!(c.get(path).await.code, 404, "{path}");
    }
    s.controls().set_not_ready(true);
    let r = c.get("/readyz").await;
    assert_eq!(r.code, 500);
    assert_eq!(text(&r), format!("{ready}[-]shutdown failed: reason withheld\nreadyz check failed\n"));
    let r = c.get("/readyz/shutdown").await;
    assert_eq!((r.code, text(&r)), (500, "internal server error: process is shutting down\n".to_string()));
    // Excluded, a check passes whatever it finds; a name that is no check is warned about.
    let r = c.get("/readyz?exclude=shutdown").await;
    assert_eq!((r.code, text(&r)), (200, "ok".to_string()));
    let r = c.get("/readyz?exclude=shutdown&exclude=nope&exclude=etcd&verbose").await;
    let expected = format!(
        "{}[+]shutdown excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n",
        ready.replace("[+]etcd ok", "[+]etcd excluded: ok")
    );
    assert_eq!((r.code, text(&r)), (200, expected));
}

#[tokio::test]
async fn every_answer_carries_its_audit_id() {
    let s = server().await;
    let c = Client::new(&s);
    let mut seen = Vec::new();
    for path in ["/api", "/nope", "/api/v1/namespaces/missing"] {
        let r = c.get(path).await;
        let id = r.headers["audit-id"].to_str().unwrap().to_string();
        assert_eq!(id.len(), 36, "{path}: {id}");
        seen.push(id);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "a new id per request");
    let r = c.get_with_headers("/api", &[("audit-id", "my-request-1")]).await;
    assert_eq!(r.headers["audit-id"], "my-request-1");
}

#[tokio::test]
async fn aggregated_discovery_is_cached_by_its_etag() {
    let s = server().await;
    let c = Client::new(&s);
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let r = c.get_accepting("/apis", accept).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.headers["cache-control"], "public");
    let etag = r.headers["etag"].to_str().unwrap().to_string();
    assert!(etag.len() == 130 && etag.starts_with('"'), "{etag}");
    let again = c.get_with_headers("/apis", &[("accept", accept), ("if-none-match", &etag)]).await;
    assert_eq!(again.code, 304);
    assert!(again.raw.is_empty());
    // A new resource changes the document and its tag.
    define(&c, &crd_of("thing", "Thing", "Namespaced", json!({"type": "object"}))).await;
    let changed = c.get_with_headers("/apis", &[("accept", accept), ("if-none-match", &etag)]).await;
    assert_eq!(changed.code, 200);
    assert_ne!(changed.headers["etag"].to_str().unwrap(), etag);
}

#[tokio::test]
async fn curl_and_pretty_requests_get_indented_json() {
    let s = server().await;
    let c = Client::new(&s);
    let text = |r: &Resp| String::from_utf8(r.raw.to_vec()).unwrap();
    let compact = c.get("/api/v1/namespaces/default").await;
    assert!(!text(&compact).contains('\n'), "{}", text(&compact));
    let curl = c
        .send_as(http::Method::GET, "/api/v1/namespaces/default", Vec::new(), "application/json", Some("curl/8.5.0"))
        .await;
    assert!(
        text(&curl).starts_with(
            "{\n  \"kind\": \"Namespace\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\n    \"name\": \"default\","
        ),
        "{}",
        text(&curl)
    );
    assert_eq!(curl.body, compact.body);
    // A list, and an error, the same way; `pretty=false` wins over the User-Agent.
    let list = c.get("/api/v1/namespaces?pretty=true").await;
    assert!(text(&list).contains("\n  \"items\": [\n    {\n"), "{}", text(&list));
    let missing = c.get("/api/v1/namespaces/nope?pretty=1").await;
    assert_eq!(missing.code, 404);
    assert!(text(&missing).starts_with("{\n  \"kind\": \"Status\","), "{}", text(&missing));
    let plain = c
        .send_as(
            http::Method::GET,
            "/api/v1/namespaces/default?pretty=false",
            Vec::new(),
            "application/json",
            Some("curl/8.5.0"),
        )
        .await;
    assert!(!text(&plain).contains('\n'));
    // The version always is; the OpenAPI documents never are.
    assert!(text(&c.get("/version").await).starts_with("{\n  \"major\": "));
    let openapi =
        c.send_as(http::Method::GET, "/openapi/v3/api/v1", Vec::new(), "application/json", Some("curl/8.5.0")).await;
    assert!(!text(&openapi).starts_with("{\n"), "{}", &text(&openapi)[..40]);
}

#[tokio::test]
async fn injected_faults_and_latency() {
    let s = server().await;
    let c = Client::new(&s);
    s.fail_next_with_429(2, 7);
    for _ in 0..2 {
        let r = c.get(PODS).await;
        assert_eq!(r.code, 429);
        assert_eq!(r.headers.get("retry-after").unwrap(), "7");
        assert_eq!(r.body["reason"], "TooManyRequests");
        assert_eq!(r.body["details"]["retryAfterSeconds"], 7);
    }
    assert_eq!(c.get(PODS).await.code, 200);
    s.fail_next_with_500(1);
    let r = c.get(PODS).await;
    assert_eq!(r.code, 500);
    assert_eq!(r.body["reason"], "InternalError");
    assert_eq!(c.get(PODS).await.code, 200);
    s.set_latency(Duration::from_millis(150));
    let t = std::time::Instant::now();
    c.get(PODS).await;
    assert!(t.elapsed() >= Duration::from_millis(150));
    s.set_latency(Duration::ZERO);
}

#[tokio::test]
async fn restart_keeps_state_port_and_history_until_compaction() {
    let s = server().await;
    let addr = s.addr();
    let c = Client::new(&s);
    let rv0 = s.resource_version();
    c.post(PODS, &pod("a", json!({}))).await;
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv0}")).await;
    assert_eq!(w.next_within(SEC).await.unwrap()["type"], "ADDED");
    s.restart().await.unwrap();
    w.expect_end(SEC).await;
    assert_eq!(s.addr(), addr);
    assert!(s.wait_ready(SEC).await);
    let c = Client::new(&s);
    let g = c.get(&format!("{PODS}/a")).await;
    assert_eq!(g.code, 200);
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv0}")).await;
    let e = w.next_within(SEC).await.unwrap();
    if informer_apiserver::testing::backend() == informer_apiserver::testing::Backend::Etcd {
        // On etcd the rebuilt cache starts at the current revision, as kube-apiserver's.
        assert_eq!(e["type"], "ERROR");
        assert_eq!(e["object"]["code"], 410);
    } else {
        // The rebuilt cache still has the history: a watch from before the restart resumes.
        assert_eq!((e["type"].as_str(), e["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));
        // After a compaction, a restarted cache starts there: older watches get 410.
        let compacted = s.compact().await.unwrap();
        s.restart().await.unwrap();
        assert!(s.wait_ready(SEC).await);
        let c = Client::new(&s);
        let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv0}")).await;
        let e = w.next_within(SEC).await.unwrap();
        assert_eq!(e["type"], "ERROR");
        assert_eq!(e["object"]["message"], format!("too old resource version: {rv0} ({compacted})"));
    }
    // Watching from the current RV works and new writes get higher RVs.
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    let r = c.post(PODS, &pod("b", json!({}))).await;
    assert_eq!(rv_of(&r.body), rv + 1);
    assert_eq!(w.next_within(SEC).await.unwrap()["object"]["metadata"]["name"], "b");
    s.stop().await;
    assert!(!s.is_running().await);
    s.restart().await.unwrap();
    assert!(s.wait_ready(SEC).await);
    assert_eq!(Client::new(&s).get(&format!("{PODS}/b")).await.code, 200);
}

#[tokio::test]
async fn kubeconfig_file() {
    let s = server().await;
    let dir = std::env::temp_dir().join(format!("apiserver-kc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("config");
    s.write_kubeconfig(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(&format!("server: {}", s.url())));
    assert!(text.contains("current-context: informer"));
    std::fs::remove_dir_all(&dir).ok();
}

/// What the servers of these tests advertise: loopback, which the kubernetes Service's
/// endpoints never hold (so no lease of theirs moves the revisions; nor does an identity lease,
/// which they do without).
const ADVERTISED: [u8; 4] = [127, 0, 0, 1];

/// With a data directory, a new server on the same directory has every object, the RV counter
/// and the watch history: a watch from before the restart resumes without a relist.
#[tokio::test]
async fn data_dir_persists_objects_rv_and_history() {
    let dir = std::env::temp_dir().join(format!("apiserver-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let on_dir = || ApiServer::builder().data_dir(&dir).advertise_address(ADVERTISED.into()).apiserver_identity(false);
    let (rv, uid, before) = {
        let s = on_dir().start().await.unwrap();
        let before = s.resource_version();
        let p = s.create("pods", pod("keep", json!({"a": "b"}))).await.unwrap();
        create_namespaces(&s, &["x"]).await.unwrap();
        s.create("deployments.apps", json!({"metadata": {"name": "d", "namespace": "x"}, "spec": workload_spec("d")}))
            .await
            .unwrap();
        s.stop().await;
        (s.resource_version(), p["metadata"]["uid"].clone(), before)
    };
    let s = on_dir().start().await.unwrap();
    assert_eq!(s.resource_version(), rv);
    let p = s.get("pods", "default", "keep").await.unwrap();
    assert_eq!(p["metadata"]["uid"], uid);
    assert_eq!(s.list("deployments", None).await.unwrap().len(), 1);
    let names: Vec<String> = s
        .list("namespaces", None)
        .await
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system", "x"], "created once");
    let c = Client::new(&s);
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={before}")).await;
    let e = w.next_within(SEC).await.unwrap();
    assert_eq!((e["type"].as_str(), e["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("keep")));
    let n = s.create("pods", pod("new", json!({}))).await.unwrap();
    assert_eq!(rv_of(&n), rv + 1);
    assert_eq!(w.next_within(SEC).await.unwrap()["object"]["metadata"]["name"], "new");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn open_watches_and_request_counts() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(s.open_watches(), 0);
    c.get(PODS).await;
    c.post(PODS, &pod("a", json!({}))).await;
    let w = c.watch(&format!("{PODS}?watch=1&resourceVersion={}", s.resource_version())).await;
    assert!(s.wait_for_watches(1, SEC).await);
    assert_eq!(s.open_watches(), 1);
    let n = s.request_counts();
    assert_eq!((n.list, n.create, n.watch), (1, 1, 1));
    drop(w);
    // The watch task notices the closed stream when it next writes.
    s.create("pods", pod("b", json!({}))).await.unwrap();
    assert!(s.wait_for_watches_at_most(0, SEC).await);
}

/// A request head of tens of KiB (a label selector naming thousands of values) is served; one
/// past what a new connection buffers (64 KiB, at most twice that when reads bring more at once)
/// is refused with 431 rather than buffered.
#[tokio::test]
async fn long_request_heads_are_served_up_to_64_kib() {
    let s = server().await;
    s.create("pods", pod("web", json!({"app": "web"}))).await.unwrap();
    let c = Client::new(&s);
    let values: Vec<String> = (0..4000).map(|i| format!("v{i:05}")).collect();
    let selector = format!("app+in+(web,{})", values.join(","));
    assert!(selector.len() > 24 * 1024, "{}", selector.len());
    let r = c.get(&format!("{PODS}?labelSelector={selector}")).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    // A head past 128 KiB (a header of 200 KiB) gets 431 Request Header Fields Too Large.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!("GET {PODS} HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n", "x".repeat(200 * 1024));
    let _ = conn.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), conn.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
}

/// `/metrics` counts the requests served by verb, resource, scope and code, the watches open
/// and their events, and the objects of each resource, with kube-apiserver's names and labels.
#[tokio::test]
async fn metrics_count_requests_watches_and_objects_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let pods = "/api/v1/namespaces/fixtures/pods";
    let pod = json!({"metadata": {"name": "m"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert_eq!(c.post(pods, &pod).await.code, 201);
    assert_eq!(c.get(&format!("{pods}/m")).await.code, 200);
    assert_eq!(c.get(&format!("{pods}/nope")).await.code, 404);
    assert_eq!(c.get(pods).await.code, 200);
    // A list of one name by field selector is a LIST of the collection; a resource the server
    // does not serve is not counted.
    assert_eq!(c.get(&format!("{pods}?fieldSelector=metadata.name%3Dm")).await.code, 200);
    assert_eq!(c.get("/api/v1/namespaces/fixtures/nosuchthings").await.code, 404);
    let apply = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m", "labels": {"a": "b"}}});
    let r = c.patch(&format!("{pods}/m?fieldManager=x&dryRun=All"), "application/apply-patch+yaml", &apply).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let mut w = c.watch(&format!("{pods}?watch=1&timeoutSeconds=1")).await;
    assert!(w.next().await.is_some(), "the pod's ADDED event");

    // As Prometheus asks for them.
    let accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let metrics = c.get_accepting("/metrics", accept).await;
    assert_eq!(metrics.code, 200, "{}", String::from_utf8_lossy(&metrics.raw));
    let content_type = metrics.headers.get("content-type").and_then(|v| v.to_str().ok());
    assert_eq!(content_type, Some("text/plain; version=0.0.4; charset=utf-8"));
    let doc = String::from_utf8_lossy(&metrics.raw).into_owned();
    let series = |name: &str, labels: &str| {
        let prefix = format!("{name}{{{labels}}} ");
        doc.lines().find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
    };
    let request = |verb: &str, dry_run: &str, scope: &str, code: &str| {
        let labels = format!(
            "code=\"{code}\",component=\"apiserver\",dry_run=\"{dry_run}\",group=\"\",resource=\"pods\",\
             scope=\"{scope}\",subresource=\"\",verb=\"{verb}\",version=\"v1\""
        );
        series("apiserver_request_total", &labels)
    };
    assert_eq!(request("POST", "", "resource", "201").as_deref(), Some("1"), "{doc}");
    assert_eq!(request("GET", "", "resource", "200").as_deref(), Some("1"), "{doc}");
    assert_eq!(request("GET", "", "resource", "404").as_deref(), Some("1"), "{doc}");
    assert_eq!(request("LIST", "", "namespace", "200").as_deref(), Some("2"), "{doc}");
    assert!(!doc.contains("nosuchthings"), "{doc}");
    assert_eq!(request("APPLY", "All", "resource", "200").as_deref(), Some("1"), "{doc}");
    assert_eq!(request("WATCH", "", "namespace", "200"), None, "an open watch is not counted yet");
    let watch_labels = "component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",\
                        verb=\"WATCH\",version=\"v1\"";
    assert_eq!(series("apiserver_longrunning_requests", watch_labels).as_deref(), Some("1"), "{doc}");
    let events = "group=\"\",resource=\"pods\",version=\"v1\"";
    assert_eq!(series("apiserver_watch_events_total", events).as_deref(), Some("1"), "{doc}");
    assert_eq!(series("apiserver_resource_objects", "group=\"\",resource=\"pods\"").as_deref(), Some("1"), "{doc}");
    assert_eq!(series("apiserver_storage_objects", "resource=\"pods\"").as_deref(), Some("1"), "{doc}");
    let buckets = doc.lines().filter(|l| {
        l.starts_with("apiserver_request_duration_seconds_bucket{")
            && l.contains("verb=\"POST\"")
            && l.contains("resource=\"pods\"")
    });
    assert_eq!(buckets.count(), 24, "kube's 23 buckets and +Inf: {doc}");

    // Once the watch has ended, it is counted and no longer open.
    w.expect_end(EVENT).await;
    let doc = String::from_utf8_lossy(&c.get("/metrics").await.raw).into_owned();
    let watched = "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",\
                   resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 1";
    assert!(doc.contains(watched), "{doc}");
    assert!(doc.contains(&format!("apiserver_longrunning_requests{{{watch_labels}}} 0")), "{doc}");
    assert!(doc.contains("\n# TYPE apiserver_request_total counter\n") && !doc.contains("# EOF"), "{doc}");
}

/// `/metrics` also reports the server process as kube-apiserver's Prometheus client does: its
/// CPU time, file descriptors, memory, start time and network bytes, read from `/proc`, after the
/// `apiserver_*` families; every value written as Go writes a float64.
#[tokio::test]
async fn metrics_report_the_process_as_kubes_prometheus_client_does() {
    let s = server().await;
    let c = Client::new(&s);
    let doc = String::from_utf8_lossy(&c.get("/metrics").await.raw).into_owned();
    let value = |name: &str| -> f64 {
        let line = doc.lines().find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string));
        line.unwrap_or_else(|| panic!("no {name}: {doc}")).parse().unwrap()
    };
    let families: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
    let process: Vec<&str> = families.iter().copied().filter(|f| f.starts_with("process_")).collect();
    assert_eq!(
        process,
        [
            "process_cpu_seconds_total counter",
            "process_max_fds gauge",
            "process_network_receive_bytes_total counter",
            "process_network_transmit_bytes_total counter",
            "process_open_fds gauge",
            "process_resident_memory_bytes gauge",
            "process_start_time_seconds gauge",
            "process_virtual_memory_bytes gauge",
            "process_virtual_memory_max_bytes gauge",
        ]
    );
    assert!(families.last().unwrap().starts_with("process_"), "families in name order: {families:?}");
    assert!(doc.contains("\n# HELP process_resident_memory_bytes Resident memory size in bytes.\n"), "{doc}");

    // The values are this process's.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_rss_kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    let rss = value("process_resident_memory_bytes");
    assert!(rss > 0.5 * vm_rss_kib * 1024.0 && rss < 2.0 * vm_rss_kib * 1024.0, "{rss} against VmRSS {vm_rss_kib} KiB");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let started = value("process_start_time_seconds");
    assert!(started <= now + 1.0 && started > now - 24.0 * 3600.0, "{started} against {now}");
    let open = value("process_open_fds");
    assert!(open >= 3.0 && open <= value("process_max_fds"), "{open}");
    assert!(value("process_virtual_memory_bytes") >= rss);
    assert!(value("process_cpu_seconds_total") >= 0.0);
    // Go's float64 form: an exponent from 1e+06 on, in every family.
    let big = doc.lines().find(|l| l.starts_with("process_virtual_memory_bytes ")).unwrap();
    assert!(big.contains("e+"), "{big}");
    assert!(doc.lines().filter(|l| !l.starts_with('#')).all(|l| !l.ends_with(".0")), "{doc}");
}

/// Answers longer than 128 KiB are gzipped for clients whose `Accept-Encoding` names gzip, as
/// kube-apiserver compresses them; shorter ones and watches are not; kubectl (client-go, which
/// always asks for gzip) reads them.
#[tokio::test]
async fn long_answers_are_gzipped_for_clients_that_accept_it() {
    use std::io::Read;
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let cms = "/api/v1/namespaces/fixtures/configmaps";
    let data = "0123456789".repeat(400);
    for i in 0..40 {
        let cm = json!({"metadata": {"name": format!("cm-{i}")}, "data": {"d": data}});
        assert_eq!(c.post(cms, &cm).await.code, 201);
    }
    let plain = c.get(cms).await;
    assert!(plain.raw.len() > 128 * 1024 && plain.headers.get("content-encoding").is_none());
    let gunzip = |raw: &[u8]| {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw).read_to_end(&mut out).expect("gzip");
        out
    };
    let zipped = c.get_with_headers(cms, &[("accept-encoding", "gzip")]).await;
    assert_eq!(zipped.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    assert_eq!(zipped.headers.get("vary").map(|v| v.to_str().unwrap()), Some("Accept-Encoding"));
    assert!(zipped.raw.len() < plain.raw.len() / 10, "{} bytes", zipped.raw.len());
    assert_eq!(gunzip(&zipped.raw), plain.raw.to_vec());
    // In protobuf too.
    let pb = "application/vnd.kubernetes.protobuf";
    let r = c.get_with_headers(cms, &[("accept-encoding", "deflate, gzip"), ("accept", pb)]).await;
    assert_eq!(r.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    assert!(gunzip(&r.raw).starts_with(b"k8s\0"));
    // A short answer, and a header whose token is not `gzip` itself, get the bytes as they are.
    let one = c.get_with_headers(&format!("{cms}/cm-0"), &[("accept-encoding", "gzip")]).await;
    assert!(one.headers.get("content-encoding").is_none() && one.body["data"]["d"] == data);
    let q = c.get_with_headers(cms, &[("accept-encoding", "gzip;q=1.0")]).await;
    assert!(q.headers.get("content-encoding").is_none() && q.raw == plain.raw);
    let watch = format!("{cms}?watch=1&timeoutSeconds=1");
    let w = c.get_with_headers(&watch, &[("accept-encoding", "gzip")]).await;
    assert!(w.headers.get("content-encoding").is_none() && w.raw.len() > 128 * 1024);

    // The metrics, however short, when gzip wins against identity (Prometheus asks for gzip);
    // the OpenAPI v2 document from 1,400 bytes, varying on the encoding either way.
    let metrics = c.get_with_headers("/metrics", &[("accept-encoding", "gzip")]).await;
    assert_eq!(metrics.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    assert!(metrics.headers.get("vary").is_none());
    assert!(String::from_utf8(gunzip(&metrics.raw)).unwrap().contains("# TYPE apiserver_request_total counter"));
    let tie = c.get_with_headers("/metrics", &[("accept-encoding", "gzip, identity")]).await;
    assert!(tie.headers.get("content-encoding").is_none() && tie.raw.starts_with(b"# HELP"));
    let v2 = c.get_with_headers("/openapi/v2", &[("accept-encoding", "gzip")]).await;
    assert_eq!(v2.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    let vary: Vec<_> = v2.headers.get_all("vary").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(vary, ["Accept-Encoding", "Accept"]);
    let doc: serde_json::Value = serde_json::from_slice(&gunzip(&v2.raw)).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    let v2 = c.get("/openapi/v2").await;
    assert!(v2.headers.get("content-encoding").is_none() && v2.body["swagger"] == "2.0");
    assert_eq!(v2.headers.get("vary").map(|v| v.to_str().unwrap()), Some("Accept-Encoding"));

    let dir = common::tools::tempdir("gzip");
    let kc = dir.join("kubeconfig");
    s.write_kubeconfig(&kc).unwrap();
    for bin in common::tools::kubectl_versions() {
        let args = ["get", "configmaps", "-n", "fixtures", "-o", "name"];
        let (ok, out, err) = common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &args).await;
        assert!(ok, "{bin}: {err}");
        assert_eq!(out.lines().filter(|l| l.starts_with("configmap/cm-")).count(), 40, "{bin}: {out}");
    }
}

/// `GET /` lists the paths the server answers, as kube-apiserver's index does: sorted, indented,
/// custom resources' group-versions among them.
#[tokio::test]
async fn the_index_lists_every_root_path() {
    let s = server().await;
    let c = Client::new(&s);
    define(&c, &crd_of("gadget", "Gadget", "Namespaced", json!({"type": "object"}))).await;
    for path in ["/", "/index.html"] {
        let r = c.get_with_headers(path, &[("accept", "application/yaml")]).await;
        assert_eq!(r.code, 200, "{path}");
        assert_eq!(r.headers["content-type"], "application/json");
        assert!(r.raw.starts_with(b"{\n  \"paths\": [\n    \"/.well-known/openid-configuration\",\n"), "{:?}", r.raw);
        let paths: Vec<&str> = r.body["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        assert_eq!(paths, sorted);
        for p in ["/api/v1", "/apis/apps/v1", "/apis/example.com", "/apis/example.com/v1", "/readyz/ping", "/version"] {
            assert!(paths.contains(&p), "{p} missing from {paths:?}");
        }
        // Every path listed is served.
        for p in paths {
            assert_eq!(c.get(p).await.code, 200, "{p}");
        }
    }
}

/// A request's `timeout` parameter: a value Go cannot read is refused before anything else
/// (kube's 400); one that reads bounds the request.
#[tokio::test]
async fn the_timeout_parameter_is_read_as_kube_reads_it() {
    let s = server().await;
    let c = Client::new(&s);
    for (timeout, why) in [
        ("abc", "time: invalid duration \"abc\""),
        ("5", "time: missing unit in duration \"5\""),
        ("5x", "time: unknown unit \"x\" in duration \"5x\""),
    ] {
        let r = c.get(&format!("/api/v1/namespaces/default/configmaps?timeout={timeout}")).await;
        assert_eq!(r.code, 400);
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("invalid timeout specified in the request URL - {why}"), "reason": "BadRequest", "code": 400})
        );
    }
    for timeout in ["1s", "0", "-1s", "10m", "1.5h", ""] {
        let r = c.get(&format!("/api/v1/namespaces/default/configmaps?timeout={timeout}")).await;
        assert_eq!(r.code, 200, "{timeout}: {}", r.body);
    }
    // A watch's own `timeout` is not read as one.
    let _watching = c.watch("/api/v1/namespaces/default/configmaps?watch=1&timeout=abc").await;
}

/// A TLS connection speaks the HTTP version ALPN agreed on; one that agreed on none may speak
/// either, as its first bytes show.
#[tokio::test]
async fn tls_connections_speak_the_version_alpn_agreed_on_or_either_without() {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio_rustls::rustls;

    // A self-signed end-entity certificate, trusted by the clients as their one root.
    let dir = common::tools::tempdir("alpn");
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap().self_signed(&key).unwrap();
    let (cert, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certificate.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let s = informer_apiserver::testing::builder().tls(cert, key_file).start().await.unwrap();
    let addr: std::net::SocketAddr = s.url().trim_start_matches("https://").parse().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate.der().clone()).unwrap();
    let cases: [(&[&[u8]], http::Version); 4] = [
        (&[b"h2", b"http/1.1"], http::Version::HTTP_2),
        (&[b"http/1.1"], http::Version::HTTP_11),
        (&[], http::Version::HTTP_11),
        (&[], http::Version::HTTP_2),
    ];
    for (offered, version) in cases {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        config.alpn_protocols = offered.iter().map(|p| p.to_vec()).collect();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), offered.first().copied());
        let io = TokioIo::new(tls);
        let request = || http::Request::get("/version").header("host", "localhost").body(Empty::<bytes::Bytes>::new());
        let answer = if version == http::Version::HTTP_2 {
            let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.unwrap();
            tokio::spawn(conn);
            send.send_request(request().unwrap()).await
        } else {
            let (mut send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            send.send_request(request().unwrap()).await
        };
        let answer = answer.unwrap_or_else(|e| panic!("{offered:?} over {version:?}: {e}"));
        assert_eq!((answer.status().as_u16(), answer.version()), (200, version), "{offered:?}");
        let body: serde_json::Value = serde_json::from_slice(&answer.collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["gitVersion"], "v1.35.0");
    }
    std::fs::remove_dir_all(&dir).ok();
}

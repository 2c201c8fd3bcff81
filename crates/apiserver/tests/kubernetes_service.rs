//! The `default/kubernetes` Service over HTTP, as kube-apiserver v1.35 keeps it: there with its
//! Endpoints, EndpointSlice and IPAddress when the server answers, back when deleted or changed,
//! every server sharing the storage listed in its endpoints, a server shutting down gracefully
//! taking itself out, and `kubectl describe` showing where the API server is.

mod common;

use common::*;
use informer_apiserver::{ApiServer, GracefulShutdown};
use serde_json::{Value, json};

const SERVICE: &str = "/api/v1/namespaces/default/services/kubernetes";
const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints/kubernetes";
const SLICE: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes";

async fn advertising(ip: &str) -> ApiServer {
    informer_apiserver::testing::builder().advertise_address(ip.parse().unwrap()).start().await.expect("start")
}

/// A second server on `first`'s storage, advertising `ip`.
async fn replica(first: &ApiServer, ip: &str) -> ApiServer {
    informer_apiserver::testing::replica_of(first).advertise_address(ip.parse().unwrap()).start().await.expect("start")
}

fn https(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

fn ready(ips: &[&str]) -> Value {
    Value::Array(ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect())
}

fn endpoint_ips(eps: &Value) -> Vec<String> {
    eps["subsets"][0]["addresses"].as_array().into_iter().flatten().map(|a| a["ip"].as_str().unwrap().into()).collect()
}

#[tokio::test]
async fn the_service_and_its_endpoints_are_there_when_the_server_answers() {
    let s = advertising("192.0.2.10").await;
    let port = s.addr().port();
    let c = Client::new(&s);

    let svc = c.get(SERVICE).await;
    assert_eq!(svc.code, 200, "{}", svc.body);
    let svc = svc.body;
    assert_eq!(svc["metadata"]["labels"], json!({"component": "apiserver", "provider": "kubernetes"}));
    assert_eq!(
        svc["spec"],
        json!({
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
            "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "type": "ClusterIP",
            "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        })
    );
    assert_eq!(svc["metadata"]["managedFields"][0]["manager"], "kube-apiserver");
    let record = c.get("/apis/networking.k8s.io/v1/ipaddresses/10.96.0.1").await;
    assert_eq!(record.code, 200, "{}", record.body);
    assert_eq!(
        record.body["spec"]["parentRef"],
        json!({"resource": "services", "namespace": "default", "name": "kubernetes"})
    );

    let eps = c.get(ENDPOINTS).await;
    assert_eq!(eps.code, 200, "{}", eps.body);
    assert_eq!(eps.body["metadata"]["labels"], json!({"endpointslice.kubernetes.io/skip-mirror": "true"}));
    assert_eq!(eps.body["subsets"], json!([{"addresses": [{"ip": "192.0.2.10"}], "ports": https(port)}]));

    let slice = c.get(SLICE).await;
    assert_eq!(slice.code, 200, "{}", slice.body);
    assert_eq!(slice.body["metadata"]["labels"], json!({"kubernetes.io/service-name": "kubernetes"}));
    assert_eq!(slice.body["addressType"], "IPv4");
    assert_eq!(slice.body["endpoints"], ready(&["192.0.2.10"]));
    assert_eq!(slice.body["ports"], https(port));
}

#[tokio::test]
async fn deleted_or_changed_they_are_made_again() {
    let s = advertising("192.0.2.10").await;
    let port = s.addr().port();
    let c = Client::new(&s);
    let list_rv = |path: &'static str| {
        let c = &c;
        async move { c.get(path).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string() }
    };

    // The Service.
    let rv = list_rv("/api/v1/namespaces/default/services").await;
    let mut w = c.watch(&format!("/api/v1/namespaces/default/services?watch=1&resourceVersion={rv}")).await;
    assert_eq!(c.delete(SERVICE).await.code, 200);
    until(&mut w, "the Service deleted", |e| e["type"] == "DELETED").await;
    let back = until(&mut w, "the Service made again", |e| e["type"] == "ADDED").await;
    assert_eq!(back["object"]["spec"]["clusterIP"], "10.96.0.1");

    // The Endpoints, changed by someone else.
    let rv = list_rv("/api/v1/namespaces/default/endpoints").await;
    let mut w = c.watch(&format!("/api/v1/namespaces/default/endpoints?watch=1&resourceVersion={rv}")).await;
    let mut eps = c.get(ENDPOINTS).await.body;
    eps["subsets"][0]["addresses"] = json!([{"ip": "192.0.2.99"}]);
    eps["metadata"]["labels"] = json!({});
    assert_eq!(c.put(ENDPOINTS, &eps).await.code, 200);
    let fixed = until(&mut w, "the Endpoints put back", |e| endpoint_ips(&e["object"]) == ["192.0.2.10"]).await;
    assert_eq!(fixed["object"]["metadata"]["labels"], json!({"endpointslice.kubernetes.io/skip-mirror": "true"}));
    assert_eq!(fixed["object"]["subsets"][0]["ports"], https(port));

    // The EndpointSlice, deleted.
    let rv = list_rv("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices").await;
    let mut w = c
        .watch(&format!("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?watch=1&resourceVersion={rv}"))
        .await;
    assert_eq!(c.delete(SLICE).await.code, 200);
    let back = until(&mut w, "the EndpointSlice made again", |e| e["type"] == "ADDED").await;
    assert_eq!(back["object"]["endpoints"], ready(&["192.0.2.10"]));
}

#[tokio::test]
async fn every_server_on_the_storage_is_listed_and_a_graceful_shutdown_leaves() {
    let first = advertising("192.0.2.10").await;
    let port = first.addr().port();
    let c = Client::new(&first);
    let rv =
        c.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices").await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    let mut w = c
        .watch(&format!("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?watch=1&resourceVersion={rv}"))
        .await;

    // A second server joins: both addresses, in key order, its port (servers sharing a storage
    // are taken to share one; a server starting writes its own, as kube's start does), and the
    // first server leaves them so.
    let second = replica(&first, "192.0.2.11").await;
    let eps = c.get(ENDPOINTS).await.body;
    assert_eq!(endpoint_ips(&eps), ["192.0.2.10", "192.0.2.11"]);
    assert_eq!(eps["subsets"][0]["ports"], https(second.addr().port()));
    until(&mut w, "both servers in the slice", |e| e["object"]["endpoints"] == ready(&["192.0.2.10", "192.0.2.11"]))
        .await;
    assert_eq!(Client::new(&second).get(SERVICE).await.body["spec"]["clusterIP"], "10.96.0.1");

    // The second shuts down: only the first is left.
    second.shutdown_gracefully(GracefulShutdown::default()).await;
    assert_eq!(endpoint_ips(&c.get(ENDPOINTS).await.body), ["192.0.2.10"]);
    until(&mut w, "the second server gone from the slice", |e| e["object"]["endpoints"] == ready(&["192.0.2.10"]))
        .await;

    // The last one shutting down leaves no endpoint behind (read in the process: its watches
    // end with its shutdown).
    first.shutdown_gracefully(GracefulShutdown::default()).await;
    let gone = first.get("endpointslices.discovery.k8s.io", "default", "kubernetes").await.unwrap();
    assert!(gone["endpoints"].is_null() && gone["ports"].is_null(), "{gone}");
    let eps = first.get("endpoints", "default", "kubernetes").await.unwrap();
    assert!(eps.get("subsets").is_none(), "{eps}");

    // Serving again, it is back, on its port.
    let rv = rv_of(&gone);
    first.restart().await.unwrap();
    assert!(first.wait_ready(std::time::Duration::from_secs(20)).await);
    let mut w = c
        .watch(&format!("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?watch=1&resourceVersion={rv}"))
        .await;
    let back =
        until(&mut w, "the server back in the slice", |e| e["object"]["endpoints"] == ready(&["192.0.2.10"])).await;
    assert_eq!(back["object"]["ports"], https(port));
}

#[tokio::test]
async fn a_loopback_address_is_never_advertised() {
    let s = advertising("127.0.0.1").await;
    let c = Client::new(&s);
    assert_eq!(c.get(SERVICE).await.code, 200);
    assert_eq!(c.get(ENDPOINTS).await.code, 404);
    assert_eq!(c.get(SLICE).await.code, 404);
    // Not tried and refused: no lease was taken for it either (keys of every server of the
    // storage read: an etcd's prefix must be given).
    use informer_apiserver::storage::RangeRequest;
    let all = || RangeRequest { prefix: "/".into(), ..Default::default() };
    let keys = s.store().storage().range(all()).await.unwrap().kvs;
    assert!(keys.iter().all(|kv| !kv.key.ends_with("/masterleases/127.0.0.1")), "a lease was taken");
    // A server advertising a routable address takes one.
    let routable = advertising("192.0.2.77").await;
    let keys = routable.store().storage().range(all()).await.unwrap().kvs;
    assert!(keys.iter().any(|kv| kv.key.ends_with("/masterleases/192.0.2.77")));
}

#[tokio::test]
async fn kubectl_describes_where_the_api_server_is() {
    let s = advertising("192.0.2.10").await;
    let dir = common::tools::tempdir("kubernetes-service");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let (ok, text, err) =
        common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &["describe", "service", "kubernetes"]).await;
    assert!(ok, "{text}{err}");
    let line = |key: &str| {
        text.lines().find(|l| l.starts_with(key)).map(|l| l[key.len()..].trim().to_string()).unwrap_or_default()
    };
    assert_eq!(line("IP:"), "10.96.0.1");
    assert_eq!(line("Port:"), "https  443/TCP");
    assert_eq!(line("TargetPort:"), format!("{}/TCP", s.addr().port()));
    assert_eq!(line("Endpoints:"), format!("192.0.2.10:{}", s.addr().port()));
    assert_eq!(line("Labels:"), "component=apiserver");
}

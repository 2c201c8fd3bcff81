//! networking.k8s.io/v1 ServiceCIDRs and IPAddresses over HTTP: discovered as kube-apiserver
//! v1.35 lists them, the default `kubernetes` ServiceCIDR in place and ready from the start (and
//! back when deleted), kube's refusals of bad addresses, blocks and parents, the blocks that
//! may not change, a status that writes leave to the status subresource, tables as `kubectl get`
//! shows them, and kube-rs's typed clients.

mod common;

use common::tools::KubectlTables;
use common::*;
use serde_json::{Value, json};

const GROUP_PATH: &str = "/apis/networking.k8s.io/v1";
const CIDRS: &str = "/apis/networking.k8s.io/v1/servicecidrs";
const ADDRESSES: &str = "/apis/networking.k8s.io/v1/ipaddresses";

fn cidr(name: &str, blocks: &[&str]) -> Value {
    json!({"metadata": {"name": name}, "spec": {"cidrs": blocks}})
}

fn address(name: &str, parent: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"parentRef": parent}})
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["manager"].as_str().unwrap().into(), m["subresource"].as_str().unwrap_or("").into()))
        .collect()
}

#[tokio::test]
async fn the_kinds_are_discovered_cluster_scoped() {
    let s = server().await;
    let c = Client::new(&s);
    let v1 = c.get(GROUP_PATH).await;
    let found: Vec<(String, String, bool)> = v1.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().into(), r["kind"].as_str().unwrap().into(), r["namespaced"] == true))
        .collect();
    for (name, kind) in
        [("ipaddresses", "IPAddress"), ("servicecidrs", "ServiceCIDR"), ("servicecidrs/status", "ServiceCIDR")]
    {
        assert!(found.iter().any(|(n, k, namespaced)| n == name && k == kind && !namespaced), "{name} in {found:?}");
    }
    let singular = |name: &str| {
        v1.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap()["singularName"].clone()
    };
    assert_eq!((singular("ipaddresses"), singular("servicecidrs")), (json!("ipaddress"), json!("servicecidr")));
}

#[tokio::test]
async fn the_default_service_cidr_is_ready_from_the_start_and_comes_back() {
    let s = server().await;
    let c = Client::new(&s);
    let default = c.get(&format!("{CIDRS}/kubernetes")).await;
    assert_eq!(default.code, 200, "{}", default.body);
    let obj = default.body;
    assert_eq!(obj["spec"], json!({"cidrs": ["10.96.0.0/12"]}));
    let conditions = obj["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1);
    let ready = &conditions[0];
    assert_eq!(
        (&ready["type"], &ready["status"], &ready["reason"], &ready["message"]),
        (&json!("Ready"), &json!("True"), &json!(""), &json!("Kubernetes default Service CIDR is ready"))
    );
    assert!(ready["lastTransitionTime"].is_string());
    assert!(obj["metadata"].get("finalizers").is_none() && obj["metadata"].get("labels").is_none());
    assert_eq!(
        managers(&obj),
        [("kubernetes-service-cidr-controller".into(), "status".into()), ("kube-apiserver".into(), String::new())]
    );

    // Deleted, it is made again, and marked ready again.
    let rv = c.get(CIDRS).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{CIDRS}?watch=1&resourceVersion={rv}")).await;
    assert_eq!(c.delete(&format!("{CIDRS}/kubernetes")).await.code, 200);
    until(&mut w, "the deletion", |e| e["type"] == "DELETED").await;
    let back = until(&mut w, "the default ServiceCIDR ready again", |e| {
        e["object"]["metadata"]["name"] == "kubernetes" && e["object"]["status"]["conditions"][0]["status"] == "True"
    })
    .await;
    assert_ne!(back["object"]["metadata"]["uid"], obj["metadata"]["uid"]);
}

#[tokio::test]
async fn a_server_starting_on_data_without_it_makes_it_before_it_answers() {
    let dir = informer_apiserver::testing::temp_data_dir();
    let bare = informer_apiserver::ApiServer::builder().data_dir(&dir).default_namespaces(false).start().await;
    let s = bare.expect("start");
    let c = Client::new(&s);
    assert_eq!(c.get(&format!("{CIDRS}/kubernetes")).await.code, 404);
    drop(c);
    s.stop().await;
    drop(s);

    let s = informer_apiserver::ApiServer::builder().data_dir(&dir).start().await.expect("restart");
    let c = Client::new(&s);
    let default = c.get(&format!("{CIDRS}/kubernetes")).await;
    assert_eq!(default.code, 200, "{}", default.body);
    assert_eq!(default.body["status"]["conditions"][0]["status"], "True");
    drop(c);
    s.stop().await;
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn invalid_objects_get_kubes_causes() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(CIDRS, &cidr("none", &[])).await;
    assert_eq!(causes(&r), ["spec.cidrs: Required value: at least one CIDR required"]);
    assert_eq!(
        r.body["message"].as_str().unwrap().split(':').next(),
        Some("ServiceCIDR.networking.k8s.io \"none\" is invalid")
    );
    let r = c.post(CIDRS, &cidr("three", &["10.0.0.0/24", "10.1.0.0/24", "fd00::/64"])).await;
    assert_eq!(
        causes(&r),
        [
            "spec.cidrs: Invalid value: {\"CIDRs\":[\"10.0.0.0/24\",\"10.1.0.0/24\",\"fd00::/64\"]}: may only hold up to 2 values"
        ]
    );
    let r = c.post(CIDRS, &cidr("bad", &["10.0.0.1/24", "010.1.0.0/16"])).await;
    assert_eq!(
        causes(&r),
        [
            "spec.cidrs[0]: Invalid value: \"10.0.0.1/24\": must not have bits set beyond the prefix length",
            "spec.cidrs[1]: Invalid value: \"010.1.0.0/16\": must not have leading 0s in IP or prefix length",
            "spec.cidrs: Invalid value: [\"10.0.0.1/24\",\"010.1.0.0/16\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ]
    );
    let r = c.post(CIDRS, &cidr("upper", &["2001:DB8::/64"])).await;
    assert_eq!(
        causes(&r),
        ["spec.cidrs[0]: Invalid value: \"2001:DB8::/64\": must be in canonical form (\"2001:db8::/64\")"]
    );

    let parent = json!({"resource": "services", "namespace": "default", "name": "web"});
    let r = c.post(ADDRESSES, &address("10.96.0.010", parent.clone())).await;
    assert_eq!(causes(&r), ["metadata.name: Invalid value: \"10.96.0.010\": must not have leading 0s"]);
    let r = c.post(ADDRESSES, &address("2001:db8:0::1", parent.clone())).await;
    assert_eq!(
        causes(&r),
        ["metadata.name: Invalid value: \"2001:db8:0::1\": must be in canonical form (\"2001:db8::1\")"]
    );
    let r = c.post(ADDRESSES, &json!({"metadata": {"name": "10.96.0.20"}, "spec": {}})).await;
    assert_eq!(causes(&r), ["spec.parentRef: Required value"]);
    let r = c
        .post(
            ADDRESSES,
            &address("10.96.0.21", json!({"group": "Bad_Group", "resource": "", "namespace": "a/b", "name": ".."})),
        )
        .await;
    assert_eq!(
        causes(&r),
        [
            "spec.parentRef.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.parentRef.resource: Required value",
            "spec.parentRef.name: Invalid value: \"..\": may not be '..'",
            "spec.parentRef.namespace: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
}

#[tokio::test]
async fn blocks_and_parents_do_not_change() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CIDRS, &cidr("single", &["10.100.0.0/16"])).await.code, 201);
    let path = format!("{CIDRS}/single");
    let patch = |cidrs: Value| json!({"spec": {"cidrs": cidrs}});
    let merge = "application/merge-patch+json";
    let r = c.patch(&path, merge, &patch(json!(["10.101.0.0/16"]))).await;
    assert_eq!(causes(&r), ["spec.cidrs[0]: Invalid value: \"10.101.0.0/16\": field is immutable"]);
    let r = c.patch(&path, merge, &patch(json!(["10.100.0.0/16", "10.102.0.0/16"]))).await;
    assert_eq!(
        causes(&r),
        [
            "spec.cidrs: Invalid value: [\"10.100.0.0/16\",\"10.102.0.0/16\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
        ]
    );
    // A single block gains one of the other family; then nothing more changes.
    let r = c.patch(&path, merge, &patch(json!(["10.100.0.0/16", "fd00:10:100::/112"]))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c.patch(&path, merge, &patch(json!(["10.100.0.0/16"]))).await;
    assert_eq!(causes(&r), ["spec.cidrs: Invalid value: [\"10.100.0.0/16\"]: field is immutable"]);

    let parent = json!({"resource": "services", "namespace": "default", "name": "web"});
    let r = c.post(ADDRESSES, &address("10.100.0.5", parent)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c.patch(&format!("{ADDRESSES}/10.100.0.5"), merge, &json!({"spec": {"parentRef": {"name": "api"}}})).await;
    assert_eq!(
        causes(&r),
        [
            "spec.parentRef: Invalid value: {\"Group\":\"\",\"Resource\":\"services\",\"Namespace\":\"default\",\"Name\":\"api\"}: field is immutable"
        ]
    );
    // (The stored form leaves the core group out: saying it is no change.)
    let r = c.patch(&format!("{ADDRESSES}/10.100.0.5"), merge, &json!({"spec": {"parentRef": {"group": ""}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // kube names an IPAddress by its generateName as it is.
    let mut generated = address("", json!({"resource": "services", "namespace": "default", "name": "web"}));
    generated["metadata"] = json!({"generateName": "10.100.0.6"});
    let r = c.post(ADDRESSES, &generated).await;
    assert_eq!((r.code, &r.body["metadata"]["name"]), (201, &json!("10.100.0.6")), "{}", r.body);
    let r = c.delete(&format!("{ADDRESSES}/10.100.0.5")).await;
    assert_eq!((r.code, &r.body["kind"], &r.body["status"]), (200, &json!("Status"), &json!("Success")));
}

#[tokio::test]
async fn the_status_is_kept_by_creates_and_written_through_its_subresource() {
    let s = server().await;
    let c = Client::new(&s);
    let mut body = cidr("given", &["10.110.0.0/16"]);
    body["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "", "message": "set",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let created = c.post(CIDRS, &body).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["status"]["conditions"][0]["message"], "set", "kube's strategy keeps it");
    let path = format!("{CIDRS}/given/status");
    let mut write = created.body.clone();
    write["spec"]["cidrs"] = json!(["10.111.0.0/16"]);
    write["metadata"]["labels"] = json!({"a": "b"});
    write["status"]["conditions"][0]["message"] = json!("changed");
    let r = c.put(&path, &write).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["cidrs"], json!(["10.110.0.0/16"]), "a status write keeps the spec");
    assert!(r.body["metadata"].get("labels").is_none(), "and the metadata");
    assert_eq!(r.body["status"]["conditions"][0]["message"], "changed");
}

#[tokio::test]
async fn kubectl_prints_the_kinds_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(CIDRS, &cidr("dual", &["10.120.0.0/16", "fd00:120::/112"])).await.code, 201);
    let parent = json!({"group": "gateway.networking.k8s.io", "resource": "Gateways", "name": "gw"});
    assert_eq!(c.post(ADDRESSES, &address("10.120.0.9", parent)).await.code, 201);
    let parent = json!({"resource": "services", "namespace": "default", "name": "web"});
    assert_eq!(c.post(ADDRESSES, &address("fd00:120::9", parent)).await.code, 201);
    let kubectl = KubectlTables::new(&s, "kubectl-servicecidrs");
    let rows = kubectl.get("servicecidrs").await;
    assert_eq!(rows[0], ["NAME", "CIDRS", "AGE"]);
    assert_eq!(rows[1][..2], ["dual", "10.120.0.0/16,fd00:120::/112"]);
    assert_eq!(rows[2][..2], ["kubernetes", "10.96.0.0/12"]);
    let rows = kubectl.get("ipaddresses").await;
    assert_eq!(rows[0], ["NAME", "PARENTREF"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap().clone();
    assert_eq!(row("10.120.0.9"), ["10.120.0.9", "gateways.gateway.networking.k8s.io/gw"]);
    assert_eq!(row("fd00:120::9"), ["fd00:120::9", "services/default/web"]);
}

#[tokio::test]
async fn kube_rs_reads_and_writes_the_kinds_typed() {
    use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
    use kube::api::{Api, PostParams};
    let s = server().await;
    let client = kube_client(&s).await;
    let cidrs: Api<ServiceCIDR> = Api::all(client.clone());
    let default = cidrs.get("kubernetes").await.unwrap();
    assert_eq!(default.spec.unwrap().cidrs, Some(vec!["10.96.0.0/12".to_string()]));
    let typed: ServiceCIDR = serde_json::from_value(cidr("typed", &["10.130.0.0/16"])).unwrap();
    cidrs.create(&PostParams::default(), &typed).await.unwrap();
    let addresses: Api<IPAddress> = Api::all(client);
    let parent = json!({"resource": "services", "namespace": "default", "name": "web"});
    let typed: IPAddress = serde_json::from_value(address("10.130.0.7", parent)).unwrap();
    let created = addresses.create(&PostParams::default(), &typed).await.unwrap();
    assert_eq!(created.spec.unwrap().parent_ref.name, "web");
}

const SERVICES: &str = "/api/v1/namespaces/default/services";

fn service(name: &str, cluster_ip: Option<&str>) -> Value {
    let mut s = json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}], "selector": {"app": name}}});
    if let Some(ip) = cluster_ip {
        s["spec"]["clusterIP"] = json!(ip);
    }
    s
}

fn rv(o: &Value) -> u64 {
    o["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_services_cluster_ip_is_recorded_before_the_service() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(SERVICES, &service("web", None)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let ip = created.body["spec"]["clusterIP"].as_str().unwrap().to_string();
    let record = c.get(&format!("{ADDRESSES}/{ip}")).await;
    assert_eq!(record.code, 200, "{}", record.body);
    let a = &record.body;
    assert_eq!(
        a["metadata"]["labels"],
        json!({"ipaddress.kubernetes.io/ip-family": "IPv4", "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
    );
    assert_eq!(a["spec"]["parentRef"], json!({"resource": "services", "namespace": "default", "name": "web"}));
    assert_eq!(managers(a), [("kube-apiserver".into(), String::new())]);
    assert!(rv(a) < rv(&created.body), "written before the Service");

    // An address asked for is checked against the IPAddresses, whoever wrote them.
    let parent = json!({"resource": "gateways", "group": "gateway.networking.k8s.io", "name": "gw"});
    assert_eq!(c.post(ADDRESSES, &address("10.96.100.100", parent)).await.code, 201);
    let r = c.post(SERVICES, &service("taken", Some("10.96.100.100"))).await;
    assert_eq!(
        causes(&r),
        [
            "spec.clusterIPs: Invalid value: [\"10.96.100.100\"]: failed to allocate IP 10.96.100.100: provided IP is already allocated"
        ]
    );
    // A dry run writes no IPAddress: as kube's dry-run allocator, it checks only that an address
    // asked for may be given, and shows the range's network address where it would choose one.
    let dry = c.post(&format!("{SERVICES}?dryRun=All"), &service("dry", None)).await;
    assert_eq!((dry.code, &dry.body["spec"]["clusterIP"]), (201, &json!("10.96.0.0")), "{}", dry.body);
    let dry = c.post(&format!("{SERVICES}?dryRun=All"), &service("dry", Some("10.96.100.100"))).await;
    assert_eq!(dry.code, 201, "{}", dry.body);
    let dry = c.post(&format!("{SERVICES}?dryRun=All"), &service("dry", Some("10.200.0.1"))).await;
    assert_eq!(
        causes(&dry),
        [
            "spec.clusterIPs: Invalid value: [\"10.200.0.1\"]: failed to allocate IP 10.200.0.1: the provided IP (10.200.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
        ]
    );
    let listed = c.get(ADDRESSES).await.body["items"].as_array().unwrap().len();
    assert_eq!(listed, 3, "the kubernetes Service's, this Service's and the one written by hand");
    // A Service whose write fails leaves no IPAddress behind.
    let r = c.post(SERVICES, &service("web", Some("10.96.100.101"))).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.100.101")).await.code, 404);
}

#[tokio::test]
async fn a_service_may_ask_for_an_address_of_any_service_cidr_in_use() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(SERVICES, &service("outside", Some("10.200.0.10"))).await;
    assert_eq!(
        causes(&r),
        [
            "spec.clusterIPs: Invalid value: [\"10.200.0.10\"]: failed to allocate IP 10.200.0.10: the provided network does not match the current range"
        ]
    );
    assert_eq!(c.post(CIDRS, &cidr("extra", &["10.200.0.0/16"])).await.code, 201);
    let r = c.post(SERVICES, &service("inside", Some("10.200.0.10"))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let record = c.get(&format!("{ADDRESSES}/10.200.0.10")).await;
    assert_eq!(record.body["spec"]["parentRef"]["name"], "inside");
    // Not the block's network or broadcast address, nor one of a block being given up.
    let mismatch = |ip: &str| {
        format!(
            "spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: the provided network does not match the current range"
        )
    };
    let r = c.post(SERVICES, &service("network", Some("10.200.0.0"))).await;
    assert_eq!(causes(&r), [mismatch("10.200.0.0")]);
    let r = c.post(SERVICES, &service("broadcast", Some("10.200.255.255"))).await;
    assert_eq!(causes(&r), [mismatch("10.200.255.255")]);
    let r = c
        .patch(
            &format!("{CIDRS}/extra/status"),
            "application/merge-patch+json",
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Terminating",
                "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c.post(SERVICES, &service("not-ready", Some("10.200.0.11"))).await;
    assert_eq!(causes(&r), [mismatch("10.200.0.11")]);
}

#[tokio::test]
async fn addresses_are_released_with_their_service_and_repaired() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(SERVICES, &service("web", Some("10.96.50.1"))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let start = c.get(ADDRESSES).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{ADDRESSES}?watch=1&resourceVersion={start}")).await;
    let event = |kind: &'static str, ip: &'static str| {
        move |e: &Value| e["type"] == kind && e["object"]["metadata"]["name"] == ip
    };

    // A deleted record comes back; a record naming a Service that holds another address goes.
    assert_eq!(c.delete(&format!("{ADDRESSES}/10.96.50.1")).await.code, 200);
    until(&mut w, "the record back", event("ADDED", "10.96.50.1")).await;
    let mut stray = address("10.96.50.2", json!({"resource": "services", "namespace": "default", "name": "web"}));
    stray["metadata"]["labels"] = json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
        "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"});
    assert_eq!(c.post(ADDRESSES, &stray).await.code, 201);
    until(&mut w, "the stray record gone", event("DELETED", "10.96.50.2")).await;

    // Turned ExternalName, the Service gives its address up before the answer; turned back, it
    // may take the same one again (a dry run shows where it would be given one, writing none).
    let external = json!({"spec": {"type": "ExternalName", "externalName": "example.org", "clusterIP": null,
        "clusterIPs": null, "selector": null}});
    let path = format!("{SERVICES}/web");
    let r = c.patch(&path, "application/merge-patch+json", &external).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.50.1")).await.code, 404);
    let dry = json!({"spec": {"type": "ClusterIP", "externalName": null}});
    let r = c.patch(&format!("{path}?dryRun=All"), "application/merge-patch+json", &dry).await;
    assert_eq!((r.code, &r.body["spec"]["clusterIP"]), (200, &json!("10.96.0.0")), "{}", r.body);
    let back = json!({"spec": {"type": "ClusterIP", "externalName": null, "clusterIP": "10.96.50.1"}});
    let r = c.patch(&path, "application/merge-patch+json", &back).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.50.1")).await.code, 200);

    // Deleted, the Service gives its address up before the answer: a new Service may take it.
    assert_eq!(c.delete(&path).await.code, 200);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.50.1")).await.code, 404);
    let again = c.post(SERVICES, &service("again", Some("10.96.50.1"))).await;
    assert_eq!(again.code, 201, "{}", again.body);

    // A Service held by a finalizer gives its address up when a write of its status removes the
    // last one and it goes.
    let mut held = service("held", Some("10.96.50.4"));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(c.post(SERVICES, &held).await.code, 201);
    assert_eq!(c.delete(&format!("{SERVICES}/held")).await.code, 200);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.50.4")).await.code, 200, "kept while the Service is");
    let mut last = c.get(&format!("{SERVICES}/held")).await.body;
    last["metadata"]["finalizers"] = json!([]);
    let r = c.put(&format!("{SERVICES}/held/status"), &last).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{SERVICES}/held")).await.code, 404);
    assert_eq!(c.get(&format!("{ADDRESSES}/10.96.50.4")).await.code, 404);
}

#[tokio::test]
async fn an_address_that_cannot_be_recorded_is_refused_as_kube_refuses_it() {
    // A policy that refuses every IPAddress: the allocator's record fails.
    let s = server().await;
    let c = Client::new(&s);
    let admission = "/apis/admissionregistration.k8s.io/v1";
    let policy = json!({"metadata": {"name": "no-addresses"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["ipaddresses"]}]},
        "validations": [{"expression": "false", "message": "no addresses"}]}});
    let r = c.post(&format!("{admission}/validatingadmissionpolicies"), &policy).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let binding = json!({"metadata": {"name": "no-addresses"},
        "spec": {"policyName": "no-addresses", "validationActions": ["Deny"]}});
    let r = c.post(&format!("{admission}/validatingadmissionpolicybindings"), &binding).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // (A consistent read: the cache admission reads holds both.)
    assert_eq!(c.get(&format!("{admission}/validatingadmissionpolicybindings")).await.code, 200);

    let denied = |ip: &str| {
        format!(
            "ipaddresses.networking.k8s.io \"{ip}\" is forbidden: ValidatingAdmissionPolicy 'no-addresses' with \
             binding 'no-addresses' denied request: no addresses"
        )
    };
    let r = c.post(SERVICES, &service("asked", Some("10.96.60.1"))).await;
    assert_eq!(
        causes(&r),
        [format!(
            "spec.clusterIPs: Invalid value: [\"10.96.60.1\"]: failed to allocate IP 10.96.60.1: {}",
            denied("10.96.60.1")
        )]
    );
    // An address the server chose is tried again, then refused as an internal error.
    let r = c.post(SERVICES, &service("chosen", None)).await;
    assert_eq!((r.code, &r.body["reason"]), (500, &json!("InternalError")), "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error occurred: failed to allocate a serviceIP: ipaddresses.networking.k8s.io"),
        "{message}"
    );
    let names: Vec<Value> =
        c.get(SERVICES).await.body["items"].as_array().unwrap().iter().map(|s| s["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("kubernetes")], "no Service was written");
}

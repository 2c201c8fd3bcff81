//! A Service's addresses, families, load balancer fields and load balancer status, judged over
//! HTTP as kube-apiserver judges them on a single-stack IPv4 cluster (nothing stored on
//! refusal), and what kubectl and the Python client see of it.

mod common;

use common::*;
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";
const MERGE: &str = "application/merge-patch+json";

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("ports").is_none() {
        spec["ports"] = json!([{"port": 80}]);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn addresses_and_families_are_judged_before_allocation() {
    let s = server().await;
    let c = Client::new(&s);
    let cases = [
        (
            json!({"clusterIP": "192.168.0.10"}),
            "spec.clusterIPs: Invalid value: [\"192.168.0.10\"]: failed to allocate IP 192.168.0.10: the provided \
             network does not match the current range",
        ),
        (
            json!({"ipFamilies": ["IPv6"]}),
            "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster",
        ),
        (
            json!({"clusterIP": "fd00::10"}),
            "spec.clusterIPs[0]: Invalid value: [\"fd00::10\"]: IPv6 is not configured on this cluster",
        ),
        (
            json!({"ipFamilyPolicy": "RequireDualStack", "selector": {"app": "a"}}),
            "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack \
             services",
        ),
        (
            // Only these faults: kube answers before it looks at the ports.
            json!({"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.21"], "ports": [{"port": 0}]}),
            "spec.clusterIPs: Invalid value: [\"10.96.0.21\"]: first value must match `clusterIP`",
        ),
    ];
    for (spec, want) in cases {
        let r = c.post(SERVICES, &service("addr", spec.clone())).await;
        assert_eq!(r.code, 422, "{spec}: {}", r.body);
        assert_eq!(r.body["message"], format!("Service \"addr\" is invalid: {want}"), "{spec}");
        assert_eq!(c.get(&format!("{SERVICES}/addr")).await.code, 404);
    }
    // Headless without a selector: both families, as kube gives them.
    let r = c.post(SERVICES, &service("headless", json!({"clusterIP": "None"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        (&r.body["spec"]["ipFamilyPolicy"], &r.body["spec"]["ipFamilies"]),
        (&json!("RequireDualStack"), &json!(["IPv4", "IPv6"]))
    );
    // Made single-stack, it gives up its second family, as kube trims it.
    let single = json!({"spec": {"ipFamilyPolicy": "SingleStack"}});
    let r = c.patch(&format!("{SERVICES}/headless"), MERGE, &single).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["ipFamilies"], json!(["IPv4"]));
    // Empty lists are Go's nil ones.
    let r = c
        .post(SERVICES, &service("empty-lists", json!({"clusterIP": "10.96.0.60", "clusterIPs": [], "ipFamilies": []})))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        (&r.body["spec"]["clusterIPs"], &r.body["spec"]["ipFamilies"]),
        (&json!(["10.96.0.60"]), &json!(["IPv4"]))
    );
    // An address with leading zeros is claimed and kept as written.
    let r = c.post(SERVICES, &service("zeros", json!({"clusterIP": "010.96.0.50"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        (&r.body["spec"]["clusterIP"], &r.body["spec"]["clusterIPs"]),
        (&json!("010.96.0.50"), &json!(["010.96.0.50"]))
    );
    let r = c.post(SERVICES, &service("same", json!({"clusterIP": "10.96.0.50"}))).await;
    assert_eq!(
        r.body["message"],
        "Service \"same\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.50\"]: failed to allocate IP \
         10.96.0.50: provided IP is already allocated"
    );
}

#[tokio::test]
async fn load_balancer_fields_and_status_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let misplaced = service(
        "lb",
        json!({"allocateLoadBalancerNodePorts": true, "loadBalancerClass": "example.com/lb",
            "loadBalancerSourceRanges": ["10.0.0.0/8"], "externalIPs": ["127.0.0.1"],
            "ports": [{"port": 80, "appProtocol": "a/b/c"}], "internalTrafficPolicy": "Node"}),
    );
    let r = c.post(SERVICES, &misplaced).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"lb\" is invalid: [spec.ports[0].appProtocol: Invalid value: \"a/b/c\": a valid label key must \
         consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character \
         (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. \
         'example.com/MyName'), \
         spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128), \
         spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer', \
         spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer', \
         spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer', \
         spec.internalTrafficPolicy: Unsupported value: \"Node\": supported values: \"Cluster\", \"Local\"]"
    );
    assert_eq!(c.get(&format!("{SERVICES}/lb")).await.code, 404);
    let balancer = service(
        "lb",
        json!({"type": "LoadBalancer", "loadBalancerClass": "example.com/lb", "loadBalancerSourceRanges": [" 10.0.0.0/8 "]}),
    );
    let r = c.post(SERVICES, &balancer).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r =
        c.patch(&format!("{SERVICES}/lb"), MERGE, &json!({"spec": {"loadBalancerClass": "example.com/other"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"lb\" is invalid: spec.loadBalancerClass: Invalid value: \"example.com/other\": may not change once set"
    );
    // An update of the annotations alone is judged on them.
    let annotated = json!({"metadata": {"annotations": {"service.kubernetes.io/topology-mode": "Auto",
        "service.kubernetes.io/topology-aware-hints": "Disabled"}}});
    let r = c.patch(&format!("{SERVICES}/lb"), MERGE, &annotated).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"lb\" is invalid: metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: \
         \"Auto\": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified"
    );
    // A load balancer controller publishes its address; a host name that is an address is not one.
    let published = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
    let r = c.patch(&format!("{SERVICES}/lb/status"), MERGE, &published).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["loadBalancer"]["ingress"], json!([{"ip": "203.0.113.7", "ipMode": "VIP"}]));
    let bad = json!({"status": {"loadBalancer": {"ingress": [{"hostname": "203.0.113.8", "ipMode": "Proxy"}]}}});
    let r = c.patch(&format!("{SERVICES}/lb/status"), MERGE, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"lb\" is invalid: [status.loadBalancer.ingress[0].ipMode: Forbidden: may not be specified when `ip` \
         is not set, status.loadBalancer.ingress[0].hostname: Invalid value: \"203.0.113.8\": must be a DNS name, not \
         an IP address]"
    );
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_address_rules() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-service-addresses");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let args = ["create", "service", "clusterip", "far", "--tcp=80:8080", "--clusterip=192.168.0.10"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains("failed to allocate IP 192.168.0.10: the provided network does not match the current range"),
            "{bin}: {err}"
        );
        assert_eq!(c.get(&format!("{SERVICES}/far")).await.code, 404);
    }
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
svc = client.V1Service(metadata=client.V1ObjectMeta(name="lb"), spec=client.V1ServiceSpec(
    type="LoadBalancer", selector={"app": "web"}, ports=[client.V1ServicePort(port=80)]))
core.create_namespaced_service("default", svc)
try:
    core.patch_namespaced_service_status("lb", "default",
        {"status": {"loadBalancer": {"ingress": [{"ip": "not-an-ip"}]}}})
    print(json.dumps({"patched": True}))
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["status"], 422, "{line}");
    assert_eq!(
        line["body"]["message"],
        "Service \"lb\" is invalid: status.loadBalancer.ingress[0].ip: Invalid value: \"not-an-ip\": must be a valid IP \
         address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! Services are judged as kube-apiserver judges them, over HTTP and through kubectl: ports,
//! types and addresses, with kube's messages; nothing refused is stored. Node ports are given as
//! kube gives them, and read back by kubectl and the Python client.

mod common;

use common::*;
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";
const MERGE: &str = "application/merge-patch+json";

#[tokio::test]
async fn services_are_judged_over_http() {
    let s = server().await;
    let c = Client::new(&s);
    let two_unnamed = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "HTTPS"}]}});
    let r = c.post(SERVICES, &two_unnamed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"web\" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value, \
         spec.ports[1].targetPort: Invalid value: \"HTTPS\": must contain only alpha-numeric characters (a-z, 0-9), \
         and hyphens (-), spec.ports[1].targetPort: Invalid value: \"HTTPS\": must contain at least one letter (a-z)]"
    );
    assert_eq!(c.get(&format!("{SERVICES}/web")).await.code, 404);
    let no_ports = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"}, "spec": {}});
    let r = c.post(SERVICES, &no_ports).await;
    assert_eq!(r.body["message"], "Service \"empty\" is invalid: spec.ports: Required value");

    // A Service keeps its address.
    let ok = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ok"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}});
    let created = c.post(SERVICES, &ok).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let r = c.patch(&format!("{SERVICES}/ok"), MERGE, &json!({"spec": {"clusterIP": "10.96.0.99"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"ok\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"
    );
    assert_eq!(c.get(&format!("{SERVICES}/ok")).await.body, created.body);
    let ports = json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]}});
    assert_eq!(c.patch(&format!("{SERVICES}/ok"), MERGE, &ports).await.code, 200);
}

#[tokio::test]
async fn kubectl_creates_services_kube_accepts() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let c = Client::new(&s);
        let dir = tempdir("kubectl-services");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        for args in [
            vec!["create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:8443"],
            vec!["create", "service", "nodeport", "np", "--tcp=80:8080"],
            vec!["create", "service", "externalname", "db", "--external-name=db.example.com"],
            vec!["create", "service", "clusterip", "headless", "--clusterip=None"],
        ] {
            let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
            assert!(ok, "{bin} {args:?}: {out}{err}");
        }
        let web = c.get(&format!("{SERVICES}/web")).await.body;
        assert_eq!(web["spec"]["ports"][1]["name"], "443-8443", "{bin}");
        // kubectl words the server's 422 from its causes.
        let file = dir.join("bad.yaml");
        let manifest =
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\nspec:\n  ports:\n  - port: 80\n  - port: 81\n";
        std::fs::write(&file, manifest).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "-f", file.to_str().unwrap()]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains("The Service \"bad\" is invalid: \n* spec.ports[0].name: Required value\n* spec.ports[1].name: Required value"),
            "{bin}: {err}"
        );
        assert_eq!(c.get(&format!("{SERVICES}/bad")).await.code, 404, "{bin}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn type_changes_keep_or_drop_what_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    let np = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}});
    let created = c.post(SERVICES, &np).await.body;
    let ip = created["spec"]["clusterIP"].clone();
    assert!(ip.is_string(), "{created}");
    // Helm's three-way patch of a chart that renders `clusterIP: ""`: the address stays.
    let r = c.patch(&format!("{SERVICES}/np"), MERGE, &json!({"spec": {"clusterIP": ""}})).await;
    assert_eq!((r.code, &r.body["spec"]["clusterIP"]), (200, &ip), "{}", r.body);
    // Back to ClusterIP with the whole object sent back: the node port kube gave goes.
    let mut cluster = c.get(&format!("{SERVICES}/np")).await.body;
    cluster["spec"]["type"] = json!("ClusterIP");
    let r = c.put(&format!("{SERVICES}/np"), &cluster).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["spec"]["ports"][0].get("nodePort").is_none(), "{}", r.body);
    assert!(r.body["spec"].get("externalTrafficPolicy").is_none(), "{}", r.body);
    assert_eq!(r.body["spec"]["clusterIP"], ip);
    // A node port on a ClusterIP Service is refused.
    let r =
        c.patch(&format!("{SERVICES}/np"), MERGE, &json!({"spec": {"ports": [{"port": 80, "nodePort": 30081}]}})).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            422,
            Some(
                "Service \"np\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
            )
        )
    );
    // To ExternalName with the address still in the body (kubectl edit, client-go): it goes.
    let mut external = c.get(&format!("{SERVICES}/np")).await.body;
    external["spec"]["type"] = json!("ExternalName");
    external["spec"]["externalName"] = json!("db.example.com");
    external["spec"].as_object_mut().unwrap().remove("selector");
    let r = c.put(&format!("{SERVICES}/np"), &external).await;
    assert_eq!(r.code, 200, "{}", r.body);
    for gone in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(r.body["spec"].get(gone).is_none(), "{gone}: {}", r.body);
    }
    // And back: the Service is given an address again.
    let back = json!({"spec": {"type": "ClusterIP", "externalName": null, "selector": {"app": "web"}}});
    let r = c.patch(&format!("{SERVICES}/np"), MERGE, &back).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let given = r.body["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
    assert!(given.starts_with("10."), "{}", r.body);
    assert_eq!(r.body["spec"]["clusterIPs"], json!([given]));

    // A Helm chart rendering `clusterIP: ""` turns a Service into an ExternalName.
    let helm =
        json!({"spec": {"type": "ExternalName", "externalName": "db.example.com", "clusterIP": "", "selector": null}});
    let r = c.patch(&format!("{SERVICES}/np"), MERGE, &helm).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["spec"].get("clusterIPs").is_none(), "{}", r.body);

    // A load balancer's status goes with its type.
    let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
    assert_eq!(c.post(SERVICES, &lb).await.code, 201);
    let ingress = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}});
    assert_eq!(c.patch(&format!("{SERVICES}/lb/status"), MERGE, &ingress).await.code, 200);
    let r = c.patch(&format!("{SERVICES}/lb"), MERGE, &json!({"spec": {"type": "ClusterIP"}})).await;
    assert_eq!((r.code, &r.body["status"]["loadBalancer"]), (200, &json!({})), "{}", r.body);
}

#[tokio::test]
async fn node_ports_are_given_as_kube_gives_them() {
    let s = server().await;
    let c = Client::new(&s);
    let service = |name: &str, spec: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    let in_range = |v: &Value| v.as_u64().is_some_and(|n| (30000..=32767).contains(&n));
    // A NodePort Service gets a free node port for each port.
    let web = service(
        "web",
        json!({"type": "NodePort", "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30443}]}),
    );
    let r = c.post(SERVICES, &web).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let given = r.body["spec"]["ports"][0]["nodePort"].clone();
    assert!(in_range(&given), "{}", r.body);
    assert_eq!(r.body["spec"]["ports"][1]["nodePort"], 30443);
    // Another Service may not have it, nor one outside the range.
    let r = c
        .post(SERVICES, &service("other", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30443}]})))
        .await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            422,
            Some(
                "Service \"other\" is invalid: spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated"
            )
        )
    );
    let r = c
        .post(SERVICES, &service("other", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]})))
        .await;
    assert_eq!(
        r.body["message"],
        "Service \"other\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid \
         range. The range of valid ports is 30000-32767"
    );
    let r =
        c.post(SERVICES, &service("other", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": -1}]}))).await;
    assert_eq!(
        r.body["message"],
        "Service \"other\" is invalid: spec.ports[0].nodePort: Invalid value: -1: provided port is not in the valid \
         range. The range of valid ports is 30000-32767"
    );
    assert_eq!(c.get(&format!("{SERVICES}/other")).await.code, 404);
    // An update that leaves the node ports out (a manifest applied again) keeps them by port name.
    let reapplied = json!({"spec": {"ports": [{"name": "https", "port": 443}, {"name": "http", "port": 8080}]}});
    let r = c.patch(&format!("{SERVICES}/web"), MERGE, &reapplied).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["ports"][0]["nodePort"], 30443);
    assert_eq!(r.body["spec"]["ports"][1]["nodePort"], given);
    // Back to ClusterIP: the node ports go, and are free for others.
    let cluster = json!({"spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 8080}]}});
    let r = c.patch(&format!("{SERVICES}/web"), MERGE, &cluster).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = c
        .post(SERVICES, &service("other", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30443}]})))
        .await;
    assert_eq!((r.code, &r.body["spec"]["ports"][0]["nodePort"]), (201, &json!(30443)), "{}", r.body);
    // A load balancer keeping traffic on its nodes gets a health check port; one that asks for
    // no node ports gets none.
    let lb = service(
        "lb",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
        "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}),
    );
    let r = c.post(SERVICES, &lb).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let check = r.body["spec"]["healthCheckNodePort"].clone();
    assert!(in_range(&check), "{}", r.body);
    assert!(r.body["spec"]["ports"][0].get("nodePort").is_none(), "{}", r.body);
    // It keeps it when an update leaves it out, and may not move it.
    let r = c.patch(&format!("{SERVICES}/lb"), MERGE, &json!({"spec": {"healthCheckNodePort": null}})).await;
    assert_eq!((r.code, &r.body["spec"]["healthCheckNodePort"]), (200, &check), "{}", r.body);
    let moved = json!({"spec": {"healthCheckNodePort": check.as_u64().unwrap() % 32767 + 1}});
    let r = c.patch(&format!("{SERVICES}/lb"), MERGE, &moved).await;
    assert_eq!(r.body["message"], "Service \"lb\" is invalid: spec.healthCheckNodePort: Forbidden: field is immutable");
    // A ClusterIP Service with external IPs takes an external traffic policy.
    let external = service("ext", json!({"externalIPs": ["192.0.2.10"], "ports": [{"port": 80}]}));
    let r = c.post(SERVICES, &external).await;
    assert_eq!((r.code, &r.body["spec"]["externalTrafficPolicy"]), (201, &json!("Cluster")), "{}", r.body);
    // A dry run shows the node port it would give and keeps nothing.
    let r = c
        .post(
            &format!("{SERVICES}?dryRun=All"),
            &service("dry", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30999}]})),
        )
        .await;
    assert_eq!((r.code, &r.body["spec"]["ports"][0]["nodePort"]), (201, &json!(30999)), "{}", r.body);
    let r = c
        .post(SERVICES, &service("wet", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30999}]})))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
}

const PY_NODE_PORT: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
svc = client.V1Service(metadata=client.V1ObjectMeta(name="web"), spec=client.V1ServiceSpec(
    type="NodePort", selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)]))
created = core.create_namespaced_service("default", svc)
print(json.dumps({"nodePort": created.spec.ports[0].node_port}), flush=True)
"#;

#[tokio::test]
async fn real_clients_read_the_node_ports_they_were_given() {
    use common::tools::{kubectl_bin, kubectl_versions, python, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("node-ports");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = python(PY_NODE_PORT, &[kc.to_str().unwrap()]).await;
    let line: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let n = line["nodePort"].as_u64().unwrap_or_else(|| panic!("{out}"));
    assert!((30000..=32767).contains(&n), "{out}");
    let versions = kubectl_versions();
    let cache = dir.join("cache");
    for (i, bin) in [versions.first().unwrap(), versions.last().unwrap()].into_iter().enumerate() {
        let name = format!("np{i}");
        let args = ["create", "service", "nodeport", name.as_str(), "--tcp=80:8080"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(ok, "{bin}: {out}{err}");
        let jsonpath = "jsonpath={.spec.ports[0].nodePort}";
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "service", name.as_str(), "-o", jsonpath]).await;
        assert!(ok, "{bin}: {err}");
        let given: u64 = out.trim().parse().unwrap_or_else(|_| panic!("{bin}: {out}"));
        assert!((30000..=32767).contains(&given) && given != n, "{bin}: {given}");
        // Another Service asking for it is refused, in kubectl's words for the 422.
        let taken = format!("--node-port={given}");
        let args = ["create", "service", "nodeport", "again", "--tcp=81:8080", taken.as_str()];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(!ok, "{bin}: {out}");
        assert!(err.contains("provided port is already allocated"), "{bin}: {err}");
    }
    assert_eq!(c.get(&format!("{SERVICES}/again")).await.code, 404);
    let _ = std::fs::remove_dir_all(&dir);
}

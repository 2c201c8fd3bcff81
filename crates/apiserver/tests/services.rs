//! Services are judged as kube-apiserver judges them, over HTTP and through kubectl: ports,
//! types and addresses, with kube's messages; nothing refused is stored.

mod common;

use common::*;
use serde_json::json;

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

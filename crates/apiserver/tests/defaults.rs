//! Built-in defaults over HTTP, against exchanges recorded from kube-apiserver v1.35
//! (`tests/fixtures/kube-apiserver/01-*`, `02-*`, `54-*`, on a server that, as the recorded one,
//! runs no ServiceAccount admission): what a minimal Pod, Deployment and Secret are stored as,
//! the other workloads and Services, and defaults on updates.

mod common;

use std::collections::HashSet;

use common::recorded::{comparable_managed, recorded};
use common::*;
use serde_json::{Value, json};

const NS: &str = "/api/v1/namespaces/fixtures";

#[tokio::test]
async fn pod_deployment_and_secret_defaults_match_kube() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;

    let ex = recorded("01-defaults-pod-create.txt");
    let r = c.post(&format!("{NS}/pods"), &ex.request()).await;
    assert_eq!((r.code, comparable_managed(&r.body)), (ex.status, comparable_managed(&ex.response)));
    assert_eq!(r.body["metadata"]["generation"], ex.response["metadata"]["generation"]);
    assert_eq!(c.get(&format!("{NS}/pods/solo")).await.body, r.body);

    let ex = recorded("02-defaults-deployment-create.txt");
    let r = c.post("/apis/apps/v1/namespaces/fixtures/deployments", &ex.request()).await;
    assert_eq!((r.code, comparable_managed(&r.body)), (ex.status, comparable_managed(&ex.response)));
    assert_eq!(r.body["metadata"]["generation"], ex.response["metadata"]["generation"]);

    let ex = recorded("54-proto-get-secret-json-view.txt");
    // (kubectl create names itself with fieldManager.)
    let secret = json!({"metadata": {"name": "creds"}, "data": {"p": "cQ=="}});
    let r = c.post(&format!("{NS}/secrets?fieldManager=kubectl-create"), &secret).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let g = c.get(&format!("{NS}/secrets/creds")).await;
    assert_eq!((g.code, comparable_managed(&g.body)), (ex.status, comparable_managed(&ex.response)));
    // A type given is kept.
    let r = c
        .post(
            &format!("{NS}/secrets"),
            &json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""}}),
        )
        .await;
    assert_eq!(r.body["type"], "kubernetes.io/tls");
}

fn container(name: &str, image: &str, resources: Value) -> Value {
    json!({"name": name, "image": image, "resources": resources})
}

async fn create_pod(c: &Client, name: &str, spec: Value) -> Value {
    let r = c.post(&format!("{NS}/pods"), &json!({"metadata": {"name": name}, "spec": spec})).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    r.body
}

#[tokio::test]
async fn pod_details() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    // Pull policies follow the tag.
    let p = create_pod(
        &c,
        "images",
        json!({"containers": [container("a", "nginx", json!({})), container("b", "nginx:latest", json!({})),
                               container("c", "nginx:1.27", json!({})),
                               container("d", "r.example:5000/app@sha256:00", json!({}))],
               "initContainers": [container("init", "busybox", json!({}))]}),
    )
    .await;
    let policies: Vec<&str> =
        p["spec"]["containers"].as_array().unwrap().iter().map(|c| c["imagePullPolicy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["Always", "Always", "IfNotPresent", "IfNotPresent"]);
    assert_eq!(p["spec"]["initContainers"][0]["imagePullPolicy"], "Always");
    assert_eq!(p["spec"]["initContainers"][0]["terminationMessagePath"], "/dev/termination-log");

    // QoS classes; requests default to the limits.
    let qos = |p: &Value| p["status"]["qosClass"].as_str().unwrap().to_string();
    let limits = json!({"limits": {"cpu": "500m", "memory": "128Mi"}});
    let p = create_pod(&c, "guaranteed", json!({"containers": [container("c", "a:1", limits.clone())]})).await;
    assert_eq!(qos(&p), "Guaranteed");
    assert_eq!(p["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "500m", "memory": "128Mi"}));
    let burstable = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m"}});
    let p = create_pod(&c, "burstable", json!({"containers": [container("c", "a:1", burstable)]})).await;
    assert_eq!(qos(&p), "Burstable");
    assert_eq!(p["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "100m", "memory": "1Gi"}));
    let p = create_pod(&c, "best-effort", json!({"containers": [container("c", "a:1", json!({}))]})).await;
    assert_eq!(qos(&p), "BestEffort");

    // Probes, ports, volumes, env references.
    let spec = json!({
        "containers": [{"name": "c", "image": "a:1", "ports": [{"containerPort": 8080}],
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "readinessProbe": {"httpGet": {"port": 8080}}, "livenessProbe": {"grpc": {"port": 9000}}}],
        "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "cfg"}},
                    {"name": "host", "hostPath": {"path": "/tmp"}}],
        "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
    });
    let p = create_pod(&c, "details", spec).await;
    let c0 = &p["spec"]["containers"][0];
    assert_eq!(c0["ports"][0], json!({"containerPort": 8080, "protocol": "TCP"}));
    assert_eq!(c0["env"][0]["valueFrom"]["fieldRef"], json!({"apiVersion": "v1", "fieldPath": "spec.nodeName"}));
    assert_eq!(
        c0["readinessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10,
               "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c0["livenessProbe"]["grpc"], json!({"port": 9000, "service": ""}));
    assert_eq!(p["spec"]["volumes"][0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(p["spec"]["volumes"][1]["configMap"], json!({"name": "cfg", "defaultMode": 420}));
    assert_eq!(p["spec"]["volumes"][2]["hostPath"], json!({"path": "/tmp", "type": ""}));
    // A toleration of its own for one taint: only the other is added.
    assert_eq!(
        p["spec"]["tolerations"],
        json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
               {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])
    );

    // Priority classes: the system ones; others do not exist (Priority admission's 403).
    let p = create_pod(
        &c,
        "critical",
        json!({"priorityClassName": "system-cluster-critical", "containers": [container("c", "a:1", json!({}))]}),
    )
    .await;
    assert_eq!(p["spec"]["priority"], 2_000_000_000);
    let r = c
        .post(&format!("{NS}/pods"), &json!({"metadata": {"name": "gold"}, "spec": {"priorityClassName": "gold"}}))
        .await;
    assert_eq!(
        (r.code, r.body["reason"].as_str(), r.body["message"].as_str()),
        (403, Some("Forbidden"), Some("pods \"gold\" is forbidden: no PriorityClass with name gold was found"))
    );
    assert_eq!(r.body["details"], json!({"name": "gold", "kind": "pods"}));
}

#[tokio::test]
async fn updates_are_defaulted_and_unchanged_objects_are_not_rewritten() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let ex = recorded("01-defaults-pod-create.txt");
    let created = c.post(&format!("{NS}/pods"), &ex.request()).await.body;
    // Writing the stored object back changes nothing (defaulting is idempotent).
    let r = c.put(&format!("{NS}/pods/solo"), &created).await;
    assert_eq!((r.code, &r.body), (200, &created));
    // A body without the defaults gets them again; the priority set at create stays.
    let mut bare = ex.request();
    bare["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    bare["metadata"]["labels"] = json!({"v": "2"});
    let r = c.put(&format!("{NS}/pods/solo"), &bare).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body["spec"], created["spec"]);
    assert_eq!(r.body["metadata"]["labels"], json!({"v": "2"}));
    // Patches too: removing a defaulted field brings it back.
    let r = c
        .patch(&format!("{NS}/pods/solo"), "application/merge-patch+json", &json!({"spec": {"dnsPolicy": null}}))
        .await;
    assert_eq!((r.code, &r.body["spec"]["dnsPolicy"]), (200, &json!("ClusterFirst")));
    // A namespace keeps its name label.
    let ns = c.get("/api/v1/namespaces/fixtures").await.body;
    let mut put = ns.clone();
    put["metadata"].as_object_mut().unwrap().remove("labels");
    let r = c.put("/api/v1/namespaces/fixtures", &put).await;
    assert_eq!((r.code, &r.body), (200, &ns));
}

#[tokio::test]
async fn empty_lists_and_maps_go_leaves_out_are_not_stored() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let deployments = "/apis/apps/v1/namespaces/fixtures/deployments";
    let body = json!({
        "metadata": {"name": "web", "labels": {}, "annotations": {}, "finalizers": []},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"tolerations": [], "nodeSelector": {}, "securityContext": {},
                "containers": [{"name": "c", "image": "nginx", "env": [], "ports": []}]}}}
    });
    let created = c.post(deployments, &body).await;
    assert_eq!(created.code, 201, "{:?}", created.body);
    let meta = created.body["metadata"].as_object().unwrap();
    for gone in ["labels", "annotations", "finalizers"] {
        assert!(!meta.contains_key(gone), "metadata.{gone} in {meta:?}");
    }
    let pod_spec = &created.body["spec"]["template"]["spec"];
    for gone in ["tolerations", "nodeSelector"] {
        assert!(pod_spec.get(gone).is_none(), "{gone} in {pod_spec}");
    }
    // A struct is not a map: Go serializes an empty one.
    assert_eq!(pod_spec["securityContext"], json!({}));
    let container = pod_spec["containers"][0].as_object().unwrap();
    assert!(!container.contains_key("env") && !container.contains_key("ports"), "{container:?}");
    assert_eq!(c.get(&format!("{deployments}/web")).await.body, created.body);

    // Sending the empty lists again changes nothing: no new generation, no write.
    let mut again = body.clone();
    again["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"].clone();
    let r = c.put(&format!("{deployments}/web"), &again).await;
    assert_eq!((r.code, &r.body), (200, &created.body));

    // A status write is decoded the same way.
    let mut status = created.body.clone();
    status["status"] = json!({"conditions": [], "observedGeneration": 1});
    let r = c.put(&format!("{deployments}/web/status"), &status).await;
    assert_eq!((r.code, &r.body["status"]), (200, &json!({"observedGeneration": 1})));

    // So are a PodTemplate's: its generation stays.
    let template = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}});
    let created = c.post(&format!("{NS}/podtemplates"), &template).await.body;
    let mut again = created.clone();
    again["template"]["spec"]["tolerations"] = json!([]);
    let r = c.put(&format!("{NS}/podtemplates/t"), &again).await;
    assert_eq!((r.code, &r.body), (200, &created));

    // Defaults and validation see them, as kube's see Go's empty (not nil) values: an empty
    // list of HPA policies is refused rather than defaulted, an empty `allocatable` is not
    // filled from the capacity.
    let hpa = json!({"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 3, "behavior": {"scaleUp": {"policies": []}}}});
    let r = c.post("/apis/autoscaling/v2/namespaces/fixtures/horizontalpodautoscalers", &hpa).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("spec.behavior.scaleUp.policies"), "{:?}", r.body);
    let node = json!({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}, "allocatable": {}}});
    let r = c.post("/api/v1/nodes", &node).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let status = &r.body["status"];
    assert!(status.get("allocatable").is_none() && status["capacity"] == json!({"cpu": "4"}), "{status}");

    // An object without declared fields (a RawExtension) is stored as it is sent.
    for (name, data) in [("rev", json!({"items": [], "x": 1})), ("empty", json!([]))] {
        let revision = json!({"metadata": {"name": name}, "revision": 1, "data": data});
        let r = c.post("/apis/apps/v1/namespaces/fixtures/controllerrevisions", &revision).await;
        assert_eq!((r.code, &r.body["data"]), (201, &data));
    }
}

#[tokio::test]
async fn workload_defaults() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let template =
        json!({"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "a:1"}]}});
    let defaulted_template = json!({"metadata": {"labels": {"app": "w"}}, "spec": {
        "containers": [{"name": "c", "image": "a:1", "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler"}});
    let selector = json!({"matchLabels": {"app": "w"}});
    let body = json!({"metadata": {"name": "w"}, "spec": {"selector": selector, "template": template}});

    let r = c.post("/apis/apps/v1/namespaces/fixtures/replicasets", &body).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    assert_eq!(r.body["spec"], json!({"replicas": 1, "selector": selector, "template": defaulted_template}));
    assert_eq!(r.body["status"], json!({"replicas": 0}));

    let mut sts = body.clone();
    sts["spec"]["serviceName"] = json!("w");
    sts["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    let r = c.post("/apis/apps/v1/namespaces/fixtures/statefulsets", &sts).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    assert_eq!(
        r.body["spec"],
        json!({"replicas": 1, "selector": selector, "template": defaulted_template, "serviceName": "w",
               "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                   "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}],
               "podManagementPolicy": "OrderedReady", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
               "revisionHistoryLimit": 10,
               "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}})
    );
    assert_eq!(r.body["status"], json!({"replicas": 0, "availableReplicas": 0}));

    // Given values are kept; a Recreate strategy gets no rolling update parameters.
    let mut d = body.clone();
    d["spec"]["replicas"] = json!(0);
    d["spec"]["strategy"] = json!({"type": "Recreate"});
    let r = c.post("/apis/apps/v1/namespaces/fixtures/deployments", &d).await;
    assert_eq!(
        (r.body["spec"]["replicas"].as_i64(), &r.body["spec"]["strategy"]),
        (Some(0), &json!({"type": "Recreate"}))
    );
    // The scale subresource and the defaults agree.
    let scale = c.get("/apis/apps/v1/namespaces/fixtures/replicasets/w/scale").await;
    assert_eq!(scale.body["spec"]["replicas"], 1);
}

#[tokio::test]
async fn service_defaults_and_cluster_ips() {
    let s = recorded_server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let svc = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
    let r = c
        .post(&format!("{NS}/services"), &svc("web", json!({"selector": {"app": "w"}, "ports": [{"port": 80}]})))
        .await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let ip = r.body["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert_eq!(
        r.body["spec"],
        json!({"selector": {"app": "w"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
               "clusterIP": ip, "clusterIPs": [ip], "type": "ClusterIP", "sessionAffinity": "None",
               "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"})
    );
    assert_eq!(r.body["status"], json!({"loadBalancer": {}}));
    let addr: std::net::Ipv4Addr = ip.parse().unwrap();
    let [a, b, ..] = addr.octets();
    assert!(a == 10 && (96..112).contains(&b), "{ip} in 10.96.0.0/12");

    // Every Service gets its own address.
    let mut seen = HashSet::from([ip.clone()]);
    for i in 0..40 {
        let r = c
            .post(
                &format!("{NS}/services"),
                &svc(&format!("s{i}"), json!({"ports": [{"port": 80, "targetPort": "http"}]})),
            )
            .await;
        assert_eq!(r.body["spec"]["ports"][0]["targetPort"], "http");
        assert!(seen.insert(r.body["spec"]["clusterIP"].as_str().unwrap().to_string()), "an address given twice");
    }
    // An address asked for: given when free, 422 when taken.
    let r = c
        .post(
            &format!("{NS}/services"),
            &svc("fixed", json!({"clusterIP": "10.96.200.7", "ports": [{"port": 53, "protocol": "UDP"}]})),
        )
        .await;
    assert_eq!((r.code, &r.body["spec"]["clusterIPs"]), (201, &json!(["10.96.200.7"])));
    assert_eq!(r.body["spec"]["ports"][0]["protocol"], "UDP");
    let r = c.post(&format!("{NS}/services"), &svc("clash", json!({"clusterIP": ip, "ports": [{"port": 80}]}))).await;
    assert_eq!(r.code, 422, "{:?}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Service \"clash\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
        )
    );
    // Headless, ExternalName and NodePort Services.
    // (Without a selector, kube's allocator gives a headless Service both families.)
    let r = c.post(&format!("{NS}/services"), &svc("headless", json!({"clusterIP": "None"}))).await;
    assert_eq!(
        (&r.body["spec"]["clusterIPs"], &r.body["spec"]["ipFamilies"]),
        (&json!(["None"]), &json!(["IPv4", "IPv6"]))
    );
    assert_eq!(r.body["spec"]["ipFamilyPolicy"], "RequireDualStack");
    let r = c
        .post(&format!("{NS}/services"), &svc("ext", json!({"type": "ExternalName", "externalName": "example.com"})))
        .await;
    assert_eq!(
        r.body["spec"],
        json!({"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"})
    );
    let r = c
        .post(
            &format!("{NS}/services"),
            &svc("np", json!({"type": "NodePort", "ports": [{"port": 80}], "sessionAffinity": "ClientIP"})),
        )
        .await;
    assert_eq!(r.body["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(r.body["spec"]["sessionAffinityConfig"], json!({"clientIP": {"timeoutSeconds": 10800}}));

    // An update without the allocated fields keeps them.
    let web = c.get(&format!("{NS}/services/web")).await.body;
    let mut put = web.clone();
    for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        put["spec"].as_object_mut().unwrap().remove(f);
    }
    let r = c.put(&format!("{NS}/services/web"), &put).await;
    assert_eq!((r.code, &r.body), (200, &web));
    // A deleted Service's address can be asked for again at once.
    assert_eq!(c.delete(&format!("{NS}/services/fixed")).await.code, 200);
    let r = c
        .post(&format!("{NS}/services"), &svc("again", json!({"clusterIP": "10.96.200.7", "ports": [{"port": 80}]})))
        .await;
    assert_eq!((r.code, &r.body["spec"]["clusterIP"]), (201, &json!("10.96.200.7")));
    // A dry run gives an address but keeps none.
    let r = c
        .post(
            &format!("{NS}/services?dryRun=All"),
            &svc("dry", json!({"clusterIP": "10.96.200.8", "ports": [{"port": 80}]})),
        )
        .await;
    assert_eq!(r.code, 201);
    let r = c
        .post(&format!("{NS}/services"), &svc("wet", json!({"clusterIP": "10.96.200.8", "ports": [{"port": 80}]})))
        .await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    assert_eq!(s.list("services", Some("fixtures")).await.unwrap().len(), 46);
}

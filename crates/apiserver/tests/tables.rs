//! Server-side printing over HTTP: the `Table` kubectl asks for, with kube-apiserver's columns and
//! cells for the built-in kinds, and what kubectl then shows.

mod common;

use common::*;
use serde_json::{Value, json};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The column names and the first row's cells of the table at `path`.
async fn table(c: &Client, path: &str) -> (Vec<String>, Vec<Value>, Value) {
    let r = c.get_accepting(path, TABLE).await;
    assert_eq!(r.code, 200, "{path}: {:?}", r.body);
    let names = r.body["columnDefinitions"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {}", r.body))
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let cells = r.body["rows"][0]["cells"].as_array().cloned().unwrap_or_default();
    (names, cells, r.body)
}

/// Cells without the age column (its value moves with the clock).
fn without(cells: &[Value], at: usize) -> Vec<Value> {
    cells.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, c)| c.clone()).collect()
}

#[tokio::test]
async fn built_in_kinds_print_kubes_columns_and_cells() {
    let s = server().await;
    let c = Client::new(&s);

    let svc = json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "selector": {"app": "web", "tier": "a"},
        "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30080}]}});
    s.create("services", svc).await.unwrap();
    let (names, cells, body) = table(&c, "/api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dweb").await;
    assert_eq!(names, ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
    let ip = cells[2].as_str().unwrap();
    assert!(ip.parse::<std::net::IpAddr>().is_ok(), "{ip}");
    assert_eq!(
        without(&cells, 5),
        [json!("web"), json!("NodePort"), json!(ip), json!("<none>"), json!("80:30080/TCP"), json!("app=web,tier=a")]
    );
    let defs = &body["columnDefinitions"];
    assert_eq!(defs[6]["priority"], 1);
    assert!(defs[1]["description"].as_str().unwrap().starts_with("type determines how the Service is exposed."));
    assert!(!defs[1]["description"].as_str().unwrap().contains("Possible enum values"));
    assert_eq!(defs[0]["format"], "name");

    s.create("deployments", json!({"metadata": {"name": "web"}, "spec": workload_spec("web")})).await.unwrap();
    s.patch_status(
        "deployments",
        "default",
        "web",
        &json!({"status": {"readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}}),
    )
    .await
    .unwrap();
    let (names, cells, _) = table(&c, "/apis/apps/v1/namespaces/default/deployments").await;
    assert_eq!(names, ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]);
    assert_eq!(
        without(&cells, 4),
        [
            json!("web"),
            json!("1/1"),
            json!(1),
            json!(1),
            json!("c"),
            json!("registry.k8s.io/pause:3.10"),
            json!("app=web")
        ]
    );

    let job = json!({"metadata": {"name": "j"}, "spec": {"completions": 3, "template": {"spec": {"restartPolicy": "Never", "containers": pod_spec()["containers"]}}}});
    s.create("jobs", job).await.unwrap();
    let (names, cells, _) = table(&c, "/apis/batch/v1/namespaces/default/jobs").await;
    assert_eq!(names, ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]);
    assert_eq!((&cells[1], &cells[2]), (&json!("Running"), &json!("0/3")));
    assert!(cells[7].as_str().unwrap().starts_with("batch.kubernetes.io/controller-uid="), "{:?}", cells[7]);

    let cron = json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": pod_spec()["containers"]}}}}}});
    s.create("cronjobs", cron).await.unwrap();
    let (names, cells, _) = table(&c, "/apis/batch/v1/namespaces/default/cronjobs").await;
    assert_eq!(
        names,
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        without(&cells, 6),
        [
            json!("cj"),
            json!("*/5 * * * *"),
            json!("<none>"),
            json!("False"),
            json!(0),
            json!("<none>"),
            json!("c"),
            json!("registry.k8s.io/pause:3.10"),
            json!("<none>")
        ]
    );

    s.create(
        "configmaps",
        json!({"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
    )
    .await
    .unwrap();
    let (names, cells, _) = table(&c, "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dcm").await;
    assert_eq!(
        (names, &cells[..2]),
        (vec!["Name".to_string(), "Data".into(), "Age".into()], &[json!("cm"), json!(3)][..])
    );

    s.create("secrets", json!({"metadata": {"name": "s"}, "stringData": {"a": "x"}})).await.unwrap();
    let (names, cells, _) = table(&c, "/api/v1/namespaces/default/secrets").await;
    assert_eq!(
        (names, &cells[..3]),
        (
            vec!["Name".to_string(), "Type".into(), "Data".into(), "Age".into()],
            &[json!("s"), json!("Opaque"), json!(1)][..]
        )
    );

    s.create("nodes", json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}}, "spec": {"unschedulable": true}}))
        .await
        .unwrap();
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        "nodeInfo": {"kubeletVersion": "v1.35.0", "osImage": "Debian", "kernelVersion": "6.1", "containerRuntimeVersion": "containerd://2.0",
        "machineID": "m", "systemUUID": "u", "bootID": "b", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}});
    s.patch_status("nodes", "", "n1", &status).await.unwrap();
    let (names, cells, _) = table(&c, "/api/v1/nodes").await;
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime"
        ]
    );
    assert_eq!(
        without(&cells, 3),
        [
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane"),
            json!("v1.35.0"),
            json!("10.0.0.1"),
            json!("<none>"),
            json!("Debian"),
            json!("6.1"),
            json!("containerd://2.0")
        ]
    );

    let (names, cells, _) = table(&c, "/api/v1/namespaces?fieldSelector=metadata.name%3Ddefault").await;
    assert_eq!(
        (names, &cells[..2]),
        (vec!["Name".to_string(), "Status".into(), "Age".into()], &[json!("default"), json!("Active")][..])
    );

    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "fieldPath": "spec.containers{c}"},
        "reason": "Pulled", "message": "  pulled  ", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z", "count": 4});
    s.create("events", event).await.unwrap();
    for path in ["/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events"] {
        let (names, cells, _) = table(&c, path).await;
        assert_eq!(
            names,
            ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"],
            "{path}"
        );
        let old = cells[0].as_str().unwrap();
        assert!(old.ends_with('y') || old.ends_with('d'), "{path}: {old}");
        assert_eq!(
            [&cells[1..7], &cells[8..]].concat(),
            [
                json!("Normal"),
                json!("Pulled"),
                json!("pod/p"),
                json!("spec.containers{c}"),
                json!("kubelet, n1"),
                json!("pulled"),
                json!(4),
                json!("e")
            ],
            "{path}"
        );
    }

    let binding = json!({"metadata": {"name": "rb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}, {"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]});
    s.create("rolebindings.rbac.authorization.k8s.io", binding).await.unwrap();
    let (names, cells, _) = table(&c, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings").await;
    assert_eq!(names, ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]);
    assert_eq!(
        without(&cells, 2),
        [json!("rb"), json!("ClusterRole/view"), json!("alice, bob"), json!(""), json!("default/sa")]
    );

    // Kinds kube prints with its default columns: the name and the creation time.
    s.create("clusterroles.rbac.authorization.k8s.io", json!({"metadata": {"name": "reader"}, "rules": []}))
        .await
        .unwrap();
    let (names, cells, body) =
        table(&c, "/apis/rbac.authorization.k8s.io/v1/clusterroles?fieldSelector=metadata.name%3Dreader").await;
    assert_eq!(names, ["Name", "Created At"]);
    assert_eq!(body["columnDefinitions"][1]["type"], "date");
    let created = cells[1].as_str().unwrap();
    assert!(created.parse::<jiff::Timestamp>().is_ok() && created.ends_with('Z'), "{created}");
    let (_, _, empty) = table(&c, "/api/v1/namespaces/default/limitranges").await;
    assert_eq!(empty["rows"], Value::Null);
    let (_, _, empty) = table(&c, "/api/v1/namespaces/default/pods").await;
    assert_eq!(empty["rows"], json!([]));
}

#[tokio::test]
async fn pods_print_kubes_aggregate_status() {
    let s = server().await;
    let c = Client::new(&s);
    let spec = json!({"initContainers": [{"name": "init", "image": "busybox"}], "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]});
    s.create("pods", json!({"metadata": {"name": "p"}, "spec": spec})).await.unwrap();
    let path = format!("{PODS}/p");
    let (names, cells, _) = table(&c, &path).await;
    assert_eq!(
        names,
        ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    assert_eq!(
        without(&cells, 4),
        [
            json!("p"),
            json!("0/2"),
            json!("Pending"),
            json!("0"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    let waiting = |reason: &str| json!({"waiting": {"reason": reason}});
    let status = json!({"status": {"initContainerStatuses": [{"name": "init", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0, "state": waiting("PodInitializing")}],
        "containerStatuses": [{"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": waiting("PodInitializing")},
                              {"name": "b", "image": "y", "imageID": "", "ready": false, "restartCount": 0, "state": waiting("PodInitializing")}]}});
    s.patch_status("pods", "default", "p", &status).await.unwrap();
    assert_eq!(table(&c, &path).await.1[2], "Init:0/1");

    let running = json!({"running": {"startedAt": "2020-01-01T00:00:00Z"}});
    let finished = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "2020-01-01T00:00:00Z", "finishedAt": "2020-01-01T00:00:01Z"}});
    let status = json!({"status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}], "podIP": "10.1.0.5",
        "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}],
        "initContainerStatuses": [{"name": "init", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0, "state": finished}],
        "containerStatuses": [{"name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 2, "state": running,
                               "lastState": {"terminated": {"exitCode": 1, "startedAt": "2020-01-01T00:00:00Z", "finishedAt": "2020-01-01T00:00:00Z"}}},
                              {"name": "b", "image": "y", "imageID": "", "ready": false, "restartCount": 0, "state": waiting("CrashLoopBackOff")}]}});
    s.patch_status("pods", "default", "p", &status).await.unwrap();
    let cells = table(&c, &path).await.1;
    assert_eq!((&cells[1], &cells[2], &cells[5]), (&json!("1/2"), &json!("CrashLoopBackOff"), &json!("10.1.0.5")));
    let restarts = cells[3].as_str().unwrap();
    assert!(restarts.starts_with("2 (") && restarts.ends_with(" ago)"), "{restarts}");

    let failed = json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2020-01-01T00:00:00Z", "finishedAt": "2020-01-01T00:00:01Z"}});
    let error = json!({"status": {"containerStatuses": [
        {"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": finished},
        {"name": "b", "image": "y", "imageID": "", "ready": false, "restartCount": 0, "state": failed}]}});
    s.patch_status("pods", "default", "p", &error).await.unwrap();
    assert_eq!(table(&c, &path).await.1[2], "Error");

    let done = json!({"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": finished},
        {"name": "b", "image": "y", "imageID": "", "ready": false, "restartCount": 0, "state": finished}]}});
    s.patch_status("pods", "default", "p", &done).await.unwrap();
    let r = c.get_accepting(&path, TABLE).await.body;
    assert_eq!(r["rows"][0]["cells"][2], "Completed");
    assert_eq!(
        r["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}])
    );
}

/// Rows carry what `includeObject` asks of their objects; a watch's Table events carry the
/// column definitions once.
#[tokio::test]
async fn rows_carry_the_object_asked_and_watches_send_headers_once() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("pods", pod("a", json!({}))).await.unwrap();
    let rows = |r: &Value| r["rows"].as_array().cloned().unwrap_or_default();
    let whole = c.get_accepting(&format!("{PODS}?includeObject=Object"), TABLE).await.body;
    let object = &rows(&whole)[0]["object"];
    assert_eq!(
        (object["kind"].as_str(), object["spec"]["containers"][0]["name"].as_str()),
        (Some("Pod"), Some("c")),
        "{whole}"
    );
    let none = c.get_accepting(&format!("{PODS}?includeObject=None"), TABLE).await.body;
    assert_eq!(rows(&none)[0]["object"], Value::Null);
    let meta = c.get_accepting(PODS, TABLE).await.body;
    assert_eq!(rows(&meta)[0]["object"]["kind"], "PartialObjectMetadata");

    let mut w = c.watch_accepting(&format!("{PODS}?watch=1&resourceVersion={}", s.resource_version()), TABLE).await;
    s.create("pods", pod("b", json!({}))).await.unwrap();
    s.create("pods", pod("c", json!({}))).await.unwrap();
    let first = w.next().await.unwrap();
    let second = w.next().await.unwrap();
    assert_eq!(first["object"]["columnDefinitions"][0]["name"], "Name", "{first}");
    assert_eq!(first["object"]["rows"][0]["cells"][0], "b");
    assert_eq!(second["object"]["columnDefinitions"], Value::Null, "{second}");
    assert_eq!(second["object"]["rows"][0]["cells"][0], "c");

    // A bookmark is a Table of an empty pod's row; the end of the initial events carries its
    // metadata (the marker) whatever `includeObject` asks, and the headers when it is first.
    let rv = s.resource_version();
    let q =
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&includeObject=None";
    let mut w = c.watch_accepting(&format!("/api/v1/namespaces/empty/pods?{q}"), TABLE).await;
    let e = w.next().await.unwrap();
    assert_eq!((e["type"].as_str(), e["object"]["kind"].as_str()), (Some("BOOKMARK"), Some("Table")), "{e}");
    assert_eq!(e["object"]["metadata"]["resourceVersion"], rv.to_string());
    assert_eq!(e["object"]["columnDefinitions"][0]["name"], "Name", "{e}");
    assert_eq!(
        e["object"]["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}})
    );
}

/// kubectl shows kube's columns: the headers of `get` and the wide ones with `-o wide`.
#[tokio::test]
async fn kubectl_shows_the_printed_columns() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    s.create("deployments", json!({"metadata": {"name": "web"}, "spec": workload_spec("web")})).await.unwrap();
    s.create(
        "services",
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    )
    .await
    .unwrap();
    s.create("configmaps", json!({"metadata": {"name": "cm"}, "data": {"a": "1"}})).await.unwrap();
    for (name, a) in [("first", "2"), ("second", "1")] {
        s.create("configmaps", json!({"metadata": {"name": name, "labels": {"sorted": "yes"}}, "data": {"a": a}}))
            .await
            .unwrap();
    }
    let dir = tempdir("kubectl-tables");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let (ok, out, err) = kubectl_bin(bin, &kc, &dir.join("cache"), &["get", "deploy,svc,cm"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let headers: Vec<Vec<&str>> =
            out.lines().filter(|l| l.starts_with("NAME")).map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            headers,
            [
                vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
                vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
                vec!["NAME", "DATA", "AGE"],
            ],
            "{bin}: {out}"
        );
        assert!(
            out.lines().any(|l| l.starts_with("service/web") && l.contains("ClusterIP") && l.contains("80/TCP")),
            "{bin}: {out}"
        );
        assert!(
            out.lines().any(|l| l.starts_with("configmap/cm ") && l.split_whitespace().nth(1) == Some("1")),
            "{bin}: {out}"
        );
        // Sorting on a field only the whole object has (kubectl asks for `includeObject=Object`).
        let args = ["get", "cm", "-l", "sorted", "--sort-by=.data.a"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &dir.join("cache"), &args).await;
        assert!(ok, "{bin}: {out}{err}");
        let names: Vec<&str> = out.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(names, ["second", "first"], "{bin}: {out}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &dir.join("cache"), &["get", "deploy", "-o", "wide"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let header: Vec<&str> = out.lines().next().unwrap_or_default().split_whitespace().collect();
        assert_eq!(
            header,
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"],
            "{bin}"
        );
    }
}

#[tokio::test]
async fn custom_columns_read_client_go_jsonpath_and_cells_of_their_type() {
    let s = server().await;
    let c = Client::new(&s);
    let column = |name: &str, t: &str, path: &str| json!({"name": name, "type": t, "jsonPath": path});
    let mut crd = crd_of("trial", "Trial", "Namespaced", json!({}));
    let version = &mut crd["spec"]["versions"][0];
    version["schema"]["openAPIV3Schema"] = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    version["additionalPrinterColumns"] = json!([
        column("Last", "string", ".status.conditions[-1:].type"),
        column("Ready", "boolean", ".status.conditions[?(@.type==\"Ready\")].status"),
        column("Count", "integer", ".spec.count"),
        column("Since", "date", ".status.since"),
        column("When", "date", ".status.when"),
        column("Note", "string", ".status.note"),
        column("Big", "string", ".status.conditions[?(@.weight >= 10)].type"),
        column("Parts", "string", ".spec.parts"),
    ]);
    define(&c, &crd).await;
    let base = "/apis/example.com/v1/namespaces/default/trials";
    let trial = json!({"apiVersion": "example.com/v1", "kind": "Trial", "metadata": {"name": "t"},
        "spec": {"count": 2.5, "parts": {"b": 1.0, "a": [true]}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "weight": 3},
                                  {"type": "Synced", "status": "False", "weight": 12}],
                   "since": "0001-01-01T00:00:00Z", "when": "yesterday", "note": null}});
    assert_eq!(c.post(base, &trial).await.code, 201);
    let (names, cells, _) = table(&c, base).await;
    assert_eq!(names, ["Name", "Last", "Ready", "Count", "Since", "When", "Note", "Big", "Parts"]);
    assert_eq!(
        cells,
        [
            json!("t"),
            json!("Synced"),
            // A string where the column wants a boolean: no cell.
            Value::Null,
            json!(2),
            json!("<unknown>"),
            json!("<invalid>"),
            json!("<no value>"),
            json!("Synced"),
            json!("{\"a\":[true],\"b\":1}"),
        ]
    );
}

#[tokio::test]
async fn a_table_is_served_as_json_only() {
    let s = server().await;
    let c = Client::new(&s);
    // A protobuf Table is passed over for the client's next choice, as kube-apiserver does.
    let accept = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json";
    let r = c.get_accepting("/api/v1/namespaces/default", accept).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body["kind"], "Namespace");
    let (names, _, _) = table(&c, "/api/v1/namespaces/default").await;
    assert_eq!(names[0], "Name");
}

#[tokio::test]
async fn a_built_in_kind_s_scale_prints_kubes_columns() {
    let s = server().await;
    let c = Client::new(&s);
    s.create("deployments", json!({"metadata": {"name": "web"}, "spec": workload_spec("web")})).await.unwrap();
    let path = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    let (names, cells, body) = table(&c, path).await;
    assert_eq!(names, ["Name", "Desired", "Available"]);
    let replicas = c.get(path).await.body["spec"]["replicas"].clone();
    assert_eq!(cells, [json!("web"), replicas.clone(), json!(0)]);
    let columns = &body["columnDefinitions"];
    assert_eq!(columns[1]["type"], "integer");
    assert_eq!(columns[1]["description"], "replicas is the desired number of instances for the scaled object.");
    assert_eq!(columns[2]["description"], "replicas is the actual number of observed instances of the scaled object.");
    let scale = c.get(path).await.body;
    assert_eq!(body["metadata"]["resourceVersion"], scale["metadata"]["resourceVersion"]);
    assert_eq!(body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(body["rows"][0]["object"]["metadata"]["uid"], scale["metadata"]["uid"]);

    let dir = common::tools::tempdir("kubectl-scale-table");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let args = ["get", "deployment", "web", "--subresource=scale"];
    let (ok, out, err) = common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &args).await;
    assert!(ok, "{out}{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    let desired = replicas.to_string();
    assert_eq!(lines, [vec!["NAME", "DESIRED", "AVAILABLE"], vec!["web", desired.as_str(), "0"]], "{out}");
}

//! storage.k8s.io/v1's CSI kinds (CSIDriver, CSINode, VolumeAttachment and its `status`,
//! CSIStorageCapacity, VolumeAttributesClass) and node.k8s.io/v1 RuntimeClasses over HTTP:
//! discovery in kube's group order, the defaults, refusals and warnings of kube-apiserver v1.35,
//! the strategies' generation, status and unconditional-update rules, tables as `kubectl get`
//! shows them, and kube-rs's typed clients.

mod common;

use common::tools::KubectlTables;
use common::*;
use serde_json::{Value, json};

const STORAGE: &str = "/apis/storage.k8s.io/v1";
const RUNTIME_CLASSES: &str = "/apis/node.k8s.io/v1/runtimeclasses";

fn warnings(r: &Resp) -> Vec<String> {
    r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn the_kinds_are_discovered_where_kube_lists_them() {
    let s = server().await;
    let c = Client::new(&s);
    assert_listed_after(&c, &[("node.k8s.io", "discovery.k8s.io"), ("coordination.k8s.io", "node.k8s.io")]).await;

    let v1 = c.get(STORAGE).await;
    let resource = |name: &str| {
        v1.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap_or(Value::Null)
    };
    for (name, kind, namespaced) in [
        ("csidrivers", "CSIDriver", false),
        ("csinodes", "CSINode", false),
        ("csistoragecapacities", "CSIStorageCapacity", true),
        ("volumeattachments", "VolumeAttachment", false),
        ("volumeattributesclasses", "VolumeAttributesClass", false),
    ] {
        let r = resource(name);
        assert_eq!((r["kind"].as_str(), r["namespaced"].as_bool()), (Some(kind), Some(namespaced)), "{name}: {r}");
    }
    assert_eq!(resource("volumeattributesclasses")["shortNames"], json!(["vac"]));
    assert_eq!(resource("volumeattachments/status")["kind"], "VolumeAttachment");
    let node = c.get("/apis/node.k8s.io/v1").await;
    let classes = node.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == "runtimeclasses").cloned();
    assert_eq!(classes.unwrap()["kind"], "RuntimeClass");
}

#[tokio::test]
async fn csi_drivers_are_defaulted_judged_and_warned_about_as_in_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let drivers = format!("{STORAGE}/csidrivers");
    let r = c.post(&drivers, &json!({"metadata": {"name": "csi.example.com"}, "spec": {}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["spec"],
        json!({"attachRequired": true, "fsGroupPolicy": "ReadWriteOnceWithFSType", "podInfoOnMount": false,
            "requiresRepublish": false, "seLinuxMount": false, "storageCapacity": false,
            "volumeLifecycleModes": ["Persistent"]})
    );
    // kube's strategy gives a new driver no generation and moves it with each change of the spec.
    assert_eq!(r.body["metadata"].get("generation"), None);
    let mut changed = r.body.clone();
    changed["spec"]["podInfoOnMount"] = json!(true);
    changed["spec"]["tokenRequests"] = json!([{"audience": "vault"}]);
    let u = c.put(&format!("{drivers}/csi.example.com"), &changed).await;
    assert_eq!(u.code, 200, "{}", u.body);
    assert_eq!(u.body["metadata"]["generation"], 1);
    assert_eq!(
        warnings(&u),
        [
            "299 - \"spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes\""
        ]
    );
    let relabelled = c
        .patch(
            &format!("{drivers}/csi.example.com"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": "gold"}}}),
        )
        .await;
    assert_eq!((relabelled.code, &relabelled.body["metadata"]["generation"]), (200, &json!(1)));
    assert!(warnings(&relabelled).is_empty(), "{:?}", warnings(&relabelled));

    let attach = c
        .patch(
            &format!("{drivers}/csi.example.com"),
            "application/merge-patch+json",
            &json!({"spec": {"attachRequired": false, "fsGroupPolicy": "Sometimes"}}),
        )
        .await;
    assert_eq!(attach.code, 422, "{}", attach.body);
    assert_eq!(
        attach.body["message"],
        "CSIDriver.storage.k8s.io \"csi.example.com\" is invalid: [spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\", spec.attachedRequired: Invalid value: false: field is immutable]"
    );
    // A PUT must name the version it replaces.
    let mut unversioned = u.body.clone();
    unversioned["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let refused = c.put(&format!("{drivers}/csi.example.com"), &unversioned).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(causes(&refused), ["metadata.resourceVersion: Invalid value: 0: must be specified for an update"]);

    let gone = c.delete(&format!("{drivers}/csi.example.com")).await;
    assert_eq!((gone.code, gone.body["kind"].as_str()), (200, Some("CSIDriver")));
}

#[tokio::test]
async fn csi_nodes_keep_their_drivers_but_not_their_counts() {
    let s = server().await;
    let c = Client::new(&s);
    let nodes = format!("{STORAGE}/csinodes");
    let node = |id: &str, count: u32| {
        json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": id,
            "topologyKeys": ["topology.example.com/zone"], "allocatable": {"count": count}}]}})
    };
    let r = c.post(&nodes, &node("n-1", 16)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut recounted = r.body.clone();
    recounted["spec"]["drivers"][0]["allocatable"]["count"] = json!(8);
    let u = c.put(&format!("{nodes}/node-1"), &recounted).await;
    assert_eq!((u.code, &u.body["spec"]["drivers"][0]["allocatable"]["count"]), (200, &json!(8)));
    // Compared as kube compares them: an empty list is no list.
    let bare =
        json!({"metadata": {"name": "node-2"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n-9"}]}});
    let created = c.post(&nodes, &bare).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut emptied = created.body.clone();
    emptied["spec"]["drivers"][0]["topologyKeys"] = json!([]);
    assert_eq!(c.put(&format!("{nodes}/node-2"), &emptied).await.code, 200);
    let mut moved = u.body.clone();
    moved["spec"]["drivers"][0]["nodeID"] = json!("n-2");
    let refused = c.put(&format!("{nodes}/node-1"), &moved).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "CSINode.storage.k8s.io \"node-1\" is invalid: spec.drivers: Invalid value: {\"Name\":\"csi.example.com\",\"NodeID\":\"n-2\",\"TopologyKeys\":[\"topology.example.com/zone\"],\"Allocatable\":null}: field is immutable"
    );
    let nameless =
        c.post(&nodes, &json!({"metadata": {"name": "node-2"}, "spec": {"drivers": [{"nodeID": "x"}]}})).await;
    assert_eq!(nameless.code, 422, "{}", nameless.body);
    assert_eq!(causes(&nameless)[0], "spec.drivers[0].name: Required value");
}

#[tokio::test]
async fn volume_attachments_start_detached_and_change_only_their_status() {
    let s = server().await;
    let c = Client::new(&s);
    let attachments = format!("{STORAGE}/volumeattachments");
    let va = json!({"metadata": {"name": "va-1"}, "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
        "source": {"persistentVolumeName": "pv-1"}}, "status": {"attached": true}});
    let r = c.post(&attachments, &va).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"], json!({"attached": false}));
    assert_eq!(r.body["metadata"].get("generation"), None);

    // The resource itself keeps the stored status; `/status` sets it.
    let mut claimed = r.body.clone();
    claimed["status"]["attached"] = json!(true);
    let u = c.put(&format!("{attachments}/va-1"), &claimed).await;
    assert_eq!((u.code, &u.body["status"]["attached"]), (200, &json!(false)));
    let mut attached = u.body.clone();
    attached["status"] = json!({"attached": true, "attachmentMetadata": {"devicePath": "/dev/xvdb"}});
    attached["spec"]["nodeName"] = json!("node-9");
    let st = c.put(&format!("{attachments}/va-1/status"), &attached).await;
    assert_eq!(st.code, 200, "{}", st.body);
    assert_eq!(st.body["status"]["attached"], true);
    assert_eq!(st.body["spec"]["nodeName"], "node-1");

    let moved = c
        .patch(&format!("{attachments}/va-1"), "application/merge-patch+json", &json!({"spec": {"nodeName": "node-2"}}))
        .await;
    assert_eq!(moved.code, 422, "{}", moved.body);
    assert_eq!(
        moved.body["message"],
        "VolumeAttachment.storage.k8s.io \"va-1\" is invalid: spec: Invalid value: {\"Attacher\":\"csi.example.com\",\"Source\":{\"PersistentVolumeName\":\"pv-1\",\"InlineVolumeSpec\":null},\"NodeName\":\"node-2\"}: field is immutable"
    );
    let failing = c
        .patch(
            &format!("{attachments}/va-1/status"),
            "application/merge-patch+json",
            &json!({"status": {"attachError": {"message": "x".repeat(1025), "errorCode": -1}}}),
        )
        .await;
    assert_eq!(failing.code, 422, "{}", failing.body);
    // kube judges the object twice on an update: each cause comes twice, named once.
    assert_eq!(
        causes(&failing),
        [
            "status.attachError.message: Too long: may not be more than 262144 bytes",
            "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            "status.attachError.message: Too long: may not be more than 262144 bytes",
            "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ]
    );
    let sourceless = c
        .post(&attachments, &json!({"metadata": {"name": "va-2"}, "spec": {"attacher": "csi.example.com", "nodeName": "n", "source": {}}}))
        .await;
    assert_eq!(
        sourceless.body["message"],
        "VolumeAttachment.storage.k8s.io \"va-2\" is invalid: spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    );
}

#[tokio::test]
async fn capacities_and_attribute_classes_follow_their_strategies() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let capacities = format!("{STORAGE}/namespaces/fixtures/csistoragecapacities");
    let capacity = json!({"metadata": {"name": "fast-zone-a"}, "storageClassName": "fast", "capacity": "100Gi",
        "nodeTopology": {"matchLabels": {"failure-domain.beta.kubernetes.io/zone": "a"}}});
    let r = c.post(&capacities, &capacity).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        [
            "299 - \"nodeTopology.matchLabels.failure-domain.beta.kubernetes.io/zone: deprecated since v1.17; use \\\"topology.kubernetes.io/zone\\\" instead\""
        ]
    );
    let reclassed = c
        .patch(
            &format!("{capacities}/fast-zone-a"),
            "application/merge-patch+json",
            &json!({"storageClassName": "slow"}),
        )
        .await;
    assert_eq!(causes(&reclassed), ["storageClassName: Invalid value: \"slow\": field is immutable"]);
    // kube prints no columns of its own for capacities.
    let table = c.get_accepting(&capacities, "application/json;as=Table;v=v1;g=meta.k8s.io").await;
    let names: Vec<&str> =
        table.body["columnDefinitions"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Name", "Created At"]);
    let cluster_wide = c.post(&format!("{STORAGE}/csistoragecapacities"), &capacity).await;
    assert_eq!(cluster_wide.code, 405, "{}", cluster_wide.body);

    let classes = format!("{STORAGE}/volumeattributesclasses");
    let class = json!({"metadata": {"name": "gold"}, "driverName": "csi.example.com", "parameters": {"iops": "3000"}});
    let r = c.post(&classes, &class).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // A PUT may leave the version out.
    let mut labelled = class.clone();
    labelled["metadata"]["labels"] = json!({"tier": "gold"});
    let u = c.put(&format!("{classes}/gold"), &labelled).await;
    assert_eq!(u.code, 200, "{}", u.body);
    labelled["parameters"]["iops"] = json!("6000");
    let refused = c.put(&format!("{classes}/gold"), &labelled).await;
    assert_eq!(
        refused.body["message"],
        "VolumeAttributesClass.storage.k8s.io \"gold\" is invalid: parameters: Forbidden: updates to parameters are forbidden."
    );
}

#[tokio::test]
async fn runtime_classes_are_created_by_a_put_and_keep_their_handler() {
    let s = server().await;
    let c = Client::new(&s);
    let class = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
        "handler": "runsc", "overhead": {"podFixed": {"memory": "64Mi"}},
        "scheduling": {"nodeSelector": {"beta.kubernetes.io/os": "linux"}}});
    let r = c.put(&format!("{RUNTIME_CLASSES}/gvisor"), &class).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        ["299 - \"scheduling.nodeSelector: deprecated since v1.14; use \\\"kubernetes.io/os\\\" instead\""]
    );
    assert_eq!(r.body["metadata"].get("generation"), None);
    let mut renamed = r.body.clone();
    renamed["handler"] = json!("kata");
    let refused = c.put(&format!("{RUNTIME_CLASSES}/gvisor"), &renamed).await;
    assert_eq!(
        refused.body["message"],
        "RuntimeClass.node.k8s.io \"gvisor\" is invalid: handler: Invalid value: \"kata\": field is immutable"
    );
    let dotted = c.post(RUNTIME_CLASSES, &json!({"metadata": {"name": "kata"}, "handler": "kata.v2"})).await;
    assert_eq!(causes(&dotted), ["handler: Invalid value: \"kata.v2\": must not contain dots"]);
    let gone = c.delete(&format!("{RUNTIME_CLASSES}/gvisor")).await;
    assert_eq!((gone.code, gone.body["kind"].as_str()), (200, Some("Status")));
}

#[tokio::test]
async fn kubectl_prints_the_kinds_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    let post = |path: String, v: Value| {
        let c = &c;
        async move {
            let r = c.post(&path, &v).await;
            assert_eq!(r.code, 201, "{}", r.body);
        }
    };
    post(format!("{STORAGE}/csidrivers"), json!({"metadata": {"name": "csi.example.com"}, "spec": {"tokenRequests": [{"audience": "vault"}], "serviceAccountTokenInSecrets": true}})).await;
    post(
        format!("{STORAGE}/csinodes"),
        json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n-1"}]}}),
    )
    .await;
    post(
        format!("{STORAGE}/volumeattachments"),
        json!({"metadata": {"name": "va-1"}, "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}}),
    )
    .await;
    post(
        format!("{STORAGE}/volumeattributesclasses"),
        json!({"metadata": {"name": "gold", "annotations": {"volumeattributesclass.alpha.kubernetes.io/is-default-class": "true"}},
            "driverName": "csi.example.com", "parameters": {"iops": "3000"}}),
    )
    .await;
    post(RUNTIME_CLASSES.to_string(), json!({"metadata": {"name": "gvisor"}, "handler": "runsc"})).await;

    let kubectl = KubectlTables::new(&s, "kubectl-csi");
    let get = |kind: &'static str| kubectl.get(kind);
    let rows = get("csidrivers").await;
    assert_eq!(
        rows[0],
        [
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE"
        ]
    );
    assert_eq!(rows[1][..7], ["csi.example.com", "true", "false", "false", "vault", "false", "Persistent"]);
    let rows = get("csinodes").await;
    assert_eq!(rows[0], ["NAME", "DRIVERS", "AGE"]);
    assert_eq!(rows[1][..2], ["node-1", "1"]);
    let rows = get("volumeattachments").await;
    assert_eq!(rows[0], ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]);
    assert_eq!(rows[1][..5], ["va-1", "csi.example.com", "pv-1", "node-1", "false"]);
    let rows = get("vac").await;
    assert_eq!(rows[0], ["NAME", "DRIVERNAME", "AGE"]);
    assert_eq!(rows[1][..3], ["gold", "(default)", "csi.example.com"]);
    let rows = get("runtimeclasses").await;
    assert_eq!(rows[0], ["NAME", "HANDLER", "AGE"]);
    assert_eq!(rows[1][..2], ["gvisor", "runsc"]);
}

#[tokio::test]
async fn kube_rs_reads_and_writes_the_kinds_typed() {
    use k8s_openapi::api::node::v1::RuntimeClass;
    use k8s_openapi::api::storage::v1::{CSIDriver, CSIStorageCapacity, VolumeAttachment};
    use kube::api::{Api, PostParams};
    let s = server().await;
    let client = kube_client(&s).await;
    let drivers: Api<CSIDriver> = Api::all(client.clone());
    let driver: CSIDriver =
        serde_json::from_value(json!({"metadata": {"name": "csi.example.com"}, "spec": {}})).unwrap();
    let created = drivers.create(&PostParams::default(), &driver).await.unwrap();
    let spec = created.spec;
    assert_eq!((spec.attach_required, spec.volume_lifecycle_modes), (Some(true), Some(vec!["Persistent".to_string()])));
    let attachments: Api<VolumeAttachment> = Api::all(client.clone());
    let va: VolumeAttachment = serde_json::from_value(json!({"metadata": {"name": "va-1"},
        "spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}}))
    .unwrap();
    attachments.create(&PostParams::default(), &va).await.unwrap();
    let mut read = attachments.get("va-1").await.unwrap();
    read.status.as_mut().unwrap().attached = true;
    let written = attachments.replace_status("va-1", &PostParams::default(), &read).await.unwrap();
    assert!(written.status.unwrap().attached);
    let capacities: Api<CSIStorageCapacity> = Api::namespaced(client.clone(), "default");
    let capacity: CSIStorageCapacity =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "storageClassName": "fast", "capacity": "1Ti"}))
            .unwrap();
    capacities.create(&PostParams::default(), &capacity).await.unwrap();
    assert_eq!(capacities.list(&Default::default()).await.unwrap().items.len(), 1);
    let classes: Api<RuntimeClass> = Api::all(client);
    let class: RuntimeClass =
        serde_json::from_value(json!({"metadata": {"name": "gvisor"}, "handler": "runsc"})).unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    assert_eq!(classes.get("gvisor").await.unwrap().handler, "runsc");
}

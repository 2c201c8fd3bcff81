//! What a create keeps of the status it is sent, as kube-apiserver's create strategies decide:
//! for every resource with a `status` subresource but Nodes, nothing — the object starts with
//! the status its strategy gives it (kube's serialization of an empty status, a pod's phase and
//! QoS class, a gated pod's `PodScheduled` condition, a PersistentVolume's phase), which the
//! answer, a later read and a watch all show; the creating manager owns none of it. A custom
//! resource drops its status when the status is a subresource and keeps it otherwise; the
//! status is then written through `/status`, as a kube-rs controller writes it.

mod common;

use common::*;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SENT: &str = "sent by the client";

/// The managers that own fields under `status`, as the object records them (which must record
/// some manager).
fn status_owners(obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let managers = obj["metadata"]["managedFields"].as_array().expect("managedFields");
    assert!(!managers.is_empty(), "{obj}");
    for m in managers {
        if m["fieldsV1"].get("f:status").is_some() {
            out.push(m["manager"].as_str().unwrap_or("").to_string());
        }
    }
    out
}

#[tokio::test]
async fn built_in_resources_start_with_their_strategys_status() {
    let s = server_without_disruption_controller().await;
    let c = Client::new(&s);
    let pods = c.watch(&format!("{PODS}?watch=true")).await;
    let spec_of = |kind: &str| match kind {
        "Deployment" | "ReplicaSet" | "DaemonSet" => json!({"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}),
        "PodDisruptionBudget" => json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}),
        "Service" => json!({"ports": [{"port": 80}]}),
        "PersistentVolumeClaim" => json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}),
        "PersistentVolume" => json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv"}}),
        _ => unreachable!(),
    };
    let cases = [
        ("/apis/apps/v1/namespaces/default/deployments", "apps/v1", "Deployment", json!({})),
        ("/apis/apps/v1/namespaces/default/replicasets", "apps/v1", "ReplicaSet", json!({"replicas": 0})),
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            "apps/v1",
            "DaemonSet",
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            "policy/v1",
            "PodDisruptionBudget",
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        ),
        ("/api/v1/namespaces/default/services", "v1", "Service", json!({"loadBalancer": {}})),
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            "v1",
            "PersistentVolumeClaim",
            json!({"phase": "Pending"}),
        ),
    ];
    for (path, api_version, kind, want) in cases {
        let body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"}, "spec": spec_of(kind),
            "status": {"replicas": 7, "phase": "Bound", "conditions": [{"type": "Ready", "status": "True", "message": SENT}]}});
        let r = c.post(path, &body).await;
        assert_eq!(r.code, 201, "{kind}: {}", r.body);
        assert_eq!(r.body["status"], want, "{kind}: the answer");
        assert_eq!(status_owners(&r.body), Vec::<String>::new(), "{kind}: the creator owns no status");
        let read = c.get(&format!("{path}/a")).await;
        assert_eq!(read.body["status"], want, "{kind}: a read");
        // The status is written through its subresource.
        let patch = match kind {
            // (A load balancer's ingress is only a LoadBalancer's.)
            "Service" => json!({"status": {"conditions": [{"type": "Published", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Done", "message": ""}]}}),
            "PersistentVolumeClaim" => json!({"status": {"phase": "Bound"}}),
            _ => json!({"status": {"observedGeneration": 1}}),
        };
        let r = c.patch(&format!("{path}/a/status"), "application/merge-patch+json", &patch).await;
        assert_eq!(r.code, 200, "{kind}: {}", r.body);
        let written = patch["status"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(&r.body["status"][written.0], written.1, "{kind}: {}", r.body);
    }

    // A dry run answers the same.
    let body = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "dry"},
        "spec": spec_of("ReplicaSet"), "status": {"replicas": 7}});
    let r = c.post("/apis/apps/v1/namespaces/default/replicasets?dryRun=All", &body).await;
    assert_eq!((r.code, &r.body["status"]), (201, &json!({"replicas": 0})), "{}", r.body);

    // A PersistentVolume is Pending from the moment it is created.
    let body = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": spec_of("PersistentVolume"), "status": {"phase": "Bound", "message": SENT}});
    let r = c.post("/api/v1/persistentvolumes", &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = r.body["status"].as_object().unwrap();
    assert_eq!(status.keys().collect::<Vec<_>>(), ["lastPhaseTransitionTime", "phase"]);
    assert_eq!(status["phase"], "Pending");
    assert_eq!(status["lastPhaseTransitionTime"], r.body["metadata"]["creationTimestamp"]);

    // Pods: Pending with their QoS class; a gated pod is unscheduled for that reason.
    let mut gated = pod("gated", json!({}));
    gated["spec"]["schedulingGates"] = json!([{"name": "example.com/quota"}]);
    gated["status"] = json!({"phase": "Running", "podIP": "10.0.0.9",
        "conditions": [{"type": "PodScheduled", "status": "True", "message": SENT}]});
    let r = c.post(PODS, &gated).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = &r.body["status"];
    assert_eq!(
        (&status["phase"], &status["qosClass"], status.get("podIP")),
        (&json!("Pending"), &json!("BestEffort"), None)
    );
    assert_eq!(
        status["conditions"],
        json!([{"type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": r.body["metadata"]["creationTimestamp"], "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"}])
    );
    let mut plain = pod("plain", json!({}));
    plain["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    let r = c.post(PODS, &plain).await;
    assert_eq!(r.body["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    // Watchers see the objects as created.
    let mut pods = pods;
    let added = until(&mut pods, "the gated pod", |e| e["object"]["metadata"]["name"] == "gated").await;
    assert_eq!((&added["type"], &added["object"]["status"]), (&json!("ADDED"), status));

    // Nodes are registered by their kubelet with a status, which they keep.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True", "message": SENT}]}});
    let r = c.post("/api/v1/nodes", &node).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"]["conditions"][0]["message"], SENT);
    assert_eq!(r.body["status"]["allocatable"], json!({"cpu": "4"}));
}

#[tokio::test]
async fn status_writes_are_stored_with_the_counts_kube_always_writes() {
    let s = server_without_disruption_controller().await;
    let c = Client::new(&s);
    let path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let body = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}});
    let mut pdb = c.post(path, &body).await.body;
    // A status written whole, without the counts a typed client would send as zeros.
    pdb["status"] = json!({"observedGeneration": 1, "disruptionsAllowed": 2});
    let r = c.put(&format!("{path}/b/status"), &pdb).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["status"],
        json!({"observedGeneration": 1, "disruptionsAllowed": 2, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
    );
    let read = c.get(&format!("{path}/b")).await;
    assert_eq!(read.body["status"], r.body["status"], "stored as answered");
    // A status left out is the empty one, with its counts.
    let rs_path = "/apis/apps/v1/namespaces/default/replicasets";
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    let mut rs = c.post(rs_path, &rs).await.body;
    let r = c
        .patch(&format!("{rs_path}/r/status"), "application/merge-patch+json", &json!({"status": {"readyReplicas": 1}}))
        .await;
    assert_eq!(r.body["status"], json!({"replicas": 0, "readyReplicas": 1}), "{}", r.body);
    rs["status"] = Value::Null;
    rs["metadata"]["resourceVersion"] = r.body["metadata"]["resourceVersion"].clone();
    let r = c.put(&format!("{rs_path}/r/status"), &rs).await;
    assert_eq!((r.code, &r.body["status"]), (200, &json!({"replicas": 0})), "{}", r.body);

    // A load balancer's address written through /status gets its mode there, so a later write of
    // the Service itself leaves the status as it is.
    let svc_path = "/api/v1/namespaces/default/services";
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
    let mut svc = c.post(svc_path, &svc).await.body;
    svc["status"] = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}});
    let r = c.put(&format!("{svc_path}/lb/status"), &svc).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP"}]}}));
    let r = c
        .patch(&format!("{svc_path}/lb"), "application/merge-patch+json", &json!({"metadata": {"labels": {"x": "1"}}}))
        .await;
    assert_eq!(r.body["status"], json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP"}]}}));

    // An autoscaler's list of current metrics is written even when there is none.
    let path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let body = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
    let mut hpa = c.post(path, &body).await.body;
    hpa["status"] = json!({"currentReplicas": 2, "currentMetrics": []});
    let r = c.put(&format!("{path}/h/status"), &hpa).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], json!({"currentReplicas": 2, "desiredReplicas": 0, "currentMetrics": null}));
}

#[tokio::test]
async fn a_v1_autoscaler_created_with_status_annotations_loses_them() {
    let s = server().await;
    let c = Client::new(&s);
    let current = r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":50,"currentAverageValue":"100m"}}]"#;
    let conditions = r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]"#;
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "annotations": {
            "autoscaling.alpha.kubernetes.io/current-metrics": current,
            "autoscaling.alpha.kubernetes.io/conditions": conditions, "team": "a"}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3},
        "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 50}});
    let r = c.post("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"], json!({"currentReplicas": 0, "desiredReplicas": 0}));
    assert_eq!(r.body["metadata"]["annotations"], json!({"team": "a"}));
    let v2 = c.get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web").await;
    assert_eq!(v2.body["status"], json!({"desiredReplicas": 0, "currentMetrics": null}));
    let body = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}, "maxReplicas": 3},
        "status": {"currentReplicas": 2, "desiredReplicas": 3}});
    let r = c.post("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", &body).await;
    assert_eq!(r.body["status"], json!({"desiredReplicas": 0, "currentMetrics": null}), "{}", r.body);
}

/// A namespaced definition of `example.org/v1` `kind` (plural `<kind>s`), with or without the
/// status subresource, whose status has the schema `status` (JSON).
fn crd(kind: &str, subresource: bool, status: Value) -> Value {
    let (singular, plural) = (kind.to_lowercase(), format!("{}s", kind.to_lowercase()));
    let mut version = json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "status": status}}}});
    if subresource {
        version["subresources"] = json!({"status": {}});
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.org")},
        "spec": {"group": "example.org", "scope": "Namespaced", "versions": [version],
            "names": {"plural": plural, "singular": singular, "kind": kind, "listKind": format!("{kind}List")}}})
}

fn dynamic(kind: &str, name: &str) -> (ApiResource, DynamicObject) {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.org", "v1", kind));
    let mut obj = DynamicObject::new(name, &ar);
    obj.data = json!({"spec": {"size": 1}, "status": {"ready": true, "message": SENT}});
    (ar, obj)
}

#[tokio::test]
async fn custom_resources_drop_their_status_only_when_it_is_a_subresource() {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let defaulted = json!({"type": "object", "default": {"phase": "New"}, "properties": {
        "phase": {"type": "string"}, "ready": {"type": "boolean"}, "message": {"type": "string"}}});
    let s = informer_apiserver::testing::builder()
        .crd(crd("Gadget", true, open.clone()).to_string())
        .crd(crd("Widget", false, open).to_string())
        .crd(crd("Gizmo", true, defaulted).to_string())
        .start()
        .await
        .unwrap();
    let client = kube_client(&s).await;

    let (ar, gadget) = dynamic("Gadget", "g1");
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let created = gadgets.create(&PostParams::default(), &gadget).await.unwrap();
    assert_eq!(created.data.get("status"), None, "{:?}", created.data);
    assert_eq!(created.data["spec"], json!({"size": 1}));
    // A controller writes it through the subresource.
    let patch = Patch::Merge(json!({"status": {"ready": true}}));
    let written = gadgets.patch_status("g1", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(written.data["status"], json!({"ready": true}));
    assert_eq!(written.metadata.generation, Some(1));

    // An apply that creates drops it too, and records no status fields for its manager.
    let (_, mut applied) = dynamic("Gadget", "g2");
    applied.metadata.namespace = Some("default".into());
    let applied = gadgets.patch("g2", &PatchParams::apply("tests"), &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(applied.data.get("status"), None, "{:?}", applied.data);
    let raw = Client::new(&s).get("/apis/example.org/v1/namespaces/default/gadgets/g2").await.body;
    assert_eq!(status_owners(&raw), Vec::<String>::new(), "{raw}");

    // A schema's default for the status fills it in, as kube fills it reading the object back.
    let (ar, gizmo) = dynamic("Gizmo", "z1");
    let gizmos: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let created = gizmos.create(&PostParams::default(), &gizmo).await.unwrap();
    assert_eq!(created.data["status"], json!({"phase": "New"}));

    // Without the subresource the status is part of the object.
    let (ar, widget) = dynamic("Widget", "w1");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let created = widgets.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(created.data["status"], json!({"ready": true, "message": SENT}));
}

//! resource.k8s.io/v1, dynamic resource allocation, over HTTP: DeviceClasses, ResourceClaims and
//! their `status`, ResourceClaimTemplates and ResourceSlices, discovered where kube-apiserver v1.35
//! lists them, with its defaults, dropped fields of features it leaves off, refusals, warnings,
//! generations, field selectors, admin-access rule and tables as `kubectl get` shows them, and
//! kube-rs's typed clients.

mod common;

use common::tools::KubectlTables;
use common::*;
use serde_json::{Value, json};

const RESOURCE: &str = "/apis/resource.k8s.io/v1";
const CLAIMS: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";

fn claim(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
            "tolerations": [{"key": "example.com/unhealthy", "operator": "Exists"}]}}]}}})
}

fn slice(name: &str, node: &str, driver: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"driver": driver, "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}, "capacity": {"memory": {"value": "40Gi"}}}]}})
}

#[tokio::test]
async fn the_group_is_discovered_where_kube_lists_it() {
    let s = server().await;
    let c = Client::new(&s);
    assert_listed_after(&c, &[("discovery.k8s.io", "resource.k8s.io")]).await;
    let v1 = c.get(RESOURCE).await;
    let resource = |name: &str| {
        v1.body["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap_or(Value::Null)
    };
    for (name, kind, namespaced) in [
        ("deviceclasses", "DeviceClass", false),
        ("resourceclaims", "ResourceClaim", true),
        ("resourceclaims/status", "ResourceClaim", true),
        ("resourceclaimtemplates", "ResourceClaimTemplate", true),
        ("resourceslices", "ResourceSlice", false),
    ] {
        let r = resource(name);
        assert_eq!((r["kind"].as_str(), r["namespaced"].as_bool()), (Some(kind), Some(namespaced)), "{name}: {r}");
    }
    assert_eq!(api_service_priorities(&c, "v1.resource.k8s.io").await, (Some(16200), Some(21)));
}

#[tokio::test]
async fn claims_are_defaulted_and_keep_their_spec() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(CLAIMS, &claim("gpu")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let request = &r.body["spec"]["devices"]["requests"][0]["exactly"];
    assert_eq!((request["allocationMode"].as_str(), request["count"].as_i64()), (Some("ExactCount"), Some(1)));
    assert_eq!(request.get("tolerations"), None, "device taints are off in kube v1.35: {request}");
    assert_eq!(r.body["status"], json!({}));
    assert_eq!(r.body["metadata"].get("generation"), None);

    // The spec cannot change; the metadata can.
    let mut changed = r.body.clone();
    changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
    let refused = c.put(&format!("{CLAIMS}/gpu"), &changed).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        causes(&refused),
        [
            "spec: Invalid value: {\"Devices\":{\"Requests\":[{\"Name\":\"gpu\",\"Exactly\":{\"DeviceClassName\":\"gpu.example.com\",\"Selectors\":null,\"AllocationMode\":\"ExactCount\",\"Count\":2,\"AdminAccess\":null,\"Tolerations\":null,\"Capacity\":null},\"FirstAvailable\":null}],\"Constraints\":null,\"Config\":null}}: field is immutable"
        ]
    );
    assert_eq!(
        refused.body["message"],
        format!("ResourceClaim.resource.k8s.io \"gpu\" is invalid: {}", causes(&refused)[0])
    );
    let mut labelled = r.body.clone();
    labelled["metadata"]["labels"] = json!({"team": "ml"});
    labelled["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]});
    let kept = c.put(&format!("{CLAIMS}/gpu"), &labelled).await;
    assert_eq!(kept.code, 200, "{}", kept.body);
    assert_eq!((kept.body["metadata"]["labels"]["team"].as_str(), &kept.body["status"]), (Some("ml"), &json!({})));

    let bad = json!({"metadata": {"name": "bad"}, "spec": {"devices": {"requests": [
        {"name": "a", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}},
        {"name": "a"}], "constraints": [{"requests": ["b"], "matchAttribute": "model"}]}}});
    let r = c.post(CLAIMS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
            "spec.devices.requests[1]: Required value: exactly one of `exactly` or `firstAvailable` is required",
            "spec.devices.requests[1]: Duplicate value: \"a\"",
            "spec.devices.constraints[0].requests[0]: Invalid value: \"b\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            "spec.devices.constraints[0].matchAttribute: Invalid value: \"model\": a fully qualified name must be a domain and a name separated by a slash",
        ]
    );
    let deleted = c.delete(&format!("{CLAIMS}/gpu")).await;
    assert_eq!((deleted.code, deleted.body["kind"].as_str()), (200, Some("ResourceClaim")), "{}", deleted.body);
}

#[tokio::test]
async fn a_claim_s_status_is_allocated_reserved_and_judged() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(CLAIMS, &claim("gpu")).await.body;
    let status_path = format!("{CLAIMS}/gpu/status");
    let mut reserved = created.clone();
    reserved["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]});
    let refused = c.put(&status_path, &reserved).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(causes(&refused), ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]);

    let allocation = json!({"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1",
        "device": "gpu-0", "tolerations": [{"key": "k", "effect": "NoSchedule"}], "bindingConditions": ["ready"]}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}});
    let mut allocated = created.clone();
    allocated["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(5);
    allocated["status"] = json!({"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
        "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0", "data": {"health": "ok"}}]});
    // What a status write says of the metadata is not taken: the stored finalizers stay.
    let protect = json!({"metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}});
    let held = c.patch(&format!("{CLAIMS}/gpu"), "application/merge-patch+json", &protect).await;
    assert_eq!(held.code, 200, "{}", held.body);
    allocated["metadata"]["resourceVersion"] = held.body["metadata"]["resourceVersion"].clone();
    allocated["metadata"]["labels"] = json!({"bad label": "x"});
    let r = c.put(&status_path, &allocated).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"], created["spec"], "a status write keeps the spec");
    assert_eq!(r.body["metadata"]["finalizers"], json!(["resource.kubernetes.io/delete-protection"]));
    assert_eq!(r.body["metadata"].get("labels"), None);
    let result = &r.body["status"]["allocation"]["devices"]["results"][0];
    assert_eq!(result["tolerations"][0]["operator"], "Equal", "{result}");
    assert_eq!(result.get("bindingConditions"), None, "binding conditions are off in kube v1.35: {result}");
    assert_eq!(r.body["status"]["devices"][0]["data"]["health"], "ok");

    // An allocation cannot change once made; it can go (and its device statuses with it).
    let mut moved = r.body.clone();
    moved["status"]["allocation"]["devices"]["results"][0]["device"] = json!("gpu-1");
    let refused = c.put(&status_path, &moved).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    let cause = &causes(&refused)[0];
    assert!(
        cause.starts_with("status.allocation: Invalid value: {\"Devices\":{\"Results\":[{\"Request\":\"gpu\""),
        "{cause}"
    );
    assert!(cause.ends_with("}: field is immutable"), "{cause}");
    let mut released = r.body.clone();
    released["status"] = json!({"devices": r.body["status"]["devices"].clone()});
    let r = c.put(&status_path, &released).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"], json!({}), "the deallocated device's status goes");
}

#[tokio::test]
async fn admin_access_needs_a_namespace_that_grants_it() {
    let s = server().await;
    let c = Client::new(&s);
    create_namespaces(&s, &["tools", "admin"]).await.unwrap();
    let labelled = c
        .patch(
            "/api/v1/namespaces/admin",
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"resource.kubernetes.io/admin-access": "true"}}}),
        )
        .await;
    assert_eq!(labelled.code, 200, "{}", labelled.body);
    let admin = json!({"metadata": {"name": "monitor"}, "spec": {"devices": {"requests": [
        {"name": "all", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All", "adminAccess": true}}]}}});
    let r = c.post("/apis/resource.k8s.io/v1/namespaces/tools/resourceclaims", &admin).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
        ]
    );
    let template = json!({"metadata": {"name": "monitor"}, "spec": {"spec": admin["spec"].clone()}});
    let r = c.post("/apis/resource.k8s.io/v1/namespaces/tools/resourceclaimtemplates", &template).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(causes(&r).len(), 1, "{}", r.body);
    let r = c.post("/apis/resource.k8s.io/v1/namespaces/admin/resourceclaims", &admin).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"], true);
}

#[tokio::test]
async fn templates_are_judged_whole_and_keep_their_spec() {
    let s = server().await;
    let c = Client::new(&s);
    let path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates";
    let template = json!({"metadata": {"name": "gpu"}, "spec": {"metadata": {"labels": {"app": "train"}}, "spec": claim("x")["spec"].clone()}});
    let r = c.post(path, &template).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"], 1);
    let mut changed = r.body.clone();
    changed["spec"]["metadata"]["labels"]["app"] = json!("serve");
    let refused = c.put(&format!("{path}/gpu"), &changed).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    let cause = &causes(&refused)[0];
    assert!(
        cause.starts_with("spec: Invalid value: {\"labels\":{\"app\":\"serve\"},\"Spec\":{\"Devices\":"),
        "{cause}"
    );
    let bad = json!({"metadata": {"name": "bad"}, "spec": {"metadata": {"name": "x", "uid": "u", "labels": {"a b": "c"}, "finalizers": []},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {}}]}}}});
    let r = c.post(path, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let got = causes(&r);
    assert!(got[0].starts_with("spec.metadata.labels: Invalid value: \"a b\""), "{got:?}");
    assert_eq!(
        got[1..],
        [
            "spec.metadata.name: Forbidden: cannot be set",
            "spec.metadata.uID: Forbidden: cannot be set",
            "spec.metadata.finalizers: Forbidden: cannot be set",
            "spec.spec.devices.requests[0].exactly.deviceClassName: Required value"
        ]
    );
}

#[tokio::test]
async fn device_classes_and_slices_move_their_generation_and_are_judged() {
    let s = server().await;
    let c = Client::new(&s);
    let classes = format!("{RESOURCE}/deviceclasses");
    let class = json!({"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
        "extendedResourceName": "example.com/gpu"}});
    let r = c.post(&classes, &class).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    assert_eq!(r.body["spec"].get("extendedResourceName"), None, "extended resources are off in kube v1.35");
    let mut changed = r.body.clone();
    changed["spec"]["selectors"][0]["cel"]["expression"] = json!("1 + 1");
    let refused = c.put(&format!("{classes}/gpu.example.com"), &changed).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(
        causes(&refused),
        [
            "spec.selectors[0].cel.expression: Invalid value: \"1 + 1\": must evaluate to bool or the unknown type, not int",
            "spec.selectors[0].cel.expression: Invalid value: \"1 + 1\": must evaluate to bool or the unknown type, not int",
        ],
        "judged twice on an update, as kube judges it"
    );
    changed["spec"]["selectors"][0]["cel"]["expression"] =
        json!("device.attributes['gpu.example.com'].model == 'a100'");
    let r = c.put(&format!("{classes}/gpu.example.com"), &changed).await;
    assert_eq!((r.code, r.body["metadata"]["generation"].as_i64()), (200, Some(2)), "{}", r.body);
    let deleted = c.delete(&format!("{classes}/gpu.example.com")).await;
    assert_eq!(deleted.body["kind"], "DeviceClass");

    let slices = format!("{RESOURCE}/resourceslices");
    let r = c.post(&slices, &slice("node-1-gpu", "node-1", "GPU.example.com")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(
        warnings,
        [
            "299 - \"spec.driver: driver names should be lowercase; \\\"GPU.example.com\\\" contains uppercase characters\""
        ]
    );
    assert_eq!(r.body["metadata"]["generation"], 1);
    let mut moved = r.body.clone();
    moved["spec"]["nodeName"] = json!("node-2");
    moved["spec"]["pool"]["generation"] = json!(2);
    let refused = c.put(&format!("{slices}/node-1-gpu"), &moved).await;
    assert_eq!(causes(&refused), ["spec.nodeName: Invalid value: \"node-2\": field is immutable"]);
    let mut bad = slice("both", "node-1", "gpu.example.com");
    bad["spec"]["allNodes"] = json!(true);
    bad["spec"]["devices"][0]["attributes"]["model"] = json!({"string": "a100", "int": 1});
    let r = c.post(&slices, &bad).await;
    assert_eq!(
        causes(&r),
        [
            "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
            "spec.devices[0].attributes[model]: Invalid value: {\"IntValue\":1,\"BoolValue\":null,\"StringValue\":\"a100\",\"VersionValue\":null}: exactly one value must be specified",
        ]
    );
}

#[tokio::test]
async fn slices_are_selected_by_node_and_driver() {
    let s = server().await;
    let c = Client::new(&s);
    let slices = format!("{RESOURCE}/resourceslices");
    for (name, node, driver) in
        [("a", "node-1", "gpu.example.com"), ("b", "node-2", "gpu.example.com"), ("c", "node-1", "nic.example.com")]
    {
        assert_eq!(c.post(&slices, &slice(name, node, driver)).await.code, 201);
    }
    let mut network = slice("d", "x", "nic.example.com");
    network["spec"].as_object_mut().unwrap().remove("nodeName");
    network["spec"]["allNodes"] = json!(true);
    assert_eq!(c.post(&slices, &network).await.code, 201);
    let names = |r: &Resp| -> Vec<String> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let r = c.get(&format!("{slices}?fieldSelector=spec.nodeName%3Dnode-1")).await;
    assert_eq!(names(&r), ["a", "c"]);
    let r = c.get(&format!("{slices}?fieldSelector=spec.driver%3Dgpu.example.com,spec.nodeName!%3Dnode-1")).await;
    assert_eq!(names(&r), ["b"]);
    let r = c.get(&format!("{slices}?fieldSelector=spec.nodeName%3D")).await;
    assert_eq!(names(&r), ["d"], "a slice for all nodes has no node name");
    let r = c.get(&format!("{slices}?fieldSelector=spec.pool.name%3Dnode-1")).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name"
    );
    let r = c.get(&format!("{RESOURCE}/deviceclasses?fieldSelector=spec.driver%3Dx")).await;
    assert_eq!(
        r.body["message"],
        "\"spec.driver\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
}

#[tokio::test]
async fn kubectl_prints_the_kinds_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    let class = json!({"metadata": {"name": "gpu.example.com"}, "spec": {}});
    assert_eq!(c.post(&format!("{RESOURCE}/deviceclasses"), &class).await.code, 201);
    assert_eq!(c.post(CLAIMS, &claim("pending")).await.code, 201);
    let allocated = c.post(CLAIMS, &claim("allocated")).await.body;
    let mut status = allocated.clone();
    status["status"] = json!({"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]});
    assert_eq!(c.put(&format!("{CLAIMS}/allocated/status"), &status).await.code, 200);
    assert_eq!(c.post(&format!("{RESOURCE}/resourceslices"), &slice("s", "node-1", "gpu.example.com")).await.code, 201);

    let kubectl = KubectlTables::new(&s, "kubectl-dra");
    let get = |kind: &'static str| kubectl.get(kind);
    let rows = get("deviceclasses").await;
    assert_eq!(
        (rows[0].clone(), rows[1][0].as_str()),
        (vec!["NAME".to_string(), "AGE".to_string()], "gpu.example.com")
    );
    let rows = get("resourceclaims").await;
    assert_eq!(rows[0], ["NAME", "STATE", "AGE"]);
    assert_eq!(
        (rows[1][..2].to_vec(), rows[2][..2].to_vec()),
        (
            vec!["allocated".to_string(), "allocated,reserved".to_string()],
            vec!["pending".to_string(), "pending".to_string()]
        )
    );
    let rows = get("resourceslices").await;
    assert_eq!(rows[0], ["NAME", "NODE", "DRIVER", "POOL", "AGE"]);
    assert_eq!(rows[1][..4], ["s", "node-1", "gpu.example.com", "node-1"]);
}

#[tokio::test]
async fn kube_rs_reads_and_writes_the_kinds_typed() {
    use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
    use kube::api::{Api, ListParams, PostParams};
    let s = server().await;
    let client = kube_client(&s).await;
    let classes: Api<DeviceClass> = Api::all(client.clone());
    let class: DeviceClass =
        serde_json::from_value(json!({"metadata": {"name": "gpu.example.com"}, "spec": {}})).unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "default");
    let typed: ResourceClaim = serde_json::from_value(claim("gpu")).unwrap();
    let created = claims.create(&PostParams::default(), &typed).await.unwrap();
    let request = created.spec.devices.unwrap().requests.unwrap().remove(0).exactly.unwrap();
    assert_eq!((request.allocation_mode.as_deref(), request.count), (Some("ExactCount"), Some(1)));
    let slices: Api<ResourceSlice> = Api::all(client);
    let typed: ResourceSlice = serde_json::from_value(slice("s", "node-1", "gpu.example.com")).unwrap();
    slices.create(&PostParams::default(), &typed).await.unwrap();
    let listed = slices.list(&ListParams::default().fields("spec.nodeName=node-1")).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(slices.list(&ListParams::default().fields("spec.nodeName=node-2")).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn claims_are_charged_the_devices_they_may_be_given() {
    let s = server().await;
    let c = Client::new(&s);
    let quotas = "/api/v1/namespaces/default/resourcequotas";
    let devices = "gpu.example.com.deviceclass.resource.k8s.io/devices";
    let mut w = c.watch(&format!("{quotas}?watch=true")).await;
    let quota = json!({"metadata": {"name": "gpus"}, "spec": {"hard": {devices: "3", "count/resourceclaims.resource.k8s.io": "5"}}});
    assert_eq!(c.post(quotas, &quota).await.code, 201);
    until(&mut w, "the quota's status", |e| e["object"]["status"].get("used").is_some()).await;
    let mut two = claim("two");
    two["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
    assert_eq!(c.post(CLAIMS, &two).await.code, 201);
    // The most any subrequest of a class may be given: two of the class, at worst.
    let either = json!({"metadata": {"name": "either"}, "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com", "count": 2},
        {"name": "small", "deviceClassName": "gpu.example.com", "count": 1}]}]}}});
    let r = c.post(CLAIMS, &either).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "resourceclaims.resource.k8s.io \"either\" is forbidden: exceeded quota: gpus, requested: {devices}=2, used: {devices}=2, limited: {devices}=3"
        )
    );
    assert_eq!(c.post(CLAIMS, &claim("one")).await.code, 201);
    let used = c.get(&format!("{quotas}/gpus")).await.body["status"]["used"].clone();
    assert_eq!(used, json!({devices: "3", "count/resourceclaims.resource.k8s.io": "2"}));
}

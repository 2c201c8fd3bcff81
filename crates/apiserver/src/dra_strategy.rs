//! What kube-apiserver v1.35's strategies for the resource.k8s.io/v1 kinds do to an object
//! before it is judged ([`crate::dra_validation`]): the v1 defaults of device requests, the fields
//! of the features v1.35 leaves off dropped, a claim's statuses of deallocated devices dropped,
//! and the admin-access rule that reads the claim's namespace.
//!
//! Invariants: a request given without an allocation mode asks for `ExactCount`, and one asking
//! for `ExactCount` without a count for one device (every subrequest of `firstAvailable` alike);
//! a toleration's operator is `Equal` unless given. A field of a feature that is off (device
//! taints and tolerations, partitionable devices, consumable capacity, binding conditions,
//! extended resource names) is dropped from every write, unless the stored object already uses
//! that feature (an update keeps what a server with the feature on wrote). Admin access to
//! devices is granted only in a namespace labelled `resource.kubernetes.io/admin-access: "true"`,
//! judged when a claim or template is created and when a claim's allocation first grants it.

use serde_json::{Map, Value, json};

use crate::cache::WatchCache;
use crate::registry::ResourceInfo;
use crate::structural::Cause;

const ADMIN_LABEL: &str = "resource.kubernetes.io/admin-access";

fn is(info: &ResourceInfo, plural: &str) -> bool {
    info.custom.is_none() && info.group == crate::dra_validation::GROUP && info.plural == plural
}

/// The spec a claim's requests sit in: a claim's `spec`, a template's `spec.spec`.
fn claim_spec<'a>(info: &ResourceInfo, obj: &'a mut Map<String, Value>) -> Option<&'a mut Map<String, Value>> {
    let spec = obj.get_mut("spec")?.as_object_mut()?;
    if is(info, "resourceclaimtemplates") {
        return spec.get_mut("spec")?.as_object_mut();
    }
    Some(spec)
}

/// The v1 defaults of a claim's or template's requests and tolerations, and of a claim's
/// allocated devices' tolerations.
pub(crate) fn decode(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if !is(info, "resourceclaims") && !is(info, "resourceclaimtemplates") {
        return;
    }
    if let Some(requests) = claim_spec(info, obj)
        .and_then(|s| s.get_mut("devices"))
        .and_then(|d| d.get_mut("requests"))
        .and_then(Value::as_array_mut)
    {
        for request in requests {
            if let Some(exactly) = request.get_mut("exactly").and_then(Value::as_object_mut) {
                default_request(exactly);
            }
            for sub in request.get_mut("firstAvailable").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(sub) = sub.as_object_mut() {
                    default_request(sub);
                }
            }
        }
    }
    decode_status(info, obj);
}

/// The v1 defaults of a claim's status: its allocated devices' tolerations.
pub(crate) fn decode_status(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if !is(info, "resourceclaims") {
        return;
    }
    let results = obj.get_mut("status").and_then(|s| s.pointer_mut("/allocation/devices/results"));
    for result in results.and_then(Value::as_array_mut).into_iter().flatten() {
        default_tolerations(result.get_mut("tolerations"));
    }
}

fn default_request(request: &mut Map<String, Value>) {
    let mode = request.get("allocationMode").and_then(Value::as_str).unwrap_or("");
    if mode.is_empty() {
        request.insert("allocationMode".into(), json!("ExactCount"));
    }
    let exact = request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount");
    if exact && request.get("count").and_then(Value::as_i64).unwrap_or(0) == 0 {
        request.insert("count".into(), json!(1));
    }
    default_tolerations(request.get_mut("tolerations"));
}

fn default_tolerations(tolerations: Option<&mut Value>) {
    for t in tolerations.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(t) = t.as_object_mut()
            && t.get("operator").and_then(Value::as_str).unwrap_or("").is_empty()
        {
            t.insert("operator".into(), json!("Equal"));
        }
    }
}

/// The fields of one feature that is off: paths whose `*` stands for every item of a list or
/// every value of a map.
type Feature = &'static [&'static [&'static str]];

const CLAIM_TAINTS: Feature = &[
    &["devices", "requests", "*", "exactly", "tolerations"],
    &["devices", "requests", "*", "firstAvailable", "*", "tolerations"],
];
const CLAIM_CAPACITY: Feature = &[
    &["devices", "constraints", "*", "distinctAttribute"],
    &["devices", "requests", "*", "exactly", "capacity"],
    &["devices", "requests", "*", "firstAvailable", "*", "capacity"],
];
const STATUS_CAPACITY: Feature = &[
    &["allocation", "devices", "results", "*", "shareID"],
    &["allocation", "devices", "results", "*", "consumedCapacity"],
    &["devices", "*", "shareID"],
];
const STATUS_BINDING: Feature = &[
    &["allocation", "devices", "results", "*", "bindingConditions"],
    &["allocation", "devices", "results", "*", "bindingFailureConditions"],
];
const CLASS_EXTENDED: Feature = &[&["extendedResourceName"]];
const SLICE_TAINTS: Feature = &[&["devices", "*", "taints"]];
const SLICE_PARTITIONABLE: Feature = &[
    &["sharedCounters"],
    &["perDeviceNodeSelection"],
    &["devices", "*", "consumesCounters"],
    &["devices", "*", "nodeName"],
    &["devices", "*", "nodeSelector"],
    &["devices", "*", "allNodes"],
];
const SLICE_BINDING: Feature = &[
    &["devices", "*", "bindingConditions"],
    &["devices", "*", "bindingFailureConditions"],
    &["devices", "*", "bindsToNode"],
];
const SLICE_CAPACITY: Feature =
    &[&["devices", "*", "allowMultipleAllocations"], &["devices", "*", "capacity", "*", "requestPolicy"]];

/// Whether anything is at `path` below `v` (an empty list or map is nothing).
fn uses(v: &Value, path: &[&str]) -> bool {
    match path.split_first() {
        None => crate::semantic::normalized(Some(v)).is_some(),
        Some((&"*", rest)) => match v {
            Value::Array(items) => items.iter().any(|i| uses(i, rest)),
            Value::Object(m) => m.values().any(|i| uses(i, rest)),
            _ => false,
        },
        Some((key, rest)) => v.get(*key).is_some_and(|c| uses(c, rest)),
    }
}

/// Removes whatever is at `path` below `v`.
fn drop_path(v: &mut Value, path: &[&str]) {
    match path {
        [] => {}
        [last] => {
            if let Value::Object(m) = v {
                m.remove(*last);
            }
        }
        [first, rest @ ..] if *first == "*" => match v {
            Value::Array(items) => items.iter_mut().for_each(|i| drop_path(i, rest)),
            Value::Object(m) => m.values_mut().for_each(|i| drop_path(i, rest)),
            _ => {}
        },
        [first, rest @ ..] => {
            if let Some(c) = v.get_mut(*first) {
                drop_path(c, rest);
            }
        }
    }
}

/// Drops the fields of each feature in `features` from `new` unless `old` uses it (or
/// `also_used` says the stored object uses it elsewhere).
fn drop_unless_used(
    new: Option<&mut Value>,
    old: Option<&Value>,
    features: &[Feature],
    also_used: &dyn Fn(Feature) -> bool,
) {
    let Some(new) = new else { return };
    for feature in features {
        if also_used(feature) || old.is_some_and(|old| feature.iter().any(|p| uses(old, p))) {
            continue;
        }
        for path in *feature {
            drop_path(new, path);
        }
    }
}

/// What a write of `obj` over `old` (None on create) keeps of the fields of features that are
/// off; `status` for a claim's `status` write, which also loses the statuses of devices its
/// allocation no longer holds.
pub(crate) fn drop_disabled(info: &ResourceInfo, obj: &mut Map<String, Value>, old: Option<&Value>, status: bool) {
    if info.custom.is_some() || info.group != crate::dra_validation::GROUP {
        return;
    }
    let old_spec = old.and_then(|o| o.get("spec"));
    let nowhere = |_: Feature| false;
    match info.plural.as_str() {
        "deviceclasses" => drop_unless_used(obj.get_mut("spec"), old_spec, &[CLASS_EXTENDED], &nowhere),
        "resourceslices" => drop_unless_used(
            obj.get_mut("spec"),
            old_spec,
            &[SLICE_TAINTS, SLICE_PARTITIONABLE, SLICE_BINDING, SLICE_CAPACITY],
            &nowhere,
        ),
        "resourceclaimtemplates" => {
            let new = obj.get_mut("spec").and_then(|s| s.get_mut("spec"));
            drop_unless_used(new, old_spec.and_then(|s| s.get("spec")), &[CLAIM_TAINTS, CLAIM_CAPACITY], &nowhere);
        }
        "resourceclaims" if status => {
            let old_status = old.and_then(|o| o.get("status"));
            // Consumable capacity is in use when the stored spec asks for it too.
            let in_spec = |f: Feature| {
                std::ptr::eq(f, STATUS_CAPACITY) && old_spec.is_some_and(|s| CLAIM_CAPACITY.iter().any(|p| uses(s, p)))
            };
            drop_unless_used(obj.get_mut("status"), old_status, &[STATUS_CAPACITY, STATUS_BINDING], &in_spec);
            drop_deallocated_statuses(obj, old_status);
        }
        "resourceclaims" => drop_unless_used(obj.get_mut("spec"), old_spec, &[CLAIM_TAINTS, CLAIM_CAPACITY], &nowhere),
        _ => {}
    }
}

/// kube's `dropDeallocatedStatusDevices`: a device status whose device the stored allocation held
/// and the new one does not is dropped; an empty list goes.
fn drop_deallocated_statuses(obj: &mut Map<String, Value>, old_status: Option<&Value>) {
    use crate::dra_validation::device_id;
    let allocated = |status: Option<&Value>| allocation_results(status).iter().map(device_id).collect::<Vec<_>>();
    let before = allocated(old_status);
    let now = allocated(obj.get("status"));
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else { return };
    if let Some(devices) = status.get_mut("devices").and_then(Value::as_array_mut) {
        devices.retain(|d| {
            let d = device_id(d);
            !before.contains(&d) || now.contains(&d)
        });
        if devices.is_empty() {
            status.remove("devices");
        }
    }
}

/// The results of a claim's allocation, given its status.
fn allocation_results(status: Option<&Value>) -> &[Value] {
    let results = status.and_then(|s| s.pointer("/allocation/devices/results")).and_then(Value::as_array);
    results.map(Vec::as_slice).unwrap_or_default()
}

/// The cause of admin access asked for outside a namespace that grants it, named at the first
/// request (or allocation result) asking for it: a create of a claim or template whose requests
/// ask for it, a claim's `status` write whose new allocation grants it (`old` is the stored
/// claim). It comes before every other cause.
pub(crate) fn admin_access(
    cache: &WatchCache,
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&Value>,
    status: bool,
) -> Vec<Cause> {
    let claims = is(info, "resourceclaims");
    if !claims && !is(info, "resourceclaimtemplates") {
        return Vec::new();
    }
    let asking: Vec<String> = match (old, status) {
        (None, _) => {
            let spec = obj.get("spec");
            let spec = if claims { spec } else { spec.and_then(|s| s.get("spec")) };
            let requests = spec.and_then(|s| s.pointer("/devices/requests")).and_then(Value::as_array);
            requests
                .into_iter()
                .flatten()
                .enumerate()
                .filter(|(_, r)| r.pointer("/exactly/adminAccess") == Some(&Value::Bool(true)))
                .map(|(i, _)| format!("spec.devices.requests[{i}].adminAccess"))
                .collect()
        }
        (Some(old), true) => {
            let admin = |r: &Value| r.get("adminAccess") == Some(&Value::Bool(true));
            if allocation_results(old.get("status")).iter().any(admin) {
                return Vec::new();
            }
            allocation_results(obj.get("status"))
                .iter()
                .enumerate()
                .filter(|(_, r)| r.get("adminAccess") == Some(&Value::Bool(true)))
                .map(|(i, _)| format!("status.allocation.devices.results[{i}].adminAccess"))
                .collect()
        }
        (Some(_), false) => Vec::new(),
    };
    let Some(at) = asking.into_iter().next() else { return Vec::new() };
    let namespace = obj.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("");
    let registry = cache.registry();
    let read = match registry.find("", "v1", "namespaces") {
        Some(ns) => cache.get(ns, "", namespace).map_err(|e| e.message),
        None => Ok(None),
    };
    let label = match read {
        Ok(Some(ns)) => ns.value().pointer("/metadata/labels").and_then(|l| l.get(ADMIN_LABEL)).cloned(),
        Ok(None) => {
            let missing = format!("namespaces {} not found", crate::structural::go_quote(namespace));
            return vec![internal(at, &missing)];
        }
        Err(e) => return vec![internal(at, &e)],
    };
    if label.is_some_and(|v| v == "true") {
        return Vec::new();
    }
    vec![crate::pod_validation::forbidden(
        at,
        "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace",
    )]
}

/// kube's `field.InternalError` of a namespace that could not be read.
fn internal(at: String, error: &str) -> Cause {
    Cause {
        reason: "InternalError",
        message: format!("Internal error: could not retrieve namespace to verify admin access: {error}"),
        field: at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(plural: &str) -> ResourceInfo {
        ResourceInfo::new(crate::dra_validation::GROUP, "v1", plural, "Kind", true)
    }

    #[test]
    fn requests_ask_for_one_device_unless_told_otherwise() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k"}]}},
            {"name": "b", "exactly": {"deviceClassName": "c", "allocationMode": "All"}},
            {"name": "c", "firstAvailable": [{"name": "x", "deviceClassName": "c", "count": 3}, {"name": "y", "deviceClassName": "c"}]}]}}})
        .as_object()
        .cloned()
        .unwrap();
        decode(&info("resourceclaims"), &mut claim);
        let requests = &claim["spec"]["devices"]["requests"];
        assert_eq!(requests[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(requests[0]["exactly"]["count"], 1);
        assert_eq!(requests[0]["exactly"]["tolerations"][0]["operator"], "Equal");
        assert_eq!(requests[1]["exactly"].get("count"), None);
        assert_eq!(requests[2]["firstAvailable"][0]["count"], 3);
        assert_eq!(requests[2]["firstAvailable"][1]["count"], 1);
    }

    #[test]
    fn fields_of_features_that_are_off_go_unless_already_used() {
        let slice = json!({"spec": {"driver": "d", "perDeviceNodeSelection": true,
            "devices": [{"name": "a", "taints": [{"key": "k", "effect": "NoSchedule"}], "nodeName": "n", "attributes": {"x": {"int": 1}}}]}});
        let mut created = slice.as_object().cloned().unwrap();
        drop_disabled(&info("resourceslices"), &mut created, None, false);
        assert_eq!(
            Value::Object(created),
            json!({"spec": {"driver": "d", "devices": [{"name": "a", "attributes": {"x": {"int": 1}}}]}})
        );
        let mut updated = slice.as_object().cloned().unwrap();
        drop_disabled(&info("resourceslices"), &mut updated, Some(&slice), false);
        assert_eq!(Value::Object(updated), slice);
    }

    #[test]
    fn statuses_of_devices_no_longer_allocated_go() {
        let old = json!({"status": {"allocation": {"devices": {"results": [{"driver": "d", "pool": "p", "device": "a"}]}},
            "devices": [{"driver": "d", "pool": "p", "device": "a"}]}});
        let mut new = json!({"status": {"devices": [{"driver": "d", "pool": "p", "device": "a"}, {"driver": "d", "pool": "p", "device": "b"}]}})
            .as_object()
            .cloned()
            .unwrap();
        drop_disabled(&info("resourceclaims"), &mut new, Some(&old), true);
        assert_eq!(new["status"], json!({"devices": [{"driver": "d", "pool": "p", "device": "b"}]}));
    }
}

//! kube-apiserver v1.35's rules for the storage.k8s.io/v1 kinds of CSI drivers: CSIDriver,
//! CSINode, VolumeAttachment, CSIStorageCapacity and VolumeAttributesClass (their metadata is
//! judged by [`crate::object_meta`]); and the warnings their strategies give.
//!
//! Invariants: each check is kube's, with its field path (kube's own spelling, such as
//! `spec.attachedRequired`), cause reason and message, in kube's order; an update is judged as
//! the object would be created, then by what it changes (CSINodes, VolumeAttachments and
//! VolumeAttributesClasses are judged twice on an update, so their causes repeat as kube's do;
//! the message names each once). A VolumeAttachment's `status` is judged wherever it is written.
//! What must not change is compared as kube compares it (a missing, null or empty list or map is
//! the same; a selector that is set, even empty, is not a missing one), and printed as kube
//! prints its internal types.

use serde_json::{Map, Value};

use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::registry::ResourceInfo;
use crate::semantic::equal;
use crate::structural::{Cause, go_json, go_quote, go_struct};
use crate::workload_validation::invalid_value;

const GROUP: &str = "storage.k8s.io";
const IMMUTABLE: &str = "field is immutable";

/// Whether `info` is one of the kinds these rules judge.
pub(crate) fn judges(info: &ResourceInfo) -> bool {
    info.group == GROUP
        && info.custom.is_none()
        && matches!(
            info.plural.as_str(),
            "csidrivers" | "csinodes" | "volumeattachments" | "csistoragecapacities" | "volumeattributesclasses"
        )
}

/// The causes of `obj`, of a kind these rules judge ([`judges`]), written over `old` (None on
/// create).
pub(crate) fn validate(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    match info.plural.as_str() {
        "csidrivers" => {
            csi_driver(obj, &mut causes);
            if let Some(old) = old {
                let (new, old) = (spec(obj), spec(old));
                if !equal(new.get("attachRequired"), old.get("attachRequired")) {
                    let shown = go_json(new.get("attachRequired").unwrap_or(&Value::Null));
                    causes.push(invalid_value("spec.attachedRequired", &shown, IMMUTABLE));
                }
                if !equal(new.get("volumeLifecycleModes"), old.get("volumeLifecycleModes")) {
                    let shown = go_json(new.get("volumeLifecycleModes").unwrap_or(&Value::Null));
                    causes.push(invalid_value("spec.volumeLifecycleModes", &shown, IMMUTABLE));
                }
            }
        }
        "csinodes" => {
            csi_node(obj, &mut causes);
            if let Some(old) = old {
                csi_node(obj, &mut causes);
                csi_node_update(obj, old, &mut causes);
            }
        }
        "volumeattachments" => {
            volume_attachment(obj, &mut causes);
            match old {
                None => volume_attachment_v1(obj, &mut causes),
                Some(old) => {
                    volume_attachment(obj, &mut causes);
                    if !equal(obj.get("spec"), old.get("spec")) {
                        causes.push(invalid_value("spec", &attachment_spec_json(spec(obj)), IMMUTABLE));
                    }
                }
            }
        }
        "csistoragecapacities" => {
            storage_capacity(obj, &mut causes);
            if let Some(old) = old {
                // (An empty selector, every node, is not a missing one, no node.)
                let set = |o: &Map<String, Value>| o.get("nodeTopology").is_some_and(|t| !t.is_null());
                if set(obj) != set(old) || !equal(obj.get("nodeTopology"), old.get("nodeTopology")) {
                    causes.push(invalid_value("nodeTopology", &selector_json(obj.get("nodeTopology")), IMMUTABLE));
                }
                let class = |o: &Map<String, Value>| text(o.get("storageClassName")).to_string();
                if class(obj) != class(old) {
                    causes.push(invalid("storageClassName".into(), &class(obj), IMMUTABLE));
                }
            }
        }
        "volumeattributesclasses" => {
            attributes_class(obj, &mut causes);
            if let Some(old) = old {
                if text(obj.get("driverName")) != text(old.get("driverName")) {
                    causes.push(forbidden("driverName", "updates to driverName are forbidden."));
                }
                if present(obj.get("parameters")) != present(old.get("parameters")) {
                    causes.push(forbidden("parameters", "updates to parameters are forbidden."));
                }
                attributes_class(obj, &mut causes);
            }
        }
        _ => {}
    }
    causes
}

/// The warnings a valid write of `obj` over `old` gets: a CSIDriver that asks for tokens
/// without saying where they go; a CSIStorageCapacity whose topology names deprecated node
/// labels.
pub(crate) fn warnings(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<String> {
    match info.plural.as_str() {
        "csidrivers" => {
            let requests = |o| present(spec(o).get("tokenRequests"));
            let asks = requests(obj).and_then(Value::as_array).is_some_and(|t| !t.is_empty());
            let unset = spec(obj).get("serviceAccountTokenInSecrets").is_none_or(Value::is_null);
            let changed = old.is_none_or(|old| requests(old) != requests(obj));
            if asks && unset && changed {
                return vec![
                    "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"
                        .into(),
                ];
            }
            Vec::new()
        }
        "csistoragecapacities" => {
            let Some(topology) = obj.get("nodeTopology") else { return Vec::new() };
            let mut out = Vec::new();
            for (i, e) in topology.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let key = text(e.get("key"));
                if let Some(m) = crate::runtime_class::deprecated_node_label(key) {
                    out.push(format!("nodeTopology.matchExpressions[{i}].key: {key} is {m}"));
                }
            }
            for key in topology.get("matchLabels").and_then(Value::as_object).into_iter().flat_map(Map::keys) {
                if let Some(m) = crate::runtime_class::deprecated_node_label(key) {
                    out.push(format!("nodeTopology.matchLabels.{key}: {m}"));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// A member that is there and not `null`.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

fn spec(obj: &Map<String, Value>) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

fn forbidden(field: &str, detail: &str) -> Cause {
    crate::pod_validation::forbidden(field.into(), detail)
}

pub(crate) fn too_long(field: &str, limit: usize) -> Cause {
    Cause {
        reason: "FieldValueTooLong",
        message: format!("Too long: may not be more than {limit} bytes"),
        field: field.into(),
    }
}

/// A member as Go writes it: `null` when it is missing.
fn member(v: &Value, key: &str) -> String {
    go_json(v.get(key).unwrap_or(&Value::Null))
}

/// A string member as Go writes it: `""` when it is missing.
fn string_member(v: &Value, key: &str) -> String {
    go_json(&Value::from(text(v.get(key))))
}

/// A label selector (a versioned type) as Go writes it: its JSON names, in the struct's order,
/// empty members left out.
fn selector_json(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else { return "null".into() };
    let mut members = Vec::new();
    for key in ["matchLabels", "matchExpressions"] {
        if let Some(v) = selector.get(key).filter(|v| crate::semantic::normalized(Some(v)).is_some()) {
            members.push(format!("{}:{}", go_quote(key), go_json(v)));
        }
    }
    format!("{{{}}}", members.join(","))
}

/// kube's `ValidateCSIDriverName` of a driver's name at `at`.
pub(crate) fn driver_name(name: &str, at: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(required(at.into(), ""));
    }
    if name.len() > 63 {
        causes.push(too_long(at, 63));
    }
    for fault in crate::cel_format::dns1123_subdomain(&name.to_lowercase()) {
        causes.push(invalid(at.into(), name, &fault));
    }
}

fn csi_driver(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let spec = spec(obj);
    let set = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    for (field, path) in [
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
    ] {
        if !set(field) {
            causes.push(required(path.into(), ""));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str)
        && !matches!(policy, "File" | "None" | "ReadWriteOnceWithFSType")
    {
        causes.push(unsupported("spec.fsGroupPolicy".into(), policy, &["File", "None", "ReadWriteOnceWithFSType"]));
    }
    let mut audiences: Vec<&str> = Vec::new();
    for (i, r) in spec.get("tokenRequests").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let audience = text(r.get("audience"));
        if audiences.contains(&audience) {
            causes.push(duplicate(format!("spec.tokenRequests[{i}].audience"), audience));
            continue;
        }
        audiences.push(audience);
        if let Some(seconds) = r.get("expirationSeconds").and_then(Value::as_i64) {
            let at = format!("spec.tokenRequests[{i}].expirationSeconds");
            if seconds < 600 {
                causes.push(invalid_value(
                    &at,
                    &seconds.to_string(),
                    "may not specify a duration less than 10 minutes",
                ));
            } else if seconds > 1 << 32 {
                causes.push(invalid_value(
                    &at,
                    &seconds.to_string(),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    for mode in spec.get("volumeLifecycleModes").and_then(Value::as_array).into_iter().flatten() {
        let mode = mode.as_str().unwrap_or_default();
        if !matches!(mode, "Persistent" | "Ephemeral") {
            causes.push(unsupported("spec.volumeLifecycleModes".into(), mode, &["Persistent", "Ephemeral"]));
        }
    }
    if !set("seLinuxMount") {
        causes.push(required("spec.seLinuxMount".into(), ""));
    }
    if let Some(period) = spec.get("nodeAllocatableUpdatePeriodSeconds").and_then(Value::as_i64)
        && period < 10
    {
        causes.push(invalid_value(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            &period.to_string(),
            "must be greater than or equal to 10 seconds",
        ));
    }
    if let Some(in_secrets) = spec.get("serviceAccountTokenInSecrets").filter(|v| !v.is_null())
        && spec.get("tokenRequests").and_then(Value::as_array).is_none_or(Vec::is_empty)
    {
        causes.push(invalid_value(
            "spec.serviceAccountTokenInSecrets",
            &go_json(in_secrets),
            "serviceAccountTokenInSecrets is set but no tokenRequests are specified",
        ));
    }
}

/// A CSINode's drivers (kube allows node IDs of up to 256 characters).
fn csi_node(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let mut names: Vec<&str> = Vec::new();
    for (i, d) in spec(obj).get("drivers").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("spec.drivers[{i}]");
        let name = text(d.get("name"));
        driver_name(name, &format!("{at}.name"), causes);
        let node_id = text(d.get("nodeID"));
        if node_id.is_empty() {
            causes.push(required(format!("{at}.nodeID"), ""));
        } else if node_id.len() > 256 {
            causes.push(invalid(format!("{at}.nodeID"), node_id, "must be 256 characters or less"));
        }
        if let Some(count) = d.pointer("/allocatable/count").and_then(Value::as_i64)
            && count < 0
        {
            causes.push(invalid_value(
                &format!("{at}.allocatable.count"),
                &count.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        if names.contains(&name) {
            causes.push(duplicate(format!("{at}.name"), name));
        }
        names.push(name);
        let mut keys: Vec<&str> = Vec::new();
        for key in d.get("topologyKeys").and_then(Value::as_array).into_iter().flatten() {
            let key = key.as_str().unwrap_or_default();
            if key.is_empty() {
                causes.push(required(at.clone(), ""));
            }
            if keys.contains(&key) {
                causes.push(duplicate(at.clone(), key));
            }
            keys.push(key);
            for fault in crate::cel_format::qualified_name(key) {
                causes.push(invalid(at.clone(), key, &fault));
            }
        }
    }
}

/// A driver kept by name keeps its node ID and topology keys (its allocatable count may change).
fn csi_node_update(obj: &Map<String, Value>, old: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let drivers =
        |o: &Map<String, Value>| spec(o).get("drivers").and_then(Value::as_array).cloned().unwrap_or_default();
    let new = drivers(obj);
    let same = |a: &Value, b: &Value| ["name", "nodeID", "topologyKeys"].iter().all(|k| equal(a.get(*k), b.get(*k)));
    for before in drivers(old) {
        let name = text(before.get("name"));
        if let Some(after) = new.iter().find(|d| text(d.get("name")) == name)
            && !same(after, &before)
        {
            // kube compares the drivers without their allocatable count, and prints them so.
            let shown = go_struct(&[
                ("Name", string_member(after, "name")),
                ("NodeID", string_member(after, "nodeID")),
                ("TopologyKeys", member(after, "topologyKeys")),
                ("Allocatable", "null".into()),
            ]);
            causes.push(invalid_value("spec.drivers", &shown, IMMUTABLE));
        }
    }
}

/// A VolumeAttachment's spec as kube's error prints its internal type.
fn attachment_spec_json(spec: &Value) -> String {
    let source = spec.get("source").unwrap_or(&Value::Null);
    let source = go_struct(&[
        ("PersistentVolumeName", member(source, "persistentVolumeName")),
        ("InlineVolumeSpec", member(source, "inlineVolumeSpec")),
    ]);
    let fields = [
        ("Attacher", string_member(spec, "attacher")),
        ("Source", source),
        ("NodeName", string_member(spec, "nodeName")),
    ];
    go_struct(&fields)
}

/// kube's `ValidateVolumeAttachment`: the spec, then the status.
fn volume_attachment(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let spec = spec(obj);
    if text(spec.get("attacher")).is_empty() {
        causes.push(required("spec.attacher".into(), ""));
    }
    const ONE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    let source = spec.get("source");
    let pv = source.and_then(|s| s.get("persistentVolumeName")).filter(|v| !v.is_null());
    let inline = source.and_then(|s| s.get("inlineVolumeSpec")).filter(|v| !v.is_null());
    match (pv, inline) {
        (None, None) => causes.push(required("spec.source".into(), ONE)),
        (Some(_), Some(_)) => causes.push(forbidden("spec.source", ONE)),
        (Some(pv), None) if pv.as_str().unwrap_or_default().is_empty() => causes
            .push(required("spec.source.persistentVolumeName".into(), "must specify non empty persistentVolumeName")),
        (Some(_), None) => {}
        (None, Some(inline)) => inline_volume(inline, causes),
    }
    let node = text(spec.get("nodeName"));
    for fault in crate::cel_format::dns1123_subdomain(node) {
        causes.push(invalid("spec.nodeName".into(), node, &fault));
    }
    let status = obj.get("status");
    if let Some(metadata) = status.and_then(|s| s.get("attachmentMetadata")).and_then(Value::as_object) {
        let size: usize = metadata.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        if size > 256 * 1024 {
            causes.push(too_long("status.attachmentMetadata", 256 * 1024));
        }
    }
    for error in ["attachError", "detachError"] {
        let Some(e) = status.and_then(|s| s.get(error)).filter(|e| e.is_object()) else { continue };
        if text(e.get("message")).len() > 1024 {
            // (kube checks 1,024 bytes and names its other limit.)
            causes.push(too_long(&format!("status.{error}.message"), 256 * 1024));
        }
        if let Some(code) = e.get("errorCode").and_then(Value::as_i64)
            && code < 0
        {
            causes.push(invalid_value(
                &format!("status.{error}.errorCode"),
                &code.to_string(),
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
}

/// The rules of a PersistentVolume spec that an inline volume breaks most often.
fn inline_volume(inline: &Value, causes: &mut Vec<Cause>) {
    const AT: &str = "spec.source.inlineVolumeSpec";
    const INLINE: &str = "may not be specified in the context of inline volumes";
    if inline.get("claimRef").is_some_and(|v| !v.is_null()) {
        causes.push(forbidden(&format!("{AT}.claimRef"), INLINE));
    }
    if inline.get("capacity").and_then(Value::as_object).is_some_and(|c| !c.is_empty()) {
        causes.push(forbidden(&format!("{AT}.capacity"), INLINE));
    }
    if inline.get("csi").is_none_or(Value::is_null) {
        causes.push(required(format!("{AT}.csi"), "has to be specified in the context of inline volumes"));
    }
    if inline.get("accessModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        causes.push(required(format!("{AT}.accessModes"), ""));
    }
}

/// What a VolumeAttachment's create also checks (`ValidateVolumeAttachmentV1`).
fn volume_attachment_v1(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let spec = spec(obj);
    driver_name(text(spec.get("attacher")), "spec.attacher", causes);
    if let Some(pv) = spec.pointer("/source/persistentVolumeName").and_then(Value::as_str) {
        for fault in crate::cel_format::dns1123_subdomain(pv) {
            causes.push(invalid("spec.source.persistentVolumeName".into(), pv, &fault));
        }
    }
}

fn storage_capacity(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    if let Some(topology) = obj.get("nodeTopology").filter(|t| !t.is_null()) {
        crate::webhook_configuration::check_selector(topology, "nodeTopology", causes);
    }
    let class = text(obj.get("storageClassName"));
    for fault in crate::cel_format::dns1123_subdomain(class) {
        causes.push(invalid("storageClassName".into(), class, &fault));
    }
    let capacity = obj.get("capacity").filter(|c| !c.is_null());
    if let Some(capacity) = capacity.map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
        && crate::quantity::parse(&capacity).is_some_and(|q| q < 0)
    {
        let shown = crate::quantity::canonical(&capacity).unwrap_or(capacity);
        causes.push(invalid("capacity".into(), &shown, "must be greater than or equal to 0"));
    }
}

fn attributes_class(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let driver = text(obj.get("driverName"));
    if driver.is_empty() {
        causes.push(required("driverName".into(), ""));
    } else {
        let lower = driver.to_lowercase();
        for fault in crate::cel_format::qualified_name(&lower) {
            causes.push(invalid("driverName".into(), &lower, &fault));
        }
    }
    let empty = Map::new();
    let params = obj.get("parameters").and_then(Value::as_object).unwrap_or(&empty);
    if params.len() > 512 {
        causes.push(too_long("parameters", 512));
        return;
    }
    let mut size = 0;
    for (k, v) in params {
        if k.is_empty() {
            causes.push(invalid("parameters".into(), "", "field can not be empty."));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > 256 * 1024 {
        causes.push(too_long("parameters", 256 * 1024));
    }
    if params.is_empty() {
        causes.push(required("parameters".into(), "must contain at least one key/value pair"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(plural: &str, obj: Value, old: Option<Value>) -> Vec<String> {
        let info = ResourceInfo::new(GROUP, "v1", plural, "Kind", plural == "csistoragecapacities");
        let m = |v: Value| v.as_object().cloned().unwrap();
        let old = old.map(m);
        validate(&info, &m(obj), old.as_ref()).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn driver(spec: Value) -> Value {
        let mut s = json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
            "seLinuxMount": false, "volumeLifecycleModes": ["Persistent"]});
        s.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        json!({"metadata": {"name": "d"}, "spec": s})
    }

    #[test]
    fn csi_drivers_are_judged_as_kube_judges_them() {
        assert!(judged("csidrivers", driver(json!({})), None).is_empty());
        let bad = driver(json!({"fsGroupPolicy": "Any", "volumeLifecycleModes": ["Sometimes"],
            "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}],
            "nodeAllocatableUpdatePeriodSeconds": 5}));
        assert_eq!(
            judged("csidrivers", bad, None),
            [
                "spec.fsGroupPolicy: Unsupported value: \"Any\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                "spec.volumeLifecycleModes: Unsupported value: \"Sometimes\": supported values: \"Persistent\", \"Ephemeral\"",
                "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
            ]
        );
        let secrets = driver(json!({"serviceAccountTokenInSecrets": true}));
        assert_eq!(
            judged("csidrivers", secrets, None),
            [
                "spec.serviceAccountTokenInSecrets: Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified"
            ]
        );
        let changed = driver(json!({"attachRequired": false, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}));
        assert_eq!(
            judged("csidrivers", changed, Some(driver(json!({})))),
            [
                "spec.attachedRequired: Invalid value: false: field is immutable",
                "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Ephemeral\"]: field is immutable",
            ]
        );
    }

    #[test]
    fn csi_nodes_keep_their_drivers_identity() {
        let node = |id: &str, count: i64| {
            json!({"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": id,
                "topologyKeys": ["topology.example.com/zone"], "allocatable": {"count": count}}]}})
        };
        assert!(judged("csinodes", node("n1", 4), None).is_empty());
        assert!(judged("csinodes", node("n1", 8), Some(node("n1", 4))).is_empty());
        assert_eq!(
            judged("csinodes", node("n2", 4), Some(node("n1", 4))),
            [
                "spec.drivers: Invalid value: {\"Name\":\"csi.example.com\",\"NodeID\":\"n2\",\"TopologyKeys\":[\"topology.example.com/zone\"],\"Allocatable\":null}: field is immutable"
            ]
        );
        let bad = json!({"metadata": {"name": "n"}, "spec": {"drivers": [
            {"name": "", "nodeID": "", "topologyKeys": ["k", "k"]}]}});
        let causes = judged("csinodes", bad, None);
        assert_eq!(causes[0], "spec.drivers[0].name: Required value");
        assert!(causes.contains(&"spec.drivers[0].nodeID: Required value".to_string()), "{causes:?}");
        assert!(causes.contains(&"spec.drivers[0]: Duplicate value: \"k\"".to_string()), "{causes:?}");
    }

    #[test]
    fn volume_attachments_keep_their_spec_and_judge_their_status() {
        let va = |node: &str| {
            json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": node,
                "source": {"persistentVolumeName": "pv-1"}}, "status": {"attached": false}})
        };
        assert!(judged("volumeattachments", va("node-1"), None).is_empty());
        let moved = judged("volumeattachments", va("node-2"), Some(va("node-1")));
        assert_eq!(
            moved,
            [
                "spec: Invalid value: {\"Attacher\":\"csi.example.com\",\"Source\":{\"PersistentVolumeName\":\"pv-1\",\"InlineVolumeSpec\":null},\"NodeName\":\"node-2\"}: field is immutable"
            ]
        );
        let unattached = json!({"metadata": {"name": "va"}, "spec": {"nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}});
        assert_eq!(
            judged("volumeattachments", unattached, Some(va("node-1")))[..2],
            ["spec.attacher: Required value".to_string(), "spec.attacher: Required value".to_string(),]
        );
        let renamed = json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "source": {"persistentVolumeName": "pv-1"}}});
        assert_eq!(
            judged("volumeattachments", renamed, Some(va("node-1"))).last().unwrap(),
            "spec: Invalid value: {\"Attacher\":\"csi.example.com\",\"Source\":{\"PersistentVolumeName\":\"pv-1\",\"InlineVolumeSpec\":null},\"NodeName\":\"\"}: field is immutable"
        );
        let none = json!({"metadata": {"name": "va"}, "spec": {"attacher": "a", "nodeName": "n", "source": {}},
            "status": {"attachError": {"errorCode": -1}}});
        assert_eq!(
            judged("volumeattachments", none, None),
            [
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
                "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            ]
        );
    }

    #[test]
    fn capacities_and_attribute_classes_follow_kube() {
        let capacity = json!({"metadata": {"name": "c", "namespace": "ns"}, "storageClassName": "fast",
            "capacity": "-1Gi", "nodeTopology": {"matchLabels": {"topology.example.com/zone": "a"}}});
        assert_eq!(
            judged("csistoragecapacities", capacity.clone(), None),
            ["capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"]
        );
        let mut everywhere = capacity.clone();
        everywhere["nodeTopology"] = json!({});
        let mut nowhere = capacity.clone();
        nowhere.as_object_mut().unwrap().remove("nodeTopology");
        assert_eq!(
            judged("csistoragecapacities", nowhere.clone(), Some(everywhere)),
            [
                "capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "nodeTopology: Invalid value: null: field is immutable"
            ]
        );
        let mut moved = capacity.clone();
        moved["storageClassName"] = json!("slow");
        moved["capacity"] = json!("1Gi");
        assert_eq!(
            judged("csistoragecapacities", moved, Some(capacity)),
            ["storageClassName: Invalid value: \"slow\": field is immutable"]
        );
        let class =
            json!({"metadata": {"name": "gold"}, "driverName": "csi.example.com", "parameters": {"iops": "100"}});
        assert!(judged("volumeattributesclasses", class.clone(), None).is_empty());
        let mut changed = class.clone();
        changed["parameters"] = json!({"iops": "200"});
        assert_eq!(
            judged("volumeattributesclasses", changed, Some(class)),
            ["parameters: Forbidden: updates to parameters are forbidden."]
        );
        let empty = json!({"metadata": {"name": "x"}});
        assert_eq!(
            judged("volumeattributesclasses", empty, None),
            ["driverName: Required value", "parameters: Required value: must contain at least one key/value pair"]
        );
    }
}

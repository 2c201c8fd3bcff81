//! The printers of the CSI kinds of storage.k8s.io and of node.k8s.io: CSIDrivers, CSINodes,
//! VolumeAttachments, VolumeAttributesClasses and RuntimeClasses (CSIStorageCapacities have
//! kube's default columns).
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]).

use serde_json::{Value, json};

use super::{AGE, Col, Doc, NAME, Printer, age, list, name, text};
use crate::registry::ResourceInfo;

/// The printer of one of these kinds.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    let (columns, cells): (&'static [Col], super::Cells) = match (info.group.as_str(), info.plural.as_str()) {
        ("storage.k8s.io", "csidrivers") => (&CSI_DRIVER, csi_driver),
        ("storage.k8s.io", "csinodes") => (&CSI_NODE, csi_node),
        ("storage.k8s.io", "volumeattachments") => (&VOLUME_ATTACHMENT, volume_attachment),
        ("storage.k8s.io", "volumeattributesclasses") => (&ATTRIBUTES_CLASS, attributes_class),
        ("node.k8s.io", "runtimeclasses") => (&RUNTIME_CLASS, runtime_class),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const DRIVER_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";

const CSI_DRIVER: [Col; 8] = [
    NAME,
    Col("AttachRequired", "boolean", "", 0, Doc::Field(DRIVER_SPEC, "attachRequired")),
    Col("PodInfoOnMount", "boolean", "", 0, Doc::Field(DRIVER_SPEC, "podInfoOnMount")),
    Col("StorageCapacity", "boolean", "", 0, Doc::Field(DRIVER_SPEC, "storageCapacity")),
    Col("TokenRequests", "string", "", 0, Doc::Field(DRIVER_SPEC, "tokenRequests")),
    Col("RequiresRepublish", "boolean", "", 0, Doc::Field(DRIVER_SPEC, "requiresRepublish")),
    Col("Modes", "string", "", 0, Doc::Field(DRIVER_SPEC, "volumeLifecycleModes")),
    AGE,
];

fn csi_driver(v: &Value) -> Vec<Value> {
    let flag = |k: &str, absent: bool| v.pointer(&format!("/spec/{k}")).and_then(Value::as_bool).unwrap_or(absent);
    let tokens = match v.pointer("/spec/tokenRequests").and_then(Value::as_array) {
        None => "<unset>".to_string(),
        Some(requests) => requests.iter().map(|r| text(r, "/audience")).collect::<Vec<_>>().join(","),
    };
    let modes: Vec<&str> = list(v, "/spec/volumeLifecycleModes").iter().filter_map(Value::as_str).collect();
    let modes = match modes.join(",") {
        joined if joined.is_empty() => "<none>".to_string(),
        joined => joined,
    };
    vec![
        json!(name(v)),
        json!(flag("attachRequired", true)),
        json!(flag("podInfoOnMount", false)),
        json!(flag("storageCapacity", false)),
        json!(tokens),
        json!(flag("requiresRepublish", false)),
        json!(modes),
        json!(age(v)),
    ]
}

const CSI_NODE: [Col; 3] = [
    NAME,
    Col("Drivers", "integer", "", 0, Doc::Text("Drivers indicates the number of CSI drivers registered on the node")),
    AGE,
];

fn csi_node(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(list(v, "/spec/drivers").len()), json!(age(v))]
}

const ATTACHMENT_SPEC: &str = "io.k8s.api.storage.v1.VolumeAttachmentSpec";

const VOLUME_ATTACHMENT: [Col; 6] = [
    NAME,
    Col("Attacher", "string", "name", 0, Doc::Field(ATTACHMENT_SPEC, "attacher")),
    Col("PV", "string", "", 0, Doc::Field("io.k8s.api.storage.v1.VolumeAttachmentSource", "persistentVolumeName")),
    Col("Node", "string", "", 0, Doc::Field(ATTACHMENT_SPEC, "nodeName")),
    Col("Attached", "boolean", "", 0, Doc::Field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached")),
    AGE,
];

fn volume_attachment(v: &Value) -> Vec<Value> {
    vec![
        json!(name(v)),
        json!(text(v, "/spec/attacher")),
        json!(text(v, "/spec/source/persistentVolumeName")),
        json!(text(v, "/spec/nodeName")),
        json!(v.pointer("/status/attached").and_then(Value::as_bool).unwrap_or(false)),
        json!(age(v)),
    ]
}

const ATTRIBUTES_CLASS: [Col; 3] = [
    NAME,
    Col("DriverName", "string", "", 0, Doc::Field("io.k8s.api.storage.v1.VolumeAttributesClass", "driverName")),
    AGE,
];

fn attributes_class(v: &Value) -> Vec<Value> {
    let default = v
        .pointer("/metadata/annotations/volumeattributesclass.alpha.kubernetes.io~1is-default-class")
        .and_then(Value::as_str)
        == Some("true");
    let shown = if default { format!("{} (default)", name(v)) } else { name(v).to_string() };
    vec![json!(shown), json!(text(v, "/driverName")), json!(age(v))]
}

/// (kube describes the handler column with no text.)
const RUNTIME_CLASS: [Col; 3] = [NAME, Col("Handler", "string", "", 0, Doc::Text("")), AGE];

fn runtime_class(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(text(v, "/handler")), json!(age(v))]
}

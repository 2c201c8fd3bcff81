//! The printers of the core kinds that are not workloads: Services, Endpoints, ConfigMaps,
//! Secrets, Nodes, Namespaces, ServiceAccounts, PersistentVolumeClaims, PersistentVolumes,
//! ResourceQuotas, Events (core/v1 and events.k8s.io/v1, one printer as in kube) and
//! ComponentStatuses.
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]); an events.k8s.io Event is
//! printed as the core Event it is stored as (`regarding` as `involvedObject`, `note` as
//! `message`, the `deprecated…` fields as theirs).

use serde_json::{Value, json};

use super::{AGE, Col, Doc, NAME, Printer, age, int, labels, list, name, quantity, text, text_or};
use crate::registry::ResourceInfo;

/// The printer of a core kind.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    let (columns, cells): (&'static [Col], super::Cells) = match (info.group.as_str(), info.plural.as_str()) {
        ("", "services") => (&SERVICE, service),
        ("", "endpoints") => (&ENDPOINTS, endpoints),
        ("", "configmaps") => (&CONFIG_MAP, config_map),
        ("", "secrets") => (&SECRET, secret),
        ("", "nodes") => (&NODE, node),
        ("", "namespaces") => (&NAMESPACE, namespace),
        ("", "serviceaccounts") => (&[NAME, AGE], |v| vec![json!(name(v)), json!(age(v))]),
        ("", "persistentvolumeclaims") => (&CLAIM, claim),
        ("", "persistentvolumes") => (&VOLUME, volume),
        ("", "resourcequotas") => (&QUOTA, quota),
        ("", "events") => (&EVENT, event),
        ("", "componentstatuses") => (&COMPONENT_STATUS, component_status),
        (crate::events_api::GROUP, "events") => (&EVENT, events_api_event),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const SERVICE_SPEC: &str = "io.k8s.api.core.v1.ServiceSpec";

const SERVICE: [Col; 7] = [
    NAME,
    Col("Type", "string", "", 0, Doc::Field(SERVICE_SPEC, "type")),
    Col("Cluster-IP", "string", "", 0, Doc::Field(SERVICE_SPEC, "clusterIP")),
    Col("External-IP", "string", "", 0, Doc::Field(SERVICE_SPEC, "externalIPs")),
    Col("Port(s)", "string", "", 0, Doc::Field(SERVICE_SPEC, "ports")),
    AGE,
    Col("Selector", "string", "", 1, Doc::Field(SERVICE_SPEC, "selector")),
];

const COMPONENT_STATUS: [Col; 4] = [
    NAME,
    Col("Status", "string", "", 0, Doc::Text("Status of the component conditions")),
    Col("Message", "string", "", 0, Doc::Text("Message of the component conditions")),
    Col("Error", "string", "", 0, Doc::Text("Error of the component conditions")),
];

/// kube's cells: the first `Healthy` condition's state (`Healthy` when `True`, else
/// `Unhealthy`; `Unknown` without one), message and error.
fn component_status(v: &Value) -> Vec<Value> {
    let healthy = list(v, "/conditions").iter().find(|c| text(c, "/type") == "Healthy");
    let (status, message, error) = match healthy {
        None => ("Unknown", "", ""),
        Some(c) => {
            let status = if text(c, "/status") == "True" { "Healthy" } else { "Unhealthy" };
            (status, text(c, "/message"), text(c, "/error"))
        }
    };
    vec![json!(name(v)), json!(status), json!(message), json!(error)]
}

/// A load balancer's ingress points: each one's IP, else its hostname, sorted, without repeats.
pub(super) fn load_balancer(v: &Value, pointer: &str) -> String {
    let mut points: Vec<&str> = list(v, pointer)
        .iter()
        .filter_map(|i| [text(i, "/ip"), text(i, "/hostname")].into_iter().find(|s| !s.is_empty()))
        .collect();
    points.sort_unstable();
    points.dedup();
    points.join(",")
}

fn service(v: &Value) -> Vec<Value> {
    let ty = text(v, "/spec/type");
    let cluster_ip = list(v, "/spec/clusterIPs").first().and_then(Value::as_str).unwrap_or("<none>");
    let external: Vec<&str> = list(v, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    let external_ip = match ty {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let lb = load_balancer(v, "/status/loadBalancer/ingress");
            match (lb.is_empty(), external.is_empty()) {
                (_, false) => lb
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .chain(external.iter().copied())
                    .collect::<Vec<_>>()
                    .join(","),
                (false, true) => lb,
                (true, true) => "<pending>".into(),
            }
        }
        "ExternalName" => text(v, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = list(v, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, "/port"), text(p, "/protocol"));
            match int(p, "/nodePort") {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() { "<none>".to_string() } else { ports.join(",") };
    vec![
        json!(name(v)),
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(ports),
        json!(age(v)),
        json!(labels(v.pointer("/spec/selector"))),
    ]
}

const ENDPOINTS: [Col; 3] =
    [NAME, Col("Endpoints", "string", "", 0, Doc::Field("io.k8s.api.core.v1.Endpoints", "subsets")), AGE];

/// Endpoints as kube lists them: up to three `ip:port` (port by port within a subset), then how
/// many more.
fn endpoints(v: &Value) -> Vec<Value> {
    let subsets = list(v, "/subsets");
    let cell = if subsets.is_empty() {
        "<none>".to_string()
    } else {
        let (mut shown, mut count, mut more) = (Vec::new(), 0, false);
        for s in subsets {
            let addresses = list(s, "/addresses");
            let ports = list(s, "/ports");
            if ports.is_empty() {
                count += addresses.len();
                for a in addresses {
                    if shown.len() < 3 {
                        shown.push(text(a, "/ip").to_string());
                    } else {
                        more = true;
                    }
                }
                continue;
            }
            for p in ports {
                count += addresses.len();
                for a in addresses {
                    if shown.len() < 3 {
                        let ip = text(a, "/ip");
                        let port = int(p, "/port");
                        shown.push(if ip.contains(':') { format!("[{ip}]:{port}") } else { format!("{ip}:{port}") });
                    } else {
                        more = true;
                    }
                }
            }
        }
        let mut out = shown.join(",");
        if more {
            out.push_str(&format!(" + {} more...", count - shown.len()));
        }
        out
    };
    vec![json!(name(v)), json!(cell), json!(age(v))]
}

const CONFIG_MAP: [Col; 3] =
    [NAME, Col("Data", "string", "", 0, Doc::Field("io.k8s.api.core.v1.ConfigMap", "data")), AGE];

fn config_map(v: &Value) -> Vec<Value> {
    let count = |p: &str| v.pointer(p).and_then(Value::as_object).map_or(0, |m| m.len());
    vec![json!(name(v)), json!(count("/data") + count("/binaryData")), json!(age(v))]
}

const SECRET: [Col; 4] = [
    NAME,
    Col("Type", "string", "", 0, Doc::Field("io.k8s.api.core.v1.Secret", "type")),
    Col("Data", "string", "", 0, Doc::Field("io.k8s.api.core.v1.Secret", "data")),
    AGE,
];

fn secret(v: &Value) -> Vec<Value> {
    let data = v.pointer("/data").and_then(Value::as_object).map_or(0, |m| m.len());
    vec![json!(name(v)), json!(text(v, "/type")), json!(data), json!(age(v))]
}

const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";

const NODE: [Col; 10] = [
    NAME,
    Col("Status", "string", "", 0, Doc::Text("The status of the node")),
    Col("Roles", "string", "", 0, Doc::Text("The roles of the node")),
    AGE,
    Col("Version", "string", "", 0, Doc::Field(NODE_INFO, "kubeletVersion")),
    Col("Internal-IP", "string", "", 1, Doc::Field("io.k8s.api.core.v1.NodeStatus", "addresses")),
    Col("External-IP", "string", "", 1, Doc::Field("io.k8s.api.core.v1.NodeStatus", "addresses")),
    Col("OS-Image", "string", "", 1, Doc::Field(NODE_INFO, "osImage")),
    Col("Kernel-Version", "string", "", 1, Doc::Field(NODE_INFO, "kernelVersion")),
    Col("Container-Runtime", "string", "", 1, Doc::Field(NODE_INFO, "containerRuntimeVersion")),
];

fn node(v: &Value) -> Vec<Value> {
    let ready = list(v, "/status/conditions").iter().rev().find(|c| text(c, "/type") == "Ready");
    let mut status = match ready {
        Some(c) if text(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
    .to_string();
    if v.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<&str> = Vec::new();
    for (k, value) in v.pointer("/metadata/labels").and_then(Value::as_object).into_iter().flatten() {
        match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => roles.push(role),
            _ if k == "kubernetes.io/role" => roles.extend(value.as_str().filter(|r| !r.is_empty())),
            _ => {}
        }
    }
    roles.sort_unstable();
    roles.dedup();
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.join(",") };
    let address = |t: &str| {
        list(v, "/status/addresses").iter().find(|a| text(a, "/type") == t).map_or("<none>", |a| text(a, "/address"))
    };
    let info = |k: &str| match text(v, &format!("/status/nodeInfo/{k}")) {
        "" => "<unknown>",
        s => s,
    };
    vec![
        json!(name(v)),
        json!(status),
        json!(roles),
        json!(age(v)),
        json!(text(v, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

const NAMESPACE: [Col; 3] = [NAME, Col("Status", "string", "", 0, Doc::Text("The status of the namespace")), AGE];

fn namespace(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(text(v, "/status/phase")), json!(age(v))]
}

const CLAIM_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";
const CLAIM_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeClaimStatus";

const CLAIM: [Col; 9] = [
    NAME,
    Col("Status", "string", "", 0, Doc::Field(CLAIM_STATUS, "phase")),
    Col("Volume", "string", "", 0, Doc::Field(CLAIM_SPEC, "volumeName")),
    Col("Capacity", "string", "", 0, Doc::Field(CLAIM_STATUS, "capacity")),
    Col("Access Modes", "string", "", 0, Doc::Field(CLAIM_STATUS, "accessModes")),
    Col("StorageClass", "string", "", 0, Doc::Text("StorageClass of the pvc")),
    Col("VolumeAttributesClass", "string", "", 0, Doc::Text("VolumeAttributesClass of the pvc")),
    AGE,
    Col("VolumeMode", "string", "", 1, Doc::Field(CLAIM_SPEC, "volumeMode")),
];

/// Access modes as kube abbreviates them, in its order, each once.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|x| x.as_str() == Some(m));
    let shown: Vec<&str> =
        [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
            .into_iter()
            .filter(|(m, _)| has(m))
            .map(|(_, short)| short)
            .collect();
    shown.join(",")
}

/// A volume's or claim's storage class: the beta annotation when present, else the field.
fn storage_class(v: &Value) -> String {
    match v.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").and_then(Value::as_str) {
        Some(c) => c.to_string(),
        None => text(v, "/spec/storageClassName").to_string(),
    }
}

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null())
}

fn claim(v: &Value) -> Vec<Value> {
    let status = if deleting(v) { "Terminating" } else { text(v, "/status/phase") };
    let volume = text(v, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (quantity(v.pointer("/status/capacity/storage")), access_modes(list(v, "/status/accessModes")))
    };
    vec![
        json!(name(v)),
        json!(status),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class(v)),
        json!(text_or(v, "/spec/volumeAttributesClassName", "<unset>")),
        json!(age(v)),
        json!(text_or(v, "/spec/volumeMode", "<unset>")),
    ]
}

const VOLUME_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeSpec";
const VOLUME_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeStatus";

const VOLUME: [Col; 11] = [
    NAME,
    Col("Capacity", "string", "", 0, Doc::Field(VOLUME_SPEC, "capacity")),
    Col("Access Modes", "string", "", 0, Doc::Field(VOLUME_SPEC, "accessModes")),
    Col("Reclaim Policy", "string", "", 0, Doc::Field(VOLUME_SPEC, "persistentVolumeReclaimPolicy")),
    Col("Status", "string", "", 0, Doc::Field(VOLUME_STATUS, "phase")),
    Col("Claim", "string", "", 0, Doc::Field(VOLUME_SPEC, "claimRef")),
    Col("StorageClass", "string", "", 0, Doc::Text("StorageClass of the pv")),
    Col("VolumeAttributesClass", "string", "", 0, Doc::Text("VolumeAttributesClass of the pv")),
    Col("Reason", "string", "", 0, Doc::Field(VOLUME_STATUS, "reason")),
    AGE,
    Col("VolumeMode", "string", "", 1, Doc::Field(VOLUME_SPEC, "volumeMode")),
];

fn volume(v: &Value) -> Vec<Value> {
    let status = if deleting(v) { "Terminating" } else { text(v, "/status/phase") };
    let claim = match v.pointer("/spec/claimRef") {
        Some(c) if c.is_object() => format!("{}/{}", text(c, "/namespace"), text(c, "/name")),
        _ => String::new(),
    };
    vec![
        json!(name(v)),
        json!(quantity(v.pointer("/spec/capacity/storage"))),
        json!(access_modes(list(v, "/spec/accessModes"))),
        json!(text(v, "/spec/persistentVolumeReclaimPolicy")),
        json!(status),
        json!(claim),
        json!(storage_class(v)),
        json!(text_or(v, "/spec/volumeAttributesClassName", "<unset>")),
        json!(text(v, "/status/reason")),
        json!(age(v)),
        json!(text_or(v, "/spec/volumeMode", "<unset>")),
    ]
}

const QUOTA: [Col; 4] = [
    NAME,
    Col(
        "Request",
        "string",
        "",
        0,
        Doc::Text("Request represents a minimum amount of cpu/memory that a container may consume."),
    ),
    Col(
        "Limit",
        "string",
        "",
        0,
        Doc::Text(
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
    ),
    AGE,
];

/// A quota's Request and Limit cells: `name: used/hard` for each resource of `status.hard` by
/// name, those named `limits.*` in the second.
fn quota(v: &Value) -> Vec<Value> {
    let used = v.pointer("/status/used").and_then(Value::as_object);
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (k, h) in v.pointer("/status/hard").and_then(Value::as_object).into_iter().flatten() {
        let cell = format!("{k}: {}/{}", quantity(used.and_then(|u| u.get(k))), quantity(Some(h)));
        match k.split_once('.') {
            Some(("limits", _)) => limit.push(cell),
            _ => request.push(cell),
        }
    }
    vec![json!(name(v)), json!(request.join(", ")), json!(limit.join(", ")), json!(age(v))]
}

const EVENT_TYPE: &str = "io.k8s.api.core.v1.Event";

const EVENT: [Col; 10] = [
    Col("Last Seen", "string", "", 0, Doc::Field(EVENT_TYPE, "lastTimestamp")),
    Col("Type", "string", "", 0, Doc::Field(EVENT_TYPE, "type")),
    Col("Reason", "string", "", 0, Doc::Field(EVENT_TYPE, "reason")),
    Col("Object", "string", "", 0, Doc::Field(EVENT_TYPE, "involvedObject")),
    Col("Subobject", "string", "", 1, Doc::Field("io.k8s.api.core.v1.ObjectReference", "fieldPath")),
    Col("Source", "string", "", 1, Doc::Field(EVENT_TYPE, "source")),
    Col("Message", "string", "", 0, Doc::Field(EVENT_TYPE, "message")),
    Col("First Seen", "string", "", 1, Doc::Field(EVENT_TYPE, "firstTimestamp")),
    Col("Count", "string", "", 1, Doc::Field(EVENT_TYPE, "count")),
    Col("Name", "string", "name", 1, Doc::Field(super::META, "name")),
];

/// A core Event's fields, wherever its version keeps them.
struct EventFields<'a> {
    involved: &'a str,
    message: &'a str,
    source: &'a str,
    first: &'a str,
    last: &'a str,
    count: &'a str,
    reporting: &'a str,
}

const CORE_EVENT: EventFields<'static> = EventFields {
    involved: "/involvedObject",
    message: "/message",
    source: "/source",
    first: "/firstTimestamp",
    last: "/lastTimestamp",
    count: "/count",
    reporting: "/reportingComponent",
};

const EVENTS_API_EVENT: EventFields<'static> = EventFields {
    involved: "/regarding",
    message: "/note",
    source: "/deprecatedSource",
    first: "/deprecatedFirstTimestamp",
    last: "/deprecatedLastTimestamp",
    count: "/deprecatedCount",
    reporting: "/reportingController",
};

fn event(v: &Value) -> Vec<Value> {
    event_cells(v, &CORE_EVENT)
}

fn events_api_event(v: &Value) -> Vec<Value> {
    event_cells(v, &EVENTS_API_EVENT)
}

fn event_cells(v: &Value, f: &EventFields<'_>) -> Vec<Value> {
    let time = |p: &str| v.pointer(p).and_then(Value::as_str).filter(|t| !t.is_empty());
    let first = match time(f.first) {
        Some(t) => super::since(Some(t)),
        None => super::since(time("/eventTime")),
    };
    let mut last = match time(f.last) {
        Some(t) => super::since(Some(t)),
        None => first.clone(),
    };
    let mut count = int(v, f.count);
    match v.get("series").filter(|s| s.is_object()) {
        Some(series) => {
            last = super::since(series.get("lastObservedTime").and_then(Value::as_str));
            count = int(series, "/count");
        }
        None if count == 0 => count = 1,
        None => {}
    }
    let involved = v.pointer(f.involved).cloned().unwrap_or(Value::Null);
    let kind = text(&involved, "/kind").to_lowercase();
    let object = match text(&involved, "/name") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let component = match text(v, &format!("{}/component", f.source)) {
        "" => text(v, f.reporting),
        c => c,
    };
    let host = match text(v, &format!("{}/host", f.source)) {
        "" => text(v, "/reportingInstance"),
        h => h,
    };
    let source = if host.is_empty() { component.to_string() } else { format!("{component}, {host}") };
    vec![
        json!(last),
        json!(text(v, "/type")),
        json!(text(v, "/reason")),
        json!(object),
        json!(text(&involved, "/fieldPath")),
        json!(source),
        json!(text(v, f.message).trim()),
        json!(first),
        json!(count),
        json!(name(v)),
    ]
}

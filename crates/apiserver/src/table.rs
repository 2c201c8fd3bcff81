//! Server-side printing (`meta.k8s.io/v1` `Table`), which kubectl asks for
//! with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//!
//! Columns follow kube-apiserver's printers for pods (Name, Ready, Status,
//! Restarts, Age, then IP/Node at priority 1), certificate requests, autoscalers, quotas and
//! disruption budgets, and the generic Name/Age
//! convertor for everything else; custom resources get Name and their CustomResourceDefinition's
//! `additionalPrinterColumns` (Name and Age when it declares none), as the apiextensions server
//! prints them. Rows carry the object's metadata as a
//! `PartialObjectMetadata`. Only used for kubectl-style requests, so it
//! parses objects instead of using the pre-serialized bytes.

use serde_json::{Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.split(',').any(|m| m.contains("as=Table")))
}

/// How list and watch responses render objects, from the `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    /// Full objects (the default).
    Object,
    /// `meta.k8s.io/v1` Table rows (kubectl).
    Table,
    /// `meta.k8s.io/v1` PartialObjectMetadata (metadata-only clients:
    /// `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`).
    Metadata,
}

impl Render {
    /// The rendering an `Accept` header asks for (its first match wins).
    pub fn from_accept(accept: Option<&str>) -> Render {
        for m in accept.unwrap_or("").split(',') {
            if m.contains("as=Table") {
                return Render::Table;
            }
            if m.contains("as=PartialObjectMetadata") {
                return Render::Metadata;
            }
        }
        Render::Object
    }
}

/// An object as `PartialObjectMetadata`: kind, apiVersion and its metadata only.
pub fn partial_metadata(full: &[u8]) -> Vec<u8> {
    let meta = serde_json::from_slice::<Value>(full).ok().and_then(|mut v| v.get_mut("metadata").map(Value::take));
    let v = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta.unwrap_or_else(|| json!({}))});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Column definitions for a resource.
pub fn columns(info: &ResourceInfo) -> Value {
    let col = |name: &str, typ: &str, format: &str, desc: &str, prio: u8| json!({"name": name, "type": typ, "format": format, "description": desc, "priority": prio});
    let name = col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        0,
    );
    let age = col(
        "Age",
        "date",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    );
    if let Some(c) = info.custom.as_ref().filter(|c| !c.printer_columns.is_empty()) {
        let mut cols = vec![name];
        for p in &c.printer_columns {
            cols.push(json!({"name": p.name, "type": p.type_, "format": p.format, "description": p.description, "priority": p.priority}));
        }
        return Value::Array(cols);
    }
    if info.is_core("pods") {
        json!([
            name,
            col("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
            col("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
            col(
                "Restarts",
                "string",
                "",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                0
            ),
            age,
            col(
                "IP",
                "string",
                "",
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                1
            ),
            col("Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1),
        ])
    } else if crate::certificate_signing::is_csrs(info) {
        json!([
            name,
            age,
            col("SignerName", "string", "", "signerName indicates the requested signer, and is a qualified name.", 0),
            col(
                "Requestor",
                "string",
                "",
                "username contains the name of the user that created the CertificateSigningRequest.",
                0
            ),
            col(
                "RequestedDuration",
                "string",
                "",
                "expirationSeconds is the requested duration of validity of the issued certificate.",
                0
            ),
            col("Condition", "string", "", "conditions applied to the request.", 0),
        ])
    } else if is_hpas(info) {
        json!([
            name,
            col(
                "Reference",
                "string",
                "",
                "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
                0
            ),
            col(
                "Targets",
                "string",
                "",
                "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
                0
            ),
            col(
                "MinPods",
                "string",
                "",
                "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
                0
            ),
            col(
                "MaxPods",
                "string",
                "",
                "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
                0
            ),
            col(
                "Replicas",
                "string",
                "",
                "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
                0
            ),
            col("Age", "string", "", CREATION_TIMESTAMP, 0),
        ])
    } else if crate::resource_quota::is_quotas(info) {
        json!([
            name,
            col("Age", "string", "", CREATION_TIMESTAMP, 0),
            col(
                "Request",
                "string",
                "",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
                0
            ),
            col(
                "Limit",
                "string",
                "",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
                0
            ),
        ])
    } else if is_budgets(info) {
        json!([
            name,
            col("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
            col("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
            col(
                "Allowed Disruptions",
                "integer",
                "",
                "Calculated number of pods that may be disrupted at this time.",
                0
            ),
            col("Age", "string", "", CREATION_TIMESTAMP, 0),
        ])
    } else {
        json!([name, age])
    }
}

fn is_budgets(info: &ResourceInfo) -> bool {
    info.group == "policy" && info.plural == "poddisruptionbudgets"
}

/// `ObjectMeta.creationTimestamp`'s documentation, the description of the Age columns kube
/// declares as strings.
const CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A quota's Request and Limit cells: `name: used/hard` for each resource of `status.hard` by
/// name, those named `limits.*` in the second.
fn quota_cells(v: &Value) -> (String, String) {
    let hard = v.pointer("/status/hard").and_then(Value::as_object);
    let used = v.pointer("/status/used").and_then(Value::as_object);
    let shown = |q: Option<&Value>| {
        q.and_then(crate::quantity::Quantity::of).map_or_else(|| "0".to_string(), crate::quantity::Quantity::shown)
    };
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (k, h) in hard.into_iter().flatten() {
        let cell = format!("{k}: {}/{}", shown(used.and_then(|u| u.get(k))), shown(Some(h)));
        match k.split_once('.') {
            Some(("limits", _)) => limit.push(cell),
            _ => request.push(cell),
        }
    }
    (request.join(", "), limit.join(", "))
}

fn age(created: &str) -> String {
    let Ok(t) = created.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    human_duration(jiff::Timestamp::now().as_second() - t.as_second())
}

/// A duration as kubectl's tables show it (apimachinery's `HumanDuration`: `90s`, `5m30s`,
/// `2h15m`, `3d4h`, `1y20d`).
fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let (minutes, hours) = (secs / 60, secs / 3600);
    let with = |whole: i64, unit: &str, part: i64, part_unit: &str| {
        if part == 0 { format!("{whole}{unit}") } else { format!("{whole}{unit}{part}{part_unit}") }
    };
    match () {
        _ if minutes < 10 => with(minutes, "m", secs % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(hours / 24, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{}d", hours / 24),
        _ if hours < 24 * 365 * 8 => with(hours / 24 / 365, "y", (hours / 24) % 365, "d"),
        _ => format!("{}y", hours / 24 / 365),
    }
}

/// kubectl's condition of a certificate signing request: `Denied`, `Approved` or `Pending`, then
/// `,Failed` and `,Issued`.
fn csr_condition(v: &Value) -> String {
    let conditions = v.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let has = |t: &str| conditions.iter().any(|c| c.get("type").and_then(Value::as_str) == Some(t));
    let mut out = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        out.push_str(",Failed");
    }
    if v.pointer("/status/certificate").and_then(Value::as_str).is_some_and(|c| !c.is_empty()) {
        out.push_str(",Issued");
    }
    out
}

fn is_hpas(info: &ResourceInfo) -> bool {
    info.group == "autoscaling" && info.plural == "horizontalpodautoscalers" && info.custom.is_none()
}

/// An HPA's metrics as kubectl shows them: `current/target` per metric (the status's metric at
/// the same index is the current one), resource metrics named, the first two and how many more.
fn hpa_targets(v: &Value) -> String {
    let specs = v.pointer("/spec/metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = v.pointer("/status/currentMetrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let quantity = |x: Option<&Value>| match x {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<nil>".into(),
    };
    let shown: Vec<String> = specs
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i);
            let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
            let source_key = match kind {
                "External" => "external",
                "Pods" => "pods",
                "Object" => "object",
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                _ => return "<unknown type>".into(),
            };
            let source = spec.get(source_key).cloned().unwrap_or(Value::Null);
            let target = source.get("target").cloned().unwrap_or(Value::Null);
            let current = status.and_then(|s| s.get(source_key)).and_then(|s| s.get("current"));
            let current_of = |field: &str| {
                current.map_or("<unknown>".to_string(), |c| match c.get(field) {
                    Some(q) => quantity(Some(q)),
                    None => "<nil>".into(),
                })
            };
            match kind {
                "External" | "Object" if target.get("averageValue").is_some() => {
                    let cur =
                        current.and_then(|c| c.get("averageValue")).map_or("<unknown>".into(), |q| quantity(Some(q)));
                    format!("{cur}/{} (avg)", quantity(target.get("averageValue")))
                }
                "External" | "Object" => format!("{}/{}", current_of("value"), quantity(target.get("value"))),
                "Pods" => format!("{}/{}", current_of("averageValue"), quantity(target.get("averageValue"))),
                _ => {
                    let name = source.get("name").and_then(Value::as_str).unwrap_or("");
                    if target.get("averageValue").is_some() {
                        format!("{name}: {}/{}", current_of("averageValue"), quantity(target.get("averageValue")))
                    } else {
                        let cur = current
                            .and_then(|c| c.get("averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or("<unknown>".into(), |u| format!("{u}%"));
                        let want = target
                            .get("averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or("<auto>".into(), |u| format!("{u}%"));
                        format!("{name}: {cur}/{want}")
                    }
                }
            }
        })
        .collect();
    let mut out = shown.join(", ");
    if specs.len() > 2 {
        out.push_str(&format!(" + {} more...", specs.len() - 2));
    }
    out
}

/// One Table row for an object.
pub fn row(info: &ResourceInfo, o: &StoredObject) -> Value {
    let v = o.value();
    let meta = v.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let created = meta.get("creationTimestamp").and_then(Value::as_str).unwrap_or("");
    let custom = info.custom.as_ref().filter(|c| !c.printer_columns.is_empty());
    let cells = if let Some(c) = custom {
        let mut cells = vec![Value::String(o.name.clone())];
        for p in &c.printer_columns {
            let cell = match crate::jsonpath::select(&v, &p.json_path).first() {
                None => Value::Null,
                Some(Value::String(s)) if p.type_ == "date" => Value::String(age(s)),
                Some(x) if p.type_ == "string" && !x.is_string() => match x {
                    Value::Array(_) | Value::Object(_) => Value::String(x.to_string()),
                    other => Value::String(other.to_string()),
                },
                Some(x) => (*x).clone(),
            };
            cells.push(cell);
        }
        Value::Array(cells)
    } else if info.is_core("pods") {
        let total = v.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
        let statuses = v.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
        let ready = statuses.iter().filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true)).count();
        let restarts: i64 = statuses.iter().filter_map(|s| s.get("restartCount").and_then(Value::as_i64)).sum();
        let phase = if meta.get("deletionTimestamp").is_some() {
            "Terminating"
        } else {
            v.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Unknown")
        };
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("<none>").to_string();
        json!([
            o.name,
            format!("{ready}/{total}"),
            phase,
            restarts,
            age(created),
            s("/status/podIP"),
            s("/spec/nodeName")
        ])
    } else if crate::certificate_signing::is_csrs(info) {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("<none>").to_string();
        let duration =
            v.pointer("/spec/expirationSeconds").and_then(Value::as_i64).map_or("<none>".into(), human_duration);
        json!([o.name, age(created), s("/spec/signerName"), s("/spec/username"), duration, csr_condition(&v)])
    } else if is_hpas(info) {
        // Read in its v2 form, as kube prints every version.
        let v = match v.as_object() {
            Some(m) if crate::autoscaling_v1::is_v1(info) => Value::Object(crate::autoscaling_v1::to_v2(m)),
            _ => v,
        };
        let reference = format!(
            "{}/{}",
            v.pointer("/spec/scaleTargetRef/kind").and_then(Value::as_str).unwrap_or(""),
            v.pointer("/spec/scaleTargetRef/name").and_then(Value::as_str).unwrap_or("")
        );
        let min_pods =
            v.pointer("/spec/minReplicas").and_then(Value::as_i64).map_or("<unset>".into(), |n| n.to_string());
        let number = |p: &str| v.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        json!([
            o.name,
            reference,
            hpa_targets(&v),
            min_pods,
            number("/spec/maxReplicas"),
            number("/status/currentReplicas"),
            age(created)
        ])
    } else if crate::resource_quota::is_quotas(info) {
        let (request, limit) = quota_cells(&v);
        json!([o.name, age(created), request, limit])
    } else if is_budgets(info) {
        // An IntOrString as Go prints it; N/A when not set.
        let bound = |k: &str| match v.pointer(&format!("/spec/{k}")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "N/A".into(),
        };
        let allowed = v.pointer("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0);
        json!([o.name, bound("minAvailable"), bound("maxUnavailable"), allowed, age(created)])
    } else {
        json!([o.name, age(created)])
    };
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
    })
}

/// A whole Table for a list page. `list_meta` is the list's metadata object.
pub fn table(info: &ResourceInfo, list_meta: Value, items: &[std::sync::Arc<StoredObject>]) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns(info),
        "rows": items.iter().map(|o| row(info, o)).collect::<Vec<_>>(),
    })
}

/// A single-row Table, for a watch event or a GET of one object.
pub fn event_table(info: &ResourceInfo, o: &StoredObject) -> Vec<u8> {
    let t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": o.rv.to_string()},
        "columnDefinitions": columns(info),
        "rows": [row(info, o)],
    });
    serde_json::to_vec(&t).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_shows_them() {
        for (secs, shown) in [
            (5, "5s"),
            (119, "119s"),
            (330, "5m30s"),
            (600, "10m"),
            (3600, "60m"),
            (8100, "135m"),
            (11_000, "3h3m"),
            (86_400, "24h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (30 * 86_400, "30d"),
            (800 * 86_400, "2y70d"),
            (3650 * 86_400, "10y"),
        ] {
            assert_eq!(human_duration(secs), shown, "{secs}");
        }
    }
}

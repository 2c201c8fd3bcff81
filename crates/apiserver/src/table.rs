//! Server-side printing (`meta.k8s.io/v1` `Table`), which kubectl asks for
//! with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//!
//! Columns follow kube-apiserver's printers for pods (Name, Ready, Status,
//! Restarts, Age, then IP/Node at priority 1) and the generic Name/Age
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
    } else {
        json!([name, age])
    }
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

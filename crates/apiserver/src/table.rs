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
    } else {
        json!([name, age])
    }
}

fn age(created: &str) -> String {
    let Ok(t) = created.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - t.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
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

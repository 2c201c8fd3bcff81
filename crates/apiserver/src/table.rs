//! Server-side printing (`meta.k8s.io/v1` `Table`), which kubectl asks for
//! with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//!
//! Built-in kinds are printed as kube-apiserver prints them ([`crate::printers`]); custom
//! resources get Name and their CustomResourceDefinition's `additionalPrinterColumns` (Name and
//! Age when it declares none), as the apiextensions server prints them, and so do resources
//! registered with `ResourceInfo::new`. Rows carry the object's metadata as a
//! `PartialObjectMetadata`. Only used for kubectl-style requests, so it parses objects instead
//! of using the pre-serialized bytes.

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
    crate::printers::columns(info).unwrap_or_else(|| json!([name, age]))
}

fn age(created: &str) -> String {
    crate::printers::since(Some(created))
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
    } else if let Some(cells) = crate::printers::cells(info, &v) {
        Value::Array(cells)
    } else {
        json!([o.name, age(created)])
    };
    let mut row = json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
    });
    if let Some(conditions) = crate::printers::row_conditions(info, &v) {
        row["conditions"] = conditions;
    }
    row
}

/// A whole Table for a list page. `list_meta` is the list's metadata object.
pub fn table(info: &ResourceInfo, list_meta: Value, items: &[std::sync::Arc<StoredObject>]) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns(info),
        "rows": match items.is_empty() && !crate::printers::rows_listed_when_empty(info) {
            true => Value::Null,
            false => items.iter().map(|o| row(info, o)).collect(),
        },
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

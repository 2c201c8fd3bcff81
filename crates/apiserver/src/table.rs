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
    /// `meta.k8s.io/v1` Table rows (kubectl), each carrying the object as asked.
    Table(IncludeObject),
    /// `meta.k8s.io/v1` PartialObjectMetadata (metadata-only clients:
    /// `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`).
    Metadata,
}

/// What a Table's rows carry of their objects (the `includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// Nothing (`None`).
    None,
    /// Its metadata as `PartialObjectMetadata` (`Metadata`, the default).
    #[default]
    Metadata,
    /// The whole object (`Object`: kubectl's `--sort-by` sorts on it).
    Object,
}

impl Render {
    /// The rendering an `Accept` header asks for: that of the media range the server answers
    /// (the first, in kube's order of negotiation, it can write: see `negotiation.rs`). As
    /// kube-apiserver's `AllowsMediaTypeTransform`, a Table is served as JSON or YAML only (a
    /// protobuf Table range is passed over for the next one) and `PartialObjectMetadata` in any
    /// of them; a range asking for another rendering is passed over too.
    pub fn from_accept(accept: Option<&str>) -> Render {
        crate::negotiation::Accept::parse(accept).render(true)
    }

    /// The rendering a request asks for: its `Accept` header, and for a Table the query's
    /// `includeObject`.
    pub fn from_request(accept: Option<&str>, query: &[(String, String)]) -> Render {
        Render::from_accept(accept).with_query(query)
    }

    /// A Table rendering with what the query's `includeObject` asks its rows to carry.
    pub(crate) fn with_query(self, query: &[(String, String)]) -> Render {
        match self {
            Render::Table(_) => {
                let asked = query.iter().find(|(k, _)| k == "includeObject").map(|(_, v)| v.as_str());
                Render::Table(match asked {
                    Some("None") => IncludeObject::None,
                    Some("Object") => IncludeObject::Object,
                    _ => IncludeObject::Metadata,
                })
            }
            r => r,
        }
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

/// A custom resource column's cell for the first value its JSONPath selects, as kube's
/// tableconvertor makes it: a `string` column prints the value as client-go's JSONPath prints
/// one (text as it is, a map or list as JSON, a null as `<no value>`); other columns keep a
/// value of their type (an `integer` column truncates a float; a `date` column shows the age of
/// an RFC 3339 time, `<unknown>` for none or the zero time, `<invalid>` for another string) and
/// are null for any other value.
fn custom_cell(column_type: &str, x: &Value) -> Value {
    match (column_type, x) {
        ("string", Value::String(s)) => Value::String(s.clone()),
        ("string", Value::Null) => Value::String("<no value>".into()),
        ("string", Value::Array(_) | Value::Object(_)) => Value::String(crate::structural::go_json(x)),
        ("string", other) => Value::String(crate::go_fmt::v(other)),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => i.into(),
            None => (n.as_f64().unwrap_or_default().trunc() as i64).into(),
        },
        ("number" | "boolean", Value::Number(_) | Value::Bool(_)) if (column_type == "boolean") == x.is_boolean() => {
            x.clone()
        }
        ("date", Value::String(s)) => {
            // Go's zero time (0001-01-01T00:00:00Z), or none, has no age.
            const ZERO: i64 = -62_135_596_800;
            match s.parse::<jiff::Timestamp>() {
                _ if s.is_empty() || s == "null" => Value::String("<unknown>".into()),
                Ok(t) if t.as_second() == ZERO && t.subsec_nanosecond() == 0 => Value::String("<unknown>".into()),
                Ok(_) => Value::String(crate::printers::since(Some(s))),
                Err(_) => Value::String("<invalid>".into()),
            }
        }
        _ => Value::Null,
    }
}

/// One Table row for an object, carrying what `include` asks of it.
pub fn row(info: &ResourceInfo, o: &StoredObject, include: IncludeObject) -> Value {
    let v = o.value();
    let created = v.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("");
    let custom = info.custom.as_ref().filter(|c| !c.printer_columns.is_empty());
    let cells = if let Some(c) = custom {
        let mut cells = vec![Value::String(o.name.clone())];
        for p in &c.printer_columns {
            let cell = match crate::jsonpath::select(&v, &p.json_path).first() {
                None => Value::Null,
                Some(x) => custom_cell(&p.type_, x),
            };
            cells.push(cell);
        }
        Value::Array(cells)
    } else if let Some(cells) = crate::printers::cells(info, &v) {
        Value::Array(cells)
    } else {
        json!([o.name, crate::printers::since(Some(created))])
    };
    let conditions = crate::printers::row_conditions(info, &v);
    let mut row = json!({"cells": cells, "object": row_object(v, include)});
    if let Some(conditions) = conditions {
        row["conditions"] = conditions;
    }
    row
}

/// What a row carries of its object `v`, as `include` asks.
fn row_object(mut v: Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => {
            let meta = v.get_mut("metadata").map(Value::take).unwrap_or_else(|| json!({}));
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
        }
        IncludeObject::Object => v,
    }
}

/// A whole Table for a list page. `list_meta` is the list's metadata object.
pub fn table(
    info: &ResourceInfo,
    list_meta: Value,
    items: &[std::sync::Arc<StoredObject>],
    include: IncludeObject,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns(info),
        "rows": match items.is_empty() && !crate::printers::rows_listed_when_empty(info) {
            true => Value::Null,
            false => match crate::printers::order(info, items) {
                Some(order) => order.into_iter().map(|i| row(info, &items[i], include)).collect(),
                None => items.iter().map(|o| row(info, o, include)).collect(),
            },
        },
    })
}

/// The Table of a built-in kind's autoscaling/v1 `Scale` (kube prints none for a custom
/// resource's, whose `scale` answers its Scale whatever the client asks).
pub fn scale_table(scale: Value, include: IncludeObject) -> Value {
    let rv = scale.pointer("/metadata/resourceVersion").cloned().unwrap_or_else(|| json!(""));
    let cells = crate::printers::scale_cells(&scale);
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": crate::printers::scale_columns(),
        "rows": [{"cells": cells, "object": row_object(scale, include)}],
    })
}

/// A single-row Table, for a watch event or a GET of one object; without its column
/// definitions when `headers` is false (a watch's events after its first, as kube sends them).
pub fn event_table(info: &ResourceInfo, o: &StoredObject, include: IncludeObject, headers: bool) -> Vec<u8> {
    let t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": o.rv.to_string()},
        "columnDefinitions": if headers { columns(info) } else { Value::Null },
        "rows": [row(info, o, include)],
    });
    serde_json::to_vec(&t).unwrap_or_default()
}

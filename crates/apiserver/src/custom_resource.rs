//! Custom resources served from CustomResourceDefinitions: what a write of one goes through
//! beyond what every object does (pruning, defaulting and validating with the version's
//! structural schema; the `scale` subresource's replica paths), and how a stored object is
//! served in a requested version.
//!
//! Invariants: a custom resource's object is stored in its storage version, pruned with that
//! version's schema, and served in the version asked for (conversion `None`: only `apiVersion`
//! changes) as kube's storage decoder and converter coerce it ([`to_version`]); a write is
//! defaulted with the written version's schema; a write is refused (422: a body of another
//! `kind` for its kind alone, neither pruned nor defaulted; else kube's causes in kube's order:
//! the schema's, then the scale paths', then the embedded resources', then the
//! uniqueness of set and map lists, then the validation rules') before anything is stored.

use serde_json::{Map, Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::structural::{self, Cause};
use crate::validation_rules;

fn schema(info: &ResourceInfo) -> Option<&Value> {
    info.custom.as_ref()?.schema.as_deref()
}

/// The `kind` a body names when it is not `info`'s (kube's decoder reads it; its schema coercion
/// skips such an object and validation refuses it).
fn other_kind<'a>(info: &ResourceInfo, obj: &'a Map<String, Value>) -> Option<&'a str> {
    obj.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty() && *k != info.kind)
}

/// Removes the fields the schema does not allow; returns their paths.
pub fn prune(info: &ResourceInfo, obj: &mut Value) -> Vec<String> {
    if obj.as_object().is_some_and(|m| other_kind(info, m).is_some()) {
        return Vec::new();
    }
    match schema(info) {
        Some(s) => structural::prune(s, obj),
        None => Vec::new(),
    }
}

/// Fills the schema's defaults.
pub fn default(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if let Some(s) = schema(info).filter(|_| other_kind(info, obj).is_none()) {
        let mut v = Value::Object(std::mem::take(obj));
        structural::drop_nulls(s, &mut v);
        structural::default(s, &mut v);
        if let Value::Object(m) = v {
            *obj = m;
        }
    }
}

/// Validates an object about to be stored: its kind (alone when it is another), its schema,
/// then the `scale` subresource's paths, then the schema's validation rules (`old` being the
/// version an update replaces). A write through `/status` has its status judged against the
/// status's schema alone, and the scale's status paths only.
pub fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&StoredObject>,
    meta: Vec<Cause>,
    target: crate::strategy::Target,
) -> Result<(), ApiError> {
    let status_only = target == crate::strategy::Target::Status;
    let Some(custom) = &info.custom else { return Ok(()) };
    check_kind(info, obj)?;
    let mut v = Value::Object(obj.clone());
    // The replaced object as this version serves it, to correlate unchanged values with: read
    // only when the schema finds a fault (which it may ratchet) or rules run.
    let replaced = old;
    let old_value = std::cell::OnceCell::new();
    let old = || {
        old_value
            .get_or_init(|| {
                old.and_then(|o| match o.value() {
                    // Served in this version already (the cache's view of it).
                    Value::Object(m) if m.get("apiVersion").and_then(Value::as_str) == Some(&info.api_version()) => {
                        Some(Value::Object(m))
                    }
                    Value::Object(m) => to_version(info, m).map(Value::Object),
                    _ => None,
                })
            })
            .as_ref()
    };
    let mut causes = meta;
    if let Some(s) = &custom.schema {
        let judge = |old: Option<&Value>| match status_only {
            true => structural::validate_status(s, &v, old),
            false => structural::validate(s, &v, old),
        };
        let found = judge(None);
        causes.extend(if found.is_empty() { found } else { judge(old()) });
    }
    if let Some(scale) = &info.scale_subresource {
        let spec_path = (!status_only).then_some(&scale.spec_replicas_path);
        for path in spec_path.into_iter().chain([&scale.status_replicas_path]) {
            if let Some(c) = replicas_cause(&v, path) {
                causes.push(c);
            }
        }
        if let Some(p) = &scale.label_selector_path
            && let Some(sel) = lookup(&v, p)
            && !sel.is_string()
        {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!(
                    "Invalid value: 0: {p} accessor error: {} is of the type {}, expected string",
                    go_plain(sel),
                    go_type(sel)
                ),
                field: p.clone(),
            });
        }
    }
    if let Some(s) = custom.schema.as_deref().filter(|_| !status_only) {
        causes.extend(crate::embedded_resource::validate(s, &v));
    }
    if let Some(s) = &custom.schema {
        // A list the replaced object already repeats in may stay as it is (kube's ratcheting
        // judges the whole object: one old fault lets every list through).
        let found = crate::list_type::validate(s, &v);
        if !found.is_empty() && old().is_none_or(|o| crate::list_type::validate(s, o).is_empty()) {
            causes.extend(found);
        }
    }
    if let Some(s) = custom.schema.as_deref().filter(|s| validation_rules::has_rules(s)) {
        // Rules see the object as the client does, with its kind and apiVersion.
        v["apiVersion"] = info.api_version().into();
        v["kind"] = info.kind.clone().into();
        validation_rules::validate(s, &v, old(), &mut causes);
    }
    if causes.is_empty() {
        if !status_only {
            finalizer_warnings(obj, replaced.map(StoredObject::value).as_ref());
        }
        return Ok(());
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    Err(invalid(info, name, &causes))
}

/// Refuses an object of another `kind` than `info`'s: kube judges the type first, and alone.
pub fn check_kind(info: &ResourceInfo, obj: &Map<String, Value>) -> Result<(), ApiError> {
    let Some(kind) = other_kind(info, obj) else { return Ok(()) };
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let message = format!("Invalid value: {}: must be {}", structural::go_quote(kind), info.kind);
    Err(invalid(info, name, &[Cause { reason: "FieldValueInvalid", message, field: "kind".into() }]))
}

/// kube's warnings for the finalizers a write of a custom resource adds (sorted): a name that is
/// not domain-qualified with a path may clash with another writer's. (A name that is not a
/// qualified name at all is refused with the metadata before.)
fn finalizer_warnings(obj: &Map<String, Value>, old: Option<&Value>) {
    let names = |v: Option<&Value>| -> std::collections::BTreeSet<String> {
        let list = v.and_then(|m| m.get("finalizers")).and_then(Value::as_array);
        list.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    };
    let old_names = names(old.and_then(|o| o.get("metadata")));
    for name in names(obj.get("metadata")).difference(&old_names) {
        if !name.contains('/') && !crate::object_meta::STANDARD_FINALIZERS.contains(&name.as_str()) {
            let with = if name.contains('.') { " including a path (/)" } else { "" };
            crate::warning::record(format!(
                "metadata.finalizers: {}: prefer a domain-qualified finalizer name{with} to avoid accidental \
                 conflicts with other finalizer writers",
                structural::go_quote(name)
            ));
        }
    }
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').filter(|s| !s.is_empty()).try_fold(v, |v, k| v.get(k))
}

/// A value as Go's `%v` prints it in an accessor error.
fn go_plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The Go type (`%T`) an unstructured value has, as kube's messages print it.
pub(crate) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// kube's check of a replicas path of the `scale` subresource.
fn replicas_cause(v: &Value, path: &str) -> Option<Cause> {
    let r = lookup(v, path)?;
    let field = path.to_string();
    match r {
        Value::Null => None,
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let i = n.as_i64().unwrap_or(i64::MAX);
            if i < 0 {
                Some(Cause {
                    reason: "FieldValueInvalid",
                    message: format!("Invalid value: {i}: should be a non-negative integer"),
                    field,
                })
            } else if i > i64::from(i32::MAX) {
                Some(Cause {
                    reason: "FieldValueInvalid",
                    message: format!("Invalid value: {i}: should be less than or equal to {}", i32::MAX),
                    field,
                })
            } else {
                None
            }
        }
        other => Some(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: 0: {path} accessor error: {} is of the type {}, expected int64",
                go_plain(other),
                go_type(other)
            ),
            field,
        }),
    }
}

/// kube's 422 for an object of `info` with these causes.
pub fn invalid(info: &ResourceInfo, name: &str, causes: &[Cause]) -> ApiError {
    invalid_kind(&info.group, &info.kind, name, causes)
}

/// kube's 422 for an object of `kind` in `group` with these causes.
pub(crate) fn invalid_kind(group: &str, kind_name: &str, name: &str, causes: &[Cause]) -> ApiError {
    let kind = if group.is_empty() { kind_name.to_string() } else { format!("{kind_name}.{group}") };
    // Every cause is kept; the message names each once, as Go's `ToAggregate` does.
    let mut listed: Vec<String> = Vec::with_capacity(causes.len());
    for line in causes.iter().map(|c| format!("{}: {}", c.field, c.message)) {
        if !listed.contains(&line) {
            listed.push(line);
        }
    }
    let summary = if listed.len() == 1 { listed[0].clone() } else { format!("[{}]", listed.join(", ")) };
    let mut e = ApiError::new(422, "Invalid", format!("{kind} \"{name}\" is invalid: {summary}"));
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), name.into());
    }
    if !group.is_empty() {
        d.insert("group".into(), group.into());
    }
    d.insert("kind".into(), kind_name.into());
    d.insert(
        "causes".into(),
        causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect(),
    );
    e.details = Some(Box::new(Value::Object(d)));
    e
}

/// A stored object of a custom resource as `info`'s version serves it, as kube's storage
/// decoder and converter coerce it: pruned and defaulted with the current schema of the version
/// it was stored in, then, when that is another version, given `apiVersion` of `info`'s version
/// and pruned with that version's schema (a field a schema no longer has is not served; the
/// served version's own defaults are not added). None when it is not an object of this resource.
pub fn to_version(info: &ResourceInfo, obj: Map<String, Value>) -> Option<Map<String, Value>> {
    let mut obj = of_resource(info, obj)?;
    let stored =
        obj.get("apiVersion").and_then(Value::as_str).and_then(|a| a.rsplit_once('/')).map(|(_, v)| v.to_string());
    let other_schema = info
        .custom
        .as_ref()
        .filter(|_| stored.as_deref().is_some_and(|v| !v.is_empty() && v != info.version))
        .and_then(|c| c.version_schemas.get(stored.as_deref().unwrap_or("")).cloned());
    if let Some(s) = &other_schema {
        coerce(s, &mut obj, true);
    }
    obj.insert("apiVersion".into(), info.api_version().into());
    obj.insert("kind".into(), info.kind.clone().into());
    if let Some(s) = schema(info) {
        coerce(s, &mut obj, other_schema.is_none());
    }
    Some(obj)
}

/// A custom resource's object in `info`'s version as conversion `None` makes it for admission:
/// the same object under the other `apiVersion`. None when it is not an object of this resource.
pub fn converted_for_admission(info: &ResourceInfo, obj: Map<String, Value>) -> Option<Map<String, Value>> {
    let mut obj = of_resource(info, obj)?;
    obj.insert("apiVersion".into(), info.api_version().into());
    obj.insert("kind".into(), info.kind.clone().into());
    Some(obj)
}

/// A stored object of the resource's group under another kind (stored before the definition's
/// kind was renamed), as kube reads it: its converter gives it the version's `apiVersion`, and
/// its schema, which is the kind's, leaves it as it is (it is then served under the
/// definition's kind, where kube keeps the stored one). None for an object of the kind.
pub fn of_another_kind(info: &ResourceInfo, obj: &Map<String, Value>) -> Option<Map<String, Value>> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if kind.is_empty() || kind == info.kind || group != info.group {
        return None;
    }
    let mut obj = obj.clone();
    obj.insert("apiVersion".into(), info.api_version().into());
    Some(obj)
}

/// `obj` if it is an object of `info`'s resource (its kind, and its group if it has an
/// `apiVersion`).
fn of_resource(info: &ResourceInfo, obj: Map<String, Value>) -> Option<Map<String, Value>> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != info.kind {
        return None;
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !api_version.is_empty() && group != info.group {
        return None;
    }
    Some(obj)
}

/// An object of a custom resource in the version `info`'s objects are stored in, as kube's
/// converter makes it: `apiVersion` of that version, pruned with its schema.
pub fn to_storage(info: &ResourceInfo, mut obj: Map<String, Value>) -> Map<String, Value> {
    let Some(c) = info.custom.as_ref().filter(|c| c.storage_version != info.version) else { return obj };
    obj.insert("apiVersion".into(), format!("{}/{}", info.group, c.storage_version).into());
    if let Some(s) = c.version_schemas.get(&c.storage_version) {
        let mut v = Value::Object(obj);
        structural::prune(s, &mut v);
        structural::drop_nulls(s, &mut v);
        let Value::Object(m) = v else { unreachable!() };
        obj = m;
    }
    obj
}

/// `obj` pruned with `schema`, and defaulted with it when `defaults`.
fn coerce(schema: &Value, obj: &mut Map<String, Value>, defaults: bool) {
    let mut v = Value::Object(std::mem::take(obj));
    structural::prune(schema, &mut v);
    structural::drop_nulls(schema, &mut v);
    if defaults {
        structural::default(schema, &mut v);
    }
    if let Value::Object(m) = v {
        *obj = m;
    }
}

/// The `apiVersion` a custom resource's object is stored with.
pub fn storage_api_version(info: &ResourceInfo) -> Option<String> {
    let c = info.custom.as_ref()?;
    (c.storage_version != info.version).then(|| format!("{}/{}", info.group, c.storage_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_each_fault_once_and_keeps_every_cause() {
        let info = crate::registry::Registry::with_defaults().lookup("pods").map(|i| (**i).clone()).unwrap();
        let cause = || Cause { reason: "FieldValueRequired", message: "Required value".into(), field: "spec.x".into() };
        let e = invalid(&info, "p", &[cause(), cause()]);
        assert_eq!(e.message, "Pod \"p\" is invalid: spec.x: Required value");
        assert_eq!(e.details.unwrap()["causes"].as_array().unwrap().len(), 2);
        let other = Cause { reason: "FieldValueRequired", message: "Required value".into(), field: "spec.y".into() };
        let e = invalid(&info, "p", &[cause(), other, cause()]);
        assert_eq!(e.message, "Pod \"p\" is invalid: [spec.x: Required value, spec.y: Required value]");
    }
}

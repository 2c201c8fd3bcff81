//! Field validation of request bodies (`fieldValidation=Strict|Warn|Ignore`), as
//! kube-apiserver decodes them: duplicate JSON fields and fields the type's schema does not
//! know are refused (Strict: 400 BadRequest "strict decoding error: …"; for a patch, judged once
//! the object is read and patched, 422 Invalid on `patch`), reported as warnings (Warn, the
//! default) or passed over (Ignore).
//!
//! Invariants: whatever the directive, a built-in type's unknown fields are never stored
//! (kube decodes into its types, which drop them); of duplicate fields the last wins, and a
//! duplicate object merges into the earlier one (as Go's decoder fills the same map or
//! struct); field paths are dotted from the object's root with `[i]` for list elements
//! (`spec.template.spec.containers[0].bogus`); types without a built-in schema keep every
//! field.

use std::cell::RefCell;
use std::fmt;
use std::fmt::Write as _;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;
use crate::schema::{self, Node};
use crate::status::ApiError;
use crate::warning;

/// What to do with duplicate and unknown fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the request (400; 422 for a patch).
    Strict,
    /// Accept it, with a warning per field (kube-apiserver's default).
    #[default]
    Warn,
    /// Accept it silently.
    Ignore,
}

impl FieldValidation {
    /// The `fieldValidation` query parameter; `options` names the request's options kind in
    /// the 422 for an unsupported value (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub fn parse(value: Option<&str>, options: &str) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Strict" => Ok(FieldValidation::Strict),
            "Ignore" => Ok(FieldValidation::Ignore),
            other => {
                let msg =
                    format!("Unsupported value: \"{other}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
                let mut e = ApiError::new(
                    422,
                    "Invalid",
                    format!("{options}.meta.k8s.io \"\" is invalid: fieldValidation: {msg}"),
                );
                e.details = Some(Box::new(serde_json::json!({
                    "group": "meta.k8s.io",
                    "kind": options,
                    "causes": [{"reason": "FieldValueNotSupported", "message": msg, "field": "fieldValidation"}],
                })));
                Err(e)
            }
        }
    }
}

/// A JSON body decoded as kube-apiserver decodes it, with the paths of its duplicate fields.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let dups = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Tracked { place: Place::Root, dups: &dups }.deserialize(&mut de)?;
    de.end()?;
    Ok((v, dups.into_inner()))
}

/// Removes the fields of `obj` that the schema of `info`'s type does not know, returning their
/// paths (nothing for types without a built-in schema).
pub(crate) fn prune_unknown(info: &ResourceInfo, obj: &mut Value) -> Vec<String> {
    if info.custom.is_some() {
        // As kube coerces a custom resource: its metadata as ObjectMeta decodes it, then the
        // rest by the version's schema (those paths sorted).
        let mut unknown = Vec::new();
        if let (Some(meta), Some(root)) = (obj.get_mut("metadata"), schema::builtin().root("", "v1", "ConfigMap")) {
            prune(root.field("metadata").node, meta, &mut String::from("metadata"), &mut unknown);
        }
        let mut rest = crate::custom_resource::prune(info, obj);
        rest.sort_unstable();
        unknown.extend(rest);
        // Then the metadata of the resources the schema embeds, as ObjectMeta decodes it.
        if let (Some(s), Some(root)) =
            (info.custom.as_ref().and_then(|c| c.schema.clone()), schema::builtin().root("", "v1", "ConfigMap"))
        {
            let meta_node = root.field("metadata").node;
            crate::embedded_resource::each_metadata(&s, obj, &mut |meta, path| {
                prune(meta_node, meta, &mut path.to_string(), &mut unknown);
                if let Value::Object(m) = meta {
                    crate::object_meta::round_trip(m);
                }
            });
        }
        return unknown;
    }
    let mut unknown = Vec::new();
    if let Some(node) = schema::builtin().root(&info.group, &info.version, &info.kind) {
        prune(node, obj, &mut String::new(), &mut unknown);
    }
    unknown
}

/// Applies the directive to the duplicate and unknown fields of a body for `info`; a YAML
/// body's duplicate keys come as go-yaml's complaints (`yaml`), reported before the fields as
/// kube-apiserver reports them (one error, `yaml: unmarshal errors:` and a line each; a
/// warning each).
pub(crate) fn check(
    info: &ResourceInfo,
    directive: FieldValidation,
    yaml: &[String],
    duplicates: &[String],
    unknown: &[String],
) -> Result<(), ApiError> {
    // Strict names go-yaml's complaints in one error; Warn warns of each.
    let yaml = match directive {
        FieldValidation::Strict if !yaml.is_empty() => {
            vec![format!("yaml: unmarshal errors:\n  {}", yaml.join("\n  "))]
        }
        FieldValidation::Strict => Vec::new(),
        _ => yaml.to_vec(),
    };
    let fields = duplicates.iter().map(|p| format!("duplicate field \"{p}\""));
    let problems = yaml.into_iter().chain(fields).chain(unknown.iter().map(|p| format!("unknown field \"{p}\"")));
    judge(directive, problems, |detail| {
        ApiError::bad_request(format!(
            "{k} in version \"{v}\" cannot be handled as a {k}: {detail}",
            k = info.kind,
            v = info.version
        ))
    })
}

/// Applies `directive` to a body's problems: Strict refuses them in one error (`refuse` words
/// its "strict decoding error: …" detail), Warn records each as a warning, Ignore passes over.
fn judge(
    directive: FieldValidation,
    problems: impl Iterator<Item = String>,
    refuse: impl FnOnce(String) -> ApiError,
) -> Result<(), ApiError> {
    match directive {
        FieldValidation::Strict => {
            let problems: Vec<String> = problems.collect();
            match problems.is_empty() {
                true => Ok(()),
                false => Err(refuse(format!("strict decoding error: {}", problems.join(", ")))),
            }
        }
        FieldValidation::Warn => {
            problems.for_each(warning::record);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// [`check`] for a patch, as kube-apiserver's patch handler judges it once the object is read
/// and patched: the patch body's strict decoding problems (`body_problems`, worded as its
/// decoding words them) and then the patched object's unknown fields. Strict refuses them with
/// 422 Invalid on `patch`, the value `value()` names; Warn warns of each.
pub(crate) fn check_patch(
    directive: FieldValidation,
    body_problems: &[String],
    unknown: &[String],
    value: impl FnOnce() -> String,
) -> Result<(), ApiError> {
    let problems = body_problems.iter().cloned().chain(unknown.iter().map(|p| format!("unknown field \"{p}\"")));
    judge(directive, problems, |detail| crate::store::invalid_patch(&value(), &detail))
}

fn join(path: &str, key: &str) -> String {
    let mut joined = path.to_string();
    push_field(&mut joined, key);
    joined
}

/// `path` with `key` appended as a field (`a.b`).
fn push_field(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// Walks `v` with its schema `node`, removing the fields the schema does not know and recording
/// their paths. `path` is the path of `v` (a buffer extended and restored on the way down, so
/// that only the paths of unknown fields are allocated). Scalars have no fields: only objects
/// and lists are entered.
fn prune(node: Node<'_>, v: &mut Value, path: &mut String, unknown: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let members = node.members();
            let mut removed = Vec::new();
            for (k, c) in m.iter_mut() {
                match members.knows(k) {
                    Some(false) => {
                        unknown.push(join(path, k));
                        removed.push(k.clone());
                    }
                    Some(true) if c.is_object() || c.is_array() => {
                        let len = path.len();
                        push_field(path, k);
                        prune(node.field(k).node, c, path, unknown);
                        path.truncate(len);
                    }
                    _ => {}
                }
            }
            for k in removed {
                m.remove(&k);
            }
        }
        Value::Array(items) => {
            // `node` already describes the items (see `schema::Node::field`).
            for (i, item) in items.iter_mut().enumerate() {
                if item.is_object() || item.is_array() {
                    let len = path.len();
                    let _ = write!(path, "[{i}]");
                    prune(node, item, path, unknown);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// Where a decoded value sits: a chain of borrowed keys and indexes up to the root, spelled out
/// as a path only for a duplicate field (most bodies have none, so decoding allocates no paths).
#[derive(Clone, Copy)]
enum Place<'p> {
    Root,
    Field(&'p Place<'p>, &'p str),
    Item(&'p Place<'p>, usize),
}

impl Place<'_> {
    /// The dotted path (`a.b[0].c`).
    fn path(&self) -> String {
        let mut out = String::new();
        self.write_into(&mut out);
        out
    }

    fn write_into(&self, out: &mut String) {
        match self {
            Place::Root => {}
            Place::Field(parent, key) => {
                parent.write_into(out);
                push_field(out, key);
            }
            Place::Item(parent, i) => {
                parent.write_into(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

/// Decodes a JSON value recording duplicate fields.
struct Tracked<'a, 'p> {
    place: Place<'p>,
    dups: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Tracked<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tracked<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) =
            seq.next_element_seed(Tracked { place: Place::Item(&self.place, out.len()), dups: self.dups })?
        {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(Tracked { place: Place::Field(&self.place, &k), dups: self.dups })?;
            match out.get_mut(&k) {
                Some(old) => {
                    self.dups.borrow_mut().push(Place::Field(&self.place, &k).path());
                    merge_duplicate(old, v);
                }
                None => {
                    out.insert(k, v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A duplicate field's value over the earlier one: objects merge, anything else replaces.
fn merge_duplicate(old: &mut Value, new: Value) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (k, v) in n {
                match o.get_mut(&k) {
                    Some(existing) => merge_duplicate(existing, v),
                    None => {
                        o.insert(k, v);
                    }
                }
            }
        }
        (old, new) => *old = new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_are_found_and_merged_as_go_decodes_them() {
        let (v, dups) =
            decode(br#"{"metadata": {"name": "a"}, "data": {"k": "v1", "k": "v2"}, "data": {"z": "1"}}"#).unwrap();
        assert_eq!(v["data"], json!({"k": "v2", "z": "1"}));
        assert_eq!(dups, ["data.k", "data"]);
        let (_, dups) = decode(br#"{"a": [{"b": 1, "b": 2}]}"#).unwrap();
        assert_eq!(dups, ["a[0].b"]);
        let (_, dups) = decode(br#"{"a": [{}, {"b": [{"c": 1, "c": 2}]}], "d": [[{"e": 1, "e": 2}]]}"#).unwrap();
        assert_eq!(dups, ["a[1].b[0].c", "d[0][0].e"]);
        assert!(decode(b"{\"a\": 1} x").is_err());
    }

    #[test]
    fn unknown_fields_of_built_in_types_are_pruned() {
        let reg = crate::registry::Registry::with_defaults();
        let deploy = reg.find("apps", "v1", "deployments").unwrap();
        let mut v = json!({"metadata": {"name": "a", "labels": {"x": "y"}, "bogus": 1}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i", "nope": true}]}}, "selector": {}}, "extra": {}});
        let unknown = prune_unknown(deploy, &mut v);
        assert_eq!(unknown, ["extra", "metadata.bogus", "spec.template.spec.containers[0].nope"]);
        assert_eq!(v["metadata"], json!({"name": "a", "labels": {"x": "y"}}));
        assert_eq!(v["spec"]["template"]["spec"]["containers"][0], json!({"name": "c", "image": "i"}));
        let custom = crate::registry::ResourceInfo::new("example.com", "v1", "widgets", "Widget", true);
        let mut w = json!({"spec": {"anything": 1}});
        assert!(prune_unknown(&custom, &mut w).is_empty());
    }
}

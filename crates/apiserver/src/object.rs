//! Stored objects: one immutable, pre-serialized snapshot of an API object.
//!
//! Invariants: `full` is the compact JSON of the object and always starts with
//! `{"kind":…,"apiVersion":…` so that `full[body_offset..]` is the remainder
//! (`"metadata":…}` or just `}`), letting list items be written without
//! `kind`/`apiVersion` by emitting `{` + remainder. Labels and selectable
//! field values are extracted once at write time for selector matching.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;

/// One version of one object, shared (`Arc`) between the store, the watch
/// cache and in-flight responses.
#[derive(Debug)]
pub struct StoredObject {
    /// Store key: `namespace/name` or `name`.
    pub key: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// metadata.uid.
    pub uid: String,
    /// metadata.resourceVersion as a number.
    pub rv: u64,
    /// metadata.labels.
    pub labels: Vec<(String, String)>,
    /// Field-selector values (metadata.name, metadata.namespace, extra fields).
    pub fields: Vec<(String, String)>,
    /// Full compact JSON.
    pub full: Bytes,
    /// Offset in `full` where the part after `kind`/`apiVersion` starts.
    pub body_offset: usize,
}

impl StoredObject {
    /// The object parsed back into a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.full).unwrap_or(Value::Null)
    }

    /// Appends the object as a list item (with or without kind/apiVersion).
    pub fn write_item(&self, out: &mut Vec<u8>, with_kind: bool) {
        if with_kind {
            out.extend_from_slice(&self.full);
        } else {
            out.push(b'{');
            out.extend_from_slice(&self.full[self.body_offset..]);
        }
    }
}

/// Build the key of an object.
pub fn make_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Reorders metadata keys the way kube-apiserver serializes ObjectMeta.
fn ordered_meta(meta: Map<String, Value>) -> Map<String, Value> {
    let mut meta = meta;
    let mut out = Map::new();
    for k in META_ORDER {
        if let Some(v) = meta.remove(*k) {
            out.insert((*k).to_string(), v);
        }
    }
    for (k, v) in meta {
        out.insert(k, v);
    }
    out
}

fn field_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Looks up a dotted path in a JSON object.
pub fn path<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    let mut cur = v;
    for seg in dotted.split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// Serializes a finished object (metadata complete) into a `StoredObject`.
/// `obj` must be a JSON object; kind/apiVersion are taken from `info`.
pub fn build(info: &ResourceInfo, obj: Map<String, Value>, rv: u64) -> StoredObject {
    let mut obj = obj;
    obj.remove("kind");
    obj.remove("apiVersion");
    let meta = match obj.remove("metadata") {
        Some(Value::Object(m)) => ordered_meta(m),
        _ => Map::new(),
    };
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let namespace = meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = meta
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let labels: Vec<(String, String)> = meta
        .get("labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default();

    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"kind\":");
    let _ = serde_json::to_writer(&mut out, &info.kind);
    out.extend_from_slice(b",\"apiVersion\":");
    let _ = serde_json::to_writer(&mut out, &info.api_version());
    let meta_val = Value::Object(meta);
    let mut rest: Vec<(String, Value)> = vec![("metadata".into(), meta_val)];
    rest.extend(obj);
    let body_offset = out.len() + 1;
    for (k, v) in &rest {
        out.push(b',');
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, v);
    }
    out.push(b'}');

    // Field values are computed from the (now split) value parts.
    let mut fields = vec![("metadata.name".to_string(), name.clone())];
    if info.namespaced {
        fields.push(("metadata.namespace".to_string(), namespace.clone()));
    }
    if !info.selectable_fields.is_empty() {
        let whole: Map<String, Value> = rest.into_iter().collect();
        let whole = Value::Object(whole);
        for f in &info.selectable_fields {
            if let Some(s) = path(&whole, f).and_then(field_string) {
                fields.push((f.clone(), s));
            }
        }
    }

    StoredObject {
        key: make_key(&namespace, &name),
        namespace,
        name,
        uid,
        rv,
        labels,
        fields,
        full: Bytes::from(out),
        body_offset,
    }
}

/// Returns a copy of `obj` whose `metadata.resourceVersion` is `rv` (used for
/// DELETED events and selector-transition DELETEDs).
pub fn with_rv(info: &ResourceInfo, obj: &StoredObject, rv: u64) -> StoredObject {
    let mut v = match obj.value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(Value::Object(meta)) = v.get_mut("metadata") {
        meta.insert("resourceVersion".into(), rv.to_string().into());
    }
    build(info, v, rv)
}

const RV_MARKER: &str = "\u{1}rv-slot\u{1}";
const RV_MARKER_JSON: &[u8] = b"\\u0001rv-slot\\u0001";

/// A serialized object whose `metadata.resourceVersion` is still open, so
/// the expensive serialization can happen before the RV is known (outside
/// the store lock) and [`Template::finish`] only splices the digits in.
#[derive(Debug)]
pub struct Template {
    obj: StoredObject,
    slot: usize,
}

impl Template {
    /// Serializes `obj` (metadata complete except resourceVersion).
    pub fn new(info: &ResourceInfo, obj: Map<String, Value>) -> Self {
        let mut obj = obj;
        if !matches!(obj.get("metadata"), Some(Value::Object(_))) {
            obj.insert("metadata".into(), Value::Object(Map::new()));
        }
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.insert("resourceVersion".into(), RV_MARKER.into());
        }
        let built = build(info, obj, 0);
        let slot = memchr::memmem::find(&built.full[built.body_offset..], RV_MARKER_JSON)
            .map(|p| p + built.body_offset)
            .unwrap_or(usize::MAX);
        Template { obj: built, slot }
    }

    /// The object with its resourceVersion set to `rv`.
    pub fn finish(self, rv: u64) -> StoredObject {
        let mut o = self.obj;
        if self.slot == usize::MAX {
            o.rv = rv;
            return o;
        }
        let digits = rv.to_string();
        let full = &o.full;
        let mut out = Vec::with_capacity(full.len() + digits.len());
        out.extend_from_slice(&full[..self.slot]);
        out.extend_from_slice(digits.as_bytes());
        out.extend_from_slice(&full[self.slot + RV_MARKER_JSON.len()..]);
        o.full = Bytes::from(out);
        o.rv = rv;
        o
    }

    /// The store key of the object.
    pub fn key(&self) -> &str {
        &self.obj.key
    }
}

/// A random RFC 4122 v4 UUID string.
pub fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    let mut b = b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The current time as kube's RFC 3339 seconds-precision UTC string.
pub fn now_rfc3339() -> String {
    let ts = jiff::Timestamp::now();
    let secs = ts.as_second();
    jiff::Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Five random characters for `generateName`, from kube's alphabet.
pub fn name_suffix() -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHA[rand::random_range(0..ALPHA.len())] as char)
        .collect()
}

/// Whether `name` is a valid DNS-1123 subdomain.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'.')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn build_layout() {
        let info = ResourceInfo::new("", "v1", "pods", "Pod", true);
        let v = json!({"spec": {"x": 1}, "metadata": {"labels": {"a": "b"}, "name": "p", "namespace": "d"}});
        let Value::Object(m) = v else { unreachable!() };
        let o = build(&info, m, 5);
        let s = std::str::from_utf8(&o.full).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","labels":{"a":"b"}},"spec":{"x":1}}"#
        );
        let mut item = Vec::new();
        o.write_item(&mut item, false);
        assert!(item.starts_with(br#"{"metadata""#));
        assert_eq!(o.key, "d/p");
        let mut m = Map::new();
        m.insert(
            "metadata".into(),
            json!({"name": "x", "labels": {"a": "b"}}),
        );
        let t = Template::new(&info, m);
        let o = t.finish(123);
        assert_eq!(
            std::str::from_utf8(&o.full).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"123","labels":{"a":"b"}}}"#
        );
        assert_eq!(o.rv, 123);
        let empty = build(&info, Map::new(), 1);
        let mut item = Vec::new();
        empty.write_item(&mut item, false);
        assert_eq!(&item, br#"{"metadata":{}}"#);
    }
}

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
    /// metadata.generation (0 when absent).
    pub generation: i64,
    /// metadata.labels.
    pub labels: Vec<(String, String)>,
    /// Field-selector values (metadata.name, metadata.namespace, extra fields).
    pub fields: Vec<(String, String)>,
    /// Server-owned metadata kept across updates (creationTimestamp,
    /// deletionTimestamp, deletionGracePeriodSeconds).
    pub kept: Vec<(String, Value)>,
    /// Full compact JSON.
    pub full: Bytes,
    /// Offset in `full` where the part after `kind`/`apiVersion` starts.
    pub body_offset: usize,
    /// Byte range of the resourceVersion string's contents in `full`.
    pub rv_range: Option<(usize, usize)>,
    /// Byte range of the `spec` value in `full`.
    pub spec_range: Option<(usize, usize)>,
}

impl StoredObject {
    /// The object parsed back into a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.full).unwrap_or(Value::Null)
    }

    /// The serialized `spec`, if any.
    pub fn spec_bytes(&self) -> Option<&[u8]> {
        self.spec_range.map(|(a, b)| &self.full[a..b])
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

    /// A copy whose resourceVersion is `rv` (splices the digits; the rest of
    /// the bytes are shared logic, not re-serialized).
    pub fn with_rv(&self, rv: u64) -> StoredObject {
        let digits = rv.to_string();
        let (full, rv_range, spec_range) = splice(&self.full, self.rv_range, self.spec_range, digits.as_bytes());
        StoredObject {
            key: self.key.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            rv,
            generation: self.generation,
            labels: self.labels.clone(),
            fields: self.fields.clone(),
            kept: self.kept.clone(),
            full,
            body_offset: self.body_offset,
            rv_range,
            spec_range,
        }
    }

    /// Whether `other` equals this object except for the resourceVersion.
    pub fn same_except_rv(&self, other: &StoredObject) -> bool {
        match (self.rv_range, other.rv_range) {
            (Some((a1, b1)), Some((a2, b2))) => {
                a1 == a2 && self.full[..a1] == other.full[..a2] && self.full[b1..] == other.full[b2..]
            }
            _ => false,
        }
    }
}

type Splice = (Bytes, Option<(usize, usize)>, Option<(usize, usize)>);

/// Replaces the bytes in `rv_range` by `digits`, shifting `spec_range`.
fn splice(full: &[u8], rv_range: Option<(usize, usize)>, spec_range: Option<(usize, usize)>, digits: &[u8]) -> Splice {
    let Some((a, b)) = rv_range else {
        return (Bytes::copy_from_slice(full), None, spec_range);
    };
    let mut out = Vec::with_capacity(full.len() + digits.len());
    out.extend_from_slice(&full[..a]);
    out.extend_from_slice(digits);
    out.extend_from_slice(&full[b..]);
    let shift = |p: usize| {
        if p >= b { p + digits.len() - (b - a) } else { p }
    };
    let spec = spec_range.map(|(s, e)| (shift(s), shift(e)));
    (Bytes::from(out), Some((a, a + digits.len())), spec)
}

/// Build the key of an object.
pub fn make_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") }
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

/// Server-owned metadata fields carried over by updates.
pub const KEPT_META: &[&str] = &["creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"];

fn field_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Looks up a dotted path in a JSON object.
pub fn path<'a>(obj: &'a Map<String, Value>, dotted: &str) -> Option<&'a Value> {
    let mut parts = dotted.split('.');
    let mut cur = obj.get(parts.next()?)?;
    for seg in parts {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

fn write_entry(out: &mut Vec<u8>, first: &mut bool, k: &str, v: &Value) -> (usize, usize) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    let _ = serde_json::to_writer(&mut *out, k);
    out.push(b':');
    let start = out.len();
    let _ = serde_json::to_writer(&mut *out, v);
    (start, out.len())
}

/// Serializes a finished object into a `StoredObject` (kind/apiVersion from
/// `info`; metadata keys in kube's order; other keys sorted, as Go's encoder writes an
/// unstructured object, whatever the map type: this crate does not turn on serde_json's
/// `preserve_order`, which would slow every `serde_json::Value` decode in the binaries that
/// embed it, but another crate may).
pub fn build(info: &ResourceInfo, obj: &Map<String, Value>, rv: u64) -> StoredObject {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let meta = match obj.get("metadata") {
        Some(Value::Object(m)) => m,
        _ => EMPTY.get_or_init(Map::new),
    };
    let s = |f: &str| meta.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let (name, namespace, uid) = (s("name"), s("namespace"), s("uid"));
    let labels: Vec<(String, String)> = meta
        .get("labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect())
        .unwrap_or_default();
    let kept = KEPT_META.iter().filter_map(|k| meta.get(*k).map(|v| (k.to_string(), v.clone()))).collect();

    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"kind\":");
    let _ = serde_json::to_writer(&mut out, &info.kind);
    out.extend_from_slice(b",\"apiVersion\":");
    let _ = serde_json::to_writer(&mut out, &info.api_version());
    let body_offset = out.len() + 1;
    out.extend_from_slice(b",\"metadata\":{");
    let mut rv_range = None;
    let mut first = true;
    for k in META_ORDER {
        if let Some(v) = meta.get(*k) {
            let (a, b) = write_entry(&mut out, &mut first, k, v);
            if *k == "resourceVersion" && v.is_string() {
                rv_range = Some((a + 1, b - 1));
            }
        }
    }
    // Sorted, so the bytes do not depend on the map type: with serde_json's `preserve_order`
    // turned on by another crate, removing a key reorders the map, and an unchanged update
    // must still produce the stored bytes.
    let mut rest: Vec<_> = meta.iter().filter(|(k, _)| !META_ORDER.contains(&k.as_str())).collect();
    rest.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (k, v) in rest {
        write_entry(&mut out, &mut first, k, v);
    }
    out.push(b'}');
    let mut spec_range = None;
    let mut members: Vec<_> =
        obj.iter().filter(|(k, _)| !matches!(k.as_str(), "kind" | "apiVersion" | "metadata")).collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (k, v) in members {
        let mut f = false;
        let r = write_entry(&mut out, &mut f, k, v);
        if k == "spec" {
            spec_range = Some(r);
        }
    }
    out.push(b'}');

    let mut fields = vec![("metadata.name".to_string(), name.clone())];
    if info.namespaced {
        fields.push(("metadata.namespace".to_string(), namespace.clone()));
    }
    for f in &info.selectable_fields {
        if let Some(s) = path(obj, f).and_then(field_string) {
            fields.push((f.clone(), s));
        }
    }

    StoredObject {
        key: make_key(&namespace, &name),
        namespace,
        name,
        uid,
        rv,
        generation: meta.get("generation").and_then(Value::as_i64).unwrap_or(0),
        labels,
        fields,
        kept,
        full: Bytes::from(out),
        body_offset,
        rv_range,
        spec_range,
    }
}

/// Returns a copy of `obj` whose `metadata.resourceVersion` is `rv` (used for
/// DELETED events and selector-transition DELETEDs).
pub fn with_rv(_info: &ResourceInfo, obj: &StoredObject, rv: u64) -> StoredObject {
    obj.with_rv(rv)
}

const RV_MARKER: &str = "\u{1}rv-slot\u{1}";

/// A serialized object whose `metadata.resourceVersion` is still open, so
/// the expensive serialization can happen before the RV is known (outside
/// the store lock) and [`Template::finish`] only splices the digits in.
#[derive(Debug)]
pub struct Template {
    obj: StoredObject,
}

impl Template {
    /// Serializes `obj` (metadata complete except resourceVersion, which is
    /// set to a placeholder in `obj`).
    pub fn new(info: &ResourceInfo, obj: &mut Map<String, Value>) -> Self {
        if !matches!(obj.get("metadata"), Some(Value::Object(_))) {
            obj.insert("metadata".into(), Value::Object(Map::new()));
        }
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.insert("resourceVersion".into(), RV_MARKER.into());
        }
        Template { obj: build(info, obj, 0) }
    }

    /// A template re-using an existing object's bytes (for deletes).
    pub fn from_stored(obj: &StoredObject) -> Self {
        Template { obj: obj.with_rv(0) }
    }

    /// Whether the finished object would equal `old` except for its RV.
    pub fn same_as(&self, old: &StoredObject) -> bool {
        self.obj.same_except_rv(old)
    }

    /// The object with its resourceVersion set to `rv`.
    pub fn finish(self, rv: u64) -> StoredObject {
        let mut o = self.obj;
        let digits = rv.to_string();
        let (full, rv_range, spec_range) = splice(&o.full, o.rv_range, o.spec_range, digits.as_bytes());
        o.full = full;
        o.rv_range = rv_range;
        o.spec_range = spec_range;
        o.rv = rv;
        o
    }

    /// The store key of the object.
    pub fn key(&self) -> &str {
        &self.obj.key
    }

    /// The object without any resourceVersion (dry-run creates).
    pub fn finish_without_rv(self, info: &ResourceInfo) -> StoredObject {
        match self.obj.value() {
            Value::Object(mut m) => {
                if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                    meta.remove("resourceVersion");
                }
                build(info, &m, 0)
            }
            _ => self.obj,
        }
    }
}

/// A random RFC 4122 v4 UUID string.
pub fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    let mut b = b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The current time as kube's RFC 3339 seconds-precision UTC string.
pub fn now_rfc3339() -> String {
    let ts = jiff::Timestamp::now();
    let secs = ts.as_second();
    jiff::Timestamp::from_second(secs).map(|t| t.to_string()).unwrap_or_default()
}

/// Five random characters for `generateName`, from kube's alphabet.
pub fn name_suffix() -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHA[rand::random_range(0..ALPHA.len())] as char).collect()
}

/// Whether `name` is a valid DNS-1123 subdomain.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'.')
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
        let o = build(&info, &m, 5);
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
        m.insert("metadata".into(), json!({"name": "x", "labels": {"a": "b"}}));
        let t = Template::new(&info, &mut m);
        let o = t.finish(123);
        assert_eq!(
            std::str::from_utf8(&o.full).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"123","labels":{"a":"b"}}}"#
        );
        assert_eq!(o.rv, 123);
        let o7 = o.with_rv(7);
        let (a, b) = o7.rv_range.unwrap();
        assert_eq!(&o7.full[a..b], b"7");
        assert!(o.same_except_rv(&o.with_rv(99999)));
        let empty = build(&info, &Map::new(), 1);
        let mut item = Vec::new();
        empty.write_item(&mut item, false);
        assert_eq!(&item, br#"{"metadata":{}}"#);
    }
}

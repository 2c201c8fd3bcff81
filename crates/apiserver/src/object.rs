//! Stored objects: one immutable version of an API object, as the watch cache holds it.
//!
//! An object is kept as its **storage bytes** — the compact JSON stored under its key, with
//! `kind` and `apiVersion` and without `metadata.resourceVersion` (kube-apiserver's layout) — plus
//! its revision and the offset where `"resourceVersion":"<rv>"` goes when it is served. The same
//! bytes are shared by the storage (memory backend), the cache, its history and every response in
//! flight; serving splices the revision in while copying into the response.
//!
//! Invariants: `value` starts with `{"kind":<kind>,"apiVersion":<apiVersion>,` so that
//! `value[body_offset..]` is the rest (`"metadata":…}`), letting list items be written without
//! `kind`/`apiVersion`; `rv_at` is inside `metadata` (right after `uid`, where kube-apiserver
//! writes `resourceVersion`, or first when there is no uid). Values read from storage that do not
//! have this layout (written by another program) are re-serialized into it. Labels and selectable
//! field values are extracted once, for selector matching without parsing.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;

/// How the resourceVersion member is inserted at `rv_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    /// `"resourceVersion":"N",` (another member follows).
    Before,
    /// `,"resourceVersion":"N"` (it is the last member).
    After,
    /// `"resourceVersion":"N"` (it is the only member).
    Alone,
}

/// One version of one object, shared (`Arc`) between the storage, the watch cache and in-flight
/// responses.
#[derive(Debug, Clone)]
pub struct StoredObject {
    /// Cache key: `namespace/name` or `name`.
    pub key: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// metadata.uid.
    pub uid: String,
    /// The revision of this version (its resourceVersion).
    pub rv: u64,
    /// metadata.generation (0 when absent).
    pub generation: i64,
    /// metadata.labels.
    pub labels: Vec<(String, String)>,
    /// Field-selector values (metadata.name, metadata.namespace, extra fields).
    pub fields: Vec<(String, String)>,
    /// Server-owned metadata carried over by updates ([`KEPT_META`] present in the object).
    pub kept: Vec<(&'static str, Value)>,
    value: Bytes,
    body_offset: usize,
    rv_at: usize,
    sep: Sep,
    spec_range: Option<(usize, usize)>,
    /// Where `status` is in `value`, if the object has one.
    status_range: Option<(usize, usize)>,
    /// False for objects never stored (dry-run creates): served without a resourceVersion.
    has_rv: bool,
}

impl StoredObject {
    /// The storage bytes (no resourceVersion).
    pub fn storage_value(&self) -> &Bytes {
        &self.value
    }

    /// Whether the object is one of `info`'s kind and version.
    pub fn is_of(&self, info: &ResourceInfo) -> bool {
        self.value.starts_with(&type_prefix(info))
    }

    fn rv_member(&self, out: &mut Vec<u8>) {
        if !self.has_rv {
            return;
        }
        if self.sep == Sep::After {
            out.push(b',');
        }
        out.extend_from_slice(b"\"resourceVersion\":\"");
        let mut buf = itoa_buf(self.rv);
        out.extend_from_slice(buf.as_bytes_mut());
        out.push(b'"');
        if self.sep == Sep::Before {
            out.push(b',');
        }
    }

    /// Appends the object's JSON (with its resourceVersion).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.value[..self.rv_at]);
        self.rv_member(out);
        out.extend_from_slice(&self.value[self.rv_at..]);
    }

    /// Appends the object as a list item (with or without kind/apiVersion).
    pub fn write_item(&self, out: &mut Vec<u8>, with_kind: bool) {
        if with_kind {
            self.write_json(out);
        } else {
            out.push(b'{');
            out.extend_from_slice(&self.value[self.body_offset..self.rv_at]);
            self.rv_member(out);
            out.extend_from_slice(&self.value[self.rv_at..]);
        }
    }

    /// The object's JSON (with its resourceVersion) in a buffer of its own.
    pub fn json(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.json_len());
        self.write_json(&mut out);
        Bytes::from(out)
    }

    /// The length of [`Self::json`].
    pub fn json_len(&self) -> usize {
        self.value.len() + 24 + 20
    }

    /// The object parsed back into a JSON value (with its resourceVersion).
    pub fn value(&self) -> Value {
        let mut v: Value = serde_json::from_slice(&self.value).unwrap_or(Value::Null);
        if self.has_rv
            && let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.insert("resourceVersion".into(), self.rv.to_string().into());
        }
        v
    }

    /// The object parsed as [`Self::value`] gives it, less its `status` and
    /// `metadata.managedFields`: what a write through `/status` keeps of the stored version.
    pub fn value_without_status(&self) -> Value {
        let mut de = serde_json::Deserializer::from_slice(&self.value);
        let mut v = match serde::Deserializer::deserialize_map(&mut de, WithoutStatus { in_metadata: false }) {
            Ok(m) => Value::Object(m),
            Err(_) => Value::Null,
        };
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut)
            && self.has_rv
        {
            meta.insert("resourceVersion".into(), self.rv.to_string().into());
        }
        v
    }

    /// Whether the object was stored (it has a resourceVersion).
    pub fn has_rv(&self) -> bool {
        self.has_rv
    }

    /// The serialized `spec`, if any.
    pub fn spec_bytes(&self) -> Option<&[u8]> {
        self.spec_range.map(|(a, b)| &self.value[a..b])
    }

    /// Whether the stored bytes hold `text` anywhere (a quick test before parsing).
    pub(crate) fn mentions(&self, text: &str) -> bool {
        memchr::memmem::find(&self.value, text.as_bytes()).is_some()
    }

    /// The stored `metadata.annotations`, parsed (and nothing else of the object).
    pub(crate) fn annotations(&self) -> Map<String, Value> {
        #[derive(serde::Deserialize)]
        struct Object {
            metadata: Option<Metadata>,
        }
        #[derive(serde::Deserialize)]
        struct Metadata {
            annotations: Option<Map<String, Value>>,
        }
        serde_json::from_slice::<Object>(&self.value).ok().and_then(|o| o.metadata?.annotations).unwrap_or_default()
    }

    /// The stored `status`, parsed (and nothing else of the object), if any.
    pub fn status(&self) -> Option<Value> {
        self.status_range.and_then(|(a, b)| serde_json::from_slice(&self.value[a..b]).ok())
    }

    /// This version with another resourceVersion (deletion events carry the deletion's).
    pub fn with_rv(&self, rv: u64) -> StoredObject {
        StoredObject { rv, has_rv: true, ..self.clone() }
    }

    /// Whether `other` equals this object except for the resourceVersion.
    pub fn same_except_rv(&self, other: &StoredObject) -> bool {
        self.value == other.value
    }
}

/// Reads an object's JSON less its `status` and `metadata.managedFields` (its `metadata` with
/// `in_metadata`), without building the values it leaves out.
struct WithoutStatus {
    in_metadata: bool,
}

impl<'de> serde::de::Visitor<'de> for WithoutStatus {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        let left_out = if self.in_metadata { "managedFields" } else { "status" };
        while let Some(k) = map.next_key::<String>()? {
            if k == left_out {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            let v = match k.as_str() {
                "metadata" if !self.in_metadata => {
                    Value::Object(map.next_value_seed(WithoutStatus { in_metadata: true })?)
                }
                _ => map.next_value()?,
            };
            out.insert(k, v);
        }
        Ok(out)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for WithoutStatus {
    type Value = Map<String, Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// A small stack buffer holding the decimal digits of a number.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes_mut(&mut self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa_buf(mut n: u64) -> Digits {
    let mut buf = [0u8; 20];
    let mut i = 20;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    Digits { buf, start: i }
}

/// Build the cache key of an object.
pub fn make_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") }
}

/// ObjectMeta's fields in Go's order (how Go's JSON encoder writes them).
pub(crate) const META_ORDER: &[&str] = &[
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

/// The elements of `v` when it is an array; none otherwise (absent, null or another value).
pub(crate) fn elements(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Looks up a dotted path in a JSON object, a number standing for an array's element.
pub fn path<'a>(obj: &'a Map<String, Value>, dotted: &str) -> Option<&'a Value> {
    let mut parts = dotted.split('.');
    let mut cur = obj.get(parts.next()?)?;
    for seg in parts {
        cur = match cur {
            Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
            _ => cur.get(seg)?,
        };
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

/// The members of a `managedFields` entry in kube-apiserver's order.
const MANAGED_FIELDS_ORDER: &[&str] =
    &["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"];

/// Writes `managedFields` with each entry's members in kube-apiserver's order (others after
/// them, sorted).
fn write_managed_fields(out: &mut Vec<u8>, first: &mut bool, v: &Value) {
    let Value::Array(entries) = v else {
        write_entry(out, first, "managedFields", v);
        return;
    };
    if !*first {
        out.push(b',');
    }
    *first = false;
    out.extend_from_slice(b"\"managedFields\":[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let Value::Object(m) = e else {
            let _ = serde_json::to_writer(&mut *out, e);
            continue;
        };
        out.push(b'{');
        let mut first_member = true;
        let known = MANAGED_FIELDS_ORDER.iter().filter_map(|k| m.get_key_value(*k));
        let mut others: Vec<_> = m.iter().filter(|(k, _)| !MANAGED_FIELDS_ORDER.contains(&k.as_str())).collect();
        others.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (k, v) in known.chain(others) {
            write_entry(out, &mut first_member, k, v);
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// The canonical prefix of every value of a resource: `{"kind":…,"apiVersion":…,`.
fn type_prefix(info: &ResourceInfo) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"kind\":");
    let _ = serde_json::to_writer(&mut out, &info.kind);
    out.extend_from_slice(b",\"apiVersion\":");
    let _ = serde_json::to_writer(&mut out, &info.api_version());
    out.push(b',');
    out
}

/// Serializes an object into its storage bytes and the cache's view of it (kind/apiVersion from
/// `info`; metadata keys in kube's order without `resourceVersion`; other keys sorted, as Go's
/// encoder writes an unstructured object, whatever the map type: this crate does not turn on
/// serde_json's `preserve_order`, which would slow every `serde_json::Value` decode in the
/// binaries that embed it, but another crate may).
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
    let kept = KEPT_META.iter().filter_map(|k| meta.get(*k).map(|v| (*k, v.clone()))).collect();

    // Serialized in a reused buffer, then copied into an allocation of exactly its size: a stored
    // value is kept for as long as the object lives, and a grown buffer would keep up to twice it.
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut out = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    out.clear();
    out.extend_from_slice(&type_prefix(info));
    let body_offset = out.len();
    out.extend_from_slice(b"\"metadata\":{");
    let meta_start = out.len();
    let mut rv_at = None;
    let mut first = true;
    for k in META_ORDER {
        if *k == "resourceVersion" {
            continue;
        }
        if let Some(v) = meta.get(*k) {
            if *k == "managedFields" {
                write_managed_fields(&mut out, &mut first, v);
                continue;
            }
            write_entry(&mut out, &mut first, k, v);
            if *k == "uid" {
                rv_at = Some(out.len());
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
    let meta_end = out.len();
    out.push(b'}');
    let (rv_at, sep) = match rv_at {
        Some(at) if at == meta_end => (at, Sep::After),
        Some(at) => (at + 1, Sep::Before),
        None if meta_end == meta_start => (meta_start, Sep::Alone),
        None => (meta_start, Sep::Before),
    };
    let (mut spec_range, mut status_range) = (None, None);
    let mut members: Vec<_> =
        obj.iter().filter(|(k, _)| !matches!(k.as_str(), "kind" | "apiVersion" | "metadata")).collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (k, v) in members {
        let mut f = false;
        let r = write_entry(&mut out, &mut f, k, v);
        match k.as_str() {
            "spec" => spec_range = Some(r),
            "status" => status_range = Some(r),
            _ => {}
        }
    }
    out.push(b'}');

    let mut fields = vec![("metadata.name".to_string(), name.clone())];
    if info.namespaced {
        fields.push(("metadata.namespace".to_string(), namespace.clone()));
    }
    for f in &info.selectable_fields {
        let mut read = |p: &str| path(obj, p).and_then(field_string);
        if let Some(s) = crate::field_labels::value(info, f, &mut read) {
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
        value: {
            let v = Bytes::copy_from_slice(&out);
            if out.capacity() <= 1 << 20 {
                SCRATCH.with(|s| *s.borrow_mut() = out);
            }
            v
        },
        body_offset,
        rv_at,
        sep,
        spec_range,
        status_range,
        has_rv: true,
    }
}

/// Why a stored value could not become an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Not a JSON object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// Of another kind or apiVersion than the resource.
    #[error("a {got} where a {want} was expected")]
    WrongKind {
        /// kind/apiVersion found.
        got: String,
        /// kind/apiVersion expected.
        want: String,
    },
}

#[derive(Deserialize)]
struct MetaHead<'a> {
    #[serde(borrow)]
    uid: Option<&'a RawValue>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<serde::de::IgnoredAny>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "creationTimestamp")]
    creation_timestamp: Option<Value>,
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: Option<Value>,
    #[serde(rename = "deletionGracePeriodSeconds")]
    deletion_grace_period_seconds: Option<Value>,
}

/// A stored value of the resource `info` is a view of, read as `stored` (apiVersion, kind; either
/// may be left out): the key's name and namespace set, no resourceVersion.
fn stored_form(
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    value: &[u8],
    stored: (&str, &str),
) -> Result<Map<String, Value>, ValueError> {
    let mut m: Map<String, Value> = serde_json::from_slice(value).map_err(|e| ValueError::NotJson(e.to_string()))?;
    let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if !(api_version.is_empty() || api_version == stored.0) || !(kind.is_empty() || kind == stored.1) {
        return Err(ValueError::WrongKind {
            got: format!("{api_version} {kind}"),
            want: format!("{} {}", info.api_version(), info.kind),
        });
    }
    if let Some(Value::Object(meta)) = m.get_mut("metadata") {
        meta.remove("resourceVersion");
        meta.insert("name".into(), name.into());
        meta.insert("namespace".into(), ns.into());
    }
    Ok(m)
}

fn offset_in(base: &[u8], part: &str) -> usize {
    part.as_ptr() as usize - base.as_ptr() as usize
}

/// Reads an object from its storage bytes. `ns` and `name` come from the storage key; `rv` is
/// the key's mod revision. Values in the canonical layout are kept as they are (no copy); others
/// are re-serialized into it.
pub fn from_storage(
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    value: Bytes,
    rv: u64,
) -> Result<StoredObject, ValueError> {
    let trimmed = value.len() - value.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    let value = value.slice(..trimmed);
    if info.custom.is_some() {
        // Served in the version asked for, with that version's defaults.
        let mut m: Map<String, Value> =
            serde_json::from_slice(&value).map_err(|e| ValueError::NotJson(e.to_string()))?;
        let got = format!(
            "{} {}",
            m.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
            m.get("kind").and_then(Value::as_str).unwrap_or("")
        );
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            meta.remove("resourceVersion");
            meta.insert("name".into(), name.into());
            if info.namespaced {
                meta.insert("namespace".into(), ns.into());
            }
        }
        // A resource its webhook converts keeps objects in the version they were stored in
        // until they are served.
        let stored;
        let info = match (crate::conversion::webhook_of(info), m.get("apiVersion").and_then(Value::as_str)) {
            (Some(_), Some(api_version)) => {
                let version = match api_version.rsplit_once('/') {
                    Some((group, version)) if group == info.group && !version.is_empty() => version,
                    _ => info.custom.as_ref().map_or("", |c| c.storage_version.as_str()),
                };
                stored = crate::conversion::version_info(info, version);
                &stored
            }
            (Some(_), None) => {
                stored = crate::conversion::storage_info(info);
                &stored
            }
            (None, _) => info,
        };
        if let Some(m) = crate::custom_resource::of_another_kind(info, &m) {
            return Ok(build(info, &m, rv));
        }
        let m = crate::custom_resource::to_version(info, m)
            .ok_or_else(|| ValueError::WrongKind { got, want: format!("{} {}", info.api_version(), info.kind) })?;
        return Ok(build(info, &m, rv));
    }
    // Views stored in another resource's form: autoscaling/v1 HPAs as v2, events.k8s.io Events
    // as core/v1.
    if crate::autoscaling_v1::is_v1(info) {
        let m = stored_form(info, ns, name, &value, ("autoscaling/v2", "HorizontalPodAutoscaler"))?;
        return Ok(build(info, &crate::autoscaling_v1::from_v2(&m), rv));
    }
    if crate::events_api::is_events_api(info) {
        let m = stored_form(info, ns, name, &value, ("v1", "Event"))?;
        return Ok(build(info, &crate::events_api::from_core(m), rv));
    }
    let top: BTreeMap<&str, &RawValue> = match serde_json::from_slice(&value) {
        Ok(t) => t,
        // Keys with escapes cannot be borrowed: read the slow way.
        Err(_) => serde_json::from_slice::<Map<String, Value>>(&value)
            .map_err(|e| ValueError::NotJson(e.to_string()))
            .map(|_| BTreeMap::new())?,
    };
    let str_of = |k: &str| top.get(k).and_then(|r| serde_json::from_str::<String>(r.get()).ok()).unwrap_or_default();
    let (kind, api_version) = (str_of("kind"), str_of("apiVersion"));
    if (!kind.is_empty() && kind != info.kind) || (!api_version.is_empty() && api_version != info.api_version()) {
        return Err(ValueError::WrongKind {
            got: format!("{api_version} {kind}"),
            want: format!("{} {}", info.api_version(), info.kind),
        });
    }
    let canonical = || -> Result<StoredObject, ValueError> {
        let mut m: Map<String, Value> =
            serde_json::from_slice(&value).map_err(|e| ValueError::NotJson(e.to_string()))?;
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            meta.remove("resourceVersion");
            meta.insert("name".into(), name.into());
            if info.namespaced {
                meta.insert("namespace".into(), ns.into());
            }
        }
        Ok(build(info, &m, rv))
    };
    let prefix = type_prefix(info);
    let Some(meta_raw) = top.get("metadata").copied() else { return canonical() };
    let meta: MetaHead = serde_json::from_str(meta_raw.get()).map_err(|e| ValueError::NotJson(e.to_string()))?;
    let body_offset = prefix.len();
    if !value.starts_with(&prefix)
        || !value[body_offset..].starts_with(b"\"metadata\":")
        || meta.resource_version.is_some()
        || !meta_raw.get().starts_with('{')
    {
        return canonical();
    }
    let meta_at = offset_in(&value, meta_raw.get());
    let (rv_at, sep) = match meta.uid {
        Some(uid) => {
            let end = offset_in(&value, uid.get()) + uid.get().len();
            if value.get(end) == Some(&b',') { (end + 1, Sep::Before) } else { (end, Sep::After) }
        }
        None if meta_raw.get().trim_start_matches('{').trim_start().starts_with('}') => (meta_at + 1, Sep::Alone),
        None => (meta_at + 1, Sep::Before),
    };
    let range_of = |member: &str| {
        top.get(member).map(|s| {
            let a = offset_in(&value, s.get());
            (a, a + s.get().len())
        })
    };
    let (spec_range, status_range) = (range_of("spec"), range_of("status"));
    let labels: Vec<(String, String)> = meta.labels.unwrap_or_default().into_iter().collect();
    let kept = [
        ("creationTimestamp", meta.creation_timestamp),
        ("deletionTimestamp", meta.deletion_timestamp),
        ("deletionGracePeriodSeconds", meta.deletion_grace_period_seconds),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let mut fields = vec![("metadata.name".to_string(), name.to_string())];
    if info.namespaced {
        fields.push(("metadata.namespace".to_string(), ns.to_string()));
    }
    if !info.selectable_fields.is_empty() {
        // Each top-level member a field lives in is read once.
        let mut parsed: BTreeMap<&str, Option<BTreeMap<&str, &RawValue>>> = BTreeMap::new();
        for f in &info.selectable_fields {
            let mut read = |p: &str| {
                let mut parts = p.splitn(2, '.');
                let (first, rest) = (parts.next()?, parts.next());
                match rest {
                    None => top.get(first).and_then(|r| scalar_string(r)),
                    Some(rest) => {
                        let (first, raw) = top.get_key_value(first)?;
                        let members = parsed.entry(first).or_insert_with(|| serde_json::from_str(raw.get()).ok());
                        members.as_ref().and_then(|m| raw_path(m, rest))
                    }
                }
            };
            if let Some(v) = crate::field_labels::value(info, f, &mut read) {
                fields.push((f.clone(), v));
            }
        }
    }
    Ok(StoredObject {
        key: make_key(ns, name),
        namespace: ns.to_string(),
        name: name.to_string(),
        uid: meta.uid.map(|u| serde_json::from_str::<String>(u.get()).unwrap_or_default()).unwrap_or_default(),
        rv,
        generation: meta.generation.unwrap_or(0),
        labels,
        fields,
        kept,
        body_offset,
        rv_at,
        sep,
        spec_range,
        status_range,
        value,
        has_rv: true,
    })
}

/// The scalar at a dotted path below an object's members, as a field-selector string (a number
/// stands for an array's element).
fn raw_path(members: &BTreeMap<&str, &RawValue>, dotted: &str) -> Option<String> {
    let mut parts = dotted.split('.');
    let mut cur: &RawValue = members.get(parts.next()?)?;
    for seg in parts {
        cur = match cur.get().as_bytes().first() {
            Some(b'[') => {
                let items: Vec<&RawValue> = serde_json::from_str(cur.get()).ok()?;
                items.get(seg.parse::<usize>().ok()?).copied()?
            }
            _ => {
                let m: BTreeMap<&str, &RawValue> = serde_json::from_str(cur.get()).ok()?;
                m.get(seg)?
            }
        };
    }
    scalar_string(cur)
}

fn scalar_string(raw: &RawValue) -> Option<String> {
    match raw.get().as_bytes().first() {
        Some(b'{' | b'[') => None,
        _ => field_string(&serde_json::from_str::<Value>(raw.get()).ok()?),
    }
}

const RV_DRY_RUN: u64 = 0;

/// A serialized object whose resourceVersion is not known yet (it is the revision the storage
/// gives the write): [`Template::finish`] sets it without copying the bytes.
#[derive(Debug)]
pub struct Template {
    obj: StoredObject,
    /// The bytes to store when they are not the object's own (a custom resource written in
    /// another version than its storage version).
    stored: Option<Bytes>,
}

impl Template {
    /// Serializes `obj` (its metadata's `resourceVersion`, if any, is left out).
    pub fn new(info: &ResourceInfo, obj: &Map<String, Value>) -> Self {
        if crate::autoscaling_v1::is_v1(info) {
            // Stored as v2; answered as the stored object reads in v1.
            let stored = crate::autoscaling_v1::to_v2(obj);
            return Template {
                obj: build(info, &crate::autoscaling_v1::from_v2(&stored), RV_DRY_RUN),
                stored: Some(build(crate::autoscaling_v1::v2(), &stored, RV_DRY_RUN).value),
            };
        }
        if crate::events_api::is_events_api(info) {
            let stored = build(crate::events_api::core(), &crate::events_api::to_core(obj), RV_DRY_RUN).value;
            return Template { obj: build(info, obj, RV_DRY_RUN), stored: Some(stored) };
        }
        if info.custom.as_ref().is_some_and(|c| c.storage_version != info.version) {
            // Stored in the storage version, pruned with its schema; answered as that object
            // reads in the version written.
            let storage = crate::conversion::storage_info(info);
            let stored = crate::custom_resource::to_storage(info, obj.clone());
            let served = crate::custom_resource::to_version(info, stored.clone()).unwrap_or_else(|| obj.clone());
            return Template {
                obj: build(info, &served, RV_DRY_RUN),
                stored: Some(build(&storage, &stored, RV_DRY_RUN).value),
            };
        }
        Template { obj: build(info, obj, RV_DRY_RUN), stored: None }
    }

    /// A template of `obj` stored as `storage` (the object a conversion webhook made of it in
    /// the storage version).
    pub fn converted(info: &ResourceInfo, obj: &Map<String, Value>, storage: &Map<String, Value>) -> Self {
        Template {
            obj: build(info, obj, RV_DRY_RUN),
            stored: Some(build(&crate::conversion::storage_info(info), storage, RV_DRY_RUN).value),
        }
    }

    /// A template re-using an existing object's bytes (for deletes).
    pub fn from_stored(obj: &StoredObject) -> Self {
        Template { obj: obj.with_rv(RV_DRY_RUN), stored: None }
    }

    /// Whether the finished object would equal `old` except for its RV.
    pub fn same_as(&self, old: &StoredObject) -> bool {
        self.obj.same_except_rv(old)
    }

    /// Whether the object's bytes differ from `old`'s (without their resourceVersions) only in
    /// digits: what two objects differing only in RFC 3339 times of whole seconds (one width)
    /// do, a byte-wise test that rules most changes out.
    pub fn differs_only_in_digits(&self, old: &StoredObject) -> bool {
        let (a, b) = (&self.obj.value, &old.value);
        a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y || (x.is_ascii_digit() && y.is_ascii_digit()))
    }

    /// The bytes to store.
    pub fn storage_value(&self) -> Bytes {
        self.stored.clone().unwrap_or_else(|| self.obj.value.clone())
    }

    /// The object with its resourceVersion set to `rv`.
    pub fn finish(self, rv: u64) -> StoredObject {
        StoredObject { rv, has_rv: true, ..self.obj }
    }

    /// The cache key of the object.
    pub fn key(&self) -> &str {
        &self.obj.key
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.obj.name
    }

    /// The object's namespace.
    pub fn namespace(&self) -> &str {
        &self.obj.namespace
    }

    /// The serialized `spec`, if any.
    pub fn spec_bytes(&self) -> Option<&[u8]> {
        self.obj.spec_bytes()
    }

    /// The object's field-selector values.
    pub fn fields(&self) -> &[(String, String)] {
        &self.obj.fields
    }

    /// The object without any resourceVersion (dry-run creates).
    pub fn finish_without_rv(self) -> StoredObject {
        StoredObject { rv: 0, has_rv: false, ..self.obj }
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

/// Sets `condition` (its `type` and `status` given, `lastTransitionTime` filled in) in the
/// `conditions` of `status`, replacing the one of its type, as kube's condition helpers do:
/// the transition time is kept while the status stays, and is now when it changes.
pub(crate) fn set_condition(status: &mut Map<String, Value>, mut condition: Map<String, Value>) {
    let conditions = status.entry("conditions").or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(list) = conditions else { return };
    let existing = list.iter().position(|c| c.get("type") == condition.get("type"));
    let since = existing
        .map(|i| &list[i])
        .filter(|c| c.get("status") == condition.get("status"))
        .and_then(|c| c.get("lastTransitionTime"))
        .cloned()
        .unwrap_or_else(|| now_rfc3339().into());
    condition.insert("lastTransitionTime".into(), since);
    match existing {
        Some(i) => list[i] = Value::Object(condition),
        None => list.push(Value::Object(condition)),
    }
}

/// The strings of a JSON list (nothing when it is absent or not a list; items that are not
/// strings are skipped).
pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
}

/// kube's words for a name that is not a DNS subdomain (RFC 1123).
pub const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

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

    fn empty_value_of(info: &ResourceInfo) -> Value {
        build(info, &Map::new(), 1).value()
    }

    fn text(o: &StoredObject) -> String {
        String::from_utf8(o.json().to_vec()).unwrap()
    }

    #[test]
    fn build_layout() {
        let info = ResourceInfo::new("", "v1", "pods", "Pod", true);
        let v =
            json!({"spec": {"x": 1}, "metadata": {"labels": {"a": "b"}, "name": "p", "namespace": "d", "uid": "u"}});
        let Value::Object(m) = v else { unreachable!() };
        let o = build(&info, &m, 5);
        assert_eq!(
            text(&o),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","uid":"u","resourceVersion":"5","labels":{"a":"b"}},"spec":{"x":1}}"#
        );
        assert_eq!(
            std::str::from_utf8(o.storage_value()).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","uid":"u","labels":{"a":"b"}},"spec":{"x":1}}"#,
            "stored without resourceVersion"
        );
        let mut item = Vec::new();
        o.write_item(&mut item, false);
        assert!(item.starts_with(br#"{"metadata""#));
        assert_eq!(o.key, "d/p");
        assert_eq!(o.spec_bytes(), Some(&br#"{"x":1}"#[..]));
        let mut m = Map::new();
        m.insert("metadata".into(), json!({"name": "x", "resourceVersion": "9", "labels": {"a": "b"}}));
        let o = Template::new(&info, &m).finish(123);
        assert_eq!(
            text(&o),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"123","name":"x","labels":{"a":"b"}}}"#
        );
        assert!(o.same_except_rv(&o.with_rv(99999)));
        assert_eq!(o.value(), serde_json::from_slice::<Value>(&o.json()).unwrap());
        assert_eq!(
            empty_value_of(&info),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}})
        );
        let mut m = Map::new();
        m.insert("metadata".into(), json!({"name": "x", "uid": "u"}));
        assert_eq!(
            text(&build(&info, &m, 7)),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","uid":"u","resourceVersion":"7"}}"#
        );
        let empty = build(&info, &Map::new(), 1);
        let mut item = Vec::new();
        empty.write_item(&mut item, false);
        assert_eq!(&item, br#"{"metadata":{"resourceVersion":"1"}}"#);
    }

    #[test]
    fn a_status_write_reads_the_stored_version_without_status_or_managed_fields() {
        let info = ResourceInfo::new("", "v1", "pods", "Pod", true);
        let v = json!({"metadata": {"name": "p", "uid": "u", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
                "metadata": {"managedFields": 1}},
            "spec": {"x": 1, "status": 2}, "status": {"phase": "Running"}});
        let Value::Object(m) = v else { unreachable!() };
        let o = build(&info, &m, 5);
        assert_eq!(
            o.value_without_status(),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "uid": "u", "resourceVersion": "5",
                "labels": {"a": "b"}, "metadata": {"managedFields": 1}}, "spec": {"x": 1, "status": 2}})
        );
    }

    #[test]
    fn storage_bytes_read_back_without_copy_or_canonicalized() {
        let info =
            ResourceInfo::new("", "v1", "pods", "Pod", true).with_selectable_fields(&["spec.nodeName", "status.phase"]);
        let v = json!({"metadata": {"name": "p", "namespace": "d", "uid": "u", "generation": 3, "labels": {"a": "b"}},
                       "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let Value::Object(m) = v else { unreachable!() };
        let built = build(&info, &m, 0);
        let stored = built.storage_value().clone();
        let read = from_storage(&info, "d", "p", stored.clone(), 42).unwrap();
        assert_eq!(read.storage_value().as_ptr(), stored.as_ptr(), "canonical bytes are kept as they are");
        assert_eq!(read.json(), built.with_rv(42).json());
        assert_eq!((read.uid.as_str(), read.generation, read.key.as_str()), ("u", 3, "d/p"));
        assert_eq!(read.labels, vec![("a".to_string(), "b".to_string())]);
        assert!(read.fields.contains(&("spec.nodeName".into(), "n1".into())));
        assert!(read.fields.contains(&("status.phase".into(), "Running".into())));
        assert_eq!(read.spec_bytes(), built.spec_bytes());
        // kube-apiserver's own encoding of a custom resource: apiVersion first, a trailing
        // newline; and a stray resourceVersion.
        let foreign = Bytes::from_static(
            b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"resourceVersion\":\"1\",\"uid\":\"u\"},\"spec\":{\"nodeName\":\"n2\"}}\n",
        );
        let read = from_storage(&info, "d", "p", foreign, 7).unwrap();
        assert_eq!(
            String::from_utf8(read.json().to_vec()).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","uid":"u","resourceVersion":"7"},"spec":{"nodeName":"n2"}}"#
        );
        assert!(matches!(
            from_storage(&info, "d", "p", Bytes::from_static(b"{\"kind\":\"Node\"}"), 1),
            Err(ValueError::WrongKind { .. })
        ));
        assert!(matches!(
            from_storage(&info, "d", "p", Bytes::from_static(b"garbage"), 1),
            Err(ValueError::NotJson(_))
        ));
    }
}

//! The cached object: an immutable, shared, compact representation of one Kubernetes object.
//!
//! An [`Object<K>`] is a cheap handle (`Arc`) to the object's JSON as received from the API
//! server plus the few fields the cache, keys, indexes and label selectors need (namespace, name,
//! resourceVersion, uid, labels), parsed once when the object arrives. The typed value `K`
//! (a k8s-openapi type, `kube`'s `DynamicObject`, or `PartialObjectMeta<K>`) is decoded from
//! those bytes on first use with [`Object::get`] and then shared by every holder of the handle.
//!
//! Why: a k8s-openapi `Pod` decoded with serde_json holds ~34 KB of heap for ~4.4 KB of JSON; the
//! bytes plus parsed identity hold ~5 KB (see docs/design.md and the `object_memory` benchmark).
//! Handlers that only need keys, labels or resource versions (most of them: they enqueue a key)
//! never pay for a full decode, and nothing of the object is ever lost or dropped.
//!
//! Invariants: an `Object` never changes after construction; clones share the same allocation;
//! the name is never empty; `raw_json()` is exactly one well-formed JSON object. Decode failures
//! are returned as [`DecodeError`], never panics.

mod head;
mod scan;

pub(crate) use head::{CowStr, ObjectHead};
pub(crate) use scan::{ScanError, scan_list};

use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::key::{KeyError, ObjectKey};

/// An object could not be decoded or encoded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not a well-formed JSON object of the expected shape.
    #[error("invalid object JSON: {0}")]
    Json(Arc<str>),
    /// The object's identity is unusable.
    #[error("invalid object identity: {0}")]
    Key(#[from] KeyError),
    /// The object is of another kind than the cache holds.
    #[error("unexpected object kind {got:?}, expected {expected:?}")]
    WrongKind {
        /// The `apiVersion/kind` found.
        got: String,
        /// The `apiVersion/kind` expected.
        expected: String,
    },
}

impl From<serde_json::Error> for DecodeError {
    fn from(e: serde_json::Error) -> Self {
        DecodeError::Json(e.to_string().into())
    }
}

impl From<scan::ScanError> for DecodeError {
    fn from(e: scan::ScanError) -> Self {
        DecodeError::Json(e.to_string().into())
    }
}

/// A cached Kubernetes object: JSON bytes plus parsed identity, typed value decoded on demand.
///
/// ```
/// use informer::Object;
/// use k8s_openapi::api::core::v1::Pod;
/// let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"prod",
///     "resourceVersion":"7","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
/// let obj: Object<Pod> = Object::from_json(&json[..]).unwrap();
/// assert_eq!(obj.key().as_str(), "prod/web");
/// assert_eq!(obj.resource_version(), Some("7"));
/// assert_eq!(obj.label("app"), Some("web"));
/// let pod: &Pod = obj.get().unwrap(); // decoded once, then shared by every clone
/// assert_eq!(pod.spec.as_ref().unwrap().containers[0].name, "c");
/// ```
pub struct Object<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    key: ObjectKey,
    meta: MetaText,
    raw: Bytes,
    typed: OnceLock<Box<K>>,
}

/// resourceVersion, uid and labels packed in one string with end offsets.
/// Layout: [rv, uid, k1, v1, k2, v2, ...].
struct MetaText {
    text: Box<str>,
    ends: Box<[u32]>,
}

impl MetaText {
    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }
    fn label_count(&self) -> usize {
        (self.ends.len() - 2) / 2
    }
}

impl<K> Clone for Object<K> {
    fn clone(&self) -> Self {
        Object { inner: self.inner.clone() }
    }
}

impl<K> Object<K> {
    /// Builds an object from its JSON. Only the identity fields are parsed now.
    ///
    /// Fails when the JSON is malformed or `metadata.name` is missing.
    pub fn from_json(json: impl Into<Bytes>) -> Result<Self, DecodeError> {
        let raw: Bytes = json.into();
        let head = ObjectHead::parse(&raw)?;
        Self::from_head(&head, raw.clone())
    }

    /// Builds an object from an already parsed head and the bytes it was parsed from.
    pub(crate) fn from_head(head: &ObjectHead<'_>, raw: Bytes) -> Result<Self, DecodeError> {
        let meta = head.metadata.as_ref();
        let name = meta.and_then(|m| m.name.as_deref()).unwrap_or("");
        let ns = meta.and_then(|m| m.namespace.as_deref());
        let key = ObjectKey::new(ns, name)?;
        let rv = meta.and_then(|m| m.resource_version.as_deref()).unwrap_or("");
        let uid = meta.and_then(|m| m.uid.as_deref()).unwrap_or("");
        let labels = meta.and_then(|m| m.labels.as_ref()).map(|l| &l.0[..]).unwrap_or(&[]);
        let mut len = rv.len() + uid.len();
        for (k, v) in labels {
            len += k.len() + v.len();
        }
        let mut text = String::with_capacity(len);
        let mut ends = Vec::with_capacity(2 + labels.len() * 2);
        let mut push = |s: &str| {
            text.push_str(s);
            ends.push(text.len() as u32);
        };
        push(rv);
        push(uid);
        for (k, v) in labels {
            push(k);
            push(v);
        }
        Ok(Object {
            inner: Arc::new(Inner {
                key,
                meta: MetaText { text: text.into_boxed_str(), ends: ends.into_boxed_slice() },
                raw,
                typed: OnceLock::new(),
            }),
        })
    }

    /// The cache key (`namespace/name` or `name`).
    pub fn key(&self) -> &ObjectKey {
        &self.inner.key
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.inner.key.name()
    }

    /// `metadata.namespace`, `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.key.namespace()
    }

    /// `metadata.resourceVersion`, if set.
    pub fn resource_version(&self) -> Option<&str> {
        Some(self.inner.meta.part(0)).filter(|s| !s.is_empty())
    }

    /// `metadata.uid`, if set.
    pub fn uid(&self) -> Option<&str> {
        Some(self.inner.meta.part(1)).filter(|s| !s.is_empty())
    }

    /// The value of one label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// All labels, in the order the server sent them.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let m = &self.inner.meta;
        (0..m.label_count()).map(move |i| (m.part(2 + 2 * i), m.part(3 + 2 * i)))
    }

    /// The object's JSON exactly as received (or as encoded by [`Object::from_typed`]).
    pub fn raw_json(&self) -> &[u8] {
        &self.inner.raw
    }

    /// The object's JSON as shared bytes.
    pub fn raw_bytes(&self) -> Bytes {
        self.inner.raw.clone()
    }

    /// Whether both handles point at the same object allocation.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the typed value has been decoded and cached.
    pub fn is_decoded(&self) -> bool {
        self.inner.typed.get().is_some()
    }

    /// Reinterprets the same bytes as another type (for example a typed object as a
    /// `PartialObjectMeta`). The typed cache is not carried over.
    pub fn cast<T>(&self) -> Object<T> {
        let i = &self.inner;
        Object {
            inner: Arc::new(Inner {
                key: i.key.clone(),
                meta: MetaText { text: i.meta.text.clone(), ends: i.meta.ends.clone() },
                raw: i.raw.clone(),
                typed: OnceLock::new(),
            }),
        }
    }
}

impl<K: DeserializeOwned> Object<K> {
    /// The typed value, decoded on first call and shared by every clone of this handle.
    ///
    /// Decoding is fallible (the bytes may not fit `K`); a failure is returned every time it is
    /// attempted and nothing is cached.
    pub fn get(&self) -> Result<&K, DecodeError> {
        if let Some(k) = self.inner.typed.get() {
            return Ok(k);
        }
        let k: K = serde_json::from_slice(&self.inner.raw)?;
        Ok(self.inner.typed.get_or_init(|| Box::new(k)))
    }

    /// Decodes a fresh owned value without caching it (for callers that want to modify it, or
    /// that want to avoid keeping decoded values in memory).
    pub fn decode(&self) -> Result<K, DecodeError> {
        Ok(serde_json::from_slice(&self.inner.raw)?)
    }
}

impl<K: Serialize> Object<K> {
    /// Builds an object from a typed value (encodes it to JSON once; the value is kept as the
    /// decoded cache).
    pub fn from_typed(value: K) -> Result<Self, DecodeError> {
        let raw = Bytes::from(serde_json::to_vec(&value)?);
        let head = ObjectHead::parse(&raw)?;
        let obj = Self::from_head(&head, raw.clone())?;
        let _ = obj.inner.typed.set(Box::new(value));
        Ok(obj)
    }
}

impl<K> fmt::Debug for Object<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print object contents (they may hold secrets): identity only.
        f.debug_struct("Object")
            .field("key", &self.inner.key)
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

/// A deletion whose final state is unknown: the object was deleted while the watch was down and
/// the relist no longer contains it (client-go's `DeletedFinalStateUnknown`).
///
/// `last_known` is the last state the cache or queue held, if any.
pub struct Tombstone<K> {
    /// The key of the deleted object.
    pub key: ObjectKey,
    /// The last known state; may be stale.
    pub last_known: Option<Object<K>>,
}

impl<K> Clone for Tombstone<K> {
    fn clone(&self) -> Self {
        Tombstone { key: self.key.clone(), last_known: self.last_known.clone() }
    }
}

impl<K> fmt::Debug for Tombstone<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tombstone").field("key", &self.key).field("last_known", &self.last_known).finish()
    }
}

/// What a delete notification carries: the deleted object, or a [`Tombstone`] when the final
/// state is unknown. Handlers must match on it; a tombstone cannot be mistaken for an object.
pub enum DeletedObject<K> {
    /// The object's last state as the server reported it.
    Object(Object<K>),
    /// The object vanished during a relist; its final state is unknown.
    FinalStateUnknown(Tombstone<K>),
}

impl<K> DeletedObject<K> {
    /// The key of the deleted object.
    pub fn key(&self) -> &ObjectKey {
        match self {
            DeletedObject::Object(o) => o.key(),
            DeletedObject::FinalStateUnknown(t) => &t.key,
        }
    }

    /// The object, or the tombstone's last known state.
    pub fn object(&self) -> Option<&Object<K>> {
        match self {
            DeletedObject::Object(o) => Some(o),
            DeletedObject::FinalStateUnknown(t) => t.last_known.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, DeletedObject::FinalStateUnknown(_))
    }
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Object(o) => DeletedObject::Object(o.clone()),
            DeletedObject::FinalStateUnknown(t) => DeletedObject::FinalStateUnknown(t.clone()),
        }
    }
}

impl<K> fmt::Debug for DeletedObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeletedObject::Object(o) => f.debug_tuple("Object").field(o).finish(),
            DeletedObject::FinalStateUnknown(t) => f.debug_tuple("FinalStateUnknown").field(t).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    #[test]
    fn identity_fields_are_parsed_and_typed_value_is_lazy() {
        let o: Object<ConfigMap> = Object::from_json(
            &br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"5","labels":{"x":"1","y":"2"}},"data":{"k":"v"}}"#[..],
        )
        .unwrap();
        assert_eq!(o.key().as_str(), "n/a");
        assert_eq!(o.uid(), Some("u"));
        assert_eq!(o.labels().collect::<Vec<_>>(), vec![("x", "1"), ("y", "2")]);
        assert_eq!(o.label("y"), Some("2"));
        assert!(!o.is_decoded());
        let c2 = o.clone();
        assert_eq!(o.get().unwrap().data.as_ref().unwrap()["k"], "v");
        assert!(c2.is_decoded(), "clones share the decoded value");
        assert!(o.ptr_eq(&c2));
    }

    #[test]
    fn missing_name_and_bad_json_are_errors() {
        assert!(matches!(Object::<Pod>::from_json(&b"{\"metadata\":{}}"[..]), Err(DecodeError::Key(_))));
        assert!(matches!(Object::<Pod>::from_json(&b"{\"metadata\":"[..]), Err(DecodeError::Json(_))));
        assert!(Object::<Pod>::from_json(&b"nope"[..]).is_err());
    }

    #[test]
    fn decode_failure_is_an_error_not_a_panic() {
        // Valid head, but `spec` has the wrong shape for a Pod.
        let o: Object<Pod> = Object::from_json(&br#"{"metadata":{"name":"a"},"spec":{"containers":7}}"#[..]).unwrap();
        assert!(o.get().is_err());
        assert!(o.get().is_err(), "failure is not cached as success");
        assert!(!o.is_decoded());
    }

    #[test]
    fn from_typed_round_trips() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("x".into());
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.resource_version = Some("9".into());
        let o = Object::from_typed(cm).unwrap();
        assert!(o.is_decoded());
        assert_eq!(o.key().as_str(), "ns/x");
        assert_eq!(o.resource_version(), Some("9"));
        let again: ConfigMap = serde_json::from_slice(o.raw_json()).unwrap();
        assert_eq!(again.metadata.name.as_deref(), Some("x"));
    }

    #[test]
    fn debug_never_prints_contents() {
        let o: Object<ConfigMap> =
            Object::from_json(&br#"{"metadata":{"name":"s"},"data":{"password":"hunter2"}}"#[..]).unwrap();
        assert!(!format!("{o:?}").contains("hunter2"));
    }
}

#[cfg(test)]
mod kinds_tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::core::{DynamicObject, PartialObjectMeta};

    #[test]
    fn dynamic_objects_of_any_kind() {
        let o: Object<DynamicObject> = Object::from_json(
            &br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","resourceVersion":"3"},"spec":{"size":7}}"#[..],
        )
        .unwrap();
        assert_eq!(o.key().as_str(), "ns/w");
        let d = o.get().unwrap();
        assert_eq!(d.types.as_ref().unwrap().kind, "Widget");
        assert_eq!(d.data["spec"]["size"], 7);
    }

    #[test]
    fn metadata_only_objects() {
        let o: Object<PartialObjectMeta<Pod>> = Object::from_json(
            &br#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"p","namespace":"ns","resourceVersion":"9","labels":{"app":"x"}}}"#[..],
        )
        .unwrap();
        assert_eq!(o.label("app"), Some("x"));
        let m = o.get().unwrap();
        assert_eq!(m.metadata.name.as_deref(), Some("p"));
        // The same bytes can be viewed as another type.
        let raw: Object<serde_json::Value> = o.cast();
        assert_eq!(raw.get().unwrap()["kind"], "PartialObjectMetadata");
    }
}

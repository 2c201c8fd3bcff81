//! The cached object: an immutable, shared, compact representation of one Kubernetes object.
//!
//! An [`Object<K>`] is a cheap handle (one pointer, reference-counted) to the object's JSON as
//! received from the API server plus the few fields the cache, keys, indexes and label selectors
//! need (namespace, name, resourceVersion, uid, labels), parsed once when the object arrives and
//! kept in the same allocation as the JSON (the key and the shared fragments below are separate,
//! shared allocations; more than two fragments also move their list out of the header). The typed value `K`
//! (a k8s-openapi type, `kube`'s `DynamicObject`, or `PartialObjectMeta<K>`) is decoded from
//! those bytes on first use with [`Object::get`] and then shared by every holder of the handle.
//!
//! Why: a k8s-openapi `Pod` decoded with serde_json holds ~34 KB of heap for ~4.4 KB of JSON; the
//! bytes plus parsed identity hold ~5 KB (see docs/design.md and the `object_memory` benchmark).
//! Handlers that only need keys, labels or resource versions (most of them: they enqueue a key)
//! never pay for a full decode, and nothing of the object is ever lost or dropped.
//!
//! Typed decodes go through the typed decoder (`de`), a serde deserializer over the head
//! scanner's structural index, which gives exactly serde_json's result or hands the document to
//! serde_json.
//!
//! Large runs of bytes that many objects repeat (`managedFields[*].fieldsV1`) are not copied into
//! the object: it keeps a handle to one shared copy (see `fragment`) and the offset where it
//! goes. In the W1 pod that is 1,242 of its 4,509 bytes.
//!
//! Invariants: an `Object` never changes after construction; clones share the same allocation;
//! the name is never empty; [`Object::raw_json`] is exactly the JSON received (one well-formed
//! JSON object), shared fragments spliced back in. Decode failures are returned as
//! [`DecodeError`], never panics.

mod de;
mod fragment;
mod head;
mod scan;
mod substitute;

pub(crate) use head::{CowStr, ObjectHead};
pub(crate) use scan::{ListStream, ScanError};

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::mem::MaybeUninit;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use smallvec::SmallVec;
use triomphe::{HeaderWithLength, ThinArc, UniqueArc};

use fragment::Fragment;

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
/// use informer_object::Object;
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
    inner: ThinArc<Header<K>, u8>,
}

/// The fixed part of an object's single allocation. The allocation's byte slice holds, in order:
/// the stored JSON (`raw_len` bytes: the JSON received with the `splices` cut out), the identity
/// text (resourceVersion, uid, then each label's key and value, `text_len` bytes of UTF-8), and
/// one little-endian `u32` end offset (relative to the text) per text part (`parts` of them), then
/// zero padding up to the size class (see `padded`).
struct Header<K> {
    key: ObjectKey,
    raw_len: u32,
    text_len: u32,
    parts: u32,
    /// Shared fragments to splice into the stored JSON, by ascending offset.
    splices: SmallVec<[Splice; 2]>,
    typed: OnceLock<Box<K>>,
}

/// A shared fragment and the offset in the stored JSON where its bytes go.
#[derive(Clone)]
struct Splice {
    at: u32,
    /// The index of the `managedFields` entry whose `fieldsV1` the fragment is, or [`NO_ENTRY`]
    /// when the document's paths are not unique (the fragment is then never substituted).
    entry: u32,
    fragment: Fragment,
}

/// [`Splice::entry`] of a fragment that is not to be substituted.
const NO_ENTRY: u32 = u32::MAX;

impl<K> Clone for Object<K> {
    fn clone(&self) -> Self {
        Object { inner: self.inner.clone() }
    }
}

/// Identity text parts before the labels: resourceVersion and uid.
const FIXED_PARTS: usize = 2;

impl<K> Object<K> {
    /// Builds an object from its JSON (copied once into the object). Only the identity fields
    /// are parsed now.
    ///
    /// Fails when the JSON is malformed or `metadata.name` is missing.
    pub fn from_json(json: impl AsRef<[u8]>) -> Result<Self, DecodeError> {
        let raw = json.as_ref();
        let head = ObjectHead::parse(raw)?;
        Self::from_head(&head, raw)
    }

    /// Builds an object from an already parsed head and the bytes it was parsed from: one
    /// allocation holding the bytes (less the shared fragments), the identity text and the
    /// (empty) typed cache.
    pub(crate) fn from_head(head: &ObjectHead<'_>, raw: &[u8]) -> Result<Self, DecodeError> {
        let meta = head.metadata.as_ref();
        let name = meta.and_then(|m| m.name.as_deref()).unwrap_or("");
        let ns = meta.and_then(|m| m.namespace.as_deref());
        let key = ObjectKey::new(ns, name)?;
        let rv = meta.and_then(|m| m.resource_version.as_deref()).unwrap_or("");
        let uid = meta.and_then(|m| m.uid.as_deref()).unwrap_or("");
        let labels = meta.and_then(|m| m.labels.as_ref()).map(|l| &l.0[..]).unwrap_or(&[]);
        let parts = || [rv, uid].into_iter().chain(labels.iter().flat_map(|(k, v)| [k.as_ref(), v.as_ref()]));
        let text_len: usize = parts().map(str::len).sum();
        let n_parts = FIXED_PARTS + 2 * labels.len();
        let too_big = || DecodeError::Json("object larger than 4 GiB".into());
        u32::try_from(raw.len()).map_err(|_| too_big())?;
        // The spans to share, as (offset in `raw`, bytes); then where each goes once cut out.
        let (spans, ambiguous) = meta.map_or((&[][..], false), |m| (&m.fields_v1.spans[..], m.fields_v1.ambiguous));
        let cuts = shared_spans(spans, raw);
        let mut cut_len = 0;
        let mut splices = SmallVec::new();
        for &(start, entry, span) in &cuts {
            splices.push(Splice {
                // Fits: `start - cut_len` ≤ `raw.len()`, which fits in u32 (checked above).
                at: (start - cut_len) as u32,
                entry: if ambiguous { NO_ENTRY } else { entry },
                fragment: fragment::intern(span),
            });
            cut_len += span.len();
        }
        let stored_len = raw.len() - cut_len;
        let header = Header {
            key,
            // Fits: `stored_len` ≤ `raw.len()`.
            raw_len: stored_len as u32,
            text_len: u32::try_from(text_len).map_err(|_| too_big())?,
            parts: u32::try_from(n_parts).map_err(|_| too_big())?,
            splices,
            typed: OnceLock::new(),
        };
        let total = padded(stored_len + text_len + 4 * n_parts);
        // SAFETY: the closure splits the slice into the stored JSON (written in pieces: the runs of
        // the received JSON between the cut-out fragments, whose lengths add up to the stored
        // length), the text, the end offsets and the padding, whose lengths add up to `total`, and
        // writes every one of those bytes (`copy_into` is given equal lengths).
        #[allow(unsafe_code)]
        let inner = unsafe {
            fill(header, total, |buf| {
                let (mut json, rest) = buf.split_at_mut(stored_len);
                let mut from = 0;
                for &(start, _, span) in &cuts {
                    let (dst, more) = json.split_at_mut(start - from);
                    copy_into(dst, &raw[from..start]);
                    json = more;
                    from = start + span.len();
                }
                copy_into(json, &raw[from..]);
                let (mut text, mut ends) = rest.split_at_mut(text_len);
                let mut end = 0u32;
                for part in parts() {
                    let (dst, more) = text.split_at_mut(part.len());
                    copy_into(dst, part.as_bytes());
                    text = more;
                    // Fits: text_len fits in u32 (checked above).
                    end += part.len() as u32;
                    let (dst, more) = ends.split_at_mut(4);
                    copy_into(dst, &end.to_le_bytes());
                    ends = more;
                }
                for pad in ends {
                    pad.write(0);
                }
            })
        };
        Ok(Object { inner })
    }

    fn header(&self) -> &Header<K> {
        &self.inner.header.header
    }

    /// The `i`th identity text part (see [`Header`]).
    fn part(&self, i: usize) -> &str {
        let h = self.header();
        let data = &self.inner.slice;
        let text = &data[h.raw_len as usize..][..h.text_len as usize];
        let ends = &data[h.raw_len as usize + h.text_len as usize..];
        let end = |j: usize| ends[4 * j..].first_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b) as usize);
        let start = if i == 0 { 0 } else { end(i - 1) };
        // Every part was copied from a `&str` at its own boundaries, so this never fails.
        std::str::from_utf8(&text[start..end(i)]).unwrap_or_default()
    }

    /// The cache key (`namespace/name` or `name`).
    pub fn key(&self) -> &ObjectKey {
        &self.header().key
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.key().name()
    }

    /// `metadata.namespace`, `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        self.key().namespace()
    }

    /// `metadata.resourceVersion`, if set.
    pub fn resource_version(&self) -> Option<&str> {
        Some(self.part(0)).filter(|s| !s.is_empty())
    }

    /// `metadata.uid`, if set.
    pub fn uid(&self) -> Option<&str> {
        Some(self.part(1)).filter(|s| !s.is_empty())
    }

    /// The value of one label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// All labels, in the order the server sent them.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let n = (self.header().parts as usize - FIXED_PARTS) / 2;
        (0..n).map(move |i| (self.part(FIXED_PARTS + 2 * i), self.part(FIXED_PARTS + 1 + 2 * i)))
    }

    /// The stored JSON: what was received, less the shared fragments.
    fn stored_json(&self) -> &[u8] {
        &self.inner.slice[..self.header().raw_len as usize]
    }

    /// The object's JSON exactly as received (or as encoded by [`Object::from_typed`]). Borrowed
    /// when the object holds no shared fragments, else assembled (one copy).
    ///
    /// ```
    /// use informer_object::Object;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let fields = format!(r#"{{"f:data":{{"f:{}":{{}}}}}}"#, "k".repeat(80));
    /// let json = format!(
    ///     r#"{{"metadata":{{"name":"a","managedFields":[{{"manager":"m","fieldsV1":{fields}}}]}},"data":{{}}}}"#
    /// );
    /// let obj: Object<ConfigMap> = Object::from_json(&json).unwrap();
    /// assert_eq!(&obj.raw_json()[..], json.as_bytes());
    /// ```
    pub fn raw_json(&self) -> Cow<'_, [u8]> {
        if self.header().splices.is_empty() {
            return Cow::Borrowed(self.stored_json());
        }
        let mut out = Vec::with_capacity(self.json_len());
        self.write_json(&mut out);
        Cow::Owned(out)
    }

    /// The length of [`Object::raw_json`].
    pub fn json_len(&self) -> usize {
        let h = self.header();
        h.raw_len as usize + h.splices.iter().map(|s| s.fragment.bytes().len()).sum::<usize>()
    }

    /// Appends the object's JSON (as [`Object::raw_json`]) to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.write_json_with(out, |_| false);
    }

    /// Appends the object's JSON to `out`, with `null` in place of the shared fragments for which
    /// `placeholder(index)` holds.
    fn write_json_with(&self, out: &mut Vec<u8>, placeholder: impl Fn(usize) -> bool) {
        let stored = self.stored_json();
        let mut from = 0;
        for (i, s) in self.header().splices.iter().enumerate() {
            out.extend_from_slice(&stored[from..s.at as usize]);
            out.extend_from_slice(if placeholder(i) { b"null" } else { s.fragment.bytes() });
            from = s.at as usize;
        }
        out.extend_from_slice(&stored[from..]);
    }

    /// Runs `f` on the object's JSON (with `null` in place of the fragments for which
    /// `placeholder(index)` holds), assembled in a reused per-thread buffer when it holds shared
    /// fragments (a typed decode then allocates nothing for it). The buffer is kept for the
    /// thread's lifetime unless an object larger than 256 KiB grew it.
    fn with_json<R>(&self, placeholder: impl Fn(usize) -> bool, f: impl FnOnce(&[u8]) -> R) -> R {
        if self.header().splices.is_empty() {
            return f(self.stored_json());
        }
        thread_local! {
            static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut buf) => {
                buf.clear();
                self.write_json_with(&mut buf, placeholder);
                let r = f(&buf);
                if buf.capacity() > 256 << 10 {
                    // Do not keep a large object's buffer for the thread's lifetime.
                    *buf = Vec::new();
                }
                r
            }
            // Only if `f` decodes another object from inside a decode.
            Err(_) => {
                let mut buf = Vec::with_capacity(self.json_len());
                self.write_json_with(&mut buf, placeholder);
                f(&buf)
            }
        })
    }

    /// Runs `f` on the object's JSON with every `managedFields` entry's `fieldsV1` read as
    /// `null`: for reading a few fields (the metadata a handler routes by) without copying the
    /// object or decoding it whole — the JSON is assembled in a reused per-thread buffer when
    /// the object holds shared fragments, and borrowed as it is otherwise.
    pub fn with_json_without_field_sets<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        self.with_json(|_| true, f)
    }

    /// The object's JSON as shared bytes (no copy when the object holds no shared fragments:
    /// the bytes then keep the object alive).
    pub fn raw_bytes(&self) -> Bytes
    where
        K: Send + Sync + 'static,
    {
        if self.header().splices.is_empty() {
            Bytes::from_owner(RawJson(self.clone()))
        } else {
            Bytes::from(self.raw_json().into_owned())
        }
    }

    /// Whether both handles point at the same object allocation.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.inner.slice.as_ptr(), other.inner.slice.as_ptr())
    }

    /// How many shared fragments this object and `other` hold in common (tests).
    #[cfg(test)]
    pub(crate) fn fragments_shared_with(&self, other: &Self) -> usize {
        let theirs = &other.header().splices;
        self.header().splices.iter().filter(|s| theirs.iter().any(|t| t.fragment.ptr_eq(&s.fragment))).count()
    }

    /// Whether the typed value has been decoded and cached.
    pub fn is_decoded(&self) -> bool {
        self.header().typed.get().is_some()
    }

    /// Reinterprets the same bytes as another type (for example a typed object as a
    /// `PartialObjectMeta`). The bytes are copied; the typed cache is not carried over.
    pub fn cast<T>(&self) -> Object<T> {
        let h = self.header();
        let header = Header {
            key: h.key.clone(),
            raw_len: h.raw_len,
            text_len: h.text_len,
            parts: h.parts,
            splices: h.splices.clone(),
            typed: OnceLock::new(),
        };
        Object { inner: ThinArc::from_header_and_slice(header, &self.inner.slice) }
    }
}

/// Bytes the allocator and the shared header add to an object's data (approximately).
const ALLOC_OVERHEAD: usize = 64;
/// The smallest size class step, in bytes.
const MIN_CLASS_STEP: usize = 128;
/// Size classes per doubling of the allocation size (see [`padded`]).
const CLASSES_PER_DOUBLING: usize = 32;

/// The data length to allocate for `used` bytes. Allocations come in size classes: multiples of
/// a step that grows with the size (1/32 of the next power of two, at least 128 bytes: 128 for a
/// 2–4 KB pod, 1 KB for a 20 KB ConfigMap), so a class is at most ~6% wider than its objects and
/// every allocation is a multiple of 128 bytes. Each object also leaves a quarter of its step
/// free, room for a longer next version.
///
/// A new version of an object is allocated before the version it replaces is freed, and its
/// length differs by a few bytes (resourceVersion digits, timestamps, a counter) or by hundreds
/// (a status message set or cleared). In the same class it takes the hole its predecessor left;
/// in another, the holes of both are multiples of the same step, which the allocator coalesces
/// and splits without leaving slivers no object fits. Exact lengths instead make every hole a
/// few bytes too small for the next version: W1 under a million updates, with status messages of
/// 10–500 bytes coming and going, peaks at 1.48× its RSS after sync with exact lengths and at
/// 1.06–1.12× with these classes (docs/benchmarks.md). The cost is half a step plus the slack per
/// object on average, ~3% of a W1 pod.
fn padded(used: usize) -> usize {
    let want = used + ALLOC_OVERHEAD;
    let step = (want.next_power_of_two() / CLASSES_PER_DOUBLING).max(MIN_CLASS_STEP);
    (want + step / 4).div_ceil(step) * step - ALLOC_OVERHEAD
}

/// The spans of `candidates` (entry index and a slice of `raw`) worth sharing, as (offset in
/// `raw`, entry index, bytes), in ascending order and not overlapping. The scanner only hands out
/// slices of `raw`; anything else is ignored (and the bytes stay in the object).
fn shared_spans<'r>(candidates: &[(u32, &[u8])], raw: &'r [u8]) -> SmallVec<[(usize, u32, &'r [u8]); 2]> {
    let mut out = SmallVec::new();
    let mut end = 0;
    for &(entry, span) in candidates {
        let start = (span.as_ptr() as usize).wrapping_sub(raw.as_ptr() as usize);
        if span.len() >= fragment::MIN_SHARED && start >= end && start.saturating_add(span.len()) <= raw.len() {
            end = start + span.len();
            out.push((start, entry, &raw[start..end]));
        }
    }
    out
}

/// Allocates an object of `len` data bytes once and lets `write` fill every byte.
///
/// # Safety
///
/// `write` must initialize every byte of the slice it is given.
#[allow(unsafe_code)]
unsafe fn fill<K>(header: Header<K>, len: usize, write: impl FnOnce(&mut [MaybeUninit<u8>])) -> ThinArc<Header<K>, u8> {
    let mut arc = UniqueArc::from_header_and_uninit_slice(HeaderWithLength::new(header, len), len);
    write(&mut arc.slice);
    // SAFETY: `write` initialized every byte (the caller's contract).
    let arc = unsafe { arc.assume_init_slice_with_header() };
    triomphe::Arc::into_thin(arc.shareable())
}

/// Initializes `dst` from `src` (equal lengths; compiles to a `memcpy`).
fn copy_into(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(*s);
    }
}

/// Owner of the bytes handed out by [`Object::raw_bytes`] for an object without shared fragments
/// (its stored JSON is then all of it).
struct RawJson<K>(Object<K>);

impl<K> AsRef<[u8]> for RawJson<K> {
    fn as_ref(&self) -> &[u8] {
        self.0.stored_json()
    }
}

impl<K: DeserializeOwned> Object<K> {
    /// The typed value, decoded on first call and shared by every clone of this handle.
    ///
    /// Decoding is fallible (the bytes may not fit `K`); a failure is returned every time it is
    /// attempted and nothing is cached.
    pub fn get(&self) -> Result<&K, DecodeError> {
        let typed = &self.header().typed;
        if let Some(k) = typed.get() {
            return Ok(k);
        }
        let k: K = self.typed()?;
        Ok(typed.get_or_init(|| Box::new(k)))
    }

    /// Decodes a fresh owned value without caching it (for callers that want to modify it, or
    /// that want to avoid keeping decoded values in memory).
    pub fn decode(&self) -> Result<K, DecodeError> {
        self.typed()
    }

    /// The typed decode. `managedFields` field sets that many objects share are copied from
    /// their decoded value instead of parsed (see [`substitute`]); whatever that path cannot
    /// decode is decoded again from the whole JSON, which gives the result or the error.
    fn typed(&self) -> Result<K, DecodeError> {
        let splices = &self.header().splices;
        let decoded: SmallVec<[Option<&serde_json::Value>; 2]> =
            splices.iter().map(|s| if s.entry == NO_ENTRY { None } else { s.fragment.decoded() }).collect();
        if decoded.iter().any(Option::is_some) {
            let subs: SmallVec<[(u32, &serde_json::Value); 2]> =
                splices.iter().zip(&decoded).filter_map(|(s, v)| Some((s.entry, (*v)?))).collect();
            let fast = self.with_json(
                |i| decoded[i].is_some(),
                |doc| {
                    let doc = std::str::from_utf8(doc).ok()?;
                    de::decode(doc, |de| substitute::decode_with::<K, _>(de, &subs))
                        .ok()
                        .or_else(|| substitute::decode::<K>(doc, &subs).ok())
                },
            );
            if let Some(k) = fast {
                return Ok(k);
            }
        }
        self.with_json(|_| false, typed_from_json)
    }
}

/// Typed decode of a stored document: with the [typed decoder](de) when it reproduces
/// serde_json's result, else with serde_json. One UTF-8 check of the whole document (about
/// 0.1 µs for a 4 KB pod) lets both skip their check of every string. Invalid UTF-8 goes to
/// serde_json's byte decoder for its precise error.
fn typed_from_json<K: DeserializeOwned>(raw: &[u8]) -> Result<K, DecodeError> {
    Ok(match std::str::from_utf8(raw) {
        Ok(text) => match de::from_str(text) {
            Ok(k) => k,
            Err(de::Fallback) => serde_json::from_str(text)?,
        },
        Err(_) => serde_json::from_slice(raw)?,
    })
}

impl<K: Serialize> Object<K> {
    /// Builds an object from a typed value (encodes it to JSON once; the value is kept as the
    /// decoded cache).
    pub fn from_typed(value: K) -> Result<Self, DecodeError> {
        let raw = serde_json::to_vec(&value)?;
        let head = ObjectHead::parse(&raw)?;
        let obj = Self::from_head(&head, &raw)?;
        let _ = obj.header().typed.set(Box::new(value));
        Ok(obj)
    }
}

impl<K> fmt::Debug for Object<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print object contents (they may hold secrets): identity only.
        f.debug_struct("Object")
            .field("key", self.key())
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
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

    /// Allocations are whole classes of 128-byte multiples, at most 8% (or 160 bytes) above
    /// what the object uses, with room for a slightly longer next version; a W1 pod's class
    /// step is 128 bytes and a 20 KB object's 1 KB.
    #[test]
    fn allocations_come_in_size_classes_relative_to_the_size() {
        for used in (0..300_000).step_by(7) {
            let total = padded(used) + ALLOC_OVERHEAD;
            let want = used + ALLOC_OVERHEAD;
            let step = (want.next_power_of_two() / CLASSES_PER_DOUBLING).max(MIN_CLASS_STEP);
            assert_eq!(total % MIN_CLASS_STEP, 0, "{used}");
            assert_eq!(total % step, 0, "{used}");
            assert!(total >= want + step / 4, "{used}: room for growth");
            assert!(total < want + step + step / 4, "{used}: one class at most");
            assert!((total - want) as f64 <= 160.0_f64.max(want as f64 * 0.08), "{used}: {total}");
        }
        assert_eq!(padded(3300) + ALLOC_OVERHEAD, 3456);
        assert_eq!(padded(3400) + ALLOC_OVERHEAD, 3584);
        assert_eq!(padded(20_000) + ALLOC_OVERHEAD, 20_480);
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
    fn typed_decode_checks_utf8_once_and_still_rejects_bad_bytes() {
        // An escaped and a raw (two-byte UTF-8) non-ASCII value.
        let good = [&br#"{"metadata":{"name":"a"},"data":{"k":"gr\u00fc\u00dfe","l":""#[..], &[0xc3, 0xbc], br#""}}"#]
            .concat();
        let o = Object::<ConfigMap>::from_json(&good[..]).unwrap();
        let data = o.get().unwrap().data.clone().unwrap();
        assert_eq!(data["k"], "gr\u{fc}\u{df}e");
        assert_eq!(data["l"], "\u{fc}");
        assert_eq!(o.decode().unwrap().data, Some(data));

        // A stray 0xff inside a string value: the whole-document check fails and the byte
        // decoder reports it, from both the cached and the uncached path.
        let bad = b"{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"\xff\"}}";
        // The scanner reads only the identity fields, so the object is accepted.
        let o = Object::<ConfigMap>::from_json(&bad[..]).unwrap();
        assert!(matches!(o.get(), Err(DecodeError::Json(_))));
        assert!(matches!(o.decode(), Err(DecodeError::Json(_))));
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
        let again: ConfigMap = serde_json::from_slice(&o.raw_json()).unwrap();
        assert_eq!(again.metadata.name.as_deref(), Some("x"));
    }

    #[test]
    fn identity_text_survives_escapes_and_many_labels() {
        let mut labels: Vec<String> = (0..40).map(|i| format!(r#""k{i}":"v{i}""#)).collect();
        labels.push(r#""a\"b":"c\u00e9""#.to_string());
        let json = format!(
            r#"{{"metadata":{{"name":"n","resourceVersion":"12345","uid":"","labels":{{{}}}}}}}"#,
            labels.join(",")
        );
        let o: Object<ConfigMap> = Object::from_json(&json).unwrap();
        assert_eq!(o.raw_json(), json.as_bytes());
        assert_eq!(o.resource_version(), Some("12345"));
        assert_eq!(o.uid(), None);
        assert_eq!(o.labels().len(), 41);
        assert_eq!(o.label("k0"), Some("v0"));
        assert_eq!(o.label("k39"), Some("v39"));
        assert_eq!(o.label("a\"b"), Some("c\u{e9}"));
        assert_eq!(o.label("missing"), None);
        let no_labels: Object<ConfigMap> = Object::from_json(r#"{"metadata":{"name":"x"}}"#).unwrap();
        assert_eq!((no_labels.labels().len(), no_labels.resource_version()), (0, None));
    }

    #[test]
    fn raw_bytes_share_the_object_and_cast_keeps_identity() {
        let json = r#"{"metadata":{"name":"a","namespace":"n","resourceVersion":"3","labels":{"x":"1"}}}"#;
        let o: Object<ConfigMap> = Object::from_json(json).unwrap();
        let bytes = o.raw_bytes();
        let cast: Object<serde_json::Value> = o.cast();
        drop(o);
        assert_eq!(&bytes[..], json.as_bytes(), "the bytes outlive the handle they came from");
        assert_eq!((cast.key().as_str(), cast.resource_version(), cast.label("x")), ("n/a", Some("3"), Some("1")));
        assert_eq!(cast.raw_json(), json.as_bytes());
        assert!(!cast.is_decoded());
    }

    /// A pod with two managers' field sets (as the W1 pod): `name` and the `fieldsV1` values.
    fn pod_with_field_sets(name: &str, pretty: bool) -> String {
        let v = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "4", "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:ownerReferences": {}}}},
                {"manager": "tiny", "fieldsV1": {"f:x": {}}},
                {"manager": "kubelet", "operation": "Update", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}}}
            ]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        });
        if pretty { serde_json::to_string_pretty(&v).unwrap() } else { serde_json::to_string(&v).unwrap() }
    }

    #[test]
    fn field_sets_are_shared_between_objects_and_the_json_is_exact() {
        for pretty in [false, true] {
            let (ja, jb) = (pod_with_field_sets("a", pretty), pod_with_field_sets("b", pretty));
            let a: Object<Pod> = Object::from_json(&ja).unwrap();
            let b: Object<Pod> = Object::from_json(&jb).unwrap();
            // Two large field sets are shared; the tiny one stays in the object.
            assert_eq!(a.header().splices.len(), 2);
            for (sa, sb) in a.header().splices.iter().zip(&b.header().splices) {
                assert!(sa.fragment.ptr_eq(&sb.fragment), "equal field sets are stored once");
            }
            assert!(a.stored_json().len() < ja.len());
            assert_eq!(&a.raw_json()[..], ja.as_bytes());
            assert_eq!(a.json_len(), ja.len());
            assert_eq!(&a.raw_bytes()[..], ja.as_bytes());
            assert_eq!(&a.cast::<serde_json::Value>().raw_json()[..], ja.as_bytes());
            let mut out = b"[".to_vec();
            b.write_json(&mut out);
            assert_eq!(&out[1..], jb.as_bytes());
            let pod = a.get().unwrap();
            let managed = pod.metadata.managed_fields.as_ref().unwrap();
            assert_eq!(managed.len(), 3);
            assert_eq!(
                managed[2].fields_v1.as_ref().unwrap().0["f:status"]["f:conditions"]["k:{\"type\":\"Ready\"}"]["f:status"],
                serde_json::json!({})
            );
            assert_eq!(a.decode().unwrap(), *pod);
            assert_eq!((a.key().as_str(), b.key().as_str()), ("ns/a", "ns/b"));
        }
    }

    #[test]
    fn a_field_set_held_elsewhere_is_found_again_after_its_object_is_dropped() {
        let json = pod_with_field_sets("c", false);
        let a: Object<Pod> = Object::from_json(&json).unwrap();
        let kept = a.header().splices[0].fragment.clone();
        drop(a);
        let b: Object<Pod> = Object::from_json(&json).unwrap();
        assert!(b.header().splices[0].fragment.ptr_eq(&kept), "a live fragment is found again");
        assert_eq!(&b.raw_json()[..], json.as_bytes());
    }

    proptest::proptest! {
        /// Whatever the managers' field sets (large or small, objects or not, shared or not,
        /// compact or pretty, with members around them), the JSON read back is the JSON received.
        #[test]
        fn json_reads_back_exactly(
            sets in proptest::collection::vec(
                (0usize..4, 0usize..200, proptest::bool::ANY, "[a-z\\\\\"\u{e9}]{0,12}"), 0..5),
            pretty in proptest::bool::ANY,
        ) {
            let entries: Vec<serde_json::Value> = sets
                .iter()
                .map(|(kind, width, before, text)| {
                    let set = match kind {
                        0 => serde_json::json!({"f:spec": {"f:x": {}}, "f:pad": "p".repeat(*width), "t": text}),
                        1 => serde_json::json!({"f:shared": "s".repeat(100)}),
                        2 => serde_json::json!(text),
                        _ => serde_json::json!([width, text]),
                    };
                    if *before {
                        serde_json::json!({"a": text, "fieldsV1": set})
                    } else {
                        serde_json::json!({"fieldsV1": set, "z": text})
                    }
                })
                .collect();
            let v = serde_json::json!({"metadata": {"name": "p", "managedFields": entries, "uid": "u"}, "spec": {}});
            let json = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
            let o: Object<serde_json::Value> = Object::from_json(&json).unwrap();
            proptest::prop_assert_eq!(&o.raw_json()[..], &json[..]);
            proptest::prop_assert_eq!(o.json_len(), json.len());
            proptest::prop_assert_eq!(&o.raw_bytes()[..], &json[..]);
            let mut out = Vec::new();
            o.write_json(&mut out);
            proptest::prop_assert_eq!(&out[..], &json[..]);
            proptest::prop_assert_eq!(o.get().unwrap(), &v);
            proptest::prop_assert_eq!((o.name(), o.uid()), ("p", Some("u")));
        }
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

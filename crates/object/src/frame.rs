//! Framing of the API server's watch and list bodies, straight from bytes to [`Object`]s.
//!
//! Watch framing: the API server writes one `{"type":..,"object":..}` JSON document per event,
//! each followed by `\n` (Go's `json.Encoder`). [`WatchFramer`] accumulates chunks, cuts at
//! newlines (raw newlines cannot occur inside JSON strings), and when a cut does not hold a whole
//! document (a pretty-printing server) keeps accumulating up to the next newline. Each document is
//! parsed in one pass on the common key order (`type` then `object`): the object's identity fields
//! are read while the rest is validated and skipped, and the object's bytes are copied into their
//! own allocation (never pinning the network buffer). No intermediate JSON tree is built.
//!
//! List framing: [`ListFramer`] turns the items of a LIST body into objects as their bytes
//! arrive, so a page is never held whole.
//!
//! Invariants: a corrupt document, a truncated stream or an event larger than its limit is a
//! clear [`FrameError`], never a panic and never a silently skipped change; the watch buffer never
//! grows beyond the limit plus one read chunk. Events of another kind than expected are the only
//! ones set apart ([`WatchFrame::WrongKind`]), for the caller to count and log.

use std::borrow::Cow;
use std::marker::PhantomData;

use bytes::{Buf, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::object::{CowStr, DecodeError, ListStream, Object, ObjectHead, ScanError};

/// The default limit for one watch event (16 MiB; etcd's own object limit is 1.5 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 << 20;

/// The `apiVersion` and `kind` a framer expects (objects of another kind are set apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMeta {
    /// `apiVersion`, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `Pod`.
    pub kind: String,
}

/// A body could not be framed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FrameError {
    /// A watch event larger than the limit.
    #[error("watch event larger than {limit} bytes")]
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Malformed, truncated or unexpected content.
    #[error("{0}")]
    Invalid(String),
    /// An object's identity is unusable (no name, say).
    #[error(transparent)]
    Object(#[from] DecodeError),
    /// The list body is a `Status` (its JSON), not a list.
    #[error("the body is a Status")]
    Status(Vec<u8>),
}

/// One watch document.
#[derive(Debug)]
pub enum WatchFrame<K> {
    /// ADDED.
    Added(Object<K>),
    /// MODIFIED.
    Modified(Object<K>),
    /// DELETED (the object's last state).
    Deleted(Object<K>),
    /// BOOKMARK: a resourceVersion, and whether it ends a streaming list's initial events
    /// (annotation `k8s.io/initial-events-end: "true"`).
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
        /// Whether it ends the initial events of a streaming list.
        initial_events_end: bool,
    },
    /// ERROR: the event's object, a `Status`, as JSON.
    Error(Vec<u8>),
    /// An object of another kind than expected (client-go drops these with a log line).
    WrongKind(TypeMeta),
}

/// Incremental framer of a watch stream.
pub struct WatchFramer<K> {
    buf: BytesMut,
    /// Bytes at the start of `buf` already known to contain no complete document.
    scanned: usize,
    max_event_bytes: usize,
    expected: Option<TypeMeta>,
    _k: PhantomData<fn() -> K>,
}

impl<K> WatchFramer<K> {
    /// A framer with a size limit per event and an optional expected type.
    pub fn new(max_event_bytes: usize, expected: Option<TypeMeta>) -> Self {
        WatchFramer { buf: BytesMut::with_capacity(64 << 10), scanned: 0, max_event_bytes, expected, _k: PhantomData }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes buffered and not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Frames the next complete document, if one is buffered. After an error the framer is
    /// unusable (the stream must be abandoned).
    pub fn next_frame(&mut self) -> Option<Result<WatchFrame<K>, FrameError>> {
        loop {
            // Skip leading whitespace between documents.
            let ws = self.buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if ws > 0 {
                self.buf.advance(ws);
                self.scanned = self.scanned.saturating_sub(ws);
            }
            if self.buf.is_empty() {
                return None;
            }
            let Some(nl) = memchr::memchr(b'\n', &self.buf[self.scanned..]).map(|i| i + self.scanned) else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_event_bytes {
                    return Some(Err(FrameError::EventTooLarge { limit: self.max_event_bytes }));
                }
                return None;
            };
            if nl > self.max_event_bytes {
                return Some(Err(FrameError::EventTooLarge { limit: self.max_event_bytes }));
            }
            match frame_event::<K>(&self.buf[..nl], self.expected.as_ref()) {
                Ok(ev) => {
                    self.buf.advance(nl + 1);
                    self.scanned = 0;
                    return Some(Ok(ev));
                }
                Err(DocError::Incomplete) => {
                    // A document spanning lines: look for the next newline.
                    self.scanned = nl + 1;
                    continue;
                }
                Err(DocError::Invalid(e)) => return Some(Err(e)),
            }
        }
    }

    /// Called at the end of the stream: decodes a final document without a trailing newline, or
    /// reports a truncated one.
    pub fn finish(&mut self) -> Option<Result<WatchFrame<K>, FrameError>> {
        let rest = {
            let s = &self.buf[..];
            let start = s.iter().position(|b| !b.is_ascii_whitespace())?;
            &s[start..]
        };
        let r = match frame_event::<K>(rest, self.expected.as_ref()) {
            Ok(ev) => Ok(ev),
            Err(DocError::Incomplete) => {
                Err(FrameError::Invalid(format!("watch stream ended inside an event ({} bytes buffered)", rest.len())))
            }
            Err(DocError::Invalid(e)) => Err(e),
        };
        self.buf.clear();
        self.scanned = 0;
        Some(r)
    }
}

enum DocError {
    /// The bytes end before the document does.
    Incomplete,
    Invalid(FrameError),
}

fn json_err(what: &str, e: serde_json::Error) -> DocError {
    if e.is_eof() { DocError::Incomplete } else { DocError::Invalid(FrameError::Invalid(format!("{what}: {e}"))) }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    ty: CowStr<'a>,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Splits `{"type":"T","object":OBJ}` into (T, OBJ) without parsing OBJ, if it has that exact
/// layout (as kube-apiserver writes it).
fn fast_split(doc: &[u8]) -> Option<(&str, &[u8])> {
    let rest = doc.strip_prefix(b"{\"type\":\"")?;
    let q = memchr::memchr(b'"', rest)?;
    let ty = std::str::from_utf8(&rest[..q]).ok()?;
    if ty.contains('\\') {
        return None;
    }
    let rest = rest[q + 1..].strip_prefix(b",\"object\":")?;
    let end = rest.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if rest[end] != b'}' {
        return None;
    }
    Some((ty, &rest[..end]))
}

fn frame_event<K>(doc: &[u8], expected: Option<&TypeMeta>) -> Result<WatchFrame<K>, DocError> {
    let (ty, obj): (Cow<'_, str>, &[u8]) = match fast_split(doc) {
        Some((ty, obj)) => (Cow::Borrowed(ty), obj),
        None => {
            let raw: RawEvent<'_> = serde_json::from_slice(doc).map_err(|e| json_err("invalid watch event", e))?;
            (raw.ty.0, raw.object.get().as_bytes())
        }
    };
    if ty == "ERROR" {
        // Checked whole here (a pretty-printed Status may span lines); read by the caller.
        let _: &RawValue = serde_json::from_slice(obj).map_err(|e| json_err("invalid watch ERROR status", e))?;
        return Ok(WatchFrame::Error(obj.to_vec()));
    }
    // Only bookmarks need the annotations (`k8s.io/initial-events-end`).
    let head = if ty == "BOOKMARK" { ObjectHead::parse_with_annotations(obj) } else { ObjectHead::parse(obj) };
    let head = head.map_err(|e| {
        if e.eof {
            DocError::Incomplete
        } else {
            DocError::Invalid(FrameError::Invalid(format!("invalid watch event object: {e}")))
        }
    })?;
    if let (Some(exp), Some(kind)) = (expected, head.kind.as_deref()) {
        let api_version = head.api_version.as_deref().unwrap_or("");
        if kind != exp.kind || api_version != exp.api_version {
            return Ok(WatchFrame::WrongKind(TypeMeta {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            }));
        }
    }
    let frame = match &*ty {
        "BOOKMARK" => {
            let meta = head.metadata.as_ref();
            let resource_version = meta.and_then(|m| m.resource_version.as_deref()).unwrap_or("").to_string();
            let initial_events_end = meta
                .and_then(|m| m.annotations.as_ref())
                .is_some_and(|a| a.0.iter().any(|(k, v)| k == "k8s.io/initial-events-end" && v == "true"));
            WatchFrame::Bookmark { resource_version, initial_events_end }
        }
        "ADDED" | "MODIFIED" | "DELETED" => {
            let o = Object::from_head(&head, obj).map_err(|e| DocError::Invalid(FrameError::Object(e)))?;
            match &*ty {
                "ADDED" => WatchFrame::Added(o),
                "MODIFIED" => WatchFrame::Modified(o),
                _ => WatchFrame::Deleted(o),
            }
        }
        other => {
            return Err(DocError::Invalid(FrameError::Invalid(format!("unknown watch event type {other:?}"))));
        }
    };
    Ok(frame)
}

/// Frames a whole LIST response body (see [`ListFramer`]).
pub fn frame_list<K>(body: &[u8]) -> Result<ListBody<K>, FrameError> {
    let mut d = ListFramer::new(usize::MAX);
    d.feed(body)?;
    d.finish()
}

/// A LIST response body.
#[derive(Debug)]
pub struct ListBody<K> {
    /// The items, in the body's order.
    pub items: Vec<Object<K>>,
    /// `metadata.resourceVersion` ("" when absent).
    pub resource_version: String,
    /// `metadata.continue`, when present and not empty.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`.
    pub remaining_item_count: Option<i64>,
}

/// Incremental framer of a LIST response body: items become [`Object`]s (each copied into its
/// own allocation) as soon as their bytes have arrived, so a page is never held in memory whole;
/// only an item cut by a chunk boundary is carried over to the next chunk.
///
/// Invariants: an item larger than `max_item_bytes` is an error however the body is framed, and
/// so are the list's other members together past that size; the carried bytes stay under that
/// limit plus one chunk. An incomplete item is rescanned only once the carried bytes have
/// doubled, so an item arriving in many small chunks costs linear, not quadratic, scanning. A
/// body that ends early, corrupt JSON, a `Table` or a `Status` are errors, never a partial list;
/// after an error every further call fails.
pub struct ListFramer<K> {
    stream: ListStream,
    carry: Vec<u8>,
    /// `carry` is not rescanned before it holds this many bytes.
    rescan_at: usize,
    items: Vec<Object<K>>,
    max_item_bytes: usize,
    failed: bool,
}

impl<K> ListFramer<K> {
    /// A framer refusing list items larger than `max_item_bytes`.
    pub fn new(max_item_bytes: usize) -> Self {
        ListFramer {
            stream: Default::default(),
            carry: Vec::new(),
            rescan_at: 0,
            items: Vec::new(),
            max_item_bytes,
            failed: false,
        }
    }

    /// Takes the next chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), FrameError> {
        if self.failed {
            return Err(already_failed());
        }
        let r = self.feed_inner(chunk);
        self.failed = r.is_err();
        r
    }

    fn feed_inner(&mut self, chunk: &[u8]) -> Result<(), FrameError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.carry.is_empty() {
            let n = self.take_from(chunk)?;
            self.carry.extend_from_slice(&chunk[n..]);
            self.rescan_at = 2 * self.carry.len();
        } else {
            self.carry.extend_from_slice(chunk);
            if self.carry.len() < self.rescan_at && self.carry.len() <= self.max_item_bytes {
                return Ok(());
            }
            self.rescan()?;
        }
        if self.carry.len() > self.max_item_bytes {
            return Err(too_large(self.max_item_bytes));
        }
        Ok(())
    }

    /// Scans the carried bytes again (after they doubled, or at the end of the body).
    fn rescan(&mut self) -> Result<(), FrameError> {
        let carry = std::mem::take(&mut self.carry);
        let r = self.take_from(&carry);
        self.carry = carry;
        let n = r?;
        self.carry.drain(..n);
        if self.carry.is_empty() && self.carry.capacity() > 1 << 20 {
            // A large item went through: do not keep its buffer for the rest of the list.
            self.carry = Vec::new();
        }
        self.rescan_at = 2 * self.carry.len();
        Ok(())
    }

    fn take_from(&mut self, b: &[u8]) -> Result<usize, FrameError> {
        let (items, max) = (&mut self.items, self.max_item_bytes);
        let n = self
            .stream
            .feed(b, |head, bytes| -> Result<(), ListErr> {
                if bytes.len() > max {
                    return Err(ListErr::TooLarge(max));
                }
                items.push(Object::from_head(head, bytes).map_err(ListErr::Object)?);
                Ok(())
            })
            .map_err(ListErr::into_error)?;
        if self.stream.rest().len() > max {
            return Err(too_large(max));
        }
        Ok(n)
    }

    /// The list, once the body has ended.
    pub fn finish(mut self) -> Result<ListBody<K>, FrameError> {
        if self.failed {
            return Err(already_failed());
        }
        if !self.carry.is_empty() {
            self.rescan()?;
        }
        let list = self.stream.finish(&self.carry).map_err(|e| ListErr::Scan(e).into_error())?;
        if let Some(kind) = list.kind.as_deref() {
            if kind == "Table" {
                return Err(FrameError::Invalid("unsupported list kind Table".to_string()));
            }
            if kind == "Status" {
                return Err(FrameError::Status(self.stream.rest().to_vec()));
            }
        }
        Ok(ListBody {
            resource_version: list.resource_version.as_deref().unwrap_or("").to_string(),
            continue_token: list.continue_token.as_deref().filter(|c| !c.is_empty()).map(str::to_string),
            remaining_item_count: list.remaining_item_count,
            items: self.items,
        })
    }
}

enum ListErr {
    Scan(ScanError),
    Object(DecodeError),
    TooLarge(usize),
}

fn too_large(max: usize) -> FrameError {
    FrameError::Invalid(format!("list item larger than {max} bytes"))
}

fn already_failed() -> FrameError {
    FrameError::Invalid("list body already failed to decode".to_string())
}

impl ListErr {
    fn into_error(self) -> FrameError {
        match self {
            ListErr::Scan(e) => FrameError::Invalid(format!("invalid list response: {e}")),
            ListErr::Object(e) => FrameError::Object(e),
            ListErr::TooLarge(max) => too_large(max),
        }
    }
}

impl From<ScanError> for ListErr {
    fn from(e: ScanError) -> Self {
        ListErr::Scan(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn pod_line(ty: &str, name: &str, rv: u32) -> String {
        format!(
            "{{\"type\":\"{ty}\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"ns\",\"resourceVersion\":\"{rv}\"}},\"spec\":{{}}}}}}\n"
        )
    }

    fn events(d: &mut WatchFramer<Pod>) -> Vec<WatchFrame<Pod>> {
        let mut out = vec![];
        while let Some(r) = d.next_frame() {
            match r.unwrap() {
                WatchFrame::WrongKind(got) => panic!("wrong kind {got:?}"),
                f => out.push(f),
            }
        }
        out
    }

    fn resource_version<K>(f: &WatchFrame<K>) -> Option<&str> {
        match f {
            WatchFrame::Added(o) | WatchFrame::Modified(o) | WatchFrame::Deleted(o) => o.resource_version(),
            WatchFrame::Bookmark { resource_version, .. } => Some(resource_version),
            WatchFrame::Error(_) | WatchFrame::WrongKind(_) => None,
        }
    }

    #[test]
    fn decodes_events_split_at_any_byte() {
        let stream =
            format!("{}{}{}", pod_line("ADDED", "a", 1), pod_line("MODIFIED", "a", 2), pod_line("DELETED", "a", 3));
        for split in 0..stream.len() {
            let mut d = WatchFramer::<Pod>::new(1 << 20, None);
            d.push(&stream.as_bytes()[..split]);
            let mut evs = events(&mut d);
            d.push(&stream.as_bytes()[split..]);
            evs.extend(events(&mut d));
            assert!(d.finish().is_none());
            let rvs: Vec<_> = evs.iter().map(|e| resource_version(e).unwrap().to_string()).collect();
            assert_eq!(rvs, ["1", "2", "3"], "split at {split}");
            assert!(matches!(evs[2], WatchFrame::Deleted(_)));
        }
    }

    /// Pods as a real kube-apiserver (v1.35) sent them, as a streaming list's initial events and
    /// as a list page: each reads back byte for byte, its managedFields' field set (the same for
    /// the five pods) stored once, and decodes as serde_json decodes the original.
    #[test]
    fn captured_apiserver_pods_read_back_exactly() {
        use serde_json::value::RawValue;
        #[derive(serde::Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            object: &'a RawValue,
        }
        #[derive(serde::Deserialize)]
        struct Items<'a> {
            #[serde(borrow)]
            items: Vec<&'a RawValue>,
        }
        let stream = include_bytes!("testdata/kube-apiserver-1.35-watch-initial-events.jsonl");
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(stream);
        let evs = events(&mut d);
        let lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        assert_eq!(evs.len(), lines.len());
        let mut pods = Vec::new();
        for (ev, line) in evs.iter().zip(lines) {
            if let WatchFrame::Added(o) = ev {
                let original = serde_json::from_slice::<Line>(line).unwrap().object.get();
                assert_eq!(&o.raw_json()[..], original.as_bytes());
                assert_eq!(o.decode().unwrap(), serde_json::from_str::<Pod>(original).unwrap());
                pods.push(o.clone());
            }
        }
        assert_eq!(pods.len(), 5);
        assert!(pods.iter().all(|p| p.fragments_shared_with(&pods[0]) == 1), "one field set, stored once");

        let body = include_bytes!("testdata/kube-apiserver-1.35-pods-list-page.json");
        let list = frame_list::<Pod>(body).unwrap();
        let items = serde_json::from_slice::<Items>(body).unwrap().items;
        assert_eq!(list.items.len(), items.len());
        for (o, original) in list.items.iter().zip(items) {
            assert_eq!(&o.raw_json()[..], original.get().as_bytes(), "pretty-printed, as served");
            assert_eq!(o.get().unwrap(), &serde_json::from_str::<Pod>(original.get()).unwrap());
        }
        assert_eq!(list.items[0].fragments_shared_with(&list.items[1]), 1);
    }

    #[test]
    fn other_key_order_and_pretty_printing() {
        let doc = "{\n  \"object\": {\"metadata\": {\"name\": \"x\", \"resourceVersion\": \"9\"}},\n  \"type\": \"ADDED\"\n}\n";
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(doc.as_bytes());
        let evs = events(&mut d);
        assert_eq!(evs.len(), 1);
        assert_eq!(resource_version(&evs[0]), Some("9"));
    }

    #[test]
    fn bookmarks_and_errors() {
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}
"#);
        let evs = events(&mut d);
        assert!(
            matches!(&evs[0], WatchFrame::Bookmark { resource_version, initial_events_end: true } if resource_version == "12")
        );
        match &evs[1] {
            WatchFrame::Error(s) => {
                let status: serde_json::Value = serde_json::from_slice(s).unwrap();
                assert_eq!((status["code"].as_u64(), status["reason"].as_str()), (Some(410), Some("Expired")));
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn corrupt_truncated_oversized_and_wrong_kind() {
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":1}}}\n");
        assert!(matches!(d.next_frame(), Some(Err(FrameError::Invalid(_)))));

        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\"");
        assert!(d.next_frame().is_none());
        assert!(matches!(d.finish(), Some(Err(FrameError::Invalid(m))) if m.contains("ended inside")));

        let mut d = WatchFramer::<Pod>::new(64, None);
        d.push(&[b' '; 10]);
        d.push(&[b'{'; 100]);
        assert!(matches!(d.next_frame(), Some(Err(FrameError::EventTooLarge { limit: 64 }))));

        let mut d = WatchFramer::<Pod>::new(1 << 20, Some(TypeMeta { api_version: "v1".into(), kind: "Pod".into() }));
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n\"}}}\n");
        assert!(matches!(d.next_frame(), Some(Ok(WatchFrame::WrongKind(TypeMeta { kind, .. }))) if kind == "Node"));

        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(b"{\"type\":\"WHAT\",\"object\":{\"metadata\":{\"name\":\"n\"}}}\n");
        assert!(matches!(d.next_frame(), Some(Err(FrameError::Invalid(m))) if m.contains("unknown watch event type")));
    }

    #[test]
    fn list_decoding() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"abc","remainingItemCount":3},
            "items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"4"}},{"metadata":{"name":"b","namespace":"n","resourceVersion":"7"}}]}"#;
        let l = frame_list::<Pod>(body).unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.resource_version, "10");
        assert_eq!(l.continue_token.as_deref(), Some("abc"));
        assert_eq!(l.remaining_item_count, Some(3));
        assert!(frame_list::<Pod>(b"{\"items\":[{\"metadata\":{}}]}").is_err());
        assert!(frame_list::<Pod>(b"<html>").is_err());
    }

    /// What a list decodes to, for comparisons: (names with their bytes, rv, continue, remaining).
    type Summary = (Vec<(String, String)>, String, Option<String>, Option<i64>);

    fn summary(l: ListBody<serde_json::Value>) -> Summary {
        let items = l.items.iter().map(|o| (o.name().to_string(), String::from_utf8(o.raw_json().to_vec()).unwrap()));
        (items.collect(), l.resource_version, l.continue_token, l.remaining_item_count)
    }

    fn in_chunks(body: &[u8], cuts: &[usize]) -> Result<ListBody<serde_json::Value>, FrameError> {
        let mut d = ListFramer::new(1 << 20);
        let mut from = 0;
        for &c in cuts.iter().chain([&body.len()]) {
            let c = c.clamp(from, body.len());
            d.feed(&body[from..c])?;
            from = c;
        }
        d.finish()
    }

    const LIST: &[u8] = br#" { "kind" : "PodList","apiVersion":"v1","items" : [ {"metadata":{"name":"a","namespace":"n","resourceVersion":"4"},"spec":{"s":"x,}]\"y"}} ,
        {"metadata":{"name":"b","namespace":"n"},"n":[1,2.5e3,null,true]} ], "metadata":{"resourceVersion":"10","continue":"c\u0041","remainingItemCount":12345} } "#;

    #[test]
    fn list_bodies_decode_alike_at_every_chunk_boundary() {
        let whole = summary(frame_list(LIST).unwrap());
        assert_eq!(whole.0.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(whole.0[1].1, r#"{"metadata":{"name":"b","namespace":"n"},"n":[1,2.5e3,null,true]}"#);
        assert_eq!((whole.1.as_str(), whole.2.as_deref(), whole.3), ("10", Some("cA"), Some(12345)));
        for a in 0..LIST.len() {
            assert_eq!(summary(in_chunks(LIST, &[a]).unwrap()), whole, "cut at {a}");
        }
        let bytes: Vec<usize> = (1..LIST.len()).collect();
        assert_eq!(summary(in_chunks(LIST, &bytes).unwrap()), whole, "one byte at a time");
    }

    #[test]
    fn list_bodies_that_end_early_or_run_on_are_errors() {
        for end in 0..LIST.len() - 1 {
            if !LIST[end..].iter().all(u8::is_ascii_whitespace) {
                assert!(in_chunks(&LIST[..end], &[end / 2]).is_err(), "truncated at {end} accepted");
            }
        }
        let mut more = LIST.to_vec();
        more.extend_from_slice(b" {}");
        assert!(matches!(in_chunks(&more, &[LIST.len()]), Err(FrameError::Invalid(m)) if m.contains("trailing")));
        assert!(
            matches!(frame_list::<Pod>(br#"{"items":{}}"#), Err(FrameError::Invalid(m)) if m.contains("array of items"))
        );
        assert!(matches!(
            frame_list::<Pod>(br#"{"items":[{"metadata":{"name":"a"}} {}]}"#),
            Err(FrameError::Invalid(_))
        ));
        let l = frame_list::<Pod>(br#"{"items":null,"metadata":{"resourceVersion":"3"}}"#).unwrap();
        assert_eq!((l.items.len(), l.resource_version.as_str()), (0, "3"));
    }

    #[test]
    fn list_items_over_the_limit_and_status_bodies_are_errors() {
        let big = format!(r#"{{"items":[{{"metadata":{{"name":"a"}},"data":"{}"}}]}}"#, "x".repeat(5000));
        let mut d = ListFramer::<Pod>::new(4096);
        let r = big.as_bytes().chunks(1000).try_for_each(|c| d.feed(c));
        assert!(matches!(r, Err(FrameError::Invalid(m)) if m.contains("larger than 4096")));
        // In one chunk (never carried): the same error, whatever the framing.
        let mut d = ListFramer::<Pod>::new(4096);
        assert!(matches!(d.feed(big.as_bytes()), Err(FrameError::Invalid(m)) if m.contains("larger than 4096")));
        assert!(d.feed(b"]}").is_err(), "a failed decoder stays failed");
        // Under the limit it goes through, cut or not.
        let mut d = ListFramer::<Pod>::new(8192);
        big.as_bytes().chunks(1000).try_for_each(|c| d.feed(c)).unwrap();
        assert_eq!(d.finish().unwrap().items.len(), 1);
        // Oversized list members other than items (a Table's rows, say) are refused too.
        let wide = format!(r#"{{"rows":["{}"],"items":[]}}"#, "x".repeat(5000));
        let mut d = ListFramer::<Pod>::new(4096);
        assert!(matches!(d.feed(wide.as_bytes()), Err(FrameError::Invalid(m)) if m.contains("larger than 4096")));

        let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}"#;
        let r = in_chunks(status, &[40]);
        assert!(matches!(r, Err(FrameError::Status(s)) if s == status), "the Status is handed over whole");
    }

    #[test]
    fn an_item_in_tiny_chunks_is_rescanned_only_when_the_carry_doubles() {
        // 200 KB item fed 100 bytes at a time: quadratic rescanning would scan ~200 MB; the
        // doubling rule keeps it linear. Counted here as the number of rescans.
        let big = format!(r#"{{"items":[{{"metadata":{{"name":"a"}},"data":"{}"}}]}}"#, "x".repeat(200_000));
        let mut d = ListFramer::<Pod>::new(1 << 20);
        let mut rescans = 0;
        for c in big.as_bytes().chunks(100) {
            let before = d.rescan_at;
            d.feed(c).unwrap();
            rescans += usize::from(d.rescan_at != before);
        }
        assert!(rescans < 20, "{rescans} rescans");
        assert_eq!(d.finish().unwrap().items.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn generated_lists_decode_alike_in_any_chunks(
            names in proptest::collection::vec("[a-z][a-z0-9-]{0,12}", 0..6),
            pretty in proptest::bool::ANY,
            cuts in proptest::collection::vec(0usize..2000, 0..8),
        ) {
            let items: Vec<serde_json::Value> = names
                .iter()
                .enumerate()
                .map(|(i, n)| serde_json::json!({"metadata": {"name": n, "namespace": "ns", "labels": {"i": i.to_string()}}, "spec": {"v": [i, "s\"}", {"k": null}]}}))
                .collect();
            // (Keys come out sorted: `items` before `metadata`; the fixed bodies above have both orders.)
            let doc = serde_json::json!({"kind": "PodList", "metadata": {"resourceVersion": "77", "continue": "tok"}, "items": items});
            let body = if pretty { serde_json::to_vec_pretty(&doc).unwrap() } else { serde_json::to_vec(&doc).unwrap() };
            let mut cuts = cuts;
            cuts.sort_unstable();
            let l = in_chunks(&body, &cuts).unwrap();
            proptest::prop_assert_eq!(l.resource_version.as_str(), "77");
            proptest::prop_assert_eq!(l.continue_token.as_deref(), Some("tok"));
            let got: Vec<serde_json::Value> = l.items.iter().map(|o| serde_json::from_slice(&o.raw_json()).unwrap()).collect();
            proptest::prop_assert_eq!(got, items);
        }
    }
}

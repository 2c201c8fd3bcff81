//! Content negotiation for protobuf answers: a client whose `Accept` header prefers
//! `application/vnd.kubernetes.protobuf` (kubectl's typed commands, client-go configured for
//! protobuf) gets its objects, lists, Status errors and watch streams in protobuf; every other
//! client gets JSON, unchanged.
//!
//! Watch streams in protobuf are `application/vnd.kubernetes.protobuf;stream=watch`: each event
//! a 4-byte big-endian length and a `meta/v1` `WatchEvent` message (no envelope) whose object is
//! the enveloped object, as kube-apiserver frames them.
//!
//! Invariants: an answer is transcoded from the JSON the server would have sent, whole or not
//! at all; a kind without a protobuf form (custom resources, discovery documents) stays JSON when
//! the client takes JSON and is a 406 when it takes protobuf only; a watch stream keeps its
//! events' order and ends when its source ends or the client goes away.

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use serde_json::Value;
use tokio::sync::mpsc;

use super::wire::Writer;
use super::{MEDIA_TYPE, encode_object, has_message};
use crate::body::{self, Body};
use crate::status::ApiError;

/// What an `Accept` header takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Accept {
    /// JSON (or anything) is acceptable.
    pub(crate) json: bool,
    /// Protobuf is acceptable.
    pub(crate) protobuf: bool,
    /// Protobuf comes before JSON in the client's order of preference.
    pub(crate) prefers_protobuf: bool,
}

impl Accept {
    /// Reads an `Accept` header (none: JSON). Media types with an `as=` parameter (Table,
    /// PartialObjectMetadata) are renderings the JSON path serves, not plain protobuf.
    pub(crate) fn parse(header: Option<&str>) -> Accept {
        let Some(h) = header.filter(|h| !h.trim().is_empty()) else {
            return Accept { json: true, ..Accept::default() };
        };
        // The most preferred JSON and protobuf entries: highest weight, then earliest (the
        // client's order breaks ties), as (weight, position).
        let mut json: Option<(f32, usize)> = None;
        let mut protobuf: Option<(f32, usize)> = None;
        let better = |best: Option<(f32, usize)>, q: f32| best.is_none_or(|(bq, _)| q > bq);
        for (i, m) in h.split(',').enumerate() {
            let mut parts = m.split(';').map(str::trim);
            let t = parts.next().unwrap_or("");
            let mut q = 1.0f32;
            let mut rendering = false;
            for p in parts {
                if let Some(v) = p.strip_prefix("q=") {
                    q = v.parse().unwrap_or(1.0);
                }
                rendering |= p.starts_with("as=");
            }
            if q <= 0.0 {
                continue;
            }
            let is_json = matches!(t, "application/json" | "*/*" | "application/*" | "") || t.ends_with("+json");
            if is_json {
                if better(json, q) {
                    json = Some((q, i));
                }
            } else if t == MEDIA_TYPE && !rendering && better(protobuf, q) {
                protobuf = Some((q, i));
            }
        }
        let prefers_protobuf = match (protobuf, json) {
            (Some(_), None) => true,
            (Some((pq, pi)), Some((jq, ji))) => pq > jq || (pq == jq && pi < ji),
            _ => false,
        };
        Accept { json: json.is_some(), protobuf: protobuf.is_some(), prefers_protobuf }
    }
}

/// The answer as the client prefers it: a JSON object, list or Status answer re-encoded in
/// protobuf, a JSON watch stream reframed, when the client prefers protobuf and the kind has a
/// protobuf form; a 406 when it takes only protobuf and the kind has none.
pub(crate) fn respond(accept: Accept, r: Response<Body>) -> Response<Body> {
    if !accept.protobuf || !is_json(&r) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let watched = parts.extensions.get::<WatchOf>().cloned();
    let body = match body {
        Body::List(l) if accept.prefers_protobuf || !accept.json => Body::Full(Some(Bytes::from(l.into_bytes()))),
        other => other,
    };
    let transcoded = match body {
        Body::Full(Some(bytes)) if accept.prefers_protobuf || !accept.json => {
            match serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()).and_then(|v| encode_object(&v)) {
                Ok(pb) => Ok(Body::Full(Some(Bytes::from(pb)))),
                Err(e) => Err((Body::Full(Some(bytes)), e)),
            }
        }
        Body::Stream(rx)
            if (accept.prefers_protobuf || !accept.json) && watched.as_ref().is_some_and(WatchOf::has_message) =>
        {
            Ok(Body::Stream(reframe(rx)))
        }
        other => Err((other, String::new())),
    };
    match transcoded {
        Ok(body) => {
            let content_type =
                if watched.is_some() { "application/vnd.kubernetes.protobuf;stream=watch" } else { MEDIA_TYPE };
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            Response::from_parts(parts, body)
        }
        Err((body, _)) if accept.json => Response::from_parts(parts, body),
        Err((_, why)) => {
            tracing::debug!(%why, "answer has no protobuf form");
            body::error(&ApiError::new(
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml, application/json;stream=watch",
            ))
        }
    }
}

fn is_json(r: &Response<Body>) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"))
}

/// Marks a watch answer with the kind it streams (a response extension), so the stream can be
/// reframed before its first event.
#[derive(Debug, Clone)]
pub(crate) struct WatchOf {
    /// `v1`, `apps/v1`…
    pub(crate) api_version: String,
    /// `Pod`, `Deployment`…
    pub(crate) kind: String,
}

impl WatchOf {
    fn has_message(&self) -> bool {
        has_message(&self.api_version, &self.kind)
    }
}

/// Reframes a stream of JSON watch lines as length-prefixed protobuf `WatchEvent`s.
fn reframe(mut rx: mpsc::Receiver<Bytes>) -> mpsc::Receiver<Bytes> {
    let (tx, out) = mpsc::channel(4);
    tokio::spawn(async move {
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = rx.recv().await {
            pending.extend_from_slice(&chunk);
            let mut frames = Vec::new();
            let mut done = 0;
            while let Some(n) = pending[done..].iter().position(|b| *b == b'\n') {
                let line = &pending[done..done + n];
                done += n + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match watch_frame(line) {
                    Ok(f) => frames.extend_from_slice(&f),
                    Err(e) => {
                        // The stream cannot go on truthfully: end it, the client re-watches.
                        tracing::warn!(error = %e, "watch event has no protobuf form; ending the watch");
                        let _ = tx.send(Bytes::from(frames)).await;
                        return;
                    }
                }
            }
            pending.drain(..done);
            if !frames.is_empty() && tx.send(Bytes::from(frames)).await.is_err() {
                return;
            }
        }
    });
    out
}

/// One JSON watch line (`{"type":…,"object":…}`) as a length-prefixed `WatchEvent` frame.
fn watch_frame(line: &[u8]) -> Result<Vec<u8>, String> {
    let ev: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let kind = ev.get("type").and_then(Value::as_str).ok_or("a watch event without a type")?;
    let object = encode_object(ev.get("object").ok_or("a watch event without an object")?)?;
    let mut raw = Writer::new();
    raw.bytes(1, &object);
    let mut event = Writer::new();
    event.bytes(1, kind.as_bytes());
    event.bytes(2, &raw.buf);
    let len = u32::try_from(event.buf.len()).map_err(|_| "a watch event over 4 GiB")?;
    let mut frame = Vec::with_capacity(4 + event.buf.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event.buf);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_choose_as_kube_apiserver_does() {
        let kubectl = Accept::parse(Some("application/vnd.kubernetes.protobuf,application/json"));
        assert_eq!(kubectl, Accept { json: true, protobuf: true, prefers_protobuf: true });
        let json_first = Accept::parse(Some("application/json, application/vnd.kubernetes.protobuf"));
        assert!(json_first.protobuf && !json_first.prefers_protobuf);
        let only = Accept::parse(Some("application/vnd.kubernetes.protobuf"));
        assert_eq!(only, Accept { json: false, protobuf: true, prefers_protobuf: true });
        let metadata = Accept::parse(Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ));
        assert!(!metadata.protobuf && metadata.json);
        let weighted = Accept::parse(Some("application/json;q=0.5, application/vnd.kubernetes.protobuf"));
        assert!(weighted.prefers_protobuf);
        assert_eq!(Accept::parse(None), Accept { json: true, ..Accept::default() });
    }

    #[test]
    fn watch_frames_are_length_prefixed_watch_events() {
        let line = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}"#;
        let f = watch_frame(line).unwrap();
        let len = u32::from_be_bytes(f[..4].try_into().unwrap()) as usize;
        assert_eq!(len, f.len() - 4);
        // WatchEvent{1: "ADDED", 2: RawExtension{1: k8s\0…}}
        assert_eq!(&f[4..11], b"\x0a\x05ADDED");
        assert!(f.windows(4).any(|w| w == b"k8s\0"));
        assert!(watch_frame(br#"{"type":"ADDED","object":{"kind":"Widget","apiVersion":"x/v1"}}"#).is_err());
    }
}

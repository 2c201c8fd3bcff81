//! Protobuf answers: a client whose first choice is `application/vnd.kubernetes.protobuf`
//! (kubectl's typed commands, client-go configured for protobuf; see `negotiation.rs`) gets
//! its objects, lists, Status errors and watch streams in protobuf; every other client gets
//! the JSON answer, for `negotiation.rs` to write in YAML when the client asks for it.
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
use crate::negotiation::{Accept, Media};
use crate::status::ApiError;

/// The answer as the client prefers it: a JSON object, list or Status answer re-encoded in
/// protobuf, a JSON watch stream reframed, when protobuf is the client's first choice and the
/// kind has a protobuf form; a 406 when it takes no other media type the answer can be given
/// in, and for a watch whose client puts YAML first (YAML has no streaming form).
pub(crate) fn respond(accept: Accept, r: Response<Body>) -> Response<Body> {
    if !is_json(&r) {
        return r;
    }
    let accept = accept.for_status(r.status());
    let watched = r.extensions().get::<WatchOf>().cloned();
    if watched.is_some() && accept.first() == Some(Media::Yaml) {
        return body::error(&crate::negotiation::yaml_watch_refused());
    }
    let first = accept.first() == Some(Media::Protobuf);
    if !first {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let body = match body {
        Body::List(l) => Body::Full(Some(Bytes::from(l.into_bytes()))),
        other => other,
    };
    let transcoded = match body {
        Body::Full(Some(bytes)) => {
            match serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()).and_then(|v| encode_object(&v)) {
                Ok(pb) => Ok(Body::Full(Some(Bytes::from(pb)))),
                Err(e) => Err((Body::Full(Some(bytes)), e)),
            }
        }
        Body::Stream(rx) if watched.as_ref().is_some_and(WatchOf::has_message) => Ok(Body::Stream(reframe(rx))),
        other => Err((other, String::new())),
    };
    match transcoded {
        Ok(body) => {
            let content_type =
                if watched.is_some() { "application/vnd.kubernetes.protobuf;stream=watch" } else { MEDIA_TYPE };
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            Response::from_parts(parts, body)
        }
        // The client's next choice: JSON, or YAML (written by the next step) but for a watch.
        Err((body, _)) if accept.first_but(Media::Protobuf) == Some(Media::Json) => Response::from_parts(parts, body),
        Err((body, _)) if accept.first_but(Media::Protobuf) == Some(Media::Yaml) => match watched {
            None => Response::from_parts(parts, body),
            Some(_) => body::error(&crate::negotiation::yaml_watch_refused()),
        },
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
        // A client gone ends the watch now, not at its next event.
        while let Some(chunk) = tokio::select! {
            c = rx.recv() => c,
            _ = tx.closed() => None,
        } {
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

//! The API server's list and watch bodies as [`WatchEvent`]s and [`ObjectList`]s.
//!
//! The framing (cutting a watch stream into events, a list body into items, and each into an
//! [`Object`](crate::Object)) is `informer-object`'s ([`informer_object::frame`]); this module
//! gives its output the list-watch types and errors: an ERROR event's object becomes a
//! [`Status`], a list body that is a `Status` becomes [`Error::Api`], and a non-`Status` error
//! body becomes a synthesised one ([`decode_error_body`]).
//!
//! Invariants: every framing error is an [`Error`] (never a panic, never a skipped change); after
//! an error a decoder stays failed.

use informer_object::frame::{FrameError, ListFramer, WatchFrame, WatchFramer};

pub use informer_object::frame::{DEFAULT_MAX_EVENT_BYTES, TypeMeta};

use crate::listwatch::{Error, ObjectList, Status, WatchEvent};

/// The outcome of decoding one watch document.
#[derive(Debug)]
pub enum Decoded<K> {
    /// A watch event.
    Event(WatchEvent<K>),
    /// An object of another kind than expected (client-go drops these with a log line).
    WrongKind {
        /// What the object said it was.
        got: TypeMeta,
    },
}

/// Incremental decoder of a watch stream (see [`WatchFramer`]).
pub struct EventDecoder<K> {
    framer: WatchFramer<K>,
}

impl<K> EventDecoder<K> {
    /// A decoder with a size limit per event and an optional expected type.
    pub fn new(max_event_bytes: usize, expected: Option<TypeMeta>) -> Self {
        EventDecoder { framer: WatchFramer::new(max_event_bytes, expected) }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.framer.push(chunk);
    }

    /// Bytes buffered and not yet decoded.
    pub fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    /// Decodes the next complete document, if one is buffered. After an error the decoder is
    /// unusable (the stream must be abandoned).
    pub fn next_event(&mut self) -> Option<Result<Decoded<K>, Error>> {
        self.framer.next_frame().map(decoded)
    }

    /// Called at the end of the stream: decodes a final document without a trailing newline, or
    /// reports a truncated one.
    pub fn finish(&mut self) -> Option<Result<Decoded<K>, Error>> {
        self.framer.finish().map(decoded)
    }
}

fn decoded<K>(frame: Result<WatchFrame<K>, FrameError>) -> Result<Decoded<K>, Error> {
    let event = match frame.map_err(error)? {
        WatchFrame::Added(o) => WatchEvent::Added(o),
        WatchFrame::Modified(o) => WatchEvent::Modified(o),
        WatchFrame::Deleted(o) => WatchEvent::Deleted(o),
        WatchFrame::Bookmark { resource_version, initial_events_end } => {
            WatchEvent::Bookmark { resource_version, initial_events_end }
        }
        WatchFrame::Error(json) => WatchEvent::Error(
            serde_json::from_slice(&json).map_err(|e| Error::Decode(format!("invalid watch ERROR status: {e}")))?,
        ),
        WatchFrame::WrongKind(got) => return Ok(Decoded::WrongKind { got }),
    };
    Ok(Decoded::Event(event))
}

fn error(e: FrameError) -> Error {
    match e {
        FrameError::EventTooLarge { limit } => Error::EventTooLarge { limit },
        FrameError::Invalid(m) => Error::Decode(m),
        FrameError::Object(e) => Error::Object(e),
        FrameError::Status(json) => match serde_json::from_slice::<Status>(&json) {
            Ok(status) => Error::api(status),
            Err(e) => Error::Decode(format!("invalid Status: {e}")),
        },
    }
}

/// Decodes a whole LIST response body (see [`ListDecoder`]).
pub fn decode_list<K>(body: &[u8]) -> Result<ObjectList<K>, Error> {
    let mut d = ListDecoder::new(usize::MAX);
    d.feed(body)?;
    d.finish()
}

/// Incremental decoder of a LIST response body (see [`ListFramer`]): items become objects as
/// their bytes arrive; a `Table` or a `Status` body is an error, never a partial list.
pub struct ListDecoder<K> {
    framer: ListFramer<K>,
}

impl<K> ListDecoder<K> {
    /// A decoder refusing list items larger than `max_item_bytes`.
    pub fn new(max_item_bytes: usize) -> Self {
        ListDecoder { framer: ListFramer::new(max_item_bytes) }
    }

    /// Takes the next chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.framer.feed(chunk).map_err(error)
    }

    /// The list, once the body has ended.
    pub fn finish(self) -> Result<ObjectList<K>, Error> {
        let body = self.framer.finish().map_err(error)?;
        Ok(ObjectList {
            items: body.items,
            resource_version: body.resource_version,
            continue_token: body.continue_token,
            remaining_item_count: body.remaining_item_count,
        })
    }
}

/// Turns an error response body into a Status (synthesising one when the body is not a Status).
pub fn decode_error_body(code: u16, body: &[u8]) -> Status {
    match serde_json::from_slice::<Status>(body) {
        Ok(mut s) if s.code != 0 || !s.message.is_empty() => {
            if s.code == 0 {
                s.code = code;
            }
            s
        }
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).trim().to_string();
            Status {
                status: "Failure".to_string(),
                code,
                reason: reason_for(code).to_string(),
                message: if text.is_empty() { format!("the server responded with HTTP {code}") } else { text },
                details: None,
            }
        }
    }
}

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn watch_documents_become_events_and_an_error_event_a_status() {
        let mut d = EventDecoder::<Pod>::new(1 << 20, None);
        d.push(br#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"11"}}}
{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}
{"type":"ERROR","object":{"code":"not a number"}}
"#);
        let mut next = || d.next_event().unwrap();
        assert!(matches!(next(), Ok(Decoded::Event(WatchEvent::Modified(o))) if o.key().as_str() == "ns/a"));
        assert!(matches!(
            next(),
            Ok(Decoded::Event(WatchEvent::Bookmark { resource_version, initial_events_end: true })) if resource_version == "12"
        ));
        match next() {
            Ok(Decoded::Event(WatchEvent::Error(s))) => assert!(Error::api(s).is_expired()),
            other => panic!("{other:?}"),
        }
        assert!(matches!(next(), Err(Error::Decode(m)) if m.starts_with("invalid watch ERROR status")));
    }

    #[test]
    fn framing_errors_keep_their_kind() {
        let mut d = EventDecoder::<Pod>::new(64, None);
        d.push(&[b'{'; 100]);
        assert!(matches!(d.next_event(), Some(Err(Error::EventTooLarge { limit: 64 }))));
        let mut d = EventDecoder::<Pod>::new(1 << 20, None);
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n");
        assert!(matches!(d.next_event(), Some(Err(Error::Object(_)))), "an object without a name");
        let mut d = EventDecoder::<Pod>::new(1 << 20, Some(TypeMeta { api_version: "v1".into(), kind: "Pod".into() }));
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n\"}}}\n");
        assert!(matches!(d.next_event(), Some(Ok(Decoded::WrongKind { got })) if got.kind == "Node"));
    }

    #[test]
    fn list_bodies_become_lists_and_status_bodies_api_errors() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"abc","remainingItemCount":3},
            "items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"4"}},{"metadata":{"name":"b","namespace":"n","resourceVersion":"7"}}]}"#;
        let l = decode_list::<Pod>(body).unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!((l.resource_version.as_str(), l.continue_token.as_deref()), ("10", Some("abc")));
        assert_eq!(l.remaining_item_count, Some(3));
        assert!(matches!(decode_list::<Pod>(b"{\"items\":[{\"metadata\":{}}]}"), Err(Error::Object(_))));
        assert!(matches!(decode_list::<Pod>(b"<html>"), Err(Error::Decode(_))));
        let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}"#;
        let mut d = ListDecoder::<Pod>::new(1 << 20);
        d.feed(&status[..40]).unwrap();
        d.feed(&status[40..]).unwrap();
        assert!(
            matches!(d.finish(), Err(Error::Api { status, .. }) if status.code == 410 && status.reason == "Expired")
        );
        assert!(matches!(
            decode_list::<Pod>(br#"{"kind":"Status","code":"x"}"#),
            Err(Error::Decode(m)) if m.starts_with("invalid Status")
        ));
    }

    #[test]
    fn error_bodies_become_statuses() {
        let s = decode_error_body(503, b"<html>busy</html>");
        assert_eq!((s.code, s.reason.as_str(), s.message.as_str()), (503, "ServiceUnavailable", "<html>busy</html>"));
        let s = decode_error_body(404, br#"{"kind":"Status","message":"pods \"x\" not found","reason":"NotFound"}"#);
        assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
        assert_eq!(decode_error_body(500, b"").message, "the server responded with HTTP 500");
    }
}

//! The Kubernetes [`ListerWatcher`]: lists and watches a resource through a `kube::Client`.
//!
//! `kube` supplies configuration (kubeconfig or in-cluster), authentication and TLS; this module
//! owns the hot path: it reads the response bytes itself and decodes them as they arrive. The
//! framing (a watch stream cut into events, a list body into items, each into an
//! [`Object`](crate::Object); no intermediate JSON tree, no per-event `serde_json::Value`) is
//! `informer-object`'s ([`informer_object::frame`]); [`EventDecoder`] and [`ListDecoder`] give its
//! output the list-watch types: an ERROR event's object becomes a [`Status`], a list body that is
//! a `Status` an [`Error::Api`], a non-`Status` error body a synthesised one
//! ([`decode_error_body`]); after an error a decoder stays failed.
//! Works for any `kube::Resource`: typed k8s-openapi objects, `DynamicObject` (with an
//! `ApiResource`), and metadata-only watches (`PartialObjectMeta<K>`, requested with the
//! `as=PartialObjectMetadata` Accept header).
//!
//! Errors never carry credentials: transport errors are reduced to their message chain. A request
//! that got no usable answer is classified by what broke ([`TransportFailure`]), from the I/O error
//! kinds, hyper errors and HTTP/2 errors in its source chain: a refused connection, a lost one
//! (reset, EOF or unexpected EOF, broken pipe, timed out, HTTP/2 GOAWAY), or anything else (TLS
//! verification, DNS resolution, credentials, a malformed answer).

use std::marker::PhantomData;

use futures_util::StreamExt;
use http::{Request, header};
use http_body_util::BodyExt;

use informer_object::frame::{FrameError, ListFramer, WatchFrame, WatchFramer};

pub use informer_object::frame::{DEFAULT_MAX_EVENT_BYTES, TypeMeta};

use crate::listwatch::{
    Error, ListOptions, ListerWatcher, ObjectList, Status, TransportFailure, WatchEvent, WatchStream,
};

const METADATA_ACCEPT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Lists and watches one resource (optionally in one namespace, with selectors) over a
/// `kube::Client`.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use informer::KubeListerWatcher;
/// use k8s_openapi::api::core::v1::Pod;
/// let client = kube::Client::try_default().await?;
/// let lw = KubeListerWatcher::<Pod>::new(client, Some("default")).label_selector("app=web");
/// # Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: kube::Client,
    path: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    expected: Option<TypeMeta>,
    accept: Option<&'static str>,
    max_event_bytes: usize,
    describe: std::sync::Arc<str>,
    _k: PhantomData<fn() -> K>,
}

impl<K> KubeListerWatcher<K>
where
    K: kube::Resource,
    K::DynamicType: Default,
{
    /// A lister-watcher for a statically typed resource, in `namespace` or cluster-wide.
    pub fn new(client: kube::Client, namespace: Option<&str>) -> Self {
        Self::new_with(client, namespace, &K::DynamicType::default())
    }
}

impl<K: kube::Resource> KubeListerWatcher<K> {
    /// A lister-watcher for a resource described at run time (e.g. `DynamicObject` with an
    /// `ApiResource`).
    pub fn new_with(client: kube::Client, namespace: Option<&str>, dt: &K::DynamicType) -> Self {
        let path = K::url_path(dt, namespace);
        let expected = Some(TypeMeta { api_version: K::api_version(dt).into_owned(), kind: K::kind(dt).into_owned() });
        let describe: std::sync::Arc<str> = format!("{}.{}", K::plural(dt), K::api_version(dt)).into();
        KubeListerWatcher {
            client,
            path,
            label_selector: None,
            field_selector: None,
            expected,
            accept: None,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            describe,
            _k: PhantomData,
        }
    }
}

impl<K> KubeListerWatcher<K> {
    /// Restricts to objects matching a label selector.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Restricts to objects matching a field selector.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Requests metadata only (`PartialObjectMetadata`); use with `K = PartialObjectMeta<T>`.
    pub fn metadata_only(mut self) -> Self {
        self.accept = Some(METADATA_ACCEPT);
        self.expected = Some(TypeMeta { api_version: "meta.k8s.io/v1".into(), kind: "PartialObjectMetadata".into() });
        self
    }

    /// Sets the largest accepted watch event (default 16 MiB).
    pub fn max_event_bytes(mut self, limit: usize) -> Self {
        self.max_event_bytes = limit;
        self
    }

    fn request(&self, opts: &ListOptions, watch: bool) -> Result<Request<kube::client::Body>, Error> {
        let mut o = opts.clone();
        if o.label_selector.is_none() {
            o.label_selector.clone_from(&self.label_selector);
        }
        if o.field_selector.is_none() {
            o.field_selector.clone_from(&self.field_selector);
        }
        let uri = format!("{}?{}", self.path, o.to_query(watch));
        let mut b = Request::get(uri);
        if let Some(a) = self.accept {
            b = b.header(header::ACCEPT, a);
        } else {
            b = b.header(header::ACCEPT, "application/json");
        }
        b.body(kube::client::Body::empty()).map_err(|e| Error::Decode(format!("cannot build request: {e}")))
    }

    /// Sends a GET (lists and watches have no body). A request whose connection was reset before
    /// any answer — a pooled connection the server or a load balancer closed — is sent once more
    /// at once on a new connection, as Go's transport under client-go does by itself.
    async fn send(&self, req: Request<kube::client::Body>) -> Result<http::Response<kube::client::Body>, Error> {
        let (parts, _) = req.into_parts();
        let again = || Request::from_parts(parts.clone(), kube::client::Body::empty());
        let resp = match self.client.send(again()).await {
            Err(e) if io_error_in(&e, std::io::ErrorKind::ConnectionReset) => self.client.send(again()).await,
            r => r,
        }
        .map_err(transport_error)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = resp
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(std::time::Duration::from_secs);
        let body = resp.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        let st = decode_error_body(status.as_u16(), &body);
        let mut err = Error::api(st);
        if let (Error::Api { retry_after: ra, .. }, Some(h)) = (&mut err, retry_after) {
            *ra = Some(h);
        }
        Err(err)
    }
}

/// Decodes a LIST body frame by frame: items are decoded as they arrive and each frame is
/// released at once, so neither the page nor the connection's read buffers are held whole.
async fn read_list<K>(mut body: kube::client::Body, max_item_bytes: usize) -> Result<ObjectList<K>, Error> {
    let mut decoder = ListDecoder::new(max_item_bytes);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Error::Transport {
            message: format!("reading list body: {}", message_chain(&e)),
            failure: transport_failure(&e),
        })?;
        if let Ok(data) = frame.into_data() {
            decoder.feed(&data)?;
        }
    }
    decoder.finish()
}

/// Whether an I/O error of `kind` is in `e`'s chain.
fn io_error_in(e: &kube::Error, kind: std::io::ErrorKind) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if s.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == kind) {
            return true;
        }
        src = s.source();
    }
    false
}

/// Reduces a kube error of sending a request to a message and what failed.
fn transport_error(e: kube::Error) -> Error {
    if let kube::Error::Api(status) = &e {
        let s = Status {
            status: status.status.map(|s| format!("{s:?}")).unwrap_or_default(),
            message: status.message.clone(),
            reason: status.reason.clone(),
            code: status.code,
            details: None,
        };
        return Error::api(s);
    }
    Error::Transport { message: message_chain(&e), failure: transport_failure(&e) }
}

/// The error's message followed by those of its sources that it does not already contain.
fn message_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let m = s.to_string();
        if !message.contains(&m) {
            message.push_str(": ");
            message.push_str(&m);
        }
        src = s.source();
    }
    message
}

/// What failed, read from `e` and its sources: the first I/O error kind, hyper error or HTTP/2
/// error that names a failure of the connection decides (refused, or lost); when none does, the
/// failure is [`TransportFailure::Other`] (a TLS error, a DNS resolution failure, failing
/// credentials, a malformed answer). An I/O error's own wrapped error and an HTTP/2 error's I/O
/// error are followed too (their `source` skips them).
pub fn transport_failure(e: &(dyn std::error::Error + 'static)) -> TransportFailure {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(f) = io_failure(io.kind()) {
                return f;
            }
            next = match io.get_ref() {
                Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
                None => err.source(),
            };
            continue;
        }
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_closed() || h.is_canceled() || h.is_timeout())
        {
            return TransportFailure::ConnectionLost;
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            if h2.is_go_away() {
                return TransportFailure::ConnectionLost;
            }
            if let Some(io) = h2.get_io() {
                next = Some(io);
                continue;
            }
        }
        next = err.source();
    }
    TransportFailure::Other
}

fn io_failure(kind: std::io::ErrorKind) -> Option<TransportFailure> {
    use std::io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => Some(TransportFailure::ConnectionRefused),
        K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::BrokenPipe
        | K::UnexpectedEof
        | K::TimedOut => Some(TransportFailure::ConnectionLost),
        _ => None,
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for KubeListerWatcher<K> {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        let req = self.request(opts, false)?;
        let resp = self.send(req).await?;
        read_list(resp.into_body(), self.max_event_bytes).await
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<K>, Error> {
        let req = self.request(opts, true)?;
        let resp = self.send(req).await?;
        let body = resp.into_body();
        let decoder = EventDecoder::<K>::new(self.max_event_bytes, self.expected.clone());
        // An `Arc` so the per-event closure below clones a pointer, not a string.
        let describe = self.describe.clone();
        let stream = futures_util::stream::unfold((body, decoder, false), move |(mut body, mut decoder, done)| {
            let describe = describe.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    match decoder.next_event() {
                        Some(Ok(Decoded::Event(ev))) => {
                            return Some((Ok(ev), (body, decoder, false)));
                        }
                        Some(Ok(Decoded::WrongKind { got })) => {
                            tracing::warn!(watch = %describe, got_kind = %got.kind, got_api_version = %got.api_version,
                                    "unexpected watch event object type; dropped");
                            continue;
                        }
                        Some(Err(e)) => return Some((Err(e), (body, decoder, true))),
                        None => {}
                    }
                    match body.frame().await {
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                decoder.push(&data);
                            }
                        }
                        Some(Err(e)) => {
                            // A broken stream ends the watch like a close (client-go logs and
                            // closes on unexpected EOF / timeouts); the reflector rewatches.
                            tracing::debug!(watch = %describe, error = %e, "watch stream broke");
                            return match decoder.finish() {
                                Some(Ok(Decoded::Event(ev))) => Some((Ok(ev), (body, decoder, true))),
                                _ => None,
                            };
                        }
                        None => {
                            return match decoder.finish() {
                                Some(Ok(Decoded::Event(ev))) => Some((Ok(ev), (body, decoder, true))),
                                Some(Ok(Decoded::WrongKind { .. })) | None => None,
                                Some(Err(e)) => Some((Err(e), (body, decoder, true))),
                            };
                        }
                    }
                }
            }
        });
        Ok(stream.boxed())
    }

    fn describe(&self) -> String {
        self.describe.to_string()
    }
}

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
    informer_object::frame::frame_list(body).map_err(error)
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
        self.framer.finish().map_err(error)
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
            let message = if text.is_empty() { format!("the server responded with HTTP {code}") } else { text };
            Status::failure(code, reason_for(code), message)
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
mod failure_tests {
    use super::*;
    use std::io;

    #[test]
    fn io_kinds_decide_through_wrapping_io_errors() {
        let wrapped = |kind, inner: io::Error| io::Error::new(kind, inner);
        let reset = wrapped(io::ErrorKind::Other, io::Error::from(io::ErrorKind::ConnectionReset));
        assert_eq!(transport_failure(&reset), TransportFailure::ConnectionLost);
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(transport_failure(&refused), TransportFailure::ConnectionRefused);
        for kind in [io::ErrorKind::UnexpectedEof, io::ErrorKind::BrokenPipe, io::ErrorKind::TimedOut] {
            assert_eq!(transport_failure(&io::Error::from(kind)), TransportFailure::ConnectionLost, "{kind:?}");
        }
        // rustls reports a certificate it cannot verify as InvalidData inside Other.
        let tls = wrapped(io::ErrorKind::Other, io::Error::new(io::ErrorKind::InvalidData, "invalid peer certificate"));
        assert_eq!(transport_failure(&tls), TransportFailure::Other);
        let h2 = h2::Error::from(h2::Reason::PROTOCOL_ERROR);
        assert_eq!(transport_failure(&h2), TransportFailure::Other);
    }
}

#[cfg(test)]
mod decode_tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn watch_documents_become_events_and_an_error_event_a_status() {
        let mut d = EventDecoder::<Pod>::new(1 << 20, None);
        d.push(br#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"11"}}}
{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}
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

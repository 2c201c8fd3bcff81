//! The Kubernetes [`ListerWatcher`]: lists and watches a resource through a `kube::Client`.
//!
//! `kube` supplies configuration (kubeconfig or in-cluster), authentication and TLS; this module
//! owns the hot path: it reads the response bytes itself and decodes them with
//! [`decode`](crate::decode) (no intermediate JSON tree, no per-event `serde_json::Value`).
//! Works for any `kube::Resource`: typed k8s-openapi objects, `DynamicObject` (with an
//! `ApiResource`), and metadata-only watches (`PartialObjectMeta<K>`, requested with the
//! `as=PartialObjectMetadata` Accept header).
//!
//! Errors never carry credentials: transport errors are reduced to their message chain.

use std::marker::PhantomData;

use futures_util::StreamExt;
use http::{Request, header};
use http_body_util::BodyExt;

use crate::decode::{DEFAULT_MAX_EVENT_BYTES, Decoded, EventDecoder, ListDecoder, TypeMeta, decode_error_body};
use crate::listwatch::{Error, ListOptions, ListerWatcher, ObjectList, WatchStream};

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

    async fn send(&self, req: Request<kube::client::Body>) -> Result<http::Response<kube::client::Body>, Error> {
        let resp = self.client.send(req).await.map_err(transport_error)?;
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
        let frame = frame
            .map_err(|e| Error::Transport { message: format!("reading list body: {e}"), connection_refused: false })?;
        if let Ok(data) = frame.into_data() {
            decoder.feed(&data)?;
        }
    }
    decoder.finish()
}

/// Reduces a kube error to a message, noting "connection refused" anywhere in its chain.
fn transport_error(e: kube::Error) -> Error {
    if let kube::Error::Api(status) = &e {
        let s = crate::listwatch::Status {
            status: status.status.map(|s| format!("{s:?}")).unwrap_or_default(),
            message: status.message.clone(),
            reason: status.reason.clone(),
            code: status.code,
            details: None,
        };
        return Error::api(s);
    }
    let mut message = e.to_string();
    let mut refused = false;
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        let m = s.to_string();
        if !message.contains(&m) {
            message.push_str(": ");
            message.push_str(&m);
        }
        src = s.source();
    }
    refused |= message.contains("Connection refused") || message.contains("connection refused");
    Error::Transport { message, connection_refused: refused }
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

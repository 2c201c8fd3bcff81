//! The W1 benchmark workload as a minimal, generator-backed server.
//!
//! W1: 10,000 pods shaped like `data/w1-pod.json` (4.4 KB of JSON each, with managedFields,
//! ownerReferences and status; names `bench-0000000…`, label `app=app-(i%50)`), listed at
//! resourceVersion 1000 in pages as asked; then `updates` MODIFIED events — event k modifies pod
//! (k−1) mod 10,000 at resourceVersion 1000+k with a changed label — streamed over HTTP/1.1 as fast
//! as the client reads. With `sendInitialEvents=true` the watch first streams the 10,000 pods as
//! ADDED and the `k8s.io/initial-events-end` bookmark.
//!
//! Events have kube-apiserver's shape, not the list items' bytes: every watched object carries
//! `"kind":"Pod","apiVersion":"v1"` (list items do not); each update moves the last
//! `managedFields` entry's `time` and, every fourth update, the Ready condition's
//! `lastTransitionTime`; and three updates in ten set `status.message` to a new text of 10–500
//! bytes (the others restore the pod's usual one), so objects grow and shrink as a status
//! message comes and goes.
//!
//! A client that accepts `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` first
//! (a metadata informer) gets each pod's metadata as kube-apiserver sends it: a
//! `PartialObjectMetadataList`, and `PartialObjectMetadata` objects in watch events.
//!
//! Unlike the general [`ApiServer`](informer_apiserver::ApiServer) (whose watch cache would hold every event),
//! nothing is stored: pods and events are spliced from one template into ~128 KB chunks on demand,
//! so the server holds a few hundred KB and never bounds a client benchmark. After the last event
//! the watch stays open (idle) until the client goes away.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use tokio::net::TcpListener;

const TEMPLATE: &str = include_str!("../data/w1-pod.json");
const CHUNK: usize = 128 << 10;

/// W1 parameters.
#[derive(Debug, Clone, Copy)]
pub struct W1Config {
    /// Number of pods (10,000 in W1).
    pub pods: u64,
    /// Number of MODIFIED events after the list (100,000 in W1).
    pub updates: u64,
    /// The list's resourceVersion (1000 in W1).
    pub list_rv: u64,
    /// Pace the MODIFIED events at this many per second (for latency measurements); each event's
    /// `generation` label then carries its send time in microseconds since the Unix epoch.
    /// `None` = as fast as the client reads, with `generation` = the event number.
    pub rate: Option<u64>,
}

impl Default for W1Config {
    fn default() -> Self {
        W1Config { pods: 10_000, updates: 100_000, list_rv: 1000, rate: None }
    }
}

/// A pod template cut at the places that vary.
struct Template {
    /// Literal parts between the holes: name, uid, resourceVersion, app label, generation label,
    /// times and the status message.
    parts: Vec<Vec<u8>>,
    holes: Vec<Hole>,
    /// Whether watched objects get `kind` and `apiVersion` added (full pods; metadata-only
    /// objects carry them in lists too).
    typed_when_watched: bool,
}

/// What a template writes: whole pods, or their `PartialObjectMetadata` (what kube-apiserver
/// answers a client that accepts `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Pod,
    Metadata,
}

#[derive(Clone, Copy)]
enum Hole {
    Name,
    Uid,
    Rv,
    App,
    Generation,
    /// The last managedFields entry's `time`.
    ManagedTime,
    /// The Ready condition's `lastTransitionTime`.
    ReadyTime,
    /// `status.message`.
    Message,
}

/// Which version of a pod is written.
#[derive(Clone, Copy)]
struct Version {
    /// The update that made it (0: the listed state).
    update: u64,
    /// A watch event's object (with kind and apiVersion) rather than a list item.
    watched: bool,
}

/// The longest status message an update writes.
const MAX_MESSAGE: usize = 500;

/// `2026-11-01T10:00:00Z` plus `secs` seconds (wrapping after 28 days): always 20 bytes.
fn timestamp(out: &mut BytesMut, secs: u64) {
    use std::fmt::Write as _;
    let s = secs % (28 * 86400) + 10 * 3600;
    let _ = write!(out, "2026-11-{:02}T{:02}:{:02}:{:02}Z", 1 + s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
}

/// A deterministic hash of an update number (splitmix64).
fn mix(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The length of pod `i`'s status message after update `update`: its usual 10–60 bytes, or for
/// three updates in ten a new length of 10–500 bytes.
fn message_len(i: u64, update: u64) -> usize {
    let h = mix(update);
    if update > 0 && h % 10 < 3 { 10 + ((h >> 8) % (MAX_MESSAGE as u64 - 9)) as usize } else { 10 + (i % 51) as usize }
}

const MESSAGE_TEXT: &[u8] = b"Back-off pulling image; readiness probe failed: HTTP probe failed with statuscode: 503; ";

impl Template {
    fn new(shape: Shape) -> Template {
        let mut v: serde_json::Value = serde_json::from_str(TEMPLATE).expect("valid template");
        // List items carry no kind and apiVersion; watched objects get them in `write`.
        let o = v.as_object_mut().expect("an object");
        o.remove("kind");
        o.remove("apiVersion");
        if shape == Shape::Metadata {
            let metadata = v["metadata"].take();
            v = serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata});
        }
        let m = &mut v["metadata"];
        m["name"] = "\u{1}NAME\u{1}".into();
        m["uid"] = "\u{1}UID\u{1}".into();
        m["resourceVersion"] = "\u{1}RV\u{1}".into();
        m["labels"]["app"] = "\u{1}APP\u{1}".into();
        m["labels"]["generation"] = "\u{1}GEN\u{1}".into();
        if let Some(last) = m["managedFields"].as_array_mut().and_then(|a| a.last_mut()) {
            last["time"] = "\u{1}MFTIME\u{1}".into();
        }
        if shape == Shape::Pod {
            let status = &mut v["status"];
            if let Some(ready) =
                status["conditions"].as_array_mut().and_then(|c| c.iter_mut().find(|c| c["type"] == "Ready"))
            {
                ready["lastTransitionTime"] = "\u{1}READYTIME\u{1}".into();
            }
            status["message"] = "\u{1}MESSAGE\u{1}".into();
        }
        let s = serde_json::to_string(&v).expect("serialisable");
        let mut parts = Vec::new();
        let mut holes = Vec::new();
        let mut rest = s.as_str();
        let marker = "\\u0001";
        while let Some(i) = rest.find(marker) {
            parts.push(rest.as_bytes()[..i].to_vec());
            let after = &rest[i + marker.len()..];
            let j = after.find(marker).expect("closing marker");
            holes.push(match &after[..j] {
                "NAME" => Hole::Name,
                "UID" => Hole::Uid,
                "RV" => Hole::Rv,
                "APP" => Hole::App,
                "MFTIME" => Hole::ManagedTime,
                "READYTIME" => Hole::ReadyTime,
                "MESSAGE" => Hole::Message,
                _ => Hole::Generation,
            });
            rest = &after[j + marker.len()..];
        }
        parts.push(rest.as_bytes().to_vec());
        Template { parts, holes, typed_when_watched: shape == Shape::Pod }
    }

    /// Appends version `v` of pod `i` at resourceVersion `rv` with generation label
    /// `generation` (no allocation beyond `out`'s own growth: the numbers are formatted straight
    /// into it).
    fn write(&self, out: &mut BytesMut, i: u64, rv: u64, generation: u64, v: Version) {
        use std::fmt::Write as _;
        out.reserve(self.max_len());
        for (k, part) in self.parts.iter().enumerate() {
            if k == 0 && v.watched && self.typed_when_watched {
                // `{` then kind and apiVersion, as kube-apiserver writes watched objects.
                out.extend_from_slice(b"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",");
                out.extend_from_slice(&part[1..]);
            } else {
                out.extend_from_slice(part);
            }
            if let Some(h) = self.holes.get(k) {
                // Writing to a `BytesMut` cannot fail.
                let _ = match h {
                    Hole::Name => write!(out, "bench-{i:07}"),
                    Hole::Uid => write!(out, "00000000-0000-4000-8000-{i:012}"),
                    Hole::Rv => write!(out, "{rv}"),
                    Hole::App => write!(out, "app-{}", i % 50),
                    Hole::Generation => write!(out, "{generation}"),
                    Hole::ManagedTime => {
                        timestamp(out, v.update);
                        Ok(())
                    }
                    Hole::ReadyTime => {
                        timestamp(out, v.update / 4 * 4);
                        Ok(())
                    }
                    Hole::Message => {
                        let n = message_len(i, v.update);
                        let start = (mix(v.update) % MESSAGE_TEXT.len() as u64) as usize;
                        out.extend(MESSAGE_TEXT.iter().cycle().skip(start).take(n));
                        Ok(())
                    }
                };
            }
        }
    }

    /// An upper bound of one written pod (and its event envelope): the literal parts plus room
    /// for every number.
    fn max_len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum::<usize>() + self.holes.len() * 48 + MAX_MESSAGE + 96
    }
}

struct Shared {
    cfg: W1Config,
    tpl: Template,
    /// The pods' `PartialObjectMetadata`, for metadata-only clients.
    meta_tpl: Template,
    namespace: String,
}

impl Shared {
    /// The template of `shape`.
    fn template(&self, shape: Shape) -> &Template {
        match shape {
            Shape::Pod => &self.tpl,
            Shape::Metadata => &self.meta_tpl,
        }
    }

    /// The resourceVersion of pod `i` in the initial state (all ≤ list_rv).
    fn initial_rv(&self, i: u64) -> u64 {
        1 + (i * (self.cfg.list_rv - 1)) / self.cfg.pods.max(1)
    }
}

/// A running W1 server.
pub struct W1Server {
    addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    namespace: String,
    /// The server's own thread (with [`W1Server::spawn`]), joined on drop.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl W1Server {
    /// Starts W1 on 127.0.0.1 (any port), serving pods in `namespace`.
    pub async fn start(cfg: W1Config, namespace: &str) -> std::io::Result<W1Server> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            cfg,
            tpl: Template::new(Shape::Pod),
            meta_tpl: Template::new(Shape::Metadata),
            namespace: namespace.to_string(),
        });
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut c = stopped;
            loop {
                let (sock, _) = tokio::select! {
                    _ = c.wait_for(|s| *s) => return,
                    r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
                };
                let _ = sock.set_nodelay(true);
                let shared = shared.clone();
                let mut c2 = c.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(shared.clone(), req));
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(sock), svc);
                    tokio::select! {
                        _ = c2.wait_for(|s| *s) => {}
                        _ = conn => {}
                    }
                });
            }
        });
        Ok(W1Server { addr, stop, namespace: namespace.to_string(), thread: None })
    }

    /// Starts W1 on a dedicated thread with its own single-threaded runtime, as a separate
    /// server process would be: a client benchmark's runtime then never runs server work, and
    /// the server's pacing timers never wait behind client tasks. The thread ends when the
    /// returned handle is dropped.
    pub fn spawn(cfg: W1Config, namespace: &str) -> std::io::Result<W1Server> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let namespace = namespace.to_string();
        let thread = std::thread::Builder::new().name("w1-server".into()).spawn(move || {
            rt.block_on(async move {
                match Self::start(cfg, &namespace).await {
                    Ok(server) => {
                        let mut stopped = server.stop.subscribe();
                        let _ = tx.send(Ok(server));
                        let _ = stopped.wait_for(|s| *s).await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
        })?;
        let mut server = rx.recv().map_err(|_| std::io::Error::other("the W1 server thread ended"))??;
        server.thread = Some(thread);
        Ok(server)
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kubeconfig for the server.
    pub fn kubeconfig_yaml(&self) -> String {
        informer_apiserver::kubeconfig_yaml(&format!("http://{}", self.addr), None, false)
            .replace("namespace: default", &format!("namespace: {}", self.namespace))
    }
}

impl Drop for W1Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

type BoxBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<BoxBody> {
    let mut r = Response::new(http_body_util::Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    r
}

async fn handle(sh: Arc<Shared>, req: Request<Incoming>) -> Result<Response<BoxBody>, Infallible> {
    let path = req.uri().path();
    let want = format!("/api/v1/namespaces/{}/pods", sh.namespace);
    if path != want && path != "/api/v1/pods" {
        let msg = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}"#;
        return Ok(full(StatusCode::NOT_FOUND, msg));
    }
    let q: Vec<(String, String)> = req
        .uri()
        .query()
        .map(|q| {
            q.split('&').filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect()
        })
        .unwrap_or_default();
    let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let metadata_only = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.split(',').next().is_some_and(|first| first.contains("as=PartialObjectMetadata;")));
    let shape = if metadata_only { Shape::Metadata } else { Shape::Pod };
    let watch = matches!(get("watch"), Some("true") | Some("1"));
    if watch {
        let initial = get("sendInitialEvents") == Some("true");
        let from_rv: u64 = get("resourceVersion").and_then(|r| r.parse().ok()).unwrap_or(0);
        let first = if initial { 1 } else { from_rv.saturating_sub(sh.cfg.list_rv) + 1 };
        let body = WatchBody {
            paced: None,
            shape,
            sh: sh.clone(),
            initial: if initial { Some(0) } else { None },
            next: first,
            buf: BytesMut::new(),
        };
        let mut r = Response::new(BodyExt::boxed(body));
        r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        return Ok(r);
    }
    // LIST at list_rv, paged by `limit`/`continue` (the continue token is the next index).
    let limit: u64 = get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(u64::MAX);
    let start: u64 = get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let end = start.saturating_add(limit).min(sh.cfg.pods);
    let mut out = BytesMut::with_capacity(((end - start) as usize) * 4700 + 256);
    out.extend_from_slice(match shape {
        Shape::Pod => br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":""#.as_slice(),
        Shape::Metadata => {
            br#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":""#
        }
    });
    out.extend_from_slice(sh.cfg.list_rv.to_string().as_bytes());
    out.extend_from_slice(b"\"");
    if end < sh.cfg.pods {
        out.extend_from_slice(format!(r#","continue":"{end}","remainingItemCount":{}"#, sh.cfg.pods - end).as_bytes());
    }
    out.extend_from_slice(br#"},"items":["#);
    for i in start..end {
        if i > start {
            out.extend_from_slice(b",");
        }
        sh.template(shape).write(&mut out, i, sh.initial_rv(i), 0, Version { update: 0, watched: false });
    }
    out.extend_from_slice(b"]}");
    Ok(full(StatusCode::OK, out.freeze()))
}

/// Generates watch events into ~128 KB chunks as the client reads.
struct WatchBody {
    sh: Arc<Shared>,
    /// Whole pods or their metadata.
    shape: Shape,
    /// Next initial pod to send as ADDED (`Some(pods)` = bookmark pending, None = done).
    initial: Option<u64>,
    /// Next MODIFIED event number (1-based).
    next: u64,
    buf: BytesMut,
    /// When paced: the time event 1 is due, and the timer for the next due event.
    paced: Option<(tokio::time::Instant, Pin<Box<tokio::time::Sleep>>)>,
}

use crate::measure::micros_now;

impl Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let sh = this.sh.clone();
        if let (Some(rate), None) = (sh.cfg.rate, this.initial) {
            return this.poll_paced(cx, rate);
        }
        this.buf.reserve(CHUNK + 8192);
        while this.buf.len() < CHUNK {
            if let Some(i) = this.initial {
                if i < sh.cfg.pods {
                    this.buf.extend_from_slice(br#"{"type":"ADDED","object":"#);
                    let tpl = sh.template(this.shape);
                    tpl.write(&mut this.buf, i, sh.initial_rv(i), 0, Version { update: 0, watched: true });
                    this.buf.extend_from_slice(b"}\n");
                    this.initial = Some(i + 1);
                } else {
                    // As kube-apiserver writes it: an empty Pod carries what its Go type
                    // always writes.
                    let (kind, api_version, rest) = match this.shape {
                        Shape::Pod => ("Pod", "v1", r#","spec":{"containers":null},"status":{}"#),
                        Shape::Metadata => ("PartialObjectMetadata", "meta.k8s.io/v1", ""),
                    };
                    this.buf.extend_from_slice(
                        format!(
                            r#"{{"type":"BOOKMARK","object":{{"kind":"{kind}","apiVersion":"{api_version}","metadata":{{"resourceVersion":"{}","annotations":{{"k8s.io/initial-events-end":"true"}}}}{rest}}}}}"#,
                            sh.cfg.list_rv
                        )
                        .as_bytes(),
                    );
                    this.buf.extend_from_slice(b"\n");
                    this.initial = None;
                }
                continue;
            }
            if sh.cfg.rate.is_some() {
                break; // paced events go through poll_paced
            }
            if this.next > sh.cfg.updates {
                break;
            }
            let k = this.next;
            let i = (k - 1) % sh.cfg.pods;
            this.buf.extend_from_slice(br#"{"type":"MODIFIED","object":"#);
            sh.template(this.shape).write(
                &mut this.buf,
                i,
                sh.cfg.list_rv + k,
                k,
                Version { update: k, watched: true },
            );
            this.buf.extend_from_slice(b"}\n");
            this.next += 1;
        }
        if this.buf.is_empty() {
            // All events sent: stay open, idle, until the client disconnects.
            return Poll::Pending;
        }
        let chunk = this.buf.split().freeze();
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

impl WatchBody {
    /// Paced mode: sends every event that is due, then sleeps until the next one.
    fn poll_paced(&mut self, cx: &mut Context<'_>, rate: u64) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let sh = self.sh.clone();
        let interval = std::time::Duration::from_nanos(1_000_000_000 / rate.max(1));
        let (start, sleep) = self.paced.get_or_insert_with(|| {
            let now = tokio::time::Instant::now();
            (now, Box::pin(tokio::time::sleep_until(now)))
        });
        let start = *start;
        loop {
            if self.next > sh.cfg.updates {
                if self.buf.is_empty() {
                    return Poll::Pending; // all sent: stay open
                }
                break;
            }
            let due = start + interval * (self.next - 1) as u32;
            let now = tokio::time::Instant::now();
            if due > now && self.buf.is_empty() {
                sleep.as_mut().reset(due);
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                continue;
            }
            if due > now {
                break;
            }
            let k = self.next;
            let i = (k - 1) % sh.cfg.pods;
            // One allocation per paced event (the buffer is handed off whole below).
            let tpl = sh.template(self.shape);
            self.buf.reserve(tpl.max_len());
            self.buf.extend_from_slice(br#"{"type":"MODIFIED","object":"#);
            // Stamped when written (the event leaves the server now). Stamping the due time
            // instead would add the pacing timer's 1 ms granularity to every figure; the price is
            // that a client too slow to read on time is credited with the wait before the write.
            tpl.write(&mut self.buf, i, sh.cfg.list_rv + k, micros_now(), Version { update: k, watched: true });
            self.buf.extend_from_slice(b"}\n");
            self.next += 1;
            if self.buf.len() >= CHUNK {
                break;
            }
        }
        let chunk = self.buf.split().freeze();
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_splices_valid_pods() {
        let t = Template::new(Shape::Pod);
        let mut b = BytesMut::new();
        t.write(&mut b, 42, 1234, 7, Version { update: 0, watched: false });
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["metadata"]["name"], "bench-0000042");
        assert_eq!(v["metadata"]["resourceVersion"], "1234");
        assert_eq!(v["metadata"]["labels"]["app"], "app-42");
        assert_eq!(v["metadata"]["labels"]["generation"], "7");
        assert!(v.get("kind").is_none(), "list items carry no kind");
        assert!(b.len() > 4000, "W1 pods are ~4.4 KB: {}", b.len());
    }

    /// Metadata-only clients get each pod's metadata as `PartialObjectMetadata`, typed in lists
    /// and watch events alike.
    #[test]
    fn metadata_template_writes_partial_object_metadata() {
        let t = Template::new(Shape::Metadata);
        for watched in [false, true] {
            let mut b = BytesMut::new();
            t.write(&mut b, 42, 1234, 7, Version { update: 3, watched });
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            assert_eq!(
                (v["kind"].as_str(), v["apiVersion"].as_str()),
                (Some("PartialObjectMetadata"), Some("meta.k8s.io/v1"))
            );
            assert_eq!(v["metadata"]["name"], "bench-0000042");
            assert_eq!(v["metadata"]["labels"]["generation"], "7");
            assert_eq!(v.as_object().unwrap().len(), 3, "kind, apiVersion and metadata only");
        }
    }

    /// Watched objects carry kind and apiVersion; updates move times; some change the status
    /// message's length by 10–500 bytes, growing and shrinking the pod.
    #[test]
    fn events_have_kube_apiservers_shape() {
        let t = Template::new(Shape::Pod);
        let pod = |update: u64, watched: bool| {
            let mut b = BytesMut::new();
            // resourceVersion and generation fixed: only what the update shape moves differs.
            t.write(&mut b, 42, 1234, 7, Version { update, watched });
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            (v, b.len())
        };
        let (listed, listed_len) = pod(0, false);
        let (first, _) = pod(1, true);
        assert_eq!((first["kind"].as_str(), first["apiVersion"].as_str()), (Some("Pod"), Some("v1")));
        let mf_time =
            |v: &serde_json::Value| v["metadata"]["managedFields"].as_array().unwrap().last().unwrap()["time"].clone();
        assert_ne!(mf_time(&listed), mf_time(&first));
        let ready = |v: &serde_json::Value| {
            v["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap()["lastTransitionTime"].clone()
        };
        assert_ne!(ready(&listed), ready(&pod(4, true).0));
        let deltas: Vec<i64> = (1..=1000).map(|k| pod(k, false).1 as i64 - listed_len as i64).collect();
        let changed = deltas.iter().filter(|d| **d != 0).count();
        assert!((200..=400).contains(&changed), "about three updates in ten change the size: {changed}");
        assert!(deltas.iter().any(|d| *d >= 300) && deltas.iter().any(|d| *d < 0), "grows by hundreds and shrinks");
        assert!(deltas.iter().all(|d| d.abs() <= MAX_MESSAGE as i64), "{deltas:?}");
    }
}

#[cfg(test)]
mod spawn_tests {
    use super::*;
    use std::io::{Read, Write};

    /// `spawn` serves from its own thread, without any runtime on the caller's side, and
    /// dropping the handle stops the server (the port no longer accepts connections).
    #[test]
    fn spawned_server_serves_from_its_own_thread_until_dropped() {
        let s = W1Server::spawn(W1Config { pods: 3, updates: 0, list_rv: 1000, rate: None }, "default").unwrap();
        let addr = s.addr();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("\"kind\":\"PodList\"") && got.contains("bench-0000002"), "{got}");
        assert!(!got.contains("\"kind\":\"Pod\","), "list items carry no kind: {got}");
        drop(s);
        assert!(std::net::TcpStream::connect(addr).is_err(), "the server still accepts connections after drop");
    }
}

#[cfg(test)]
mod paced_tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn watch_events(cfg: W1Config, query: &str, want: usize) -> String {
        let s = W1Server::start(cfg, "default").await.unwrap();
        let mut c = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
        let req = format!("GET /api/v1/namespaces/default/pods?{query} HTTP/1.1\r\nHost: x\r\n\r\n");
        c.write_all(req.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while String::from_utf8_lossy(&got).matches("\"MODIFIED\"").count() < want {
            let n = tokio::time::timeout(std::time::Duration::from_secs(5), c.read(&mut buf))
                .await
                .expect("events arrive")
                .unwrap();
            assert!(n > 0, "stream ended early");
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn paced_watch_streams_every_event_with_send_times() {
        let cfg = W1Config { pods: 10, updates: 20, list_rv: 1000, rate: Some(2000) };
        let text = watch_events(cfg, "watch=true&resourceVersion=1000", 20).await;
        assert!(text.contains("\"resourceVersion\":\"1020\""));
    }

    #[tokio::test]
    async fn unpaced_watch_streams_every_event() {
        let cfg = W1Config { pods: 10, updates: 20, list_rv: 1000, rate: None };
        let text = watch_events(cfg, "watch=true&resourceVersion=1000", 20).await;
        assert!(text.contains("\"resourceVersion\":\"1020\""));
    }
}

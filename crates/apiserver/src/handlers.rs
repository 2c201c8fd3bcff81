//! Request routing and the REST handlers (discovery, CRUD, list, watch).
//!
//! Invariants: every request ends in exactly one response; every failure is a
//! `Status` body (never a panic, never a half-applied write: the store
//! validates completely before it mutates). Faults, latency and auth are
//! applied before routing.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use parking_lot::Mutex;
use serde_json::Value;

use crate::apply::ApplyOpts;
use crate::body::{self, Body, error, json_bytes, json_value};
use crate::controls::{Controls, ShutdownAnswer, Verb};
use crate::discovery;
use crate::field_validation::{self, FieldValidation};
use crate::list::{self, ListOptions};
use crate::managed_fields;
use crate::media::{BodyFormat, JsonBody};
use crate::negotiation::Accept;
use crate::protobuf;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{PatchType, Store, Target, WriteOpts};
use crate::warning;
use crate::watch::{self, WatchParams, WatchStart};
use crate::write_options::{self, WriteKind};

/// Static server settings used by handlers.
#[derive(Debug, Clone)]
pub struct Config {
    /// Required bearer token, if any.
    pub token: Option<String>,
    /// Maximum request body size in bytes.
    pub body_limit: usize,
    /// Periodic bookmark interval.
    pub bookmark_interval: Duration,
    /// Final bookmark lead time before a watch's deadline.
    pub bookmark_before_timeout: Duration,
    /// Watch timeout when the client gives none is random in `[t, 2t)`.
    pub min_request_timeout: Duration,
    /// How long to wait for a future resourceVersion before 504.
    pub rv_wait: Duration,
    /// Target size of watch chunks. The default, 64 KiB, matches what an HTTP/1.1 connection
    /// queues (`server::HTTP1_MAX_BUF`) and keeps a chunk's buffer (the target plus room for
    /// one object) below glibc's mmap threshold (128 KiB, where the CLI fixes it): a buffer above
    /// it is mapped and unmapped for every chunk, and its pages faulted in each time.
    pub chunk_bytes: usize,
    /// Whether the proxy subresources verify an `https` backend's certificate (against the
    /// system's roots); kube-apiserver's proxy transport does not.
    pub verify_proxied_tls: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token: None,
            body_limit: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            bookmark_before_timeout: Duration::from_secs(2),
            min_request_timeout: Duration::from_secs(1800),
            rv_wait: Duration::from_secs(3),
            chunk_bytes: 64 * 1024,
            verify_proxied_tls: true,
        }
    }
}

/// State shared by all connections of a server (survives restarts).
pub struct Shared {
    /// Objects and history.
    pub store: Arc<Store>,
    /// Test controls.
    pub controls: Arc<Controls>,
    /// Settings.
    pub cfg: Config,
    /// `host:port` advertised in `/api`.
    pub server_address: Mutex<String>,
    /// The OpenAPI documents of the registry they were built for (built on first request, and
    /// again after the registry changes).
    pub(crate) openapi: Mutex<Option<(Arc<crate::registry::Registry>, Arc<crate::openapi::OpenApi>)>>,
    /// Signs and checks service account tokens.
    pub(crate) signer: crate::service_account_token::TokenSigner,
    /// Whether the server serves HTTPS.
    pub(crate) secure: bool,
    /// The metrics served at `/metrics`.
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
    /// Classifies requests under the FlowSchemas for their answers' headers.
    pub(crate) priority_and_fairness: crate::priority_and_fairness::Classifier,
    /// The storage health check's last answer and when it was asked (see [`storage_health`]).
    pub(crate) storage_health: tokio::sync::Mutex<Option<(tokio::time::Instant, Option<String>)>>,
}

/// Whether the storage answers, as kube's etcd health check asks it: at most once a second
/// (probes meanwhile get the last answer, as kube's rate-limited check does), within
/// [`STORAGE_CHECK_TIMEOUT`]; None when it does, or kube's words for why not.
async fn storage_health(shared: &Shared) -> Option<String> {
    let mut last = shared.storage_health.lock().await;
    if let Some((at, answer)) = last.as_ref()
        && at.elapsed() < STORAGE_CHECK_TIMEOUT / 2
    {
        return answer.clone();
    }
    let answer = match tokio::time::timeout(STORAGE_CHECK_TIMEOUT, shared.store.storage().current_revision()).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("error getting data from etcd: {e}")),
        Err(_) => Some("error getting data from etcd: context deadline exceeded".to_string()),
    };
    *last = Some((tokio::time::Instant::now(), answer.clone()));
    answer
}

impl Shared {
    /// The OpenAPI documents of the registry.
    pub(crate) fn openapi(&self) -> Arc<crate::openapi::OpenApi> {
        let reg = self.store.registry();
        let mut cached = self.openapi.lock();
        match &*cached {
            Some((built_for, docs)) if Arc::ptr_eq(built_for, &reg) => docs.clone(),
            _ => {
                let docs = Arc::new(crate::openapi::OpenApi::build(&reg));
                *cached = Some((reg, docs.clone()));
                docs
            }
        }
    }
}

/// Paths kube-apiserver answers even while it shuts down.
const EXEMPT_FROM_SHUTDOWN: &[&str] = &["/readyz", "/livez", "/healthz", "/version", "/metrics"];

/// kube-apiserver's answer to new requests once it shuts down.
fn shutting_down(answer: ShutdownAnswer) -> Response<Body> {
    match answer {
        ShutdownAnswer::ServiceUnavailable => {
            let mut e = ApiError::new(503, "ServiceUnavailable", "apiserver is shutting down");
            e.retry_after = Some(1);
            body::error(&e)
        }
        ShutdownAnswer::RetryAfter => {
            let mut r = body::respond(
                429,
                "text/plain; charset=utf-8",
                Body::Full(Some(Bytes::from_static(b"The apiserver is shutting down, please try again later.\n"))),
            );
            r.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from_static("5"));
            r.headers_mut().insert(header::CONNECTION, http::HeaderValue::from_static("close"));
            r
        }
    }
}

/// Handles one request; its answer carries the request's `Audit-ID` (a new one when it has
/// none), as kube-apiserver echoes it, before any a proxied backend gave — but for a switch of
/// protocols, whose answer is written by the server that takes the connection over.
pub async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let audit_id = req.headers().get("audit-id").filter(|v| !v.is_empty()).cloned();
    let mut r = handle_request(shared, req).await;
    if written_by_another(&r) {
        return r;
    }
    let id = audit_id.or_else(|| http::HeaderValue::from_str(&crate::object::new_uid()).ok());
    if let Some(id) = id {
        let headers = r.headers_mut();
        let backends: Vec<http::HeaderValue> = headers.get_all("audit-id").iter().cloned().collect();
        headers.insert("audit-id", id);
        for v in backends {
            headers.append("audit-id", v);
        }
    }
    r
}

/// Whether the answer is written by the server that takes the connection over (a switch of
/// protocols, or a WebSocket handshake's refusal), which writes none of the filters' headers.
fn written_by_another(r: &Response<Body>) -> bool {
    r.status() == http::StatusCode::SWITCHING_PROTOCOLS || r.extensions().get::<crate::websocket::Refusal>().is_some()
}

async fn handle_request(shared: Arc<Shared>, mut req: Request<Incoming>) -> Response<Body> {
    let exempt = EXEMPT_FROM_SHUTDOWN.contains(&req.uri().path());
    if let Some(answer) = shared.controls.shutting_down()
        && !exempt
    {
        return shutting_down(answer);
    }
    // The latency is read before the request counts as in flight, so whoever sees it in flight
    // knows the latency it runs with.
    let lat = shared.controls.latency();
    let _in_flight = shared.controls.request_started();
    if !lat.is_zero() {
        tokio::time::sleep(lat).await;
    }
    if let Some(e) = shared.controls.take_fault() {
        return error(&e);
    }
    // The path's segments and the query, read once for the request's attributes and its route.
    let segs: Vec<String> =
        req.uri().path().split('/').filter(|s| !s.is_empty()).map(body::percent_decode_path).collect();
    let query = body::parse_query(req.uri().query().unwrap_or(""));
    let asked = {
        let path = body::percent_decode_path(req.uri().path());
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        crate::request_info::read(req.method().as_str(), &path, &segs, &query)
    };
    // The media types the client takes: refusals from here on are written in the one it
    // prefers, as kube's filters negotiate them.
    let accept = Accept::parse(req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    // Read once: the route finds the renderings asked for with the request.
    req.extensions_mut().insert(accept);
    let refuse = async |e: ApiError| crate::negotiation::respond(accept, error(&e)).await;
    // The request's deadline, read before its user is (kube's request deadline filter, which
    // wraps authentication and everything after it).
    let until = match deadline(&asked, &query) {
        Ok(d) => d.map(|d| tokio::time::Instant::now() + d),
        Err(e) => return refuse(e).await,
    };
    let header_bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    // A WebSocket's token may also come as a subprotocol (browsers set no headers).
    let protocol_bearer = crate::websocket::protocol_bearer(req.headers());
    let protocol_token = protocol_bearer.as_ref().ok().and_then(Option::as_ref).map(|(t, _)| t.as_str());
    // The tokens are tried in kube's order, the header's then the subprotocol's, until one
    // authenticates: the server's own token, or a service account token of this server's issuer
    // (one that no longer authenticates fails, as kube-apiserver refuses it). Other tokens are
    // not the server's to judge.
    let mut server_token = false;
    let mut account = None;
    let mut failed = protocol_bearer.is_err();
    let mut by_protocol = false;
    for (token, from_protocol) in [(header_bearer, false), (protocol_token, true)] {
        let Some(t) = token else { continue };
        if shared.cfg.token.as_deref() == Some(t) {
            server_token = true;
        } else if t.matches('.').count() == 2 {
            match within(until, crate::token_request::authenticate(&shared.store, &shared.signer, t, &[])).await {
                Ok(Ok(Some((user, _)))) => account = Some(user),
                Ok(Ok(None)) => {}
                Ok(Err(_)) => failed = true,
                Err(_) => return request_timed_out(),
            }
        }
        if server_token || account.is_some() {
            by_protocol = from_protocol;
            break;
        }
    }
    let authenticated = server_token || account.is_some();
    if !authenticated && (failed || (shared.cfg.token.is_some() && !public_info(&req))) {
        return refuse(ApiError::unauthorized()).await;
    }
    // Unless the header's token authenticated, the subprotocol's is taken out of the
    // subprotocols the WebSocket answers, as kube's authenticator takes it out once it
    // authenticates.
    if let Ok(Some((_, others))) = &protocol_bearer
        && (by_protocol || !authenticated)
    {
        match http::HeaderValue::from_str(others) {
            Ok(v) => req.headers_mut().insert(header::SEC_WEBSOCKET_PROTOCOL, v),
            Err(_) => req.headers_mut().remove(header::SEC_WEBSOCKET_PROTOCOL),
        };
    }
    let impersonated = match crate::requester::impersonated(req.headers()) {
        Ok(user) => user,
        Err(e) => return refuse(e).await,
    };
    if let Err(e) = authorize_impersonation(&shared, &req, account.as_ref(), impersonated.as_ref()) {
        return refuse(e).await;
    }
    // Classified as kube's priority-and-fairness filter classifies it, after impersonation and
    // before authorization: refusals from here on carry the headers too.
    let classified = {
        let anonymous = shared.cfg.token.is_some() && !server_token && account.is_none();
        let requester = match (&impersonated, &account) {
            (Some(u), _) | (None, Some(u)) => std::borrow::Cow::Borrowed(u),
            (None, None) if anonymous => std::borrow::Cow::Owned(crate::requester::anonymous()),
            (None, None) => std::borrow::Cow::Owned(crate::requester::server_user()),
        };
        shared.priority_and_fairness.classify(&shared.store, &requester, &asked)
    };
    let mut r = authorized_request(shared, req, asked, (account, impersonated), (segs, query), until).await;
    // kube's timeout filter answers from outside priority and fairness.
    let timed_out = r.extensions().get::<TimedOut>().is_some();
    if let Some(c) = classified.filter(|_| !timed_out && !written_by_another(&r)) {
        let headers = r.headers_mut();
        for (name, uid) in [
            (crate::priority_and_fairness::FLOW_SCHEMA_HEADER, c.flow_schema_uid),
            (crate::priority_and_fairness::PRIORITY_LEVEL_HEADER, c.priority_level_uid),
        ] {
            if let Ok(v) = http::HeaderValue::from_str(&uid) {
                headers.insert(name, v);
            }
        }
    }
    r
}

/// Serves a request whose user is known and whose impersonation is allowed: authorizes it, then
/// answers it.
async fn authorized_request(
    shared: Arc<Shared>,
    mut req: Request<Incoming>,
    asked: crate::request_info::RequestInfo,
    (account, impersonated): (Option<serde_json::Value>, Option<serde_json::Value>),
    (segs, query): (Vec<String>, Vec<(String, String)>),
    until: Option<tokio::time::Instant>,
) -> Response<Body> {
    let accept = accept_of(&req);
    let refuse = async |e: ApiError| crate::negotiation::respond(accept, error(&e)).await;
    if let Err(e) = authorize(&shared, &asked, account.as_ref(), impersonated.as_ref()) {
        return refuse(e).await;
    }
    let user = impersonated.or(account);
    // The kinds as the definitions this server wrote make them.
    if within(until, shared.store.definitions_view()).await.is_err() {
        return request_timed_out();
    }
    // A request for a resource the server serves is counted (kube instruments its routes).
    let served_resource =
        asked.resource_request && shared.store.registry().find(&asked.group, &asked.version, &asked.resource).is_some();
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let mut record =
        served_resource.then(|| shared.metrics.begin(req.method().as_str(), &asked, &query, content_type)).flatten();
    // The OpenAPI documents negotiate their own media types; the issuer's documents, the
    // index, the version, the health checks and the metrics are written as they are, whatever
    // the client accepts.
    let path = req.uri().path();
    let index = ["/", "/index.html"].contains(&path);
    let own_media = ["/openapi/", "/.well-known/", "/openid/"].iter().any(|p| path.starts_with(p))
        || ["/metrics", "/version", "/version/"].contains(&path)
        || is_health_check(path)
        || index;
    // A proxy's answer is its backend's, passed on as it comes: kube routes proxies as
    // producing any media type and writes their answers straight out.
    let proxied = asked.resource_request && asked.subresource == crate::proxy_subresource::SUBRESOURCE;
    if !accept.takes_any() && !own_media && !proxied {
        if let Some(record) = record.as_mut() {
            record.answered(406);
        }
        return error(&ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ));
    }
    // Documents served as they are (OpenAPI, the issuer's, the index) are not indented again
    // nor compressed as API answers are, as kube serves their bytes; `/version` always is.
    let raw_document =
        ["/openapi/", "/.well-known/", "/openid/"].iter().any(|p| req.uri().path().starts_with(p)) || index;
    let pretty =
        !raw_document && (req.uri().path() == "/version" || crate::pretty::asked(req.uri().query(), req.headers()));
    let gzip = !raw_document && req.uri().path() != "/metrics" && crate::gzip::accepted(req.headers());
    // A watch asking for a WebSocket is served as any other; its stream is then carried over
    // the WebSocket.
    let websocket = crate::watch_websocket::Handshake::of(&mut req, &asked.verb);
    // The request's future is large (every write path is in it): on the heap, not on the stack
    // of whichever thread polls it.
    let served = crate::admission_options::scope(warning::collect(Box::pin(route(&shared, req, segs, query))));
    let served = crate::requester::scope(user, served);
    // Past its deadline the request is cancelled where it stands (as kube cancels the request's
    // context: a write not yet committed is not made) and answered 504.
    let (answer, warnings) = match within(until, served).await {
        Ok(done) => done,
        Err(_) => {
            if let Some(mut record) = record {
                record.answered(504);
            }
            return request_timed_out();
        }
    };
    let passed_on = proxied && answer.is_ok();
    let mut r = match answer {
        Ok(r) => r,
        Err(e) => error(&e),
    };
    warning::attach(&mut r, warnings);
    // A proxy's answer is its backend's, passed on as it comes (kube writes it straight out).
    let r = if passed_on {
        r
    } else {
        let r = if own_media {
            r
        } else {
            crate::negotiation::respond(accept, protobuf::negotiate::respond(accept, r)).await
        };
        let r = if pretty { crate::pretty::answer(r).await } else { r };
        if gzip { crate::gzip::compress(r) } else { r }
    };
    let r = match websocket {
        Some(handshake) => handshake.serve(r, &mut record),
        None => r,
    };
    // The request is over when its body is sent (a list's is encoded as it is sent, a watch's
    // streams until it ends).
    match record {
        Some(mut record) => {
            record.answered(r.status().as_u16());
            match r.body() {
                Body::Full(_) => r,
                _ => r.map(|b| Body::Tracked(Box::new((b, record)))),
            }
        }
        None => r,
    }
}

/// The media types and renderings a request's `Accept` header takes, as `handle_request`
/// read them.
fn accept_of(req: &Request<Incoming>) -> Accept {
    req.extensions()
        .get::<Accept>()
        .copied()
        .unwrap_or_else(|| Accept::parse(req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok())))
}

/// `work` if it ends before `until` (none: whenever it ends).
async fn within<F: std::future::Future>(
    until: Option<tokio::time::Instant>,
    work: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    match until {
        None => Ok(work.await),
        Some(t) => tokio::time::timeout_at(t, work).await,
    }
}

/// The most a request's `timeout` may ask (kube-apiserver's `--request-timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The deadline of a request, as kube's request deadline filter sets it: none for long-running
/// requests (watches, proxies, a pod's log, exec, attach and port forwarding); otherwise the
/// `timeout` parameter's, where a value Go's `time.ParseDuration` refuses is a 400 and one not
/// above 0, past the limit or absent (an empty value is absent) is the limit.
fn deadline(
    asked: &crate::request_info::RequestInfo,
    query: &[(String, String)],
) -> Result<Option<Duration>, ApiError> {
    if asked.is_long_running() {
        return Ok(None);
    }
    let Some((_, text)) = query.iter().find(|(k, _)| k == "timeout").filter(|(_, v)| !v.is_empty()) else {
        return Ok(Some(REQUEST_TIMEOUT));
    };
    let asked = crate::go_duration::parse(text)
        .map_err(|e| ApiError::bad_request(format!("invalid timeout specified in the request URL - {e}")))?;
    let asked = u64::try_from(asked).ok().filter(|n| *n > 0).map(Duration::from_nanos);
    Ok(Some(asked.filter(|d| *d < REQUEST_TIMEOUT).unwrap_or(REQUEST_TIMEOUT)))
}

/// kube's timeout filter's answer: a Status written by Go's plain JSON encoder (no kind or
/// apiVersion, a trailing newline), its type sniffed as text.
fn request_timed_out() -> Response<Body> {
    const TIMED_OUT: &[u8] =
        b"{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete \
within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n";
    let mut r = body::respond(504, "text/plain; charset=utf-8", Body::Full(Some(Bytes::from_static(TIMED_OUT))));
    r.extensions_mut().insert(TimedOut);
    r
}

/// Marks the answer of kube's timeout filter.
#[derive(Clone, Copy)]
struct TimedOut;

/// Whether the authenticated `account` may impersonate whom the request names (kube's
/// impersonation filter, before priority and fairness).
fn authorize_impersonation(
    shared: &Shared,
    req: &Request<Incoming>,
    account: Option<&serde_json::Value>,
    impersonated: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    let mode = shared.store.authorization();
    if mode == crate::AuthorizationMode::AlwaysAllow {
        return Ok(());
    }
    if let (Some(account), Some(_)) = (account, impersonated) {
        let requester = crate::rbac::User::of(account);
        for asked in crate::requester::impersonation_requests(req.headers()) {
            crate::authorizer::check(shared.store.cache(), mode, &requester, &asked)?;
        }
    }
    Ok(())
}

/// Whether the request's user may do what it asks (the server's own user and a server without
/// credentials may do anything).
fn authorize(
    shared: &Shared,
    asked: &crate::request_info::RequestInfo,
    account: Option<&serde_json::Value>,
    impersonated: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    let mode = shared.store.authorization();
    let Some(user) = impersonated.or(account).filter(|_| mode != crate::AuthorizationMode::AlwaysAllow) else {
        return Ok(());
    };
    crate::authorizer::check(shared.store.cache(), mode, &crate::rbac::User::of(user), asked)
}

/// What kube-apiserver lets anyone read (its `system:public-info-viewer` role): the health
/// endpoints (not their single checks) and the version, so that probes need no credentials.
fn public_info(req: &Request<Incoming>) -> bool {
    req.method() == Method::GET
        && ["/healthz", "/livez", "/readyz", "/version", "/version/"].contains(&req.uri().path())
}

/// A health check: its name and, when it fails, why.
type Check = (&'static str, Option<String>);

/// kube-apiserver v1.35's post-start hooks, in the order its health endpoints list them: each
/// has run once the server answers (their work is done before it does, or by its controllers).
const POST_START_HOOKS: [&str; 30] = [
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/storage-readiness",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/aggregator-reload-proxy-client-cert",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
];

/// The health endpoints, each with the checks it runs in kube's order: `ping`, `log`, `etcd`,
/// for `/readyz` `etcd-readiness` and `informer-sync`, the post-start hooks, and for `/readyz`
/// `shutdown` (the index lists them too).
pub(crate) const HEALTH_ENDPOINTS: [&str; 3] = ["healthz", "livez", "readyz"];

/// The checks of the health endpoint `endpoint` (none for another name).
pub(crate) fn health_checks(endpoint: &str) -> Vec<&'static str> {
    let (before, after): (&[&'static str], &[&'static str]) = match endpoint {
        "healthz" | "livez" => (&["ping", "log", "etcd"], &[]),
        "readyz" => (&["ping", "log", "etcd", "etcd-readiness", "informer-sync"], &["shutdown"]),
        _ => return Vec::new(),
    };
    before.iter().chain(&POST_START_HOOKS).chain(after).copied().collect()
}

/// How long the storage check waits for an answer (kube's `DefaultHealthcheckTimeout`).
const STORAGE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether `path` is a health endpoint's or one of its checks'.
fn is_health_check(path: &str) -> bool {
    let Some(path) = path.strip_prefix('/') else { return false };
    HEALTH_ENDPOINTS.iter().any(|e| path.strip_prefix(e).is_some_and(|r| r.is_empty() || r.starts_with('/')))
}

/// kube-apiserver's health endpoints (`/healthz`, `/livez`, `/readyz`): `ok`, or with
/// `?verbose` each check and `<endpoint> check passed`; a failure lists every check (the failed
/// ones `[-]<name> failed: reason withheld`) and `<endpoint> check failed`, 500; one check asked
/// by its path (`/readyz/ping`) answers `ok`, or 500 with its reason; an unknown one 404.
fn health(
    endpoint: &str,
    checks: &[Check],
    (only, excluded): (Option<&str>, &[&str]),
    verbose: bool,
) -> Response<Body> {
    let plain = |code: u16, s: String| body::respond(code, "text/plain; charset=utf-8", Body::Full(Some(s.into())));
    if let Some(name) = only {
        return match checks.iter().find(|(n, _)| *n == name) {
            Some((_, None)) => plain(200, "ok".into()),
            Some((_, Some(why))) => plain(500, format!("internal server error: {why}\n")),
            None => plain(404, "404 page not found\n".into()),
        };
    }
    let is_excluded = |name: &str| excluded.contains(&name);
    let failed = checks.iter().any(|(name, why)| why.is_some() && !is_excluded(name));
    if !failed && !verbose {
        return plain(200, "ok".into());
    }
    let mut out = String::new();
    for (name, why) in checks {
        out.push_str(&match why {
            _ if is_excluded(name) => format!("[+]{name} excluded: ok\n"),
            None => format!("[+]{name} ok\n"),
            Some(_) => format!("[-]{name} failed: reason withheld\n"),
        });
    }
    // Excluded names that are no check, sorted and quoted as kube lists them.
    let mut unknown: Vec<&str> = excluded.iter().copied().filter(|e| !checks.iter().any(|(n, _)| n == e)).collect();
    unknown.sort_unstable();
    unknown.dedup();
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|u| crate::pod_security_checks::go_quote(u)).collect();
        out.push_str(&format!("warn: some health checks cannot be excluded: no matches for {}\n", quoted.join(",")));
    }
    match failed {
        true => plain(500, format!("{out}{endpoint} check failed\n")),
        false => plain(200, format!("{out}{endpoint} check passed\n")),
    }
}

/// Routes a request by its (percent-decoded) path segments and its query.
async fn route(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    segs: Vec<String>,
    query: Vec<(String, String)>,
) -> Result<Response<Body>, ApiError> {
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let reg = shared.store.registry().clone();
    let get_only = |r: Result<Response<Body>, ApiError>| {
        if req.method() == Method::GET { r } else { Err(ApiError::method_not_allowed()) }
    };
    match segs.as_slice() {
        ["version"] => get_only(Ok(json_bytes(200, discovery::VERSION))),
        // kube's index answers any method (its authorization reads the verb).
        [] | ["index.html"] => {
            let doc = serde_json::to_vec_pretty(&discovery::index(&reg)).unwrap_or_default();
            Ok(json_bytes(200, doc))
        }
        ["metrics"] => {
            let doc = shared.metrics.encode(shared.store.cache().object_counts());
            let r = body::respond(200, crate::metrics::MEDIA_TYPE, Body::Full(Some(doc.into())));
            get_only(Ok(if crate::gzip::metrics_accepted(req.headers()) { crate::gzip::whole(r) } else { r }))
        }
        [endpoint @ ("healthz" | "livez" | "readyz"), check @ ..] => {
            let names = health_checks(endpoint);
            let only = (!check.is_empty()).then(|| check.join("/"));
            // kube's paths are exact: `/readyz/`, `/readyz//etcd` are none of them.
            let exact = match &only {
                Some(c) => format!("/{endpoint}/{c}"),
                None => format!("/{endpoint}"),
            };
            if req.uri().path() != exact {
                return Ok(page_not_found());
            }
            let excluded: Vec<&str> = query.iter().filter(|(k, _)| k == "exclude").map(|(_, v)| v.as_str()).collect();
            let judged = |n: &str| match &only {
                Some(c) => c == n,
                None => !excluded.contains(&n),
            };
            // The storage is asked only for a check of it that is judged.
            let asks_storage = names.iter().any(|n| judged(n) && matches!(*n, "etcd" | "etcd-readiness"));
            let storage = if asks_storage { storage_health(shared).await } else { None };
            let cache_ready = shared.store.cache().readiness() == crate::cache::Readiness::Ready;
            let failing = |name: &str| match name {
                "etcd" | "etcd-readiness" => storage.clone(),
                "informer-sync" | "poststarthook/storage-readiness" => {
                    (!cache_ready).then(|| "storage is (re)initializing".to_string())
                }
                "shutdown" => shared.controls.is_not_ready().then(|| "process is shutting down".to_string()),
                _ => None,
            };
            let checks: Vec<Check> = names.iter().map(|n| (*n, failing(n))).collect();
            let verbose = query.iter().any(|(k, _)| k == "verbose");
            Ok(health(endpoint, &checks, (only.as_deref(), &excluded), verbose))
        }
        [".well-known", "openid-configuration"] => {
            let scheme = if shared.secure { "https" } else { "http" };
            // A server bound to every address is named as the client reached it.
            let bound = shared.server_address.lock().clone();
            let unspecified = bound.parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_unspecified());
            let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).filter(|_| unspecified);
            let base = format!("{scheme}://{}", host.unwrap_or(&bound));
            let doc = crate::oidc_discovery::configuration(&base, shared.signer.algorithm());
            get_only(Ok(crate::oidc_discovery::respond(&doc, "application/json")))
        }
        ["openid", "v1", "jwks"] => {
            let keys = crate::oidc_discovery::key_set(&shared.signer);
            get_only(Ok(crate::oidc_discovery::respond(&keys, "application/jwk-set+json")))
        }
        ["openapi", "v2"] => get_only(Ok(crate::gzip::document(req.headers(), shared.openapi().v2(req.headers())))),
        ["openapi", "v3"] => get_only(Ok(shared.openapi().index())),
        ["openapi", "v3", gv @ ..] => {
            let hash = query.iter().find(|(k, _)| k == "hash").map(|(_, v)| v.as_str());
            get_only(shared.openapi().group_version(&gv.join("/"), hash, req.headers()))
        }
        ["api"] | ["apis"] if let Some(media) = accept_of(&req).aggregated() => {
            let doc = discovery::aggregated(&reg, segs.len() == 1 && segs[0] == "api");
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            // kube's ETag: the document's SHA-512 in upper-case hex; a client holding it gets 304.
            let etag = {
                use sha2::Digest;
                let sum = sha2::Sha512::digest(&bytes);
                format!("\"{}\"", sum.iter().map(|b| format!("{b:02X}")).collect::<String>())
            };
            let cached = req.headers().get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes());
            let (content_type, bytes) = match media {
                crate::negotiation::Media::Yaml => {
                    (discovery::AGGREGATED_YAML, crate::yaml_emit::encode(&doc).unwrap_or_default().into_bytes())
                }
                _ => (discovery::AGGREGATED, bytes),
            };
            let mut r = match cached {
                true => body::respond(304, content_type, Body::Full(None)),
                false => body::respond(200, content_type, Body::Full(Some(Bytes::from(bytes)))),
            };
            let h = r.headers_mut();
            h.insert(header::VARY, http::HeaderValue::from_static("Accept"));
            h.insert(header::CACHE_CONTROL, http::HeaderValue::from_static("public"));
            if let Ok(v) = http::HeaderValue::from_str(&etag) {
                h.insert(header::ETAG, v);
            }
            get_only(Ok(r))
        }
        ["api"] => get_only(Ok(json_value(200, &discovery::api_versions(&shared.server_address.lock())))),
        ["api", "v1"] => get_only(
            discovery::api_resource_list(&reg, "", "v1").map(|v| json_value(200, &v)).ok_or_else(ApiError::no_route),
        ),
        ["apis"] => get_only(Ok(json_value(200, &discovery::api_group_list(&reg)))),
        ["apis", g] => get_only(Ok(discovery::api_group(&reg, g).map_or_else(page_not_found, |v| json_value(200, &v)))),
        ["apis", g, v] => {
            get_only(Ok(discovery::api_resource_list(&reg, g, v).map_or_else(page_not_found, |v| json_value(200, &v))))
        }
        ["api", "v1", rest @ ..] => {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            resource_request(shared, "", "v1", &rest, query, req).await
        }
        ["apis", g, v, rest @ ..] => {
            let (g, v) = (g.to_string(), v.to_string());
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            resource_request(shared, &g, &v, &rest, query, req).await
        }
        _ => Ok(page_not_found()),
    }
}

/// kube-apiserver's answer to a path no API serves — an unknown path, group or version, or a
/// custom resource no definition serves: Go's `http.NotFound`, plain text (a resource missing
/// from a built-in group-version is a Status instead, go-restful's).
fn page_not_found() -> Response<Body> {
    let mut r =
        body::respond(404, "text/plain; charset=utf-8", Body::Full(Some(Bytes::from_static(b"404 page not found\n"))));
    r.headers_mut().insert("x-content-type-options", http::HeaderValue::from_static("nosniff"));
    r
}

/// A DELETE's options: its `DeleteOptions` body (JSON, YAML or protobuf, whatever the
/// resource: kube reads them with meta.k8s.io's codecs; another media type is kube's 415) or,
/// without one, its query; recorded for admission as kube passes them on.
async fn delete_options(
    shared: &Shared,
    req: Request<Incoming>,
    query: &[(String, String)],
) -> Result<crate::delete_options::DeleteOpts, ApiError> {
    let media = media_type(&req);
    let b = read_body(shared, req).await?;
    let opts: Value = if b.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match media.as_str() {
            protobuf::MEDIA_TYPE => protobuf::decode_delete_options(&b)?,
            "application/yaml" => {
                let bad =
                    |e: &dyn std::fmt::Display| ApiError::bad_request(format!("error converting YAML to JSON: {e}"));
                let text = std::str::from_utf8(&b).map_err(|e| bad(&e))?;
                crate::yaml::decode(text).map_err(|e| bad(&e))?.value
            }
            "" | "*/*" | "application/json" => parse_json(&b)?,
            _ => {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
                ));
            }
        }
    };
    crate::admission_options::from_delete_body(&opts);
    crate::delete_options::DeleteOpts::from_request(query, &opts)
}

async fn read_body(shared: &Shared, req: Request<Incoming>) -> Result<Bytes, ApiError> {
    let limit = shared.cfg.body_limit;
    if let Some(len) =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok())
        && len > limit
    {
        return Err(ApiError::too_large_body(limit));
    }
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(ApiError::too_large_body(limit))
            } else {
                Err(ApiError::bad_request(format!("error reading request body: {e}")))
            }
        }
    }
}

/// The request's media type (Content-Type without parameters), lowercased.
fn media_type(req: &Request<Incoming>) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Decodes a POST or PUT body as kube-apiserver does: duplicate fields merged and unknown
/// fields dropped, each refused, warned about or passed over as `validation` says.
fn decode_object(info: &ResourceInfo, b: &JsonBody, validation: FieldValidation) -> Result<Value, ApiError> {
    let (mut v, duplicates) = field_validation::decode(&b.json).map_err(|e| unrecognized(info, &b.json, &e))?;
    crate::store::check_type_meta(info, &v, &b.json)?;
    let unknown = field_validation::prune_unknown(info, &mut v);
    if let Err(strict) = field_validation::check(info, validation, &b.yaml_duplicates, &duplicates, &unknown) {
        // Kube's decoder reports a value it cannot decode before strict decoding's errors.
        crate::store::check_decodable(info, &v)?;
        return Err(strict);
    }
    if info.custom.is_some() {
        crate::store::check_api_version(info, &v)?;
    }
    Ok(v)
}

/// kube's answer to a POST or PUT body it cannot read as JSON: for a built-in kind, the object
/// is "unrecognized", with Go's syntax error and the body's first 30 bytes (as hex unless it
/// starts as an object), as kube-apiserver's `transformDecodeError` words it.
fn unrecognized(info: &ResourceInfo, body: &[u8], e: &serde_json::Error) -> ApiError {
    let go = crate::go_json_syntax::syntax_error(body);
    let (Some(syntax), None) = (go, &info.custom) else {
        return ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"));
    };
    crate::store::unrecognized(info, &format!("couldn't get version/kind; json parse error: {syntax}"), body)
}

fn parse_json(b: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(b)
        .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))
}

async fn resource_request(
    shared: &Arc<Shared>,
    group: &str,
    version: &str,
    rest: &[String],
    query: Vec<(String, String)>,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let mut rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let mut query = query;
    // Deprecated `/api/v1/watch/...` paths: a watch whatever `watch` says; one naming an
    // object watches that object.
    let force_watch = rest.first() == Some(&"watch");
    if force_watch {
        rest.remove(0);
        query.insert(0, ("watch".into(), "true".into()));
        // kube routes these paths for GET alone, and none for a subresource.
        if *req.method() != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        let subresource = match rest.first() {
            Some(&"namespaces") if rest.len() > 2 => rest.len() > 4,
            _ => rest.len() > 2,
        };
        if subresource {
            return Err(ApiError::no_route());
        }
    }
    let (ns, parts): (Option<&str>, &[&str]) = if rest.first() == Some(&"namespaces")
        && rest.len() > 2
        && !(rest.len() == 3 && matches!(rest[2], "status" | "finalize"))
    {
        (Some(rest[1]), &rest[2..])
    } else {
        (None, &rest[..])
    };
    let (res, name, sub) = match parts {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        // A proxy's path goes on past its subresource.
        [r, n, s, ..] if *s == crate::proxy_subresource::SUBRESOURCE => (*r, Some(*n), Some(*s)),
        _ => return Err(ApiError::no_route()),
    };
    let store = shared.store.clone();
    let registry = store.registry();
    let Some(info) = registry.find(group, version, res).cloned() else {
        // A group-version of the built-in API answers go-restful's Status; any other path is
        // none of kube's routes.
        let built_in = registry.all().iter().any(|i| i.group == group && i.version == version && i.custom.is_none());
        return if built_in { Err(ApiError::no_route()) } else { Ok(page_not_found()) };
    };
    drop(registry);
    // A cluster-scoped kind has no namespaced paths; across namespaces a built-in namespaced kind
    // serves lists and watches only: kube routes no object path there, and refuses any other
    // method on the collection (405). kube's custom resource handler passes what is neither a
    // list nor a watch on, to Go's plain 404.
    let listed = matches!(*req.method(), Method::GET | Method::HEAD) && name.is_none();
    if (ns.is_some() && !info.namespaced) || (info.namespaced && ns.is_none() && !listed && !info.review) {
        if info.custom.is_some() {
            return Ok(page_not_found());
        }
        if ns.is_some() || name.is_some() {
            return Err(ApiError::no_route());
        }
        return Err(ApiError::method_not_allowed());
    }
    if let Some(w) = info.custom.as_ref().and_then(|c| c.deprecation_warning.clone()) {
        warning::record(w);
    }
    if info.review {
        // Answered, never stored: a create of the collection (in a namespace for a namespaced
        // review), nothing else.
        if parts.len() != 1 || (info.namespaced && ns.is_none()) {
            return Err(ApiError::no_route());
        }
        if *req.method() != Method::POST {
            return Err(ApiError::method_not_allowed());
        }
        let format = BodyFormat::of(&media_type(&req), &info)?;
        let params = write_options::parse(&query, WriteKind::Create)?;
        let b = format.to_json(&info, read_body(shared, req).await?)?;
        let v = decode_object(&info, &b, params.validation)?;
        if crate::token_request::is_token_reviews(&info) {
            let server_token = shared.cfg.token.as_deref();
            return Ok(json_value(201, &crate::token_request::review(&store, &shared.signer, server_token, v).await?));
        }
        if crate::binding::is_bindings(&info) {
            let dry_run = query.iter().any(|(k, v)| k == "dryRun" && !v.is_empty());
            let answer = crate::binding::bind_by_body(&store, ns.unwrap_or(""), v, dry_run).await?;
            return Ok(json_value(201, &answer));
        }
        let answered = crate::access_review::answer(store.cache(), &info, ns, v)?;
        return Ok(json_value(201, &answered));
    }
    if crate::component_status::is_component_statuses(&info) {
        // kube routes neither subresources nor `/watch/` paths for the kind.
        if sub.is_some() || force_watch {
            return Err(ApiError::no_route());
        }
        return component_statuses(&store, &info, name, &req, &query).await;
    }
    if let (Some(crate::proxy_subresource::SUBRESOURCE), Some(id)) = (sub, name)
        && crate::proxy_subresource::serves(&info)
    {
        // `/api/v1`, the namespace's two segments, then the resource, name and `proxy`.
        let before = 2 + if ns.is_some() { 2 } else { 0 } + 3;
        let decoded = body::percent_decode_path(req.uri().path());
        let path = crate::proxy_subresource::path_option(&decoded, before);
        let ns = ns.unwrap_or("");
        let verify_tls = shared.cfg.verify_proxied_tls;
        let r = crate::proxy_subresource::Request { info: &info, ns, id, path, query: &query, verify_tls, req };
        return crate::proxy_subresource::serve(&store, r).await;
    }
    if parts.len() > 3 {
        return Err(ApiError::no_route());
    }
    if let (Some(s), Some(name)) = (sub, name)
        && info.is_core("pods")
        && crate::pod_connection::SUBRESOURCES.contains(&s)
    {
        let upgrade = Some(hyper::upgrade::on(&mut req));
        let r = crate::pod_connection::Request {
            pods: &info,
            ns: ns.unwrap_or(""),
            name,
            subresource: s,
            method: req.method(),
            headers: req.headers(),
            query: &query,
            upgrade,
        };
        return crate::pod_connection::serve(&store, r).await;
    }
    let subresource = match sub {
        None => Subresource::None,
        Some("status") if info.status_subresource => Subresource::Status,
        Some("scale") if info.scale_subresource.is_some() => Subresource::Scale,
        Some("finalize") if crate::namespaces::is_namespaces(&info) => Subresource::Finalize,
        Some(crate::eviction::SUBRESOURCE) if info.is_core("pods") => Subresource::Eviction,
        Some(crate::binding::SUBRESOURCE) if info.is_core("pods") => Subresource::Binding,
        Some(crate::pod_ephemeral_containers::SUBRESOURCE) if info.is_core("pods") => Subresource::EphemeralContainers,
        Some(crate::pod_resize::SUBRESOURCE) if info.is_core("pods") => Subresource::Resize,
        Some(crate::token_request::SUBRESOURCE) if info.is_core("serviceaccounts") => Subresource::Token,
        Some(crate::certificate_signing::APPROVAL) if crate::certificate_signing::is_csrs(&info) => {
            Subresource::Approval
        }
        // kube's custom resource handler answers an unknown subresource as a missing object.
        Some(_) if info.custom.is_some() => {
            return Err(ApiError::not_found(&info.group, &info.plural, name.unwrap_or_default()));
        }
        Some(_) => return Err(ApiError::no_route()),
    };
    let target = match subresource {
        Subresource::Status => Target::Status,
        Subresource::Finalize => Target::Finalize,
        Subresource::Approval => Target::Approval,
        Subresource::EphemeralContainers => Target::EphemeralContainers,
        Subresource::Resize => Target::Resize,
        Subresource::None | Subresource::Scale | Subresource::Eviction | Subresource::Binding | Subresource::Token => {
            Target::Main
        }
    };
    let allowed = match subresource {
        Subresource::None => true,
        Subresource::Finalize => *req.method() == Method::PUT,
        Subresource::Status
        | Subresource::Scale
        | Subresource::Approval
        | Subresource::EphemeralContainers
        | Subresource::Resize => {
            matches!(*req.method(), Method::GET | Method::PUT | Method::PATCH)
        }
        Subresource::Eviction | Subresource::Binding | Subresource::Token => *req.method() == Method::POST,
    };
    // Namespaces are deleted one at a time (kube-apiserver serves no deletecollection for them).
    let collection_delete = name.is_none() && *req.method() == Method::DELETE;
    if !allowed || (collection_delete && crate::namespaces::is_namespaces(&info)) {
        return Err(ApiError::method_not_allowed());
    }
    let ns_or_default = ns.unwrap_or("");
    let method = req.method().clone();
    let user_agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_string);
    let dry_run = query.iter().any(|(k, v)| k == "dryRun" && !v.is_empty());
    if matches!(method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE) {
        crate::admission_options::from_query(&query, method == Method::DELETE);
    }
    // A custom resource has no protobuf form: its protobuf ranges are passed over.
    let render = accept_of(&req).render(info.custom.is_none()).with_query(&query);
    let verb = match (&method, name) {
        (&Method::GET, None) if query.iter().any(|(k, v)| k == "watch" && (v == "1" || v == "true")) => {
            Some(Verb::Watch)
        }
        (&Method::GET, None) => Some(Verb::List),
        (&Method::GET, Some(_)) => Some(Verb::Get),
        (&Method::POST, _) => Some(Verb::Create),
        (&Method::PUT, _) => Some(Verb::Update),
        (&Method::PATCH, _) => Some(Verb::Patch),
        (&Method::DELETE, _) => Some(Verb::Delete),
        _ => None,
    };
    if let Some(v) = verb {
        shared.controls.count(v);
        // kube's routes of the deprecated kind carry its deprecation, whatever they answer.
        if info.is_core("endpoints") {
            warning::record(crate::endpoints_validation::ENDPOINTS_DEPRECATED);
        }
    }
    if subresource == Subresource::Scale {
        let name = name.ok_or_else(ApiError::no_route)?;
        return scale_request(shared, &info, ns_or_default, name, dry_run, &query, user_agent.as_deref(), req).await;
    }
    // Subresources that take an object of their own and answer 201 (an Eviction, a Binding, a
    // TokenRequest).
    let carried = match subresource {
        Subresource::Eviction => Some(crate::eviction::body_info()),
        Subresource::Binding => Some(crate::binding::body_info()),
        Subresource::Token => Some(crate::token_request::body_info()),
        _ => None,
    };
    if let Some(body_info) = carried {
        let name = name.ok_or_else(ApiError::no_route)?;
        let format = BodyFormat::of(&media_type(&req), &body_info)?;
        let params = write_options::parse(&query, WriteKind::Create)?;
        let b = format.to_json(&body_info, read_body(shared, req).await?)?;
        let v = decode_object(&body_info, &b, params.validation)?;
        let answer = match subresource {
            Subresource::Eviction => crate::eviction::evict(&store, ns_or_default, name, v, dry_run).await?,
            Subresource::Binding => crate::binding::bind(&store, ns_or_default, name, v, dry_run).await?,
            _ => crate::token_request::issue(&store, &shared.signer, (ns_or_default, name), v, dry_run).await?,
        };
        return Ok(json_value(201, &answer));
    }
    match (method, name) {
        (Method::GET, None) => {
            let opts = ListOptions::parse(&query)?;
            if opts.watch {
                start_watch(shared, &info, ns, opts, render).await
            } else {
                let sel = selectors(&opts, &info)?;
                Ok(match list::list(&store, &info, ns, &opts, &sel, shared.cfg.rv_wait, render).await? {
                    list::ListAnswer::Whole(out) => json_bytes(200, out),
                    list::ListAnswer::Items(l) => body::respond(200, "application/json", Body::List(Box::new(l))),
                })
            }
        }
        (Method::GET, Some(n)) if force_watch => {
            let mut opts = ListOptions::parse(&query)?;
            let asked = crate::selector::FieldSelector::parse(opts.field_selector.as_deref().unwrap_or(""))?;
            if asked.is_empty() {
                let escaped = n.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=");
                opts.field_selector = Some(format!("metadata.name={escaped}"));
            } else if asked.requires_exact("metadata.name") != Some(n) {
                return Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name"));
            }
            start_watch(shared, &info, ns, opts, render).await
        }
        (Method::GET, Some(n)) => {
            let rv = query.iter().find(|(k, _)| k == "resourceVersion").map_or("", |(_, v)| v.as_str());
            let o = store.get_at(&info, ns_or_default, n, rv).await?;
            Ok(match render {
                // kubectl's `get <kind> <name>`: one row; metadata-only clients: the metadata.
                crate::table::Render::Table(include) => {
                    json_bytes(200, crate::table::event_table(&info, &o, include, true))
                }
                crate::table::Render::Metadata => json_bytes(200, crate::table::partial_metadata(&o.json())),
                crate::table::Render::Object => json_bytes(200, o.json()),
            })
        }
        (Method::POST, None) => {
            let format = BodyFormat::of(&media_type(&req), &info)?;
            let params = write_options::parse(&query, WriteKind::Create)?;
            let manager = managed_fields::manager_name(params.field_manager.as_deref(), user_agent.as_deref());
            let b = format.to_json(&info, read_body(shared, req).await?)?;
            let v = decode_object(&info, &b, params.validation)?;
            let o = store
                .create_many(&info, ns, vec![v], dry_run, &manager)
                .await?
                .pop()
                .ok_or_else(|| ApiError::internal("no object created"))?;
            Ok(json_bytes(201, o.json()))
        }
        (Method::PUT, Some(n)) => {
            let format = BodyFormat::of(&media_type(&req), &info)?;
            let params = write_options::parse(&query, WriteKind::Update)?;
            let field_manager = managed_fields::manager_name(params.field_manager.as_deref(), user_agent.as_deref());
            let validation = params.validation;
            let b = format.to_json(&info, read_body(shared, req).await?)?;
            let v = decode_object(&info, &b, validation)?;
            let opts = WriteOpts { target, dry_run, validation, field_manager, ..Default::default() };
            let (o, created) = store.put(&info, ns, Some(n), v, opts).await?;
            Ok(json_bytes(if created { 201 } else { 200 }, o.json()))
        }
        (Method::PATCH, Some(n)) => {
            let ct = media_type(&req);
            let is_apply = ct == "application/apply-patch+yaml";
            let kind = match patch_type(&ct) {
                Err(_) if info.custom.is_some() => return Err(crate::store::unsupported_custom_resource_patch()),
                k => k?,
            };
            // kube's custom resource handler refuses a strategic merge patch before anything else.
            crate::store::refuse_custom_resource_strategic(kind, &info)?;
            let params = write_options::parse(&query, if is_apply { WriteKind::Apply } else { WriteKind::Patch })?;
            let field_manager = managed_fields::manager_name(params.field_manager.as_deref(), user_agent.as_deref());
            let b = read_body(shared, req).await?;
            if is_apply {
                let opts =
                    ApplyOpts { target, dry_run, validation: params.validation, force: params.force, field_manager };
                let (o, created) = store.apply(&info, ns_or_default, n, &b, &opts).await?;
                return Ok(json_bytes(if created { 201 } else { 200 }, o.json()));
            }
            let opts =
                WriteOpts { target, dry_run, validation: params.validation, field_manager, ..Default::default() };
            let o = store.patch(&info, ns_or_default, n, kind, &b, opts).await?;
            Ok(json_bytes(200, o.json()))
        }
        (Method::DELETE, Some(n)) => {
            let opts = delete_options(shared, req, &query).await?;
            crate::delete_options::warn_on_default(&info, &opts);
            let (o, gone) = store.delete(&info, ns_or_default, n, &opts).await?;
            let code = if !gone && crate::delete_options::accepted(&opts) { 202 } else { 200 };
            if gone && !crate::delete_options::answers_with_object(&info) {
                let status = crate::status::success_status(&info.group, &info.plural, &o.name, &o.uid);
                return Ok(json_value(code, &status));
            }
            Ok(json_bytes(code, o.json()))
        }
        (Method::DELETE, None) => {
            let opts = ListOptions::parse(&query)?;
            let sel = selectors(&opts, &info)?;
            let delete_opts = delete_options(shared, req, &query).await?;
            crate::delete_options::warn_on_default(&info, &delete_opts);
            let deleted = crate::delete_collection::delete_collection(
                &store,
                &info,
                ns,
                (opts, &sel),
                &delete_opts,
                shared.cfg.rv_wait,
            )
            .await?;
            Ok(body::respond(200, "application/json", Body::List(Box::new(deleted))))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The subresource a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subresource {
    /// The resource itself.
    None,
    /// `…/status`.
    Status,
    /// `…/scale`.
    Scale,
    /// A namespace's `…/finalize` (PUT only).
    Finalize,
    /// A pod's `…/eviction` (POST only; [`crate::eviction`]).
    Eviction,
    /// A pod's `…/binding` (POST only; [`crate::binding`]).
    Binding,
    /// A service account's `…/token` (POST only; [`crate::token_request`]).
    Token,
    /// A CertificateSigningRequest's `…/approval` ([`crate::certificate_signing`]).
    Approval,
    /// A pod's `…/ephemeralcontainers` ([`crate::pod_ephemeral_containers`]).
    EphemeralContainers,
    /// A pod's `…/resize` ([`crate::pod_resize`]).
    Resize,
}

/// A read of ComponentStatuses ([`crate::component_status`]): `get` and `list`, probed now; a
/// watch is kube's 405 for a kind without one, any other method its plain 405.
async fn component_statuses(
    store: &crate::store::Store,
    info: &ResourceInfo,
    name: Option<&str>,
    req: &Request<Incoming>,
    query: &[(String, String)],
) -> Result<Response<Body>, ApiError> {
    // (kube's routes serve GET alone; what they route carries the kind's deprecation.)
    if *req.method() != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    warning::record(crate::component_status::WARNING);
    let render = accept_of(req).render(true).with_query(query);
    let items = match name {
        Some(n) => vec![crate::component_status::get(store, n).await?],
        None => {
            let opts = ListOptions::parse(query)?;
            // Judged before the watch is refused, as kube's list handler judges them.
            let sel = selectors(&opts, info)?;
            if opts.watch {
                let message = format!("watch is not supported on resources of kind {:?}", info.plural);
                let mut e = ApiError::new(405, "MethodNotAllowed", message);
                e.details = Some(Box::new(serde_json::json!({"kind": info.plural})));
                return Err(e);
            }
            crate::component_status::list(store, &sel).await
        }
    };
    Ok(match render {
        crate::table::Render::Table(include) => json_value(200, &crate::component_status::table(info, &items, include)),
        crate::table::Render::Metadata => {
            json_value(200, &crate::component_status::partial_metadata(&items, name.is_none()))
        }
        crate::table::Render::Object => match name {
            Some(_) => json_bytes(200, items[0].json()),
            None => json_bytes(200, crate::component_status::list_json(&items)),
        },
    })
}

/// The patch type of a PATCH request's media type. A type outside the four patch types is
/// refused as kube-apiserver's routes refuse it (415 "415: Unsupported Media Type"); a strategic
/// merge patch of a type without a built-in schema is refused later, naming the types it takes.
fn patch_type(media_type: &str) -> Result<PatchType, ApiError> {
    match media_type {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/apply-patch+yaml" => Ok(PatchType::Merge),
        _ => {
            let mut e = ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type");
            e.details = Some(Box::new(serde_json::json!({})));
            Err(e)
        }
    }
}

/// GET, PUT and PATCH of the `scale` subresource (autoscaling/v1 `Scale`).
#[allow(clippy::too_many_arguments)]
async fn scale_request(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    dry_run: bool,
    query: &[(String, String)],
    user_agent: Option<&str>,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let store = shared.store.clone();
    let manager = |kind: WriteKind| -> Result<String, ApiError> {
        let params = write_options::parse(query, kind)?;
        Ok(managed_fields::manager_name(params.field_manager.as_deref(), user_agent))
    };
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let render = crate::table::Render::from_request(accept, query);
    let scale = match req.method().clone() {
        Method::GET => store.get_scale(info, ns, name).await?,
        Method::PUT => {
            // The body is an autoscaling/v1 Scale, whatever the resource.
            let scale = ResourceInfo::new("autoscaling", "v1", "scale", "Scale", true);
            let format = BodyFormat::of(&media_type(&req), &scale)?;
            let manager = manager(WriteKind::Update)?;
            let b = format.to_json(&scale, read_body(shared, req).await?)?;
            store.update_scale(info, ns, name, parse_json(&b.json)?, &WriteOpts::main(dry_run).by(&manager)).await?
        }
        Method::PATCH => {
            let ct = media_type(&req);
            let kind = patch_type(&ct)?;
            crate::store::refuse_custom_resource_strategic(kind, info)?;
            let manager =
                manager(if ct == "application/apply-patch+yaml" { WriteKind::Apply } else { WriteKind::Patch })?;
            let b = read_body(shared, req).await?;
            store.patch_scale(info, ns, name, kind, &b, &WriteOpts::main(dry_run).by(&manager)).await?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    // kube prints a built-in kind's Scale; a custom resource's has no printer, so its Scale is
    // answered whatever the client asks.
    if let (crate::table::Render::Table(include), None) = (render, &info.custom) {
        return Ok(json_value(200, &crate::table::scale_table(scale.to_value(), include)));
    }
    Ok(json_bytes(200, scale.to_bytes()))
}

/// The selectors of a list, watch or collection delete, read in kube-apiserver's order: their
/// syntax (400), the list options (422), then the field labels the resource knows (400).
fn selectors(opts: &ListOptions, info: &ResourceInfo) -> Result<Selectors, ApiError> {
    let parsed = Selectors::parse_query(opts.label_selector.as_deref(), opts.field_selector.as_deref())?;
    opts.validate()?;
    parsed.for_resource(info)
}

async fn start_watch(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    mut opts: ListOptions,
    render: crate::table::Render,
) -> Result<Response<Body>, ApiError> {
    // WatchList defaulting (apiserver WatchList gate on), before the options are validated as
    // kube's SetListOptionsDefaults: RV ""/"0" without sendInitialEvents or RVM becomes
    // sendInitialEvents=true with resourceVersionMatch=NotOlderThan.
    let legacy = matches!(opts.resource_version.as_deref(), None | Some("0"));
    if legacy && opts.send_initial_events.is_none() && opts.resource_version_match.is_none() {
        opts.send_initial_events = Some(true);
        opts.resource_version_match = Some("NotOlderThan".into());
    }
    let sel = selectors(&opts, info)?;
    let store = shared.store.clone();
    let rv = match opts.resource_version.as_deref() {
        None | Some("0") => None,
        // kube's cacher returns the versioner's error as it is: a 500 without a reason.
        Some(r) => Some(list::read_rv(r).map_err(|e| ApiError::new(500, "", e))?),
    };
    let cfg = &shared.cfg;
    let cache = store.cache().clone();
    cache.check_ready()?;
    let timeout = match opts.timeout_seconds {
        // Clamped so deadline arithmetic can never overflow; 0 means default; a negative one
        // ends the watch at once, as kube's timer fires at once.
        Some(s) if s < 0 => Duration::ZERO,
        Some(s) if s > 0 => Duration::from_secs((s as u64).min(365 * 24 * 3600)),
        _ => {
            let base = cfg.min_request_timeout;
            base + base.mul_f64(rand::random::<f64>())
        }
    };
    // A watch that is not a streaming list starts at once, from a resourceVersion the cache may
    // not have reached yet (it sends the events after it). A streaming list waits for the cache
    // to reach its resourceVersion, or the storage's current one without: the read is
    // consistent. What cannot be served is the stream's one ERROR event, as kube's cacher
    // answers.
    if opts.send_initial_events == Some(true) {
        let wanted = match rv {
            Some(n) if n > cache.resource_version() && !cache.wait_for_rv(n, cfg.rv_wait).await => Some(n),
            Some(_) => None,
            None => (opts.resource_version.is_none() && !store.fresh().await?).then(|| store.resource_version()),
        };
        if let Some(n) = wanted {
            return Ok(error_stream(info, &ApiError::too_large_rv(n, cache.resource_version())));
        }
    }
    let start = match (opts.send_initial_events, rv) {
        (Some(true), _) => WatchStart::Initial { end_bookmark: true },
        (_, Some(n)) => {
            let (oldest, _) = cache.history_bounds(info)?;
            if n < oldest {
                return Ok(error_stream(info, &watch::too_old_error(n, oldest)));
            }
            WatchStart::After(n)
        }
        (_, None) => WatchStart::After(cache.resource_version()),
    };
    let params = WatchParams {
        info: info.clone(),
        ns: ns.filter(|_| info.namespaced).map(str::to_string),
        sel,
        start,
        bookmarks: opts.allow_bookmarks,
        timeout,
        bookmark_interval: cfg.bookmark_interval,
        bookmark_before_timeout: cfg.bookmark_before_timeout,
        chunk_bytes: cfg.chunk_bytes,
        render,
        events: Some(shared.metrics.watch_events(&info.group, &info.version, &info.plural)),
    };
    let rx = watch::spawn(cache, shared.controls.clone(), params);
    Ok(watch_response(info, rx))
}

/// A watch stream of one ERROR event carrying `e`, as kube's cacher answers a watch it cannot
/// serve.
fn error_stream(info: &ResourceInfo, e: &ApiError) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    let _ = tx.try_send(watch::encode_error(e));
    watch_response(info, rx)
}

/// A watch answer streaming `info`'s objects, marked with their kind for protobuf clients.
fn watch_response(info: &ResourceInfo, rx: tokio::sync::mpsc::Receiver<Bytes>) -> Response<Body> {
    let mut r = body::respond(200, "application/json", Body::Stream(rx));
    let kind = protobuf::negotiate::WatchOf { api_version: info.api_version(), kind: info.kind.clone() };
    r.extensions_mut().insert(kind);
    r
}

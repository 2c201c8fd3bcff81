//! The handler that passes a proxy subresource's request on to its backend and the backend's
//! answer back, as kube-apiserver's `UpgradeAwareHandler` does for `pods/proxy`,
//! `services/proxy` and `nodes/proxy` ([`crate::proxy_subresource`] finds the backend).
//!
//! A plain request is sent to the backend over a new HTTP/1.1 connection (TLS for an `https`
//! backend, its certificate verified against the system's roots unless the server is told not
//! to; the handshake within 10 s, as Go's transport) with the client's method,
//! headers and body, the backend's path, and the client's query as it was written; the answer's
//! status, headers and body are passed back as they arrive. A request asking to switch
//! protocols (a WebSocket) is sent likewise and, when the backend switches, the two connections
//! are joined byte for byte.
//!
//! Invariants, as kube's handler and Go's reverse proxy hold them:
//! - the client's credentials never reach the backend: `Authorization` and the impersonation
//!   headers are dropped; hop-by-hop headers (`Connection` and those it names, `Keep-Alive`,
//!   `Proxy-*`, `Te` but `trailers`, `Trailer`, `Transfer-Encoding`, `Upgrade`) are dropped both
//!   ways but from a switch of protocols, whose request goes with all its other headers;
//! - the backend sees the client's `Host` (the backend's own when the client sent none),
//!   `X-Forwarded-For` with the client's address appended,
//!   and (but for a switch of protocols, which goes without them as kube's does) the client's
//!   query and `X-Forwarded-Uri`, the path the client asked for;
//! - a GET or HEAD of the bare `…/proxy` (an empty backend path) is redirected (301) to
//!   `…/proxy/`, its query kept; a client path ending in `/` keeps it;
//! - a backend's `Location` is rewritten into the proxy's path when it points at the backend
//!   (or at this server); without one, an HTML answer's links are ([`crate::html_links`], the
//!   page read whole); the backend's `Access-Control-Allow-*` headers are dropped; the answer
//!   carries `Cache-Control: no-cache, private` before the backend's own headers;
//! - a backend that cannot be reached is answered 503 `error trying to reach service: <Go's
//!   error>`; for a switch of protocols, 500 `error dialing backend: <error>`, and a backend
//!   answer that neither switches nor fails (< 400) is 500 `invalid upgrade response: status
//!   code <n>`; a failure at 400 or more is passed back as it is, the connection then closed;
//!   a tunnel ends, both connections closed, when either side ends or the server stops.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::body::Body;
use crate::server::ServerStop;
use crate::status::ApiError;

/// The address of the client a request came from, as the server's connection knows it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClientAddr(pub SocketAddr);

/// How long a TLS handshake with a backend may take (Go's transport's limit).
const TLS_HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// Where a proxied request goes.
pub(crate) struct Backend {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The host to dial (an IP address, or a node's name as it reports it).
    pub host: String,
    pub port: i64,
    /// The host (and port, when the location names one) of the backend's URL.
    pub authority: String,
    /// The path on the backend (kube's location path joined with the `path` option).
    pub path: String,
    /// The backend is a kubelet, spoken to with kube-apiserver's kubelet client credentials,
    /// which this server does not hold.
    pub kubelet: bool,
    /// Whether an `https` backend's certificate is verified (against the system's roots).
    pub verify_tls: bool,
}

/// Passes `req` on to `backend` and its answer back (see the module documentation).
pub(crate) async fn serve(backend: Backend, req: http::Request<Incoming>) -> Result<Response<Body>, ApiError> {
    if crate::pod_connection::is_upgrade(req.headers()) {
        return upgrade(backend, req).await;
    }
    let client_path = crate::body::percent_decode_path(req.uri().path());
    let mut path = backend.path.clone();
    if !path.ends_with('/') && client_path.ends_with('/') {
        path.push('/');
    }
    let query = req.uri().query().map(str::to_string);
    if path.is_empty() && matches!(*req.method(), Method::GET | Method::HEAD) {
        let location = format!("{client_path}/{}", query.as_deref().map(|q| format!("?{q}")).unwrap_or_default());
        return Ok(redirect(&location));
    }
    let rewriting = Rewriting::new(&backend, &client_path, host_of(&req));
    let outgoing = outgoing_request(&req, &backend, &path, query.as_deref())?;
    let mut outgoing = outgoing.map(|()| req.into_body());
    if let Ok(v) = HeaderValue::from_str(&rewriting.forwarded_uri(&path)) {
        outgoing.headers_mut().insert(HeaderName::from_static("x-forwarded-uri"), v);
    }
    let answer = exchange(&backend, outgoing, false).await.map_err(|e| {
        let (Failure::Dial(e) | Failure::Exchange(e)) = e;
        ApiError::new(503, "ServiceUnavailable", format!("error trying to reach service: {e}"))
    })?;
    rewriting.answer(answer).await
}

/// kube's rewriting transport (`proxy.Transport`) for one request: what the backend is told of
/// the client's path, and its answer's URLs brought under the proxy.
struct Rewriting {
    /// The host (and port) of the backend's URL.
    backend: String,
    /// The client's `Host`.
    client_host: String,
    /// The client's path without the backend's (`/api/v1/namespaces/n/pods/p/proxy`).
    prepend: String,
}

impl Rewriting {
    fn new(backend: &Backend, client_path: &str, client_host: String) -> Rewriting {
        let suffix = if client_path.ends_with('/') && !backend.path.ends_with('/') {
            format!("{}/", backend.path)
        } else {
            backend.path.clone()
        };
        let prepend = client_path.strip_suffix(suffix.as_str()).unwrap_or(client_path).to_string();
        Rewriting { backend: backend.authority.clone(), client_host, prepend }
    }

    /// `X-Forwarded-Uri` of a request for the backend's `path`.
    fn forwarded_uri(&self, path: &str) -> String {
        let mut uri = crate::go_path::join(&self.prepend, &crate::go_path::escape(path));
        if path.ends_with('/') {
            uri.push('/');
        }
        uri
    }

    /// A URL of the backend's answer, as the client is given it ([`rewrite_location`]).
    fn url(&self, url: &str) -> String {
        rewrite_location(url, &self.backend, &self.client_host, &self.prepend)
    }

    /// The backend's answer as the client gets it: hop-by-hop and CORS headers dropped, its
    /// `Location` rewritten, or else an HTML page's links (the page read whole).
    async fn answer(&self, mut answer: Response<Incoming>) -> Result<Response<Body>, ApiError> {
        let headers = answer.headers_mut();
        remove_hop_by_hop(headers);
        for name in CORS {
            headers.remove(name);
        }
        if let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()).filter(|l| !l.is_empty()) {
            if let Ok(v) = HeaderValue::from_str(&self.url(location)) {
                headers.insert(header::LOCATION, v);
            }
            return Ok(passed_back(answer));
        }
        let media_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if media_type.split(';').next().unwrap_or("").trim() != "text/html" {
            return Ok(passed_back(answer));
        }
        let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        if !crate::html_links::ENCODINGS.contains(&encoding.as_str()) {
            return Ok(passed_back(answer));
        }
        let (mut parts, body) = answer.into_parts();
        let page = body.collect().await.map_err(|e| ApiError::new(500, "", e.to_string()))?.to_bytes();
        let page = crate::html_links::rewrite_encoded(&page, &encoding, &|url| self.url(url))
            .map_err(|e| ApiError::new(500, "", e))?;
        parts.headers.remove(header::CONTENT_LENGTH);
        Ok(passed_back(Response::from_parts(parts, Body::Full(Some(Bytes::from(page))))))
    }
}

/// The backend's answer as the client gets it: `Cache-Control: no-cache, private` first (the
/// server's own), then the backend's headers, its body as it arrives.
fn passed_back<B: Into<Body>>(answer: Response<B>) -> Response<Body> {
    let (parts, body) = answer.into_parts();
    let mut r = Response::new(body.into());
    *r.status_mut() = parts.status;
    let headers = r.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    for (name, value) in parts.headers.iter() {
        headers.append(name.clone(), value.clone());
    }
    r
}

/// A 301 to `location`, as Go's handler writes it for kube's empty-path redirect.
fn redirect(location: &str) -> Response<Body> {
    let mut r = Response::new(Body::Full(None));
    *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
    let headers = r.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    if let Ok(v) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, v);
    }
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    r
}

/// The headers a backend's answer may not set for the client (kube's `corsRemovingTransport`).
const CORS: [&str; 4] = [
    "access-control-allow-credentials",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "access-control-allow-origin",
];

/// Hop-by-hop headers, as Go's reverse proxy lists them.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Drops the hop-by-hop headers of `headers` and those its `Connection` names (a `Te` of
/// `trailers` is kept, as Go keeps it).
fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    for name in named {
        headers.remove(name.as_str());
    }
    let trailers = headers.get(header::TE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"trailers"));
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    if trailers {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

/// The client's `Host` (an HTTP/2 request's authority).
fn host_of(req: &http::Request<Incoming>) -> String {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(ToString::to_string))
        .unwrap_or_default()
}

/// The request the backend is sent, without its body: the client's method and headers (its
/// credentials dropped, and its hop-by-hop headers but for a switch of protocols), the
/// backend's path with `query`, the client's `Host` (or the backend's), and `X-Forwarded-For`.
fn outgoing_request(
    req: &http::Request<Incoming>,
    backend: &Backend,
    path: &str,
    query: Option<&str>,
) -> Result<http::Request<()>, ApiError> {
    let target = format!(
        "{}{}",
        crate::go_path::escape(if path.is_empty() { "/" } else { path }),
        query.map(|q| format!("?{q}")).unwrap_or_default()
    );
    let uri: http::Uri = target.parse().map_err(|_| ApiError::bad_request("invalid proxy path"))?;
    let host = Some(host_of(req)).filter(|h| !h.is_empty()).unwrap_or_else(|| backend.authority.clone());
    let mut headers = req.headers().clone();
    if !crate::pod_connection::is_upgrade(&headers) {
        remove_hop_by_hop(&mut headers);
    }
    headers.remove(header::AUTHORIZATION);
    let impersonation: Vec<HeaderName> =
        headers.keys().filter(|k| crate::requester::is_impersonation(k.as_str())).cloned().collect();
    for name in impersonation {
        headers.remove(name);
    }
    if let Ok(v) = HeaderValue::from_str(&host) {
        headers.insert(header::HOST, v);
    }
    if let Some(ClientAddr(addr)) = req.extensions().get::<ClientAddr>() {
        let prior: Vec<&str> =
            req.headers().get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
        let ip = addr.ip().to_canonical().to_string();
        let value = if prior.is_empty() { ip } else { format!("{}, {ip}", prior.join(", ")) };
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static("x-forwarded-for"), v);
        }
    }
    let mut out = http::Request::new(());
    *out.method_mut() = req.method().clone();
    *out.uri_mut() = uri;
    *out.headers_mut() = headers;
    Ok(out)
}

/// Why a backend gave no answer, in Go's words.
enum Failure {
    /// No connection (the dial, TLS, or a kubelet this server holds no credentials for).
    Dial(String),
    /// The request could not be sent or the answer's head read.
    Exchange(String),
}

/// Sends `request` to `backend` over a new connection and reads the answer's head. With
/// `switching`, the connection stays open for a switch of protocols.
async fn exchange(
    backend: &Backend,
    request: http::Request<Incoming>,
    switching: bool,
) -> Result<Response<Incoming>, Failure> {
    let tcp = crate::pod_connection::dial_backend(&backend.host, backend.port, backend.kubelet)
        .await
        .map_err(Failure::Dial)?;
    if backend.scheme == "https" {
        let tls = async {
            if backend.verify_tls {
                crate::webhook_client::tls(tcp, &backend.host, &[]).await
            } else {
                crate::webhook_client::unverified_tls(tcp, &backend.host).await
            }
        };
        // Go's transport bounds a plain request's handshake; kube's upgrade dial does not.
        let tls = match switching {
            true => tls.await,
            false => tokio::time::timeout(TLS_HANDSHAKE_LIMIT, tls)
                .await
                .unwrap_or_else(|_| Err("net/http: TLS handshake timeout".into())),
        };
        send(TokioIo::new(tls.map_err(Failure::Dial)?), request, switching).await
    } else {
        send(TokioIo::new(tcp), request, switching).await
    }
}

/// One HTTP/1.1 exchange over `io`.
async fn send<I>(io: I, request: http::Request<Incoming>, switching: bool) -> Result<Response<Incoming>, Failure>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let go_words =
        |e: hyper::Error| Failure::Exchange(if e.is_incomplete_message() { "EOF".into() } else { e.to_string() });
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.map_err(go_words)?;
    if switching {
        tokio::spawn(conn.with_upgrades());
    } else {
        tokio::spawn(conn);
    }
    sender.send_request(request).await.map_err(go_words)
}

/// A request asking to switch protocols, passed on: when the backend switches, its 101 is the
/// client's and the two connections are joined. As kube's handler, the request goes without
/// its query (kube's location carries none), nor `X-Forwarded-Uri`; a backend's refusal (400 or
/// more) is passed back as it is, and the connection closed.
async fn upgrade(backend: Backend, mut req: http::Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let client_upgrade = hyper::upgrade::on(&mut req);
    let mut stop = req.extensions().get::<ServerStop>().cloned();
    let path = backend.path.clone();
    let outgoing = outgoing_request(&req, &backend, &path, None)?;
    let outgoing = outgoing.map(|()| req.into_body());
    let plain = |m: String| ApiError::new(500, "", m);
    let mut answer = match exchange(&backend, outgoing, true).await {
        Ok(a) => a,
        Err(Failure::Dial(e)) => return Err(plain(format!("error dialing backend: {e}"))),
        Err(Failure::Exchange(e)) => return Err(plain(e)),
    };
    let status = answer.status();
    if status == StatusCode::SWITCHING_PROTOCOLS {
        let backend_upgrade = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            let (Ok(client), Ok(server)) = tokio::join!(client_upgrade, backend_upgrade) else { return };
            let (mut client_read, mut client_write) = tokio::io::split(TokioIo::new(client));
            let (mut server_read, mut server_write) = tokio::io::split(TokioIo::new(server));
            // Either side ending ends the tunnel: both connections are closed, as kube's are. So
            // does the server's stop, as the end of kube's process would.
            tokio::select! {
                _ = tokio::io::copy(&mut client_read, &mut server_write) => {}
                _ = tokio::io::copy(&mut server_read, &mut client_write) => {}
                _ = ServerStop::stopped(&mut stop) => {}
            }
        });
        let (parts, _) = answer.into_parts();
        let mut r = Response::new(Body::Full(None));
        *r.status_mut() = status;
        *r.headers_mut() = parts.headers;
        return Ok(r);
    }
    if status.as_u16() < 400 {
        return Err(plain(format!("invalid upgrade response: status code {}", status.as_u16())));
    }
    let (mut parts, body) = answer.into_parts();
    remove_hop_by_hop(&mut parts.headers);
    parts.headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    Ok(Response::from_parts(parts, body.into()))
}

/// kube's `rewriteURL` of a backend's `Location`: a URL on the backend (or on this server)
/// with an absolute path is made relative to this server, under the proxy's path `prepend`.
fn rewrite_location(location: &str, backend_host: &str, client_host: &str, prepend: &str) -> String {
    let url = GoUrl::parse(location);
    let different_host = !url.host.is_empty() && url.host != backend_host && url.host != client_host;
    if different_host || !url.path.starts_with('/') {
        return location.to_string();
    }
    let mut url = url;
    if url.host != client_host {
        url.scheme.clear();
        url.host.clear();
    }
    if url.path.starts_with(prepend) {
        return url.to_string();
    }
    let trailing = url.path.ends_with('/');
    url.path = crate::go_path::join(prepend, &url.path);
    if trailing {
        url.path.push('/');
    }
    url.to_string()
}

/// The parts of a URL that a `Location` rewrite touches, split as Go's `url.Parse` splits them
/// (the text of each kept as written).
#[derive(Debug, PartialEq)]
struct GoUrl {
    scheme: String,
    host: String,
    path: String,
    /// `?query#fragment`, as written.
    rest: String,
}

impl GoUrl {
    fn parse(s: &str) -> GoUrl {
        let (before, rest) = match s.find(['?', '#']) {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let scheme_end = before.find(':').filter(|&i| {
            i > 0
                && before[..i].chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && before[..i].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
        let (scheme, after) = match scheme_end {
            Some(i) => (before[..i].to_string(), &before[i + 1..]),
            None => (String::new(), before),
        };
        let (host, path) = match after.strip_prefix("//") {
            Some(authority) => {
                let end = authority.find('/').unwrap_or(authority.len());
                (authority[..end].to_string(), authority[end..].to_string())
            }
            None => (String::new(), after.to_string()),
        };
        GoUrl { scheme, host, path, rest: rest.to_string() }
    }
}

impl std::fmt::Display for GoUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.scheme.is_empty() {
            write!(f, "{}:", self.scheme)?;
        }
        if !self.scheme.is_empty() || !self.host.is_empty() {
            write!(f, "//{}", self.host)?;
        }
        write!(f, "{}{}", self.path, self.rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_on_the_backend_are_brought_under_the_proxy() {
        let prepend = "/api/v1/namespaces/n/pods/p/proxy";
        let backend = "10.1.2.3:8080";
        let client = "127.0.0.1:6443";
        let r = |l: &str| rewrite_location(l, backend, client, prepend);
        assert_eq!(r("http://10.1.2.3:8080/login?next=%2F"), format!("{prepend}/login?next=%2F"));
        assert_eq!(r("/login/"), format!("{prepend}/login/"));
        // Elsewhere, relative, or already under the proxy: left as they are (but for the host).
        assert_eq!(r("https://example.com/login"), "https://example.com/login");
        assert_eq!(r("login"), "login");
        assert_eq!(r(&format!("http://127.0.0.1:6443{prepend}/a")), format!("http://127.0.0.1:6443{prepend}/a"));
        assert_eq!(r("http://127.0.0.1:6443/a"), format!("http://127.0.0.1:6443{prepend}/a"));
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, X-Private"));
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert(header::TE, HeaderValue::from_static("trailers"));
        h.insert(header::TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        h.insert("x-kept", HeaderValue::from_static("1"));
        remove_hop_by_hop(&mut h);
        let mut names: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["te", "x-kept"]);
    }
}

//! The HTTPS client kube-apiserver calls admission webhooks with: one JSON POST to the
//! webhook's URL (a `url`, or a Service's in-cluster name), its certificate verified against the
//! configuration's `caBundle` (the system's roots without one; a self-signed certificate of the
//! bundle is trusted as itself, as Go trusts it), within the webhook's timeout. The same client
//! makes the server's health probes ([`get`], the system's roots trusted).
//!
//! Connections are kept and reused, as Go's HTTP transport keeps them: an idle connection to
//! the same host and port, trusting the same bundle, carries the next call (a call it could not
//! carry, the server having closed it, goes on a new one).
//!
//! Invariants: TLS is always verified (the host name of the URL, or the Service's
//! `<name>.<namespace>.svc`) but by [`unverified_tls`], which the proxy subresources use for
//! backends the server is told not to verify; the request's URL carries `?timeout=<n>s` as kube's does; failures
//! are described as Go's HTTP client describes them (`Post "<url>": dial tcp <addr>: connect:
//! connection refused`, `…: context deadline exceeded`), since they reach clients in kube's
//! messages; a response is read whole and decoded as JSON.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::Value;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::{DigitallySignedStruct, SignatureScheme};

/// Where the system's trusted roots are on Debian and its kin.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Where and how to reach a webhook.
pub(crate) struct Endpoint {
    /// `https://host[:port][/path]`.
    pub url: String,
    /// PEM certificates to trust; empty for the system's roots.
    pub ca_bundle: Vec<u8>,
    pub timeout: Duration,
}

impl Endpoint {
    /// The endpoint a webhook's `clientConfig` names (`url`, or `service` with its `namespace`,
    /// `name`, `path` and `port`, default 443); None when it names neither.
    pub(crate) fn of(client_config: &Value, timeout: Duration) -> Option<Endpoint> {
        let url = match (client_config.get("url").and_then(Value::as_str), client_config.get("service")) {
            (Some(u), _) => u.to_string(),
            (None, Some(s)) => {
                let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
                let port = s.get("port").and_then(Value::as_u64).unwrap_or(443);
                format!("https://{}.{}.svc:{port}{}", text("name"), text("namespace"), text("path"))
            }
            (None, None) => return None,
        };
        let ca_bundle = client_config
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).ok())
            .unwrap_or_default();
        Some(Endpoint { url, ca_bundle, timeout })
    }

    /// The URL called: the webhook's, its path cleaned as client-go's REST client joins it (an
    /// empty path is `/`, a trailing `/` goes), with kube's `timeout` query parameter.
    pub(crate) fn request_url(&self) -> String {
        let (url, query) = self.url.split_once('?').map_or((self.url.as_str(), None), |(u, q)| (u, Some(q)));
        let after_scheme = url.find("://").map_or(0, |i| i + 3);
        let path_at = url[after_scheme..].find('/').map_or(url.len(), |i| after_scheme + i);
        let (origin, path) = url.split_at(path_at);
        let query = query.map_or(String::new(), |q| format!("{q}&"));
        format!("{origin}{}?{query}timeout={}s", crate::go_path::clean(&format!("/{path}")), self.timeout.as_secs())
    }
}

/// POSTs `body` to the endpoint and decodes the JSON answer; the error is Go's description of
/// the failure.
pub(crate) async fn post(endpoint: &Endpoint, body: Vec<u8>) -> Result<Value, String> {
    let url = endpoint.request_url();
    let describe = |e: String| format!("Post {url:?}: {e}");
    match tokio::time::timeout(endpoint.timeout, exchange(endpoint, &url, body)).await {
        Ok(r) => r.map_err(describe),
        Err(_) => Err(describe("context deadline exceeded".into())),
    }
}

/// A GET of `url` (`https://host:port/path`) on a connection of its own, its certificate
/// verified against the system's roots, within `timeout`: the answer's code and body, or the
/// failure as Go's HTTP client describes it (`Get "<url>": dial tcp …: connect: connection
/// refused`).
pub(crate) async fn get(url: &str, user_agent: &str, timeout: Duration) -> Result<(u16, Bytes), String> {
    let describe = |e: String| format!("Get {url:?}: {e}");
    let exchange = async {
        let uri: http::Uri = url.parse().map_err(|e| format!("parse {url:?}: {e}"))?;
        let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_string();
        let port = uri.port_u16().unwrap_or(443);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let authority = uri.authority().map_or(host.clone(), |a| a.to_string());
        let request = http::Request::get(path)
            .header(http::header::HOST, authority)
            .header(http::header::ACCEPT, "*/*")
            .header(http::header::USER_AGENT, user_agent)
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        let mut sender = connect(&host, port, &[]).await?;
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let code = response.status().as_u16();
        let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok((code, body))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r.map_err(describe),
        Err(_) => Err(describe("context deadline exceeded (Client.Timeout exceeded while awaiting headers)".into())),
    }
}

/// A new HTTP/1.1 connection over TLS to `host`:`port`, trusting `ca_bundle` (the system's
/// roots when empty).
async fn connect(host: &str, port: u16, ca_bundle: &[u8]) -> Result<Sender, String> {
    // The call's own timeout bounds the dial too.
    let tcp = crate::dialer::connect(host, i64::from(port), crate::dialer::GO_DIAL_LIMIT).await?;
    let tls = tls(tcp, host, ca_bundle).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

/// TLS over `tcp` to `host`, its certificate verified against `ca_bundle` (the system's roots
/// when empty); a failure in Go's words.
pub(crate) async fn tls(
    tcp: tokio::net::TcpStream,
    host: &str,
    ca_bundle: &[u8],
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let server_name = ServerName::try_from(host.to_string()).map_err(|e| format!("tls: {e}"))?;
    TlsConnector::from(client_config(ca_bundle)?).connect(server_name, tcp).await.map_err(|e| tls_error(&e))
}

/// TLS over `tcp` to `host` without verifying its certificate (Go's `InsecureSkipVerify`, kube's
/// proxy transport): the handshake's signatures are still checked.
pub(crate) async fn unverified_tls(
    tcp: tokio::net::TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    static CONFIG: LazyLock<Result<Arc<rustls::ClientConfig>, String>> =
        LazyLock::new(|| verified_by(None, Vec::new()));
    let config = CONFIG.clone()?;
    let server_name = ServerName::try_from(host.to_string()).map_err(|e| format!("tls: {e}"))?;
    TlsConnector::from(config).connect(server_name, tcp).await.map_err(|e| tls_error(&e))
}

/// A connection to a webhook, ready for a request when idle.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A webhook server as connections are shared: host, port and the certificates trusted.
type PoolKey = (String, u16, Vec<u8>);

/// The most idle connections kept to one webhook server.
const IDLE_PER_SERVER: usize = 16;

/// Idle connections to webhook servers, reused as Go's HTTP transport reuses them: a webhook
/// called for every write pays its TLS handshake once, not on every call.
static IDLE: LazyLock<Mutex<HashMap<PoolKey, Vec<Sender>>>> = LazyLock::new(Default::default);

/// TLS configurations by the certificates they trust (the system's roots for an empty bundle).
static CONFIGS: LazyLock<Mutex<HashMap<Vec<u8>, Arc<rustls::ClientConfig>>>> = LazyLock::new(Default::default);

fn idle(key: &PoolKey) -> Option<Sender> {
    IDLE.lock().get_mut(key)?.pop()
}

fn release(key: PoolKey, sender: Sender) {
    if sender.is_closed() {
        return;
    }
    let mut idle = IDLE.lock();
    let senders = idle.entry(key).or_default();
    senders.retain(|s| !s.is_closed());
    if senders.len() < IDLE_PER_SERVER {
        senders.push(sender);
    }
}

async fn exchange(endpoint: &Endpoint, url: &str, body: Vec<u8>) -> Result<Value, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("parse {url:?}: {e}"))?;
    let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_string();
    let port = uri.port_u16().unwrap_or(443);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let authority = uri.authority().map_or(host.clone(), |a| a.to_string());
    let mut request = http::Request::post(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let key: PoolKey = (host.clone(), port, endpoint.ca_bundle.clone());
    // An idle connection first; one the server closed meanwhile gives the request back unsent.
    while let Some(mut sender) = idle(&key) {
        if sender.ready().await.is_err() {
            continue;
        }
        match sender.try_send_request(request).await {
            Ok(response) => return answer(response, key, sender).await,
            Err(mut e) => match e.take_message() {
                Some(unsent) => request = unsent,
                None => return Err(e.into_error().to_string()),
            },
        }
    }
    let mut sender = connect(&host, port, &endpoint.ca_bundle).await?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    answer(response, key, sender).await
}

/// Reads a webhook's answer whole, then keeps its connection for the next call.
async fn answer(
    response: http::Response<hyper::body::Incoming>,
    key: PoolKey,
    sender: Sender,
) -> Result<Value, String> {
    let status = response.status().as_u16();
    let text_body = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/"));
    let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    release(key, sender);
    if !(200..=206).contains(&status) {
        return Err(response_error(status, text_body, &bytes));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("decoding the response: {e}"))
}

/// What client-go makes of an answer outside 200–206, as kube reports it: a `Status` of
/// `Failure` speaks for itself; otherwise the code's own words, with the body (when it is text)
/// where they quote the server.
fn response_error(code: u16, text_body: bool, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && v.get("status").and_then(Value::as_str) == Some("Failure")
    {
        return v.get("message").and_then(Value::as_str).unwrap_or("").to_string();
    }
    let server = if text_body {
        let cut = &body[..body.len().min(2048)];
        String::from_utf8_lossy(cut).trim().to_string()
    } else {
        "unknown".to_string()
    };
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => server,
        406 if server.is_empty() || server == "unknown" => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        406 => server,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => {
            "the server was unable to return a response in the time allotted, but may still be processing the request"
                .into()
        }
        429 => "the server has received too many requests and has asked us to try again later".into(),
        c if c >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            crate::structural::go_quote(&server)
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// A rustls client trusting `ca_bundle` (PEM), or the system's roots when it is empty; made
/// once per bundle.
fn client_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    if let Some(config) = CONFIGS.lock().get(ca_bundle) {
        return Ok(config.clone());
    }
    let config = new_client_config(ca_bundle)?;
    CONFIGS.lock().insert(ca_bundle.to_vec(), config.clone());
    Ok(config)
}

fn new_client_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = if ca_bundle.is_empty() { std::fs::read(SYSTEM_ROOTS).unwrap_or_default() } else { ca_bundle.to_vec() };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok).collect();
    roots.add_parsable_certificates(certs.iter().cloned());
    let pinned = if ca_bundle.is_empty() { Vec::new() } else { certs };
    verified_by(Some(roots), pinned)
}

/// A rustls client whose server certificates are verified against `roots` (and `pinned`, see
/// [`BundleVerifier`]), or not at all without roots.
fn verified_by(
    roots: Option<rustls::RootCertStore>,
    pinned: Vec<CertificateDer<'static>>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = match roots {
        Some(roots) => Some(
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("tls: {e}"))?,
        ),
        None => None,
    };
    let verifier = BundleVerifier { inner, pinned, provider: provider.clone() };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// WebPKI verification, plus what Go's verifier accepts and WebPKI does not: a self-signed CA
/// certificate of the `caBundle` presented by the webhook itself (what `openssl req -x509`
/// makes). Such a certificate must still be valid now and for the host name. Without WebPKI
/// roots, any certificate is taken (Go's `InsecureSkipVerify`). The handshake's signatures are
/// checked either way, with the provider's algorithms.
#[derive(Debug)]
struct BundleVerifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    /// The certificates of the `caBundle`.
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.inner else { return Ok(ServerCertVerified::assertion()) };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)))
                if matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity)) =>
            {
                if !self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) {
                    // A self-signed certificate nobody vouches for: Go's "unknown authority".
                    return Err(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer));
                }
                let cert = webpki::EndEntityCert::try_from(end_entity)
                    .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))?;
                cert.verify_is_valid_for_subject_name(server_name)
                    .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Go's words for a failed TLS handshake where they are known.
fn tls_error(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority".into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
        | Some(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. })) => {
            "tls: failed to verify certificate: x509: certificate is not valid for the requested name".into()
        }
        Some(other) => format!("tls: {other}"),
        None => format!("tls: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_outside_success_read_as_client_go_reads_them() {
        assert_eq!(response_error(404, true, b"no such path"), "the server could not find the requested resource");
        assert_eq!(
            response_error(500, true, b"boom\n"),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            response_error(502, false, b"{}"),
            "an error on the server (\"unknown\") has prevented the request from succeeding"
        );
        assert_eq!(response_error(403, true, b"go away"), "go away");
        assert_eq!(
            response_error(207, false, b""),
            "the server responded with the status code 207 but did not return more information"
        );
        let status = br#"{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "quota exceeded"}"#;
        assert_eq!(response_error(429, false, status), "quota exceeded");
    }

    #[test]
    fn endpoints_are_the_url_or_the_service_s_name_with_kube_s_timeout() {
        let t = Duration::from_secs(10);
        let url = Endpoint::of(&json!({"url": "https://127.0.0.1:8443/validate"}), t).unwrap();
        assert_eq!(url.request_url(), "https://127.0.0.1:8443/validate?timeout=10s");
        let svc = Endpoint::of(&json!({"service": {"namespace": "ops", "name": "hook", "path": "/m"}}), t).unwrap();
        assert_eq!(svc.request_url(), "https://hook.ops.svc:443/m?timeout=10s");
        assert!(Endpoint::of(&json!({}), t).is_none());
    }

    #[tokio::test]
    async fn a_refused_connection_is_described_as_go_describes_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e =
            Endpoint { url: format!("https://127.0.0.1:{port}/v"), ca_bundle: vec![], timeout: Duration::from_secs(5) };
        let err = post(&e, b"{}".to_vec()).await.unwrap_err();
        assert_eq!(
            err,
            format!(
                "Post \"https://127.0.0.1:{port}/v?timeout=5s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
    }
}

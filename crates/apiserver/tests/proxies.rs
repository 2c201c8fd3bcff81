//! `pods/proxy`, `services/proxy` and `nodes/proxy` over HTTP, as kube-apiserver v1.35 serves
//! them: listed in discovery; a request passed to a real HTTP server on the machine's own
//! address (a pod's IP, a Service's endpoint, a node's address) with its method, path, query,
//! body and headers, the client's credentials dropped and kube's forwarding headers added; the
//! backend's answer passed back (a `Location` brought under the proxy, CORS headers dropped); a
//! WebSocket joined to the backend; kube's answers when no backend can be found or reached;
//! authorization by method and name; admission of the options; kubectl and the Python client.

mod common;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use common::*;
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use informer_apiserver::ApiServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PODS: &str = "/api/v1/namespaces/default/pods";

/// Lets the test backend's `/broken` body fail.
static BREAK: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// What the test backend answers with.
type BackendBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// A whole body of the test backend.
fn full(body: impl Into<Bytes>) -> BackendBody {
    Full::new(body.into()).map_err(|never| match never {}).boxed()
}

/// The machine's first IPv4 address that is neither loopback nor link-local (kube proxies only
/// to global unicast addresses): the kernel's local routes name each address of the machine
/// (`/proc/net/fib_trie`: an address line, then `/32 host LOCAL`).
fn host_address() -> IpAddr {
    let table = std::fs::read_to_string("/proc/net/fib_trie").expect("the kernel's routing table");
    let lines: Vec<&str> = table.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[1].trim() == "/32 host LOCAL")
        .filter_map(|w| w[0].trim().trim_start_matches(['|', '-', '+', ' ']).parse::<std::net::Ipv4Addr>().ok())
        .find(|ip| !ip.is_loopback() && !ip.is_link_local() && !ip.is_unspecified())
        .map(IpAddr::V4)
        .expect("an IPv4 address on an interface other than loopback")
}

/// An HTTP server on the machine's own address, answering as [`answer`] does; its address.
async fn backend() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((host_address(), 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let svc = hyper::service::service_fn(move |req| answer(req, addr));
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), svc).with_upgrades(),
            );
        }
    });
    addr
}

/// [`backend`] over TLS, serving a certificate of its own authority, which the system does not
/// trust.
async fn tls_backend() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((host_address(), 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ip = addr.ip().to_string();
    let cert = informer_apiserver::testing::WebhookCertificate::for_hosts(&[ip.as_str()]).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(cert.server_config().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let svc = hyper::service::service_fn(move |req| answer(req, addr));
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), svc).await;
            });
        }
    });
    addr
}

/// What the backend answers: `/redirect` a 302 to itself, `/cors` CORS headers, `/page` and
/// `/page.gz` HTML pages (the second gzipped) linking to the backend, `/stream` a body that
/// never ends, `/broken` one cut short, `/ws` a
/// WebSocket that echoes, `/upgrade-ignored` a 200 and `/upgrade-refused` a 403 to an upgrade;
/// anything else a JSON echo of the request (method, target, headers, body).
async fn answer(mut req: http::Request<Incoming>, addr: SocketAddr) -> Result<http::Response<BackendBody>, Infallible> {
    let reply = |code: u16, headers: &[(&str, &str)], body: &str| {
        let mut r = http::Response::builder().status(code);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        Ok(r.body(full(body.to_string())).unwrap())
    };
    match req.uri().path() {
        "/redirect" => reply(302, &[("location", &format!("http://{addr}/landing?x=1"))], ""),
        "/cors" => reply(
            200,
            &[
                ("access-control-allow-origin", "*"),
                ("cache-control", "max-age=5"),
                ("x-kept", "yes"),
                ("audit-id", "the-backend-s"),
            ],
            "cors",
        ),
        "/ws" => {
            let upgrade = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                let Ok(io) = upgrade.await else { return };
                let mut io = TokioIo::new(io);
                let mut buf = [0u8; 64];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
            let target = req.uri().to_string();
            reply(
                101,
                &[("connection", "Upgrade"), ("upgrade", "echo"), ("x-backend", "ws"), ("x-target", &target)],
                "",
            )
        }
        "/page" => {
            let page = format!(
                r#"<html><body><a href="/x">x</a><img src="http://{addr}/y.png"><a href="z">z</a></body></html>"#
            );
            reply(200, &[("content-type", "text/html; charset=utf-8")], &page)
        }
        "/page.gz" => {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(br#"<a href="/zipped">z</a>"#).unwrap();
            let body = gz.finish().unwrap();
            let r = http::Response::builder()
                .header("content-type", "text/html")
                .header("content-encoding", "gzip")
                .header("content-length", body.len());
            Ok(r.body(full(body)).unwrap())
        }
        "/upgrade-ignored" => reply(200, &[], "not switching"),
        "/big" => reply(200, &[("content-type", "application/json")], &"x".repeat(200 * 1024)),
        "/broken" => {
            // A body cut short: a chunk, then, once the test has read it, the connection fails.
            let frames = futures_util::stream::unfold(0, |step| async move {
                match step {
                    0 => Some((Ok(hyper::body::Frame::data(Bytes::from_static(b"partial"))), 1)),
                    1 => {
                        BREAK.notified().await;
                        Some((Err(std::io::Error::other("backend failed")), 2))
                    }
                    _ => None,
                }
            });
            let body = http_body_util::StreamBody::new(frames).boxed();
            Ok(http::Response::builder().header("content-type", "text/plain").body(body).unwrap())
        }
        "/stream" => {
            // A body that never ends: passed on as it comes, never buffered.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<hyper::body::Frame<Bytes>, std::io::Error>>(1);
            tokio::spawn(async move {
                let _ = tx.send(Ok(hyper::body::Frame::data(Bytes::from_static(b"first line\n")))).await;
                tx.closed().await;
            });
            let frames = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
            let body = http_body_util::StreamBody::new(frames).boxed();
            Ok(http::Response::builder().header("content-type", "application/json").body(body).unwrap())
        }
        "/upgrade-refused" => reply(403, &[("x-backend", "refused")], "denied"),
        _ => {
            let headers: serde_json::Map<String, Value> = req
                .headers()
                .keys()
                .map(|k| {
                    let all: Vec<&str> = req.headers().get_all(k).iter().map(|v| v.to_str().unwrap()).collect();
                    (k.to_string(), Value::from(all.join(", ")))
                })
                .collect();
            let method = req.method().to_string();
            let target = req.uri().to_string();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let echo = json!({"method": method, "target": target, "headers": headers,
                "body": String::from_utf8_lossy(&body)});
            reply(200, &[("content-type", "application/json")], &echo.to_string())
        }
    }
}

/// A running pod `name` with the IP `ip`, whose container declares `port`.
fn running_pod(name: &str, ip: &str, port: u16) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": name}},
           "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": port}]}]},
           "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}})
}

/// Creates a pod and sets its status.
async fn make_pod(c: &Client, pod: &Value) {
    let r = c.post(PODS, pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut created = r.body;
    created["status"] = pod["status"].clone();
    let name = pod["metadata"]["name"].as_str().unwrap();
    let r = c.put(&format!("{PODS}/{name}/status"), &created).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

/// A server with a backend and the pod `web` serving it on its IP and declared port.
async fn with_web_pod(s: ApiServer) -> (ApiServer, Client, SocketAddr) {
    let c = Client::new(&s);
    let backend = backend().await;
    make_pod(&c, &running_pod("web", &backend.ip().to_string(), backend.port())).await;
    (s, c, backend)
}

/// A closed port on `ip`.
async fn closed_port(ip: IpAddr) -> u16 {
    let l = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    l.local_addr().unwrap().port()
}

fn message(r: &Resp) -> &str {
    r.body["message"].as_str().unwrap_or_default()
}

fn echoed(r: &Resp) -> &Value {
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.raw));
    &r.body
}

#[tokio::test]
async fn the_proxies_are_listed_in_discovery() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get("/api/v1").await;
    let entry = |name: &str| {
        r.body["resources"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap_or_default()
    };
    let verbs = json!(["create", "delete", "get", "patch", "update"]);
    for (name, namespaced, kind) in [
        ("nodes/proxy", false, "NodeProxyOptions"),
        ("pods/proxy", true, "PodProxyOptions"),
        ("services/proxy", true, "ServiceProxyOptions"),
    ] {
        assert_eq!(
            entry(name),
            json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs})
        );
    }
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let r = c.get_accepting("/api", aggregated).await;
    let resources = r.body["items"][0]["versions"][0]["resources"].as_array().unwrap().clone();
    let subresources = |resource: &str| -> Vec<Value> {
        let r = resources.iter().find(|r| r["resource"] == resource).unwrap();
        r["subresources"].as_array().unwrap().clone()
    };
    let names = |list: &[Value]| -> Vec<String> {
        list.iter().map(|s| s["subresource"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&subresources("services")), ["proxy", "status"]);
    assert_eq!(names(&subresources("nodes")), ["proxy", "status"]);
    let pods = subresources("pods");
    let at = names(&pods).iter().position(|n| n == "proxy").expect("pods/proxy");
    assert_eq!(names(&pods)[at - 1..=at + 1], ["portforward", "proxy", "resize"]);
    assert_eq!(
        pods[at],
        json!({"subresource": "proxy", "responseKind": {"group": "", "version": "", "kind": "PodProxyOptions"},
               "verbs": verbs})
    );
}

#[tokio::test]
async fn a_pod_s_proxy_passes_requests_and_answers_as_kube_s_does() {
    let (s, c, backend) = with_web_pod(server().await).await;
    let server_host = s.url().trim_start_matches("http://").to_string();

    // A GET of a path, its query as written (a `path` there is not the option), the client's
    // credentials kept from the backend, kube's headers added.
    let proxied = "/api/v1/namespaces/default/pods/web/proxy";
    let r = c
        .get_with_headers(
            &format!("{proxied}/a/b%20c?x=1&path=/evil"),
            &[("authorization", "Bearer not-for-the-pod"), ("x-forwarded-for", "10.9.9.9"), ("cookie", "k=v")],
        )
        .await;
    let seen = echoed(&r);
    assert_eq!(seen["method"], "GET");
    assert_eq!(seen["target"], "/a/b%20c?x=1&path=/evil");
    let headers = &seen["headers"];
    assert!(headers.get("authorization").is_none(), "{headers}");
    assert_eq!(headers["host"], server_host.as_str());
    assert_eq!(headers["x-forwarded-uri"], format!("{proxied}/a/b%20c"));
    assert_eq!(headers["x-forwarded-for"], "10.9.9.9, 127.0.0.1");
    assert_eq!(headers["cookie"], "k=v");
    assert_eq!(r.headers["cache-control"], "no-cache, private");
    assert!(r.headers.get("audit-id").is_some());

    // Other methods carry their bodies; a port named explicitly; a trailing slash kept; `..`
    // cleaned away.
    let with_port = format!("/api/v1/namespaces/default/pods/web:{}/proxy", backend.port());
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        let r =
            c.send_raw(method.clone(), &format!("{with_port}/x/../submit/"), b"payload".to_vec(), "text/plain").await;
        let seen = echoed(&r);
        assert_eq!(
            (seen["method"].as_str(), seen["target"].as_str(), seen["body"].as_str()),
            (Some(method.as_str()), Some("/submit/"), Some("payload"))
        );
        assert_eq!(seen["headers"]["content-type"], "text/plain");
    }
    let r = c.send_raw(Method::HEAD, &format!("{proxied}/"), Vec::new(), "").await;
    assert_eq!(r.code, 200);
    assert!(r.raw.is_empty());
    // A `+` in a path is itself; the client's address alone when it names none before.
    let seen = echoed(&c.get(&format!("{proxied}/a+b")).await).clone();
    assert_eq!(
        (seen["target"].as_str(), seen["headers"]["x-forwarded-for"].as_str()),
        (Some("/a+b"), Some("127.0.0.1"))
    );
    assert_eq!(seen["headers"]["x-forwarded-uri"], format!("{proxied}/a+b"));

    // The answer is the backend's whatever the client accepts: not refused for its media type,
    // nor converted, indented or compressed as the server's own answers are.
    let r = c
        .get_with_headers(
            &format!("{proxied}/echo?pretty=true"),
            &[("accept", "text/html"), ("user-agent", "curl/8.0"), ("accept-encoding", "gzip")],
        )
        .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.raw));
    assert!(r.headers.get("content-encoding").is_none());
    // A body far past the server's compression threshold is not compressed either.
    let big = c.get_with_headers(&format!("{proxied}/big"), &[("accept-encoding", "gzip")]).await;
    assert_eq!((big.code, big.raw.len()), (200, 200 * 1024));
    assert!(big.headers.get("content-encoding").is_none());
    assert_eq!(serde_json::to_string(&r.body).unwrap().as_bytes(), r.raw.as_ref(), "passed on compact");
    let r = c.get_accepting(&format!("{proxied}/echo"), "application/yaml").await;
    assert_eq!((r.code, r.headers["content-type"].to_str().unwrap()), (200, "application/json"));
    // A body that never ends is passed on as it comes.
    let head = format!("GET {proxied}/stream?pretty=1 HTTP/1.1\r\nHost: {{addr}}\r\nUser-Agent: curl/8\r\n\r\n");
    let got = exchange(&s, &head, b"", b"first line").await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("\r\n\r\nB\r\nfirst line\n"), "{text}");
    // A body the backend cuts short is cut short for the client too, not ended as if whole.
    let mut tcp = tokio::net::TcpStream::connect(&server_host).await.unwrap();
    let head = format!("GET {proxied}/broken HTTP/1.1\r\nHost: {server_host}\r\n\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap_or(0);
            got.extend_from_slice(&chunk[..n]);
            if got.windows(7).any(|w| w == b"partial") {
                BREAK.notify_one();
            }
            if n == 0 {
                break;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read).await.expect("the connection cut within 20 s");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("partial"), "{text}");
    assert!(!text.ends_with("\r\n0\r\n\r\n"), "ended as if whole: {text}");

    // The bare proxy path is redirected to its directory, the query kept; a POST goes to `/`.
    let r = c.get(&format!("{proxied}?q=1")).await;
    assert_eq!(r.code, 301);
    assert_eq!(r.headers["location"], format!("{proxied}/?q=1"));
    assert!(r.raw.is_empty());
    let r = c.send_raw(Method::HEAD, proxied, Vec::new(), "").await;
    assert_eq!((r.code, r.headers["location"].to_str().unwrap()), (301, format!("{proxied}/").as_str()));
    let r = c.send_raw(Method::POST, proxied, Vec::new(), "text/plain").await;
    assert_eq!(echoed(&r)["target"], "/");

    // A redirect to the backend itself is brought under the proxy; CORS headers are the
    // server's to give, not the backend's; the backend's Cache-Control comes after the server's.
    let r = c.get(&format!("{proxied}/redirect")).await;
    assert_eq!(r.code, 302);
    assert_eq!(r.headers["location"], format!("{proxied}/landing?x=1"));
    let r = c.get(&format!("{proxied}/cors")).await;
    assert_eq!((r.code, r.raw.as_ref()), (200, b"cors".as_ref()));
    assert!(r.headers.get("access-control-allow-origin").is_none());
    assert_eq!(r.headers["x-kept"], "yes");
    let cache: Vec<&str> = r.headers.get_all("cache-control").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(cache, ["no-cache, private", "max-age=5"]);
    // The server's Audit-ID comes first, the backend's after it.
    let ids: Vec<&str> = r.headers.get_all("audit-id").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[1], "the-backend-s");

    // An HTML page's links to the backend are brought under the proxy, gzipped or not.
    let r = c.get(&format!("{proxied}/page")).await;
    assert_eq!(r.code, 200);
    assert_eq!(
        String::from_utf8_lossy(&r.raw),
        format!(r#"<html><body><a href="{proxied}/x">x</a><img src="{proxied}/y.png"><a href="z">z</a></body></html>"#)
    );
    let r = c.get(&format!("{proxied}/page.gz")).await;
    assert_eq!((r.code, r.headers["content-encoding"].to_str().unwrap()), (200, "gzip"));
    let mut page = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(r.raw.as_ref()), &mut page).unwrap();
    assert_eq!(page, format!(r#"<a href="{proxied}/zipped">z</a>"#));
}

#[tokio::test]
async fn a_pod_without_a_reachable_address_is_answered_as_kube_answers() {
    let s = server().await;
    let c = Client::new(&s);
    let ip = host_address();
    let closed = closed_port(ip).await;
    make_pod(&c, &running_pod("closed", &ip.to_string(), closed)).await;
    make_pod(&c, &running_pod("local", "127.0.0.1", 80)).await;
    make_pod(&c, &running_pod("linklocal", "169.254.1.1", 80)).await;
    assert_eq!(c.post(PODS, &pod("pending", json!({}))).await.code, 201);

    let cases = [
        ("ftp:closed:80", 400, "BadRequest", "invalid pod request \"ftp:closed:80\""),
        ("a:b:c:d", 400, "BadRequest", "invalid pod request \"a:b:c:d\""),
        ("nope", 404, "NotFound", "pods \"nope\" not found"),
        ("pending", 400, "BadRequest", "address not allowed"),
        ("local", 400, "BadRequest", "address not allowed"),
        ("linklocal", 400, "BadRequest", "address not allowed"),
    ];
    for (id, code, reason, words) in cases {
        let r = c.get(&format!("{PODS}/{id}/proxy/")).await;
        assert_eq!((r.code, r.body["reason"].as_str(), message(&r)), (code, Some(reason), words), "{id}");
    }
    // Nothing listening: kube's 503 with Go's dial error.
    let r = c.get(&format!("{PODS}/closed/proxy/")).await;
    assert_eq!(r.code, 503, "{}", r.body);
    assert_eq!(r.body["reason"], "ServiceUnavailable");
    assert_eq!(
        message(&r),
        format!("error trying to reach service: dial tcp {ip}:{closed}: connect: connection refused")
    );
    // A port name cannot be put in kube's URL: its handler panics.
    let r = c.get(&format!("{PODS}/closed:http/proxy/")).await;
    assert_eq!(r.code, 500);
    assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers["cache-control"], "no-cache, private");
    assert_eq!(r.raw.as_ref(), b"This request caused apiserver to panic. Look in the logs for details.\n");
    // A dry run is refused before anything is looked up; other methods are not routed.
    let r = c.get(&format!("{PODS}/nope/proxy/?dryRun=All")).await;
    assert_eq!((r.code, message(&r)), (400, "dryRun is not supported"));
    let r = c.send_raw(Method::from_bytes(b"PURGE").unwrap(), &format!("{PODS}/closed/proxy/"), Vec::new(), "").await;
    assert_eq!(r.code, 405);
}

#[tokio::test]
async fn a_service_s_proxy_reaches_a_ready_endpoint_of_its_pods() {
    let (_s, c, backend) = with_web_pod(server().await).await;
    let ip = backend.ip().to_string();
    let service = json!({"metadata": {"name": "svc"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": backend.port()}, {"name": "other", "port": 81}]}});
    assert_eq!(c.post("/api/v1/namespaces/default/services", &service).await.code, 201);
    // Endpoints as the endpoints controller writes them, plus a not-ready address that is never
    // chosen, and an address no pod holds.
    let endpoints = |name: &str, target: Value| {
        json!({"metadata": {"name": name},
            "subsets": [{"addresses": [{"ip": ip, "targetRef": target}],
                         "notReadyAddresses": [{"ip": "10.1.1.1"}],
                         "ports": [{"name": "http", "port": backend.port()}]}]})
    };
    let to_web = json!({"kind": "Pod", "namespace": "default", "name": "web"});
    let r = c.post("/api/v1/namespaces/default/endpoints", &endpoints("svc", to_web.clone())).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let proxied = "/api/v1/namespaces/default/services";
    for id in ["svc:http", "svc:80", "http:svc:http"] {
        let r = c.get(&format!("{proxied}/{id}/proxy/hello?a=b")).await;
        assert_eq!(echoed(&r)["target"], "/hello?a=b", "{id}");
        assert_eq!(r.body["headers"]["x-forwarded-uri"], format!("{proxied}/{id}/proxy/hello"));
    }
    let cases = [
        ("svc:81", 503, "no endpoints available for service \"svc:81\""),
        ("svc:82", 503, "no service port 82 found for service \"svc\""),
        ("svc", 503, "no endpoints available for service \"svc\""),
        ("nope", 404, "endpoints \"nope\" not found"),
        ("nope:80", 404, "services \"nope\" not found"),
        ("ftp:svc:80", 400, "invalid service request \"ftp:svc:80\""),
    ];
    for (id, code, words) in cases {
        let r = c.get(&format!("{proxied}/{id}/proxy/")).await;
        assert_eq!((r.code, message(&r)), (code, words), "{id}");
    }
    // An address without a pod holding it is never proxied to; nor one of no subset.
    for (name, target) in
        [("stray", Value::Null), ("elsewhere", json!({"kind": "Pod", "namespace": "other", "name": "web"}))]
    {
        let mut e = endpoints(name, target);
        if name == "stray" {
            e["subsets"][0]["addresses"][0].as_object_mut().unwrap().remove("targetRef");
        }
        assert_eq!(c.post("/api/v1/namespaces/default/endpoints", &e).await.code, 201);
        let r = c.get(&format!("{proxied}/{name}:http/proxy/")).await;
        let words = format!("no endpoints available for service \"{name}:http\"");
        assert_eq!((r.code, message(&r)), (503, words.as_str()), "{name}");
    }
    let empty = json!({"metadata": {"name": "empty"}});
    assert_eq!(c.post("/api/v1/namespaces/default/endpoints", &empty).await.code, 201);
    let r = c.get(&format!("{proxied}/empty/proxy/")).await;
    assert_eq!((r.code, message(&r)), (503, "no endpoints available for service \"empty\""));
}

#[tokio::test]
async fn a_node_s_proxy_reaches_its_ports_and_not_its_kubelet() {
    let s = server().await;
    let c = Client::new(&s);
    let backend = backend().await;
    let ip = backend.ip();
    let kubelet = closed_port(ip).await;
    let node = |name: &str, address: &str| {
        json!({"metadata": {"name": name},
               "status": {"addresses": [{"type": "InternalIP", "address": address}],
                          "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet}}}})
    };
    let listening = |name: &str| {
        let mut n = node(name, &ip.to_string());
        n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = json!(backend.port());
        n
    };
    for (name, wanted) in [
        ("n1", node("n1", &ip.to_string())),
        ("local", node("local", "127.0.0.1")),
        ("n2", listening("n2")),
        ("ghost", node("ghost", "ghost.invalid")),
    ] {
        let r = c.post("/api/v1/nodes", &wanted).await;
        assert_eq!(r.code, 201, "{}", r.body);
        let mut status = r.body;
        status["status"] = wanted["status"].clone();
        assert_eq!(c.put(&format!("/api/v1/nodes/{name}/status"), &status).await.code, 200);
    }
    // Another port of the node: its server, over http.
    let r = c.get(&format!("/api/v1/nodes/n1:{}/proxy/metrics", backend.port())).await;
    assert_eq!(echoed(&r)["target"], "/metrics");
    // The kubelet (no port, or its own): over https, whatever the scheme asked; not listening.
    for id in ["n1", &format!("http:n1:{kubelet}")] {
        let r = c.get(&format!("/api/v1/nodes/{id}/proxy/pods")).await;
        assert_eq!(r.code, 503, "{id}: {}", r.body);
        assert_eq!(
            message(&r),
            format!("error trying to reach service: dial tcp {ip}:{kubelet}: connect: connection refused")
        );
    }
    // A kubelet that answers is not spoken to: the server holds no kubelet client credentials.
    let r = c.get("/api/v1/nodes/n2/proxy/pods").await;
    assert_eq!(r.code, 503, "{}", r.body);
    assert_eq!(message(&r), "error trying to reach service: this server holds no kubelet client credentials");
    let r = c.get("/api/v1/nodes/nope/proxy/").await;
    assert_eq!((r.code, message(&r)), (404, "nodes \"nope\" not found"));
    // A name that does not resolve, in Go's resolver's words.
    let r = c.get("/api/v1/nodes/ghost/proxy/").await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        message(&r).starts_with("lookup ghost.invalid on ") && message(&r).ends_with(":53: no such host"),
        "{}",
        r.body
    );
    let r = c.get("/api/v1/nodes/local/proxy/").await;
    assert_eq!((r.code, message(&r)), (400, "address not allowed"));
    let r = c.get("/api/v1/nodes/ftp:n1:1/proxy/").await;
    assert_eq!((r.code, message(&r)), (400, "invalid node request \"ftp:n1:1\""));
    // Not a namespaced path.
    assert_eq!(c.get("/api/v1/namespaces/default/nodes/n1/proxy/").await.code, 404);
}

/// Sends `head` (with `{addr}` for the server's address) to the server and reads what comes
/// back until `until` has been read or the server closes; after a 101, sends `then` first.
async fn exchange(s: &informer_apiserver::ApiServer, head: &str, then: &[u8], until: &[u8]) -> Vec<u8> {
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tcp.write_all(head.replace("{addr}", &addr).as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        let mut sent = false;
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..n]);
            if n == 0 || bytes.windows(until.len()).any(|w| w == until) {
                break;
            }
            if !sent && bytes.starts_with(b"HTTP/1.1 101") && bytes.windows(4).any(|w| w == b"\r\n\r\n") {
                sent = true;
                tcp.write_all(then).await.unwrap();
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(20), read).await.is_err() {
        panic!("the answer within 20 s: {}", String::from_utf8_lossy(&bytes));
    }
    bytes
}

#[tokio::test]
async fn a_switch_of_protocols_joins_the_client_to_the_backend() {
    let (s, c, backend) = with_web_pod(server().await).await;
    let request = |path: &str| {
        format!(
            "GET /api/v1/namespaces/default/pods/web/proxy{path} HTTP/1.1\r\nHost: {{addr}}\r\n\
             Connection: Upgrade\r\nUpgrade: echo\r\n\r\n"
        )
    };
    let got = exchange(&s, &request("/ws?q=1"), b"ping-through-the-proxy", b"ping-through-the-proxy").await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 101"), "{text}");
    assert!(text.to_ascii_lowercase().contains("x-backend: ws"), "{text}");
    // As kube's, the query stays behind.
    assert!(text.to_ascii_lowercase().contains("x-target: /ws\r\n"), "{text}");
    assert!(text.ends_with("ping-through-the-proxy"), "{text}");
    // Through a Service's endpoint too.
    let service = json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"name": "http", "port": 80}]}});
    assert_eq!(c.post("/api/v1/namespaces/default/services", &service).await.code, 201);
    let endpoints = json!({"metadata": {"name": "svc"}, "subsets": [{
        "addresses": [{"ip": backend.ip().to_string(), "targetRef": {"kind": "Pod", "namespace": "default", "name": "web"}}],
        "ports": [{"name": "http", "port": backend.port()}]}]});
    assert_eq!(c.post("/api/v1/namespaces/default/endpoints", &endpoints).await.code, 201);
    let head = request("/ws").replace("pods/web/", "services/svc:http/");
    let got = exchange(&s, &head, b"through-the-service", b"through-the-service").await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 101") && text.ends_with("through-the-service"), "{text}");
    // A backend that does not switch: kube's 500; one that refuses: its answer.
    let got = exchange(&s, &request("/upgrade-ignored"), b"", b"}").await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 500"), "{text}");
    assert!(text.contains("\"message\":\"invalid upgrade response: status code 200\""), "{text}");
    let got = exchange(&s, &request("/upgrade-refused"), b"", b"denied").await;
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 403"), "{text}");
    assert!(text.contains("x-backend: refused") && text.contains("connection: close"), "{text}");
    // Nothing listening: kube's plain 500.
    let closed = closed_port(backend.ip()).await;
    make_pod(&c, &running_pod("gone", &backend.ip().to_string(), closed)).await;
    let head = request("/ws").replace("pods/web/", "pods/gone/");
    let got = exchange(&s, &head, b"", b"}").await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 500"), "{text}");
    let words = format!("error dialing backend: dial tcp {}:{closed}: connect: connection refused", backend.ip());
    assert!(text.contains(&words), "{text}");
}

#[tokio::test]
async fn the_server_s_stop_ends_a_tunnel() {
    let (s, _c, _backend) = with_web_pod(server().await).await;
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "GET /api/v1/namespaces/default/pods/web/proxy/ws HTTP/1.1\r\nHost: {addr}\r\n\
         Connection: Upgrade\r\nUpgrade: echo\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    while !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tcp.read(&mut chunk).await.unwrap();
        assert_ne!(n, 0, "{}", String::from_utf8_lossy(&bytes));
        bytes.extend_from_slice(&chunk[..n]);
    }
    assert!(bytes.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&bytes));
    tcp.write_all(b"before-the-stop").await.unwrap();
    let mut echoed = Vec::new();
    while echoed.len() < b"before-the-stop".len() {
        let n = tcp.read(&mut chunk).await.unwrap();
        assert_ne!(n, 0);
        echoed.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(echoed, b"before-the-stop");
    s.stop().await;
    // The tunnel is closed: the client reads its end.
    let closed = async {
        loop {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let wait = std::time::Duration::from_secs(20);
    assert!(tokio::time::timeout(wait, closed).await.is_ok(), "the tunnel outlived the server's stop");
}

#[tokio::test]
async fn proxies_are_authorized_by_method_and_name_and_admitted_with_their_options() {
    let (_s, admin, backend) = with_web_pod(rbac_server().await).await;
    let role = json!({"metadata": {"name": "reader"}, "rules": [{"apiGroups": [""], "resources": ["pods/proxy"],
        "resourceNames": ["web"], "verbs": ["get"]}]});
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    assert_eq!(admin.post(&format!("{rbac}/roles"), &role).await.code, 201);
    let binding = json!({"metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]});
    assert_eq!(admin.post(&format!("{rbac}/rolebindings"), &binding).await.code, 201);
    // A consistent read: the server's authorizer, which reads its cache, holds the binding.
    assert_eq!(admin.get(&format!("{rbac}/roles")).await.code, 200);

    let alice = admin.clone().impersonating("alice");
    let r = alice.get(&format!("{PODS}/web/proxy/")).await;
    // Impersonation is the server's: the backend does not see it.
    assert!(echoed(&r)["headers"].get("impersonate-user").is_none(), "{}", r.body);
    let r = alice.send_raw(Method::POST, &format!("{PODS}/web/proxy/"), Vec::new(), "text/plain").await;
    assert_eq!(r.code, 403);
    assert_eq!(
        message(&r),
        "pods \"web\" is forbidden: User \"alice\" cannot create resource \"pods/proxy\" in API group \"\" in the namespace \"default\""
    );
    // The name is the whole segment, port and all.
    let r = alice.get(&format!("{PODS}/web:{}/proxy/", backend.port())).await;
    assert_eq!(r.code, 403, "{}", r.body);
    // OPTIONS has no verb: only a rule granting every verb allows it.
    let r = alice.send_raw(Method::OPTIONS, &format!("{PODS}/web/proxy/"), Vec::new(), "").await;
    assert_eq!(r.code, 403);
    assert_eq!(
        message(&r),
        "pods \"web\" is forbidden: User \"alice\" cannot  resource \"pods/proxy\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(admin.send_raw(Method::OPTIONS, &format!("{PODS}/web/proxy/"), Vec::new(), "").await.code, 200);

    // A policy judging the options: the path the backend would be asked for.
    let policy = json!({"metadata": {"name": "no-secrets"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CONNECT"], "resources": ["pods/proxy"]}]},
        "validations": [{"expression": "object.kind == 'PodProxyOptions' && !object.path.startsWith('/secret')",
                         "messageExpression": "'no secrets: ' + object.path"}]}});
    let admission = "/apis/admissionregistration.k8s.io/v1";
    assert_eq!(admin.post(&format!("{admission}/validatingadmissionpolicies"), &policy).await.code, 201);
    let policy_binding = json!({"metadata": {"name": "no-secrets"},
        "spec": {"policyName": "no-secrets", "validationActions": ["Deny"]}});
    assert_eq!(admin.post(&format!("{admission}/validatingadmissionpolicybindings"), &policy_binding).await.code, 201);
    let r = admin.get(&format!("{PODS}/web/proxy/secret//key/")).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    assert_eq!(
        message(&r),
        "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'no-secrets' with binding 'no-secrets' denied request: no secrets: /secret//key/"
    );
    assert_eq!(echoed(&admin.get(&format!("{PODS}/web/proxy/public")).await)["target"], "/public");
}

const PY_PROXY: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
pod = json.loads(v1.connect_get_namespaced_pod_proxy_with_path("web", "default", "from/python", _preload_content=False).data)
svc = json.loads(v1.connect_get_namespaced_service_proxy_with_path("svc:http", "default", "via/service", _preload_content=False).data)
print(json.dumps({"pod": pod["target"], "service": svc["target"]}))
"#;

#[tokio::test]
async fn kubectl_and_the_python_client_read_through_the_proxies() {
    let (s, c, backend) = with_web_pod(server().await).await;
    let ip = backend.ip().to_string();
    let service = json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"name": "http", "port": 80}]}});
    assert_eq!(c.post("/api/v1/namespaces/default/services", &service).await.code, 201);
    let endpoints = json!({"metadata": {"name": "svc"}, "subsets": [{
        "addresses": [{"ip": ip, "targetRef": {"kind": "Pod", "namespace": "default", "name": "web"}}],
        "ports": [{"name": "http", "port": backend.port()}]}]});
    assert_eq!(c.post("/api/v1/namespaces/default/endpoints", &endpoints).await.code, 201);

    let dir = common::tools::tempdir("proxies");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let raw = "/api/v1/namespaces/default/pods/web/proxy/from/kubectl?n=1";
    let (ok, out, err) = common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &["get", "--raw", raw]).await;
    assert!(ok, "{err}");
    let seen: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["target"], "/from/kubectl?n=1");
    assert!(seen["headers"]["user-agent"].as_str().unwrap().starts_with("kubectl"), "{seen}");

    let answer = common::tools::python_json(PY_PROXY, &kc).await;
    assert_eq!(answer, json!({"pod": "/from/python", "service": "/via/service"}));

    // `kubectl proxy` in front of the server, as a browser reaches a Service's pages: the
    // page's links stay under the Service's proxy.
    let mut proxy = tokio::process::Command::new(&bin)
        .args(["proxy", "--port=0", "--kubeconfig"])
        .arg(&kc)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = tokio::io::BufReader::new(proxy.stdout.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line),
    )
    .await
    .expect("kubectl proxy starts")
    .unwrap();
    let local = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(line.starts_with("Starting to serve on "), "{line}");
    let mut through = Client::new(&s);
    through.base = format!("http://{local}");
    let service = "/api/v1/namespaces/default/services/svc:http/proxy";
    let r = through.get(&format!("{service}/page")).await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.raw));
    let page = String::from_utf8_lossy(&r.raw);
    assert!(page.contains(&format!(r#"<a href="{service}/x">"#)), "{page}");
    assert!(page.contains(&format!(r#"<img src="{service}/y.png">"#)), "{page}");
}

#[tokio::test]
async fn https_backends_are_verified_unless_the_server_is_told_not_to() {
    let backend = tls_backend().await;
    let path = format!("{PODS}/https:secure:{}/proxy/over-tls", backend.port());
    for verify in [true, false] {
        let s = informer_apiserver::testing::builder().verify_proxied_tls(verify).start().await.unwrap();
        let c = Client::new(&s);
        make_pod(&c, &running_pod("secure", &backend.ip().to_string(), backend.port())).await;
        let r = c.get(&path).await;
        if verify {
            assert_eq!(r.code, 503, "{}", r.body);
            assert_eq!(
                message(&r),
                "error trying to reach service: tls: failed to verify certificate: x509: certificate signed by unknown authority"
            );
        } else {
            assert_eq!(echoed(&r)["target"], "/over-tls");
        }
    }
}

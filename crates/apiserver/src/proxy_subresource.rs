//! The proxy subresources — `pods/proxy`, `services/proxy` and `nodes/proxy` — as
//! kube-apiserver v1.35 serves them: a request to `…/{name}/proxy[/{path}]` is checked as
//! kube's connecter handler checks it, offered to admission as a `CONNECT` carrying its
//! `PodProxyOptions`, `ServiceProxyOptions` or `NodeProxyOptions`, its backend found as kube's
//! `ResourceLocation`s find it, then passed on by [`crate::upgrade_aware_proxy`].
//!
//! The name segment is kube's `[scheme:]name[:port]` (scheme `http` or `https`):
//! - a pod's backend is its first IP, which must be a global unicast address (400 `address
//!   not allowed` otherwise: none yet, loopback, link-local), on the port named or the first
//!   port its first container with ports declares;
//! - a Service's is one of the ready addresses of its Endpoints, on the endpoint port whose
//!   name is the port named (a number is the Service port of that number, whose name is looked
//!   up), chosen at random among those whose `targetRef` is a pod of the Service's namespace
//!   holding that IP; none: 503 `no endpoints available for service`;
//! - a node's is its kubelet (the address of kube's preferred types, the port it reports or
//!   10250, over `https`) when no other port is named, or that port on the node's address.
//!
//! Invariants: every method kube routes is served (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`,
//! `HEAD`, `OPTIONS`; others 405); `dryRun` is refused before anything else (400); the `path`
//! option is the request's path after `proxy` (decoded, a trailing `/` kept), whatever the query
//! says, and admission may change it; the backend path is that path cleaned as Go's `path.Join`
//! cleans it, its trailing `/` kept; nothing is written to the store. A port kube cannot put in
//! a URL (a pod's or node's port name) is answered as kube's handler panicking on it is (500).

use std::net::IpAddr;

use http::{Method, Response};
use hyper::body::Incoming;
use serde_json::{Map, Value};

use crate::body::Body;
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Store;
use crate::upgrade_aware_proxy::Backend;

/// The subresource served here.
pub(crate) const SUBRESOURCE: &str = "proxy";

/// The kind of the options a resource's proxy requests carry, for the resources that have one.
pub(crate) fn options_kind(plural: &str) -> Option<&'static str> {
    match plural {
        "pods" => Some("PodProxyOptions"),
        "services" => Some("ServiceProxyOptions"),
        "nodes" => Some("NodeProxyOptions"),
        _ => None,
    }
}

/// Whether `info` has a proxy subresource.
pub(crate) fn serves(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.version == "v1" && info.custom.is_none() && options_kind(&info.plural).is_some()
}

/// The `path` option of a request for `request_path` (decoded) whose first `before` segments
/// lead up to `proxy`: `/` and the segments after it, empty ones kept, a trailing `/` kept
/// (kube's `getRequestOptions`).
pub(crate) fn path_option(request_path: &str, before: usize) -> String {
    let parts: Vec<&str> = request_path.trim_matches('/').split('/').collect();
    let mut path = parts.get(before..).unwrap_or_default().join("/");
    if !path.is_empty() {
        path.insert(0, '/');
    }
    if request_path.ends_with('/') && !path.ends_with('/') {
        path.push('/');
    }
    path
}

/// A request for a proxy subresource.
pub(crate) struct Request<'a> {
    /// pods, services or nodes ([`serves`]).
    pub info: &'a ResourceInfo,
    pub ns: &'a str,
    /// The name segment as the client wrote it (`[scheme:]name[:port]`).
    pub id: &'a str,
    /// The `path` option ([`path_option`]).
    pub path: String,
    pub query: &'a [(String, String)],
    /// Whether an `https` backend's certificate is verified.
    pub verify_tls: bool,
    pub req: http::Request<Incoming>,
}

/// Answers `r` (see the module documentation).
pub(crate) async fn serve(store: &Store, r: Request<'_>) -> Result<Response<Body>, ApiError> {
    let allowed =
        [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE, Method::HEAD, Method::OPTIONS];
    if !allowed.contains(r.req.method()) {
        return Err(ApiError::method_not_allowed());
    }
    if r.query.iter().any(|(k, _)| k == "dryRun") {
        return Err(ApiError::bad_request("dryRun is not supported"));
    }
    let mut options = options(r.info, &r.path);
    let connect = crate::pod_subresource::Creation {
        operation: "CONNECT",
        info: r.info,
        subresource: SUBRESOURCE,
        ns: r.ns,
        name: r.id,
        dry_run: false,
    };
    connect.mutate(store, &mut options).await?;
    connect.validate(store, &options).await?;
    let path = options.get("path").and_then(Value::as_str).unwrap_or("");
    let located = match r.info.plural.as_str() {
        "pods" => pod_location(store, r.info, r.ns, r.id).await?,
        "services" => service_location(store, r.info, r.ns, r.id).await?,
        _ => node_location(store, r.info, r.id).await?,
    };
    let Some(mut backend) = located else { return Ok(panicked()) };
    backend.verify_tls = r.verify_tls;
    backend.path = join_preserving_trailing_slash(&backend.path, path);
    crate::upgrade_aware_proxy::serve(backend, r.req).await
}

/// The options a request carries, as Go writes them (`path` omitted when empty).
fn options(info: &ResourceInfo, path: &str) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("kind".into(), options_kind(&info.plural).unwrap_or_default().into());
    o.insert("apiVersion".into(), "v1".into());
    if !path.is_empty() {
        o.insert("path".into(), path.into());
    }
    o
}

/// kube's `JoinPreservingTrailingSlash` of a location's path and the `path` option.
fn join_preserving_trailing_slash(a: &str, b: &str) -> String {
    let mut joined = crate::go_path::join(a, b);
    let last = if b.is_empty() { a } else { b };
    if last.ends_with('/') && !joined.ends_with('/') {
        joined.push('/');
    }
    joined
}

/// kube's `SplitSchemeNamePort`: `name`, `name:port` or `scheme:name:port`, the scheme `http`,
/// `https` or none, the name not empty.
fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

/// Go's `IP.IsGlobalUnicast` (an IPv4-mapped address judged as IPv4, as Go holds it).
fn is_global_unicast(ip: IpAddr) -> bool {
    crate::cel_network::global_unicast(ip.to_canonical())
}

/// kube-apiserver's answer to a request its handler panicked on: its panic recovery filter's
/// plain-text 500.
fn panicked() -> Response<Body> {
    let message = format!("{}\n", crate::status::PANICKED);
    let mut r = crate::body::respond(500, "text/plain; charset=utf-8", Body::Full(Some(message.into())));
    r.headers_mut().insert("x-content-type-options", http::HeaderValue::from_static("nosniff"));
    r
}

/// A backend at `host` on `port` (a URL's port as written; empty for the scheme's own); None
/// for a port kube cannot put in a URL, on which its handler panics.
fn backend(scheme: &str, host: &str, port: &str) -> Option<Backend> {
    let scheme = if scheme == "https" { "https" } else { "http" };
    let (number, authority) = if port.is_empty() {
        let bare = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
        (if scheme == "https" { 443 } else { 80 }, bare)
    } else {
        // kube puts the port in a URL it then fails to read when it is not a number.
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        (port.parse().unwrap_or(i64::MAX), crate::dialer::join_host_port(host, port))
    };
    let host = host.to_string();
    Some(Backend { scheme, host, port: number, authority, path: String::new(), kubelet: false, verify_tls: true })
}

/// kube's pod `ResourceLocation`.
async fn pod_location(store: &Store, pods: &ResourceInfo, ns: &str, id: &str) -> Result<Option<Backend>, ApiError> {
    let Some((scheme, name, port)) = split_scheme_name_port(id) else {
        return Err(ApiError::bad_request(format!("invalid pod request {}", crate::structural::go_quote(id))));
    };
    let pod = store.get(pods, ns, name).await?.value();
    let mut port = port.to_string();
    if port.is_empty() {
        let declared = crate::object::elements(pod.pointer("/spec/containers"))
            .iter()
            .find_map(|c| crate::object::elements(c.get("ports")).first().map(|p| p["containerPort"].clone()));
        if let Some(n) = declared.and_then(|n| n.as_i64()) {
            port = n.to_string();
        }
    }
    let ip = pod_ip(&pod);
    match ip.parse::<IpAddr>() {
        Ok(addr) if is_global_unicast(addr) => Ok(backend(scheme, ip, &port)),
        _ => Err(ApiError::bad_request("address not allowed")),
    }
}

/// A pod's first IP (`status.podIPs`, or `status.podIP`), "" when it has none.
fn pod_ip(pod: &Value) -> &str {
    let first = crate::object::elements(pod.pointer("/status/podIPs")).first().and_then(|p| p.get("ip"));
    first.or_else(|| pod.pointer("/status/podIP")).and_then(Value::as_str).unwrap_or("")
}

/// kube's Service `ResourceLocation` (over the Service's Endpoints).
async fn service_location(
    store: &Store,
    services: &ResourceInfo,
    ns: &str,
    id: &str,
) -> Result<Option<Backend>, ApiError> {
    let Some((scheme, name, port)) = split_scheme_name_port(id) else {
        return Err(ApiError::bad_request(format!("invalid service request {}", crate::structural::go_quote(id))));
    };
    let unavailable = |m: String| ApiError::new(503, "ServiceUnavailable", m);
    let mut port_name = port.to_string();
    if let Ok(number) = crate::go_strconv::parse_int(port) {
        let service = store.get(services, ns, name).await?.value();
        let named = crate::object::elements(service.pointer("/spec/ports"))
            .iter()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number))
            .map(|p| p.get("name").and_then(Value::as_str).unwrap_or("").to_string());
        match named {
            Some(n) => port_name = n,
            None => {
                let quoted = crate::structural::go_quote(name);
                return Err(unavailable(format!("no service port {number} found for service {quoted}")));
            }
        }
    }
    let registry = store.registry();
    let (Some(endpoints_info), Some(pods)) =
        (registry.find("", "v1", "endpoints").cloned(), registry.find("", "v1", "pods").cloned())
    else {
        return Err(ApiError::no_route());
    };
    drop(registry);
    let endpoints = store.get(&endpoints_info, ns, name).await?.value();
    let subsets = crate::object::elements(endpoints.get("subsets"));
    if subsets.is_empty() {
        let quoted = crate::structural::go_quote(name);
        return Err(unavailable(format!("no endpoints available for service {quoted}")));
    }
    let first_subset = rand::random_range(0..subsets.len());
    for k in 0..subsets.len() {
        let subset = &subsets[(first_subset + k) % subsets.len()];
        let addresses = crate::object::elements(subset.get("addresses"));
        if addresses.is_empty() {
            continue;
        }
        for endpoint_port in crate::object::elements(subset.get("ports")) {
            if endpoint_port.get("name").and_then(Value::as_str).unwrap_or("") != port_name {
                continue;
            }
            let number = endpoint_port.get("port").and_then(Value::as_i64).unwrap_or(0);
            let first_address = rand::random_range(0..addresses.len());
            for a in 0..addresses.len() {
                let address = &addresses[(first_address + a) % addresses.len()];
                let ip = address.get("ip").and_then(Value::as_str).unwrap_or("");
                if is_valid_address(store, &pods, ns, address, ip).await {
                    return Ok(backend(scheme, ip, &number.to_string()));
                }
            }
        }
    }
    Err(unavailable(format!("no endpoints available for service {}", crate::structural::go_quote(id))))
}

/// kube's `isValidAddress`: the address names a pod of `ns` (its `targetRef`) that holds `ip`.
async fn is_valid_address(store: &Store, pods: &ResourceInfo, ns: &str, address: &Value, ip: &str) -> bool {
    let Some(target) = address.get("targetRef").filter(|t| t.is_object()) else { return false };
    if target.get("namespace").and_then(Value::as_str).unwrap_or("") != ns {
        return false;
    }
    let name = target.get("name").and_then(Value::as_str).unwrap_or("");
    let Ok(pod) = store.get(pods, ns, name).await else { return false };
    let pod = pod.value();
    crate::object::elements(pod.pointer("/status/podIPs"))
        .iter()
        .any(|p| p.get("ip").and_then(Value::as_str) == Some(ip))
}

/// kube's node `ResourceLocation`: the kubelet, or another port on the node's address.
async fn node_location(store: &Store, nodes: &ResourceInfo, id: &str) -> Result<Option<Backend>, ApiError> {
    let Some((scheme, name, port)) = split_scheme_name_port(id) else {
        return Err(ApiError::bad_request(format!("invalid node request {}", crate::structural::go_quote(id))));
    };
    let (host, kubelet_port) = crate::pod_connection::kubelet(store, nodes, name).await?;
    proxyable_hostname(&host).await.map_err(ApiError::bad_request)?;
    if port.is_empty() || port == kubelet_port.to_string() {
        let kubelet = backend("https", &host, &kubelet_port.to_string()).map(|b| Backend { kubelet: true, ..b });
        return Ok(kubelet);
    }
    Ok(backend(scheme, &host, port))
}

/// kube's `isProxyableHostname`: the name resolves, and to global unicast addresses only.
async fn proxyable_hostname(host: &str) -> Result<(), String> {
    let lookup = tokio::time::timeout(crate::dialer::GO_DIAL_LIMIT, tokio::net::lookup_host((host, 0)));
    let found: Vec<std::net::SocketAddr> = match lookup.await {
        Ok(Ok(found)) => found.collect(),
        Ok(Err(_)) => return Err(crate::dialer::no_such_host(host)),
        Err(_) => return Err(format!("lookup {host}: i/o timeout")),
    };
    if found.is_empty() {
        return Err("no addresses for hostname".into());
    }
    if found.iter().any(|a| !is_global_unicast(a.ip())) {
        return Err("address not allowed".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_split_as_kube_splits_them() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(split_scheme_name_port("web:8080"), Some(("", "web", "8080")));
        assert_eq!(split_scheme_name_port("https:web:"), Some(("https", "web", "")));
        assert_eq!(split_scheme_name_port("ftp:web:80"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    }

    #[test]
    fn only_global_unicast_addresses_are_proxied_to() {
        for ok in ["10.0.0.1", "192.0.2.2", "8.8.8.8", "fd00::1", "2001:db8::1", "::ffff:10.0.0.1"] {
            assert!(is_global_unicast(ok.parse().unwrap()), "{ok}");
        }
        for refused in ["127.0.0.1", "169.254.1.1", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1", "fe80::1", "::"] {
            assert!(!is_global_unicast(refused.parse().unwrap()), "{refused}");
        }
    }

    #[test]
    fn the_path_option_is_the_rest_of_the_path_its_slash_kept() {
        assert_eq!(path_option("/api/v1/nodes/n/proxy", 5), "");
        assert_eq!(path_option("/api/v1/nodes/n/proxy/", 5), "/");
        assert_eq!(path_option("/api/v1/namespaces/d/pods/p/proxy/a//b/", 7), "/a//b/");
        assert_eq!(join_preserving_trailing_slash("", "/a//b/../c/"), "/a/c/");
        assert_eq!(join_preserving_trailing_slash("", ""), "");
        let services = ResourceInfo::new("", "v1", "services", "Service", true);
        assert_eq!(Value::Object(options(&services, "")), json!({"kind": "ServiceProxyOptions", "apiVersion": "v1"}));
        assert_eq!(options(&services, "/a")["path"], "/a");
    }
}

//! A pod's connection subresources — `log`, `exec`, `attach` and `portforward` — as
//! kube-apiserver v1.35 answers them on the way to the pod's kubelet: the options read from the
//! query, a log's options validated, a connection's options offered to admission (`CONNECT`),
//! a `get` of a connection authorized again as `create`, the pod and its container looked up,
//! then the pod's node and the kubelet's address and port.
//!
//! This server holds no kubelet client credentials, so it never talks to a kubelet: a request
//! that gets that far is answered as kube-apiserver answers when the kubelet cannot be reached,
//! with the error of the server's own dial of the kubelet's address (up to 30 s, as kube's
//! dialer waits); a kubelet that accepts the connection gets nothing, and the request is refused
//! with a 500 saying why. A v5 WebSocket of `exec` or `attach` is accepted first and told on
//! the connection, as kube's stream translator tells it ([`crate::stream_translator`]); any other
//! connection gets the error as its answer. Like kube's, these requests make the server connect
//! to whatever address a Node reports, which a user allowed to write Nodes chooses.
//!
//! Invariants, as kube's `LogREST`, `ExecREST`, `AttachREST`, `PortForwardREST` and the pod
//! strategy's `LogLocation` / `streamLocation` hold them:
//! - a log is a `GET`; a connection a `GET` or a `POST` (any other method: 405);
//! - query values are read as kube's parameter codec reads them (the first of each, in the
//!   conversion's order; a flag is false only for `0` or `false`; numbers Go's `ParseInt`;
//!   unknown keys ignored), a value it cannot read refused with 400 and Go's words; `dryRun`
//!   refused for a connection;
//! - a log's options are judged before the pod is read (422 `PodLogOptions "<pod>" is invalid`);
//! - a pod not yet on a node has an empty log (204, no body) and cannot be connected to (400
//!   `pod <name> does not have a host assigned`); a node that does not exist is reported as
//!   kube reports it (`pods "<node>" not found`, the request's resource), one without an
//!   address of kube's preferred types as kube's plain 500;
//! - a connection that is not an upgrade request is refused (400 `Upgrade request required`)
//!   before any dial; nothing is written to the store.

use http::{HeaderMap, Method, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::body::Body;
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Store;
use crate::structural::Cause;

/// The subresources served here.
pub(crate) const SUBRESOURCES: [&str; 4] = ["attach", "exec", "log", "portforward"];

/// kube-apiserver's default `--kubelet-preferred-address-types`.
const PREFERRED_ADDRESS_TYPES: [&str; 5] = ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"];
/// The kubelet's port when its node reports none.
const KUBELET_PORT: i64 = 10250;
/// What a kubelet that accepted the connection is told nothing of.
pub(crate) const NO_KUBELET_CLIENT: &str = "this server holds no kubelet client credentials";

/// A request for one of a pod's connection subresources.
pub(crate) struct Request<'a> {
    /// The pods' resource.
    pub pods: &'a ResourceInfo,
    pub ns: &'a str,
    pub name: &'a str,
    /// One of [`SUBRESOURCES`].
    pub subresource: &'a str,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub query: &'a [(String, String)],
    /// The connection, once a 101 hands it over (for a WebSocket kube translates).
    pub upgrade: Option<hyper::upgrade::OnUpgrade>,
}

/// Answers `r` (see the module documentation).
pub(crate) async fn serve(store: &Store, mut r: Request<'_>) -> Result<Response<Body>, ApiError> {
    if r.subresource == "log" {
        if *r.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        return log(store, &r).await;
    }
    if !matches!(*r.method, Method::GET | Method::POST) {
        return Err(ApiError::method_not_allowed());
    }
    if r.query.iter().any(|(k, _)| k == "dryRun") {
        return Err(ApiError::bad_request("dryRun is not supported"));
    }
    let mut options = connect_options(r.subresource, r.query)?;
    let creation = crate::pod_subresource::Creation {
        operation: "CONNECT",
        info: r.pods,
        subresource: r.subresource,
        ns: r.ns,
        name: r.name,
        dry_run: false,
    };
    creation.mutate(store, &mut options).await?;
    creation.validate(store, &options).await?;
    if *r.method == Method::GET {
        // kube's `AuthorizePodWebsocketUpgradeCreatePermission`: a connection opened with a GET
        // (a WebSocket) needs the `create` a POST needs.
        may_create(store, &r)?;
    }
    let pod = pod(store, &r).await?;
    let container =
        if r.subresource == "portforward" { "" } else { checked_container(&pod, r.name, text(&options, "container"))? };
    let Some(node) = node_name(&pod) else {
        return Err(ApiError::bad_request(format!("pod {} does not have a host assigned", r.name)));
    };
    let (host, port) = kubelet(store, r.pods, node).await?;
    if !is_upgrade(r.headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    // kube translates a v5 WebSocket of `exec` or `attach`: accepted first, the kubelet then
    // dialled and its failure reported on the connection, as its SPDY request's error.
    if r.subresource != "portforward"
        && crate::stream_translator::wants_translation(r.headers)
        && let Some(upgrade) = r.upgrade.take()
    {
        let url = format!(
            "https://{}/{}/{}/{}/{container}{}",
            crate::dialer::join_host_port(&host, port),
            r.subresource,
            r.ns,
            r.name,
            stream_query(&options)
        );
        let status = async move {
            let cause = kubelet_failure(&host, port).await;
            ApiError::internal(&format!("error sending request: Post {}: {cause}", crate::structural::go_quote(&url)))
        };
        let flag = |k: &str| options.get(k) == Some(&Value::Bool(true));
        let ending = crate::stream_translator::Ending { stdout: flag("stdout"), stderr: flag("stderr"), status };
        return Ok(crate::stream_translator::accept(r.method, r.headers, upgrade, ending));
    }
    Err(plain_error(format!("error dialing backend: {}", kubelet_failure(&host, port).await)))
}

/// The query of the kubelet's `exec` or `attach` URL (kube's `streamParams`, encoded).
fn stream_query(options: &Map<String, Value>) -> String {
    let mut params: Vec<(&str, String)> = Vec::new();
    for (key, param) in [("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty")] {
        if options.get(key) == Some(&Value::Bool(true)) {
            params.push((param, "1".into()));
        }
    }
    for c in crate::object::elements(options.get("command")) {
        params.push(("command", c.as_str().unwrap_or("").to_string()));
    }
    encode(params)
}

/// `pods/log`.
async fn log(store: &Store, r: &Request<'_>) -> Result<Response<Body>, ApiError> {
    let options = LogOptions::parse(r.query)?;
    options.validate(r.name)?;
    let pod = pod(store, r).await?;
    let container = checked_container(&pod, r.name, &options.container)?;
    let Some(node) = node_name(&pod) else {
        // kube's empty location: no stream, 204 without a body or a media type.
        let mut answer = Response::new(Body::Full(None));
        *answer.status_mut() = StatusCode::NO_CONTENT;
        answer.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache, private"));
        return Ok(answer);
    };
    let (host, port) = kubelet(store, r.pods, node).await?;
    let url = format!(
        "https://{}/containerLogs/{}/{}/{container}{}",
        crate::dialer::join_host_port(&host, port),
        r.ns,
        r.name,
        options.kubelet_query()
    );
    let cause = kubelet_failure(&host, port).await;
    Err(plain_error(format!("Get {}: {cause}", crate::structural::go_quote(&url))))
}

/// Why the kubelet at `host:port` cannot be talked to: the dial's error, or, when something
/// accepted the connection, that this server holds no kubelet client credentials.
async fn kubelet_failure(host: &str, port: i64) -> String {
    dial_backend(host, port, true).await.err().unwrap_or_default()
}

/// A connection to a backend at `host:port` within Go's dialer's limit; for a kubelet, whose
/// connections need kube-apiserver's kubelet client credentials, [`NO_KUBELET_CLIENT`] once
/// something accepts.
pub(crate) async fn dial_backend(host: &str, port: i64, kubelet: bool) -> Result<tokio::net::TcpStream, String> {
    let tcp = crate::dialer::connect(host, port, crate::dialer::GO_DIAL_LIMIT).await?;
    if kubelet {
        return Err(NO_KUBELET_CLIENT.to_string());
    }
    Ok(tcp)
}

/// A plain Go error as kube's handlers answer it: 500 with no reason.
fn plain_error(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

/// kube's `PodLogOptions`.
#[derive(Debug, Default)]
struct LogOptions {
    container: String,
    follow: bool,
    previous: bool,
    timestamps: bool,
    since_seconds: Option<i64>,
    /// RFC 3339 as the kubelet is sent it; Go's zero time for `""` and `null`.
    since_time: Option<String>,
    tail_lines: Option<i64>,
    limit_bytes: Option<i64>,
    stream: Option<String>,
}

impl LogOptions {
    /// The options, read in the order of kube's generated conversion (the first value it
    /// cannot read is the one reported).
    fn parse(query: &[(String, String)]) -> Result<Self, ApiError> {
        let since_seconds = int(query, "sinceSeconds")?;
        let since_time = match first(query, "sinceTime") {
            None => None,
            Some("" | "null") => Some("0001-01-01T00:00:00Z".to_string()),
            Some(s) => {
                crate::go_types::rfc3339(s).map_err(ApiError::bad_request)?;
                let t: jiff::Timestamp = s.parse().map_err(|_| ApiError::bad_request(format!("invalid time {s}")))?;
                Some(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            }
        };
        Ok(LogOptions {
            container: first(query, "container").unwrap_or("").to_string(),
            follow: flag(query, "follow"),
            previous: flag(query, "previous"),
            timestamps: flag(query, "timestamps"),
            since_seconds,
            since_time,
            tail_lines: int(query, "tailLines")?,
            limit_bytes: int(query, "limitBytes")?,
            stream: first(query, "stream").map(str::to_string),
        })
    }

    /// kube's `ValidatePodLogOptions` with `PodLogsQuerySplitStreams` off (its default).
    fn validate(&self, pod: &str) -> Result<(), ApiError> {
        let mut causes = Vec::new();
        let invalid = |field: &str, n: i64, detail: &str| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {n}: {detail}"),
            field: field.to_string(),
        };
        let forbidden = |field: &str, detail: &str| Cause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.to_string(),
        };
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            causes.push(invalid("tailLines", n, "must be greater than or equal to 0"));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            causes.push(invalid("limitBytes", n, "must be greater than 0"));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => {
                causes.push(forbidden("[]", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
            }
            (Some(n), None) if n < 1 => causes.push(invalid("sinceSeconds", n, "must be greater than 0")),
            _ => {}
        }
        if self.stream.is_some() {
            causes.push(forbidden("stream", "may not be specified"));
        }
        if causes.is_empty() {
            return Ok(());
        }
        Err(crate::custom_resource::invalid_kind("", "PodLogOptions", pod, &causes))
    }

    /// The query of the kubelet's `containerLogs` URL (Go's `url.Values.Encode`: keys sorted).
    fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, String)> = Vec::new();
        for (key, on) in [("follow", self.follow), ("previous", self.previous), ("timestamps", self.timestamps)] {
            if on {
                params.push((key, "true".into()));
            }
        }
        for (key, n) in
            [("sinceSeconds", self.since_seconds), ("tailLines", self.tail_lines), ("limitBytes", self.limit_bytes)]
        {
            if let Some(n) = n {
                params.push((key, n.to_string()));
            }
        }
        if let Some(t) = &self.since_time {
            params.push(("sinceTime", t.clone()));
        }
        encode(params)
    }
}

/// A connection's options as kube hands them to admission: v1 `PodExecOptions`,
/// `PodAttachOptions` or `PodPortForwardOptions`, as Go writes them.
fn connect_options(subresource: &str, query: &[(String, String)]) -> Result<Map<String, Value>, ApiError> {
    let (kind, streams) = match subresource {
        "exec" => ("PodExecOptions", true),
        "attach" => ("PodAttachOptions", true),
        _ => ("PodPortForwardOptions", false),
    };
    let mut o = Map::new();
    o.insert("kind".into(), kind.into());
    o.insert("apiVersion".into(), "v1".into());
    if streams {
        for key in ["stdin", "stdout", "stderr", "tty"] {
            if flag(query, key) {
                o.insert(key.into(), true.into());
            }
        }
        if let Some(c) = first(query, "container").filter(|c| !c.is_empty()) {
            o.insert("container".into(), c.into());
        }
    }
    if subresource == "exec" {
        let command: Vec<&str> = query.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.as_str()).collect();
        o.insert("command".into(), if command.is_empty() { Value::Null } else { json!(command) });
    }
    if subresource == "portforward" {
        let mut ports = Vec::new();
        for (_, v) in query.iter().filter(|(k, _)| k == "ports") {
            for p in v.split(',') {
                let port = parse_uint16(p)
                    .map_err(|e| ApiError::bad_request(format!("cannot convert to []int32: strconv.ParseUint: {e}")))?;
                ports.push(port);
            }
        }
        if !ports.is_empty() {
            o.insert("ports".into(), json!(ports));
        }
    }
    Ok(o)
}

/// The first value of `key`.
fn first<'q>(query: &'q [(String, String)], key: &str) -> Option<&'q str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// A flag as kube's parameter codec reads it: false when absent, `0` or `false`.
fn flag(query: &[(String, String)], key: &str) -> bool {
    first(query, key).is_some_and(crate::body::query_bool)
}

/// A number as Go's `strconv.ParseInt(v, 10, 64)` reads it, with its errors.
fn int(query: &[(String, String)], key: &str) -> Result<Option<i64>, ApiError> {
    first(query, key).map(crate::delete_options::parse_int64).transpose()
}

/// A port as Go's `strconv.ParseUint(v, 10, 16)` reads it.
fn parse_uint16(v: &str) -> Result<u16, String> {
    let quoted = crate::structural::go_quote(v);
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("parsing {quoted}: invalid syntax"));
    }
    v.parse::<u16>().map_err(|_| format!("parsing {quoted}: value out of range"))
}

/// A string field of the options.
fn text<'o>(options: &'o Map<String, Value>, key: &str) -> &'o str {
    options.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Refuses a `get` of a connection whose user may not `create` it.
fn may_create(store: &Store, r: &Request<'_>) -> Result<(), ApiError> {
    let cache = store.cache();
    let mode = cache.authorization();
    let user = crate::rbac::User::of(&crate::requester::user_info());
    let asked = crate::request_info::RequestInfo {
        resource_request: true,
        verb: "create".into(),
        group: r.pods.group.clone(),
        version: r.pods.version.clone(),
        resource: r.pods.plural.clone(),
        subresource: r.subresource.to_string(),
        namespace: r.ns.to_string(),
        name: r.name.to_string(),
        ..Default::default()
    };
    let d = crate::authorizer::authorize(cache, mode, &user, &asked);
    if d.allowed {
        return Ok(());
    }
    Err(ApiError::forbidden(&r.pods.group, &r.pods.plural, r.name, &d.reason))
}

/// The pod, as the request's resource reports a missing one.
async fn pod(store: &Store, r: &Request<'_>) -> Result<Value, ApiError> {
    Ok(store.get(r.pods, r.ns, r.name).await?.value())
}

/// The pod's node, when it has one.
fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
}

/// kube's `validateContainer`: the container named, or the pod's only one.
fn checked_container<'p>(pod: &'p Value, name: &str, container: &'p str) -> Result<&'p str, ApiError> {
    let names = |list: &str| -> Vec<&'p str> {
        crate::object::elements(pod.pointer(&format!("/spec/{list}")))
            .iter()
            .filter_map(|c| c.get("name").and_then(Value::as_str))
            .collect()
    };
    let regular = names("containers");
    if container.is_empty() {
        return match regular.as_slice() {
            [only] => Ok(only),
            [] => Err(ApiError::bad_request(format!("a container name must be specified for pod {name}"))),
            _ => {
                let all: Vec<&str> =
                    names("initContainers").into_iter().chain(regular).chain(names("ephemeralContainers")).collect();
                Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                )))
            }
        };
    }
    let known = ["initContainers", "containers", "ephemeralContainers"].iter().any(|l| names(l).contains(&container));
    if !known {
        return Err(ApiError::bad_request(format!("container {container} is not valid for pod {name}")));
    }
    Ok(container)
}

/// The kubelet of node `node`: kube's `NodeConnectionInfoGetter` (the first address of the
/// preferred types, the reported port or 10250). A missing node is reported as a missing
/// object of `resource`, the request's.
pub(crate) async fn kubelet(store: &Store, resource: &ResourceInfo, node: &str) -> Result<(String, i64), ApiError> {
    let nodes = store.registry().find("", "v1", "nodes").cloned().ok_or_else(ApiError::no_route)?;
    let node = match store.get(&nodes, "", node).await {
        Ok(found) => found.value(),
        // kube reads the node with the request's context, whose resource names the error.
        Err(e) if e.code == 404 => return Err(ApiError::not_found(&resource.group, &resource.plural, node)),
        Err(e) => return Err(e),
    };
    let addresses: Vec<(&str, &str)> = crate::object::elements(node.pointer("/status/addresses"))
        .iter()
        .map(|a| {
            let field = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("");
            (field("type"), field("address"))
        })
        .collect();
    let host = PREFERRED_ADDRESS_TYPES
        .iter()
        .find_map(|t| addresses.iter().find(|(kind, _)| kind == t).map(|(_, address)| address.to_string()));
    let Some(host) = host else {
        let known: Vec<String> = addresses.iter().map(|(t, a)| format!("{{{t} {a}}}")).collect();
        return Err(plain_error(format!("no preferred addresses found; known addresses: [{}]", known.join(" "))));
    };
    let reported = node.pointer("/status/daemonEndpoints/kubeletEndpoint/Port").and_then(Value::as_i64).unwrap_or(0);
    Ok((host, if reported > 0 { reported } else { KUBELET_PORT }))
}

/// Whether the request asks to switch protocols (kube's `httpstream.IsUpgradeRequest`: a
/// `Connection` header containing `upgrade`, in any case).
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| v.as_bytes().to_ascii_lowercase().windows(7).any(|w| w == b"upgrade"))
}

/// Go's `url.Values.Encode` of `params`: sorted by key, each part query-escaped.
fn encode(mut params: Vec<(&str, String)>) -> String {
    if params.is_empty() {
        return String::new();
    }
    // Stable: the values of one key keep their order.
    params.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = params.iter().map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v))).collect();
    format!("?{}", parts.join("&"))
}

/// Go's `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(char::from(b)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn values_are_read_as_kube_s_parameter_codec_reads_them() {
        assert!(flag(&q(&[("follow", "maybe")]), "follow"));
        assert!(flag(&q(&[("follow", "")]), "follow"));
        assert!(!flag(&q(&[("follow", "FALSE")]), "follow"));
        assert!(!flag(&q(&[("follow", "0"), ("follow", "1")]), "follow"));
        assert!(!flag(&q(&[]), "follow"));
        assert_eq!(int(&q(&[("tailLines", "+7")]), "tailLines").unwrap(), Some(7));
        let message = |pairs: &[(&str, &str)]| int(&q(pairs), "n").unwrap_err().message;
        assert_eq!(message(&[("n", "abc")]), "strconv.ParseInt: parsing \"abc\": invalid syntax");
        assert_eq!(message(&[("n", "")]), "strconv.ParseInt: parsing \"\": invalid syntax");
        assert_eq!(
            message(&[("n", "99999999999999999999")]),
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(parse_uint16("+80").unwrap_err(), "parsing \"+80\": invalid syntax");
        assert_eq!(parse_uint16("65536").unwrap_err(), "parsing \"65536\": value out of range");
    }

    #[test]
    fn the_kubelet_query_is_encoded_as_go_encodes_it() {
        let o = LogOptions {
            follow: true,
            tail_lines: Some(5),
            since_time: Some("2026-01-02T00:00:00Z".into()),
            ..Default::default()
        };
        assert_eq!(o.kubelet_query(), "?follow=true&sinceTime=2026-01-02T00%3A00%3A00Z&tailLines=5");
        assert_eq!(LogOptions::default().kubelet_query(), "");
    }

    #[test]
    fn the_container_is_the_one_named_or_the_only_one() {
        let pod = json!({"spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(checked_container(&pod, "p", "init").unwrap(), "init");
        assert_eq!(
            checked_container(&pod, "p", "").unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [init a b]"
        );
        assert_eq!(checked_container(&pod, "p", "c").unwrap_err().message, "container c is not valid for pod p");
        let one = json!({"spec": {"containers": [{"name": "only"}]}});
        assert_eq!(checked_container(&one, "p", "").unwrap(), "only");
        let none = json!({"spec": {}});
        assert_eq!(
            checked_container(&none, "p", "").unwrap_err().message,
            "a container name must be specified for pod p"
        );
    }

    #[test]
    fn an_upgrade_is_a_connection_header_token() {
        let mut h = HeaderMap::new();
        assert!(!is_upgrade(&h));
        h.insert(header::CONNECTION, "keep-alive, Upgrade".parse().unwrap());
        assert!(is_upgrade(&h));
        h.insert(header::CONNECTION, "x-upgraded".parse().unwrap());
        assert!(is_upgrade(&h), "contained, as Go's strings.Contains finds it");
    }
}

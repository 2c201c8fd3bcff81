//! A pod's `log`, `exec`, `attach` and `portforward` over HTTP, as kube-apiserver v1.35 answers
//! them without a kubelet to reach: listed in discovery, options read and judged in kube's
//! words, connections offered to admission as `CONNECT`, a pod not on a node answered as kube
//! answers it (an empty log, a refused connection), a node missing or without an address, a
//! kubelet that refuses the connection; and what kubectl shows for `logs` and `exec`.

mod common;

use common::*;
use http::Method;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";
const NODES: &str = "/api/v1/nodes";

fn message(r: &Resp) -> &str {
    r.body["message"].as_str().unwrap_or_default()
}

fn on_node(name: &str, node: &str) -> Value {
    let mut p = pod(name, json!({}));
    p["spec"]["nodeName"] = json!(node);
    p
}

fn node(name: &str, addresses: Value, kubelet_port: u16) -> Value {
    json!({"metadata": {"name": name},
           "status": {"addresses": addresses, "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}}})
}

/// A loopback port nothing listens on.
async fn closed_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn the_connections_are_listed_in_discovery() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get("/api/v1").await;
    let names: Vec<&str> = r.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with("pods"))
        .collect();
    assert_eq!(
        names,
        [
            "pods",
            "pods/attach",
            "pods/binding",
            "pods/ephemeralcontainers",
            "pods/eviction",
            "pods/exec",
            "pods/log",
            "pods/portforward",
            "pods/proxy",
            "pods/resize",
            "pods/status"
        ]
    );
    let entry =
        |name: &str| r.body["resources"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap().clone();
    assert_eq!(
        entry("pods/exec"),
        json!({"name": "pods/exec", "singularName": "", "namespaced": true, "kind": "PodExecOptions",
               "verbs": ["create", "get"]})
    );
    assert_eq!(
        entry("pods/log"),
        json!({"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]})
    );

    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let r = c.get_accepting("/api", aggregated).await;
    let pods = r.body["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["resource"] == "pods")
        .unwrap()
        .clone();
    let subresources: Vec<&str> =
        pods["subresources"].as_array().unwrap().iter().map(|e| e["subresource"].as_str().unwrap()).collect();
    assert_eq!(
        subresources,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status"
        ]
    );
    let portforward = pods["subresources"].as_array().unwrap().iter().find(|e| e["subresource"] == "portforward");
    assert_eq!(
        portforward.unwrap(),
        &json!({"subresource": "portforward", "responseKind": {"group": "", "version": "", "kind": "PodPortForwardOptions"},
                "verbs": ["create", "get"]})
    );
}

#[tokio::test]
async fn a_log_is_read_as_kube_reads_it_up_to_the_kubelet() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &pod("web", json!({}))).await.code, 201);
    let log = |q: &str| format!("{PODS}/web/log{q}");

    // A pod on no node has an empty log: 204, no body, no media type.
    let r = c.get(&log("")).await;
    assert_eq!((r.code, r.raw.len()), (204, 0));
    assert!(r.headers.get("content-type").is_none(), "{:?}", r.headers);
    assert_eq!(c.get(&log("?container=c&follow=true&tailLines=3")).await.code, 204);

    // Options are read and judged before the pod is.
    let r = c
        .get(&format!("{PODS}/nope/log?tailLines=-1&limitBytes=0&sinceSeconds=5&sinceTime=2026-01-02T00:00:00Z"))
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        message(&r),
        "PodLogOptions \"nope\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, \
         limitBytes: Invalid value: 0: must be greater than 0, \
         []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified]"
    );
    assert_eq!(r.body["details"]["kind"], "PodLogOptions");
    assert_eq!(r.body["details"]["name"], "nope");
    assert_eq!(causes(&c.get(&log("?stream=All")).await), ["stream: Forbidden: may not be specified"]);
    assert_eq!(
        causes(&c.get(&log("?sinceSeconds=0")).await),
        ["sinceSeconds: Invalid value: 0: must be greater than 0"]
    );
    let r = c.get(&log("?tailLines=abc")).await;
    assert_eq!((r.code, message(&r)), (400, "strconv.ParseInt: parsing \"abc\": invalid syntax"));
    let r = c.get(&log("?sinceTime=yesterday")).await;
    assert_eq!(
        (r.code, message(&r)),
        (400, "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\"")
    );
    // Unknown keys are ignored.
    assert_eq!(c.get(&log("?colour=blue")).await.code, 204);
    // Values are read in the conversion's order: the first unreadable one is reported.
    let r = c.get(&log("?tailLines=x&sinceSeconds=y")).await;
    assert_eq!(message(&r), "strconv.ParseInt: parsing \"y\": invalid syntax");

    let r = c.get(&format!("{PODS}/nope/log")).await;
    assert_eq!((r.code, message(&r)), (404, "pods \"nope\" not found"));
    let r = c.get(&log("?container=other")).await;
    assert_eq!((r.code, message(&r)), (400, "container other is not valid for pod web"));
    let mut two = pod("two", json!({}));
    two["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]);
    two["spec"]["initContainers"] = json!([{"name": "init", "image": "x"}]);
    assert_eq!(c.post(PODS, &two).await.code, 201);
    let r = c.get(&format!("{PODS}/two/log")).await;
    assert_eq!(
        (r.code, message(&r)),
        (400, "a container name must be specified for pod two, choose one of: [init a b]")
    );
    assert_eq!(c.get(&format!("{PODS}/two/log?container=init")).await.code, 204);
    let r = c.send_raw(Method::POST, &log(""), b"{}".to_vec(), "application/json").await;
    assert_eq!(r.code, 405);

    // On a node: kube reads the node with the pod request's resource, then its address.
    assert_eq!(c.post(PODS, &on_node("placed", "n1")).await.code, 201);
    let r = c.get(&format!("{PODS}/placed/log")).await;
    assert_eq!((r.code, message(&r)), (404, "pods \"n1\" not found"));
    let addresses = json!([{"type": "InternalName", "address": "x"}]);
    assert_eq!(c.post(NODES, &node("n1", addresses, 0)).await.code, 201);
    let r = c.get(&format!("{PODS}/placed/log")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(message(&r), "no preferred addresses found; known addresses: [{InternalName x}]");
    assert!(r.body.get("reason").is_none(), "{}", r.body);

    // A kubelet that refuses the connection: kube's transport error.
    let port = closed_port().await;
    let addresses =
        json!([{"type": "ExternalIP", "address": "192.0.2.1"}, {"type": "InternalIP", "address": "127.0.0.1"}]);
    assert_eq!(c.post(NODES, &node("n2", addresses, port)).await.code, 201);
    assert_eq!(c.post(PODS, &on_node("reachable", "n2")).await.code, 201);
    // A flag is off only when `0` or `false`.
    let r = c.get(&format!("{PODS}/reachable/log?tailLines=5&timestamps=1&follow=maybe&previous=FALSE")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        message(&r),
        format!(
            "Get \"https://127.0.0.1:{port}/containerLogs/default/reachable/c?follow=true&tailLines=5&timestamps=true\": \
             dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    // One that accepts it is told nothing: the server holds no kubelet credentials.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = listener.local_addr().unwrap().port();
    let addresses = json!([{"type": "InternalIP", "address": "127.0.0.1"}]);
    assert_eq!(c.post(NODES, &node("n3", addresses, open)).await.code, 201);
    assert_eq!(c.post(PODS, &on_node("listening", "n3")).await.code, 201);
    let r = c.get(&format!("{PODS}/listening/log")).await;
    assert_eq!(
        (r.code, message(&r)),
        (
            500,
            format!(
                "Get \"https://127.0.0.1:{open}/containerLogs/default/listening/c\": this server holds no kubelet client credentials"
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn connections_are_refused_as_kube_refuses_them_without_a_kubelet() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &pod("web", json!({}))).await.code, 201);
    let exec = |name: &str, q: &str| format!("{PODS}/{name}/exec?command=ls&stdout=1{q}");
    let post = async |path: &str| c.send_raw(Method::POST, path, Vec::new(), "application/json").await;

    let r = post(&exec("web", "")).await;
    assert_eq!((r.code, message(&r)), (400, "pod web does not have a host assigned"));
    for sub in ["attach", "portforward"] {
        let r = c.get(&format!("{PODS}/web/{sub}")).await;
        assert_eq!((r.code, message(&r)), (400, "pod web does not have a host assigned"), "{sub}");
    }
    let r = post(&exec("web", "&container=other")).await;
    assert_eq!((r.code, message(&r)), (400, "container other is not valid for pod web"));
    // A port-forward names no container: none is checked.
    let r = c.get(&format!("{PODS}/web/portforward?container=other")).await;
    assert_eq!((r.code, message(&r)), (400, "pod web does not have a host assigned"));
    let r = c.get(&format!("{PODS}/web/portforward?ports=80,x")).await;
    assert_eq!(
        (r.code, message(&r)),
        (400, "cannot convert to []int32: strconv.ParseUint: parsing \"x\": invalid syntax")
    );
    let r = post(&exec("web", "&dryRun=All")).await;
    assert_eq!((r.code, message(&r)), (400, "dryRun is not supported"));
    let r = post(&exec("nope", "")).await;
    assert_eq!((r.code, message(&r)), (404, "pods \"nope\" not found"));
    let r = c.put(&exec("web", ""), &json!({})).await;
    assert_eq!(r.code, 405);
    assert_eq!(c.get(&format!("{PODS}/web/exec/more")).await.code, 404);

    // On a node whose kubelet refuses connections: a plain request is refused before any dial,
    // an upgrade gets the dial's error.
    let port = closed_port().await;
    let addresses = json!([{"type": "InternalIP", "address": "127.0.0.1"}]);
    assert_eq!(c.post(NODES, &node("n1", addresses, port)).await.code, 201);
    assert_eq!(c.post(PODS, &on_node("placed", "n1")).await.code, 201);
    let r = post(&exec("placed", "")).await;
    assert_eq!((r.code, message(&r)), (400, "Upgrade request required"));
    let upgrade = [("connection", "Upgrade"), ("upgrade", "SPDY/3.1")];
    let r = c.get_with_headers(&exec("placed", ""), &upgrade).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(message(&r), format!("error dialing backend: dial tcp 127.0.0.1:{port}: connect: connection refused"));
    assert!(r.body.get("reason").is_none(), "{}", r.body);
}

/// Opens `path` as a WebSocket offering `protocols` and reads what the server sends: the answer's
/// head, then each binary message (channel, data) until a close.
async fn websocket(s: &informer_apiserver::ApiServer, path: &str, protocols: &str) -> (String, Vec<(u8, Vec<u8>)>) {
    websocket_with(s, "GET", path, &format!("Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {protocols}")).await
}

/// [`websocket`] with the request's method and its headers past `Connection` and `Upgrade`.
async fn websocket_with(
    s: &informer_apiserver::ApiServer,
    method: &str,
    path: &str,
    headers: &str,
) -> (String, Vec<(u8, Vec<u8>)>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{headers}\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let read = async {
        // The head; then, after a 101, everything until the server closes.
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..n]);
            let head_read = bytes.windows(4).any(|w| w == b"\r\n\r\n");
            if n == 0 || (head_read && !bytes.starts_with(b"HTTP/1.1 101")) {
                break;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read).await.unwrap();
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut messages = Vec::new();
    if !head.starts_with("HTTP/1.1 101") {
        return (head, messages);
    }
    let mut rest = &bytes[end..];
    while rest.len() >= 2 {
        let (opcode, len) = (rest[0] & 0x0f, usize::from(rest[1] & 0x7f));
        let (len, at) = if len == 126 { (usize::from(u16::from_be_bytes([rest[2], rest[3]])), 4) } else { (len, 2) };
        let payload = &rest[at..at + len];
        if opcode == 0x8 {
            assert_eq!(payload, 1000u16.to_be_bytes(), "a normal close");
            break;
        }
        messages.push((payload[0], payload[1..].to_vec()));
        rest = &rest[at + len..];
    }
    (head, messages)
}

#[tokio::test]
async fn a_v5_websocket_is_accepted_and_told_why_the_kubelet_failed() {
    let s = server().await;
    let c = Client::new(&s);
    let port = closed_port().await;
    let addresses = json!([{"type": "InternalIP", "address": "127.0.0.1"}]);
    assert_eq!(c.post(NODES, &node("n1", addresses, port)).await.code, 201);
    assert_eq!(c.post(PODS, &on_node("placed", "n1")).await.code, 201);
    let path = format!("{PODS}/placed/exec?command=ls&command=-l&stderr=true&stdout=true");
    let (head, messages) = websocket(&s, &path, "v5.channel.k8s.io, v4.channel.k8s.io").await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), "{head}");
    assert!(head.contains("sec-websocket-protocol: v5.channel.k8s.io\r\n"), "{head}");
    assert!(!head.contains("audit-id"), "only what Go's WebSocket server writes: {head}");
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], (1, vec![]), "the opening message on stdout");
    assert_eq!(messages[1].0, 3, "the error channel");
    let cause = format!(
        "error sending request: Post \"https://127.0.0.1:{port}/exec/default/placed/c?command=ls&command=-l&error=1&output=1\": \
         dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    let status: Value = serde_json::from_slice(&messages[1].1).unwrap();
    assert_eq!(
        status,
        json!({"metadata": {}, "status": "Failure", "message": format!("Internal error occurred: {cause}"),
               "reason": "InternalError", "details": {"causes": [{"message": cause}]}, "code": 500})
    );
    // As Go's json.Marshal writes it: `&` escaped.
    let text = String::from_utf8(messages[1].1.clone()).unwrap();
    assert!(text.starts_with("{\"metadata\":{},\"status\":\"Failure\""), "{text}");
    assert!(text.contains("command=ls\\u0026command=-l\\u0026error=1") && !text.contains('&'), "{text}");
    // Go's WebSocket server refuses a handshake it cannot take.
    let (head, _) =
        websocket_with(&s, "GET", &path, "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Protocol: v5.channel.k8s.io").await;
    assert!(head.starts_with("HTTP/1.1 400") && head.contains("sec-websocket-version: 13\r\n"), "{head}");
    let (head, _) = websocket_with(
        &s,
        "POST",
        &path,
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\nContent-Length: 0",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    // A v4 WebSocket, and a port-forward, are not translated: the dial's error answers them.
    let (head, _) = websocket(&s, &path, "v4.channel.k8s.io").await;
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");
    let (head, _) = websocket(&s, &format!("{PODS}/placed/portforward?ports=80"), "v5.channel.k8s.io").await;
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");

    // kubectl prints kube's words.
    let dir = common::tools::tempdir("pod-connections-ws");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let (ok, _, err) = common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &["exec", "placed", "--", "ls"]).await;
    assert!(!ok);
    assert!(
        err.contains(&format!("Internal error occurred: error sending request: Post \"https://127.0.0.1:{port}/exec/default/placed/c?command=ls&error=1&output=1\"")),
        "{err}"
    );
}

#[tokio::test]
async fn connections_are_offered_to_admission_with_their_options() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &pod("web", json!({}))).await.code, 201);
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-shells"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CONNECT"], "resources": ["pods/*"]}]},
                 "validations": [{"expression":
                     "object.kind == 'PodExecOptions' && object.apiVersion == 'v1' && request.operation == 'CONNECT' && object.command[0] != 'sh'",
                     "message": "no shells", "reason": "Forbidden"}]}});
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
    assert_eq!(c.post(policies, &policy).await.code, 201);
    let binding = json!({"metadata": {"name": "no-shells"},
                         "spec": {"policyName": "no-shells", "validationActions": ["Deny"]}});
    assert_eq!(c.post(bindings, &binding).await.code, 201);
    assert_eq!(c.get(bindings).await.code, 200);

    // Admission comes before the pod is read.
    let r = c.send_raw(Method::POST, &format!("{PODS}/nope/exec?command=sh&command=-c"), Vec::new(), "").await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        message(&r),
        "pods \"nope\" is forbidden: ValidatingAdmissionPolicy 'no-shells' with binding 'no-shells' denied request: no shells"
    );
    let r = c.send_raw(Method::POST, &format!("{PODS}/web/exec?command=ls"), Vec::new(), "").await;
    assert_eq!((r.code, message(&r)), (400, "pod web does not have a host assigned"));
    // The log is not a connection admission sees (the policy, matching `pods/*`, would refuse it).
    assert_eq!(c.get(&format!("{PODS}/web/log")).await.code, 204);
}

#[tokio::test]
async fn a_connection_opened_with_get_needs_create() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    assert_eq!(admin.post(PODS, &pod("web", json!({}))).await.code, 201);
    let role = json!({"metadata": {"name": "exec-get"},
        "rules": [{"apiGroups": [""], "resources": ["pods/attach", "pods/exec", "pods/portforward"], "verbs": ["get"]}]});
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    assert_eq!(admin.post(roles, &role).await.code, 201);
    let binding = json!({"metadata": {"name": "exec-get"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-get"}});
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    assert_eq!(admin.post(bindings, &binding).await.code, 201);
    assert_eq!(admin.get(bindings).await.code, 200);

    let alice = admin.clone().impersonating("alice");
    // The authorizer's own reason, empty for RBAC's refusal, as kube words the check.
    for sub in ["exec", "attach", "portforward"] {
        let r = alice.get(&format!("{PODS}/web/{sub}")).await;
        assert_eq!(r.code, 403, "{}", r.body);
        assert_eq!(message(&r), "pods \"web\" is forbidden: ", "{sub}: {}", r.body);
    }
    // With `create` as well, the request goes on to the pod.
    let role = json!({"metadata": {"name": "exec-create"},
        "rules": [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}]});
    assert_eq!(admin.post(roles, &role).await.code, 201);
    let mut binding = binding;
    binding["metadata"]["name"] = json!("exec-create");
    binding["roleRef"]["name"] = json!("exec-create");
    assert_eq!(admin.post(bindings, &binding).await.code, 201);
    assert_eq!(admin.get(bindings).await.code, 200);
    let r = alice.get(&format!("{PODS}/web/exec?command=ls")).await;
    assert_eq!((r.code, message(&r)), (400, "pod web does not have a host assigned"));
}

const PY_LOG: &str = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
api = client.CoreV1Api()
log = api.read_namespaced_pod_log("web", "default")
try:
    api.read_namespaced_pod_log("web", "default", tail_lines=-1)
    refused = None
except client.exceptions.ApiException as e:
    refused = [e.status, json.loads(e.body)["message"]]
print(json.dumps({"log": log, "refused": refused}))
"#;

#[tokio::test]
async fn real_clients_read_an_empty_log_and_kubectl_is_refused_an_exec() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(PODS, &pod("web", json!({}))).await.code, 201);
    let dir = common::tools::tempdir("pod-connections");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let kubectl = async |args: &[&str]| common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), args).await;
    let (ok, out, err) = kubectl(&["logs", "web"]).await;
    assert!(ok, "{err}");
    assert_eq!(out, "");
    let (ok, _, err) = kubectl(&["exec", "web", "--", "ls"]).await;
    assert!(!ok);
    assert!(err.contains("pod web does not have a host assigned"), "{err}");

    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(kube_client(&s).await, "default");
    assert_eq!(pods.logs("web", &Default::default()).await.unwrap(), "");
    let params = kube::api::LogParams { container: Some("other".into()), ..Default::default() };
    match pods.logs("web", &params).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.message.as_str()), (400, "container other is not valid for pod web"))
        }
        other => panic!("{other:?}"),
    }

    let answer = common::tools::python_json(PY_LOG, &kc).await;
    assert_eq!(
        answer,
        json!({"log": "", "refused": [422, "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"]})
    );
}

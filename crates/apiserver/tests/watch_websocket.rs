//! Watches over a WebSocket, as kube-apiserver v1.35 serves them: the Python client's WebSocket
//! library (as browsers' consoles do) passing its token as a subprotocol, one message per event
//! (text for JSON, binary protobuf), pings answered, and closes on either side; and the
//! handshake's refusals, in Go's words, read off the wire.

mod common;

use base64::Engine;
use common::tools::python;
use common::*;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";
const TOKEN: &str = "ws-token";

/// Opens a watch of `path` over a WebSocket with the token as a subprotocol and reads its first
/// message; then, with `mode` "ping", pings, reads the pong and closes; with "end", waits for
/// the server to end the watch. Prints what it saw as JSON.
const CLIENT: &str = r#"
import base64, json, sys, websocket
url, token, path, accept, mode = sys.argv[1:6]
proto = "base64url.bearer.authorization.k8s.io." + base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
ws = websocket.create_connection(
    "ws" + url[len("http"):] + path,
    subprotocols=[proto, "base64.binary.k8s.io"],
    origin="http://localhost",
    header=["Accept: " + accept] if accept else [],
    timeout=30,
)
out = {"subprotocol": ws.getsubprotocol(), "messages": []}
op, f = ws.recv_data_frame(True)
out["messages"].append({"opcode": op, "data": base64.b64encode(f.data).decode()})
if mode == "ping":
    ws.ping(b"are you there")
    op, f = ws.recv_data_frame(True)
    out["pong"] = [op, f.data.decode()]
    ws.send_close()
op, f = ws.recv_data_frame(True)
out["close"] = [op, int.from_bytes(f.data[:2], "big")]
print(json.dumps(out))
"#;

async fn python_watch(s: &informer_apiserver::ApiServer, path: &str, accept: &str, mode: &str) -> Value {
    let out = python(CLIENT, &[&s.url(), TOKEN, path, accept, mode]).await;
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn payload(message: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(message["data"].as_str().unwrap()).unwrap()
}

async fn server_with_pod() -> informer_apiserver::ApiServer {
    let s = informer_apiserver::testing::builder().token(TOKEN).start().await.unwrap();
    let c = Client::new(&s).with_token(TOKEN);
    assert_eq!(c.post(PODS, &pod("a", json!({}))).await.code, 201);
    s
}

#[tokio::test]
async fn the_python_websocket_client_watches_with_its_token_as_a_subprotocol() {
    let s = server_with_pod().await;
    let seen = python_watch(&s, &format!("{PODS}?watch=true&resourceVersion=0"), "", "ping").await;
    // The token's subprotocol is taken out; the other one is echoed.
    assert_eq!(seen["subprotocol"], "base64.binary.k8s.io", "{seen}");
    let first = &seen["messages"][0];
    assert_eq!(first["opcode"], 1, "JSON events are text messages: {seen}");
    let line = payload(first);
    assert_eq!(line.last(), Some(&b'\n'), "each message is the event's line");
    let event: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));
    assert_eq!(seen["pong"], json!([10, "are you there"]), "a ping is answered with its payload");
    assert_eq!(seen["close"], json!([8, 1000]), "the client's close ends the watch with a normal close");
}

#[tokio::test]
async fn protobuf_events_are_binary_messages_without_a_length_prefix() {
    let s = server_with_pod().await;
    let path = format!("{PODS}?watch=true&resourceVersion=0&timeoutSeconds=1");
    let seen = python_watch(&s, &path, "application/vnd.kubernetes.protobuf", "end").await;
    let first = &seen["messages"][0];
    assert_eq!(first["opcode"], 2, "{seen}");
    let event = payload(first);
    // A `WatchEvent`: its type (field 1), then its object (field 2) in kube's envelope.
    assert_eq!(&event[..7], b"\x0a\x05ADDED", "{event:?}");
    assert!(event.windows(4).any(|w| w == b"k8s\0"), "{event:?}");
    // The watch's timeout ends it with a normal close.
    assert_eq!(seen["close"], json!([8, 1000]), "{seen}");
}

/// Sends a WebSocket watch request with `headers` past the upgrade's own and reads the server's
/// answer: a switch's head (the connection and the bytes read past the head are returned), or an
/// answer's head and body.
async fn open(
    s: &informer_apiserver::ApiServer,
    path: &str,
    headers: &str,
) -> (String, tokio::net::TcpStream, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n{headers}\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut end = 0;
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..n]);
            let Some(e) = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4) else {
                if n == 0 {
                    break;
                }
                continue;
            };
            end = e;
            let head = String::from_utf8_lossy(&bytes[..e]).to_ascii_lowercase();
            let length = head.lines().find_map(|l| l.strip_prefix("content-length: ")?.trim().parse::<usize>().ok());
            if head.starts_with("http/1.1 101") {
                break;
            }
            if n == 0 || length.is_some_and(|l| bytes.len() >= e + l) {
                end = bytes.len();
                break;
            }
        }
    };
    let done = tokio::time::timeout(std::time::Duration::from_secs(20), read).await;
    assert!(done.is_ok(), "{}", String::from_utf8_lossy(&bytes));
    let rest = bytes.split_off(end);
    (String::from_utf8_lossy(&bytes).into_owned(), tcp, rest)
}

/// [`open`]'s answer alone.
async fn raw(s: &informer_apiserver::ApiServer, path: &str, headers: &str) -> String {
    open(s, path, &format!("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{headers}")).await.0
}

/// Reads the server's frames until it closes the connection: (opcode, payload) of each but its
/// events' (text) messages.
async fn frames_until_closed(mut tcp: tokio::net::TcpStream, mut bytes: Vec<u8>) -> Vec<(u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read).await.expect("the server closes the connection");
    let mut frames = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 2 {
        let (opcode, len) = (rest[0] & 0x0f, usize::from(rest[1] & 0x7f));
        let (len, at) = match len {
            126 => (usize::from(u16::from_be_bytes([rest[2], rest[3]])), 4),
            127 => (u64::from_be_bytes(rest[2..10].try_into().unwrap()) as usize, 10),
            n => (n, 2),
        };
        if opcode != 1 {
            frames.push((opcode, rest[at..at + len].to_vec()));
        }
        rest = &rest[at + len..];
    }
    frames
}

const GOOD: &str = "Authorization: Bearer ws-token\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                    Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n";

fn close(code: u16) -> (u8, Vec<u8>) {
    (8, code.to_be_bytes().to_vec())
}

#[tokio::test]
async fn a_websocket_watch_ends_with_its_client_a_dropped_watch_or_the_server() {
    let s = server_with_pod().await;
    let watch = format!("{PODS}?watch=true");
    let wait = std::time::Duration::from_secs(20);

    let (head, tcp, _) = open(&s, &watch, GOOD).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(s.wait_for_watches(1, wait).await);
    drop(tcp);
    assert!(s.wait_for_watches_at_most(0, wait).await, "a client gone ends its watch");
    let protobuf = format!("{GOOD}Accept: application/vnd.kubernetes.protobuf\r\n");
    let (head, tcp, _) = open(&s, &watch, &protobuf).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(s.wait_for_watches(1, wait).await);
    drop(tcp);
    assert!(s.wait_for_watches_at_most(0, wait).await, "a protobuf watch too");

    let (_, tcp, rest) = open(&s, &watch, GOOD).await;
    assert!(s.wait_for_watches(1, wait).await);
    s.drop_watches();
    assert_eq!(frames_until_closed(tcp, rest).await, [close(1000)], "a dropped watch is a normal close");

    let (_, tcp, rest) = open(&s, &watch, GOOD).await;
    assert!(s.wait_for_watches(1, wait).await);
    s.stop().await;
    assert_eq!(frames_until_closed(tcp, rest).await, [close(1000)], "the server's stop is a normal close");
}

#[tokio::test]
async fn the_server_s_stop_ends_a_watch_whose_client_stopped_reading() {
    let s = server_with_pod().await;
    let c = Client::new(&s).with_token(TOKEN);
    let (head, _tcp, _) = open(&s, "/api/v1/namespaces/default/configmaps?watch=true", GOOD).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    // 20 MB of events, never read: more than the sockets' buffers hold, so the server's writes
    // wait on the client.
    let data = "x".repeat(100_000);
    assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "big"}})).await.code, 201);
    for i in 0..200 {
        let body = json!({"metadata": {"name": "big"}, "data": {"d": format!("{i}{data}")}});
        assert_eq!(c.put("/api/v1/namespaces/default/configmaps/big", &body).await.code, 200);
    }
    s.stop().await;
    let wait = std::time::Duration::from_secs(20);
    assert!(s.wait_for_watches_at_most(0, wait).await, "the watch ends though its client reads nothing");
}

#[tokio::test]
async fn an_unmasked_frame_is_a_protocol_error() {
    use tokio::io::AsyncWriteExt;
    let s = server_with_pod().await;
    let (head, mut tcp, rest) = open(&s, &format!("{PODS}?watch=true"), GOOD).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    tcp.write_all(&[0x81, 0x01, b'x']).await.unwrap();
    assert_eq!(frames_until_closed(tcp, rest).await, [close(1002), close(1000)], "Go's two closes");
}

#[tokio::test]
async fn the_header_s_token_comes_before_the_subprotocol_s() {
    let s = server_with_pod().await;
    let watch = format!("{PODS}?watch=true");
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(TOKEN);
    let asked = |authorization: &str| {
        format!(
            "{authorization}Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n\
             Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.{token}, base64.binary.k8s.io\r\n"
        )
    };
    // A header's token that fails leaves the subprotocol's to authenticate, which is taken out.
    let r = raw(&s, &watch, &asked("Authorization: Bearer wrong\r\n")).await;
    assert!(r.starts_with("HTTP/1.1 101 "), "{r}");
    assert!(r.contains("sec-websocket-protocol: base64.binary.k8s.io\r\n"), "{r}");
    // A header's token that authenticates leaves the subprotocols as they are: two, refused.
    let r = raw(&s, &watch, &asked(&format!("Authorization: Bearer {TOKEN}\r\n"))).await;
    assert!(r.starts_with("HTTP/1.1 400 "), "{r}");

    // A token subprotocol alone leaves nothing to answer with: unauthenticated, even on a server
    // that asks for no token.
    let open_server = server().await;
    let alone = format!(
        "Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n\
         Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.{token}\r\n"
    );
    let r = raw(&open_server, &watch, &alone).await;
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");
}

#[tokio::test]
async fn handshakes_are_judged_as_go_judges_them() {
    let s = server_with_pod().await;
    let watch = format!("{PODS}?watch=true");
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let good = format!("{auth}Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n");

    let ok = raw(&s, &watch, &good).await;
    assert!(ok.starts_with("HTTP/1.1 101 "), "{ok}");
    assert!(ok.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), "{ok}");
    assert!(!ok.contains("sec-websocket-protocol"), "no subprotocol asked, none answered: {ok}");
    assert!(!ok.contains("x-kubernetes-pf-"), "the filters' headers are not written on a switch: {ok}");
    let one = raw(&s, &watch, &format!("{good}Sec-WebSocket-Protocol: base64.binary.k8s.io\r\n")).await;
    assert!(one.contains("sec-websocket-protocol: base64.binary.k8s.io\r\n"), "{one}");

    // Go's handler requires an Origin that parses as a request's URI; its refusal is bare.
    for origin in ["", "Origin: null\r\n"] {
        let r = raw(&s, &watch, &format!("{auth}Sec-WebSocket-Version: 13\r\n{origin}")).await;
        assert!(r.starts_with("HTTP/1.1 403 "), "{origin}: {r}");
        assert!(r.contains("content-length: 0\r\n") && r.ends_with("\r\n\r\n"), "no text: {r}");
        assert!(!r.contains("audit-id") && !r.contains("x-kubernetes-pf-"), "{r}");
    }
    let keyless = open(&s, &watch, &format!("{auth}Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n")).await.0;
    assert!(keyless.starts_with("HTTP/1.1 400 "), "{keyless}");
    assert!(keyless.ends_with("mismatch challenge/response"), "{keyless}");
    let two = raw(&s, &watch, &format!("{good}Sec-WebSocket-Protocol: a, b\r\n")).await;
    assert!(two.starts_with("HTTP/1.1 400 "), "{two}");
    let version = raw(&s, &watch, &format!("{auth}Sec-WebSocket-Version: 8\r\nOrigin: http://localhost\r\n")).await;
    assert!(version.starts_with("HTTP/1.1 400 "), "{version}");
    assert!(version.contains("sec-websocket-version: 13\r\n"), "{version}");
    assert!(version.ends_with("missing or bad WebSocket Version"), "{version}");

    // What fails before the watch streams is answered over HTTP, as for any watch.
    let selector = raw(&s, &format!("{watch}&labelSelector=a%20in"), &good).await;
    assert!(selector.starts_with("HTTP/1.1 400 "), "{selector}");
    assert!(selector.contains("\"kind\":\"Status\""), "{selector}");
    let anonymous = raw(&s, &watch, "Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n").await;
    assert!(anonymous.starts_with("HTTP/1.1 401 "), "{anonymous}");
}

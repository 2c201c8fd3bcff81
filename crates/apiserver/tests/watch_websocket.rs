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
/// answer: a switch's head, or an answer's head and body.
async fn raw(s: &informer_apiserver::ApiServer, path: &str, headers: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.url().trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{headers}\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..n]);
            let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4) else {
                if n == 0 {
                    break;
                }
                continue;
            };
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length = head.lines().find_map(|l| l.strip_prefix("content-length: ")?.trim().parse::<usize>().ok());
            if n == 0 || head.starts_with("http/1.1 101") || length.is_some_and(|l| bytes.len() >= end + l) {
                break;
            }
        }
    };
    let done = tokio::time::timeout(std::time::Duration::from_secs(3), read).await;
    assert!(done.is_ok(), "{}", String::from_utf8_lossy(&bytes));
    String::from_utf8_lossy(&bytes).into_owned()
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

    // Go's handler requires an Origin that parses as a request's URI.
    for origin in ["", "Origin: null\r\n"] {
        let r = raw(&s, &watch, &format!("{auth}Sec-WebSocket-Version: 13\r\n{origin}")).await;
        assert!(r.starts_with("HTTP/1.1 403 "), "{origin}: {r}");
    }
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
    // A token subprotocol alone leaves nothing to answer with: refused as unauthenticated.
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(TOKEN);
    let alone = raw(
        &s,
        &watch,
        &format!(
            "Sec-WebSocket-Version: 13\r\nOrigin: http://localhost\r\n\
             Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.{token}\r\n"
        ),
    )
    .await;
    assert!(alone.starts_with("HTTP/1.1 401 "), "{alone}");
}

//! Exchanges recorded from a real kube-apiserver v1.35 (`tests/fixtures/kube-apiserver/`):
//! the request (method, path, content type, body as sent) and the response (status code and
//! body), and what of an object legitimately differs between two servers.

use serde_json::Value;

use super::{Client, Resp};

/// Sends a recorded request as it was sent (method, path, content type, body, User-Agent).
pub async fn send(c: &Client, step: &Recorded) -> Resp {
    c.send_as(
        step.method.clone(),
        &step.path,
        step.request_body.clone(),
        &step.content_type,
        step.user_agent.as_deref(),
    )
    .await
}

/// One recorded request and its answer.
pub struct Recorded {
    pub method: http::Method,
    /// Path and query, as sent.
    pub path: String,
    pub content_type: String,
    /// The body as recorded (JSON re-indented, which changes nothing a server reads).
    pub request_body: Vec<u8>,
    pub status: u16,
    /// The response body (Null when absent).
    pub response: Value,
    /// The response's `Warning` headers, in order.
    pub warnings: Vec<String>,
    /// The request's User-Agent, if it had one.
    pub user_agent: Option<String>,
}

impl Recorded {
    /// The request body as JSON (Null without a body).
    pub fn request(&self) -> Value {
        if self.request_body.is_empty() {
            return Value::Null;
        }
        serde_json::from_slice(&self.request_body).expect("a JSON request body")
    }
}

/// Reads `tests/fixtures/kube-apiserver/<file>`.
pub fn recorded(file: &str) -> Recorded {
    let path = format!("{}/tests/fixtures/kube-apiserver/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (req, resp) = text.split_once("=== RESPONSE ===").expect("a response");
    let req = req.split_once("=== REQUEST ===").expect("a request").1.trim_start();
    let (head, body) = req.split_once("\n\n").unwrap_or((req, ""));
    let mut lines = head.lines();
    let mut request_line = lines.next().expect("a request line").split_whitespace();
    let method: http::Method = request_line.next().expect("a method").parse().expect("an HTTP method");
    let path = request_line.next().expect("a path").to_string();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
        })
    };
    let content_type = header("content-type").unwrap_or_default();
    let user_agent = header("user-agent");
    let body = body.trim();
    let request_body = if body == "(no body)" {
        Vec::new()
    } else if body.starts_with("(protobuf body") {
        protobuf_body(body)
    } else {
        format!("{body}\n").into_bytes()
    };
    let resp = resp.trim_start();
    let status = resp
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let (resp_head, resp_body) = resp.split_once("\n\n").unwrap_or((resp, ""));
    let response = serde_json::from_str(resp_body.trim()).unwrap_or(Value::Null);
    let warnings = resp_head.lines().filter_map(|l| l.strip_prefix("Warning: ")).map(str::to_string).collect();
    Recorded { method, path, content_type, request_body, status, response, warnings, user_agent }
}

/// The bytes of a protobuf body recorded as `(protobuf body, N bytes, shown base64-encoded)`
/// followed by base64 lines.
fn protobuf_body(text: &str) -> Vec<u8> {
    use base64::Engine;
    let b64: String = text.lines().skip(1).take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    base64::engine::general_purpose::STANDARD.decode(b64).expect("base64 protobuf body")
}

/// An object without what differs between two servers: identity, versions, times, field
/// managers, generation.
pub fn comparable(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "managedFields", "generation"] {
            m.remove(f);
        }
    }
    v
}

/// An object without what differs between two servers, keeping who manages which field:
/// identity, resourceVersion, creation time and generation removed; each `managedFields` entry's time
/// replaced by a marker (kept absent where it is) and the entries sorted by operation,
/// manager, API version and subresource (their order by time depends on when the writes ran).
pub fn comparable_managed(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"] {
            m.remove(f);
        }
        if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
            for e in entries.iter_mut() {
                if let Some(t) = e.get_mut("time") {
                    *t = Value::String("<time>".into());
                }
            }
            let key = |e: &Value| {
                ["operation", "manager", "apiVersion", "subresource"]
                    .map(|k| e.get(k).and_then(Value::as_str).unwrap_or("").to_string())
            };
            entries.sort_by_key(key);
        }
    }
    v
}

/// A recorded object as a create body: without identity, versions, times and field managers.
pub fn as_create_body(v: &Value) -> Value {
    comparable(v)
}

//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in
//! types: request bodies as kubectl's `create configmap|secret|deployment|service…` and
//! protobuf-configured clients send them, read into the JSON the rest of the server works on,
//! and answers — objects, lists, Status errors and watch streams — written from that JSON for
//! clients that prefer protobuf (`negotiate.rs`).
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` message: the object's
//! `apiVersion` and `kind`, and the object itself as the protobuf message of its type. The
//! messages' fields (tag, wire kind, JSON name, nested message) come from a table the build
//! step derives from the kube-rs project's generated Kubernetes types (`build/protobuf.rs`);
//! `wire.rs` reads and writes the wire format, `decode.rs` and `encode.rs` walk the table.
//!
//! Invariants: a body decodes completely or not at all (400 BadRequest naming what is wrong,
//! never a partial object), and an answer encodes completely or is not sent as protobuf;
//! Kubernetes' wrapper messages read and write as their JSON forms (`Time` and `MicroTime` as
//! RFC 3339 text, `Quantity` as text, `IntOrString` as a number or text,
//! `RawExtension`/`JSON`/`FieldsV1` as the JSON they carry, `Duration` as Go's duration text,
//! `bytes` as base64); empty strings, which Kubernetes' encoder writes for every unset string,
//! are left out but for strings Go holds by pointer, while numbers and booleans are kept as sent
//! (a pointer's `0` or `false` is a value; the stored form drops the zeros of those Go holds by
//! value, see [`crate::go_form`]); fields the table does not know are skipped, as Go's decoder
//! skips them.

mod decode;
mod encode;
pub(crate) mod negotiate;
mod wire;

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use self::decode::{message, utf8};
use self::wire::{Raw, Wire, Writer};
use crate::registry::ResourceInfo;
use crate::schema;
use crate::status::ApiError;

/// The media type of Kubernetes' protobuf encoding.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The envelope's first four bytes.
const MAGIC: &[u8] = b"k8s\0";

/// The table written by the build step: message name → fields.
const TABLE: &str = include_str!(concat!(env!("OUT_DIR"), "/kube-protobuf.json"));

/// Where Kubernetes' meta/v1 wrapper messages are named.
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

/// How a field's values are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Double,
    Message,
}

/// One field of a message.
#[derive(Debug)]
struct FieldDef {
    json: String,
    kind: Kind,
    message: Option<String>,
    repeated: bool,
    map: bool,
    /// An embedded struct: its fields are the enclosing object's in JSON.
    inline: bool,
}

type Messages = HashMap<String, HashMap<u32, FieldDef>>;

/// A field as the table lists it: tag, JSON name, kind, message name, repeated, map, inline.
type Row = (u32, String, String, Option<String>, bool, bool, bool);

fn messages() -> &'static Messages {
    static MESSAGES: OnceLock<Messages> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let raw: HashMap<String, Vec<Row>> = serde_json::from_str(TABLE).expect("the build step writes the table");
        raw.into_iter()
            .map(|(name, fields)| {
                let fields = fields
                    .into_iter()
                    .filter_map(|(tag, json, kind, message, repeated, map, inline)| {
                        let kind = match kind.as_str() {
                            "string" => Kind::String,
                            "bytes" => Kind::Bytes,
                            "bool" => Kind::Bool,
                            "int32" => Kind::Int32,
                            "int64" => Kind::Int64,
                            "double" => Kind::Double,
                            "message" => Kind::Message,
                            _ => return None,
                        };
                        Some((tag, FieldDef { json, kind, message, repeated, map, inline }))
                    })
                    .collect();
                (name, fields)
            })
            .collect()
    })
}

/// Decodes a protobuf request body addressed to `info`'s resource into its JSON object.
pub(crate) fn decode_object(info: &ResourceInfo, body: &[u8]) -> Result<Value, ApiError> {
    let v = decode_envelope(body).map_err(ApiError::bad_request)?;
    if v.get("kind").and_then(Value::as_str) != Some(info.kind.as_str()) {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    Ok(v)
}

/// A DELETE's `DeleteOptions` body (one message shared by every group, so named directly).
pub(crate) fn decode_delete_options(body: &[u8]) -> Result<Value, ApiError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::bad_request("provided data does not appear to be a protobuf message"))?;
    let mut raw: &[u8] = &[];
    for item in Wire::new(rest) {
        if let (2, Raw::Len(b)) = item.map_err(ApiError::bad_request)? {
            raw = b;
        }
    }
    message(&format!("{META}DeleteOptions"), raw)
        .map_err(|e| ApiError::bad_request(format!("unable to decode DeleteOptions: {e}")))
}

/// The JSON form of an object in the `k8s\0` envelope, with its `kind` and `apiVersion`.
fn decode_envelope(body: &[u8]) -> Result<Value, String> {
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]".to_string()
    })?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    for item in Wire::new(rest) {
        match item? {
            (1, Raw::Len(tm)) => {
                for item in Wire::new(tm) {
                    match item? {
                        (1, Raw::Len(b)) => api_version = utf8(b)?,
                        (2, Raw::Len(b)) => kind = utf8(b)?,
                        _ => {}
                    }
                }
            }
            (2, Raw::Len(b)) => raw = b,
            (3, Raw::Len(b)) => content_encoding = utf8(b)?,
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(format!("unsupported content encoding {content_encoding:?}"));
    }
    if kind.is_empty() {
        return Err("Object 'Kind' is missing in protobuf body".into());
    }
    let name = message_of(&api_version, &kind).ok_or_else(|| {
        format!("the body of the request was in an unknown format - {api_version} {kind} has no protobuf form")
    })?;
    let mut object = Map::new();
    object.insert("kind".into(), Value::String(kind.clone()));
    object.insert("apiVersion".into(), Value::String(api_version));
    match message(name, raw).map_err(|e| format!("unable to decode {kind}: {e}"))? {
        Value::Object(fields) => object.extend(fields),
        other => return Err(format!("unable to decode {kind}: {other}")),
    }
    Ok(Value::Object(object))
}

/// The message name of a kind (`v1` `ConfigMapList` → `io.k8s.api.core.v1.ConfigMapList`).
fn message_of(api_version: &str, kind: &str) -> Option<&'static str> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let name = schema::builtin().name_of(group, version, kind)?;
    messages().contains_key(name).then_some(name)
}

/// Whether objects of `kind` in `api_version` have a protobuf form.
pub(crate) fn has_message(api_version: &str, kind: &str) -> bool {
    message_of(api_version, kind).is_some()
}

/// An object, list or Status (JSON with its `kind` and `apiVersion`) in the `k8s\0` envelope.
pub(crate) fn encode_object(v: &Value) -> Result<Vec<u8>, String> {
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = message_of(api_version, kind).ok_or_else(|| format!("{api_version} {kind} has no protobuf form"))?;
    let raw = encode::message(name, v)?;
    let mut type_meta = Writer::new();
    type_meta.bytes(1, api_version.as_bytes());
    type_meta.bytes(2, kind.as_bytes());
    let mut unknown = Writer::new();
    unknown.buf.extend_from_slice(MAGIC);
    unknown.bytes(1, &type_meta.buf);
    unknown.bytes(2, &raw);
    unknown.bytes(3, b"");
    unknown.bytes(4, b"");
    Ok(unknown.buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON answer, and the protobuf answer's bytes, of a recorded exchange.
    fn recorded(file: &str) -> (Value, Vec<u8>) {
        use base64::Engine;
        let path = format!("{}/tests/fixtures/kube-apiserver/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let resp = text.split_once("=== RESPONSE ===").unwrap().1;
        let body = resp.split_once("\n\n").unwrap().1;
        let body = body.split("=== DECODED VIEW").next().unwrap().trim();
        if let Some(b64) = body.strip_prefix('(').and_then(|b| b.split_once('\n')) {
            let b64: String = b64.1.lines().take_while(|l| !l.trim().is_empty()).collect();
            return (Value::Null, base64::engine::general_purpose::STANDARD.decode(b64).unwrap());
        }
        (serde_json::from_str(body).unwrap(), Vec::new())
    }

    #[test]
    fn kubes_protobuf_answers_read_as_its_json_answers() {
        for (pb, json) in [
            ("50-proto-kubectl-create-configmap.txt", "53-proto-get-configmap-json-view.txt"),
            ("52-proto-get-configmap.txt", "53-proto-get-configmap-json-view.txt"),
        ] {
            let (_, bytes) = recorded(pb);
            let (expected, _) = recorded(json);
            let mut got = decode_envelope(&bytes).unwrap();
            // Kubernetes' encoder writes every non-pointer field; a zero number read back is
            // kept (it may be a pointer's value), where Go's JSON leaves `generation: 0` out.
            let meta = got["metadata"].as_object_mut().unwrap();
            assert_eq!(meta.remove("generation"), Some(Value::from(0)));
            assert_eq!(got, expected, "{pb}");
        }
    }

    #[test]
    fn objects_lists_and_statuses_read_back_as_written() {
        let (configmap, _) = recorded("53-proto-get-configmap-json-view.txt");
        let (secret, _) = recorded("54-proto-get-secret-json-view.txt");
        let (pod, _) = recorded("01-defaults-pod-create.txt");
        let (deployment, _) = recorded("02-defaults-deployment-create.txt");
        let mut item = configmap.clone();
        item.as_object_mut().unwrap().retain(|k, _| k != "kind" && k != "apiVersion");
        let list = serde_json::json!({"kind": "ConfigMapList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "continue": "abc", "remainingItemCount": 3}, "items": [item]});
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"x\" not found", "reason": "NotFound", "details": {"name": "x", "kind": "pods"}, "code": 404});
        for v in [configmap, secret, pod, deployment, list, status] {
            let bytes = encode_object(&v).unwrap();
            assert_eq!(decode_envelope(&bytes).unwrap(), v);
        }
        assert!(encode_object(&serde_json::json!({"kind": "Widget", "apiVersion": "example.com/v1"})).is_err());
        // DeleteOptions: {preconditions: {resourceVersion: "7"}, propagationPolicy: "Foreground"}.
        let mut pre = wire::Writer::new();
        pre.bytes(2, b"7");
        let mut opts = wire::Writer::new();
        opts.bytes(2, &pre.buf);
        opts.bytes(4, b"Foreground");
        let mut tm = wire::Writer::new();
        tm.bytes(1, b"v1");
        tm.bytes(2, b"DeleteOptions");
        let mut body = wire::Writer::new();
        body.buf.extend_from_slice(MAGIC);
        body.bytes(1, &tm.buf);
        body.bytes(2, &opts.buf);
        let v = decode_delete_options(&body.buf).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"preconditions": {"resourceVersion": "7"}, "propagationPolicy": "Foreground"})
        );
        let wrong = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": 1}});
        assert!(encode_object(&wrong).unwrap_err().contains("data"));
    }

    #[test]
    fn every_served_built_in_kind_has_a_message() {
        let schemas = schema::builtin();
        for (g, v, k) in [
            ("", "v1", "ConfigMap"),
            ("", "v1", "Secret"),
            ("", "v1", "Pod"),
            ("", "v1", "Service"),
            ("", "v1", "Namespace"),
            ("apps", "v1", "Deployment"),
            ("batch", "v1", "Job"),
        ] {
            let name = schemas.name_of(g, v, k).unwrap();
            assert!(messages().contains_key(name), "{name}");
        }
    }

    #[test]
    fn truncated_bodies_are_errors_not_partial_objects() {
        let info = ResourceInfo::new("", "v1", "configmaps", "ConfigMap", true);
        // `k8s\0`, Unknown{typeMeta{v1, ConfigMap}, raw: a length past the end}.
        let mut body = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x40".to_vec();
        body.extend_from_slice(b"\x0a\x02");
        let e = decode_object(&info, &body).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(decode_object(&info, b"{}").is_err());
    }
}

//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), as
//! kubectl's `create configmap|secret|deployment|service…` and protobuf-configured clients
//! send them, read into the JSON the rest of the server works on.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` message: the object's
//! `apiVersion` and `kind`, and the object itself as the protobuf message of its type. The
//! messages' fields (tag, wire kind, JSON name, nested message) come from a table the build
//! step derives from the kube-rs project's generated Kubernetes types (`build/protobuf.rs`).
//!
//! Invariants: a body decodes completely or not at all (400 BadRequest naming what is wrong,
//! never a partial object); Kubernetes' wrapper messages read as their JSON forms (`Time` and
//! `MicroTime` as RFC 3339 text, `Quantity` as text, `IntOrString` as a number or text,
//! `RawExtension`/`JSON`/`FieldsV1` as the JSON they carry, `Duration` as Go's duration text,
//! `bytes` as base64); empty strings, which Kubernetes' encoder writes for every unset string,
//! are left out, while numbers and booleans are kept as sent (a pointer's `0` or `false` is a
//! value); fields the table does not know are skipped, as Go's decoder skips them.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde_json::{Map, Value};

use crate::registry::ResourceInfo;
use crate::schema;
use crate::status::ApiError;

/// The media type of Kubernetes' protobuf encoding.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The envelope's first four bytes.
const MAGIC: &[u8] = b"k8s\0";

/// The table written by the build step: message name → fields.
const TABLE: &str = include_str!(concat!(env!("OUT_DIR"), "/kube-protobuf.json"));

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
}

type Messages = HashMap<String, HashMap<u32, FieldDef>>;

/// A field as the table lists it: tag, JSON name, kind, message name, repeated, map.
type Row = (u32, String, String, Option<String>, bool, bool);

fn messages() -> &'static Messages {
    static MESSAGES: OnceLock<Messages> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let raw: HashMap<String, Vec<Row>> = serde_json::from_str(TABLE).expect("the build step writes the table");
        raw.into_iter()
            .map(|(name, fields)| {
                let fields = fields
                    .into_iter()
                    .filter_map(|(tag, json, kind, message, repeated, map)| {
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
                        Some((tag, FieldDef { json, kind, message, repeated, map }))
                    })
                    .collect();
                (name, fields)
            })
            .collect()
    })
}

/// Decodes a protobuf request body addressed to `info`'s resource into its JSON object.
pub(crate) fn decode_object(info: &ResourceInfo, body: &[u8]) -> Result<Value, ApiError> {
    let bad = |msg: String| ApiError::bad_request(msg);
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        bad("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]".into())
    })?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    for item in Wire::new(rest) {
        let (tag, value) = item.map_err(bad)?;
        match (tag, value) {
            (1, Raw::Len(tm)) => {
                for item in Wire::new(tm) {
                    match item.map_err(bad)? {
                        (1, Raw::Len(b)) => api_version = utf8(b).map_err(bad)?,
                        (2, Raw::Len(b)) => kind = utf8(b).map_err(bad)?,
                        _ => {}
                    }
                }
            }
            (2, Raw::Len(b)) => raw = b,
            (3, Raw::Len(b)) => content_encoding = utf8(b).map_err(bad)?,
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(bad(format!("unsupported content encoding {content_encoding:?}")));
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version.as_str()),
    };
    let unreadable =
        || bad(format!("the body of the request was in an unknown format - {api_version} {kind} has no protobuf form"));
    if kind.is_empty() {
        return Err(bad("Object 'Kind' is missing in protobuf body".into()));
    }
    let schemas = schema::builtin();
    let name = schemas.name_of(group, version, &kind).ok_or_else(unreadable)?;
    if kind != info.kind {
        return Err(bad(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    let mut object = Map::new();
    object.insert("kind".into(), Value::String(kind.clone()));
    object.insert("apiVersion".into(), Value::String(api_version.clone()));
    match message(name, raw).map_err(|e| bad(format!("unable to decode {kind}: {e}")))? {
        Value::Object(fields) => object.extend(fields),
        _ => return Err(unreadable()),
    }
    Ok(Value::Object(object))
}

/// One message's JSON form.
fn message(name: &str, bytes: &[u8]) -> Result<Value, String> {
    if let Some(v) = wrapper(name, bytes)? {
        return Ok(v);
    }
    let fields = messages().get(name).ok_or_else(|| format!("no protobuf form for {name}"))?;
    let mut out = Map::new();
    for item in Wire::new(bytes) {
        let (tag, raw) = item?;
        let Some(f) = fields.get(&tag) else { continue };
        if f.map {
            let Raw::Len(entry) = raw else { return Err(format!("{}: a map entry must be length-delimited", f.json)) };
            let (k, v) = map_entry(f, entry)?;
            let m = out.entry(f.json.clone()).or_insert_with(|| Value::Object(Map::new()));
            if let (Some(m), Some(v)) = (m.as_object_mut(), v) {
                m.insert(k, v);
            }
            continue;
        }
        let values = scalar_or_message(f, raw)?;
        if f.repeated {
            let list = out.entry(f.json.clone()).or_insert_with(|| Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                list.extend(values);
            }
        } else if let Some(v) = values.into_iter().last() {
            out.insert(f.json.clone(), v);
        }
    }
    // Unset strings are written empty; Go's JSON leaves them out.
    out.retain(|_, v| !matches!(v, Value::String(s) if s.is_empty()));
    Ok(Value::Object(out))
}

/// A map field's entry: key (field 1, text) and value (field 2) in the field's value kind.
fn map_entry(f: &FieldDef, entry: &[u8]) -> Result<(String, Option<Value>), String> {
    let mut key = String::new();
    let mut value = None;
    for item in Wire::new(entry) {
        match item? {
            (1, Raw::Len(b)) => key = utf8(b)?,
            (2, raw) => value = scalar_or_message(f, raw)?.into_iter().last(),
            _ => {}
        }
    }
    // A map entry without a value holds the kind's zero value.
    let value = value.or(match f.kind {
        Kind::String | Kind::Bytes => Some(Value::String(String::new())),
        Kind::Message => Some(Value::Object(Map::new())),
        _ => Some(Value::from(0)),
    });
    Ok((key, value))
}

/// The values one occurrence of a field carries (several for a packed repeated number).
fn scalar_or_message(f: &FieldDef, raw: Raw) -> Result<Vec<Value>, String> {
    let one = |v: Value| Ok(vec![v]);
    match (f.kind, raw) {
        (Kind::String, Raw::Len(b)) => one(Value::String(utf8(b)?)),
        (Kind::Bytes, Raw::Len(b)) => one(Value::String(base64::engine::general_purpose::STANDARD.encode(b))),
        (Kind::Bool, Raw::Varint(n)) => one(Value::Bool(n != 0)),
        (Kind::Int32, Raw::Varint(n)) => one(Value::from(n as i32)),
        (Kind::Int64, Raw::Varint(n)) => one(Value::from(n as i64)),
        (Kind::Double, Raw::Fixed64(n)) => {
            let d = f64::from_bits(n);
            one(serde_json::Number::from_f64(d).map(Value::Number).unwrap_or(Value::Null))
        }
        (Kind::Int32 | Kind::Int64 | Kind::Bool, Raw::Len(b)) => {
            // A packed list of varints.
            let mut out = Vec::new();
            let mut r = Reader { buf: b };
            while !r.buf.is_empty() {
                let n = r.varint()?;
                out.push(match f.kind {
                    Kind::Bool => Value::Bool(n != 0),
                    Kind::Int32 => Value::from(n as i32),
                    _ => Value::from(n as i64),
                });
            }
            Ok(out)
        }
        (Kind::Message, Raw::Len(b)) => {
            let name = f.message.as_deref().ok_or_else(|| format!("{}: no message type", f.json))?;
            match message(name, b)? {
                Value::Null => Ok(Vec::new()),
                v => one(v),
            }
        }
        (_, _) => Err(format!("{}: unexpected wire type", f.json)),
    }
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

/// The JSON forms of Kubernetes' wrapper messages; None for an ordinary message. A zero `Time`
/// is `null` (Go's zero time), which leaves the field out.
fn wrapper(name: &str, bytes: &[u8]) -> Result<Option<Value>, String> {
    let fields = || -> Result<HashMap<u32, Raw>, String> { Wire::new(bytes).collect() };
    let text = |v: Option<&Raw>| -> Result<String, String> {
        match v {
            Some(Raw::Len(b)) => utf8(b),
            _ => Ok(String::new()),
        }
    };
    let number = |v: Option<&Raw>| match v {
        Some(Raw::Varint(n)) => *n as i64,
        _ => 0,
    };
    let json = |v: Option<&Raw>| -> Result<Value, String> {
        match v {
            Some(Raw::Len(b)) if !b.is_empty() => serde_json::from_slice(b).map_err(|e| format!("raw JSON: {e}")),
            _ => Ok(Value::Null),
        }
    };
    let v = match name.strip_prefix(META) {
        Some(t @ ("Time" | "MicroTime")) => {
            let f = fields()?;
            let (secs, nanos) = (number(f.get(&1)), number(f.get(&2)));
            if secs == 0 && nanos == 0 {
                return Ok(Some(Value::Null));
            }
            let ts = jiff::Timestamp::new(secs, if t == "Time" { 0 } else { (nanos / 1000 * 1000) as i32 })
                .map_err(|e| format!("{t}: {e}"))?;
            let text = if t == "Time" { format!("{ts:.0}") } else { format!("{ts:.6}") };
            Value::String(text)
        }
        Some("Duration") => Value::String(go_duration(number(fields()?.get(&1)))),
        Some("FieldsV1") => json(fields()?.get(&1))?,
        _ => match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => Value::String(text(fields()?.get(&1))?),
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                let f = fields()?;
                if number(f.get(&1)) == 1 {
                    Value::String(text(f.get(&3))?)
                } else {
                    Value::from(number(f.get(&2)) as i32)
                }
            }
            "io.k8s.apimachinery.pkg.runtime.RawExtension"
            | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => json(fields()?.get(&1))?,
            _ => return Ok(None),
        },
    };
    Ok(Some(v))
}

/// Go's `time.Duration` text (`1h2m3.5s`, `0s`).
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", trim_fraction(n, div));
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let mut out = String::from(sign);
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{}s", trim_fraction(rest, 1_000_000_000)));
    out
}

/// `n / div` as decimal text without trailing zeros (`1.5`, `2`).
fn trim_fraction(n: u64, div: u64) -> String {
    let whole = n / div;
    let frac = n % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
}

/// One field occurrence's raw value.
#[derive(Debug, Clone, Copy)]
enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32,
}

/// The field occurrences of a message, in order.
struct Wire<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Wire<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Wire { r: Reader { buf }, failed: false }
    }
}

impl<'a> Iterator for Wire<'a> {
    type Item = Result<(u32, Raw<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.buf.is_empty() {
            return None;
        }
        let item = self.r.field();
        self.failed = item.is_err();
        Some(item)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut n: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("varint too long".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err("truncated message".into());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u32, Raw<'a>), String> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| "field number out of range")?;
        let v = match key & 7 {
            0 => Raw::Varint(self.varint()?),
            1 => Raw::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                Raw::Len(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Raw::Fixed32
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok((tag, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(120_000_000_000), "2m0s");
        assert_eq!(go_duration(2_000_000), "2ms");
        assert_eq!(go_duration(-5), "-5ns");
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

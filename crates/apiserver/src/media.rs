//! Media types of request bodies that carry a whole object (POST, PUT): JSON; YAML, which is
//! read as kube-apiserver reads it — converted to JSON first, then decoded as JSON is; and, for
//! built-in types, Kubernetes' protobuf encoding (`protobuf.rs`), also read into JSON.
//!
//! Invariants: a body in any other media type is refused with kube's 415, naming the media
//! types the resource takes, before it is read;
//! a YAML body reaches the decoder as JSON text with its mapping keys in document order and
//! duplicate keys kept, so field validation sees (and reports) exactly what a JSON body with
//! the same fields would carry.

use bytes::Bytes;
use serde_json::Value;

use crate::protobuf;
use crate::registry::ResourceInfo;
use crate::schema;
use crate::status::ApiError;

/// The media types a whole-object body is accepted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    /// `application/json` (also no Content-Type, or `*/*`).
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (built-in types only).
    Protobuf,
}

impl BodyFormat {
    /// The format of a request to `info`'s resource whose media type (Content-Type without
    /// parameters, lowercased) is `media_type`; kube's 415 for any other.
    pub(crate) fn of(media_type: &str, info: &ResourceInfo) -> Result<Self, ApiError> {
        let built_in = schema::builtin().name_of(&info.group, &info.version, &info.kind).is_some();
        match media_type {
            "" | "*/*" | "application/json" => Ok(BodyFormat::Json),
            "application/yaml" => Ok(BodyFormat::Yaml),
            protobuf::MEDIA_TYPE if built_in => Ok(BodyFormat::Protobuf),
            _ => {
                let accepted = if built_in {
                    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
                } else {
                    "application/json, application/yaml"
                };
                Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the body of the request was in an unknown format - accepted media types include: {accepted}"
                    ),
                ))
            }
        }
    }

    /// The body as JSON text: JSON as it came, YAML and protobuf converted.
    pub(crate) fn to_json(self, info: &ResourceInfo, body: Bytes) -> Result<Bytes, ApiError> {
        match self {
            BodyFormat::Json => Ok(body),
            BodyFormat::Yaml => yaml_to_json(&body).map(Bytes::from),
            BodyFormat::Protobuf => {
                let v = protobuf::decode_object(info, &body)?;
                Ok(Bytes::from(serde_json::to_vec(&v).map_err(|e| ApiError::internal(&e.to_string()))?))
            }
        }
    }
}

/// Converts one YAML document to JSON text, keeping duplicate keys (the JSON decoder decides
/// what they mean, as for a JSON body).
fn yaml_to_json(body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let bad = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: error converting YAML to JSON: {e}"
        ))
    };
    let text = std::str::from_utf8(body).map_err(|e| bad(&e))?;
    let doc: Entries = serde_saphyr::from_str_with_options(
        text,
        serde_saphyr::options! { duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough },
    )
    .map_err(|e| bad(&e))?;
    let mut out = Vec::with_capacity(body.len());
    doc.write(&mut out);
    Ok(out)
}

/// A YAML value as the sequence of what it holds, mapping entries in document order.
enum Entries {
    Scalar(Value),
    Seq(Vec<Entries>),
    Map(Vec<(String, Entries)>),
}

impl Entries {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Entries::Scalar(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Entries::Seq(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Entries::Map(entries) => {
                out.push(b'{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> serde::de::Visitor<'de> for EntriesVisitor {
    type Value = Entries;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Entries, E> {
        Ok(Entries::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Entries, E> {
        Ok(Entries::Scalar(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Entries, E> {
        Ok(Entries::Scalar(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Entries, E> {
        serde_json::Number::from_f64(v)
            .map(|n| Entries::Scalar(Value::Number(n)))
            .ok_or_else(|| E::custom(format!("{v} cannot be represented in JSON")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Entries, E> {
        Ok(Entries::Scalar(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Entries, E> {
        Ok(Entries::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Entries, E> {
        Ok(Entries::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Entries, E> {
        Ok(Entries::Scalar(Value::Null))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Entries, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Entries, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Entries::Seq(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<KeyText>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Entries::Map(entries))
    }
}

/// A mapping key as JSON knows keys: text (YAML's numbers and booleans as keys become their
/// text, as kube's YAML-to-JSON conversion makes them).
struct KeyText(String);

impl<'de> serde::Deserialize<'de> for KeyText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Entries::deserialize(d)? {
            Entries::Scalar(Value::String(s)) => Ok(KeyText(s)),
            Entries::Scalar(Value::Null) => Ok(KeyText("null".into())),
            Entries::Scalar(v) => Ok(KeyText(v.to_string())),
            _ => Err(serde::de::Error::custom("a mapping key must be a scalar")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(yaml: &str) -> String {
        String::from_utf8(yaml_to_json(yaml.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn yaml_becomes_json_in_document_order() {
        let json = convert(
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: a\ndata:\n  k: v\n  m: \"1\"\nlist: [1, true, null, x]\n",
        );
        assert_eq!(
            json,
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v","m":"1"},"list":[1,true,null,"x"]}"#
        );
    }

    #[test]
    fn duplicate_keys_reach_the_json_decoder() {
        assert_eq!(convert("a: 1\na: 2\n"), r#"{"a":1,"a":2}"#);
    }

    #[test]
    fn malformed_yaml_is_a_bad_request() {
        let e = yaml_to_json(b"a: [1, 2\n").unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.contains("error converting YAML to JSON"), "{}", e.message);
    }

    #[test]
    fn other_media_types_are_refused_with_kubes_415() {
        let configmaps = ResourceInfo::new("", "v1", "configmaps", "ConfigMap", true);
        let widgets = ResourceInfo::new("example.com", "v1", "widgets", "Widget", true);
        assert_eq!(BodyFormat::of("application/yaml", &widgets).unwrap(), BodyFormat::Yaml);
        assert_eq!(BodyFormat::of("", &widgets).unwrap(), BodyFormat::Json);
        assert_eq!(BodyFormat::of(protobuf::MEDIA_TYPE, &configmaps).unwrap(), BodyFormat::Protobuf);
        let e = BodyFormat::of(protobuf::MEDIA_TYPE, &widgets).unwrap_err();
        assert_eq!(e.code, 415);
        assert!(e.message.ends_with("include: application/json, application/yaml"), "{}", e.message);
        let e = BodyFormat::of("text/plain", &configmaps).unwrap_err();
        assert!(e.message.ends_with("application/yaml, application/vnd.kubernetes.protobuf"), "{}", e.message);
    }
}

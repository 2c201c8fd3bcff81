//! Media types of request bodies that carry a whole object (POST, PUT): JSON; YAML, which is
//! read as kube-apiserver reads it — converted to JSON first, then decoded as JSON is; and, for
//! built-in types, Kubernetes' protobuf encoding (`protobuf.rs`), also read into JSON.
//!
//! Invariants: a body in any other media type is refused with kube's 415, naming the media
//! types the resource takes, before it is read;
//! a YAML body is its first document read with go-yaml v2's rules (`yes` is true, `010` is 8;
//! see `yaml.rs`), of duplicate keys the last kept, and reaches the decoder as JSON text; its
//! duplicate keys are reported by field validation in go-yaml's strict-decoding words
//! (`line 3: key "a" already set in map`), as kube-apiserver reports them.

use bytes::Bytes;

use crate::protobuf;
use crate::registry::ResourceInfo;
use crate::schema;
use crate::status::ApiError;
use crate::yaml;

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
    pub(crate) fn to_json(self, info: &ResourceInfo, body: Bytes) -> Result<JsonBody, ApiError> {
        let json = |json| JsonBody { json, yaml_duplicates: Vec::new() };
        match self {
            BodyFormat::Json => Ok(json(body)),
            BodyFormat::Yaml => yaml_to_json(&body),
            BodyFormat::Protobuf => {
                let v = protobuf::decode_object(info, &body)?;
                Ok(json(Bytes::from(serde_json::to_vec(&v).map_err(|e| ApiError::internal(&e.to_string()))?)))
            }
        }
    }
}

/// A whole-object body as JSON text.
pub(crate) struct JsonBody {
    /// The JSON text.
    pub(crate) json: Bytes,
    /// go-yaml's complaints about the duplicate keys of a YAML body.
    pub(crate) yaml_duplicates: Vec<String>,
}

/// Converts the first YAML document of a body to JSON text.
fn yaml_to_json(body: &[u8]) -> Result<JsonBody, ApiError> {
    let bad = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: error converting YAML to JSON: {e}"
        ))
    };
    let text = std::str::from_utf8(body).map_err(|e| bad(&e))?;
    let doc = yaml::decode(text).map_err(|e| bad(&e))?;
    let json = serde_json::to_vec(&doc.value).map_err(|e| bad(&e))?;
    Ok(JsonBody { json: Bytes::from(json), yaml_duplicates: doc.duplicates })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(yaml: &str) -> (serde_json::Value, Vec<String>) {
        let b = yaml_to_json(yaml.as_bytes()).unwrap();
        (serde_json::from_slice(&b.json).unwrap(), b.yaml_duplicates)
    }

    #[test]
    fn yaml_becomes_json_as_go_yaml_v2_reads_it() {
        let (v, dups) = convert(
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: a\ndata:\n  k: v\n  m: \"1\"\nlist: [1, true, null, x, yes, 010]\n",
        );
        assert_eq!(
            v,
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"},
                "data": {"k": "v", "m": "1"}, "list": [1, true, null, "x", true, 8]})
        );
        assert!(dups.is_empty());
    }

    #[test]
    fn duplicate_keys_are_reported_in_go_yamls_words() {
        let (v, dups) = convert("a: 1\nb: x\na: 2\n");
        assert_eq!(v, serde_json::json!({"a": 2, "b": "x"}));
        assert_eq!(dups, ["line 3: key \"a\" already set in map"]);
    }

    #[test]
    fn malformed_yaml_is_a_bad_request() {
        let e = yaml_to_json(b"a: [1, 2\n").err().unwrap();
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

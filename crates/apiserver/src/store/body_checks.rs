//! What a write's body must be before anything is computed from it: an object of the resource's
//! kind and apiVersion whose metadata has Kubernetes' types, in the namespace the URL names.
//!
//! Invariants: every error is the Status kube-apiserver answers for the same body (its Go
//! decoder's wording, [`crate::go_types`] for the fields of a built-in type); a body that passes
//! is a map with an object `metadata` whose fields Go can decode into the resource's type, and
//! once its namespace is resolved a namespaced object names one (the URL's, its own or
//! `default`) and a cluster-scoped one none.

use serde_json::{Map, Value};

use crate::go_types::json_kind;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

fn cannot_handle(info: &ResourceInfo, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{k} in version \"{v}\" cannot be handled as a {k}: {detail}",
        k = info.kind,
        v = info.version
    ))
}

/// What kube's decoder reads of a POST or PUT body's type before the body itself (`json` is the
/// body's JSON text): Go's refusal of an `apiVersion` or `kind` that is not a string or of an
/// `apiVersion` that is no group/version (for every kind), and, as a custom resource is read as
/// unstructured, of one without a kind. Decoded fields are checked afterwards
/// ([`check_api_version`] then).
pub(crate) fn check_type_meta(info: &ResourceInfo, body: &Value, json: &[u8]) -> Result<(), ApiError> {
    let unrecognized = |e: &str| unrecognized(info, e, json);
    let Value::Object(obj) = body else { return Ok(()) };
    for field in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(field).filter(|v| !v.is_string() && !v.is_null()) {
            return Err(unrecognized(&format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                json_kind(v)
            )));
        }
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let Some((group, version)) = parse_group_version(api_version) else {
        return Err(unrecognized(&format!("unexpected GroupVersion string: {api_version}")));
    };
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if info.custom.is_some() && kind.is_empty() {
        // The decoder's kind and version, the request's where the body has none.
        let version =
            if version.is_empty() && (group.is_empty() || group == info.group) { &info.version } else { version };
        let text = String::from_utf8_lossy(json.trim_ascii());
        return Err(ApiError::bad_request(format!(
            "{k} in version \"{version}\" cannot be handled as a {k}: Object 'Kind' is missing in '{text}'",
            k = info.kind
        )));
    }
    Ok(())
}

/// The check of a decoded custom resource's group/version against the resource's: read as
/// unstructured, it has no group/version but its own (a built-in kind takes the request's where
/// the body has none; its writes, and its subresources' bodies, are checked on their own paths).
pub(crate) fn check_api_version(info: &ResourceInfo, body: &Value) -> Result<(), ApiError> {
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let Some((group, version)) = parse_group_version(api_version) else { return Ok(()) };
    if (group, version) == (info.group.as_str(), info.version.as_str()) {
        return Ok(());
    }
    let data = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Err(ApiError::bad_request(format!(
        "the API version in the data ({data}) does not match the expected API version ({})",
        info.api_version()
    )))
}

/// Go's `schema.ParseGroupVersion`: the group and version of `apiVersion`, none for more than one
/// slash.
fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    match api_version {
        "" | "/" => Some(("", "")),
        s => match s.split_once('/') {
            None => Some(("", s)),
            Some((_, v)) if v.contains('/') => None,
            Some(gv) => Some(gv),
        },
    }
}

/// kube's answer (`transformDecodeError`) to a body its decoder refused before reading any kind
/// from it: the resource's kind, the decoder's error, and [`summarize`] of the body.
pub(crate) fn unrecognized(info: &ResourceInfo, error: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {error} ({})",
        info.kind,
        summarize(body)
    ))
}

/// kube's `summarizeData` of a body it cannot read: its first 30 bytes, as hex unless it starts
/// as an object.
fn summarize(body: &[u8]) -> String {
    let head = &body[..body.len().min(30)];
    let more = if body.len() > 30 { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => format!("{}{more}", head.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// Checks the decoded body is an object of the right kind/apiVersion with a well-typed
/// metadata, whose fields Go can decode into its built-in type; returns it as a map.
pub(crate) fn check_body(info: &ResourceInfo, body: Value) -> Result<Map<String, Value>, ApiError> {
    let obj = check_envelope(info, body)?;
    decodable(info, &obj)?;
    Ok(obj)
}

/// [`check_body`] but for the decoding of the fields (a patched object's are checked by
/// [`check_patched`]).
pub(super) fn check_envelope(info: &ResourceInfo, body: Value) -> Result<Map<String, Value>, ApiError> {
    let Value::Object(mut obj) = body else {
        return Err(ApiError::bad_request("couldn't get version/kind; json parse error: expected an object"));
    };
    let api_version = info.api_version();
    match obj.get("apiVersion") {
        None => {}
        Some(Value::String(s)) if s.is_empty() || *s == api_version => {}
        Some(Value::String(s)) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({s}) does not match the expected API version ({api_version})"
            )));
        }
        Some(_) => return Err(cannot_handle(info, "apiVersion must be a string")),
    }
    match obj.get("kind") {
        None => {}
        Some(Value::String(s)) if s.is_empty() || *s == info.kind => {}
        // Read as unstructured: the validation of a custom resource refuses the kind (422).
        Some(Value::String(_)) if info.custom.is_some() => {}
        Some(Value::String(s)) => {
            return Err(ApiError::bad_request(format!(
                "{s} in version \"{}\" cannot be handled as a {}: the object provided is unrecognized (wrong kind)",
                info.version, info.kind
            )));
        }
        Some(_) => return Err(cannot_handle(info, "kind must be a string")),
    }
    match obj.get("metadata") {
        None | Some(Value::Null) => {
            obj.insert("metadata".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(m)) => {
            for f in ["name", "namespace", "generateName", "resourceVersion", "uid"] {
                if let Some(v) = m.get(f)
                    && !v.is_string()
                    && !v.is_null()
                {
                    return Err(cannot_handle(
                        info,
                        &format!(
                            "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type string",
                            json_kind(v)
                        ),
                    ));
                }
            }
            if let Some(detail) = owner_references_shape(m.get("ownerReferences")) {
                return Err(cannot_handle(info, &detail));
            }
            for f in ["labels", "annotations"] {
                match m.get(f) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(kv)) => {
                        if let Some((_, bad)) = kv.iter().find(|(_, v)| !v.is_string()) {
                            return Err(cannot_handle(
                                info,
                                &format!(
                                    "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type string",
                                    json_kind(bad)
                                ),
                            ));
                        }
                    }
                    Some(v) => {
                        return Err(cannot_handle(
                            info,
                            &format!(
                                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type map[string]string",
                                json_kind(v)
                            ),
                        ));
                    }
                }
            }
        }
        Some(v) => {
            return Err(cannot_handle(
                info,
                &format!(
                    "json: cannot unmarshal {} into Go struct field {}.metadata of type v1.ObjectMeta",
                    json_kind(v),
                    info.kind
                ),
            ));
        }
    }
    Ok(obj)
}

/// Whether Go's decoder can read a body into its built-in type (without the other checks of
/// [`check_body`]): its refusal, in its words.
pub(crate) fn check_decodable(info: &ResourceInfo, body: &Value) -> Result<(), ApiError> {
    match body {
        Value::Object(obj) => decodable(info, obj),
        _ => Ok(()),
    }
}

fn decodable(info: &ResourceInfo, obj: &Map<String, Value>) -> Result<(), ApiError> {
    if info.custom.is_some() {
        return Ok(());
    }
    crate::go_types::check(&info.group, &info.version, &info.kind, obj).map_err(|e| cannot_handle(info, &e))
}

/// Checks that a patched object's fields can be decoded into its built-in type: kube-apiserver
/// refuses one that cannot with 422, naming `value` (see [`super::patch::DecodedPatch::
/// invalid_value`]) as the invalid value of `patch`. A strategically merged object is read as
/// kube's unstructured converter reads it, whole-number floats of integer fields as integers.
pub(crate) fn check_patched(
    info: &ResourceInfo,
    kind: super::PatchType,
    doc: &mut Value,
    value: impl FnOnce(&Value) -> String,
) -> Result<(), ApiError> {
    if info.custom.is_some() {
        return Ok(());
    }
    if let (super::PatchType::Strategic, Value::Object(obj)) = (kind, &mut *doc) {
        crate::go_types::whole_numbers_as_ints(&info.group, &info.version, &info.kind, obj);
    }
    let Value::Object(obj) = &*doc else { return Ok(()) };
    crate::go_types::check(&info.group, &info.version, &info.kind, obj)
        .map_err(|e| super::patch::invalid_patch(&value(doc), &e))
}

/// Why `metadata.ownerReferences` cannot be decoded into Go's `[]OwnerReference`, if it cannot.
fn owner_references_shape(refs: Option<&Value>) -> Option<String> {
    let unmarshal = |v: &Value, at: &str, ty: &str| {
        Some(format!("json: cannot unmarshal {} into Go struct field {at} of type {ty}", json_kind(v)))
    };
    let list = match refs {
        None | Some(Value::Null) => return None,
        Some(Value::Array(l)) => l,
        Some(v) => return unmarshal(v, "ObjectMeta.metadata.ownerReferences", "[]v1.OwnerReference"),
    };
    for r in list {
        let fields = match r {
            Value::Null => continue,
            Value::Object(f) => f,
            v => return unmarshal(v, "ObjectMeta.metadata.ownerReferences", "v1.OwnerReference"),
        };
        for (f, ty) in [("apiVersion", "string"), ("kind", "string"), ("name", "string"), ("uid", "types.UID")] {
            if let Some(v) = fields.get(f).filter(|v| !v.is_string() && !v.is_null()) {
                return unmarshal(v, &format!("OwnerReference.metadata.ownerReferences.{f}"), ty);
            }
        }
        for f in ["controller", "blockOwnerDeletion"] {
            if let Some(v) = fields.get(f).filter(|v| !v.is_boolean() && !v.is_null()) {
                return unmarshal(v, &format!("OwnerReference.metadata.ownerReferences.{f}"), "bool");
            }
        }
    }
    None
}

pub(super) fn meta_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    if !matches!(obj.get("metadata"), Some(Value::Object(_))) {
        obj.insert("metadata".into(), Value::Object(Map::new()));
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just set to an object"),
    }
}

pub(crate) fn meta_str(obj: &Map<String, Value>, f: &str) -> Option<String> {
    obj.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Resolves the namespace of a body against the URL namespace.
pub(crate) fn resolve_namespace(
    info: &ResourceInfo,
    obj: &mut Map<String, Value>,
    url_ns: Option<&str>,
) -> Result<String, ApiError> {
    if !info.namespaced {
        meta_mut(obj).remove("namespace");
        return Ok(String::new());
    }
    let body_ns = meta_str(obj, "namespace");
    let ns = match (url_ns, body_ns) {
        (Some(u), Some(b)) if u != b => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        (Some(u), _) => u.to_string(),
        (None, Some(b)) => b,
        (None, None) => "default".to_string(),
    };
    meta_mut(obj).insert("namespace".into(), ns.clone().into());
    Ok(ns)
}

/// A `metadata.resourceVersion` written in a body, read as kube's versioner reads it (Go's
/// `strconv.ParseUint`, decimal digits only): one it cannot read fails the write as kube's
/// storage fails it, 500 in Go's words.
pub(crate) fn parse_rv_field(s: &str) -> Result<u64, ApiError> {
    let failed = |why: &str| {
        let msg = format!("strconv.ParseUint: parsing {}: {why}", crate::structural::go_quote(s));
        ApiError::new(500, "", msg)
    };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(failed("invalid syntax"));
    }
    s.parse::<u64>().map_err(|_| failed("value out of range"))
}

//! PATCH bodies: the patch types kube-apiserver takes, a body decoded into one of them, and its
//! application to the current object.
//!
//! A JSON or merge patch body is decoded as kube-apiserver's strict decoding reads it (but with
//! `fieldValidation=Ignore`), and what it refuses is answered once the object is found: 400
//! `error decoding patch: ` and Go's `encoding/json` message unless it is JSON of its type's
//! shape (an array of objects whose `op`, `path` and `from` are strings, or an object; `null`
//! is the merge patch library's `Invalid JSON Patch`); a JSON patch's members other than those
//! four and `value` are its strict decoding's `unknown field` problems, and an operation that
//! cannot apply (an unknown `op`, a missing member) is the 422 of kube's JSON patch library.
//! A strategic merge patch body is judged as kube-apiserver judges it, also once the object is
//! found: 400 with Go's own `encoding/json` message (`invalid character …`, `json: cannot
//! unmarshal array into Go value of type map[string]interface {}`), `null` an empty patch. Its
//! merge's errors are kube's ([`strategic_merge::SmpError`]): 400 for a malformed directive,
//! 422 for a list of lists, else a 500 without a reason carrying Go's error text.
//!
//! Invariants: a body is decoded once, before the write's compare-and-swap loop, so that every
//! attempt applies the same patch (a decoding error is kept and answered by the attempt); a
//! patch that cannot apply is the write's answer, and nothing is stored.

use serde_json::{Map, Value};

use crate::field_validation;
use crate::go_json_syntax;
use crate::registry::ResourceInfo;
use crate::schema::{self, Node};
use crate::status::ApiError;
use crate::strategic_merge::{self, SmpError};

/// The kind of patch in a PATCH request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 7386 merge patch (`application/merge-patch+json`).
    Merge,
    /// Strategic merge patch (`application/strategic-merge-patch+json`): lists merged by the
    /// type's merge keys. Built-in types only (their schema says how); 415 for others.
    Strategic,
    /// RFC 6902 JSON patch.
    Json,
}

/// A decoded PATCH body, ready to apply.
pub(crate) enum DecodedPatch {
    Merge(Value),
    /// The body's map, and the type's schema that says how it merges.
    Strategic(Map<String, Value>, Node<'static>),
    /// The operations, none when one of them cannot apply whatever the object.
    Json(Option<json_patch::Patch>),
    /// A body kube refuses once it has found the object (answered when the patch is applied).
    Refused(ApiError),
}

/// kube's limit on a JSON patch's operations.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The members of kube's `jsonPatchOp` (and the value it decodes as anything).
const JSON_PATCH_MEMBERS: [&str; 4] = ["op", "path", "from", "value"];

impl DecodedPatch {
    /// Decodes a patch body for an object of `kind` in `group`/`version`: 400 unless a JSON or
    /// merge patch is JSON of its type's shape, 415 for a strategic merge patch of a type
    /// without a built-in schema (custom resources, as kube-apiserver answers). Also answers the
    /// body's strict decoding problems (duplicate fields, see [`field_validation::decode`], and a
    /// JSON patch's unknown members), worded as kube words them. `validation` says whether kube
    /// decodes the body strictly first (but for `Ignore`); a JSON or merge patch body it refuses
    /// is answered once the object is found (a missing object is 404 whatever the body).
    pub(crate) fn decode(
        kind: PatchType,
        gvk: (&str, &str, &str),
        patch: &[u8],
        validation: field_validation::FieldValidation,
    ) -> Result<(Self, Vec<String>), ApiError> {
        let (group, version, object_kind) = gvk;
        let node = match kind {
            PatchType::Strategic => Some(
                schema::builtin()
                    .root(group, version, object_kind)
                    .ok_or_else(|| unsupported_patch_type(CUSTOM_RESOURCE_PATCH_TYPES))?,
            ),
            _ => None,
        };
        let strict = validation != field_validation::FieldValidation::Ignore;
        Ok(Self::decode_body(kind, node, patch, strict).unwrap_or_else(|e| (DecodedPatch::Refused(e), Vec::new())))
    }

    /// The body decoded, or what kube answers it once the object is found.
    fn decode_body(
        kind: PatchType,
        node: Option<Node<'static>>,
        patch: &[u8],
        strict: bool,
    ) -> Result<(Self, Vec<String>), ApiError> {
        let worded = |prefix: &str, duplicates: Vec<String>| -> Vec<String> {
            duplicates.iter().map(|d| format!("{prefix}duplicate field \"{d}\"")).collect()
        };
        if let Some(node) = node {
            let (m, duplicates) = decode_strategic(patch)?;
            return Ok((DecodedPatch::Strategic(m, node), worded("", duplicates)));
        }
        // The strict decoding's errors are "error decoding patch: …"; without it, the JSON patch
        // library's own, and the merge patch library's "Invalid JSON Patch".
        let decoding = |e: String| match strict {
            true => ApiError::bad_request(format!("error decoding patch: {e}")),
            false => ApiError::bad_request(e),
        };
        let bad_merge_patch = || ApiError::bad_request("Invalid JSON Patch");
        if let Some(e) = go_json_syntax::syntax_error(patch) {
            return Err(if kind == PatchType::Merge && !strict { bad_merge_patch() } else { decoding(e) });
        }
        let (v, duplicates) = field_validation::decode(patch).map_err(|e| decoding(e.to_string()))?;
        if kind == PatchType::Merge {
            return match v {
                Value::Object(_) => Ok((DecodedPatch::Merge(v), worded("", duplicates))),
                Value::Null => Err(bad_merge_patch()),
                Value::String(_) | Value::Number(_) | Value::Bool(_) if !strict => Err(bad_merge_patch()),
                other => Err(decoding(format!(
                    "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    crate::go_types::json_kind(&other)
                ))),
            };
        }
        let ops = json_patch_ops(&v, strict).map_err(decoding)?;
        if ops.len() > MAX_JSON_PATCH_OPERATIONS {
            return Err(ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!(
                    "Request entity too large: The allowed maximum operations in a JSON patch is \
                     {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.len()
                ),
            ));
        }
        let mut problems = worded("json patch ", duplicates);
        for (i, op) in ops.iter().enumerate().filter(|_| strict) {
            let Some(members) = op.as_object() else { continue };
            let unknown = members.keys().filter(|k| !JSON_PATCH_MEMBERS.contains(&k.as_str()));
            problems.extend(unknown.map(|k| format!("json patch unknown field \"[{i}].{k}\"")));
        }
        Ok((DecodedPatch::Json(serde_json::from_value(v).ok()), problems))
    }

    /// Applies the patch to `doc` (422 when a JSON patch operation fails; kube's answers to a
    /// strategic merge patch's bad directives).
    pub(crate) fn apply(&self, doc: &mut Value) -> Result<(), ApiError> {
        match self {
            DecodedPatch::Json(p) => match p.as_ref().map(|p| json_patch::patch(doc, p)) {
                Some(Ok(())) => Ok(()),
                _ => Err(rejected()),
            },
            DecodedPatch::Merge(p) => {
                json_patch::merge(doc, p);
                Ok(())
            }
            DecodedPatch::Refused(e) => Err(e.clone()),
            DecodedPatch::Strategic(p, node) => {
                let Value::Object(original) = doc.take() else {
                    return Err(ApiError::internal("the stored object is not a JSON object"));
                };
                let merged = strategic_merge::apply(original, p.clone(), *node).map_err(smp_error)?;
                *doc = Value::Object(merged);
                Ok(())
            }
        }
    }
}

impl DecodedPatch {
    /// The invalid value of `patch` in kube-apiserver's 422 for a patched object it refuses to
    /// decode: the patched object's JSON for a JSON or merge patch (`patched`, before its
    /// unknown fields are pruned), the patch map as the merge leaves it for a strategic merge
    /// patch (applied to `original`).
    pub(crate) fn invalid_value(&self, original: &Value, patched: &Value) -> String {
        match (self, original) {
            (DecodedPatch::Strategic(p, node), Value::Object(o)) => {
                crate::strategic_merge::patch_after_merge(o, p, *node)
            }
            _ => patched.to_string(),
        }
    }
}

/// kube-apiserver's 422 for a patched object it cannot decode (or decodes strictly and finds
/// duplicate or unknown fields in): `patch` is invalid, its value `value`.
pub(crate) fn invalid_patch(value: &str, detail: &str) -> ApiError {
    let cause = format!("Invalid value: {}: {detail}", crate::structural::go_quote(value));
    let mut err = ApiError::new(422, "Invalid", format!(" \"\" is invalid: patch: {cause}"));
    err.details = Some(Box::new(
        serde_json::json!({"causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}]}),
    ));
    err
}

/// 415 for a strategic merge patch of a custom resource, which kube-apiserver's custom
/// resource handler takes for none of its routes (its `/scale` included).
pub(crate) fn refuse_custom_resource_strategic(kind: PatchType, info: &ResourceInfo) -> Result<(), ApiError> {
    match kind == PatchType::Strategic && info.custom.is_some() {
        true => Err(unsupported_patch_type(CUSTOM_RESOURCE_PATCH_TYPES)),
        false => Ok(()),
    }
}

/// 415 for a PATCH of a custom resource in a media type no patch has, as kube-apiserver's custom
/// resource handler words it (built-in resources answer go-restful's bare "415: Unsupported
/// Media Type").
pub(crate) fn unsupported_custom_resource_patch() -> ApiError {
    unsupported_patch_type(CUSTOM_RESOURCE_PATCH_TYPES)
}

/// The patch types of a custom resource, as kube-apiserver lists them.
const CUSTOM_RESOURCE_PATCH_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

/// A JSON patch's operations as kube's strict decoding reads them into `[]jsonPatchOp`: an
/// array whose items are objects (or `null`) with string `op`, `path` and `from`; otherwise Go's
/// type error, the first in the text's order. Without the strict decoding (`strict` false), as
/// the JSON patch library reads them into `jsonpatch.Patch`: objects of any members.
fn json_patch_ops(v: &Value, strict: bool) -> Result<&[Value], String> {
    let mismatch =
        |v: &Value, into: &str| format!("json: cannot unmarshal {} into {into}", crate::go_types::json_kind(v));
    let (list, item) = match strict {
        true => ("Go value of type []handlers.jsonPatchOp", "Go value of type handlers.jsonPatchOp"),
        false => ("Go value of type jsonpatch.Patch", "Go value of type jsonpatch.Operation"),
    };
    let Value::Array(ops) = v else { return Err(mismatch(v, list)) };
    for op in ops {
        match op {
            Value::Null => {}
            Value::Object(_) if !strict => {}
            Value::Object(members) => {
                for name in ["op", "path", "from"] {
                    if let Some(m) = members.get(name).filter(|m| !m.is_string() && !m.is_null()) {
                        return Err(mismatch(m, &format!("Go struct field jsonPatchOp.{name} of type string")));
                    }
                }
            }
            other => return Err(mismatch(other, item)),
        }
    }
    Ok(ops)
}

/// A strategic merge patch body as kube-apiserver reads it into a `map[string]interface{}`:
/// Go's syntax error first (the whole text is scanned before anything is decoded), then a type
/// error for a body that is not an object; `null` leaves the map empty.
fn decode_strategic(patch: &[u8]) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    if let Some(e) = go_json_syntax::syntax_error(patch) {
        return Err(ApiError::bad_request(e));
    }
    match field_validation::decode(patch).map_err(|e| ApiError::bad_request(e.to_string()))? {
        (Value::Object(m), duplicates) => Ok((m, duplicates)),
        (Value::Null, duplicates) => Ok((Map::new(), duplicates)),
        (other, _) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            )))
        }
    }
}

/// kube's generic 422 for a patch its library cannot apply: no cause, no operation named.
fn rejected() -> ApiError {
    let mut e = ApiError::new(422, "Invalid", "the server rejected our request due to an error in our request");
    e.details = Some(Box::new(Value::Object(Map::new())));
    e
}

/// kube-apiserver's answer to a strategic merge patch that cannot be applied.
fn smp_error(e: SmpError) -> ApiError {
    match e {
        SmpError::BadRequest(m) => ApiError::bad_request(m),
        SmpError::ListOfLists => rejected(),
        SmpError::Failed(m) => ApiError::new(500, "", m),
        SmpError::Panic => ApiError::panicked(),
    }
}

/// 415 for a PATCH whose media type the resource does not take, listing those it does.
fn unsupported_patch_type(accepted: &[&str]) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

//! PATCH bodies: the patch types kube-apiserver takes, a body decoded into one of them, and its
//! application to the current object.
//!
//! A JSON or merge patch body is decoded up front (400 `error decoding patch: …` unless it is
//! JSON of its type's shape). A strategic merge patch body is judged as kube-apiserver judges
//! it, only once the object is found (a missing object is 404 whatever the body): 400 with Go's
//! own `encoding/json` message (`invalid character …`, `json: cannot unmarshal array into Go
//! value of type map[string]interface {}`), `null` an empty patch. Its merge's errors are
//! kube's ([`strategic_merge::SmpError`]): 400 for a malformed directive, 422 for a list of
//! lists, else a 500 without a reason carrying Go's error text.
//!
//! Invariants: a body is decoded once, before the write's compare-and-swap loop, so that every
//! attempt applies the same patch (a strategic merge patch's decoding error is kept and answered
//! by the attempt); a patch that cannot apply is the write's answer, and nothing is stored.

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
    /// The body's map, or the 400 its decoding earns (answered when the patch is applied).
    Strategic(Result<Map<String, Value>, ApiError>, Node<'static>),
    Json(json_patch::Patch),
}

impl DecodedPatch {
    /// Decodes a patch body for an object of `kind` in `group`/`version`: 400 unless a JSON or
    /// merge patch is JSON of its type's shape, 415 for a strategic merge patch of a type
    /// without a built-in schema (custom resources, as kube-apiserver answers). Also answers the
    /// paths of the body's duplicate fields (see [`field_validation::decode`]).
    pub(crate) fn decode(
        kind: PatchType,
        (group, version, object_kind): (&str, &str, &str),
        patch: &[u8],
    ) -> Result<(Self, Vec<String>), ApiError> {
        if kind == PatchType::Strategic {
            let node = schema::builtin()
                .root(group, version, object_kind)
                .ok_or_else(|| unsupported_patch_type(CUSTOM_RESOURCE_PATCH_TYPES))?;
            return Ok(match decode_strategic(patch) {
                Ok((m, duplicates)) => (DecodedPatch::Strategic(Ok(m), node), duplicates),
                Err(e) => (DecodedPatch::Strategic(Err(e), node), Vec::new()),
            });
        }
        let (v, duplicates) =
            field_validation::decode(patch).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let decoded = match (kind, v) {
            (PatchType::Json, v) => serde_json::from_value::<json_patch::Patch>(v)
                .map(DecodedPatch::Json)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}"))),
            (PatchType::Merge, v) if v.is_object() => Ok(DecodedPatch::Merge(v)),
            (_, _) => Err(ApiError::bad_request("error decoding patch: a merge patch must be a JSON object")),
        }?;
        Ok((decoded, duplicates))
    }

    /// Applies the patch to `doc` (422 when a JSON patch operation fails; kube's answers to a
    /// strategic merge patch's bad directives).
    pub(crate) fn apply(&self, doc: &mut Value) -> Result<(), ApiError> {
        match self {
            // kube-apiserver's answer names no operation.
            DecodedPatch::Json(p) => json_patch::patch(doc, p).map_err(|_| {
                let mut e =
                    ApiError::new(422, "Invalid", "the server rejected our request due to an error in our request");
                e.details = Some(Box::new(Value::Object(Map::new())));
                e
            }),
            DecodedPatch::Merge(p) => {
                json_patch::merge(doc, p);
                Ok(())
            }
            DecodedPatch::Strategic(p, node) => {
                let p = p.as_ref().map_err(Clone::clone)?;
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
            (DecodedPatch::Strategic(Ok(p), node), Value::Object(o)) => {
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

/// kube-apiserver's answer to a strategic merge patch that cannot be applied.
fn smp_error(e: SmpError) -> ApiError {
    match e {
        SmpError::BadRequest(m) => ApiError::bad_request(m),
        SmpError::ListOfLists => {
            let mut e = ApiError::new(422, "Invalid", "the server rejected our request due to an error in our request");
            e.details = Some(Box::new(Value::Object(Map::new())));
            e
        }
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

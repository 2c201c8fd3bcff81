//! A CustomResourceDefinition's `selectableFields` as kube-apiserver v1.35 judges them.
//!
//! Invariants:
//! - each field's `jsonPath` is read as kube reads it (`.a.b`, `.m['k']` — array notation is
//!   refused here), against the schema of its version: it names a field the schema has, not
//!   one in `metadata`, of type `string`, `boolean` or `integer`, once; at most 8 fields, unless
//!   an update leaves a longer list as it was;
//! - the definition is judged as kube converts it before validating: fields alike in every
//!   version are the definition's own (`spec.selectableFields`), judged against a schema alike in
//!   every version, and refused when the schemas differ; fields of one version whose schema is
//!   alike in every version are refused (`may only be set when
//!   \`version.schema.openAPIV3Schema\` is not included`), as kube v1.35 refuses them.

use serde_json::Value;

use crate::structural::{Cause, go_quote};

/// The most selectable fields a version may have.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// The causes of the selectable fields of `versions` (the definition's `spec.versions`); `old`
/// is the definition an update replaces.
pub(crate) fn validate(versions: &[&Value], old: Option<&Value>, causes: &mut Vec<Cause>) {
    fn fields(v: &Value) -> Option<&Value> {
        v.get("selectableFields").filter(|f| !f.is_null())
    }
    fn schema(v: &Value) -> Option<&Value> {
        v.pointer("/schema/openAPIV3Schema").filter(|s| !s.is_null())
    }
    let alike = |get: fn(&Value) -> Option<&Value>| {
        let first = versions.first().and_then(|v| get(v));
        versions.iter().all(|v| get(v) == first).then_some(first)
    };
    let old_fields = |name: &str| -> Option<&Value> {
        let versions = old?.pointer("/spec/versions")?.as_array()?;
        versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(name)).and_then(fields)
    };
    let shared_schema = alike(schema);
    match alike(fields) {
        Some(shared) => {
            let Some(shared) = shared else { return };
            let Some(list) = shared.as_array().filter(|l| !l.is_empty()) else { return };
            let path = "spec.selectableFields";
            match shared_schema.flatten() {
                None => causes.push(invalid(path, "", "may only be set when validations.schema is included")),
                Some(schema) => {
                    // Unchanged in every version, a long list stays allowed.
                    let kept = versions.iter().all(|v| {
                        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
                        old_fields(name) == Some(shared)
                    });
                    judge(list, schema, path, kept, causes);
                }
            }
        }
        None => {
            for (i, v) in versions.iter().enumerate() {
                let Some(list) = fields(v).and_then(Value::as_array).filter(|l| !l.is_empty()) else {
                    continue;
                };
                let path = format!("spec.versions[{i}].selectableFields");
                match schema(v).filter(|_| shared_schema.is_none()) {
                    None => causes.push(invalid(
                        &path,
                        "",
                        "may only be set when `version.schema.openAPIV3Schema` is not included",
                    )),
                    Some(schema) => {
                        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
                        let kept = old_fields(name).and_then(Value::as_array) == Some(list);
                        judge(list, schema, &path, kept, causes);
                    }
                }
            }
        }
    }
}

/// The causes of one list of selectable fields at `path`, against `schema`.
fn judge(list: &[Value], schema: &Value, path: &str, kept: bool, causes: &mut Vec<Cause>) {
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in list.iter().enumerate() {
        let at = format!("{path}[{i}].jsonPath");
        let json_path = f.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if json_path.is_empty() {
            causes.push(Cause { reason: "FieldValueRequired", message: "Required value".into(), field: at });
            continue;
        }
        let (field_path, found) = match field_path(json_path, schema) {
            Ok(found) => found,
            Err(e) => {
                causes.push(invalid(&at, json_path, &format!("is an invalid path: {e}")));
                continue;
            }
        };
        if field_path.split(['.', '[']).next() == Some("metadata") {
            causes.push(invalid(&at, json_path, "must not point to fields in metadata"));
        }
        if !matches!(found.and_then(|s| s.get("type")).and_then(Value::as_str), Some("string" | "boolean" | "integer"))
        {
            causes.push(invalid(
                &at,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&field_path) {
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", go_quote(json_path)),
                field: at,
            });
        } else {
            unique.push(field_path);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !kept {
        causes.push(Cause {
            reason: "FieldValueTooMany",
            message: format!("Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items", unique.len()),
            field: path.into(),
        });
    }
}

fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {}: {detail}", go_quote(value)),
        field: field.into(),
    }
}

/// The field `json_path` names in `schema`, as kube's `ValidFieldPath` reads it without array
/// notation: its path as a field path (`a.b`, a map's key as `m[k]`) and its schema (None below
/// a map whose values have none).
fn field_path<'s>(json_path: &str, schema: &'s Value) -> Result<(String, Option<&'s Value>), String> {
    let mut path = String::new();
    let mut at = Some(schema);
    let mut tokens = crate::validation_rules::json_path_tokens(json_path).into_iter();
    while let Some(token) = tokens.next() {
        match token {
            "[" => return Err("array notation is not allowed".into()),
            "." => {
                let name = tokens.next().ok_or("unexpected end of JSON path")?;
                let node = at.ok_or("does not refer to a valid field")?;
                if let Some(props) = node.get("properties").and_then(Value::as_object) {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                    at = Some(props.get(name).ok_or("does not refer to a valid field")?);
                } else if let Some(additional) = node.get("additionalProperties").filter(|a| !a.is_null()) {
                    path.push_str(&format!("[{name}]"));
                    at = additional.as_object().map(|_| additional);
                } else {
                    return Err("does not refer to a valid field".into());
                }
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok((path, at))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(versions: Value, old: Option<Value>) -> Vec<String> {
        let versions: Vec<&Value> = versions.as_array().unwrap().iter().collect();
        let mut causes = Vec::new();
        validate(&versions, old.as_ref(), &mut causes);
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn schema() -> Value {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "color": {"type": "string"}, "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}})
    }

    fn version(name: &str, fields: &[&str]) -> Value {
        let fields: Vec<Value> = fields.iter().map(|p| json!({"jsonPath": p})).collect();
        json!({"name": name, "schema": schema(), "selectableFields": fields})
    }

    #[test]
    fn paths_name_scalar_fields_of_the_schema_once() {
        assert!(judged(json!([version("v1", &[".spec.color", ".spec.size", ".spec.labels.a"])]), None).is_empty());
        let bad = [
            ".spec.tags",
            ".spec.nope",
            ".metadata.name",
            "spec.color",
            ".spec['color']",
            ".spec.color",
            ".spec.color",
        ];
        assert_eq!(
            judged(json!([version("v1", &bad)]), None),
            [
                "spec.selectableFields[0].jsonPath: Invalid value: \".spec.tags\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                "spec.selectableFields[1].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[2].jsonPath: Invalid value: \".metadata.name\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[3].jsonPath: Invalid value: \"spec.color\": is an invalid path: expected [ or . but got: spec",
                "spec.selectableFields[4].jsonPath: Invalid value: \".spec['color']\": is an invalid path: array notation is not allowed",
                "spec.selectableFields[6].jsonPath: Duplicate value: \".spec.color\"",
            ]
        );
    }

    #[test]
    fn fields_follow_kube_s_conversion_of_the_definition() {
        // Alike fields over different schemas: kube refuses them.
        let mut other = version("v2", &[".spec.color"]);
        other["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] = json!({"type": "string"});
        assert_eq!(
            judged(json!([version("v1", &[".spec.color"]), other.clone()]), None),
            ["spec.selectableFields: Invalid value: \"\": may only be set when validations.schema is included"]
        );
        // Different fields over alike schemas, likewise.
        assert_eq!(
            judged(json!([version("v1", &[".spec.color"]), version("v2", &[".spec.size"])]), None),
            [
                "spec.versions[0].selectableFields: Invalid value: \"\": may only be set when `version.schema.openAPIV3Schema` is not included",
                "spec.versions[1].selectableFields: Invalid value: \"\": may only be set when `version.schema.openAPIV3Schema` is not included",
            ]
        );
        other["selectableFields"] = json!([{"jsonPath": ".spec.nope"}]);
        assert_eq!(
            judged(json!([version("v1", &[".spec.color"]), other]), None),
            [
                "spec.versions[1].selectableFields[0].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field"
            ]
        );
    }

    #[test]
    fn at_most_eight_unless_left_as_they_were() {
        let mut spec = json!({"type": "object", "properties": {}});
        let names: Vec<String> = (0..9).map(|i| format!("f{i}")).collect();
        for n in &names {
            spec["properties"][n] = json!({"type": "string"});
        }
        let paths: Vec<String> = names.iter().map(|n| format!(".spec.{n}")).collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut v = version("v1", &paths);
        v["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec;
        assert_eq!(judged(json!([v.clone()]), None), ["spec.selectableFields: Too many: 9: must have at most 8 items"]);
        let old = json!({"spec": {"versions": [v.clone()]}});
        assert!(judged(json!([v]), Some(old)).is_empty());
    }
}

//! The `default`s of a CustomResourceDefinition's schema, checked when the definition is
//! written as kube-apiserver checks them: a default must have no field its schema would prune,
//! must validate against its schema, and must pass the validation rules at and below its node.
//!
//! Invariants: each default is judged as a value of its own node (paths
//! `…properties[spec].properties[x].default`, and below it `….default.y`); rules run with
//! `oldSelf` the default itself and are not run on a default the schema refuses; as in kube,
//! defaults below `additionalProperties` are not judged, and those under the root's `metadata`
//! are left to kube's object-metadata checks.

use serde_json::Value;

use crate::structural::{Cause, go_value, has_unknown_fields, validate_value};

/// Checks the defaults in `schema` (the root of a version's schema, at field path `path`).
pub(crate) fn check_defaults(schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, child) in props {
            if k != "metadata" {
                check_node(child, &format!("{path}.properties[{k}]"), causes);
            }
        }
    }
}

fn check_node(node: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(m) = node.as_object() else { return };
    if let Some(default) = m.get("default") {
        let at = format!("{path}.default");
        if has_unknown_fields(node, default) {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {}: must not have unknown fields", go_value(default)),
                field: at.clone(),
            });
        }
        let found = validate_value(node, default, &at);
        if found.is_empty() {
            crate::validation_rules::validate_value(node, default, &at, causes);
        }
        causes.extend(found);
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, child) in props {
            check_node(child, &format!("{path}.properties[{k}]"), causes);
        }
    }
    if let Some(items) = m.get("items").filter(|i| i.is_object()) {
        check_node(items, &format!("{path}.items"), causes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value) -> Vec<(String, String)> {
        let mut causes = Vec::new();
        check_defaults(&schema, "spec.validation.openAPIV3Schema", &mut causes);
        causes.into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn defaults_must_fit_their_schema() {
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
        let found = check(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": "three"},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
            "limits": {"type": "object", "properties": {"cpu": {"type": "string"}}, "default": {"cpu": "1", "gpu": "2"}},
            "size": {"type": "integer", "maximum": 10, "default": 20}
        }}}}));
        assert_eq!(
            found,
            [
                (
                    format!("{at}[limits].default"),
                    "Invalid value: {\"cpu\":\"1\",\"gpu\":\"2\"}: must not have unknown fields".to_string()
                ),
                (
                    format!("{at}[replicas].default"),
                    format!(
                        "Invalid value: \"string\": {at}[replicas].default in body must be of type integer: \"string\""
                    )
                ),
                (
                    format!("{at}[size].default"),
                    format!("Invalid value: 20: {at}[size].default in body should be less than or equal to 10")
                ),
            ]
        );
    }

    #[test]
    fn defaults_must_pass_the_rules() {
        let found = check(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "worker": {"type": "object", "default": {},
                "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.min <= self.max"}]},
            "window": {"type": "object", "default": {"min": 5, "max": 1},
                "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min above max"}]}
        }}}}));
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
        assert_eq!(
            found,
            [
                (format!("{at}[window].default"), "Invalid value: min above max".to_string()),
                (
                    format!("{at}[worker].default"),
                    "Invalid value: \"object\": no such key: min evaluating rule: self.min <= self.max".to_string()
                ),
            ]
        );
    }
}

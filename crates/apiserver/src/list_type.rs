//! The uniqueness a custom resource's schema declares for its lists, as kube-apiserver's
//! `ValidateListSetsAndMaps` checks it: a list of `x-kubernetes-list-type: set` holds no element
//! twice, and one of `x-kubernetes-list-type: map` holds objects (or nulls), no two with the same
//! values of their `x-kubernetes-list-map-keys`.
//!
//! Invariants:
//! - every list is judged where the schema reaches it (`properties`, `additionalProperties`,
//!   `items`), at every depth;
//! - elements compare as kube's decoded values compare: scalars by type and value (an integer
//!   literal and a float are different), objects and lists by their JSON;
//! - each repeated value is reported once, at its second occurrence (`Duplicate value: …`, the
//!   value as Go's `json.Marshal` writes it; a map list's duplicate shows its keys only, `{}` for
//!   an element without them);
//! - a map list with an element that is not an object is reported at the first such element
//!   alone (`must be an object for an array of list-type map`);
//! - keys are visited in order (kube visits them in Go's random map order).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::structural::{Cause, go_json, go_value, join};

/// The causes of the lists in `obj` (a whole object) that break their schema's uniqueness.
pub(crate) fn validate(schema: &Value, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Value::Object(m) = obj {
        object(schema, m, "", &mut causes);
    }
    causes
}

fn object(schema: &Value, obj: &Map<String, Value>, path: &str, causes: &mut Vec<Cause>) {
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        for (k, v) in obj {
            value(additional, v, &format!("{path}[{k}]"), causes);
        }
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (k, v) in obj {
            if let Some(sub) = properties.get(k) {
                value(sub, v, &join(path, k), causes);
            }
        }
    }
}

fn value(schema: &Value, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    match v {
        Value::Array(items) => array(schema, items, path, causes),
        Value::Object(m) => object(schema, m, path, causes),
        _ => {}
    }
}

fn array(schema: &Value, items: &[Value], path: &str, causes: &mut Vec<Cause>) {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in repeated(items) {
                causes.push(duplicate(format!("{path}[{i}]"), &go_value(&items[i])));
            }
        }
        Some("map") => map_list(schema, items, path, causes),
        _ => {}
    }
    if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
        for (i, item) in items.iter().enumerate() {
            value(item_schema, item, &format!("{path}[{i}]"), causes);
        }
    }
}

fn map_list(schema: &Value, items: &[Value], path: &str, causes: &mut Vec<Cause>) {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: must be an object for an array of list-type map", go_value(&items[i])),
            field: format!("{path}[{i}]"),
        });
        return;
    }
    let key_fields: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Each element's keys, as the object kube reports a duplicate with.
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let fields = x.as_object();
            let found = key_fields.iter().filter_map(|k| Some((k.to_string(), fields?.get(*k)?.clone())));
            Value::Object(found.collect())
        })
        .collect();
    let compared: Vec<Value> = match key_fields.as_slice() {
        // With one key, the key's value itself is compared (an element without it compares
        // equal to every other such element).
        [single] => keys.iter().map(|k| k.get(*single).cloned().unwrap_or_else(|| Value::Object(Map::new()))).collect(),
        _ => keys.clone(),
    };
    for i in repeated(&compared) {
        causes.push(duplicate(format!("{path}[{i}]"), &go_json(&keys[i])));
    }
}

/// The indices of the second occurrences of the values repeated in `items`.
fn repeated(items: &[Value]) -> Vec<usize> {
    if items.len() < 2 {
        return Vec::new();
    }
    let mut seen: HashMap<String, u32> = HashMap::with_capacity(items.len());
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let times = seen.entry(identity(x)).or_default();
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// What tells two decoded values apart: a scalar by its Go type and value, an object or a list
/// by Go's JSON of it (as kube compares them).
fn identity(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("c{}", go_json(v)),
        Value::Number(n) if n.is_i64() => format!("i{n}"),
        Value::Number(n) => format!("f{}", n.as_f64().unwrap_or_default()),
        other => format!("s{other}"),
    }
}

fn duplicate(field: String, shown: &str) -> Cause {
    Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {shown}"), field }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(schema: Value, obj: Value) -> Vec<String> {
        validate(&schema, &obj).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn spec_list(list: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"l": list}}}})
    }

    #[test]
    fn sets_hold_each_element_once() {
        let schema = spec_list(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {}}));
        assert!(judged(schema.clone(), json!({"spec": {"l": ["a", "b", 1, 1.0]}})).is_empty());
        assert_eq!(
            judged(schema.clone(), json!({"spec": {"l": ["a", "b", "a", "a", 2, 2]}})),
            ["spec.l[2]: Duplicate value: \"a\"", "spec.l[5]: Duplicate value: 2"]
        );
        assert_eq!(
            judged(schema, json!({"spec": {"l": [{"x": [1, 2]}, {"x": [1.0, 2]}]}})),
            ["spec.l[1]: Duplicate value: {\"x\":[1,2]}"]
        );
    }

    #[test]
    fn maps_hold_each_key_once() {
        let one = spec_list(json!({
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object"}
        }));
        assert_eq!(
            judged(
                one.clone(),
                json!({"spec": {"l": [
                    {"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}, {}, null
                ]}})
            ),
            ["spec.l[1]: Duplicate value: {\"type\":\"Ready\"}", "spec.l[3]: Duplicate value: {}"]
        );
        assert_eq!(
            judged(one, json!({"spec": {"l": [{"type": "a"}, "b", 3]}})),
            ["spec.l[1]: Invalid value: \"b\": must be an object for an array of list-type map"]
        );
        let two = spec_list(json!({
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object"}
        }));
        assert_eq!(
            judged(
                two,
                json!({"spec": {"l": [
                    {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP", "name": "x"}
                ]}})
            ),
            ["spec.l[2]: Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}"]
        );
    }

    #[test]
    fn lists_are_judged_at_every_depth() {
        let set = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "object", "properties": {"tags": set}}},
        }}});
        assert_eq!(
            judged(schema, json!({"spec": {"groups": [{"tags": ["x"]}, {"tags": ["y", "y"]}]}})),
            ["spec[groups][1].tags[1]: Duplicate value: \"y\""]
        );
    }
}

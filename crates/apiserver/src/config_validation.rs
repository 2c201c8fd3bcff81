//! ConfigMaps and Secrets judged as kube-apiserver judges them (`ValidateConfigMap`,
//! `ValidateSecret` and their updates): keys a file can be named by, at most 1 MiB of values,
//! the keys each Secret type needs, a type that does not change, and contents that do not change
//! once `immutable` is set (which stays set).
//!
//! Invariants: only the object and the stored version it replaces are read; keys are judged in
//! name order (kube's order is a map's); sizes count the values' bytes (a Secret's decoded).

use serde_json::{Map, Value};

use crate::policy_validation::{invalid, required};
use crate::structural::Cause;

/// The most bytes of values a ConfigMap or Secret may hold.
const MAX_SIZE: usize = 1024 * 1024;

/// What kube says of a change to what `immutable` protects.
const IMMUTABLE: &str = "field is immutable when `immutable` is set";

/// The causes for which kube refuses the ConfigMap `obj` (over `old` on an update).
pub(crate) fn config_map(obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = old.map(|old| immutable(obj, old, &["data", "binaryData"])).unwrap_or_default();
    let data = members(obj, "data");
    let binary = members(obj, "binaryData");
    for (key, _) in &data {
        key_faults(key, &format!("data[{key}]"), &mut causes);
        if binary.iter().any(|(k, _)| k == key) {
            causes.push(invalid(format!("data[{key}]"), key, "duplicate of key present in binaryData"));
        }
    }
    for (key, _) in &binary {
        key_faults(key, &format!("binaryData[{key}]"), &mut causes);
    }
    let text: usize = data.iter().map(|(_, v)| v.as_str().map_or(0, str::len)).sum();
    let bytes: usize = binary.iter().map(|(_, v)| decoded_len(v)).sum();
    if text + bytes > MAX_SIZE {
        causes.push(too_long("[]"));
    }
    causes
}

/// The causes for which kube refuses the Secret `obj` (over `old` on an update).
pub(crate) fn secret(obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(old) = old {
        let was = old.get("type").and_then(Value::as_str).unwrap_or("");
        if was != kind {
            causes.push(invalid("type".into(), kind, "field is immutable"));
        }
        causes.extend(immutable(obj, old, &["data"]));
    }
    let data = members(obj, "data");
    for (key, _) in &data {
        key_faults(key, &format!("data[{key}]"), &mut causes);
    }
    if data.iter().map(|(_, v)| decoded_len(v)).sum::<usize>() > MAX_SIZE {
        causes.push(too_long("data"));
    }
    let has = |key: &str| data.iter().any(|(k, _)| k.as_str() == key);
    let need = |key: &str, causes: &mut Vec<Cause>| causes.push(required(format!("data[{key}]"), ""));
    match kind {
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            let named = obj
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(annotation))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                causes.push(required(format!("metadata.annotations[{annotation}]"), ""));
            }
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => need(".dockercfg", &mut causes),
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => need(".dockerconfigjson", &mut causes),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            need("username", &mut causes);
            need("password", &mut causes);
        }
        "kubernetes.io/ssh-auth" if data.iter().all(|(k, v)| k.as_str() != "ssh-privatekey" || decoded_len(v) == 0) => {
            need("ssh-privatekey", &mut causes)
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    need(key, &mut causes);
                }
            }
        }
        _ => {}
    }
    causes
}

/// kube's checks of an object stored `immutable`: it stays so, and `fields` do not change (as
/// `reflect.DeepEqual` compares them: every key and value as it was, an empty map not a missing
/// one).
fn immutable(obj: &Map<String, Value>, old: &Map<String, Value>, fields: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return causes;
    }
    if obj.get("immutable") != Some(&Value::Bool(true)) {
        causes.push(crate::pod_validation::forbidden("immutable".into(), IMMUTABLE));
    }
    for field in fields {
        let present = |m: &Map<String, Value>| m.get(*field).filter(|v| !v.is_null()).cloned();
        if present(obj) != present(old) {
            causes.push(crate::pod_validation::forbidden((*field).into(), IMMUTABLE));
        }
    }
    causes
}

/// apimachinery's `IsConfigMapKey`: a name a file in a volume can have.
pub(crate) fn key_faults(key: &str, at: &str, causes: &mut Vec<Cause>) {
    if key.len() > 253 {
        causes.push(invalid(at.into(), key, "must be no more than 253 characters"));
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if key.is_empty() || !key.bytes().all(allowed) {
        causes.push(invalid(
            at.into(),
            key,
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or \
             'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ));
    }
    let chdir = match key {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        k if k.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    };
    if let Some(fault) = chdir {
        causes.push(invalid(at.into(), key, fault));
    }
}

/// A map member's entries (none when it is missing or not a map).
fn members<'a>(obj: &'a Map<String, Value>, key: &str) -> Vec<(&'a String, &'a Value)> {
    obj.get(key).and_then(Value::as_object).map(|m| m.iter().collect()).unwrap_or_default()
}

/// The number of bytes a base64 value holds.
fn decoded_len(v: &Value) -> usize {
    let s = v.as_str().unwrap_or("").trim_end_matches('=');
    s.len() * 3 / 4
}

fn too_long(at: &str) -> Cause {
    Cause {
        reason: "FieldValueTooLong",
        message: format!("Too long: may not be more than {MAX_SIZE} bytes"),
        field: at.into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    const KEY: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or \
                       'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    #[test]
    fn config_maps_have_file_names_for_keys_and_at_most_a_mebibyte() {
        let cm = map(json!({"data": {"ok.key": "v", "a b": "v", "..x": "v", "both": "v"},
            "binaryData": {"both": "dg==", ".": "dg=="}}));
        assert_eq!(
            messages(config_map(&cm, None)),
            [
                "data[..x]: Invalid value: \"..x\": must not start with '..'".to_string(),
                format!("data[a b]: Invalid value: \"a b\": {KEY}"),
                "data[both]: Invalid value: \"both\": duplicate of key present in binaryData".into(),
                "binaryData[.]: Invalid value: \".\": must not be '.'".into(),
            ]
        );
        let big = map(json!({"data": {"a": "x".repeat(MAX_SIZE)}, "binaryData": {"b": "dg=="}}));
        assert_eq!(messages(config_map(&big, None)), ["[]: Too long: may not be more than 1048576 bytes"]);
    }

    #[test]
    fn immutable_contents_stay_as_they_are() {
        let old = map(json!({"immutable": true, "data": {"a": "1"}}));
        let same = map(json!({"immutable": true, "data": {"a": "1"}}));
        assert_eq!(messages(config_map(&same, Some(&old))), Vec::<String>::new());
        // As kube's reflect.DeepEqual: an empty map is not a missing one.
        let emptied = map(json!({"immutable": true, "data": {"a": "1"}, "binaryData": {}}));
        assert_eq!(messages(config_map(&emptied, Some(&old))), [format!("binaryData: Forbidden: {IMMUTABLE}")]);
        assert_eq!(
            messages(config_map(&map(json!({"data": {"a": "2"}})), Some(&old))),
            [format!("immutable: Forbidden: {IMMUTABLE}"), format!("data: Forbidden: {IMMUTABLE}")]
        );
        let old_secret = map(json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}}));
        let new_secret = map(json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"a": "Mg=="}}));
        assert_eq!(
            messages(secret(&new_secret, Some(&old_secret))),
            [
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable".to_string(),
                format!("data: Forbidden: {IMMUTABLE}"),
                "data[tls.crt]: Required value".into(),
                "data[tls.key]: Required value".into(),
            ]
        );
    }

    #[test]
    fn secrets_carry_what_their_type_needs() {
        let judged = |v: Value| messages(secret(&map(v), None));
        assert_eq!(
            judged(json!({"type": "kubernetes.io/basic-auth"})),
            ["data[username]: Required value", "data[password]: Required value"]
        );
        assert_eq!(judged(json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}})), Vec::<String>::new());
        assert_eq!(
            judged(json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}})),
            ["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            judged(json!({"type": "kubernetes.io/dockerconfigjson"})),
            ["data[.dockerconfigjson]: Required value"]
        );
        assert_eq!(
            judged(json!({"type": "kubernetes.io/service-account-token"})),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert_eq!(
            judged(json!({"type": "example.com/custom", "data": {"a/b": "eA=="}})),
            [format!("data[a/b]: Invalid value: \"a/b\": {KEY}")]
        );
        let big = "A".repeat(MAX_SIZE / 3 * 4 + 8);
        assert_eq!(judged(json!({"data": {"a": big}})), ["data: Too long: may not be more than 1048576 bytes"]);
    }
}

//! PersistentVolumeClaims as kube-apiserver v1.35 takes them: its create strategy's data source
//! rules ([`normalize`]), the claim spec's validation (`ValidatePersistentVolumeClaimSpec`,
//! also each StatefulSet claim template's, [`validate_spec`]) and what an update may change
//! (`ValidatePersistentVolumeClaimUpdate`, [`validate_update`]).
//!
//! - Data sources: a `dataSource` of another kind than a PersistentVolumeClaim or a
//!   VolumeSnapshot is dropped when no `dataSourceRef` is given, a `dataSourceRef` naming a
//!   namespace is dropped (cross-namespace sources are an alpha feature, off by default), and
//!   each of the two is copied into the other when only one is given.
//! - A spec has access modes kube knows (`ReadWriteOncePod` alone), a storage request above
//!   zero, a valid selector, a storage class and volume attributes class that are DNS
//!   subdomains, a known volume mode, data sources with a name and kind (an unnamed API group
//!   only for claims) that agree.
//! - Once created, a claim's spec changes only in its storage request and volume attributes
//!   class while bound (a request may shrink only while above the capacity it has), a volume
//!   name set once and a storage class set where there was none.
//!
//! Invariants: claims are judged as stored (after defaulting and the data source rules); causes
//! come in kube's order with its paths and messages, an update's spec causes twice as kube
//! reports them.

use serde_json::{Map, Value, json};

use crate::admission_policy::strings;
use crate::pod_validation::forbidden;
use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::Cause;
use crate::workload_validation::invalid_value;

/// The access modes kube knows, in the order it lists them.
const ACCESS_MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];

/// The beta annotation that named a claim's storage class before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// kube's create and update strategies' data source rules for the claim `obj`; `old` is the
/// stored claim on update.
pub(crate) fn normalize(obj: &mut Map<String, Value>, old: Option<&Map<String, Value>>) {
    let old_spec = old.and_then(|o| o.get("spec"));
    let had = |key: &str| old_spec.and_then(|s| s.get(key)).is_some_and(|v| !v.is_null());
    let Some(Value::Object(spec)) = obj.get_mut("spec") else { return };
    let set = |spec: &Map<String, Value>, key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    let namespaced = |r: &Value| r.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if spec.get("dataSourceRef").is_some_and(namespaced) && !had("dataSourceRef") {
        spec.remove("dataSourceRef");
    }
    if !had("dataSource") && !had("dataSourceRef") && !set(spec, "dataSourceRef") {
        let kept = spec.get("dataSource").is_none_or(|ds| {
            let group = ds.get("apiGroup").and_then(Value::as_str).unwrap_or("");
            match ds.get("kind").and_then(Value::as_str).unwrap_or("") {
                "PersistentVolumeClaim" => group.is_empty(),
                "VolumeSnapshot" => group == "snapshot.storage.k8s.io",
                _ => false,
            }
        });
        if !kept {
            spec.remove("dataSource");
        }
    }
    mirror(spec);
}

/// kube's `NormalizeDataSources`: each of `dataSource` and `dataSourceRef` is copied into the
/// other when only it is given (a reference to another namespace is not).
fn mirror(spec: &mut Map<String, Value>) {
    let namespaced = |r: &Value| r.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let copy = |from: &Value| {
        let mut to = Map::new();
        for key in ["apiGroup", "kind", "name"] {
            if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
                to.insert(key.into(), v.clone());
            }
        }
        Value::Object(to)
    };
    match (spec.get("dataSource").filter(|v| !v.is_null()), spec.get("dataSourceRef").filter(|v| !v.is_null())) {
        (Some(ds), None) => {
            let r = copy(ds);
            spec.insert("dataSourceRef".into(), r);
        }
        (None, Some(r)) if !namespaced(r) => {
            let ds = copy(r);
            spec.insert("dataSource".into(), ds);
        }
        _ => {}
    }
}

/// The causes for the claim spec `spec` at `at` (`spec`, `spec.volumeClaimTemplates[0].spec`).
pub(crate) fn validate_spec(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let modes = strings(spec, "accessModes");
    if modes.is_empty() {
        causes.push(required(format!("{at}.accessModes"), "at least 1 access mode is required"));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        crate::webhook_configuration::check_selector(sel, &format!("{at}.selector"), causes);
    }
    for mode in modes.iter().filter(|m| !ACCESS_MODES.contains(m)) {
        causes.push(unsupported(format!("{at}.accessModes"), mode, &ACCESS_MODES));
    }
    if modes.contains(&"ReadWriteOncePod") && modes.iter().any(|m| ACCESS_MODES.contains(m) && *m != "ReadWriteOncePod")
    {
        causes.push(forbidden(format!("{at}.accessModes"), "may not use ReadWriteOncePod with other access modes"));
    }
    let storage_at = format!("{at}.resources[storage]");
    match spec.pointer("/resources/requests/storage") {
        None => causes.push(required(storage_at, "")),
        // Go decodes a null quantity as a zero one.
        Some(Value::Null) => causes.push(invalid(storage_at, "0", "must be greater than zero")),
        Some(q) => {
            let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
            if crate::quantity::parse(&text).is_some_and(|n| n <= 0) {
                let shown = crate::quantity::canonical(&text).unwrap_or(text);
                causes.push(invalid(storage_at, &shown, "must be greater than zero"));
            }
        }
    }
    subdomain(spec, "storageClassName", at, causes);
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !matches!(mode, "Block" | "Filesystem")
    {
        causes.push(unsupported(format!("{at}.volumeMode"), mode, &["Block", "Filesystem"]));
    }
    let source = spec.get("dataSource").filter(|v| !v.is_null());
    let reference = spec.get("dataSourceRef").filter(|v| !v.is_null());
    if let Some(ds) = source {
        data_source(ds, &format!("{at}.dataSource"), causes);
    }
    if let Some(r) = reference {
        let ref_at = format!("{at}.dataSourceRef");
        data_source(r, &ref_at, causes);
        if let Some(ns) = r.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            for fault in crate::cel_format::dns1123_label(ns) {
                causes.push(invalid(format!("{ref_at}.namespace"), ns, &fault));
            }
        }
    }
    if let (Some(ds), Some(r)) = (source, reference) {
        let namespaced = r.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        // (kube shows the path it meant as its value, which Go's JSON writes as `{}`.)
        if namespaced {
            causes.push(invalid_value(at, "{}", "may not be specified when dataSourceRef.namespace is specified"));
        } else if ["apiGroup", "kind", "name"].iter().any(|k| {
            // As Go compares them: a nil group is only a nil one; a missing name or kind is "".
            let member = |v: &Value| v.get(*k).filter(|m| !m.is_null()).cloned();
            let or_empty =
                |m: Option<Value>| if *k == "apiGroup" { m } else { m.or(Some(Value::String(String::new()))) };
            or_empty(member(ds)) != or_empty(member(r))
        }) {
            causes.push(invalid_value(at, "{}", "must match dataSourceRef"));
        }
    }
    subdomain(spec, "volumeAttributesClassName", at, causes);
}

/// A name member of `spec` that, when set and not empty, is a DNS subdomain.
fn subdomain(spec: &Value, key: &str, at: &str, causes: &mut Vec<Cause>) {
    if let Some(name) = spec.get(key).and_then(Value::as_str).filter(|n| !n.is_empty()) {
        for fault in crate::cel_format::dns1123_subdomain(name) {
            causes.push(invalid(format!("{at}.{key}"), name, &fault));
        }
    }
}

/// kube's `validateDataSource` (and the shared part of `validateDataSourceRef`) at `at`.
fn data_source(ds: &Value, at: &str, causes: &mut Vec<Cause>) {
    let text = |k: &str| ds.get(k).and_then(Value::as_str).unwrap_or("");
    if text("name").is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    }
    if text("kind").is_empty() {
        causes.push(required(format!("{at}.kind"), ""));
    }
    let group = text("apiGroup");
    if group.is_empty() && text("kind") != "PersistentVolumeClaim" {
        causes.push(invalid(
            at.into(),
            text("kind"),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(group) {
            causes.push(invalid(format!("{at}.apiGroup"), group, &fault));
        }
    }
}

/// The causes for which kube refuses the update of the claim `old` to `new` (both as stored),
/// after the new claim's own: its spec causes again, then what may not change.
pub(crate) fn validate_update(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let empty = Value::Object(Map::new());
    let (spec, old_spec) = (new.get("spec").unwrap_or(&empty), old.get("spec").unwrap_or(&empty));
    let mut causes = Vec::new();
    validate_spec(spec, "spec", &mut causes);
    let (mut now, mut before) = (spec.clone(), old_spec.clone());
    for s in [&mut now, &mut before] {
        if !s.is_object() {
            *s = json!({});
        }
    }
    // The stored spec as kube reads it back, its data sources mirrored.
    if let Value::Object(m) = &mut before {
        mirror(m);
    }
    // The volume name may be set once.
    if old_spec.get("volumeName").and_then(Value::as_str).unwrap_or("").is_empty() {
        before["volumeName"] = now.get("volumeName").cloned().unwrap_or(Value::Null);
    }
    let annotation = |o: &Map<String, Value>| -> Option<String> {
        o.get("metadata")?.get("annotations")?.get(BETA_CLASS)?.as_str().map(str::to_string)
    };
    let (new_beta, old_beta) = (annotation(new), annotation(old));
    let class = |s: &Value| s.get("storageClassName").and_then(Value::as_str).map(str::to_string);
    let (new_class, old_class) = (class(spec), class(old_spec));
    let upgraded = old_beta.is_some()
        && old_class.is_none()
        && new_class.is_some()
        && new_class == old_beta
        && (new_beta.is_none() || new_beta == old_beta);
    if upgraded {
        now.as_object_mut().map(|m| m.remove("storageClassName"));
    } else {
        if new_beta.as_deref().unwrap_or("") != old_beta.as_deref().unwrap_or("") {
            let field = format!("metadata.annotations.{BETA_CLASS}");
            causes.push(invalid(field, new_beta.as_deref().unwrap_or(""), "field is immutable"));
        }
        if new_class.is_some() && old_class.is_none() && (old_beta.is_none() || new_class == old_beta) {
            now.as_object_mut().map(|m| m.remove("storageClassName"));
        }
    }
    let bound = old.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str) == Some("Bound");
    if bound {
        if now.pointer("/resources/requests").is_some_and(Value::is_object) {
            let stored = old_spec.pointer("/resources/requests/storage").cloned();
            if let Some(Value::Object(requests)) = now.pointer_mut("/resources/requests") {
                match stored {
                    Some(q) => requests.insert("storage".into(), q),
                    None => requests.remove("storage"),
                };
            }
        }
        now["volumeAttributesClassName"] = before.get("volumeAttributesClassName").cloned().unwrap_or(Value::Null);
    }
    if !crate::semantic::equal(Some(&now), Some(&before)) {
        let diff = crate::unified_diff::of_lines(&go_spec_lines(&before), &go_spec_lines(&now));
        causes.push(forbidden(
            "spec".into(),
            &format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound \
                 claims\n{diff}"
            ),
        ));
    }
    // In billionths; a missing size is zero.
    let size = |s: &Value, pointer: &str| -> i128 {
        let text = s.pointer(pointer).map(|q| q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string()));
        text.as_deref().and_then(crate::quantity::parse).unwrap_or(0)
    };
    let new_size = size(spec, "/resources/requests/storage");
    let old_size = size(old_spec, "/resources/requests/storage");
    let capacity = old.get("status").map(|s| size(s, "/capacity/storage")).unwrap_or_default();
    if new_size < old_size && new_size <= capacity {
        causes.push(forbidden("spec.resources.requests.storage".into(), "field can not be less than status.capacity"));
    }
    let mode = |s: &Value| s.get("volumeMode").cloned().unwrap_or(Value::Null);
    if mode(spec) != mode(old_spec) {
        let shown = crate::structural::go_json(&mode(spec));
        causes.push(invalid_value("volumeMode", &shown, "field is immutable"));
    }
    let vac = |s: &Value| s.get("volumeAttributesClassName").and_then(Value::as_str).map(str::to_string);
    let current =
        old.get("status").and_then(|s| s.get("currentVolumeAttributesClassName")).is_some_and(|c| !c.is_null());
    if vac(spec) != vac(old_spec) && current {
        let field = "spec.volumeAttributesClassName".to_string();
        match vac(spec).as_deref() {
            None => causes.push(forbidden(
                field,
                "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil",
            )),
            Some("") => causes.push(forbidden(
                field,
                "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil",
            )),
            Some(_) => {}
        }
    }
    causes
}

/// A claim spec as kube's diff prints it: Go's indented JSON of its internal type (Go's field
/// names in declaration order, unset ones `null`).
fn go_spec_lines(spec: &Value) -> Vec<String> {
    let member = |k: &str| spec.get(k).cloned().unwrap_or(Value::Null);
    let text = |k: &str| spec.get(k).filter(|v| !v.is_null()).cloned().unwrap_or(Value::String(String::new()));
    let reference = |k: &str, namespaced: bool| -> Vec<(&'static str, Value)> {
        let r = spec.get(k);
        let at = |f: &str| r.and_then(|r| r.get(f)).cloned();
        let mut fields = vec![
            ("APIGroup", at("apiGroup").unwrap_or(Value::Null)),
            ("Kind", at("kind").unwrap_or(Value::String(String::new()))),
            ("Name", at("name").unwrap_or(Value::String(String::new()))),
        ];
        if namespaced {
            fields.push(("Namespace", at("namespace").unwrap_or(Value::Null)));
        }
        fields
    };
    let resources = spec.get("resources");
    // Quantities as Go writes them back: canonical.
    let list = |k: &str| match resources.and_then(|r| r.get(k)) {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .map(|(name, q)| {
                    let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
                    (name.clone(), Value::String(crate::quantity::canonical(&text).unwrap_or(text)))
                })
                .collect(),
        ),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    let selector = spec.get("selector").filter(|s| !s.is_null()).map(|s| {
        let mut fields = Vec::new();
        // Go leaves empty members out (`omitempty`).
        let empty = |v: &Value| {
            v.is_null() || v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
        };
        for k in ["matchLabels", "matchExpressions"] {
            if let Some(v) = s.get(k).filter(|v| !empty(v)) {
                fields.push((k, v.clone()));
            }
        }
        Shape::Struct(fields.into_iter().map(|(k, v)| (k, Shape::Value(v))).collect())
    });
    let nullable = |r: Option<&Value>, fields: Vec<(&'static str, Value)>| match r.filter(|v| !v.is_null()) {
        None => Shape::Value(Value::Null),
        Some(_) => Shape::Struct(fields.into_iter().map(|(k, v)| (k, Shape::Value(v))).collect()),
    };
    let shape = Shape::Struct(vec![
        ("AccessModes", Shape::Value(member("accessModes"))),
        ("Selector", selector.unwrap_or(Shape::Value(Value::Null))),
        (
            "Resources",
            Shape::Struct(vec![("Limits", Shape::Value(list("limits"))), ("Requests", Shape::Value(list("requests")))]),
        ),
        ("VolumeName", Shape::Value(text("volumeName"))),
        ("StorageClassName", Shape::Value(member("storageClassName"))),
        ("VolumeMode", Shape::Value(member("volumeMode"))),
        ("DataSource", nullable(spec.get("dataSource"), reference("dataSource", false))),
        ("DataSourceRef", nullable(spec.get("dataSourceRef"), reference("dataSourceRef", true))),
        ("VolumeAttributesClassName", Shape::Value(member("volumeAttributesClassName"))),
    ]);
    let mut out = String::new();
    shape.write(&mut out, 0);
    out.lines().map(|l| format!("{l}\n")).collect()
}

/// A value whose members keep the order given, for [`go_spec_lines`].
enum Shape {
    Struct(Vec<(&'static str, Shape)>),
    Value(Value),
}

impl Shape {
    /// Writes the value as Go's `json.MarshalIndent(v, "", " ")` does, at `depth`.
    fn write(&self, out: &mut String, depth: usize) {
        match self {
            Shape::Value(v) => {
                let mut bytes = Vec::new();
                let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
                let mut ser = serde_json::Serializer::with_formatter(&mut bytes, formatter);
                let _ = serde::Serialize::serialize(v, &mut ser);
                let text = String::from_utf8_lossy(&bytes).replace('\n', &format!("\n{}", " ".repeat(depth)));
                out.push_str(&text);
            }
            Shape::Struct(fields) if fields.is_empty() => out.push_str("{}"),
            Shape::Struct(fields) => {
                out.push_str("{\n");
                for (i, (name, value)) in fields.iter().enumerate() {
                    out.push_str(&format!("{}\"{name}\": ", " ".repeat(depth + 1)));
                    value.write(out, depth + 1);
                    out.push_str(if i + 1 < fields.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}}}", " ".repeat(depth)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        validate_spec(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn claim(spec: Value, phase: &str) -> Map<String, Value> {
        json!({"metadata": {"name": "data"}, "spec": spec, "status": {"phase": phase, "capacity": {"storage": "10Gi"}}})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn sound_specs_pass() {
        let spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast-ssd", "volumeMode": "Filesystem",
            "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"},
            "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src"}});
        assert_eq!(judged(spec), Vec::<String>::new());
    }

    #[test]
    fn spec_faults_are_kube_s() {
        let spec = json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "ReadWriteSome"],
            "selector": {"matchLabels": {"tier": "a b"}}, "resources": {"requests": {"storage": "0"}},
            "storageClassName": "Fast", "volumeMode": "Raw",
            "dataSource": {"kind": "Foo", "name": "x"}, "dataSourceRef": {"apiGroup": "Bad_Group", "kind": "Foo", "name": ""}});
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        let value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(
            judged(spec),
            [
                format!("spec.selector.matchLabels: Invalid value: \"a b\": {value}"),
                "spec.accessModes: Unsupported value: \"ReadWriteSome\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"".into(),
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes".into(),
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero".into(),
                format!("spec.storageClassName: Invalid value: \"Fast\": {subdomain}"),
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"".into(),
                "spec.dataSource: Invalid value: \"Foo\": must be 'PersistentVolumeClaim' when referencing the default apiGroup".into(),
                "spec.dataSourceRef.name: Required value".into(),
                format!("spec.dataSourceRef.apiGroup: Invalid value: \"Bad_Group\": {subdomain}"),
                "spec: Invalid value: {}: must match dataSourceRef".into(),
            ]
        );
        assert_eq!(
            judged(json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": null}},
                "dataSource": {"apiGroup": null, "kind": "PersistentVolumeClaim", "name": "a"},
                "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "a"}})),
            ["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"]
        );
        assert_eq!(
            judged(json!({})),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value"
            ]
        );
    }

    #[test]
    fn data_sources_are_kept_dropped_and_copied_as_kube_does() {
        let normalized = |spec: Value| {
            let mut obj = json!({"spec": spec}).as_object().unwrap().clone();
            normalize(&mut obj, None);
            obj["spec"].clone()
        };
        assert_eq!(normalized(json!({"dataSource": {"kind": "Foo", "name": "x"}})), json!({}));
        assert_eq!(
            normalized(
                json!({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}})
            ),
            json!({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"},
                "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}})
        );
        assert_eq!(
            normalized(json!({"dataSourceRef": {"apiGroup": "example.com", "kind": "Backup", "name": "b"}})),
            json!({"dataSourceRef": {"apiGroup": "example.com", "kind": "Backup", "name": "b"},
                "dataSource": {"apiGroup": "example.com", "kind": "Backup", "name": "b"}})
        );
        assert_eq!(
            normalized(json!({"dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "p", "namespace": "other"}})),
            json!({})
        );
    }

    #[test]
    fn bound_claims_grow_and_nothing_else_changes() {
        let spec = |size: &str| {
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
            "volumeMode": "Filesystem", "storageClassName": "standard"})
        };
        let old = claim(spec("10Gi"), "Bound");
        assert_eq!(validate_update(&claim(spec("20Gi"), "Bound"), &old).len(), 0);
        let shrunk: Vec<String> = validate_update(&claim(spec("5Gi"), "Bound"), &old)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(shrunk, ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]);
        let pending = claim(spec("10Gi"), "Pending");
        let grown = validate_update(&claim(spec("20Gi"), "Pending"), &pending);
        assert_eq!(grown.len(), 1);
        assert_eq!(grown[0].field, "spec");
        assert!(
            grown[0].message.starts_with(
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n@@ "
            ),
            "{}",
            grown[0].message
        );
        assert!(
            grown[0].message.contains("\n-   \"storage\": \"10Gi\"\n+   \"storage\": \"20Gi\"\n"),
            "{}",
            grown[0].message
        );
        let changed = grown[0].message.lines().filter(|l| l.starts_with(['-', '+'])).any(|l| l.contains("VolumeName"));
        assert!(!changed, "an unchanged volume name is context only: {}", grown[0].message);
        // The same size written as a number, and a claim stored with one data source.
        let mut numeric = spec("10Gi");
        numeric["resources"]["requests"]["storage"] = json!(10737418240_i64);
        assert_eq!(validate_update(&claim(numeric, "Bound"), &old).len(), 0);
        let mut sourced = spec("10Gi");
        sourced["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "src"});
        let mut mirrored = sourced.clone();
        mirrored["dataSourceRef"] = json!({"kind": "PersistentVolumeClaim", "name": "src"});
        assert_eq!(validate_update(&claim(mirrored, "Bound"), &claim(sourced, "Bound")).len(), 0);
        let mut block = spec("10Gi");
        block["volumeMode"] = json!("Block");
        let causes: Vec<String> = validate_update(&claim(block, "Bound"), &old).into_iter().map(|c| c.field).collect();
        assert_eq!(causes, ["spec", "volumeMode"]);
        // A volume name is set once; a class set where there was none.
        let mut named = spec("10Gi");
        named["volumeName"] = json!("pv-1");
        assert_eq!(validate_update(&claim(named, "Bound"), &old).len(), 0);
        let mut classless = spec("10Gi");
        classless.as_object_mut().unwrap().remove("storageClassName");
        assert_eq!(validate_update(&claim(spec("10Gi"), "Pending"), &claim(classless, "Pending")).len(), 0);
    }
}

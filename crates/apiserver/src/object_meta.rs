//! Object metadata judged as kube-apiserver's `ValidateObjectMeta` (and its update form) judges
//! it, for built-in kinds and custom resources alike:
//! - on create, the name (and `generateName`, its trailing dash masked as kube masks it) by the
//!   rule of its kind ([`NameRule`]): a DNS subdomain for most, a DNS-1035 label for Services,
//!   a DNS-1123 label for Namespaces and StatefulSets, a path segment for RBAC objects,
//!   certificate requests, PodDisruptionBudgets and core Events;
//! - labels (qualified keys, label values), annotations (qualified keys in any case, 256 KiB in
//!   all), owner references (an apiVersion with a version, a kind, a name and a UID, no Event
//!   owner, one controller), finalizers (qualified names, not both `orphan` and
//!   `foregroundDeletion`; for built-in kinds validated as core kinds, a name without a `/` only
//!   if it is a standard one);
//! - a generation that is not negative (kinds without a strategy's generation keep the one
//!   written on create);
//! - on update, no finalizer added to an object being deleted, and the uid, deletion time and
//!   grace period unchanged (after the store filled in what the write left out of them).
//!
//! Invariants: only the object's metadata (and the stored one's) is read; causes come first in
//! kube's answer, in its order, with its paths and messages (labels in key order, as Go's map
//! order is unspecified).

use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::policy_validation::invalid;
use crate::registry::ResourceInfo;
use crate::structural::{Cause, go_json, go_quote};
use crate::workload_validation::invalid_value;

/// How kube judges a kind's names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NameRule {
    /// A DNS-1123 subdomain (253 characters).
    Subdomain,
    /// A DNS-1123 label (63 characters, no dots).
    Label,
    /// A DNS-1035 label (a label that starts with a letter).
    Dns1035,
    /// A DNS-1123 subdomain whose length kube counts in bytes (ReplicationControllers), without
    /// a check of `generateName`.
    LongName,
    /// Only a path segment (not `.` or `..`, no `/` or `%`).
    PathSegment,
    /// A path segment for names and generated names alike (RBAC's rule ignores the prefix).
    RbacPathSegment,
    /// An IP address in canonical form, for names and generated names alike (IPAddresses).
    Ip,
}

/// The name rule of the kind `info` serves.
pub(crate) fn name_rule(info: &ResourceInfo) -> NameRule {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "services") => NameRule::Dns1035,
        ("", "namespaces") | ("apps", "statefulsets") => NameRule::Label,
        ("", "replicationcontrollers") => NameRule::LongName,
        ("", "events") | ("policy", "poddisruptionbudgets") => NameRule::PathSegment,
        _ if info.group == crate::rbac::GROUP => NameRule::RbacPathSegment,
        _ if crate::certificate_signing::is_csrs(info) => NameRule::PathSegment,
        // (The name is its version and group, which `api_service` checks.)
        _ if crate::api_service::is_api_services(info) => NameRule::PathSegment,
        (crate::service_cidr::GROUP, crate::service_cidr::IP_ADDRESSES) => NameRule::Ip,
        _ => NameRule::Subdomain,
    }
}

/// Whether kube validates the kind's metadata with core's `ValidateObjectMeta`, which adds the
/// rule for finalizer names without a `/`.
fn core_finalizer_rule(info: &ResourceInfo) -> bool {
    let exempt = info.custom.is_some()
        || crate::crd::is_crds(info)
        || crate::api_service::is_api_services(info)
        || info.group == crate::admission_policy::GROUP
        || matches!(
            (info.group.as_str(), info.plural.as_str()),
            ("coordination.k8s.io", "leases")
                | ("node.k8s.io", "runtimeclasses")
                | ("policy", "poddisruptionbudgets")
                | ("", "events")
        );
    !exempt
}

/// The finalizers kube knows without a domain.
pub(crate) const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// kube's limit on the total size of an object's annotations.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The causes for the metadata of `obj`, of the kind `info` serves, written over `old` (None on
/// create).
pub(crate) fn validate(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&StoredObject>) -> Vec<Cause> {
    let empty = Map::new();
    let meta = obj.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
    let mut causes = judge(meta, old.is_none().then(|| name_rule(info)), false);
    let finalizers = crate::object::strings(meta.get("finalizers"));
    // (The stored object is read only when it is being deleted: its kept metadata says so.)
    let deleting = old.is_some_and(|o| o.kept.iter().any(|(k, v)| *k == "deletionTimestamp" && !v.is_null()));
    if let Some(old) = old.filter(|_| deleting) {
        let stored = old.value();
        let before = crate::object::strings(stored.get("metadata").and_then(|m| m.get("finalizers")));
        let mut added: Vec<&String> = finalizers.iter().filter(|f| !before.contains(f)).collect();
        added.sort();
        added.dedup();
        if !added.is_empty() {
            let shown: Vec<String> = added.iter().map(|f| go_quote(f)).collect();
            causes.push(crate::pod_validation::forbidden(
                "metadata.finalizers".into(),
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    shown.join(", ")
                ),
            ));
        }
    }
    if let Some(old) = old {
        causes.extend(immutables(meta, old));
    }
    if core_finalizer_rule(info) {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
                causes.push(invalid(
                    format!("metadata.finalizers[{i}]"),
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    causes
}

/// The metadata of a resource embedded in a custom resource (`x-kubernetes-embedded-resource`),
/// as kube judges it: as an object's on create, its names path segments (an empty name stands
/// for one), its namespace, if any, a DNS label; causes under `metadata.` as for an object's own.
pub(crate) fn validate_embedded(meta: &Map<String, Value>) -> Vec<Cause> {
    judge(meta, Some(NameRule::PathSegment), true)
}

/// `meta` as it comes out of kube's ObjectMeta: without nulls, empty strings, lists and maps, and
/// a zero generation (the fields Go leaves out when empty; the deletion grace period, a pointer,
/// keeps a 0).
pub(crate) fn round_trip(meta: &mut Map<String, Value>) {
    meta.retain(|k, v| match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => !(k == "generation" && n.as_i64() == Some(0)),
        Value::Bool(_) => true,
    });
}

/// What kube's `ValidateObjectMeta` judges of `meta` alone: the names by `rule` (on create), the
/// namespace as a DNS label when `namespace` (and one is set), the generation, labels,
/// annotations, owner references and finalizers.
fn judge(meta: &Map<String, Value>, rule: Option<NameRule>, namespace: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    if let Some(rule) = rule {
        let generate = text("generateName");
        if !generate.is_empty() && rule != NameRule::LongName {
            for fault in name_faults(rule, generate, true) {
                causes.push(invalid("metadata.generateName".into(), generate, &fault));
            }
        }
        let name = text("name");
        for fault in name_faults(rule, name, false) {
            causes.push(invalid("metadata.name".into(), name, &fault));
        }
    }
    if let Some(ns) = meta.get("namespace").and_then(Value::as_str).filter(|ns| namespace && !ns.is_empty()) {
        for fault in crate::cel_format::dns1123_label(ns) {
            causes.push(invalid("metadata.namespace".into(), ns, &fault));
        }
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g < 0) {
        causes.push(invalid_value("metadata.generation", &g.to_string(), "must be greater than or equal to 0"));
    }
    labels(meta.get("labels"), "metadata.labels", &mut causes);
    annotations(meta.get("annotations"), "metadata.annotations", &mut causes);
    causes.extend(owner_references(meta));
    let finalizers = crate::object::strings(meta.get("finalizers"));
    for f in &finalizers {
        for fault in crate::cel_format::qualified_name(f) {
            causes.push(invalid("metadata.finalizers".into(), f, &fault));
        }
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    if has("orphan") && has("foregroundDeletion") {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {}: finalizer orphan and foregroundDeletion cannot be both set",
                go_json(&Value::from(finalizers.clone()))
            ),
            field: "metadata.finalizers".into(),
        });
    }
    causes
}

/// kube's immutable metadata on update (after its `BeforeUpdate` filled what the write left
/// out): the uid, the deletion time and grace period.
fn immutables(meta: &Map<String, Value>, old: &StoredObject) -> Vec<Cause> {
    const IMMUTABLE: &str = "field is immutable";
    let mut causes = Vec::new();
    let uid = meta.get("uid").and_then(Value::as_str).unwrap_or("");
    if uid != old.uid {
        causes.push(invalid_value("metadata.uid", &go_json(&Value::from(uid)), IMMUTABLE));
    }
    let kept = |k: &str| old.kept.iter().find(|(f, _)| *f == k).map(|(_, v)| v).filter(|v| !v.is_null());
    let given = |k: &str| meta.get(k).filter(|v| !v.is_null());
    let time = |v: Option<&Value>| crate::validation::go_time(v.and_then(Value::as_str), false);
    let shown = time(given("deletionTimestamp"));
    if shown != time(kept("deletionTimestamp")) {
        causes.push(invalid_value("metadata.deletionTimestamp", &shown, IMMUTABLE));
    }
    let period = |v: Option<&Value>| v.and_then(Value::as_i64);
    let new_period = period(given("deletionGracePeriodSeconds"));
    if new_period != period(kept("deletionGracePeriodSeconds")) {
        let shown = new_period.map_or("null".to_string(), |p| p.to_string());
        causes.push(invalid_value("metadata.deletionGracePeriodSeconds", &shown, IMMUTABLE));
    }
    causes
}

/// kube's `ValidateLabels` of the label map `labels` at `at` (its path names no key): keys that
/// are qualified names, values that are label values, in key order.
pub(crate) fn labels(labels: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    for (k, v) in labels.and_then(Value::as_object).into_iter().flatten() {
        for fault in crate::cel_format::qualified_name(k) {
            causes.push(invalid(at.into(), k, &fault));
        }
        let v = v.as_str().unwrap_or("");
        for fault in crate::cel_format::label_value(v) {
            causes.push(invalid(at.into(), v, &fault));
        }
    }
}

/// kube's `ValidateAnnotations` of the annotations at `at`: qualified keys in any case, 256 KiB
/// in all.
pub(crate) fn annotations(annotations: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(annotations) = annotations.and_then(Value::as_object) else { return };
    let mut total = 0;
    for (k, v) in annotations {
        // The rule is a qualified name in any case.
        for fault in crate::cel_format::qualified_name(&k.to_lowercase()) {
            causes.push(invalid(at.into(), k, &fault));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > ANNOTATIONS_LIMIT {
        causes.push(Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {ANNOTATIONS_LIMIT} bytes"),
            field: at.into(),
        });
    }
}

/// What the name rule `rule` finds wrong with `name` (a `generateName` when `prefix`).
pub(crate) fn name_faults(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    let masked = if prefix { crate::cel_format::mask_trailing_dash(name) } else { name.to_string() };
    match rule {
        NameRule::Subdomain => crate::cel_format::dns1123_subdomain(&masked),
        NameRule::Label => crate::cel_format::dns1123_label(&masked),
        NameRule::Dns1035 => crate::cel_format::dns1035_label(&masked),
        NameRule::Ip => crate::service_cidr::ip_faults(name),
        NameRule::LongName => {
            let mut faults = crate::cel_format::dns1123_subdomain(name);
            if let Some(first) = faults.first_mut()
                && name.len() > 253
            {
                *first = "must be no more than 253 bytes".into();
            }
            faults
        }
        NameRule::PathSegment | NameRule::RbacPathSegment => {
            let whole = !prefix || rule == NameRule::RbacPathSegment;
            match name {
                "." if whole => vec!["may not be '.'".into()],
                ".." if whole => vec!["may not be '..'".into()],
                _ => {
                    ["/", "%"].iter().filter(|c| name.contains(*c)).map(|c| format!("may not contain '{c}'")).collect()
                }
            }
        }
    }
}

/// `metadata.ownerReferences` as kube's object-metadata validation checks them: each names an
/// apiVersion with a version, a kind, a name and a UID, no Event owns anything, and at most one
/// is the controller.
fn owner_references(meta: &Map<String, Value>) -> Vec<Cause> {
    const FIELD: &str = "metadata.ownerReferences";
    let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) else {
        return Vec::new();
    };
    // A reference as Go's json.Marshal renders the struct: its fields in order, empty pointers
    // left out.
    let go_ref = |r: &Value| {
        let mut out = String::from("{");
        for (i, f) in ["apiVersion", "kind", "name", "uid"].into_iter().enumerate() {
            let v = r.get(f).and_then(Value::as_str).unwrap_or_default();
            out.push_str(&format!("{}\"{f}\":{}", if i > 0 { "," } else { "" }, go_json(&Value::from(v))));
        }
        for f in ["controller", "blockOwnerDeletion"] {
            if let Some(b) = r.get(f).and_then(Value::as_bool) {
                out.push_str(&format!(",\"{f}\":{b}"));
            }
        }
        out.push('}');
        out
    };
    let mut causes = Vec::new();
    let mut controller: Option<String> = None;
    for r in refs {
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default();
        let (group, version) = crate::garbage_collector::parse_group_version(text("apiVersion")).unwrap_or(("", ""));
        let invalid = |field: &str, value: &str, detail: &str| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: {detail}", go_quote(value)),
            field: format!("{FIELD}.{field}"),
        };
        if version.is_empty() {
            causes.push(invalid("apiVersion", text("apiVersion"), "version must not be empty"));
        }
        if text("kind").is_empty() {
            causes.push(invalid("kind", "", "must not be empty"));
        }
        if text("name").is_empty() {
            causes.push(invalid("name", "", "must not be empty"));
        }
        if text("uid").is_empty() {
            causes.push(invalid("uid", "", "must not be empty"));
        }
        if (group, version, text("kind")) == ("", "v1", "Event") {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {}: /v1, Kind=Event is disallowed from being an owner", go_ref(r)),
                field: FIELD.into(),
            });
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(go_ref).collect();
                    causes.push(Cause {
                        reason: "FieldValueInvalid",
                        message: format!(
                            "Invalid value: [{}]: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}",
                            all.join(",")
                        ),
                        field: FIELD.into(),
                    });
                }
                None => controller = Some(this),
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        ResourceInfo::new(group, "v1", plural, "Kind", true)
    }

    fn judged(info: &ResourceInfo, meta: Value) -> Vec<String> {
        let obj = json!({"metadata": meta});
        validate(info, obj.as_object().unwrap(), None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn names_follow_their_kind_s_rule() {
        let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        assert_eq!(
            judged(&info("", "services"), json!({"name": "1web"})),
            [format!("metadata.name: Invalid value: \"1web\": {dns1035}")]
        );
        assert_eq!(
            judged(&info("", "namespaces"), json!({"name": "a.b"})),
            ["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        assert_eq!(
            judged(&info("apps", "statefulsets"), json!({"name": "db.1"})),
            ["metadata.name: Invalid value: \"db.1\": must not contain dots"]
        );
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        assert_eq!(
            judged(&info("", "configmaps"), json!({"name": "a..b"})),
            [format!("metadata.name: Invalid value: \"a..b\": {subdomain}")]
        );
        assert_eq!(judged(&info("", "configmaps"), json!({"name": "my.config-1"})), Vec::<String>::new());
        assert_eq!(
            judged(&info("rbac.authorization.k8s.io", "clusterroles"), json!({"name": "system:aggregate-to-view"})),
            Vec::<String>::new()
        );
        assert_eq!(judged(&info("policy", "poddisruptionbudgets"), json!({"name": "Web_PDB"})), Vec::<String>::new());
        assert_eq!(judged(&info("", "events"), json!({"name": "pod.17a3b.Started"})), Vec::<String>::new());
        assert_eq!(name_faults(NameRule::RbacPathSegment, ".", true), ["may not be '.'"]);
        assert_eq!(name_faults(NameRule::PathSegment, ".", true), Vec::<String>::new());
        assert_eq!(name_faults(NameRule::PathSegment, "a/b%", false), ["may not contain '/'", "may not contain '%'"]);
        let long = "a".repeat(254);
        assert_eq!(
            judged(&info("", "replicationcontrollers"), json!({"name": long}))[0],
            format!("metadata.name: Invalid value: \"{long}\": must be no more than 253 bytes")
        );
        // A generated name's prefix loses its last two bytes to an `a` when it ends in a dash.
        assert_eq!(
            judged(&info("", "configmaps"), json!({"name": "web-abcde", "generateName": "web-"})),
            Vec::<String>::new()
        );
        let faults = judged(&info("", "configmaps"), json!({"name": "Web-abcde", "generateName": "Web-"}));
        assert!(
            faults[0].starts_with("metadata.generateName: Invalid value: \"Web-\": a lowercase RFC 1123 subdomain"),
            "{faults:?}"
        );
        assert!(
            faults[1].starts_with("metadata.name: Invalid value: \"Web-abcde\": a lowercase RFC 1123 subdomain"),
            "{faults:?}"
        );
    }

    #[test]
    fn labels_annotations_and_finalizers_are_kube_s() {
        let meta = json!({"name": "c", "labels": {"a b": "x y", "ok": "fine"}, "annotations": {"Example.com/Note": "x", "bad key": ""},
            "finalizers": ["example.com/cleanup", "foo", "a/b/c", "orphan", "foregroundDeletion"]});
        let key = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let three = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        assert_eq!(
            judged(&info("", "configmaps"), meta.clone()),
            [
                format!("metadata.labels: Invalid value: \"a b\": {key}"),
                format!("metadata.labels: Invalid value: \"x y\": {value}"),
                format!("metadata.annotations: Invalid value: \"bad key\": {key}"),
                format!("metadata.finalizers: Invalid value: \"a/b/c\": {three}"),
                "metadata.finalizers: Invalid value: [\"example.com/cleanup\",\"foo\",\"a/b/c\",\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set".into(),
                "metadata.finalizers[1]: Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified".into(),
            ]
        );
        // Leases (as custom resources) have no rule for names without a domain.
        assert!(!judged(&info("coordination.k8s.io", "leases"), meta).iter().any(|f| f.contains("standard finalizer")));
        let big = json!({"name": "c", "annotations": {"a": "x".repeat(ANNOTATIONS_LIMIT)}});
        assert_eq!(
            judged(&info("", "configmaps"), big),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn an_update_keeps_the_uid_and_the_deletion_metadata_and_generations_are_not_negative() {
        let cms = info("", "configmaps");
        let stored = |meta: Value| crate::object::build(&cms, json!({"metadata": meta}).as_object().unwrap(), 5);
        let updated = |old: &StoredObject, meta: Value| -> Vec<String> {
            validate(&cms, json!({"metadata": meta}).as_object().unwrap(), Some(old))
                .into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect()
        };
        let live = stored(json!({"name": "cm", "uid": "u-1"}));
        assert_eq!(updated(&live, json!({"name": "cm", "uid": "u-1"})), Vec::<String>::new());
        assert_eq!(
            updated(
                &live,
                json!({"name": "cm", "uid": "u-2", "deletionTimestamp": "2030-01-01T01:00:00+01:00",
                "deletionGracePeriodSeconds": 5})
            ),
            [
                "metadata.uid: Invalid value: \"u-2\": field is immutable",
                "metadata.deletionTimestamp: Invalid value: \"2030-01-01T00:00:00Z\": field is immutable",
                "metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable",
            ]
        );
        let deleting = stored(json!({"name": "cm", "uid": "u-1", "deletionTimestamp": "2030-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 0}));
        // The same instant written in another zone is the same time.
        let same = json!({"name": "cm", "uid": "u-1", "deletionTimestamp": "2030-01-01T02:00:00+02:00",
            "deletionGracePeriodSeconds": 0});
        assert_eq!(updated(&deleting, same), Vec::<String>::new());
        assert_eq!(
            updated(&deleting, json!({"name": "cm", "uid": "u-1", "deletionTimestamp": "2030-01-01T00:00:00Z"})),
            ["metadata.deletionGracePeriodSeconds: Invalid value: null: field is immutable"]
        );
        assert_eq!(
            judged(&cms, json!({"name": "cm", "generation": -1, "labels": {"a": "b c"}}))[0],
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}

//! The annotations kube gives a meaning on a pod or a pod template, judged as kube-apiserver's
//! `ValidatePodSpecificAnnotations` (and, on a pod's updates,
//! `ValidatePodSpecificAnnotationUpdates`); and a template's own labels and annotations, as
//! `ValidatePodTemplateSpec` judges them before its spec.
//!
//! In kube's order:
//! - the mirror pod annotation needs a node name;
//! - the tolerations annotation holds JSON tolerations (read as Go's decoder reads them into
//!   `[]core.Toleration`: member names in any case, unknown ones ignored, its messages), each
//!   judged as a spec's toleration;
//! - the pod deletion cost is a 32-bit integer written without a sign `+` or a leading zero
//!   (kept when an update finds it already otherwise);
//! - seccomp annotations name a profile (`runtime/default`, `docker/default`, `unconfined`,
//!   `localhost/` and a relative path without `..`);
//! - AppArmor annotations name one of the pod's containers and a profile (`runtime/default`,
//!   `unconfined`, `localhost/…`);
//! - on a pod's update or `/status` write, AppArmor and mirror annotations are neither added,
//!   changed nor removed.
//!
//! Invariants: only the annotations and the container names are read; paths are kube's
//! (`metadata.annotations[key]` where kube names the key, `metadata.annotations.key` where it
//! names a child; a template's at `spec.template.annotations`, without `metadata`); annotations
//! are visited in key order where Go visits a map.

use serde_json::{Map, Value};

use crate::go_json_syntax::Raw;
use crate::pod_validation::forbidden;
use crate::policy_validation::invalid;
use crate::structural::{Cause, go_quote};

/// The annotation that marks a static pod's mirror.
pub(crate) const MIRROR: &str = crate::pod_ephemeral_containers::MIRROR_ANNOTATION;
/// Tolerations written as an annotation, before tolerations were a field.
const TOLERATIONS: &str = "scheduler.alpha.kubernetes.io/tolerations";
/// What deleting the pod costs, read by ReplicaSets scaling down.
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// The pod's seccomp profile, before it was a field.
const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
/// A container's seccomp profile, before it was a field: the prefix of its key.
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
/// A container's AppArmor profile, before it was a field: the prefix of its key.
const APP_ARMOR: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The causes kube finds in a pod's (or template's) `annotations` at `at`, for the pod spec
/// `spec`; `strict_cost` is false when the stored object's deletion cost is already invalid.
pub(crate) fn validate(annotations: &Map<String, Value>, spec: &Value, at: &str, strict_cost: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let text = |k: &str| annotations.get(k).and_then(Value::as_str);
    if let Some(mirror) = text(MIRROR)
        && spec.get("nodeName").and_then(Value::as_str).unwrap_or("").is_empty()
    {
        causes.push(invalid(
            format!("{at}[{MIRROR}]"),
            mirror,
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    if let Some(tolerations) = text(TOLERATIONS).filter(|t| !t.is_empty()) {
        match decode_tolerations(tolerations) {
            Err(message) => causes.push(invalid(at.into(), TOLERATIONS, &message)),
            Ok(list) => {
                for (i, t) in list.iter().enumerate() {
                    crate::pod_spec_fields::toleration(t, &format!("{at}.{TOLERATIONS}[{i}]"), &mut causes);
                }
            }
        }
    }
    if strict_cost && let Some(cost) = text(DELETION_COST).filter(|c| !deletion_cost_valid(c)) {
        causes.push(invalid(format!("{at}[{DELETION_COST}]"), cost, "must be a 32bit integer"));
    }
    // (serde_json's maps iterate in key order.)
    let keys = annotations.keys();
    if let Some(profile) = text(SECCOMP_POD) {
        seccomp_profile(profile, &format!("{at}.{SECCOMP_POD}"), &mut causes);
    }
    for k in keys.clone().filter(|k| k.starts_with(SECCOMP_CONTAINER)) {
        seccomp_profile(text(k).unwrap_or(""), &format!("{at}.{k}"), &mut causes);
    }
    for k in keys.filter(|k| k.starts_with(APP_ARMOR)) {
        let container = &k[APP_ARMOR.len()..];
        let field = format!("{at}[{k}]");
        let named = ["initContainers", "containers", "ephemeralContainers"].iter().any(|list| {
            spec.get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| c.get("name").and_then(Value::as_str) == Some(container))
        });
        if !named {
            causes.push(invalid(field.clone(), container, "container not found"));
        }
        let profile = text(k).unwrap_or("");
        if !matches!(profile, "" | "runtime/default" | "unconfined") && !profile.starts_with("localhost/") {
            causes.push(invalid(field, profile, &format!("invalid AppArmor profile name: {}", go_quote(profile))));
        }
    }
    causes
}

/// The causes of a pod's update (or `/status` write) from `old` to `new` annotations at `at`:
/// AppArmor and mirror annotations that changed. The annotations themselves are judged by
/// [`validate`].
pub(crate) fn updates(new: &Map<String, Value>, old: &Map<String, Value>, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    // (In key order: serde_json's maps iterate so.)
    for k in old.keys().filter(|k| new.get(k.as_str()) != old.get(k.as_str())) {
        if k.starts_with(APP_ARMOR) {
            causes.push(forbidden(format!("{at}[{k}]"), "may not remove or update AppArmor annotations"));
        }
        if k == MIRROR {
            causes.push(forbidden(format!("{at}[{k}]"), "may not remove or update mirror pod annotation"));
        }
    }
    for k in new.keys().filter(|k| !old.contains_key(k.as_str())) {
        if k.starts_with(APP_ARMOR) {
            causes.push(forbidden(format!("{at}[{k}]"), "may not add AppArmor annotations"));
        }
        if k == MIRROR {
            causes.push(forbidden(format!("{at}[{k}]"), "may not add mirror pod annotation"));
        }
    }
    causes
}

/// The annotations of a stored pod that its updates are judged by (AppArmor, mirror, deletion
/// cost); the others may be left out: the stored bytes are parsed only when they name one.
pub(crate) fn stored(old: &crate::object::StoredObject) -> Map<String, Value> {
    if [APP_ARMOR, MIRROR, DELETION_COST].iter().any(|k| old.mentions(k)) { old.annotations() } else { Map::new() }
}

/// Whether a stored object may name a deletion cost (its bytes hold the key): only then can its
/// template's update be lenient.
pub(crate) fn may_name_a_cost(old: &crate::object::StoredObject) -> bool {
    old.mentions(DELETION_COST)
}

/// Whether an update keeps the deletion cost strict: kube lets a pod whose stored cost is
/// already invalid keep any.
pub(crate) fn strict_cost_over(old: &Map<String, Value>) -> bool {
    old.get(DELETION_COST).and_then(Value::as_str).is_none_or(deletion_cost_valid)
}

/// The causes of a pod template at `at` (`spec.template`), its metadata `meta` beside its pod
/// spec `spec`, written over a template whose metadata was `old_meta`: those kube gives before the spec (its labels, its
/// annotations, the pod-specific ones) and those after it (annotations and security fields
/// that disagree; ephemeral containers, which a template may not have).
pub(crate) fn template(
    meta: Option<&Value>,
    spec: &Value,
    at: &str,
    old_meta: Option<&Value>,
) -> (Vec<Cause>, Vec<Cause>) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    crate::object_meta::labels(meta.and_then(|m| m.get("labels")), &format!("{at}.labels"), &mut before);
    let annotations = meta.and_then(|m| m.get("annotations"));
    let annotations_at = format!("{at}.annotations");
    crate::object_meta::annotations(annotations, &annotations_at, &mut before);
    if let Some(annotations) = annotations.and_then(Value::as_object) {
        // As for a pod: a stored template whose cost is already invalid may keep any.
        let old_annotations = old_meta.and_then(|m| m.get("annotations")).and_then(Value::as_object);
        let strict = old_annotations.is_none_or(strict_cost_over);
        before.extend(validate(annotations, spec, &annotations_at, strict));
        after.extend(fields_match(annotations, spec, &format!("{at}.spec")));
    }
    if spec.get("ephemeralContainers").and_then(Value::as_array).is_some_and(|l| !l.is_empty()) {
        after.push(forbidden(
            format!("{at}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    (before, after)
}

/// kube's `validateSeccompAnnotationsAndFields` and `validateAppArmorAnnotationsAndFieldsMatchOnCreate`
/// (a pod's create, a template's every write): where both an annotation and the field it
/// became name a profile, they name the same; `at` is the spec's path.
pub(crate) fn fields_match(annotations: &Map<String, Value>, spec: &Value, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let pod_context = spec.get("securityContext");
    let text = |k: &str| annotations.get(k).and_then(Value::as_str);
    if let (Some(field), Some(annotation)) = (profile_of(pod_context, "seccompProfile"), text(SECCOMP_POD)) {
        causes.extend(profile_match("seccomp", annotation, field, &format!("{at}.securityContext.seccompProfile")));
    }
    let containers = ["initContainers", "containers", "ephemeralContainers"].into_iter().flat_map(|list| {
        spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate().map(move |(i, c)| (list, i, c))
    });
    let containers: Vec<(&str, usize, &Value)> = containers.collect();
    for &(list, i, c) in &containers {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let field = profile_of(c.get("securityContext"), "seccompProfile");
        if let (Some(field), Some(annotation)) = (field, text(&format!("{SECCOMP_CONTAINER}{name}"))) {
            let path = format!("{at}.{list}[{i}].securityContext.seccompProfile");
            causes.extend(profile_match("seccomp", annotation, field, &path));
        }
    }
    if spec.pointer("/os/name").and_then(Value::as_str) == Some("windows") {
        return causes;
    }
    for &(list, i, c) in &containers {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        // A container without its own profile has the pod's.
        let field =
            profile_of(c.get("securityContext"), "appArmorProfile").or(profile_of(pod_context, "appArmorProfile"));
        if let (Some(field), Some(annotation)) = (field, text(&format!("{APP_ARMOR}{name}"))) {
            let path = format!("{at}.{list}[{i}].securityContext.appArmorProfile");
            causes.extend(profile_match("apparmor", annotation, field, &path));
        }
    }
    causes
}

/// The profile `key` of a security context, when it names one.
fn profile_of<'a>(context: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    context.and_then(|c| c.get(key)).filter(|p| p.is_object())
}

/// Whether an annotation's profile is the field's (`Unconfined`, `RuntimeDefault`, `Localhost`
/// and its profile); the cause of a mismatch at `at`, the field's path.
fn profile_match(what: &str, annotation: &str, field: &Value, at: &str) -> Option<Cause> {
    let type_mismatch = || forbidden(format!("{at}.type"), &format!("{what} type in annotation and field must match"));
    match field.get("type").and_then(Value::as_str).unwrap_or("") {
        "Unconfined" => (annotation != "unconfined").then(type_mismatch),
        "RuntimeDefault" => {
            let docker = what == "seccomp" && annotation == "docker/default";
            (annotation != "runtime/default" && !docker).then(type_mismatch)
        }
        "Localhost" => match annotation.strip_prefix("localhost/") {
            None => Some(type_mismatch()),
            Some(profile) => (field.get("localhostProfile").and_then(Value::as_str) != Some(profile)).then(|| {
                forbidden(
                    format!("{at}.localhostProfile"),
                    &format!("{what} profile in annotation and field must match"),
                )
            }),
        },
        _ => None,
    }
}

/// kube's `applyAppArmorVersionSkew` on a pod's create: a container with an AppArmor annotation
/// and no profile of its own gets the profile the annotation names, unless it is the pod's; a
/// warning says the annotation is deprecated when its profile was copied or cannot be.
pub(crate) fn app_armor_version_skew(pod: &mut Map<String, Value>) {
    if !of(pod).keys().any(|k| k.starts_with(APP_ARMOR)) {
        return;
    }
    let annotations = of(pod).clone();
    let Some(Value::Object(spec)) = pod.get_mut("spec") else { return };
    if spec.get("os").and_then(|os| os.get("name")).and_then(Value::as_str) == Some("windows") {
        return;
    }
    let pod_profile = spec.get("securityContext").and_then(|c| c.get("appArmorProfile")).cloned();
    // Compared as Go compares the decoded profiles: members that are null are unset.
    let same_profile = |a: &Value, b: &Value| {
        let member = |v: &Value, k: &str| v.get(k).filter(|m| !m.is_null()).cloned();
        member(a, "type") == member(b, "type") && member(a, "localhostProfile") == member(b, "localhostProfile")
    };
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else { continue };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let key = format!("{APP_ARMOR}{}", c.get("name").and_then(Value::as_str).unwrap_or(""));
            let Some(annotation) = annotations.get(&key).and_then(Value::as_str) else { continue };
            let own = c.get("securityContext").and_then(|s| s.get("appArmorProfile")).filter(|p| !p.is_null());
            if own.is_some() {
                continue;
            }
            let derived = match annotation {
                "unconfined" => Some(serde_json::json!({"type": "Unconfined"})),
                "runtime/default" => Some(serde_json::json!({"type": "RuntimeDefault"})),
                // A profile kube's field validation refuses is not copied.
                a => a
                    .strip_prefix("localhost/")
                    .filter(|p| !p.is_empty() && p.trim() == *p && p.len() <= 4095)
                    .map(|p| serde_json::json!({"type": "Localhost", "localhostProfile": p})),
            };
            let mut warn = derived.is_none();
            if let Some(derived) = derived.filter(|d| !pod_profile.as_ref().is_some_and(|p| same_profile(p, d))) {
                let context = c.entry("securityContext").or_insert_with(|| Value::Object(Map::new()));
                if !context.is_object() {
                    *context = Value::Object(Map::new());
                }
                context.as_object_mut().expect("an object").insert("appArmorProfile".into(), derived);
                warn = true;
            }
            if warn {
                crate::warning::record(format!(
                    "metadata.annotations[{key}]: deprecated since v1.30; use the \"appArmorProfile\" field instead"
                ));
            }
        }
    }
}

/// The annotations of an object's metadata (empty when it has none).
pub(crate) fn of(obj: &Map<String, Value>) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    obj.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// kube's `GetDeletionCostFromPodAnnotations`: a first byte `-`, `1`–`9`, or the whole text
/// `0`, and a base-10 32-bit integer.
fn deletion_cost_valid(cost: &str) -> bool {
    let first = cost.as_bytes().first().copied();
    let first_ok = matches!(first, Some(b'-' | b'1'..=b'9')) || cost == "0";
    first_ok && cost.parse::<i32>().is_ok()
}

/// kube's `ValidateSeccompProfile` of an annotation's profile at `at`.
fn seccomp_profile(profile: &str, at: &str, causes: &mut Vec<Cause>) {
    if matches!(profile, "runtime/default" | "docker/default" | "unconfined") {
        return;
    }
    let Some(path) = profile.strip_prefix("localhost/") else {
        causes.push(invalid(at.into(), profile, "must be a valid seccomp profile"));
        return;
    };
    if path.starts_with('/') {
        causes.push(invalid(at.into(), path, "must be a relative path"));
    }
    if path.split('/').any(|part| part == "..") {
        causes.push(invalid(at.into(), path, "must not contain '..'"));
    }
}

/// The tolerations annotation read as Go's `json.Unmarshal` reads it into `[]core.Toleration`:
/// each toleration in its JSON form, or the decoder's message.
fn decode_tolerations(text: &str) -> Result<Vec<Value>, String> {
    // A list of objects of scalars: deeper values matter only by their kind.
    let Some(raw) = crate::go_json_syntax::parse(text, 2) else {
        return Err(crate::go_json_syntax::syntax_error(text.as_bytes()).unwrap_or_default());
    };
    let mut first_error: Option<String> = None;
    let mut save = |e: String| {
        first_error.get_or_insert(e);
    };
    let items = match raw {
        Raw::Null => Vec::new(),
        Raw::Array(items) => items,
        other => {
            return Err(format!("json: cannot unmarshal {} into Go value of type []core.Toleration", other.kind()));
        }
    };
    let mut tolerations = Vec::with_capacity(items.len());
    for item in items {
        let mut toleration = Map::new();
        match item {
            Raw::Null => {}
            Raw::Object(members) => {
                for (name, value) in members {
                    // Go matches a member to a field by its name in any case.
                    let Some((json, field, go_type)) =
                        TOLERATION_FIELDS.iter().find(|(j, _, _)| go_fold_equal(j, &name))
                    else {
                        continue;
                    };
                    let mismatch = |shown: &str| {
                        format!(
                            "json: cannot unmarshal {shown} into Go struct field Toleration.{field} of type {go_type}"
                        )
                    };
                    match (value, *go_type) {
                        (Raw::Null, _) => {}
                        (Raw::Number(n), "int64") => match n.parse::<i64>() {
                            Ok(seconds) => {
                                toleration.insert((*json).into(), seconds.into());
                            }
                            Err(_) => save(mismatch(&format!("number {n}"))),
                        },
                        (Raw::String(s), go_type) if go_type != "int64" => {
                            toleration.insert((*json).into(), s.into());
                        }
                        (other, _) => save(mismatch(other.kind())),
                    }
                }
            }
            other => save(format!("json: cannot unmarshal {} into Go value of type core.Toleration", other.kind())),
        }
        tolerations.push(Value::Object(toleration));
    }
    first_error.map_or(Ok(tolerations), Err)
}

/// Whether a field's JSON name matches a member's name as Go's decoder matches them
/// (`bytes.EqualFold`): in any case, the long s and the Kelvin sign being `s` and `k`.
fn go_fold_equal(field: &str, member: &str) -> bool {
    let fold = |c: char| match c {
        '\u{17f}' => 's',
        '\u{212a}' => 'k',
        c => c.to_ascii_lowercase(),
    };
    field.chars().map(fold).eq(member.chars().map(fold))
}

/// A toleration's fields: JSON name, Go field name, Go type.
const TOLERATION_FIELDS: &[(&str, &str, &str)] = &[
    ("key", "Key", "string"),
    ("operator", "Operator", "core.TolerationOperator"),
    ("value", "Value", "string"),
    ("effect", "Effect", "core.TaintEffect"),
    ("tolerationSeconds", "TolerationSeconds", "int64"),
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn judged(annotations: Value, spec: Value) -> Vec<String> {
        messages(validate(annotations.as_object().unwrap(), &spec, "metadata.annotations", true))
    }

    #[test]
    fn each_rule_gives_kubes_cause() {
        let spec = json!({"containers": [{"name": "app"}], "initContainers": [{"name": "init"}]});
        let annotations = json!({
            MIRROR: "x",
            TOLERATIONS: r#"[{"KEY": "bad key", "operator": "Equal", "value": "ok"}, {"operator": "Exists", "Effect": "Never"}]"#,
            DELETION_COST: "+5",
            SECCOMP_POD: "default",
            "container.seccomp.security.alpha.kubernetes.io/app": "localhost//etc/../x",
            "container.apparmor.security.beta.kubernetes.io/init": "localhost/p",
            "container.apparmor.security.beta.kubernetes.io/web": "enforce",
        });
        let key_fault = crate::cel_format::qualified_name("bad key").join("");
        assert_eq!(
            judged(annotations, spec),
            [
                "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set".to_string(),
                format!("metadata.annotations.scheduler.alpha.kubernetes.io/tolerations[0].key: Invalid value: \"bad key\": {key_fault}"),
                "metadata.annotations.scheduler.alpha.kubernetes.io/tolerations[1].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into(),
                "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+5\": must be a 32bit integer".into(),
                "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"default\": must be a valid seccomp profile".into(),
                "metadata.annotations.container.seccomp.security.alpha.kubernetes.io/app: Invalid value: \"/etc/../x\": must be a relative path".into(),
                "metadata.annotations.container.seccomp.security.alpha.kubernetes.io/app: Invalid value: \"/etc/../x\": must not contain '..'".into(),
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Invalid value: \"web\": container not found".into(),
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Invalid value: \"enforce\": invalid AppArmor profile name: \"enforce\"".into(),
            ]
        );
    }

    #[test]
    fn valid_annotations_pass() {
        let spec = json!({"nodeName": "n", "containers": [{"name": "app"}]});
        let annotations = json!({
            MIRROR: "x", TOLERATIONS: "null", DELETION_COST: "-007",
            SECCOMP_POD: "localhost/", "container.seccomp.security.alpha.kubernetes.io/app": "docker/default",
            "container.apparmor.security.beta.kubernetes.io/app": "",
        });
        assert_eq!(judged(annotations, spec), Vec::<String>::new());
        for cost in ["0", "-5", "2147483647", "-2147483648"] {
            assert!(deletion_cost_valid(cost), "{cost}");
        }
        for cost in ["", "007", "+5", " 5", "5 ", "0x10", "-", "2147483648", "1_000"] {
            assert!(!deletion_cost_valid(cost), "{cost}");
        }
    }

    #[test]
    fn tolerations_are_decoded_as_go_decodes_them() {
        let decoded = |t: &str| decode_tolerations(t);
        assert_eq!(decoded("garbage"), Err("invalid character 'g' looking for beginning of value".into()));
        assert_eq!(decoded("{}"), Err("json: cannot unmarshal object into Go value of type []core.Toleration".into()));
        assert_eq!(
            decoded(r#"["a"]"#),
            Err("json: cannot unmarshal string into Go value of type core.Toleration".into())
        );
        assert_eq!(
            decoded(r#"[{"key": 1, "effect": true}]"#),
            Err("json: cannot unmarshal number into Go struct field Toleration.Key of type string".into())
        );
        assert_eq!(
            decoded(r#"[{"tolerationSeconds": 1.5}]"#),
            Err("json: cannot unmarshal number 1.5 into Go struct field Toleration.TolerationSeconds of type int64"
                .into())
        );
        assert_eq!(
            decoded(r#"[{"Operator": "Exists", "TOLERATIONSECONDS": 30, "other": [1], "\u212aey": "k"}, null]"#),
            Ok(vec![json!({"operator": "Exists", "tolerationSeconds": 30, "key": "k"}), json!({})])
        );
        let annotations = json!({TOLERATIONS: "[1"});
        assert_eq!(
            judged(annotations, json!({})),
            [
                "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/tolerations\": unexpected end of JSON input"
            ]
        );
    }

    #[test]
    fn updates_keep_mirror_and_app_armor_annotations() {
        let old = json!({MIRROR: "x", "container.apparmor.security.beta.kubernetes.io/a": "unconfined", "team": "a"});
        let new = json!({"container.apparmor.security.beta.kubernetes.io/a": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/b": "unconfined", "team": "b"});
        assert_eq!(
            messages(updates(new.as_object().unwrap(), old.as_object().unwrap(), "metadata.annotations")),
            [
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/a]: Forbidden: may not remove or update AppArmor annotations",
                "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation",
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/b]: Forbidden: may not add AppArmor annotations",
            ]
        );
        assert!(!strict_cost_over(json!({DELETION_COST: "x"}).as_object().unwrap()));
        assert!(strict_cost_over(json!({DELETION_COST: "5"}).as_object().unwrap()));
    }

    #[test]
    fn a_template_s_metadata_is_judged_at_its_path() {
        let template = json!({"metadata": {"labels": {"app": "web app"}, "annotations": {DELETION_COST: "x"}},
            "spec": {"containers": [{"name": "c"}]}});
        let label_fault = crate::cel_format::label_value("web app").join("");
        assert_eq!(
            messages(template_causes(&template)),
            [
                format!("spec.template.labels: Invalid value: \"web app\": {label_fault}"),
                "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"x\": must be a 32bit integer".into(),
            ]
        );
    }

    fn template_causes(t: &Value) -> Vec<Cause> {
        let (mut before, after) = template(t.get("metadata"), &t["spec"], "spec.template", None);
        before.extend(after);
        before
    }

    #[test]
    fn profiles_in_annotations_and_fields_agree() {
        let annotations = json!({SECCOMP_POD: "runtime/default", "container.seccomp.security.alpha.kubernetes.io/a": "docker/default",
            "container.apparmor.security.beta.kubernetes.io/a": "localhost/p", "container.apparmor.security.beta.kubernetes.io/b": "unconfined"});
        let spec = json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {"name": "a", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"},
                    "appArmorProfile": {"type": "Localhost", "localhostProfile": "q"}}},
                {"name": "b"}]});
        assert_eq!(
            messages(fields_match(annotations.as_object().unwrap(), &spec, "spec")),
            [
                "spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match",
                "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match",
                "spec.containers[1].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match",
            ]
        );
    }

    #[tokio::test]
    async fn app_armor_annotations_become_fields_on_create() {
        let mut pod = json!({"metadata": {"annotations": {
                "container.apparmor.security.beta.kubernetes.io/a": "localhost/p",
                "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
                "container.apparmor.security.beta.kubernetes.io/c": "enforce",
                "container.apparmor.security.beta.kubernetes.io/d": "unconfined"}},
            "spec": {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}, "containers": [
                {"name": "a"}, {"name": "b"}, {"name": "c"},
                {"name": "d", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}}}]}});
        let ((), warnings) =
            crate::warning::collect(async { app_armor_version_skew(pod.as_object_mut().unwrap()) }).await;
        let containers = &pod["spec"]["containers"];
        assert_eq!(
            containers[0]["securityContext"]["appArmorProfile"],
            json!({"type": "Localhost", "localhostProfile": "p"})
        );
        // The pod's own profile is not copied; a profile that is not one is not either.
        assert_eq!(containers[1].get("securityContext"), None);
        assert_eq!(containers[2].get("securityContext"), None);
        assert_eq!(containers[3]["securityContext"]["appArmorProfile"]["localhostProfile"], "x");
        let deprecated = |c: &str| {
            format!(
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/{c}]: deprecated since v1.30; use the \"appArmorProfile\" field instead"
            )
        };
        assert_eq!(warnings, [deprecated("a"), deprecated("c")]);
    }
}

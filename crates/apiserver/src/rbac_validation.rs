//! kube-apiserver's validation of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (its
//! `rbac/validation`): every rule has verbs; a resource rule has API groups and resources, a
//! non-resource rule only URLs, and only in a ClusterRole; an `aggregationRule` has selectors; a
//! binding refers to a Role or ClusterRole (a ClusterRoleBinding only to a ClusterRole) of the
//! RBAC group, by a name that is a path segment; its subjects are Users and Groups of the RBAC
//! group or ServiceAccounts (of no group, with a namespace in a ClusterRoleBinding); and a
//! binding's `roleRef` never changes.
//!
//! Invariants: the causes are kube's, in kube's order and words, values shown as kube v1.35
//! shows them (JSON: `roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io",
//! "Kind":"Role","Name":"x"}: cannot change roleRef`); objects of other resources give none.

use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::policy_validation::{invalid, required, unsupported};
use crate::rbac::GROUP;
use crate::registry::ResourceInfo;
use crate::structural::{Cause, go_quote};

/// The causes for which kube refuses `obj` (written over `old`).
pub(crate) fn validate(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&StoredObject>) -> Vec<Cause> {
    if info.group != GROUP {
        return Vec::new();
    }
    match info.plural.as_str() {
        "roles" => rules(obj, true),
        "clusterroles" => {
            let mut causes = rules(obj, false);
            let aggregation = obj.get("aggregationRule").filter(|a| !a.is_null());
            let selectors = aggregation.and_then(|a| a.get("clusterRoleSelectors")).and_then(Value::as_array);
            if aggregation.is_some() && selectors.is_none_or(|l| l.is_empty()) {
                causes.push(required("aggregationRule.clusterRoleSelectors".into(), ""));
            }
            causes
        }
        "rolebindings" => binding(obj, old, true),
        "clusterrolebindings" => binding(obj, old, false),
        _ => Vec::new(),
    }
}

/// A list as kube's field errors show it (JSON).
fn json_strings(l: &[String]) -> String {
    serde_json::to_string(l).unwrap_or_default()
}

fn rules(obj: &Map<String, Value>, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, rule) in obj.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = |f: &str| format!("rules[{i}].{f}");
        let list = |k: &str| crate::object::strings(rule.get(k));
        if list("verbs").is_empty() {
            causes.push(required(at("verbs"), "verbs must contain at least one value"));
        }
        let urls = list("nonResourceURLs");
        if !urls.is_empty() {
            let with = |detail: &str| Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {}: {detail}", json_strings(&urls)),
                field: at("nonResourceURLs"),
            };
            if namespaced {
                causes.push(with("namespaced rules cannot apply to non-resource URLs"));
            }
            if !list("apiGroups").is_empty() || !list("resources").is_empty() || !list("resourceNames").is_empty() {
                causes.push(with("rules cannot apply to both regular resources and non-resource URLs"));
            }
            continue;
        }
        if list("apiGroups").is_empty() {
            causes.push(required(at("apiGroups"), "resource rules must supply at least one api group"));
        }
        if list("resources").is_empty() {
            causes.push(required(at("resources"), "resource rules must supply at least one resource"));
        }
    }
    causes
}

fn text<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn binding(obj: &Map<String, Value>, old: Option<&StoredObject>, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
    if text(&role_ref, "apiGroup") != GROUP {
        causes.push(unsupported("roleRef.apiGroup".into(), text(&role_ref, "apiGroup"), &[GROUP]));
    }
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&text(&role_ref, "kind")) {
        causes.push(unsupported("roleRef.kind".into(), text(&role_ref, "kind"), kinds));
    }
    let name = text(&role_ref, "name");
    if name.is_empty() {
        causes.push(required("roleRef.name".into(), ""));
    } else if let Some(problem) = crate::rbac::name_problem(name) {
        causes.push(invalid("roleRef.name".into(), name, problem));
    }
    for (i, subject) in obj.get("subjects").and_then(Value::as_array).into_iter().flatten().enumerate() {
        subject_causes(subject, namespaced, i, &mut causes);
    }
    if let Some(old) = old {
        let before = old.value().get("roleRef").cloned().unwrap_or(Value::Null);
        let same = ["apiGroup", "kind", "name"].iter().all(|k| text(&before, k) == text(&role_ref, k));
        if !same {
            // kube shows its internal RoleRef as JSON, its fields' Go names as keys.
            let shown = format!(
                "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
                go_quote(text(&role_ref, "apiGroup")),
                go_quote(text(&role_ref, "kind")),
                go_quote(name)
            );
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {shown}: cannot change roleRef"),
                field: "roleRef".into(),
            });
        }
    }
    causes
}

fn subject_causes(subject: &Value, namespaced: bool, i: usize, causes: &mut Vec<Cause>) {
    let at = |f: &str| format!("subjects[{i}].{f}");
    let name = text(subject, "name");
    if name.is_empty() {
        causes.push(required(at("name"), ""));
    }
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in crate::cel_format::dns1123_subdomain(name) {
                    causes.push(invalid(at("name"), name, &msg));
                }
            }
            if !text(subject, "apiGroup").is_empty() {
                causes.push(unsupported(at("apiGroup"), text(subject, "apiGroup"), &[""]));
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                causes.push(required(at("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if text(subject, "apiGroup") != GROUP {
                causes.push(unsupported(at("apiGroup"), text(subject, "apiGroup"), &[GROUP]));
            }
        }
        other => causes.push(unsupported(at("kind"), other, &["ServiceAccount", "User", "Group"])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(plural: &str, kind: &str, namespaced: bool) -> ResourceInfo {
        ResourceInfo::new(GROUP, "v1", plural, kind, namespaced)
    }

    fn messages(info: &ResourceInfo, obj: Value) -> Vec<String> {
        let Value::Object(obj) = obj else { unreachable!() };
        validate(info, &obj, None).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn rules_and_bindings_are_checked_as_kube_checks_them() {
        let role = info("roles", "Role", true);
        let found = messages(
            &role,
            json!({"rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}, {"apiGroups": [""], "resources": ["a", "b"], "resourceNames": ["n"]}]}),
        );
        assert_eq!(
            found,
            [
                "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: namespaced rules cannot apply to non-resource URLs",
                "rules[1].verbs: Required value: verbs must contain at least one value",
            ]
        );
        let crb = info("clusterrolebindings", "ClusterRoleBinding", false);
        let found = messages(
            &crb,
            json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
                   "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "User", "name": "u"}, {"kind": "Robot", "name": "r"}]}),
        );
        assert_eq!(
            found,
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
                "subjects[1].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
                "subjects[2].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
    }
}

//! What a Role, ClusterRole, RoleBinding or ClusterRoleBinding written may grant, as
//! kube-apiserver's RBAC registry checks it (its policy-based storages): no user can give
//! permissions it does not hold. A role may be written by a member of `system:masters`, by a user
//! allowed to `escalate` roles, or by one holding every permission the role grants (in the role's
//! namespace; cluster-wide for a ClusterRole), and only a user holding every permission may set
//! an `aggregationRule`. A binding may be written by a member of `system:masters`, by a user
//! allowed to `bind` the role it refers to, or by one holding every permission of that role.
//!
//! Invariants: the check runs after mutating admission and before validation, on the object as
//! it would be stored; an update that changes only what the garbage collector changes
//! (`ownerReferences`, `finalizers`) is not checked; a refusal is kube's 403 naming the object,
//! with the missing permissions compacted and sorted as kube lists them; a binding to a role
//! that does not exist is kube's 404 for the role.

use serde_json::{Map, Value, json};

use crate::authorizer::AuthorizationMode;
use crate::cache::WatchCache;
use crate::object::StoredObject;
use crate::rbac::{GROUP, PolicyRule, User};
use crate::registry::ResourceInfo;
use crate::request_info::RequestInfo;
use crate::status::ApiError;

/// Refuses the write of `obj` (over `old` for an update; `named` when the request's URL names
/// it) to one of the RBAC resources when the requesting user could grant with it permissions it
/// does not hold.
pub(crate) fn check(
    cache: &WatchCache,
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&StoredObject>,
    named: bool,
) -> Result<(), ApiError> {
    let kind = info.plural.as_str();
    if info.group != GROUP || !matches!(kind, "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings") {
        return Ok(());
    }
    let mode = cache.authorization();
    let user = User::of(&crate::requester::user_info());
    if user.in_group(crate::authorizer::PRIVILEGED_GROUP) || mode == AuthorizationMode::AlwaysAllow {
        return Ok(());
    }
    if let Some(old) = old
        && only_collector_fields(obj, &old.value())
    {
        return Ok(());
    }
    let meta = |k: &str| obj.get("metadata").and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("").to_string();
    let (name, ns) = (meta("name"), if info.namespaced { meta("namespace") } else { String::new() });
    let refuse = |why: &str| ApiError::forbidden(GROUP, kind, &name, why);
    let allowed = |verb: &str, resource: &str, target: &str| {
        let r = RequestInfo {
            resource_request: true,
            verb: verb.into(),
            group: GROUP.into(),
            version: "*".into(),
            resource: resource.into(),
            name: target.into(),
            namespace: ns.clone(),
            ..Default::default()
        };
        crate::authorizer::authorize(cache, mode, &user, &r).allowed
    };
    let whole = Value::Object(obj.clone());
    if matches!(kind, "roles" | "clusterroles") {
        // kube asks with the request's name: none on a POST, the URL's on an apply or update.
        if allowed("escalate", kind, if named { &name } else { "" }) {
            return Ok(());
        }
        confirm(cache, &user, &ns, &PolicyRule::all_of(&whole)).map_err(|m| refuse(&m))?;
        // Aggregating gathers anything: setting or removing it takes every permission.
        let aggregates = |role: &Value| {
            role.get("aggregationRule")
                .and_then(|a| a.get("clusterRoleSelectors"))
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
        };
        if kind == "clusterroles" && (aggregates(&whole) || old.is_some_and(|o| aggregates(&o.value()))) {
            let all = [
                PolicyRule::of(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})),
                PolicyRule::of(&json!({"verbs": ["*"], "nonResourceURLs": ["*"]})),
            ];
            confirm(cache, &user, &ns, &all)
                .map_err(|_| refuse("must have cluster-admin privileges to use the aggregationRule"))?;
        }
        return Ok(());
    }
    let role_ref = whole.get("roleRef").cloned().unwrap_or(Value::Null);
    let ref_text = |k: &str| role_ref.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let bound = match ref_text("kind").as_str() {
        "ClusterRole" => allowed("bind", "clusterroles", &ref_text("name")),
        "Role" => allowed("bind", "roles", &ref_text("name")),
        _ => false,
    };
    if bound {
        return Ok(());
    }
    let rules = crate::rbac::role_rules(cache, &role_ref, &ns).map_err(|e| e.to_api_error())?;
    confirm(cache, &user, &ns, &rules).map_err(|m| refuse(&m))
}

/// kube's `ConfirmNoEscalation`: whether `user` holds every permission of `rules` in `ns`.
fn confirm(cache: &WatchCache, user: &User, ns: &str, rules: &[PolicyRule]) -> Result<(), String> {
    let (owned, errors) = crate::rbac::rules_for(cache, user, ns);
    let missing = crate::rbac::covers(&owned, rules);
    if missing.is_empty() { Ok(()) } else { Err(crate::rbac::escalation_message(user, missing, &errors)) }
}

/// Whether `new` differs from `old` only in what the garbage collector writes (kube's
/// `IsOnlyMutatingGCFields`), the server's bookkeeping aside.
fn only_collector_fields(new: &Map<String, Value>, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("kind");
            o.remove("apiVersion");
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                for k in ["ownerReferences", "finalizers", "managedFields", "resourceVersion", "generation"] {
                    m.remove(k);
                }
            }
        }
        v
    };
    strip(&Value::Object(new.clone())) == strip(old)
}

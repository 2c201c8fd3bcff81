//! Role-based access control as kube-apiserver's RBAC authorizer decides it: the rules a user
//! holds in a namespace are those of every ClusterRoleBinding and (in that namespace) every
//! RoleBinding naming the user, one of its groups or its service account, through the Role or
//! ClusterRole the binding refers to; a request is allowed when one rule matches its verb, API
//! group, resource (`*`, `resource/subresource`, `*/subresource`), name and non-resource path
//! (`*` suffixes), as kube's `RuleAllows`. Also the comparisons kube makes when a role or binding
//! is written: whether one set of rules covers another (`Covers`, down to one verb, group,
//! resource and name at a time) and the rules that are missing, compacted and worded as kube
//! words them.
//!
//! Invariants: rules and bindings are read from the watch cache, as kube's authorizer reads its
//! informers; a binding whose role cannot be found adds no rule and its error (the lister's
//! words, `clusterrole.rbac.authorization.k8s.io "x" not found`) becomes the denial's reason
//! only when no rule allows the request; the first binding that allows names the reason of an
//! allowed decision (`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"`).

use serde_json::{Value, json};

use crate::cache::WatchCache;
use crate::request_info::RequestInfo;
use crate::selector::Selectors;
use crate::structural::go_quote;

/// The RBAC API group.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// What is wrong with the name of a Role, ClusterRole or binding (kube's `ValidateRBACName`:
/// any path segment, such as `system:controller:x`).
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    match name {
        "." => Some("may not be '.'"),
        ".." => Some("may not be '..'"),
        _ if name.contains('/') => Some("may not contain '/'"),
        _ if name.contains('%') => Some("may not contain '%'"),
        _ => None,
    }
}

/// Who a request is made by, as RBAC reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct User {
    /// The user's name.
    pub name: String,
    /// The user's groups.
    pub groups: Vec<String>,
}

impl User {
    /// The user of a `userInfo` value (`username`, `groups`).
    pub fn of(user_info: &Value) -> User {
        User {
            name: user_info.get("username").and_then(Value::as_str).unwrap_or("").to_string(),
            groups: crate::object::strings(user_info.get("groups")),
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyRule {
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `resourceNames`.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Vec<String>,
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

impl PolicyRule {
    /// The rule of a `rules[]` entry.
    pub fn of(v: &Value) -> PolicyRule {
        PolicyRule {
            verbs: crate::object::strings(v.get("verbs")),
            api_groups: crate::object::strings(v.get("apiGroups")),
            resources: crate::object::strings(v.get("resources")),
            resource_names: crate::object::strings(v.get("resourceNames")),
            non_resource_urls: crate::object::strings(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a role object.
    pub fn all_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules").and_then(Value::as_array).map(|l| l.iter().map(PolicyRule::of).collect()).unwrap_or_default()
    }

    /// The rule as a `rules[]` entry (empty lists left out, as kube serializes them).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        for (k, l) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !l.is_empty() {
                m.insert(k.into(), json!(l));
            }
        }
        Value::Object(m)
    }

    /// Whether the rule allows the request (kube's `RuleAllows`).
    pub fn allows(&self, r: &RequestInfo) -> bool {
        let verb = self.verbs.iter().any(|v| v == "*" || *v == r.verb);
        if !r.resource_request {
            let path = &r.path;
            return verb
                && self
                    .non_resource_urls
                    .iter()
                    .any(|u| u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*'))));
        }
        let combined =
            if r.subresource.is_empty() { r.resource.clone() } else { format!("{}/{}", r.resource, r.subresource) };
        let group = self.api_groups.iter().any(|g| g == "*" || *g == r.group);
        let resource = self.resources.iter().any(|res| {
            res == "*"
                || *res == combined
                || (!r.subresource.is_empty()
                    && res.len() == r.subresource.len() + 2
                    && res.starts_with("*/")
                    && res.ends_with(r.subresource.as_str()))
        });
        let name = self.resource_names.is_empty() || has(&self.resource_names, &r.name);
        verb && group && resource && name
    }

    /// kube's compact form of a rule in escalation messages
    /// (`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`).
    pub fn compact_string(&self) -> String {
        let list = |l: &[String]| format!("[{}]", l.iter().map(|s| go_quote(s)).collect::<Vec<_>>().join(" "));
        let mut parts = Vec::new();
        for (label, l) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !l.is_empty() {
                parts.push(format!("{label}:{}", list(l)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// A decision of the RBAC authorizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Whether a rule allows the request.
    pub allowed: bool,
    /// Why: the binding that allowed it, or the errors met when nothing did ("" when none).
    pub reason: String,
}

/// Decides a request by `user` as kube's RBAC authorizer does.
pub(crate) fn authorize(cache: &WatchCache, user: &User, r: &RequestInfo) -> Decision {
    let mut errors = Vec::new();
    let mut allowed_by = None;
    visit_rules_for(cache, user, &r.namespace, &mut |source, rule, error| {
        if let Some(rule) = rule
            && rule.allows(r)
        {
            allowed_by = Some(source());
            return false;
        }
        if let Some(e) = error {
            errors.push(e);
        }
        true
    });
    match allowed_by {
        Some(by) => Decision { allowed: true, reason: format!("RBAC: allowed by {by}") },
        None if errors.is_empty() => Decision { allowed: false, reason: String::new() },
        None => Decision { allowed: false, reason: format!("RBAC: {}", aggregate(&errors)) },
    }
}

/// The rules `user` holds in `namespace` ("": cluster-wide only), and the errors met finding
/// them.
pub(crate) fn rules_for(cache: &WatchCache, user: &User, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules_for(cache, user, namespace, &mut |_, rule, error| {
        if let Some(rule) = rule {
            rules.push(rule.clone());
        }
        if let Some(e) = error {
            errors.push(e);
        }
        true
    });
    (rules, errors)
}

/// Go's `%v` of an aggregate of errors: each message once, in order; one as it is, more in
/// brackets.
pub(crate) fn aggregate(errors: &[String]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for e in errors {
        if !distinct.contains(&e.as_str()) {
            distinct.push(e);
        }
    }
    match distinct.as_slice() {
        [one] => one.to_string(),
        _ => format!("[{}]", distinct.join(", ")),
    }
}

type Visitor<'a> = dyn FnMut(&dyn Fn() -> String, Option<&PolicyRule>, Option<String>) -> bool + 'a;

/// Calls `visit` with each rule that applies to `user` in `namespace` (with a description of
/// the binding that grants it) and each error met resolving them, until it returns false.
fn visit_rules_for(cache: &WatchCache, user: &User, namespace: &str, visit: &mut Visitor<'_>) {
    let registry = cache.registry();
    let find = |plural: &str| registry.find(GROUP, "v1", plural).cloned();
    let (Some(crb), Some(rb)) = (find("clusterrolebindings"), find("rolebindings")) else { return };
    // ClusterRoleBindings, then (for a request in a namespace) that namespace's RoleBindings.
    let mut scopes = vec![(crb, None)];
    if !namespace.is_empty() {
        scopes.push((rb, Some(namespace)));
    }
    for (info, ns) in scopes {
        let bindings = match cache.snapshot(&info, ns, &Selectors::default()) {
            Ok((_, items)) => items,
            Err(e) => {
                if !visit(&String::new, None, Some(e.message)) {
                    return;
                }
                continue;
            }
        };
        for binding in bindings {
            let b = binding.value();
            let binding_ns = ns.unwrap_or("");
            let subjects = b.get("subjects").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            let Some(subject) = subjects.iter().find(|s| applies_to(user, s, binding_ns)) else { continue };
            let role_ref = b.get("roleRef").unwrap_or(&Value::Null);
            let rules = match role_rules(cache, role_ref, binding_ns) {
                Ok(rules) => rules,
                Err(e) => {
                    if !visit(&String::new, None, Some(e.lister_text())) {
                        return;
                    }
                    continue;
                }
            };
            let source = || describe(&b, role_ref, subject, ns.is_some());
            for rule in &rules {
                if !visit(&source, Some(rule), None) {
                    return;
                }
            }
        }
    }
}

/// Why the role a binding refers to gives no rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RoleRefError {
    /// No such role.
    Missing {
        /// `roles` or `clusterroles`.
        plural: &'static str,
        /// The role's name.
        name: String,
    },
    /// A `roleRef.kind` other than Role and ClusterRole.
    Unsupported(String),
}

impl RoleRefError {
    /// The error in the words of kube's listers, as the authorizer reports it
    /// (`clusterrole.rbac.authorization.k8s.io "x" not found`).
    pub fn lister_text(&self) -> String {
        match self {
            RoleRefError::Missing { plural, name } => {
                format!("{}.{GROUP} {} not found", plural.trim_end_matches('s'), go_quote(name))
            }
            RoleRefError::Unsupported(kind) => format!("unsupported role reference kind: {}", go_quote(kind)),
        }
    }

    /// The error as kube's role storages answer it: 404 for a missing role, 500 otherwise.
    pub fn to_api_error(&self) -> crate::status::ApiError {
        match self {
            RoleRefError::Missing { plural, name } => crate::status::ApiError::not_found(GROUP, plural, name),
            // A plain error, as kube answers one: 500 without a reason.
            RoleRefError::Unsupported(_) => crate::status::ApiError::new(500, "", self.lister_text()),
        }
    }
}

/// The rules of the role a binding refers to (kube's `GetRoleReferenceRules`).
pub(crate) fn role_rules(
    cache: &WatchCache,
    role_ref: &Value,
    binding_ns: &str,
) -> Result<Vec<PolicyRule>, RoleRefError> {
    let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let (plural, ns) = match kind {
        "Role" => ("roles", binding_ns),
        "ClusterRole" => ("clusterroles", ""),
        _ => return Err(RoleRefError::Unsupported(kind.to_string())),
    };
    let found =
        cache.registry().find(GROUP, "v1", plural).cloned().and_then(|info| cache.get(&info, ns, name).ok().flatten());
    match found {
        Some(role) => Ok(PolicyRule::all_of(&role.value())),
        None => Err(RoleRefError::Missing { plural, name: name.to_string() }),
    }
}

/// Whether a binding's subject is `user` (kube's `appliesToUser`): a service account subject
/// without a namespace is one of the binding's namespace.
fn applies_to(user: &User, subject: &Value, binding_ns: &str) -> bool {
    let text = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or("");
    match text("kind") {
        "User" => user.name == text("name"),
        "Group" => user.in_group(text("name")),
        "ServiceAccount" => {
            let ns = if text("namespace").is_empty() { binding_ns } else { text("namespace") };
            !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", text("name"))
        }
        _ => false,
    }
}

/// kube's description of the binding that grants a rule.
fn describe(binding: &Value, role_ref: &Value, subject: &Value, namespaced: bool) -> String {
    let meta = |k: &str| binding.get("metadata").and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let kind = text(subject, "kind");
    let who = if kind == "ServiceAccount" {
        let ns = match text(subject, "namespace") {
            n if n.is_empty() => meta("namespace").to_string(),
            n => n,
        };
        format!("{kind} {}", go_quote(&format!("{}/{ns}", text(subject, "name"))))
    } else {
        format!("{kind} {}", go_quote(&text(subject, "name")))
    };
    let (what, name) = if namespaced {
        ("RoleBinding", format!("{}/{}", meta("name"), meta("namespace")))
    } else {
        ("ClusterRoleBinding", meta("name").to_string())
    };
    format!("{what} {} of {} {} to {who}", go_quote(&name), text(role_ref, "kind"), go_quote(&text(role_ref, "name")))
}

/// Whether `owner` covers every permission of `servant` (kube's `Covers`); the permissions
/// not covered, one verb, group, resource and name (or one path and verb) each.
pub(crate) fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant.iter().flat_map(breakdown).filter(|sub| !owner.iter().any(|o| rule_covers(o, sub))).collect()
}

/// A rule split into rules of at most one verb, group, resource and name each.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: one(verb),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule { resource_names: one(name), ..base.clone() });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule { non_resource_urls: one(url), verbs: one(verb), ..Default::default() });
        }
    }
    out
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = has(&owner.resources, "*")
        || has_all(&owner.resources, &sub.resources)
        || sub.resources.iter().all(|path| {
            has(&owner.resources, path)
                || path.split_once('/').is_some_and(|(_, sub)| has(&owner.resources, &format!("*/{sub}")))
        });
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == path || (o.ends_with('*') && path.starts_with(o.trim_end_matches('*'))))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// kube's `CompactRules`: rules of one group, one resource and at most one name, and nothing
/// else, merged into one rule per group, resource and name with their verbs in order.
pub(crate) fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    // Keyed by group, resource and name.
    type Simple = (String, String, Option<String>);
    let mut simple: Vec<(Simple, PolicyRule)> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (rule.api_groups[0].clone(), rule.resources[0].clone(), rule.resource_names.first().cloned());
        match simple.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => {
                for verb in rule.verbs {
                    if !has(&existing.verbs, &verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => simple.push((key, rule)),
        }
    }
    out.extend(simple.into_iter().map(|(_, r)| r));
    out
}

/// kube's words for a grant of permissions `user` does not hold (`ConfirmNoEscalation`): the
/// missing permissions compacted, one per line, sorted.
pub(crate) fn escalation_message(user: &User, missing: Vec<PolicyRule>, errors: &[String]) -> String {
    let mut lines: Vec<String> = compact(missing).iter().map(PolicyRule::compact_string).collect();
    lines.sort();
    lines.dedup();
    let groups = format!("[{}]", user.groups.iter().map(|g| go_quote(g)).collect::<Vec<_>>().join(" "));
    let mut msg = format!(
        "user {} (groups={groups}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", aggregate(errors)));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::of(&v)
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> RequestInfo {
        RequestInfo {
            resource_request: true,
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "ns".into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_allow_as_kube_s_rule_allows() {
        let pods = rule(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}));
        assert!(pods.allows(&request("get", "", "pods", "", "p")));
        assert!(!pods.allows(&request("delete", "", "pods", "", "p")));
        assert!(!pods.allows(&request("get", "apps", "pods", "", "p")));
        assert!(!pods.allows(&request("get", "", "pods", "status", "p")));
        let sub = rule(json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}));
        assert!(sub.allows(&request("update", "apps", "deployments", "status", "d")));
        assert!(!sub.allows(&request("update", "apps", "deployments", "", "d")));
        let named = rule(
            json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["lock"], "verbs": ["get"]}),
        );
        assert!(named.allows(&request("get", "coordination.k8s.io", "leases", "", "lock")));
        assert!(!named.allows(&request("get", "coordination.k8s.io", "leases", "", "other")));
        assert!(!named.allows(&request("get", "coordination.k8s.io", "leases", "", "")));
        let path = rule(json!({"nonResourceURLs": ["/apis/*", "/version"], "verbs": ["get"]}));
        let non_resource = |p: &str| RequestInfo { path: p.into(), verb: "get".into(), ..Default::default() };
        assert!(path.allows(&non_resource("/apis/apps/v1")));
        assert!(path.allows(&non_resource("/version")));
        assert!(!path.allows(&non_resource("/healthz")));
        assert!(!pods.allows(&non_resource("/version")));
    }

    #[test]
    fn coverage_and_its_messages_are_kube_s() {
        let owner = vec![
            rule(json!({"apiGroups": [""], "resources": ["pods", "*/status"], "verbs": ["get", "list"]})),
            rule(json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["*"]})),
        ];
        let asked = vec![rule(json!({"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get"]}))];
        assert!(covers(&owner, &asked).is_empty());
        let asked = vec![
            rule(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "delete"]})),
            rule(
                json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"], "verbs": ["get"]}),
            ),
            rule(json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]})),
        ];
        let missing = covers(&owner, &asked);
        let user = User { name: "alice".into(), groups: vec!["system:authenticated".into()] };
        assert_eq!(
            escalation_message(&user, missing, &[]),
            "user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"b\"], Verbs:[\"get\"]}\n\
             {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\"]}\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"watch\" \"delete\"]}"
        );
    }
}

//! Whether the user making a request may make it, as kube-apiserver's authorization filter
//! decides: members of `system:masters` may do everything (kube's privileged-group authorizer,
//! which comes first whatever the mode); then the server's mode decides: `AlwaysAllow` allows
//! everything, `RBAC` allows what the user's roles allow ([`crate::rbac`]). A request that is not
//! allowed is kube's 403, worded as kube words it (`pods "p" is forbidden: User "u" cannot get
//! resource "pods" in API group "" in the namespace "ns"`, the authorizer's reason after a colon).
//!
//! Invariants: a decision reads only the request's attributes ([`crate::request_info`]) and the
//! roles and bindings in the watch cache; the server's own user and its controllers are in
//! `system:masters` and never refused.

use crate::cache::WatchCache;
use crate::rbac::User;
use crate::request_info::RequestInfo;
use crate::status::ApiError;
use crate::structural::go_quote;

/// How the server authorizes requests (kube-apiserver's `--authorization-mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every request is allowed (kube-apiserver's default mode).
    #[default]
    AlwaysAllow,
    /// Requests are allowed by Roles, ClusterRoles and their bindings; the server holds kube's
    /// default roles (`cluster-admin`, `admin`, `edit`, `view`, discovery…).
    Rbac,
}

/// Reads kube-apiserver's `--authorization-mode` list (`RBAC`, `Node,RBAC`, `AlwaysAllow`): the
/// modes are a union, so `AlwaysAllow` anywhere allows everything; `Node` (whose node identities
/// this server does not issue) adds nothing beside another mode; other modes, `Node` alone and
/// a mode named twice are refused.
impl std::str::FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut mode = None;
        let mut seen: Vec<&str> = Vec::new();
        for m in s.split(',').map(str::trim) {
            if seen.contains(&m) {
                return Err(format!("authorization-mode {m:?} has mode specified more than once"));
            }
            seen.push(m);
            match m {
                "AlwaysAllow" => mode = Some(AuthorizationMode::AlwaysAllow),
                "RBAC" if mode.is_none() => mode = Some(AuthorizationMode::Rbac),
                "RBAC" | "Node" => {}
                other => return Err(format!("authorization mode {other:?} is not one of AlwaysAllow, RBAC, Node")),
            }
        }
        mode.ok_or_else(|| format!("authorization modes {s:?} name neither AlwaysAllow nor RBAC"))
    }
}

/// The group whose members may do everything.
pub(crate) const PRIVILEGED_GROUP: &str = "system:masters";

/// A decision: allowed or not, and why ("" when no authorizer gave a reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Whether the request may be made.
    pub allowed: bool,
    /// The authorizer's reason.
    pub reason: String,
}

/// Decides whether `user` may make the request `r`.
pub(crate) fn authorize(cache: &WatchCache, mode: AuthorizationMode, user: &User, r: &RequestInfo) -> Decision {
    if user.in_group(PRIVILEGED_GROUP) {
        return Decision { allowed: true, reason: String::new() };
    }
    match mode {
        AuthorizationMode::AlwaysAllow => Decision { allowed: true, reason: String::new() },
        AuthorizationMode::Rbac => {
            let d = crate::rbac::authorize(cache, user, r);
            Decision { allowed: d.allowed, reason: d.reason }
        }
    }
}

/// Refuses `r` unless `user` may make it, with kube's 403.
pub(crate) fn check(cache: &WatchCache, mode: AuthorizationMode, user: &User, r: &RequestInfo) -> Result<(), ApiError> {
    let d = authorize(cache, mode, user, r);
    if d.allowed { Ok(()) } else { Err(forbidden(user, r, &d.reason)) }
}

/// Refuses the user of the request being served `verb` on `info`'s object `name` in `ns`: the
/// check kube makes inside a handler, for the create an apply makes of an object that does not
/// exist (which needs `create` as well as `patch`).
pub(crate) fn check_requester(
    cache: &WatchCache,
    verb: &str,
    info: &crate::registry::ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let mode = cache.authorization();
    if mode == AuthorizationMode::AlwaysAllow {
        return Ok(());
    }
    let user = User::of(&crate::requester::user_info());
    let r = RequestInfo {
        resource_request: true,
        verb: verb.into(),
        group: info.group.clone(),
        version: info.version.clone(),
        resource: info.plural.clone(),
        namespace: if info.namespaced { ns.to_string() } else { String::new() },
        name: name.into(),
        ..Default::default()
    };
    check(cache, mode, &user, &r)
}

/// kube's 403 for a request `user` may not make (`responsewriters.Forbidden`).
pub(crate) fn forbidden(user: &User, r: &RequestInfo, reason: &str) -> ApiError {
    let who = go_quote(&user.name);
    let mut msg = if !r.resource_request {
        format!("User {who} cannot {} path {}", r.verb, go_quote(&r.path))
    } else {
        let resource =
            if r.subresource.is_empty() { r.resource.clone() } else { format!("{}/{}", r.resource, r.subresource) };
        let scope = if r.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", go_quote(&r.namespace))
        };
        format!(
            "User {who} cannot {} resource {} in API group {} {scope}",
            r.verb,
            go_quote(&resource),
            go_quote(&r.group)
        )
    };
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    let (group, resource, name) =
        if r.resource_request { (r.group.as_str(), r.resource.as_str(), r.name.as_str()) } else { ("", "", "") };
    ApiError::forbidden(group, resource, name, &msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_read_as_kube_s_flag_lists() {
        let read = |s: &str| s.parse::<AuthorizationMode>();
        assert_eq!(read("RBAC"), Ok(AuthorizationMode::Rbac));
        assert_eq!(read("Node,RBAC"), Ok(AuthorizationMode::Rbac));
        assert_eq!(read("RBAC,AlwaysAllow"), Ok(AuthorizationMode::AlwaysAllow));
        assert_eq!(read("AlwaysAllow"), Ok(AuthorizationMode::AlwaysAllow));
        assert!(read("Node").is_err());
        assert!(read("Webhook,RBAC").is_err());
        assert!(read("RBAC,RBAC").is_err());
    }

    #[test]
    fn refusals_are_worded_as_kube_words_them() {
        let user = User { name: "alice".into(), groups: vec!["system:authenticated".into()] };
        let r = RequestInfo {
            resource_request: true,
            verb: "get".into(),
            resource: "pods".into(),
            name: "p".into(),
            namespace: "ns".into(),
            ..Default::default()
        };
        let e = forbidden(&user, &r, "");
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: User \"alice\" cannot get resource \"pods\" in API group \"\" in the namespace \"ns\""
        );
        assert_eq!(e.code, 403);
        let r = RequestInfo {
            resource_request: true,
            verb: "list".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            ..Default::default()
        };
        let e = forbidden(&user, &r, "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found");
        assert_eq!(
            e.message,
            "deployments.apps is forbidden: User \"alice\" cannot list resource \"deployments/scale\" in API group \"apps\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found"
        );
        let r = RequestInfo { verb: "get".into(), path: "/version".into(), ..Default::default() };
        assert_eq!(forbidden(&user, &r, "").message, "forbidden: User \"alice\" cannot get path \"/version\"");
    }
}

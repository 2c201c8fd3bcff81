//! kube-apiserver's CEL authorizer library, as admission policies and webhook match conditions
//! see it: `authorizer.group('apps').resource('deployments').namespace('ns').check('create')`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount(ns, name)…`,
//! `authorizer.requestResource.check(verb)`, each check giving a decision whose `allowed()`,
//! `reason()`, `errored()` and `error()` an expression reads.
//!
//! Invariants: a check is decided by the server's authorizer ([`crate::authorizer`]) for the
//! user making the request (or the service account `serviceAccount` names, with that account's
//! groups), as a request of API version `*` for the group, resource, subresource, namespace and
//! name built up; `requestResource` starts from the request's own resource; decisions carry the
//! authorizer's reason and never an error; a blank path or resource and a malformed service
//! account are errors in kube's words. The variables exist only where [`bind`] puts them.

use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{Context, DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cache::WatchCache;
use crate::cel_library::{arg, give, string_arg};
use crate::rbac::User;
use crate::request_info::RequestInfo;

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

/// A value of one of the library's types, named by its CEL type: the check built so far (and,
/// for a decision, its outcome), with the cache whose roles decide it.
struct Authz {
    ty: &'static str,
    cache: Arc<WatchCache>,
    user: User,
    request: RequestInfo,
    decision: Option<crate::authorizer::Decision>,
}

impl std::fmt::Debug for Authz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authz").field("ty", &self.ty).field("request", &self.request).finish_non_exhaustive()
    }
}

impl PartialEq for Authz {
    fn eq(&self, other: &Self) -> bool {
        self.ty == other.ty
            && Arc::ptr_eq(&self.cache, &other.cache)
            && self.user == other.user
            && self.request == other.request
            && self.decision == other.decision
    }
}

impl Eq for Authz {}

impl Opaque for Authz {
    fn runtime_type_name(&self) -> &str {
        self.ty
    }
}

impl Authz {
    fn of(&self, ty: &'static str, edit: impl FnOnce(&mut RequestInfo)) -> Cel {
        let mut request = self.request.clone();
        edit(&mut request);
        Cel::Opaque(Arc::new(Authz {
            ty,
            cache: self.cache.clone(),
            user: self.user.clone(),
            request,
            decision: self.decision.clone(),
        }))
    }
}

/// The receiver of a member function, one of the library's values.
fn target(args: &[CowVal<'_, '_>], function: &str) -> Result<Arc<dyn Opaque>, ExecutionError> {
    match arg(args, 0)? {
        Cel::Opaque(o) if o.downcast_ref::<Authz>().is_some() => Ok(o),
        _ => Err(ExecutionError::function_error(function, "unexpected receiver")),
    }
}

fn authz(o: &Arc<dyn Opaque>) -> &Authz {
    o.downcast_ref::<Authz>().expect("checked by target")
}

/// Adds the library's functions to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ty = Type::new_opaque_type;
    env.add_member_overload("path", "authorizer_path", ty(AUTHORIZER), vec![STRING_TYPE], path)?;
    env.add_member_overload("group", "authorizer_group", ty(AUTHORIZER), vec![STRING_TYPE], group)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        ty(AUTHORIZER),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload("resource", "groupcheck_resource", ty(GROUP_CHECK), vec![STRING_TYPE], resource)?;
    env.add_member_overload(
        "subresource",
        "resourcecheck_subresource",
        ty(RESOURCE_CHECK),
        vec![STRING_TYPE],
        subresource,
    )?;
    env.add_member_overload("namespace", "resourcecheck_namespace", ty(RESOURCE_CHECK), vec![STRING_TYPE], namespace)?;
    env.add_member_overload("name", "resourcecheck_name", ty(RESOURCE_CHECK), vec![STRING_TYPE], name)?;
    // Selectors narrow a check; the RBAC authorizer decides without them.
    for field in ["fieldSelector", "labelSelector"] {
        let id = format!("resourcecheck_{}", field.to_lowercase());
        env.add_member_overload(field, &id, ty(RESOURCE_CHECK), vec![STRING_TYPE], selector)?;
    }
    env.add_member_overload("check", "pathcheck_check", ty(PATH_CHECK), vec![STRING_TYPE], check)?;
    env.add_member_overload("check", "resourcecheck_check", ty(RESOURCE_CHECK), vec![STRING_TYPE], check)?;
    env.add_member_overload("allowed", "decision_allowed", ty(DECISION), vec![], allowed)?;
    env.add_member_overload("errored", "decision_errored", ty(DECISION), vec![], errored)?;
    env.add_member_overload("reason", "decision_reason", ty(DECISION), vec![], reason)?;
    env.add_member_overload("error", "decision_error", ty(DECISION), vec![], empty)?;
    Ok(())
}

/// `….subresource(s)`, `.namespace(n)`, `.name(n)`: the check with that attribute set.
fn set<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    edit: impl FnOnce(&mut RequestInfo, String),
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, function)?;
    let value = string_arg(&args, 1, function)?;
    give(authz(&o).of(RESOURCE_CHECK, |r| edit(r, value)))
}

fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    set(args, "subresource", |r, v| r.subresource = v)
}

fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    set(args, "namespace", |r, v| r.namespace = v)
}

fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    set(args, "name", |r, v| r.name = v)
}

fn selector<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    set(args, "selector", |_, _| {})
}

/// `authorizer.path(p)`: a check of a non-resource path, which must not be blank.
fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, "path")?;
    let p = string_arg(&args, 1, "path")?;
    if p.trim().is_empty() {
        return Err(ExecutionError::function_error("path", "path must not be empty"));
    }
    give(authz(&o).of(PATH_CHECK, |r| *r = RequestInfo { path: p, ..Default::default() }))
}

/// `authorizer.group(g)`: a check of the group's resources.
fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, "group")?;
    let g = string_arg(&args, 1, "group")?;
    give(authz(&o).of(GROUP_CHECK, |r| *r = RequestInfo { resource_request: true, group: g, ..Default::default() }))
}

/// `….group(g).resource(r)`: a check of a resource, whose name must not be blank.
fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, "resource")?;
    let res = string_arg(&args, 1, "resource")?;
    if res.trim().is_empty() {
        return Err(ExecutionError::function_error("resource", "resource must not be empty"));
    }
    give(authz(&o).of(RESOURCE_CHECK, |r| r.resource = res))
}

/// `authorizer.serviceAccount(namespace, name)`: the authorizer of that service account, whose
/// name must be a DNS subdomain and namespace a DNS label.
fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, "serviceAccount")?;
    let namespace = string_arg(&args, 1, "serviceAccount")?;
    let name = string_arg(&args, 2, "serviceAccount")?;
    if !crate::object::valid_name(&name) {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account name"));
    }
    if !crate::cel_format::dns1123_label(&namespace).is_empty() {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account namespace"));
    }
    let a = authz(&o);
    let user = User {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")],
    };
    give(Cel::Opaque(Arc::new(Authz {
        ty: AUTHORIZER,
        cache: a.cache.clone(),
        user,
        request: RequestInfo::default(),
        decision: None,
    })))
}

/// `….check(verb)`: the authorizer's decision on the check.
fn check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let o = target(&args, "check")?;
    let verb = string_arg(&args, 1, "check")?;
    let a = authz(&o);
    let mut request = a.request.clone();
    request.verb = verb;
    if request.resource_request {
        request.version = "*".into();
    }
    let decision = crate::authorizer::authorize(&a.cache, a.cache.authorization(), &a.user, &request);
    give(Cel::Opaque(Arc::new(Authz {
        ty: DECISION,
        cache: a.cache.clone(),
        user: a.user.clone(),
        request,
        decision: Some(decision),
    })))
}

fn decided(args: &[CowVal<'_, '_>], function: &str) -> Result<crate::authorizer::Decision, ExecutionError> {
    let o = target(args, function)?;
    authz(&o).decision.clone().ok_or_else(|| ExecutionError::function_error(function, "not a decision"))
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(decided(&args, "allowed")?.allowed))
}

fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    decided(&args, "errored")?;
    give(Cel::Bool(false))
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::String(Arc::new(decided(&args, "reason")?.reason)))
}

fn empty<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    decided(&args, "error")?;
    give(Cel::String(Arc::new(String::new())))
}

/// Puts `authorizer` (for the requesting user, decided by `cache`'s roles) and
/// `authorizer.requestResource` (the request's group, resource, subresource, namespace and
/// name) in scope.
pub(crate) fn bind(ctx: &mut Context, cache: &Arc<WatchCache>, request_resource: RequestInfo) {
    let user = User::of(&crate::requester::user_info());
    let of = |ty: &'static str, request: RequestInfo| {
        Cel::Opaque(Arc::new(Authz { ty, cache: cache.clone(), user: user.clone(), request, decision: None }))
    };
    ctx.add_variable_from_value("authorizer", of(AUTHORIZER, RequestInfo::default()));
    let request_resource = RequestInfo { resource_request: true, ..request_resource };
    ctx.add_variable_from_value("authorizer.requestResource", of(RESOURCE_CHECK, request_resource));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(mode: crate::AuthorizationMode) -> Arc<WatchCache> {
        let registry = Arc::new(crate::registry::Registry::with_defaults());
        let cache = WatchCache::new(registry, crate::storage::keys::KeyLayout::new("/registry"), Default::default());
        cache.set_authorization(mode);
        Arc::new(cache)
    }

    fn bound(mode: crate::AuthorizationMode) -> Context<'static, 'static> {
        let mut ctx = Context::with_env(crate::validation_rules::env());
        let request = RequestInfo { group: "apps".into(), resource: "deployments".into(), ..Default::default() };
        bind(&mut ctx, &cache(mode), request);
        ctx
    }

    fn eval_in(mode: crate::AuthorizationMode, expression: &str) -> Cel {
        crate::validation_rules::compile(expression).unwrap().execute(&bound(mode)).unwrap()
    }

    fn eval(expression: &str) -> Cel {
        eval_in(crate::AuthorizationMode::AlwaysAllow, expression)
    }

    #[test]
    fn under_rbac_checks_are_decided_by_roles() {
        let rbac = crate::AuthorizationMode::Rbac;
        // The server's own user is in system:masters; a service account without bindings is not.
        assert_eq!(eval_in(rbac, "authorizer.requestResource.check('update').allowed()"), Cel::Bool(true));
        let account =
            "authorizer.serviceAccount('ns', 'sa').group('').resource('secrets').namespace('ns').check('list')";
        assert_eq!(eval_in(rbac, &format!("{account}.allowed()")), Cel::Bool(false));
        assert_eq!(eval_in(rbac, &format!("{account}.reason() == '' && !{account}.errored()")), Cel::Bool(true));
    }

    #[test]
    fn every_check_is_allowed_for_the_server_s_one_user() {
        for e in [
            "authorizer.group('apps').resource('deployments').namespace('ns').name('d').check('delete').allowed()",
            "authorizer.group('').resource('pods').subresource('exec').check('create').allowed()",
            "authorizer.path('/healthz').check('get').allowed()",
            "authorizer.serviceAccount('ns', 'sa').group('').resource('secrets').check('list').allowed()",
            "authorizer.requestResource.check('update').allowed()",
            "!authorizer.requestResource.labelSelector('a=b').check('list').errored()",
            "authorizer.requestResource.check('get').reason() == ''",
            "authorizer.path('/metrics').check('get').error() == ''",
        ] {
            assert_eq!(eval(e), Cel::Bool(true), "{e}");
        }
    }

    #[test]
    fn blank_paths_and_resources_and_bad_service_accounts_are_errors() {
        for (e, error) in [
            ("authorizer.path(' ').check('get').allowed()", "path must not be empty"),
            ("authorizer.group('apps').resource('').check('get').allowed()", "resource must not be empty"),
            (
                "authorizer.serviceAccount('ns', 'Bad_Name').path('/').check('get').allowed()",
                "Invalid service account name",
            ),
            (
                "authorizer.serviceAccount('a.b', 'sa').path('/').check('get').allowed()",
                "Invalid service account namespace",
            ),
        ] {
            let ctx = bound(crate::AuthorizationMode::AlwaysAllow);
            let found = crate::validation_rules::compile(e).unwrap().execute(&ctx).unwrap_err();
            assert_eq!(crate::validation_rules::error_text(&found), error, "{e}");
        }
    }
}

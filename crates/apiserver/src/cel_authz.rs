//! kube-apiserver's CEL authorizer library, as admission policies and webhook match conditions
//! see it: `authorizer.group('apps').resource('deployments').namespace('ns').check('create')`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount(ns, name)…`,
//! `authorizer.requestResource.check(verb)`, each check giving a decision whose `allowed()`,
//! `reason()`, `errored()` and `error()` an expression reads.
//!
//! Invariants: the server authorizes as kube-apiserver with `--authorization-mode=AlwaysAllow`
//! (every user, the server's own and any a request impersonates, and any service account a
//! check names are allowed everything, without a reason), so every decision is allowed, with an
//! empty reason and no error; a blank path or resource and a malformed service account are
//! errors in kube's words. The variables exist only where [`bind`] puts them.

use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{Context, DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{give, string_arg};

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

/// A value of one of the library's types, named by its CEL type.
#[derive(Debug, PartialEq, Eq)]
struct Authz(&'static str);

impl Opaque for Authz {
    fn runtime_type_name(&self) -> &str {
        self.0
    }
}

fn of(name: &'static str) -> Cel {
    Cel::Opaque(Arc::new(Authz(name)))
}

/// Adds the library's functions to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ty = Type::new_opaque_type;
    env.add_member_overload("path", "authorizer_path", ty(AUTHORIZER), vec![STRING_TYPE], path)?;
    env.add_member_overload("group", "authorizer_group", ty(AUTHORIZER), vec![STRING_TYPE], to::<2>)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        ty(AUTHORIZER),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload("resource", "groupcheck_resource", ty(GROUP_CHECK), vec![STRING_TYPE], resource)?;
    for field in ["subresource", "namespace", "name", "fieldSelector", "labelSelector"] {
        let id = format!("resourcecheck_{}", field.to_lowercase());
        env.add_member_overload(field, &id, ty(RESOURCE_CHECK), vec![STRING_TYPE], to::<3>)?;
    }
    env.add_member_overload("check", "pathcheck_check", ty(PATH_CHECK), vec![STRING_TYPE], to::<4>)?;
    env.add_member_overload("check", "resourcecheck_check", ty(RESOURCE_CHECK), vec![STRING_TYPE], to::<4>)?;
    env.add_member_overload("allowed", "decision_allowed", ty(DECISION), vec![], answer::<true>)?;
    env.add_member_overload("errored", "decision_errored", ty(DECISION), vec![], answer::<false>)?;
    env.add_member_overload("reason", "decision_reason", ty(DECISION), vec![], empty)?;
    env.add_member_overload("error", "decision_error", ty(DECISION), vec![], empty)?;
    Ok(())
}

/// A value of the `I`th type of [`AUTHORIZER`], [`PATH_CHECK`], [`GROUP_CHECK`],
/// [`RESOURCE_CHECK`], [`DECISION`].
fn to<'b, 'v, const I: usize>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(of([AUTHORIZER, PATH_CHECK, GROUP_CHECK, RESOURCE_CHECK, DECISION][I]))
}

/// `authorizer.path(p)`: a check of a non-resource path, which must not be blank.
fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if string_arg(&args, 1, "path")?.trim().is_empty() {
        return Err(ExecutionError::function_error("path", "path must not be empty"));
    }
    give(of(PATH_CHECK))
}

/// `….group(g).resource(r)`: a check of a resource, whose name must not be blank.
fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if string_arg(&args, 1, "resource")?.trim().is_empty() {
        return Err(ExecutionError::function_error("resource", "resource must not be empty"));
    }
    give(of(RESOURCE_CHECK))
}

/// `authorizer.serviceAccount(namespace, name)`: the authorizer of that service account, whose
/// name must be a DNS subdomain and namespace a DNS label.
fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let namespace = string_arg(&args, 1, "serviceAccount")?;
    let name = string_arg(&args, 2, "serviceAccount")?;
    if !crate::object::valid_name(&name) {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account name"));
    }
    if !crate::cel_format::dns1123_label(&namespace).is_empty() {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account namespace"));
    }
    give(of(AUTHORIZER))
}

fn answer<'b, 'v, const B: bool>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(B))
}

fn empty<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::String(Arc::new(String::new())))
}

/// Puts `authorizer` and `authorizer.requestResource` in scope.
pub(crate) fn bind(ctx: &mut Context) {
    ctx.add_variable_from_value("authorizer", of(AUTHORIZER));
    ctx.add_variable_from_value("authorizer.requestResource", of(RESOURCE_CHECK));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expression: &str) -> Cel {
        let mut ctx = Context::with_env(crate::validation_rules::env());
        bind(&mut ctx);
        crate::validation_rules::compile(expression).unwrap().execute(&ctx).unwrap()
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
            let mut ctx = Context::with_env(crate::validation_rules::env());
            bind(&mut ctx);
            let found = crate::validation_rules::compile(e).unwrap().execute(&ctx).unwrap_err();
            assert_eq!(crate::validation_rules::error_text(&found), error, "{e}");
        }
    }
}

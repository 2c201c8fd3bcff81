//! kube-apiserver's CEL authorizer library, as admission policies and webhook match conditions
//! see it: `authorizer.group('apps').resource('deployments').namespace('ns').check('create')`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount(ns, name)…`,
//! `authorizer.requestResource.check(verb)`, each check giving a decision whose `allowed()`,
//! `reason()`, `errored()` and `error()` an expression reads.
//!
//! Invariants: the server has one user, `system:admin` in `system:masters`, whom kube's
//! authorizers allow everything without a reason; so every decision is allowed, with an empty
//! reason and no error, whatever was asked. The variables exist only where [`bind`] puts them.

use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{Context, DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::give;

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
    env.add_member_overload("path", "authorizer_path", ty(AUTHORIZER), vec![STRING_TYPE], to::<1>)?;
    env.add_member_overload("group", "authorizer_group", ty(AUTHORIZER), vec![STRING_TYPE], to::<2>)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        ty(AUTHORIZER),
        vec![STRING_TYPE, STRING_TYPE],
        to::<0>,
    )?;
    env.add_member_overload("resource", "groupcheck_resource", ty(GROUP_CHECK), vec![STRING_TYPE], to::<3>)?;
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
}

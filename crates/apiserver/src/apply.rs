//! Server-side apply: `PATCH` with `application/apply-patch+yaml`, as kube-apiserver's apply
//! patcher runs it.
//!
//! The body (YAML, or JSON, which is YAML) is a partial object of the resource's kind: the
//! configuration its field manager wants. It is checked (its kind and apiVersion, no
//! `managedFields`, its fields against the type's schema), merged into the live object with
//! [`crate::managed_fields::apply`] (conflicts with other managers are a 409 unless `force`),
//! defaulted, and stored like any update; an apply to an object that does not exist creates
//! it (201), except through `/status` (404).
//!
//! Invariants: an apply either commits one storage revision or changes nothing (every check
//! runs before the one compare-and-swap write; a write that lost a race is recomputed from the
//! newer version); `dryRun` stores nothing; a `metadata.resourceVersion` in the configuration is
//! a precondition, and 0 there is none (refused with kube's 422 for the kinds whose updates
//! need a version).

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::field_validation::{self, FieldValidation};
use crate::managed_fields::{self, ApplyError, ManagerKey, Managers, Operation};
use crate::object::{self, StoredObject};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Store, Tracking, WriteOpts, check_patched_name, parse_rv_field};
use crate::strategy::{self, Target};
use crate::{warning, yaml};

/// The options of an apply.
#[derive(Debug, Clone, Default)]
pub struct ApplyOpts {
    /// `/status` or the resource itself.
    pub target: Target,
    /// Compute without storing (`dryRun=All`).
    pub dry_run: bool,
    /// What to do with duplicate fields in the body.
    pub validation: FieldValidation,
    /// Take fields other managers own (`force=true`).
    pub force: bool,
    /// The applier (`fieldManager`, required).
    pub field_manager: String,
}

/// An apply body read as kube-apiserver reads it.
struct Config {
    object: Value,
    /// go-yaml's complaints about duplicate keys.
    duplicates: Vec<String>,
}

fn decode(body: &[u8]) -> Result<Config, ApiError> {
    // JSON without duplicate keys reads the same as YAML, faster.
    if let Ok((v, dups)) = field_validation::decode(body)
        && dups.is_empty()
    {
        return Ok(Config { object: v, duplicates: Vec::new() });
    }
    let text =
        std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: yaml: {e}")))?;
    let doc = yaml::decode(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: yaml: {e}")))?;
    Ok(Config { object: doc.value, duplicates: doc.duplicates })
}

/// `group/version, Kind=kind` as Go prints a GroupVersionKind.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [v] => ("", *v),
        [g, v] => (*g, *v),
        _ => ("", ""),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// The configuration as an object of `info`'s kind without `managedFields` (400 otherwise).
fn check(info: &ResourceInfo, v: Value) -> Result<Map<String, Value>, ApiError> {
    let obj = match v {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        other => {
            let t = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            return Err(ApiError::bad_request(format!(
                "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {t} into Go value of type map[string]interface {{}}"
            )));
        }
    };
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (s("apiVersion"), s("kind"));
    if api_version != info.api_version() || kind != info.kind {
        return Err(ApiError::bad_request(format!("invalid object type: {}", gvk_string(api_version, kind))));
    }
    if obj.get("metadata").and_then(|m| m.get("managedFields")).is_some_and(|f| !f.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(obj)
}

/// kube-apiserver's answer to a configuration its type refuses (a 500 without reason).
fn typed_patch_error(info: &ResourceInfo, config: &Map<String, Value>, errors: &managed_fields::Errors) -> ApiError {
    let meta =
        |f: &str| config.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).unwrap_or("").to_string();
    ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{}; {}): {errors}",
            meta("namespace"),
            meta("name"),
            gvk_string(&info.api_version(), &info.kind)
        ),
    )
}

/// The manager kube's field manager gives the fields of an object without managers before its
/// first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The object an apply of `config` makes of `live`, and its managers afterwards (a 409 when
/// fields other managers own would change and the apply is not forced).
#[allow(clippy::too_many_arguments)]
fn merge(
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    live: &StoredObject,
    config: &Value,
    duplicates: &[String],
    key: &ManagerKey,
    opts: &ApplyOpts,
) -> Result<(Map<String, Value>, Managers), ApiError> {
    let ty = managed_fields::type_of(info);
    let api_version = info.api_version();
    let mut live = live.value();
    let live_managed = live.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove("managedFields"));
    let mut managers = Managers::decode(live_managed.as_ref())
        .map_err(|e| ApiError::new(500, "", format!("failed to decode managed fields: {e}")))?;
    let ignored = managed_fields::ignored_fields(info, opts.target, &[&live, config]);
    let ctx = managed_fields::Context { ty, api_version: &api_version, ignored: &ignored };
    let now = object::now_rfc3339();
    if managers.0.is_empty() {
        // As kube's field manager: the fields of an object no manager records are given to
        // `before-first-apply` (an update from an empty object) before the first apply.
        let cmp = managed_fields::changes(&Value::Object(Map::new()), &live, ctx);
        let subresource = managed_fields::subresource_of(opts.target);
        let before = ManagerKey::new(BEFORE_FIRST_APPLY, Operation::Update, &api_version, subresource);
        managed_fields::record(&mut managers, cmp, ctx, &before, &now);
    }
    let applied = match managed_fields::apply(&mut managers, &live, config, ctx, key, opts.force, &now) {
        // kubectl moving from client-side apply: its last-applied configuration
        // says which conflicting fields were its own.
        Err(ApplyError::Conflicts(c)) if opts.field_manager == KUBECTL => {
            match managed_fields::conflicts_beyond_last_applied(&live, ctx, c) {
                None => managed_fields::apply(&mut managers, &live, config, ctx, key, true, &now),
                Some(rest) => Err(ApplyError::Conflicts(rest)),
            }
        }
        other => other,
    }
    .map_err(apply_error)?;
    check_duplicates(opts.validation, duplicates)?;
    let mut object = applied.object;
    if opts.field_manager == KUBECTL {
        update_last_applied(&mut object, config);
    }
    let Value::Object(obj) = object else {
        return Err(ApiError::internal("the applied object is not an object"));
    };
    check_patched_name(&obj, name, ns)?;
    Ok((obj, managers))
}

/// Reports duplicate keys of the body as `validation` says (after the apply succeeded, as
/// kube-apiserver checks them).
fn check_duplicates(validation: FieldValidation, duplicates: &[String]) -> Result<(), ApiError> {
    if duplicates.is_empty() {
        return Ok(());
    }
    match validation {
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            duplicates.join("\n  ")
        ))),
        FieldValidation::Warn => {
            duplicates.iter().cloned().for_each(warning::record);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// The field manager of `kubectl apply --server-side`.
const KUBECTL: &str = "kubectl";

/// Keeps an object's client-side `last-applied-configuration`, if it has one, in step with
/// kubectl's server-side applies (so a later client-side apply computes the right patch).
fn update_last_applied(object: &mut Value, config: &Value) {
    let Some(annotations) =
        object.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut)
    else {
        return;
    };
    if annotations.get(managed_fields::LAST_APPLIED).and_then(Value::as_str).is_some_and(|a| !a.is_empty()) {
        annotations.insert(managed_fields::LAST_APPLIED.into(), managed_fields::last_applied_of(config).into());
    }
}

fn apply_error(e: ApplyError) -> ApiError {
    match e {
        ApplyError::Conflicts(c) => managed_fields::conflict_error(&c),
        ApplyError::Merge(errors) => ApiError::new(500, "", format!("failed to merge config: {errors}")),
    }
}

impl Store {
    /// Applies a configuration (`body`) to the object `name` as `opts.field_manager`: returns
    /// the stored object and whether the apply created it.
    pub async fn apply(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        body: &[u8],
        opts: &ApplyOpts,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        let ns = if info.namespaced { ns } else { "" };
        let Config { object, duplicates } = decode(body)?;
        let config = check(info, object)?;
        let ty = managed_fields::type_of(info);
        let config = Value::Object(config);
        managed_fields::validate(&config, ty)
            .map_err(|e| typed_patch_error(info, config.as_object().unwrap_or(&Map::new()), &e))?;
        let api_version = info.api_version();
        let subresource = managed_fields::subresource_of(opts.target);
        let key = ManagerKey::new(&opts.field_manager, Operation::Apply, &api_version, subresource);
        let (precondition, zero) =
            match config.get("metadata").and_then(|m| m.get("resourceVersion")).and_then(Value::as_str) {
                // 0 is none, as kube's versioner reads it; an object so merged is a PUT without a
                // version.
                Some(s) if !s.is_empty() => match parse_rv_field(s)? {
                    0 => (None, true),
                    rv => (Some(rv), false),
                },
                _ => (None, false),
            };
        let write = WriteOpts {
            target: opts.target,
            dry_run: opts.dry_run,
            validation: opts.validation,
            field_manager: opts.field_manager.clone(),
            ..Default::default()
        };
        loop {
            let (mut cur, mut is_current) = match self.current(info, ns, name).await {
                Ok(c) => c,
                Err(e) if e.code == 404 && opts.target == Target::Main => {
                    match self.apply_create(info, ns, name, &config, &duplicates, &key, opts).await {
                        // Created meanwhile by another write: apply to it.
                        Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                        r => return r.map(|o| (o, true)),
                    }
                }
                Err(e) => return Err(e),
            };
            loop {
                let attempt = async {
                    if precondition.is_some_and(|p| p != cur.rv) {
                        return Err(ApiError::conflict(&info.group, &info.plural, name));
                    }
                    let (obj, managers) = merge(info, ns, name, &cur, &config, &duplicates, &key, opts)?;
                    if zero && !strategy::allows_unconditional_update(info) {
                        return Err(crate::store::version_required(info, name));
                    }
                    self.replace(info, (&cur, is_current), obj, &write, Tracking::Applied(managers)).await
                }
                .await;
                match self.settle(info, (ns, name), (&cur, is_current), attempt).await? {
                    ControlFlow::Break(r) => return Ok((r, false)),
                    ControlFlow::Continue(newer) => (cur, is_current) = (newer, true),
                }
            }
        }
    }

    /// An apply to an object that does not exist: the configuration merged into an empty object,
    /// created.
    #[allow(clippy::too_many_arguments)]
    async fn apply_create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        config: &Value,
        duplicates: &[String],
        key: &ManagerKey,
        opts: &ApplyOpts,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let ty = managed_fields::type_of(info);
        let api_version = info.api_version();
        let zero = Value::Object(Map::new());
        let ignored = managed_fields::ignored_fields(info, Target::Main, &[]);
        let ctx = managed_fields::Context { ty, api_version: &api_version, ignored: &ignored };
        let mut managers = Managers::default();
        let applied = managed_fields::apply(&mut managers, &zero, config, ctx, key, opts.force, &object::now_rfc3339())
            .map_err(apply_error)?;
        check_duplicates(opts.validation, duplicates)?;
        let obj = applied.object;
        if let Some(uid) =
            obj.get("metadata").and_then(|m| m.get("uid")).and_then(Value::as_str).filter(|u| !u.is_empty())
        {
            let mut e = ApiError::conflict(&info.group, &info.plural, name);
            e.message = format!(
                "Operation cannot be fulfilled on {} \"{name}\": uid mismatch: the provided object specified uid {uid}, and no existing object was found",
                crate::status::qualified_resource(&info.group, &info.plural)
            );
            return Err(e);
        }
        let Value::Object(map) = &obj else { return Err(ApiError::internal("the applied object is not an object")) };
        check_patched_name(map, name, ns)?;
        let url_ns = info.namespaced.then_some(ns);
        let mut created = self
            .create_tracked(
                info,
                url_ns,
                vec![(obj, Tracking::Applied(managers))],
                (crate::store::CreateVia::Write, opts.dry_run),
                &opts.field_manager,
            )
            .await?;
        created.pop().ok_or_else(|| ApiError::internal("no object created"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_print_as_go_prints_them() {
        assert_eq!(gvk_string("apps/v1", "Deployment"), "apps/v1, Kind=Deployment");
        assert_eq!(gvk_string("v1", "Pod"), "/v1, Kind=Pod");
        assert_eq!(gvk_string("", ""), "/, Kind=");
    }
}

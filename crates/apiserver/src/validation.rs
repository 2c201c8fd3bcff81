//! Validation of built-in types beyond their JSON shape: the rules kube-apiserver enforces on
//! the served types whose violation a client can produce with an ordinary patch.
//!
//! Invariants: validation runs on the object as it would be stored (after a patch is applied
//! and the status kept or taken), on creates and updates alike, and never changes it; a
//! violation is kube's 422 Invalid with its field path, cause reason and message.

use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// Checks an object about to be written; `old` is the stored version an update replaces.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&StoredObject>,
) -> Result<(), ApiError> {
    if info.custom.is_some() {
        return crate::custom_resource::validate(info, obj, old);
    }
    if crate::crd::is_crds(info) {
        return crate::crd_validation::validate(obj);
    }
    if info.group == crate::admission_policy::GROUP {
        let causes = match info.plural.as_str() {
            crate::admission_webhook::MUTATING => crate::webhook_configuration::validate(obj, true),
            crate::admission_webhook::VALIDATING => crate::webhook_configuration::validate(obj, false),
            plural => crate::policy_validation::validate(obj, plural == "validatingadmissionpolicybindings"),
        };
        if !causes.is_empty() {
            let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
            return Err(crate::custom_resource::invalid(info, name, &causes));
        }
    }
    if info.group == "batch" && matches!(info.plural.as_str(), "jobs" | "cronjobs") {
        // A Job's pods run to completion: kube refuses the restart policy pod defaults give.
        let (spec_at, spec) = match info.plural.as_str() {
            "jobs" => ("spec", obj.get("spec")),
            _ => (
                "spec.jobTemplate.spec",
                obj.get("spec").and_then(|s| s.get("jobTemplate")).and_then(|t| t.get("spec")),
            ),
        };
        let policy = spec.and_then(|s| s.pointer("/template/spec/restartPolicy")).and_then(Value::as_str).unwrap_or("");
        let field = format!("{spec_at}.template.spec.restartPolicy");
        let failure_policy = spec.and_then(|s| s.get("podFailurePolicy")).is_some_and(|p| !p.is_null());
        let fault = match policy {
            "OnFailure" if failure_policy => Some((
                "FieldValueInvalid",
                r#"Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#
                    .to_string(),
            )),
            "OnFailure" | "Never" => None,
            "Always" | "" => {
                Some(("FieldValueRequired", r#"Required value: valid values: "OnFailure", "Never""#.to_string()))
            }
            other => Some((
                "FieldValueNotSupported",
                format!(r#"Unsupported value: "{other}": supported values: "OnFailure", "Never""#),
            )),
        };
        if let Some((reason, message)) = fault {
            let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
            return Err(ApiError::invalid_object(&info.group, &info.kind, name, &field, reason, &message));
        }
    }
    if crate::defaults::is_priority_class(info) {
        let causes = priority_class(obj, old);
        if !causes.is_empty() {
            let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
            return Err(crate::custom_resource::invalid(info, name, &causes));
        }
    }
    if info.group == "apps" && info.plural == "deployments" {
        let strategy = obj.get("spec").and_then(|s| s.get("strategy"));
        let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str);
        if kind == Some("Recreate") && strategy.and_then(|s| s.get("rollingUpdate")).is_some_and(|r| !r.is_null()) {
            let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
            return Err(ApiError::invalid_object(
                &info.group,
                &info.kind,
                name,
                "spec.strategy.rollingUpdate",
                "FieldValueForbidden",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ));
        }
    }
    Ok(())
}

/// The highest priority a PriorityClass outside kube's system classes may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// kube's checks of a PriorityClass (`ValidatePriorityClass`, and `ValidatePriorityClassUpdate`
/// over `old`): names starting `system-` are kube's own classes, with their values; others are
/// at most [`HIGHEST_USER_PRIORITY`]; the preemption policy is one kube knows; the value and the
/// policy never change.
fn priority_class(obj: &Map<String, Value>, old: Option<&StoredObject>) -> Vec<crate::structural::Cause> {
    use crate::structural::Cause;
    let mut causes = Vec::new();
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    if let Some(old) = old {
        // An update is judged only on what may not change.
        let old = old.value();
        let forbidden = Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: may not be changed in an update.".into(),
            field: "value".into(),
        };
        if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
            causes.push(forbidden);
        }
        let policy = obj.get("preemptionPolicy");
        if old.get("preemptionPolicy") != policy {
            let shown = policy.and_then(Value::as_str).map_or("null".to_string(), |p| format!("{p:?}"));
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {shown}: field is immutable"),
                field: "preemptionPolicy".into(),
            });
        }
        return causes;
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let global_default = obj.get("globalDefault") == Some(&Value::Bool(true));
    let forbidden = |field: &str, message: String| Cause {
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {message}"),
        field: field.into(),
    };
    if name.starts_with("system-") {
        let known = crate::defaults::SYSTEM_PRIORITY_CLASSES.iter().find(|(n, ..)| *n == name);
        let fault = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v, _)) if *v != value => Some(format!("value of {name} PriorityClass must be {v}")),
            Some(_) if global_default => Some(format!("globalDefault of {name} PriorityClass must be false")),
            Some(_) => None,
        };
        if let Some(e) = fault {
            causes.push(forbidden(
                "metadata.name",
                format!("priority class names with 'system-' prefix are reserved for system use only. error: {e}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        causes.push(forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    match obj.get("preemptionPolicy").and_then(Value::as_str) {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => causes.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: "preemptionPolicy".into(),
        }),
        Some(other) => causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(r#"Unsupported value: "{other}": supported values: "PreemptLowerPriority", "Never""#),
            field: "preemptionPolicy".into(),
        }),
    }
    causes
}

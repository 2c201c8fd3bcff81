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

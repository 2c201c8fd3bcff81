//! The reviews kube-apiserver answers without storing anything: who am I
//! (authentication.k8s.io/v1 SelfSubjectReview, `kubectl auth whoami`), may a user do something
//! (authorization.k8s.io/v1 SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview: `kubectl auth can-i`, controllers checking their permissions) and
//! what may I do (SelfSubjectRulesReview, `kubectl auth can-i --list`).
//!
//! Invariants: the server authorizes as kube-apiserver with `--authorization-mode=AlwaysAllow`,
//! so every access review is allowed (no reason) and every user may do everything (`*` rules,
//! complete); a review is checked as kube checks it before it is answered (kube's 422 and 400
//! in kube's words); the answer is the review sent, with kube's `status`, and `201 Created`.

use serde_json::{Value, json};

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::structural::Cause;

/// Answers a review of `info` created in namespace `ns` (for LocalSubjectAccessReviews).
pub(crate) fn answer(info: &ResourceInfo, ns: Option<&str>, body: Value) -> Result<Value, ApiError> {
    let mut review = crate::store::check_body(info, body)?;
    match info.kind.as_str() {
        // Answered with a review of kube's own making.
        "SelfSubjectReview" => {
            return Ok(json!({"kind": info.kind, "apiVersion": info.api_version(),
                             "metadata": {"creationTimestamp": crate::object::now_rfc3339()},
                             "status": {"userInfo": crate::requester::user_info()}}));
        }
        "SelfSubjectRulesReview" => {
            let namespace = review.get("spec").and_then(|s| s.get("namespace")).and_then(Value::as_str);
            if namespace.unwrap_or("").is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            return Ok(json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": {}, "spec": {},
                             "status": {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                                        "incomplete": false}}));
        }
        _ => {}
    }
    review.insert("kind".into(), info.kind.clone().into());
    review.insert("apiVersion".into(), info.api_version().into());
    let meta = review.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Some(meta) = meta.as_object_mut() {
        // What the server sets on a create is not the client's to send.
        for k in ["creationTimestamp", "uid", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"] {
            meta.remove(k);
        }
        if !info.namespaced {
            meta.remove("namespace");
        }
    }
    if info.namespaced
        && let (Some(ns), Some(meta)) = (ns, review.get_mut("metadata").and_then(Value::as_object_mut))
    {
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), ns.into());
            }
            Some(other) if other != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            Some(_) => {}
        }
    }
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let kind = info.kind.as_str();
    let mut causes = attribute_causes(&spec);
    if kind != "SelfSubjectAccessReview" {
        let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
        let groups = spec.get("groups").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
        if user.is_empty() && !groups {
            causes.push(invalid("spec.user", &format!("{user:?}"), "at least one of user or group must be specified"));
        }
    }
    if kind == "LocalSubjectAccessReview" {
        let namespace = review.get("metadata").and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("");
        if let Some(attributes) = spec.get("resourceAttributes").filter(|a| a.is_object()) {
            let asked = attributes.get("namespace").and_then(Value::as_str).unwrap_or("");
            if asked != namespace {
                causes.push(invalid(
                    "spec.resourceAttributes.namespace",
                    &format!("{asked:?}"),
                    "must match metadata.namespace",
                ));
            }
        }
        if let Some(attributes) = spec.get("nonResourceAttributes").filter(|a| a.is_object()) {
            causes.push(invalid(
                "spec.nonResourceAttributes",
                &non_resource(attributes),
                "disallowed on this kind of request",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(refused(info, &causes));
    }
    review.insert("status".into(), json!({"allowed": true}));
    Ok(Value::Object(review))
}

/// kube's 422 for a review: it names the review by its internal object, whose kind is empty
/// (`.authorization.k8s.io "" is invalid: …`).
fn refused(info: &ResourceInfo, causes: &[Cause]) -> ApiError {
    let mut unnamed = info.clone();
    unnamed.kind = String::new();
    let mut e = crate::custom_resource::invalid(&unnamed, "", causes);
    if let Some(Value::Object(details)) = e.details.as_deref_mut() {
        details.remove("kind");
    }
    e
}

fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {value}: {detail}"), field: field.into() }
}

/// Go's `%#v` of non-resource attributes, as kube prints them in a cause.
fn non_resource(attributes: &Value) -> String {
    let text = |k: &str| attributes.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    format!("authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}", text("path"), text("verb"))
}

/// kube's checks of an access review's attributes: one of resource and non-resource attributes.
fn attribute_causes(spec: &Value) -> Vec<Cause> {
    let present = |k: &str| spec.get(k).is_some_and(Value::is_object);
    match (present("resourceAttributes"), present("nonResourceAttributes")) {
        (true, true) => vec![invalid(
            "spec.nonResourceAttributes",
            &non_resource(&spec["nonResourceAttributes"]),
            "cannot be specified in combination with resourceAttributes",
        )],
        (false, false) => vec![invalid(
            "spec.resourceAttributes",
            "\"null\"",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        _ => Vec::new(),
    }
}

/// The verbs of a review in discovery.
pub(crate) const VERBS: &[&str] = &["create"];

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: &str) -> ResourceInfo {
        let plural = format!("{}s", kind.to_lowercase());
        let mut info = ResourceInfo::new("authorization.k8s.io", "v1", &plural, kind, kind.starts_with("Local"));
        info.review = true;
        info
    }

    #[test]
    fn access_reviews_are_allowed_once_checked() {
        let asked = json!({"spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}});
        let answer = answer(&info("SelfSubjectAccessReview"), None, asked).unwrap();
        assert_eq!(answer["status"], json!({"allowed": true}));
        assert_eq!(answer["kind"], "SelfSubjectAccessReview");
        let e = answer_err(&info("SelfSubjectAccessReview"), json!({"spec": {}}));
        assert_eq!(
            e.message,
            ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
        let e = answer_err(
            &info("SubjectAccessReview"),
            json!({"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
        );
        assert_eq!(
            e.message,
            ".authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
        );
    }

    fn answer_err(info: &ResourceInfo, body: Value) -> ApiError {
        answer(info, Some("default"), body).unwrap_err()
    }
}

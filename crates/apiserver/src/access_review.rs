//! The reviews kube-apiserver answers without storing anything: who am I
//! (authentication.k8s.io/v1 SelfSubjectReview, `kubectl auth whoami`), may a user do something
//! (authorization.k8s.io/v1 SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview: `kubectl auth can-i`, controllers checking their permissions) and
//! what may I do (SelfSubjectRulesReview, `kubectl auth can-i --list`).
//!
//! Invariants: an access review is decided by the server's authorizer ([`crate::authorizer`])
//! for the user it names (the requester for a self review), with the authorizer's reason
//! (`RBAC: allowed by …`); a rules review lists `*` under `AlwaysAllow`, and the user's RBAC
//! rules in the namespace under RBAC (`system:masters` included, which holds `cluster-admin`); a review is checked as
//! kube checks it before it is answered (kube's 422 and 400 in kube's words); the answer is the
//! review sent, with kube's `status`, and `201 Created`.

use serde_json::{Value, json};

use crate::authorizer::AuthorizationMode;
use crate::cache::WatchCache;
use crate::rbac::{PolicyRule, User};
use crate::registry::ResourceInfo;
use crate::request_info::RequestInfo;
use crate::status::ApiError;
use crate::structural::Cause;

/// Answers a review of `info` created in namespace `ns` (for LocalSubjectAccessReviews).
pub(crate) fn answer(
    cache: &WatchCache,
    info: &ResourceInfo,
    ns: Option<&str>,
    body: Value,
) -> Result<Value, ApiError> {
    let mode = cache.authorization();
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
            let status = rules_review(cache, mode, namespace.unwrap_or(""));
            return Ok(json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": {}, "spec": {},
                             "status": status}));
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
    let user = if kind == "SelfSubjectAccessReview" {
        User::of(&crate::requester::user_info())
    } else {
        User {
            name: text(&spec, "user"),
            groups: crate::admission_policy::strings(&spec, "groups").iter().map(|g| g.to_string()).collect(),
        }
    };
    let decision = crate::authorizer::authorize(cache, mode, &user, &attributes(&spec));
    let mut status = serde_json::Map::new();
    status.insert("allowed".into(), decision.allowed.into());
    if !decision.reason.is_empty() {
        status.insert("reason".into(), decision.reason.into());
    }
    review.insert("status".into(), Value::Object(status));
    Ok(Value::Object(review))
}

fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The request a review's attributes describe.
fn attributes(spec: &Value) -> RequestInfo {
    if let Some(a) = spec.get("resourceAttributes").filter(|a| a.is_object()) {
        return RequestInfo {
            resource_request: true,
            verb: text(a, "verb"),
            group: text(a, "group"),
            version: text(a, "version"),
            namespace: text(a, "namespace"),
            resource: text(a, "resource"),
            subresource: text(a, "subresource"),
            name: text(a, "name"),
            ..Default::default()
        };
    }
    let a = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
    RequestInfo { verb: text(a, "verb"), path: text(a, "path"), ..Default::default() }
}

/// The `status` of a rules review of the requester in `namespace`.
fn rules_review(cache: &WatchCache, mode: AuthorizationMode, namespace: &str) -> Value {
    let user = User::of(&crate::requester::user_info());
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    // The privileged group's authorizer resolves no rules: a member lists what RBAC gives it.
    if mode == AuthorizationMode::AlwaysAllow {
        resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    let mut errors = Vec::new();
    if mode == AuthorizationMode::Rbac {
        let (rules, found_errors) = crate::rbac::rules_for(cache, &user, namespace);
        errors = found_errors;
        for rule in rules {
            if !rule.resources.is_empty() {
                let r = PolicyRule { non_resource_urls: Vec::new(), ..rule.clone() };
                resource_rules.push(r.to_value());
            }
            if !rule.non_resource_urls.is_empty() {
                let r =
                    PolicyRule { verbs: rule.verbs, non_resource_urls: rule.non_resource_urls, ..Default::default() };
                non_resource_rules.push(r.to_value());
            }
        }
    }
    let mut status =
        json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    if !errors.is_empty() {
        status["evaluationError"] = crate::rbac::aggregate(&errors).into();
    }
    status
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
        let answer = answer(&cache(), &info("SelfSubjectAccessReview"), None, asked).unwrap();
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

    fn cache() -> WatchCache {
        let registry = std::sync::Arc::new(crate::registry::Registry::with_defaults());
        WatchCache::new(registry, crate::storage::keys::KeyLayout::new("/registry"), Default::default())
    }

    fn answer_err(info: &ResourceInfo, body: Value) -> ApiError {
        answer(&cache(), info, Some("default"), body).unwrap_err()
    }
}

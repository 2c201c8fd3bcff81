//! What kube-apiserver does to a Mutating- or ValidatingWebhookConfiguration when it is
//! written: its `admissionregistration.k8s.io/v1` defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds: 10`, rule `scope: "*"`, service
//! `port: 443`, and `reinvocationPolicy: Never` for mutating webhooks) and its validation:
//! fully qualified unique webhook names, complete rules, known enumerations, a timeout of 1–30
//! seconds, a known AdmissionReview version, exactly one of an `https` URL or a Service, and
//! `matchConditions` that compile with `object`, `oldObject`, `request` and `authorizer`.
//!
//! Invariants: defaults only fill what is absent; a refusal is kube's 422 with one cause per
//! fault, at kube's field paths and in kube's words and order (name, rules, failurePolicy,
//! matchPolicy, sideEffects, timeoutSeconds, admissionReviewVersions, clientConfig,
//! reinvocationPolicy, matchConditions).

use serde_json::{Map, Value, json};

use crate::policy_validation::{check_expression, invalid, required, unsupported};
use crate::structural::Cause;

/// The AdmissionReview versions kube-apiserver speaks.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
/// The form kube names in URL errors.
const FORM: &str = "; desired format: https://host[/path]";

/// Fills the defaults of every webhook of a configuration; `mutating` for a
/// MutatingWebhookConfiguration.
pub(crate) fn default(obj: &mut Map<String, Value>, mutating: bool) {
    let Some(Value::Array(hooks)) = obj.get_mut("webhooks") else { return };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut fill = |k: &str, v: Value| {
            if hook.get(k).is_none_or(Value::is_null) {
                hook.insert(k.into(), v);
            }
        };
        fill("failurePolicy", json!("Fail"));
        fill("matchPolicy", json!("Equivalent"));
        fill("namespaceSelector", json!({}));
        fill("objectSelector", json!({}));
        fill("timeoutSeconds", json!(10));
        if mutating {
            fill("reinvocationPolicy", json!("Never"));
        }
        if let Some(Value::Array(rules)) = hook.get_mut("rules") {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                rule.entry("scope").or_insert_with(|| json!("*"));
            }
        }
        if let Some(Value::Object(service)) = hook.get_mut("clientConfig").and_then(|c| c.get_mut("service")) {
            service.entry("port").or_insert_with(|| json!(443));
        }
    }
}

/// The faults of a configuration; `mutating` for a MutatingWebhookConfiguration.
pub(crate) fn validate(obj: &Map<String, Value>, mutating: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    for (i, hook) in hooks.iter().enumerate() {
        let at = format!("webhooks[{i}]");
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() && seen.contains(&name) {
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", crate::structural::go_quote(name)),
                field: format!("{at}.name"),
            });
        }
        seen.push(name);
        check_webhook(hook, &at, mutating, &mut causes);
    }
    causes
}

fn check_webhook(hook: &Value, at: &str, mutating: bool, causes: &mut Vec<Cause>) {
    let text = |k: &str| hook.get(k).and_then(Value::as_str);
    let name = text("name").unwrap_or("");
    if name.is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    } else if !crate::object::valid_name(name) {
        causes.push(invalid(format!("{at}.name"), name, crate::object::SUBDOMAIN_MESSAGE));
    } else if name.split('.').count() < 3 {
        causes.push(invalid(
            format!("{at}.name"),
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
    for (j, rule) in hook.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        check_rule(rule, &format!("{at}.rules[{j}]"), causes);
    }
    let one_of = |k: &str, supported: &[&str], causes: &mut Vec<Cause>| {
        if let Some(v) = text(k)
            && !supported.contains(&v)
        {
            causes.push(unsupported(format!("{at}.{k}"), v, supported));
        }
    };
    one_of("failurePolicy", &["Fail", "Ignore"], causes);
    one_of("matchPolicy", &["Equivalent", "Exact"], causes);
    match text("sideEffects") {
        None => causes.push(required(format!("{at}.sideEffects"), "must specify one of None, NoneOnDryRun")),
        Some(_) => one_of("sideEffects", &["None", "NoneOnDryRun"], causes),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {t}: the timeout value must be between 1 and 30 seconds"),
            field: format!("{at}.timeoutSeconds"),
        });
    }
    let versions: Vec<&str> = hook
        .get("admissionReviewVersions")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(required(format!("{at}.admissionReviewVersions"), "must specify one of v1, v1beta1"));
    } else if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        let listed: Vec<String> = versions.iter().map(|v| crate::structural::go_quote(v)).collect();
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: []string{{{}}}: must include at least one of v1, v1beta1",
                listed.join(", ")
            ),
            field: format!("{at}.admissionReviewVersions"),
        });
    }
    check_client_config(hook.get("clientConfig").unwrap_or(&Value::Null), &format!("{at}.clientConfig"), causes);
    if mutating {
        one_of("reinvocationPolicy", &["Never", "IfNeeded"], causes);
    }
    let names = ["object", "oldObject", "request", "authorizer"];
    for (j, c) in hook.get("matchConditions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{at}.matchConditions[{j}]");
        if c.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        }
        let expression = c.get("expression").and_then(Value::as_str).unwrap_or("").trim();
        if expression.is_empty() {
            causes.push(required(format!("{at}.expression"), ""));
        } else {
            check_expression(expression, &names, "bool", format!("{at}.expression"), causes);
        }
    }
}

/// A `RuleWithOperations`: operations, groups, versions and resources are required.
fn check_rule(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let list = |k: &str| rule.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let operations = list("operations");
    if operations.is_empty() {
        causes.push(required(format!("{at}.operations"), ""));
    }
    let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (k, op) in operations.iter().enumerate() {
        let op = op.as_str().unwrap_or("");
        if !supported.contains(&op) {
            causes.push(unsupported(format!("{at}.operations[{k}]"), op, &supported));
        }
    }
    for k in ["apiGroups", "apiVersions", "resources"] {
        if list(k).is_empty() {
            causes.push(required(format!("{at}.{k}"), ""));
        }
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        causes.push(unsupported(format!("{at}.scope"), scope, &["*", "Cluster", "Namespaced"]));
    }
}

/// Exactly one of an `https` URL (with a host, no user, fragment nor query) or a Service (with
/// a name, a namespace, a valid port and an absolute path).
fn check_client_config(cc: &Value, at: &str, causes: &mut Vec<Cause>) {
    match (cc.get("url").and_then(Value::as_str), cc.get("service").filter(|s| !s.is_null())) {
        (Some(url), None) => check_url(url, &format!("{at}.url"), causes),
        (None, Some(service)) => {
            let at = format!("{at}.service");
            let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("");
            if text("name").is_empty() {
                causes.push(required(format!("{at}.name"), "service name is required"));
            }
            if text("namespace").is_empty() {
                causes.push(required(format!("{at}.namespace"), "service namespace is required"));
            }
            if let Some(port) = service.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&port)
            {
                causes.push(Cause {
                    reason: "FieldValueInvalid",
                    message: format!(
                        "Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive"
                    ),
                    field: format!("{at}.port"),
                });
            }
            let path = text("path");
            if path == "//" {
                causes.push(invalid(format!("{at}.path"), path, "segment[0] may not be empty"));
            } else if !path.is_empty() && !path.starts_with('/') {
                causes.push(invalid(format!("{at}.path"), path, "must start with a '/'"));
            }
        }
        _ => causes.push(required(at.to_string(), "exactly one of url or service is required")),
    }
}

/// kube's checks of a webhook URL, in its order.
fn check_url(url: &str, at: &str, causes: &mut Vec<Cause>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if url.contains("://") { rest.split('/').next().unwrap_or("") } else { "" };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        causes.push(invalid(at.to_string(), host, &format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        causes.push(invalid(at.to_string(), user, "user information is not permitted in the URL"));
    }
    if !fragment.is_empty() {
        causes.push(invalid(at.to_string(), fragment, "fragments are not permitted in the URL"));
    }
    if scheme != "https" {
        causes.push(invalid(at.to_string(), scheme, &format!("'https' is the only allowed URL scheme{FORM}")));
    }
    if !query.is_empty() {
        causes.push(invalid(at.to_string(), query, "query parameters are not permitted in the URL"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(hook: Value, mutating: bool) -> Vec<String> {
        let obj = json!({"metadata": {"name": "c"}, "webhooks": [hook]});
        validate(obj.as_object().unwrap(), mutating)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn defaults_fill_what_kube_fills() {
        let mut obj = json!({"webhooks": [{"name": "a.b.c", "rules": [{"operations": ["CREATE"]}],
            "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]});
        default(obj.as_object_mut().unwrap(), true);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn faults_are_named_as_kube_names_them() {
        let good = json!({"name": "deny.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "clientConfig": {"url": "https://127.0.0.1:8443/validate"}});
        assert!(messages(good.clone(), false).is_empty());
        let mut bad = good.clone();
        bad["name"] = json!("deny.example");
        bad["timeoutSeconds"] = json!(31);
        bad["sideEffects"] = json!("Some");
        bad["clientConfig"] = json!({"url": "http://127.0.0.1/x?y=1"});
        assert_eq!(
            messages(bad, false),
            [
                "webhooks[0].name: Invalid value: \"deny.example\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            ]
        );
        let mut missing = good;
        missing.as_object_mut().unwrap().remove("sideEffects");
        missing["admissionReviewVersions"] = json!([]);
        missing["clientConfig"] = json!({});
        assert_eq!(
            messages(missing, true),
            [
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ]
        );
    }
}

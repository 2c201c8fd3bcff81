//! What kube-apiserver does to a Mutating- or ValidatingWebhookConfiguration when it is
//! written: its `admissionregistration.k8s.io/v1` defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds: 10`, rule `scope: "*"`, service
//! `port: 443`, and `reinvocationPolicy: Never` for mutating webhooks) and its validation:
//! fully qualified unique webhook names, complete rules, known enumerations, a timeout of 1–30
//! seconds, a known AdmissionReview version, exactly one of an `https` URL or a Service, and
//! `matchConditions` that compile with `object`, `oldObject`, `request` and `authorizer`.
//!
//! Invariants: defaults only fill what is absent; a refusal is kube's 422 with one cause per
//! fault, at kube's field paths and in kube's words and order (per webhook: name, rules,
//! failurePolicy, matchPolicy, sideEffects, timeoutSeconds, reinvocationPolicy, clientConfig,
//! matchConditions, then admissionReviewVersions and a duplicate name).

use serde_json::{Map, Value, json};

use crate::policy_validation::{check_match_conditions, duplicate, invalid, required, unsupported};
use crate::structural::Cause;

/// The AdmissionReview versions kube-apiserver speaks.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
/// The form kube names in URL errors.
pub(crate) const FORM: &str = "; desired format: https://host[/path]";

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
        check_webhook(hook, &at, mutating, &mut causes);
        check_review_versions(hook, &at, &mut causes);
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            if seen.contains(&name) {
                causes.push(duplicate(format!("{at}.name"), name));
            }
            seen.push(name);
        }
    }
    causes
}

fn check_webhook(hook: &Value, at: &str, mutating: bool, causes: &mut Vec<Cause>) {
    let text = |k: &str| hook.get(k).and_then(Value::as_str);
    let name = text("name").unwrap_or("");
    if name.is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    } else if let Some(fault) = subdomain_fault(name) {
        causes.push(invalid(format!("{at}.name"), name, fault));
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
    for k in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(k).filter(|s| !s.is_null()) {
            check_selector(sel, &format!("{at}.{k}"), causes);
        }
    }
    if mutating {
        // Go lists a set's values sorted.
        one_of("reinvocationPolicy", &["IfNeeded", "Never"], causes);
    }
    check_client_config(hook.get("clientConfig").unwrap_or(&Value::Null), &format!("{at}.clientConfig"), causes);
    let names = ["object", "oldObject", "request", "authorizer"];
    check_match_conditions(hook.get("matchConditions"), &format!("{at}.matchConditions"), &names, causes);
}

/// At least one AdmissionReview version the server speaks.
fn check_review_versions(hook: &Value, at: &str, causes: &mut Vec<Cause>) {
    let versions = crate::admission_policy::strings(hook, "admissionReviewVersions");
    if versions.is_empty() {
        causes.push(required(format!("{at}.admissionReviewVersions"), "must specify one of v1, v1beta1"));
    } else {
        check_versions(&versions, &format!("{at}.admissionReviewVersions"), causes);
    }
}

/// A list of review versions (AdmissionReview, ConversionReview): no duplicates, DNS-1035
/// labels, and one of `v1` and `v1beta1` among them.
pub(crate) fn check_versions(versions: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            causes.push(invalid(format!("{at}[{i}]"), v, "duplicate version"));
            continue;
        }
        seen.push(v);
        for fault in crate::cel_format::dns1035_label(v) {
            causes.push(invalid(format!("{at}[{i}]"), v, &fault));
        }
    }
    if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: must include at least one of v1, v1beta1", go_strings(versions)),
            field: at.to_string(),
        });
    }
}

/// kube's checks of a `LabelSelector` (`ValidateLabelSelector`): qualified keys and valid values
/// in `matchLabels`, and each expression's operator, values and key.
pub(crate) fn check_selector(sel: &Value, at: &str, causes: &mut Vec<Cause>) {
    crate::object_meta::labels(sel.get("matchLabels"), &format!("{at}.matchLabels"), causes);
    for (i, e) in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{at}.matchExpressions[{i}]");
        let values = crate::admission_policy::strings(e, "values");
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => {
                causes.push(required(format!("{at}.values"), "must be specified when `operator` is 'In' or 'NotIn'"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause {
                reason: "FieldValueForbidden",
                message: "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
                field: format!("{at}.values"),
            }),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(invalid(format!("{at}.operator"), other, "not a valid selector operator")),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for fault in crate::cel_format::qualified_name(key) {
            causes.push(invalid(format!("{at}.key"), key, &fault));
        }
        for (j, v) in values.iter().enumerate() {
            for fault in crate::cel_format::label_value(v) {
                causes.push(invalid(format!("{at}.values[{j}]"), v, &fault));
            }
        }
    }
}

/// A list of strings as kube's field errors print it (JSON, since v1.34).
pub(crate) fn go_strings(items: &[&str]) -> String {
    crate::structural::go_json(&serde_json::json!(items))
}

/// Why `name` is not a DNS subdomain (RFC 1123), in kube's words.
fn subdomain_fault(name: &str) -> Option<&'static str> {
    if name.len() > 253 {
        Some("must be no more than 253 characters")
    } else if !crate::object::valid_name(name) || name.split('.').any(str::is_empty) {
        Some(crate::object::SUBDOMAIN_MESSAGE)
    } else {
        None
    }
}

/// A `RuleWithOperations`, as kube's `validateRuleWithOperations` checks it.
fn check_rule(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let list = |k: &str| crate::admission_policy::strings(rule, k);
    let wildcard_with_others = |items: &[&str]| items.len() > 1 && items.contains(&"*");
    let operations = list("operations");
    if operations.is_empty() {
        causes.push(required(format!("{at}.operations"), ""));
    }
    if wildcard_with_others(&operations) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {}: if '*' is present, must not specify other operations",
                go_strings(&operations)
            ),
            field: format!("{at}.operations"),
        });
    }
    let supported = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (k, op) in operations.iter().enumerate() {
        if !supported.contains(op) {
            causes.push(unsupported(format!("{at}.operations[{k}]"), op, &supported));
        }
    }
    let many = |k: &str, what: &str, causes: &mut Vec<Cause>| {
        let items = list(k);
        if items.is_empty() {
            causes.push(required(format!("{at}.{k}"), ""));
        }
        if wildcard_with_others(&items) {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!(
                    "Invalid value: {}: if '*' is present, must not specify other {what}",
                    go_strings(&items)
                ),
                field: format!("{at}.{k}"),
            });
        }
        items
    };
    many("apiGroups", "API groups", causes);
    let versions = many("apiVersions", "API versions", causes);
    for (k, v) in versions.iter().enumerate() {
        if v.is_empty() {
            causes.push(required(format!("{at}.apiVersions[{k}]"), ""));
        }
    }
    check_resources(&list("resources"), &format!("{at}.resources"), causes);
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        causes.push(unsupported(format!("{at}.scope"), scope, &["*", "Cluster", "Namespaced"]));
    }
}

/// Resources with subresources (`pods`, `pods/status`, `*/scale`, `*`, `*/*`), as kube's
/// `validateResources` checks them.
fn check_resources(resources: &[&str], at: &str, causes: &mut Vec<Cause>) {
    if resources.is_empty() {
        causes.push(required(at.to_string(), ""));
    }
    let (mut any_sub_of, mut any_res_with) = (Vec::new(), Vec::new());
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, r) in resources.iter().enumerate() {
        if r.is_empty() {
            causes.push(required(format!("{at}[{i}]"), ""));
            continue;
        }
        double |= *r == "*/*";
        single |= *r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            plain = *r != "*";
            continue;
        };
        if any_sub_of.contains(&res) {
            causes.push(invalid(format!("{at}[{i}]"), r, &format!("if '{res}/*' is present, must not specify {r}")));
        }
        if any_res_with.contains(&sub) {
            causes.push(invalid(format!("{at}[{i}]"), r, &format!("if '*/{sub}' is present, must not specify {r}")));
        }
        if sub == "*" {
            any_sub_of.push(res);
        }
        if res == "*" {
            any_res_with.push(sub);
        }
    }
    let list_fault = |detail: &str| Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {}: {detail}", go_strings(resources)),
        field: at.to_string(),
    };
    if resources.len() > 1 && double {
        causes.push(list_fault("if '*/*' is present, must not specify other resources"));
    }
    if single && plain {
        causes.push(list_fault("if '*' is present, must not specify other resources without subresources"));
    }
}

/// Exactly one of an `https` URL or a Service, as kube checks them.
pub(crate) fn check_client_config(cc: &Value, at: &str, causes: &mut Vec<Cause>) {
    match (cc.get("url").and_then(Value::as_str), cc.get("service").filter(|s| !s.is_null())) {
        (Some(url), None) => check_url(url, &format!("{at}.url"), causes),
        (None, Some(service)) => check_service(service, &format!("{at}.service"), causes),
        _ => causes.push(required(at.to_string(), "exactly one of url or service is required")),
    }
}

/// kube's checks of a Service reference. kube passes the Service's name and namespace to its
/// check in swapped order, so a missing namespace is reported at `name` and the other way round;
/// clients see that, so it is kept.
fn check_service(service: &Value, at: &str, causes: &mut Vec<Cause>) {
    let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("");
    if text("namespace").is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    }
    if text("name").is_empty() {
        causes.push(required(format!("{at}.namespace"), ""));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive"),
            field: format!("{at}.port"),
        });
    }
    let path = text("path");
    if path.is_empty() || path == "/" {
        return;
    }
    let field = format!("{at}.path");
    if path == "//" {
        causes.push(invalid(field, path, "segment[0] may not be empty"));
        return;
    }
    if !path.starts_with('/') {
        causes.push(invalid(field.clone(), path, "must start with a '/'"));
    }
    let steps = path.strip_prefix('/').unwrap_or(path);
    let steps = steps.strip_suffix('/').unwrap_or(steps);
    for (i, step) in steps.split('/').enumerate() {
        if step.is_empty() {
            causes.push(invalid(field.clone(), path, &format!("segment[{i}] may not be empty")));
        } else if let Some(fault) = subdomain_fault(step) {
            causes.push(invalid(field.clone(), path, &format!("segment[{i}]: {fault}")));
        }
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
    if scheme != "https" {
        causes.push(invalid(at.to_string(), scheme, &format!("'https' is the only allowed URL scheme{FORM}")));
    }
    if host.is_empty() {
        causes.push(invalid(at.to_string(), host, &format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        causes.push(invalid(at.to_string(), user, "user information is not permitted in the URL"));
    }
    if !fragment.is_empty() {
        causes.push(invalid(at.to_string(), fragment, "fragments are not permitted in the URL"));
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
        let mut rules = good.clone();
        rules["rules"] = json!([{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"],
                                 "resources": ["*", "pods", "pods/*", "pods/status"]}]);
        rules["clientConfig"] = json!({"service": {"name": "hook", "path": "/a//b"}});
        assert_eq!(
            messages(rules, false),
            [
                "webhooks[0].rules[0].operations: Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other operations",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].resources[3]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
                "webhooks[0].rules[0].resources: Invalid value: [\"*\",\"pods\",\"pods/*\",\"pods/status\"]: if '*' is present, must not specify other resources without subresources",
                "webhooks[0].clientConfig.service.name: Required value",
                "webhooks[0].clientConfig.service.path: Invalid value: \"/a//b\": segment[1] may not be empty",
            ]
        );
        let mut missing = good;
        missing.as_object_mut().unwrap().remove("sideEffects");
        missing["admissionReviewVersions"] = json!([]);
        missing["clientConfig"] = json!({});
        missing["reinvocationPolicy"] = json!("Always");
        assert_eq!(
            messages(missing, true),
            [
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            ]
        );
    }

    #[test]
    fn selectors_and_review_versions_are_checked_as_kube_checks_them() {
        let mut hook = json!({"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1", "v1", "V2"],
            "clientConfig": {"url": "https://x/y"},
            "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Is"},
                                                      {"key": "tier", "operator": "In"},
                                                      {"key": "bad key", "operator": "Exists", "values": ["x"]}]},
            "objectSelector": {"matchLabels": {"app": "bad value!"}}});
        let found = messages(hook.clone(), false);
        assert_eq!(found.len(), 7, "{found:#?}");
        assert!(
            found.contains(
                &"webhooks[0].admissionReviewVersions[1]: Invalid value: \"v1\": duplicate version".to_string()
            )
        );
        assert!(
            found
                .iter()
                .any(|m| m
                    .starts_with("webhooks[0].admissionReviewVersions[2]: Invalid value: \"V2\": a DNS-1035 label"))
        );
        assert!(found.contains(&"webhooks[0].namespaceSelector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid selector operator".to_string()));
        assert!(found.contains(&"webhooks[0].namespaceSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_string()));
        assert!(found.contains(&"webhooks[0].namespaceSelector.matchExpressions[2].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_string()));
        assert!(found.iter().any(|m| m.starts_with("webhooks[0].namespaceSelector.matchExpressions[2].key: Invalid value: \"bad key\": name part must consist of")));
        assert!(found.iter().any(|m| m.starts_with(
            "webhooks[0].objectSelector.matchLabels: Invalid value: \"bad value!\": a valid label must be"
        )));
        hook["admissionReviewVersions"] = json!(["v1"]);
        hook["namespaceSelector"] = json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]});
        hook["objectSelector"] = json!({"matchLabels": {"app": "web"}});
        assert_eq!(messages(hook, false), Vec::<String>::new());
    }
}

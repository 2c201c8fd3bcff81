//! kube-apiserver v1.35's rules for FlowSchemas and PriorityLevelConfigurations (their metadata
//! is judged by [`crate::object_meta`]).
//!
//! Invariants: each check is kube's, with its field path, cause reason and message, in kube's
//! order; an update is judged as a create is (kube has no rules between versions of these
//! objects); a `status` write is judged by its conditions alone; the mandatory objects
//! (`exempt` and `catch-all`) must hold the specs the server installs
//! ([`crate::flowcontrol_bootstrap`]), but for the two numbers of the `exempt` level's
//! `spec.exempt`. Specs are judged after v1's defaults ([`crate::flowcontrol::default`]).

use serde_json::{Map, Value};

use crate::admission_policy::strings;
use crate::flowcontrol::{FLOW_SCHEMAS, flow_schema_spec_json, go_string, priority_level_spec_json, same_spec, text};
use crate::pod_spec_validation::list;
use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{required, unsupported_shown as not_supported};
use crate::registry::ResourceInfo;
use crate::structural::{Cause, go_json, go_quote};
use crate::workload_validation::invalid_value;

const VERBS: [&str; 9] = ["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];
const MAX_PRECEDENCE: i64 = 10_000;
const MAX_QUEUES: i64 = 10_000_000;
const MAX_HASH_BITS: f64 = 60.0;
/// The annotation v1beta3 kept zero shares under, which a v1 object may not carry.
const PRESERVE_ZERO_SHARES: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// The causes of `obj`, a FlowSchema or PriorityLevelConfiguration; `status` for a `status` write.
pub(crate) fn validate(info: &ResourceInfo, obj: &Map<String, Value>, status: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if !status {
        if info.plural == FLOW_SCHEMAS {
            flow_schema(name, spec, &mut causes);
        } else {
            let annotations = obj.get("metadata").and_then(|m| m.get("annotations"));
            if annotations.and_then(|a| a.get(PRESERVE_ZERO_SHARES)).is_some() {
                causes.push(forbidden(
                    "metadata.annotations".into(),
                    &format!("annotation '{PRESERVE_ZERO_SHARES}' is forbidden"),
                ));
            }
            priority_level(name, spec, &mut causes);
        }
    }
    let conditions = obj.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or("");
        if seen.contains(&kind) {
            let field = format!("status.conditions[{i}].type");
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", go_string(kind)),
                field,
            });
        }
        seen.push(kind);
        if kind.is_empty() {
            causes.push(required(format!("status.conditions[{i}].type"), "must not be empty"));
        }
    }
    causes
}

fn flow_schema(name: &str, spec: &Value, causes: &mut Vec<Cause>) {
    let precedence = spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
    if precedence <= 0 {
        causes.push(number("spec.matchingPrecedence".into(), precedence, "must be a positive value"));
    }
    if precedence > MAX_PRECEDENCE {
        causes.push(number("spec.matchingPrecedence".into(), precedence, "must not be greater than 10000"));
    }
    if precedence == 1 && name != "exempt" {
        causes.push(number(
            "spec.matchingPrecedence".into(),
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = spec.get("distinguisherMethod").filter(|d| d.is_object()) {
        let kind = text(method, "type");
        if !matches!(kind, "ByUser" | "ByNamespace") {
            let shown = crate::structural::go_struct(&[("Type", go_string(kind))]);
            causes.push(not_supported("spec.distinguisherMethod.type".into(), &shown, &["ByNamespace", "ByUser"]));
        }
    }
    let level = spec.get("priorityLevelConfiguration").map(|p| text(p, "name")).unwrap_or("");
    if level.is_empty() {
        causes.push(required("spec.priorityLevelConfiguration.name".into(), "must reference a priority level"));
    }
    for fault in crate::cel_format::dns1123_subdomain(level).into_iter().filter(|_| !level.is_empty()) {
        causes.push(invalid_value("spec.priorityLevelConfiguration.name", &go_quote(level), &fault));
    }
    for (i, rule) in list(spec, "rules").iter().enumerate() {
        policy_rules(rule, &format!("spec.rules[{i}]"), causes);
    }
    if let Some(fixed) = crate::flowcontrol_bootstrap::mandatory_flow_schema(name)
        && !same_spec(spec, &fixed["spec"])
    {
        causes.push(invalid_value(
            "spec",
            &flow_schema_spec_json(spec),
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
}

fn policy_rules(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let subjects = list(rule, "subjects");
    if subjects.is_empty() {
        causes.push(required(format!("{at}.subjects"), "subjects must contain at least one value"));
    }
    for (i, s) in subjects.iter().enumerate() {
        subject(s, &format!("{at}.subjects[{i}]"), causes);
    }
    let (resource, non_resource) = (list(rule, "resourceRules"), list(rule, "nonResourceRules"));
    if resource.is_empty() && non_resource.is_empty() {
        causes.push(required(at.into(), "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, r) in resource.iter().enumerate() {
        resource_rule(r, &format!("{at}.resourceRules[{i}]"), causes);
    }
    for (i, r) in non_resource.iter().enumerate() {
        non_resource_rule(r, &format!("{at}.nonResourceRules[{i}]"), causes);
    }
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(Value::is_object)
}

fn subject(s: &Value, at: &str, causes: &mut Vec<Cause>) {
    let others = |causes: &mut Vec<Cause>, members: &[&str]| {
        for &m in members {
            if present(s, m) {
                let detail = match m {
                    "user" => "user is forbidden when subject kind is not 'User'",
                    "group" => "group is forbidden when subject kind is not 'Group'",
                    _ => "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
                };
                causes.push(forbidden(format!("{at}.{m}"), detail));
            }
        }
    };
    match text(s, "kind") {
        "ServiceAccount" => {
            match s.get("serviceAccount").filter(|a| a.is_object()) {
                None => causes.push(required(
                    format!("{at}.serviceAccount"),
                    "serviceAccount is required when subject kind is 'ServiceAccount'",
                )),
                Some(account) => service_account(account, at, causes),
            }
            others(causes, &["user", "group"]);
        }
        "User" => {
            match s.get("user").filter(|u| u.is_object()) {
                None => causes.push(required(format!("{at}.user"), "user is required when subject kind is 'User'")),
                Some(u) if text(u, "name").is_empty() => causes.push(required(format!("{at}.user.name"), "")),
                Some(_) => {}
            }
            others(causes, &["serviceAccount", "group"]);
        }
        "Group" => {
            match s.get("group").filter(|g| g.is_object()) {
                None => causes.push(required(format!("{at}.group"), "group is required when subject kind is 'Group'")),
                Some(g) if text(g, "name").is_empty() => causes.push(required(format!("{at}.group.name"), "")),
                Some(_) => {}
            }
            others(causes, &["serviceAccount", "user"]);
        }
        kind => {
            causes.push(not_supported(format!("{at}.kind"), &go_string(kind), &["Group", "ServiceAccount", "User"]))
        }
    }
}

/// A service account subject's `serviceAccount` (at `at`).
fn service_account(account: &Value, at: &str, causes: &mut Vec<Cause>) {
    let name = text(account, "name");
    if name.is_empty() {
        causes.push(required(format!("{at}.serviceAccount.name"), ""));
    } else if name != "*" {
        for fault in crate::cel_format::dns1123_subdomain(name) {
            causes.push(invalid_value(&format!("{at}.serviceAccount.name"), &go_quote(name), &fault));
        }
    }
    let namespace = text(account, "namespace");
    if namespace.is_empty() {
        causes.push(required(format!("{at}.serviceAccount.namespace"), "must specify namespace for service account"));
    }
    for fault in crate::cel_format::dns1123_label(namespace).into_iter().filter(|_| !namespace.is_empty()) {
        causes.push(invalid_value(&format!("{at}.serviceAccount.namespace"), &go_quote(namespace), &fault));
    }
}

fn verbs(r: &Value, at: &str, causes: &mut Vec<Cause>) {
    let verbs = strings(r, "verbs");
    let shown = go_json(r.get("verbs").unwrap_or(&Value::Null));
    if verbs.is_empty() {
        causes.push(required(format!("{at}.verbs"), "verbs must contain at least one value"));
    } else if verbs.contains(&"*") {
        if verbs.len() > 1 {
            causes.push(invalid_value(
                &format!("{at}.verbs"),
                &shown,
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if !verbs.iter().all(|v| VERBS.contains(v)) {
        causes.push(not_supported(format!("{at}.verbs"), &shown, &VERBS));
    }
}

/// A list that holds `*` holds nothing else: the cause when it does.
fn lone_wildcard(r: &Value, key: &str, at: &str, what: &str, causes: &mut Vec<Cause>) {
    let items = strings(r, key);
    if items.len() > 1 && items.contains(&"*") {
        let shown = go_json(r.get(key).unwrap_or(&Value::Null));
        causes.push(invalid_value(
            &format!("{at}.{key}"),
            &shown,
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn resource_rule(r: &Value, at: &str, causes: &mut Vec<Cause>) {
    verbs(r, at, causes);
    if strings(r, "apiGroups").is_empty() {
        causes.push(required(format!("{at}.apiGroups"), "resource rules must supply at least one api group"));
    } else {
        lone_wildcard(r, "apiGroups", at, "api groups", causes);
    }
    if strings(r, "resources").is_empty() {
        causes.push(required(format!("{at}.resources"), "resource rules must supply at least one resource"));
    } else {
        lone_wildcard(r, "resources", at, "resources", causes);
    }
    let namespaces = strings(r, "namespaces");
    let cluster = r.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
    if namespaces.is_empty() && !cluster {
        causes.push(required(
            format!("{at}.namespaces"),
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.contains(&"*") {
        lone_wildcard(r, "namespaces", at, "namespaces", causes);
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for fault in crate::cel_format::dns1123_label(ns) {
                causes.push(invalid_value(
                    &format!("{at}.namespaces[{i}]"),
                    &go_quote(ns),
                    &format!("each member of this list must be '*' or a DNS-1123 label; {fault}"),
                ));
            }
        }
    }
}

fn non_resource_rule(r: &Value, at: &str, causes: &mut Vec<Cause>) {
    verbs(r, at, causes);
    let urls = strings(r, "nonResourceURLs");
    if urls.is_empty() {
        causes.push(required(format!("{at}.nonResourceURLs"), "nonResourceURLs must contain at least one value"));
    } else if urls.contains(&"*") {
        lone_wildcard(r, "nonResourceURLs", at, "non-resource URLs", causes);
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(fault) = url_fault(url) {
                causes.push(invalid_value(&format!("{at}.nonResourceURLs[{i}]"), &go_quote(url), fault));
            }
        }
    }
}

/// What is wrong with a non-resource URL of a rule, if anything.
fn url_fault(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(' ') {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = url.matches('*').count();
    if stars > 1 || (stars == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn priority_level(name: &str, spec: &Value, causes: &mut Vec<Cause>) {
    let kind = text(spec, "type");
    if (name == "exempt") != (kind == "Exempt") {
        causes.push(invalid_value(
            "spec.type",
            &go_string(kind),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if present(spec, "limited") {
                causes.push(forbidden("spec.limited".into(), "must be nil if the type is not Limited"));
            }
            if let Some(exempt) = spec.get("exempt").filter(|e| e.is_object()) {
                let at = "spec.exempt";
                non_negative(exempt, "nominalConcurrencyShares", at, "must be a non-negative integer", causes);
                percent(exempt, "lendablePercent", at, causes);
            }
        }
        "Limited" => {
            if present(spec, "exempt") {
                causes.push(forbidden("spec.exempt".into(), "must be nil if the type is Limited"));
            }
            match spec.get("limited").filter(|l| l.is_object()) {
                None => causes.push(required("spec.limited".into(), "must not be empty when type is Limited")),
                Some(limited) => limited_level(limited, causes),
            }
        }
        other => causes.push(not_supported("spec.type".into(), &go_string(other), &["Exempt", "Limited"])),
    }
    let fixed = crate::flowcontrol_bootstrap::mandatory_priority_level(name);
    if let Some(mut fixed_spec) = fixed.map(|f| f["spec"].clone()) {
        let detail = if name == "exempt" {
            // Only the exempt block's numbers may differ.
            fixed_spec["exempt"] = spec.get("exempt").cloned().unwrap_or(Value::Null);
            "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value".to_string()
        } else {
            format!("spec of '{name}' must equal the fixed value")
        };
        if !same_spec(spec, &fixed_spec) {
            causes.push(invalid_value("spec", &priority_level_spec_json(spec), &detail));
        }
    }
}

fn non_negative(v: &Value, key: &str, at: &str, detail: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n < 0) {
        causes.push(number(format!("{at}.{key}"), n, detail));
    }
}

fn percent(v: &Value, key: &str, at: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| !(0..=100).contains(n)) {
        causes.push(number(format!("{at}.{key}"), n, "must be between 0 and 100, inclusive"));
    }
}

fn limited_level(limited: &Value, causes: &mut Vec<Cause>) {
    let at = "spec.limited";
    non_negative(limited, "nominalConcurrencyShares", at, "must be a non-negative integer", causes);
    let response = limited.get("limitResponse").unwrap_or(&Value::Null);
    let queuing = response.get("queuing").filter(|q| q.is_object());
    match text(response, "type") {
        "Reject" if queuing.is_some() => causes.push(forbidden(
            format!("{at}.limitResponse.queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        "Reject" => {}
        "Queue" => match queuing {
            None => causes.push(required(
                format!("{at}.limitResponse.queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing_rules(q, &format!("{at}.limitResponse.queuing"), causes),
        },
        other => {
            causes.push(not_supported(format!("{at}.limitResponse.type"), &go_string(other), &["Queue", "Reject"]))
        }
    }
    percent(limited, "lendablePercent", at, causes);
    non_negative(limited, "borrowingLimitPercent", at, "if specified, must be a non-negative integer", causes);
}

fn queuing_rules(q: &Value, at: &str, causes: &mut Vec<Cause>) {
    let get = |k: &str| q.get(k).and_then(Value::as_i64).unwrap_or(0);
    let (queues, hand, length) = (get("queues"), get("handSize"), get("queueLengthLimit"));
    if length <= 0 {
        causes.push(number(format!("{at}.queueLengthLimit"), length, "must be positive"));
    }
    if queues <= 0 {
        causes.push(number(format!("{at}.queues"), queues, "must be positive"));
    } else if queues > MAX_QUEUES {
        causes.push(number(format!("{at}.queues"), queues, "must not be greater than 10000000"));
    }
    if hand <= 0 {
        causes.push(number(format!("{at}.handSize"), hand, "must be positive"));
    } else if hand > queues {
        causes.push(number(format!("{at}.handSize"), hand, &format!("should not be greater than queues ({queues})")));
    } else if ((queues as f64).log2() * hand as f64).ceil() > MAX_HASH_BITS {
        causes.push(number(
            format!("{at}.handSize"),
            hand,
            &format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_take_only_a_trailing_wildcard() {
        assert_eq!(url_fault("/healthz/*"), None);
        assert_eq!(url_fault("/"), None);
        assert_eq!(url_fault("/health*"), Some("wildcard can only do suffix matching"));
        assert_eq!(url_fault("/*/x"), Some("wildcard can only do suffix matching"));
        assert_eq!(url_fault("healthz"), Some("must start with slash"));
        assert_eq!(url_fault("/a//b"), Some("must not contain double slash"));
    }

    #[test]
    fn a_hand_needs_at_most_sixty_bits() {
        let causes = |queues: i64, hand: i64| {
            let mut c = Vec::new();
            queuing_rules(
                &serde_json::json!({"queues": queues, "handSize": hand, "queueLengthLimit": 50}),
                "q",
                &mut c,
            );
            c.into_iter().map(|c| c.message).collect::<Vec<_>>()
        };
        assert!(causes(64, 10).is_empty());
        assert_eq!(
            causes(64, 11),
            ["Invalid value: 11: required entropy bits of deckSize 64 and handSize 11 should not be greater than 60"]
        );
        assert!(causes(128, 8).is_empty());
        assert_eq!(causes(4, 5), ["Invalid value: 5: should not be greater than queues (4)"]);
    }
}

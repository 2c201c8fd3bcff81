//! The checks kube-apiserver makes of a ValidatingAdmissionPolicy and its bindings when they
//! are written: every expression must compile and use only the names a policy declares
//! (`object`, `oldObject`, `request`, `namespaceObject`, `variables`, `authorizer`, and `params`
//! when the policy has a `paramKind`), a validation must give a bool and a message expression a
//! string where their types are known, and the enumerations (`failurePolicy`, `reason`,
//! `validationActions`) hold known values.
//!
//! Invariants: a refusal is kube's 422 with one cause per fault, at kube's field paths
//! (`spec.validations[0].expression: Invalid value: "<expression>": compilation failed: ERROR:
//! <input>:1:1: undeclared reference to 'objec' (in container '')…`); nothing is refused where
//! the types are open (`object` and the others are `dyn`).

use serde_json::{Map, Value};

use crate::structural::{Cause, go_quote};

/// Checks a ValidatingAdmissionPolicy (`binding` false) or a binding (`binding` true).
pub(crate) fn validate(obj: &Map<String, Value>, binding: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if binding {
        check_binding(&spec, &mut causes);
    } else {
        let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
        check_policy(&spec, name, &mut causes);
    }
    causes
}

/// A `Required value` cause.
pub(crate) fn required(field: String, detail: &str) -> Cause {
    let message = if detail.is_empty() { "Required value".into() } else { format!("Required value: {detail}") };
    Cause { reason: "FieldValueRequired", message, field }
}

/// An `Unsupported value` cause listing the supported values.
pub(crate) fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    unsupported_shown(field, &go_quote(value), supported)
}

/// An `Unsupported value` cause for a value already written as kube prints it (a struct, a list,
/// a string of a named Go type).
pub(crate) fn unsupported_shown(field: String, shown: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    Cause {
        reason: "FieldValueNotSupported",
        message: format!("Unsupported value: {shown}: supported values: {}", list.join(", ")),
        field,
    }
}

/// A `Duplicate value` cause.
pub(crate) fn duplicate(field: String, value: &str) -> Cause {
    Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {}", go_quote(value)), field }
}

/// An `Invalid value` cause.
pub(crate) fn invalid(field: String, value: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {}: {detail}", go_quote(value)), field }
}

/// `expression` compiled and type-checked where only `names` are declared.
fn checked(expression: &str, names: &[&str]) -> Result<crate::cel_check::Ty<'static>, String> {
    crate::validation_rules::compile(expression).and_then(|p| crate::cel_check::check_declared(&p, expression, names))
}

/// `matchConditions` (at `at`): each with an expression that compiles to a bool with only
/// `names` declared, and a name.
pub(crate) fn check_match_conditions(conditions: Option<&Value>, at: &str, names: &[&str], causes: &mut Vec<Cause>) {
    let conditions = conditions.and_then(Value::as_array).cloned().unwrap_or_default();
    if conditions.len() > 64 {
        causes.push(Cause {
            reason: "FieldValueTooMany",
            message: format!("Too many: {}: must have at most 64 items", conditions.len()),
            field: at.to_string(),
        });
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let base = at;
        let at = format!("{base}[{i}]");
        let expression = c.get("expression").and_then(Value::as_str).unwrap_or("").trim();
        if expression.is_empty() {
            causes.push(required(format!("{at}.expression"), ""));
        } else {
            check_expression(expression, names, "bool", format!("{at}.expression"), causes);
        }
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        } else {
            for fault in crate::cel_format::qualified_name(name) {
                causes.push(invalid(format!("{at}.name"), name, &fault));
            }
            if seen.contains(&name) {
                causes.push(duplicate(format!("{at}.name"), name));
            }
            seen.push(name);
        }
    }
}

/// Compiles and checks `expression`; `wants` is the type it must give (`bool` or `string`).
pub(crate) fn check_expression(expression: &str, names: &[&str], wants: &str, field: String, causes: &mut Vec<Cause>) {
    check_typed(expression, names, &[wants], field, causes);
}

/// Compiles and checks `expression`, which must give one of `wants`, as kube's compiler does
/// (`must evaluate to bool but got int`, `must evaluate to one of [string null_type] but got
/// int`). A `dyn` result is refused where kube's is certainly `dyn` too: a field or index of
/// `object`, `oldObject` or `params`, which are `dyn` to kube; elsewhere the checker may know
/// less than kube's and lets it pass.
fn check_typed(expression: &str, names: &[&str], wants: &[&str], field: String, causes: &mut Vec<Cause>) {
    let program = match crate::validation_rules::compile(expression) {
        Ok(p) => p,
        Err(e) => return causes.push(invalid(field, expression, &format!("compilation failed: {e}"))),
    };
    let t = match crate::cel_check::check_declared(&program, expression, names) {
        Ok(t) => t,
        Err(e) => return causes.push(invalid(field, expression, &format!("compilation failed: {e}"))),
    };
    let known = match t {
        crate::cel_check::Ty::Error => false,
        crate::cel_check::Ty::Dyn => selects_from_dyn(program.expression()),
        _ => true,
    };
    let got = t.to_string();
    if known && !wants.contains(&got.as_str()) {
        let detail = match wants {
            [one] => format!("must evaluate to {one} but got {got}"),
            many => format!("must evaluate to one of [{}] but got {got}", many.join(" ")),
        };
        causes.push(invalid(field, expression, &detail));
    }
}

/// Whether `e` is a field or an index of `object`, `oldObject` or `params`.
fn selects_from_dyn(e: &cel::common::ast::IdedExpr) -> bool {
    use cel::common::ast::Expr;
    match &e.expr {
        Expr::Ident(name) => matches!(name.as_str(), "object" | "oldObject" | "params"),
        Expr::Select(s) if !s.test => selects_from_dyn(&s.operand),
        Expr::Call(c) if c.func_name == cel::common::ast::operators::INDEX && c.args.len() == 2 => {
            selects_from_dyn(&c.args[0])
        }
        _ => false,
    }
}

fn check_policy(spec: &Value, name: &str, causes: &mut Vec<Cause>) {
    // As kube's compilers declare them: `variables` only for a policy that has some (never in
    // match conditions), `authorizer` everywhere but in message expressions.
    let list = |k: &str| spec.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut conditions = vec!["object", "oldObject", "request", "namespaceObject", "authorizer"];
    if spec.get("paramKind").is_some_and(|p| !p.is_null()) {
        conditions.push("params");
    }
    let mut names = conditions.clone();
    if !list("variables").is_empty() {
        names.push("variables");
    }
    let messages: Vec<&str> = names.iter().copied().filter(|n| *n != "authorizer").collect();
    if let Some(fp) = spec.get("failurePolicy").and_then(Value::as_str)
        && !["Fail", "Ignore"].contains(&fp)
    {
        causes.push(unsupported("spec.failurePolicy".into(), fp, &["Fail", "Ignore"]));
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => causes.push(required("spec.matchConstraints".into(), "")),
        Some(m) if m.get("resourceRules").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
            // The rules give the expressions their types.
            causes.push(required("spec.matchConstraints.resourceRules".into(), ""));
        }
        Some(_) => {}
    }
    check_match_selectors(spec.get("matchConstraints"), "spec.matchConstraints", causes);
    check_match_conditions(spec.get("matchConditions"), "spec.matchConditions", &conditions, causes);
    for (i, v) in list("variables").iter().enumerate() {
        let at = format!("spec.variables[{i}]");
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        if name.trim().is_empty() {
            causes.push(required(format!("{at}.name"), "name is not specified"));
        } else if !is_identifier(name) {
            causes.push(invalid(format!("{at}.name"), name, "name is not a valid CEL identifier"));
        }
        let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
        if expression.trim().is_empty() {
            causes.push(required(format!("{at}.expression"), "expression is not specified"));
        } else if let Err(e) = checked(expression, &names) {
            causes.push(invalid(format!("{at}.expression"), expression, &format!("compilation failed: {e}")));
        }
    }
    if list("validations").is_empty() && list("auditAnnotations").is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        causes.push(required("spec.validations".into(), detail));
        causes.push(required("spec.auditAnnotations".into(), detail));
    }
    for (i, v) in list("validations").iter().enumerate() {
        let at = format!("spec.validations[{i}]");
        let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
        if expression.trim().is_empty() {
            causes.push(required(format!("{at}.expression"), "expression is not specified"));
        } else {
            check_expression(expression, &names, "bool", format!("{at}.expression"), causes);
        }
        let message_expression = v.get("messageExpression").and_then(Value::as_str).unwrap_or("");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            causes.push(invalid(
                format!("{at}.messageExpression"),
                message_expression,
                "must be non-empty if specified",
            ));
        } else if !message_expression.is_empty() {
            check_expression(message_expression, &messages, "string", format!("{at}.messageExpression"), causes);
        }
        let message = v.get("message").and_then(Value::as_str).unwrap_or("");
        if !message.is_empty() && message.trim().is_empty() {
            causes.push(invalid(format!("{at}.message"), message, "message must be non-empty if specified"));
        } else if message.trim().contains(['\n', '\r']) {
            causes.push(invalid(format!("{at}.message"), message, "message must not contain line breaks"));
        }
        const REASONS: [&str; 4] = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"];
        if let Some(r) = v.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&r)
        {
            causes.push(unsupported(format!("{at}.reason"), r, &REASONS));
        }
    }
    let mut keys: Vec<&str> = Vec::new();
    let annotations = list("auditAnnotations");
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: \"\": must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            field: "spec.auditAnnotations".into(),
        });
    }
    for (i, an) in annotations.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        let key = an.get("key").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(invalid(format!("{at}.key"), key, "requires metadata.name be non-empty"));
        } else {
            let qualified = format!("{name}/{key}");
            for fault in crate::cel_format::qualified_name(&qualified) {
                causes.push(invalid(format!("{at}.key"), &qualified, &fault));
            }
        }
        let expression = an.get("valueExpression").and_then(Value::as_str).unwrap_or("");
        let trimmed = expression.trim();
        if trimmed.is_empty() {
            causes.push(required(format!("{at}.valueExpression"), "valueExpression is not specified"));
        } else if trimmed.len() > MAX_VALUE_EXPRESSION {
            causes.push(required(
                format!("{at}.valueExpression"),
                &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
            ));
        } else {
            check_typed(trimmed, &names, &["string", "null_type"], format!("{at}.valueExpression"), causes);
        }
        if keys.contains(&key) {
            causes.push(duplicate(format!("{at}.key"), key));
        }
        keys.push(key);
    }
}

/// The most audit annotations a policy may have.
const MAX_AUDIT_ANNOTATIONS: usize = 20;

/// The longest `valueExpression` of an audit annotation, in bytes.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;

fn check_binding(spec: &Value, causes: &mut Vec<Cause>) {
    let policy_name = spec.get("policyName").and_then(Value::as_str).unwrap_or("");
    if policy_name.is_empty() {
        causes.push(required("spec.policyName".into(), ""));
    } else if !crate::object::valid_name(policy_name) {
        causes.push(invalid("spec.policyName".into(), policy_name, crate::object::SUBDOMAIN_MESSAGE));
    }
    if let Some(r) = spec.get("paramRef").filter(|r| !r.is_null()) {
        check_param_ref(r, causes);
    }
    check_match_selectors(spec.get("matchResources"), "spec.matchResources", causes);
    let actions: Vec<Value> = spec.get("validationActions").and_then(Value::as_array).cloned().unwrap_or_default();
    const ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        let a = a.as_str().unwrap_or("");
        if !ACTIONS.contains(&a) {
            causes.push(unsupported(format!("spec.validationActions[{i}]"), a, &ACTIONS));
        }
        if seen.contains(&a) {
            causes.push(duplicate(format!("spec.validationActions[{i}]"), a));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
                crate::structural::go_json(&Value::Array(actions.clone()))
            ),
            field: "spec.validationActions".into(),
        });
    }
    if seen.is_empty() {
        causes.push(required("spec.validationActions".into(), "at least one validation action is required"));
    }
}

/// The namespace and object selectors of `matchConstraints` or `matchResources`.
fn check_match_selectors(m: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    for k in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = m.and_then(|m| m.get(k)).filter(|s| !s.is_null()) {
            crate::webhook_configuration::check_selector(sel, &format!("{at}.{k}"), causes);
        }
    }
}

/// A binding's `paramRef`: a name or a selector (not both), and a `parameterNotFoundAction`.
fn check_param_ref(r: &Value, causes: &mut Vec<Cause>) {
    let name = r.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = r.get("selector").filter(|s| !s.is_null());
    let exclusive = "name and selector are mutually exclusive";
    let forbidden = |field: &str| Cause {
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {exclusive}"),
        field: format!("spec.paramRef.{field}"),
    };
    if !name.is_empty() {
        for fault in path_segment_faults(name) {
            causes.push(invalid("spec.paramRef.name".into(), name, &fault));
        }
        if selector.is_some() {
            causes.push(forbidden("name"));
        }
    }
    if let Some(sel) = selector {
        crate::webhook_configuration::check_selector(sel, "spec.paramRef.selector", causes);
        if !name.is_empty() {
            causes.push(forbidden("selector"));
        }
    }
    if name.is_empty() && selector.is_none() {
        causes.push(required("spec.paramRef".into(), "one of name or selector must be specified"));
    }
    match r.get("parameterNotFoundAction").and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(required("spec.paramRef.parameterNotFoundAction".into(), "")),
        "Deny" | "Allow" => {}
        other => causes.push(unsupported("spec.paramRef.parameterNotFoundAction".into(), other, &["Deny", "Allow"])),
    }
}

/// Why a name cannot be a path segment, in kube's words.
fn path_segment_faults(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|bad| name.contains(**bad)).map(|bad| format!("may not contain '{bad}'")).collect()
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Match constraints with the rules kube requires.
    macro_rules! rules {
        () => {
            json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]})
        };
    }

    fn causes(v: Value, binding: bool) -> Vec<(String, String)> {
        validate(v.as_object().unwrap(), binding).into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn policies_must_compile_with_the_names_they_declare() {
        let policy = json!({"spec": {"matchConstraints": rules!(),
        "validations": [
            {"expression": "objec.spec.replicas <= 5"},
            {"expression": "params.max > 1"},
            {"expression": "object.spec.replicas <= 5", "messageExpression": "1 + 1"},
            {"expression": "1 + 1", "reason": "Teapot"}
        ]}});
        assert_eq!(
            causes(policy, false),
            [
                (
                    "spec.validations[0].expression".to_string(),
                    "Invalid value: \"objec.spec.replicas <= 5\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'objec' (in container '')\n | objec.spec.replicas <= 5\n | ^".to_string()
                ),
                (
                    "spec.validations[1].expression".to_string(),
                    "Invalid value: \"params.max > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.max > 1\n | ^".to_string()
                ),
                ("spec.validations[2].messageExpression".to_string(), "Invalid value: \"1 + 1\": must evaluate to string but got int".to_string()),
                ("spec.validations[3].expression".to_string(), "Invalid value: \"1 + 1\": must evaluate to bool but got int".to_string()),
                (
                    "spec.validations[3].reason".to_string(),
                    "Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"".to_string()
                ),
            ]
        );
        let with_params = json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": rules!(), "validations": [{"expression": "object.x <= int(params.data.max)"}]}});
        assert!(causes(with_params, false).is_empty());
        // As kube's compilers: `variables` only where a policy has some, never in match
        // conditions; no `authorizer` in a message; a field of `object` is `dyn`, not a bool.
        let scoped = json!({"spec": {"matchConstraints": rules!(),
            "matchConditions": [{"name": "a", "expression": "variables.x"}, {"name": "a", "expression": "true"}],
            "validations": [{"expression": "object.spec.paused", "messageExpression": "authorizer.path('/').check('get').reason()"},
                            {"expression": "variables.y"}]}});
        let found = causes(scoped, false);
        let fields: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.matchConditions[0].expression",
                "spec.matchConditions[1].name",
                "spec.validations[0].expression",
                "spec.validations[0].messageExpression",
                "spec.validations[1].expression"
            ],
            "{found:?}"
        );
        assert!(found[0].1.contains("undeclared reference to 'variables'"), "{}", found[0].1);
        assert_eq!(found[1].1, "Duplicate value: \"a\"");
        assert_eq!(found[2].1, "Invalid value: \"object.spec.paused\": must evaluate to bool but got dyn");
        assert!(found[3].1.contains("undeclared reference to 'authorizer'"), "{}", found[3].1);
        assert!(found[4].1.contains("undeclared reference to 'variables'"), "{}", found[4].1);
        let unconstrained = json!({"spec": {"matchConstraints": {}, "validations": [{"expression": "true"}]}});
        assert_eq!(
            causes(unconstrained, false),
            [("spec.matchConstraints.resourceRules".to_string(), "Required value".to_string())]
        );
    }

    #[test]
    fn bindings_name_a_policy_and_their_actions() {
        assert_eq!(
            causes(json!({"spec": {"validationActions": ["Deny", "Warn", "Deny", "Block"]}}), true),
            [
                ("spec.policyName".to_string(), "Required value".to_string()),
                ("spec.validationActions[2]".to_string(), "Duplicate value: \"Deny\"".to_string()),
                (
                    "spec.validationActions[3]".to_string(),
                    "Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"".to_string()
                ),
                (
                    "spec.validationActions".to_string(),
                    "Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Block\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)".to_string()
                ),
            ]
        );
        assert_eq!(
            causes(json!({"spec": {"policyName": "p"}}), true),
            [(
                "spec.validationActions".to_string(),
                "Required value: at least one validation action is required".to_string()
            )]
        );
    }

    #[test]
    fn audit_annotations_have_qualified_keys_and_string_values() {
        let none = json!({"metadata": {"name": "p"}, "spec": {"matchConstraints": rules!()}});
        let detail = "Required value: validations or auditAnnotations must contain at least one item";
        assert_eq!(
            causes(none, false),
            [
                ("spec.validations".to_string(), detail.to_string()),
                ("spec.auditAnnotations".to_string(), detail.to_string())
            ]
        );
        let policy = json!({"metadata": {"name": "p"}, "spec": {"matchConstraints": rules!(), "auditAnnotations": [
            {"key": "replicas", "valueExpression": "string(object.spec.replicas)"},
            {"key": "bad key", "valueExpression": "1 + 1"},
            {"key": "replicas", "valueExpression": " "},
            {"key": "nothing", "valueExpression": "null"}
        ]}});
        let found = causes(policy, false);
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(found[0].0, "spec.auditAnnotations[1].key");
        assert!(found[0].1.starts_with("Invalid value: \"p/bad key\": name part must consist of"), "{}", found[0].1);
        assert_eq!(
            found[1],
            (
                "spec.auditAnnotations[1].valueExpression".to_string(),
                "Invalid value: \"1 + 1\": must evaluate to one of [string null_type] but got int".to_string()
            )
        );
        assert_eq!(
            found[2],
            (
                "spec.auditAnnotations[2].valueExpression".to_string(),
                "Required value: valueExpression is not specified".to_string()
            )
        );
        assert_eq!(found[3], ("spec.auditAnnotations[2].key".to_string(), "Duplicate value: \"replicas\"".to_string()));
    }

    #[test]
    fn a_param_ref_names_or_selects_and_says_what_to_do_without_params() {
        let binding = |r: Value| json!({"spec": {"policyName": "p", "validationActions": ["Deny"], "paramRef": r}});
        assert!(causes(binding(json!({"name": "limits", "parameterNotFoundAction": "Deny"})), true).is_empty());
        assert!(causes(binding(json!({"selector": {}, "parameterNotFoundAction": "Allow"})), true).is_empty());
        assert_eq!(
            causes(binding(json!({"name": "a/b", "selector": {}, "parameterNotFoundAction": "Ignore"})), true),
            [
                ("spec.paramRef.name".to_string(), "Invalid value: \"a/b\": may not contain '/'".to_string()),
                ("spec.paramRef.name".to_string(), "Forbidden: name and selector are mutually exclusive".to_string()),
                (
                    "spec.paramRef.selector".to_string(),
                    "Forbidden: name and selector are mutually exclusive".to_string()
                ),
                (
                    "spec.paramRef.parameterNotFoundAction".to_string(),
                    "Unsupported value: \"Ignore\": supported values: \"Deny\", \"Allow\"".to_string()
                ),
            ]
        );
        assert_eq!(
            causes(binding(json!({})), true),
            [
                ("spec.paramRef".to_string(), "Required value: one of name or selector must be specified".to_string()),
                ("spec.paramRef.parameterNotFoundAction".to_string(), "Required value".to_string()),
            ]
        );
    }
}

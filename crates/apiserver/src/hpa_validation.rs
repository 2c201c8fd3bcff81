//! kube-apiserver's validation of HorizontalPodAutoscalers (its `autoscaling/validation`), on
//! the autoscaling/v2 form whichever version a request uses, as kube validates its internal
//! form: replica bounds, the scale target's reference, each metric (one source of its type, a
//! metric name, a target of a known type with positive values), scaling behavior (windows,
//! select policies, policies), and non-negative status replica counts.
//!
//! Invariants: the causes are kube's, in kube's order and words; a write to the resource is
//! judged on its spec, a write to `status` on its status alone (each keeps the other part as
//! stored); a v1 request is judged after conversion, before v2's defaults (so its paths are the
//! v2 ones, as kube reports them); an update keeping the scale target's kind and apiVersion is
//! not judged on its apiVersion, nor an object metric's described object whose apiVersion was
//! already unjudgeable.

use serde_json::{Map, Value};

use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::Cause;

const METRIC_SOURCE_TYPES: [&str; 5] = ["ContainerResource", "External", "Object", "Pods", "Resource"];
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
const MAX_PERIOD_SECONDS: i64 = 1800;

/// The causes for which kube refuses `hpa` (its v2 form, written over `old`'s; `status_write`
/// for a write to its `status`).
pub(crate) fn validate(hpa: &Map<String, Value>, old: Option<&Map<String, Value>>, status_write: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let null = Value::Null;
    let int = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64);
    if status_write {
        let status = hpa.get("status").unwrap_or(&null);
        for k in ["currentReplicas", "desiredReplicas"] {
            if let Some(n) = int(status, k).filter(|n| *n < 0) {
                causes.push(number(&format!("status.{k}"), n, "must be greater than or equal to 0"));
            }
        }
        return causes;
    }
    let spec = hpa.get("spec").unwrap_or(&null);
    let old_spec = old.and_then(|o| o.get("spec"));
    let min = int(spec, "minReplicas");
    // Scaling to zero stays allowed for an object that already does.
    let lower_bound = if old_spec.and_then(|s| int(s, "minReplicas")) == Some(0) { 0 } else { 1 };
    if let Some(m) = min.filter(|m| *m < lower_bound) {
        causes.push(number("spec.minReplicas", m, &format!("must be greater than or equal to {lower_bound}")));
    }
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if max < 1 {
        causes.push(number("spec.maxReplicas", max, "must be greater than 0"));
    }
    if min.is_some_and(|m| max < m) {
        causes.push(number("spec.maxReplicas", max, "must be greater than or equal to `minReplicas`"));
    }
    let target = spec.get("scaleTargetRef").unwrap_or(&null);
    let kept_target = old_spec
        .and_then(|s| s.get("scaleTargetRef"))
        .is_some_and(|o| o.get("kind") == target.get("kind") && o.get("apiVersion") == target.get("apiVersion"));
    reference(target, "spec.scaleTargetRef", !kept_target, false, &mut causes);
    let metrics = spec.get("metrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    // An object metric whose apiVersion could not be judged before is not judged now.
    let old_metrics = old_spec.and_then(|s| s.get("metrics")).and_then(Value::as_array);
    let check_described = !old_metrics.into_iter().flatten().any(|m| {
        m.pointer("/object/describedObject/apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.split('/').count() > 2)
    });
    let mut scales_on_objects = false;
    for (i, m) in metrics.iter().enumerate() {
        metric(m, &format!("spec.metrics[{i}]"), check_described, &mut causes);
        scales_on_objects |= matches!(m.get("type").and_then(Value::as_str), Some("Object" | "External"));
    }
    if min == Some(0) && !scales_on_objects {
        causes.push(Cause {
            reason: "FieldValueForbidden",
            message:
                "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"
                    .into(),
            field: "spec.metrics".into(),
        });
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| b.is_object()) {
        for direction in ["scaleUp", "scaleDown"] {
            if let Some(rules) = behavior.get(direction).filter(|r| r.is_object()) {
                scaling_rules(rules, &format!("spec.behavior.{direction}"), &mut causes);
            }
        }
    }
    causes
}

fn number(field: &str, n: i64, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {n}: {detail}"), field: field.into() }
}

fn forbidden(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, k: &str) -> bool {
    v.get(k).is_some_and(|x| !x.is_null())
}

/// A name that must be a path segment, or a required one.
fn segment(name: &str, at: String, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(required(at, ""));
    } else if let Some(problem) = crate::rbac::name_problem(name) {
        causes.push(invalid(at, name, problem));
    }
}

/// kube's `ValidateCrossVersionObjectReference`: kind and name are path segments; the apiVersion
/// names an API group (checked when `check_group`), except for ReplicationControllers and
/// (`empty_group_ok`) a metric's described object.
fn reference(r: &Value, at: &str, check_group: bool, empty_group_ok: bool, causes: &mut Vec<Cause>) {
    let kind = text(r, "kind");
    segment(kind, format!("{at}.kind"), causes);
    segment(text(r, "name"), format!("{at}.name"), causes);
    if !check_group {
        return;
    }
    let api_version = text(r, "apiVersion");
    let group = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] | [_] => Some(""),
        [group, _] => Some(*group),
        _ => None,
    };
    match group {
        None => causes.push(invalid(
            format!("{at}.apiVersion"),
            api_version,
            &format!("unexpected GroupVersion string: {api_version}"),
        )),
        Some("") if !empty_group_ok && kind != "ReplicationController" => {
            causes.push(invalid(format!("{at}.apiVersion"), api_version, "apiVersion must specify API group"))
        }
        _ => {}
    }
}

fn metric(m: &Value, at: &str, check_described: bool, causes: &mut Vec<Cause>) {
    let kind = text(m, "type");
    if kind.is_empty() {
        causes.push(required(format!("{at}.type"), "must specify a metric source type"));
    }
    if !METRIC_SOURCE_TYPES.contains(&kind) {
        causes.push(unsupported(format!("{at}.type"), kind, &METRIC_SOURCE_TYPES));
    }
    let sources = ["object", "external", "pods", "resource", "containerResource"];
    let given: Vec<&str> = sources.iter().copied().filter(|s| present(m, s)).collect();
    // The first source given is judged.
    if let Some(first) = given.first() {
        let source = &m[*first];
        let at = format!("{at}.{first}");
        match *first {
            "object" => {
                let described = source.get("describedObject").unwrap_or(&Value::Null);
                reference(described, &format!("{at}.describedObject"), check_described, true, causes);
                identifier(source, &at, causes);
                let t = metric_target(source, &at, causes);
                if !present(t, "value") && !present(t, "averageValue") {
                    causes.push(required(
                        format!("{at}.target.averageValue"),
                        "must set either a target value or averageValue",
                    ));
                }
            }
            "external" => {
                identifier(source, &at, causes);
                let t = metric_target(source, &at, causes);
                match (present(t, "value"), present(t, "averageValue")) {
                    (false, false) => causes.push(required(
                        format!("{at}.target.averageValue"),
                        "must set either a target value for metric or a per-pod target",
                    )),
                    (true, true) => causes.push(forbidden(
                        format!("{at}.target.value"),
                        "may not set both a target value for metric and a per-pod target",
                    )),
                    _ => {}
                }
            }
            "pods" => {
                identifier(source, &at, causes);
                let t = metric_target(source, &at, causes);
                if !present(t, "averageValue") {
                    causes.push(required(
                        format!("{at}.target.averageValue"),
                        "must specify a positive target averageValue",
                    ));
                }
            }
            _ => {
                let name = text(source, "name");
                if name.is_empty() {
                    causes.push(required(format!("{at}.name"), "must specify a resource name"));
                } else {
                    crate::container_resources::name_faults(name, &format!("{at}.name"), causes);
                }
                if *first == "containerResource" {
                    let container = text(source, "container");
                    if container.is_empty() {
                        causes.push(required(format!("{at}.container"), "must specify a container"));
                    } else {
                        for problem in crate::cel_format::dns1123_label(container) {
                            causes.push(invalid(format!("{at}.container"), container, &problem));
                        }
                    }
                }
                let t = metric_target(source, &at, causes);
                match (present(t, "averageUtilization"), present(t, "averageValue")) {
                    (false, false) => causes.push(required(
                        format!("{at}.target.averageUtilization"),
                        "must set either a target raw value or a target utilization",
                    )),
                    (true, true) => causes.push(forbidden(
                        format!("{at}.target.averageValue"),
                        "may not set both a target raw value and a target utilization",
                    )),
                    _ => {}
                }
            }
        }
    }
    let expected = match kind {
        "Object" => Some("object"),
        "External" => Some("external"),
        "Pods" => Some("pods"),
        "Resource" => Some("resource"),
        "ContainerResource" => Some("containerResource"),
        _ => None,
    };
    match expected {
        Some(e) if !present(m, e) => {
            causes.push(required(format!("{at}.{e}"), "must populate information for the given metric source"))
        }
        Some(_) => {}
        None => causes.push(unsupported(format!("{at}.type"), kind, &METRIC_SOURCE_TYPES)),
    }
    if given.len() != 1 {
        for s in given.iter().filter(|s| Some(**s) != expected) {
            causes.push(forbidden(format!("{at}.{s}"), "must populate the given metric source only"));
        }
    }
}

/// kube's `validateMetricIdentifier` for the source at `at`.
fn identifier(source: &Value, at: &str, causes: &mut Vec<Cause>) {
    let name = source.get("metric").map_or("", |m| text(m, "name"));
    if name.is_empty() {
        causes.push(required(format!("{at}.metric.name"), "must specify a metric name"));
    } else if let Some(problem) = crate::rbac::name_problem(name) {
        causes.push(invalid(format!("{at}.metric.name"), name, problem));
    }
}

/// kube's `validateMetricTarget` of the source's `target`; the target.
fn metric_target<'a>(source: &'a Value, at: &str, causes: &mut Vec<Cause>) -> &'a Value {
    static NULL: Value = Value::Null;
    let t = source.get("target").unwrap_or(&NULL);
    let at = format!("{at}.target");
    let kind = text(t, "type");
    if kind.is_empty() {
        causes.push(required(format!("{at}.type"), "must specify a metric target type"));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        causes.push(invalid(format!("{at}.type"), kind, "must be either Utilization, Value, or AverageValue"));
    }
    for k in ["value", "averageValue"] {
        if let Some(q) = t.get(k).filter(|q| !q.is_null()) {
            let positive = match q {
                Value::String(s) => crate::quantity::parse(s).is_some_and(|n| n > 0),
                Value::Number(n) => n.as_f64().is_some_and(|n| n > 0.0),
                _ => false,
            };
            if !positive {
                // A quantity is shown as its text, quoted.
                let shown = crate::structural::go_quote(&q.as_str().map_or_else(|| q.to_string(), str::to_string));
                causes.push(Cause {
                    reason: "FieldValueInvalid",
                    message: format!("Invalid value: {shown}: must be positive"),
                    field: format!("{at}.{k}"),
                });
            }
        }
    }
    if let Some(u) = t.get("averageUtilization").and_then(Value::as_i64).filter(|u| *u < 1) {
        causes.push(number(&format!("{at}.averageUtilization"), u, "must be greater than 0"));
    }
    t
}

/// kube's `validateScalingRules` of one direction.
fn scaling_rules(rules: &Value, at: &str, causes: &mut Vec<Cause>) {
    if let Some(w) = rules.get("stabilizationWindowSeconds").and_then(Value::as_i64) {
        let field = format!("{at}.stabilizationWindowSeconds");
        if w < 0 {
            causes.push(number(&field, w, "must be greater than or equal to zero"));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            causes.push(number(
                &field,
                w,
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(p) = rules.get("selectPolicy").and_then(Value::as_str)
        && !matches!(p, "Disabled" | "Max" | "Min")
    {
        causes.push(unsupported(format!("{at}.selectPolicy"), p, &["Disabled", "Max", "Min"]));
    }
    let policies = rules.get("policies").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if policies.is_empty() {
        causes.push(required(format!("{at}.policies"), "must specify at least one Policy"));
    }
    for (i, p) in policies.iter().enumerate() {
        let at = format!("{at}.policies[{i}]");
        let kind = text(p, "type");
        if !matches!(kind, "Pods" | "Percent") {
            causes.push(unsupported(format!("{at}.type"), kind, &["Percent", "Pods"]));
        }
        let value = p.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            causes.push(number(&format!("{at}.value"), value, "must be greater than zero"));
        }
        let period = p.get("periodSeconds").and_then(Value::as_i64).unwrap_or(0);
        if period <= 0 {
            causes.push(number(&format!("{at}.periodSeconds"), period, "must be greater than zero"));
        }
        if period > MAX_PERIOD_SECONDS {
            causes.push(number(
                &format!("{at}.periodSeconds"),
                period,
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    let tolerance = match rules.get("tolerance") {
        Some(Value::String(t)) => crate::quantity::parse(t).filter(|n| *n < 0).map(|_| t.clone()),
        Some(Value::Number(n)) => n.as_f64().filter(|n| *n < 0.0).map(|_| n.to_string()),
        _ => None,
    };
    if let Some(t) = tolerance {
        causes.push(invalid(format!("{at}.tolerance"), &t, "must be greater than or equal to 0"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn causes_of(v: Value) -> Vec<(String, String)> {
        validate(v.as_object().unwrap(), None, false).into_iter().map(|c| (c.field, c.message)).collect()
    }

    fn hpa(spec: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": spec})
    }

    const TARGET: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}"#;

    fn target() -> Value {
        serde_json::from_str(TARGET).unwrap()
    }

    #[test]
    fn a_valid_autoscaler_has_no_causes() {
        let v = hpa(json!({"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}}],
            "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}}}));
        assert_eq!(causes_of(v), Vec::<(String, String)>::new());
        // Status is judged on status writes alone.
        let mut v = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 0}));
        v["status"] = json!({"currentReplicas": -1, "desiredReplicas": 1});
        let on_status: Vec<String> =
            validate(v.as_object().unwrap(), None, true).into_iter().map(|c| c.message).collect();
        assert_eq!(on_status, ["Invalid value: -1: must be greater than or equal to 0"]);
        assert_eq!(causes_of(v).len(), 1);
    }

    #[test]
    fn replica_bounds_and_the_target_are_kubes() {
        let v =
            hpa(json!({"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}, "minReplicas": 0, "maxReplicas": 0}));
        assert_eq!(
            causes_of(v),
            [
                ("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
                ("spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
                ("spec.scaleTargetRef.name", "Invalid value: \"a/b\": may not contain '/'"),
                ("spec.scaleTargetRef.apiVersion", "Invalid value: \"\": apiVersion must specify API group"),
                (
                    "spec.metrics",
                    "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"
                ),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let v = hpa(json!({"scaleTargetRef": target(), "minReplicas": 5, "maxReplicas": 2}));
        assert_eq!(
            causes_of(v),
            [(
                "spec.maxReplicas".to_string(),
                "Invalid value: 2: must be greater than or equal to `minReplicas`".to_string()
            )]
        );
    }

    #[test]
    fn metrics_need_their_source_and_a_positive_target() {
        let v = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 2, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}},
            {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "1"}}},
            {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "-1", "averageValue": "2"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}},
                "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "m"}, "target": {"type": "Value", "value": "1"}}},
            {"type": "ContainerResource", "containerResource": {"name": "gpu", "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 50}}},
        ]}));
        assert_eq!(
            causes_of(v),
            [
                ("spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0"),
                ("spec.metrics[1].pods", "Required value: must populate information for the given metric source"),
                ("spec.metrics[2].external.target.value", "Invalid value: \"-1\": must be positive"),
                (
                    "spec.metrics[2].external.target.value",
                    "Forbidden: may not set both a target value for metric and a per-pod target"
                ),
                ("spec.metrics[3].object", "Forbidden: must populate the given metric source only"),
                (
                    "spec.metrics[4].containerResource.name",
                    "Invalid value: \"gpu\": must be a standard resource type or fully qualified"
                ),
                (
                    "spec.metrics[4].containerResource.name",
                    "Invalid value: \"gpu\": must be a standard resource for containers"
                ),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[test]
    fn behavior_windows_and_policies_are_bounded() {
        let v = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 2, "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most", "policies": []},
            "scaleDown": {"policies": [{"type": "Nodes", "value": 0, "periodSeconds": 2000}]}}}));
        assert_eq!(
            causes_of(v),
            [
                (
                    "spec.behavior.scaleUp.stabilizationWindowSeconds",
                    "Invalid value: 4000: must be less than or equal to 3600"
                ),
                (
                    "spec.behavior.scaleUp.selectPolicy",
                    "Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\""
                ),
                ("spec.behavior.scaleUp.policies", "Required value: must specify at least one Policy"),
                (
                    "spec.behavior.scaleDown.policies[0].type",
                    "Unsupported value: \"Nodes\": supported values: \"Percent\", \"Pods\""
                ),
                ("spec.behavior.scaleDown.policies[0].value", "Invalid value: 0: must be greater than zero"),
                (
                    "spec.behavior.scaleDown.policies[0].periodSeconds",
                    "Invalid value: 2000: must be less than or equal to 1800"
                ),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[test]
    fn an_update_keeping_the_target_is_not_judged_on_its_api_version() {
        let old = hpa(json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2}));
        let new = hpa(json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}));
        assert!(validate(new.as_object().unwrap(), old.as_object(), false).is_empty());
        let rc = hpa(
            json!({"scaleTargetRef": {"apiVersion": "v1", "kind": "ReplicationController", "name": "web"}, "maxReplicas": 3}),
        );
        assert!(causes_of(rc).is_empty());
    }
}

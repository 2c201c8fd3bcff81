//! autoscaling/v1 HorizontalPodAutoscalers, which kube-apiserver serves from the same objects
//! as autoscaling/v2: an object is stored in its v2 form whichever version wrote it, and each
//! version shows it in its own, as kube converts them. v1 knows one metric, the pods' CPU
//! utilization (`spec.targetCPUUtilizationPercentage`, `status.currentCPUUtilizationPercentage`);
//! what only v2 can say travels in annotations of the v1 form:
//!
//! - `autoscaling.alpha.kubernetes.io/metrics`: the other metrics, in v1's `MetricSpec` shape;
//! - `autoscaling.alpha.kubernetes.io/current-metrics`: every current metric (`MetricStatus`);
//! - `autoscaling.alpha.kubernetes.io/conditions`: the status conditions;
//! - `autoscaling.alpha.kubernetes.io/behavior`: `spec.behavior`, written with Go's field names
//!   (`ScaleUp`, `StabilizationWindowSeconds`, …) as kube writes its internal type.
//!
//! Invariants: reading an object as v1 and writing it back changes nothing of its v2 form; the
//! annotations are lifted out of a v1 object before it is stored and never appear on a v2 one;
//! an annotation that does not parse is ignored, as kube ignores it; a v1 object without any
//! metric scales on 80% CPU utilization, the default v1 always had; annotation keys match
//! case-insensitively, as Go's decoder matches them.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;

const GROUP: &str = "autoscaling";
const PLURAL: &str = "horizontalpodautoscalers";
const KIND: &str = "HorizontalPodAutoscaler";

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Every annotation kube drops when it reads an object into its internal form (the
/// tolerances are v2beta2's).
const ROUND_TRIP: [&str; 6] = [
    METRICS,
    CURRENT_METRICS,
    CONDITIONS,
    BEHAVIOR,
    "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
];

/// The CPU utilization a v1 object without metrics scales on.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Whether `info` is autoscaling/v1 HorizontalPodAutoscalers.
pub(crate) fn is_v1(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.version == "v1" && info.plural == PLURAL
}

/// autoscaling/v2 HorizontalPodAutoscalers, the form objects are stored in.
pub(crate) fn v2() -> &'static ResourceInfo {
    static V2: LazyLock<ResourceInfo> = LazyLock::new(|| resource("v2"));
    &V2
}

/// The resource as each version registers it.
pub(crate) fn resource(version: &str) -> ResourceInfo {
    ResourceInfo::builtin_at(GROUP, version, PLURAL, KIND, true, &["hpa"], &[]).with_status_subresource()
}

// ---- v2 → v1 ----

/// A stored (v2) object in its autoscaling/v1 form.
pub(crate) fn from_v2(v2: &Map<String, Value>) -> Map<String, Value> {
    let empty = Map::new();
    let spec = v2.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let status = v2.get("status").and_then(Value::as_object).unwrap_or(&empty);
    let metrics = spec.get("metrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let is_cpu_utilization = |m: &Value| {
        m.get("type").and_then(Value::as_str) == Some("Resource")
            && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
            && m.pointer("/resource/target/averageUtilization").is_some_and(|u| !u.is_null())
    };

    let mut out = Map::new();
    out.insert("apiVersion".into(), "autoscaling/v1".into());
    out.insert("kind".into(), KIND.into());
    let mut meta = v2.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut annotations = meta.remove("annotations").and_then(|a| a.as_object().cloned()).unwrap_or_default();
    for key in ROUND_TRIP {
        annotations.remove(key);
    }

    let mut v1_spec = Map::new();
    if let Some(r) = spec.get("scaleTargetRef") {
        v1_spec.insert("scaleTargetRef".into(), r.clone());
    }
    copy(spec, &mut v1_spec, "minReplicas");
    v1_spec.insert("maxReplicas".into(), spec.get("maxReplicas").cloned().unwrap_or(json!(0)));
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
        v1_spec.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu.pointer("/resource/target/averageUtilization").cloned().unwrap_or(Value::Null),
        );
    }
    let others: Vec<String> = metrics.iter().filter(|m| !is_cpu_utilization(m)).map(metric_spec_to_v1).collect();
    if !others.is_empty() {
        annotations.insert(METRICS.into(), go_escaped(format!("[{}]", others.join(","))).into());
    }

    let mut v1_status = Map::new();
    copy(status, &mut v1_status, "observedGeneration");
    copy(status, &mut v1_status, "lastScaleTime");
    v1_status.insert("currentReplicas".into(), status.get("currentReplicas").cloned().unwrap_or(json!(0)));
    v1_status.insert("desiredReplicas".into(), status.get("desiredReplicas").cloned().unwrap_or(json!(0)));
    let current = status.get("currentMetrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for m in current {
        if m.get("type").and_then(Value::as_str) == Some("Resource")
            && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
            && let Some(u) = m.pointer("/resource/current/averageUtilization").filter(|u| !u.is_null())
        {
            v1_status.insert("currentCPUUtilizationPercentage".into(), u.clone());
        }
    }
    if !current.is_empty() {
        let v1: Vec<String> = current.iter().map(metric_status_to_v1).collect();
        annotations.insert(CURRENT_METRICS.into(), go_escaped(format!("[{}]", v1.join(","))).into());
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| b.is_object()) {
        annotations.insert(BEHAVIOR.into(), go_escaped(behavior_to_go(behavior)).into());
    }
    let conditions = status.get("conditions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if !conditions.is_empty() {
        let v1: Vec<String> = conditions.iter().map(condition_to_v1).collect();
        annotations.insert(CONDITIONS.into(), go_escaped(format!("[{}]", v1.join(","))).into());
    }

    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(v1_spec));
    out.insert("status".into(), Value::Object(v1_status));
    out
}

/// JSON text as Go's encoder escapes it (`<`, `>`, `&` and the line separators, which occur
/// only inside strings).
fn go_escaped(text: String) -> String {
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Carries the annotations in which v1 keeps status (`current-metrics`, `conditions`) from
/// `from` to `to`, as a write keeps or takes the status itself.
pub(crate) fn carry_status_annotations(from: &Map<String, Value>, to: &mut Map<String, Value>) {
    carry_annotations(from, to, &[CURRENT_METRICS, CONDITIONS]);
}

/// Carries the annotations in which v1 keeps spec (every one kube reads into its internal form
/// but the status ones) from `from` to `to`, as a `/status` write keeps the stored spec.
pub(crate) fn carry_spec_annotations(from: &Map<String, Value>, to: &mut Map<String, Value>) {
    let spec: Vec<&str> = ROUND_TRIP.into_iter().filter(|k| ![CURRENT_METRICS, CONDITIONS].contains(k)).collect();
    carry_annotations(from, to, &spec);
}

/// Sets the annotations `keys` of `to` to those of `from` (removed where `from` has none).
fn carry_annotations(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    let source = from.get("metadata").and_then(|m| m.get("annotations")).and_then(Value::as_object);
    let values: Vec<(&str, Option<Value>)> =
        keys.iter().map(|k| (*k, source.and_then(|a| a.get(*k)).cloned())).collect();
    if !matches!(to.get("metadata"), Some(Value::Object(_))) {
        to.insert("metadata".into(), Value::Object(Map::new()));
    }
    let Some(Value::Object(meta)) = to.get_mut("metadata") else { return };
    let mut annotations = meta.remove("annotations").and_then(|a| a.as_object().cloned()).unwrap_or_default();
    for (k, v) in values {
        match v {
            Some(v) => annotations.insert(k.into(), v),
            None => annotations.remove(k),
        };
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
}

/// Removes the annotations in which v1 keeps status, as a create throws the status away.
pub(crate) fn drop_status_annotations(obj: &mut Map<String, Value>) {
    carry_status_annotations(&Map::new(), obj);
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, key: &str) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(key.into(), v.clone());
    }
}

/// A JSON object with its members in the order given, as Go's encoder writes a struct (`None`:
/// left out, as an empty `omitempty` field). JSON maps here keep keys sorted, so the text is
/// written by hand; members are JSON text.
fn ordered(members: Vec<(&str, Option<String>)>) -> String {
    let body: Vec<String> =
        members.into_iter().filter_map(|(k, v)| v.map(|v| format!("{}:{v}", Value::from(k)))).collect();
    format!("{{{}}}", body.join(","))
}

fn text_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer).filter(|x| x.is_string()).cloned().unwrap_or_else(|| "".into()).to_string()
}

fn opt_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).filter(|x| !x.is_null()).map(Value::to_string)
}

/// A list or map Go leaves out when empty (`omitempty`).
fn non_empty_at(v: &Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer) {
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        _ => opt_at(v, pointer),
    }
}

/// A quantity Go writes even when unset (its zero value, `"0"`).
fn quantity_at(v: &Value, pointer: &str) -> String {
    opt_at(v, pointer).unwrap_or_else(|| "\"0\"".into())
}

/// A label selector in `LabelSelector`'s member order.
fn selector_at(v: &Value, pointer: &str) -> Option<String> {
    let s = v.pointer(pointer).filter(|x| x.is_object())?;
    let expressions = s.get("matchExpressions").and_then(Value::as_array).map(|list| {
        let items: Vec<String> = list
            .iter()
            .map(|e| {
                ordered(vec![
                    ("key", Some(text_at(e, "/key"))),
                    ("operator", Some(text_at(e, "/operator"))),
                    ("values", non_empty_at(e, "/values")),
                ])
            })
            .collect();
        (!items.is_empty()).then(|| format!("[{}]", items.join(",")))
    });
    Some(ordered(vec![("matchLabels", non_empty_at(s, "/matchLabels")), ("matchExpressions", expressions.flatten())]))
}

fn reference(r: Option<&Value>) -> String {
    let r = r.cloned().unwrap_or(Value::Null);
    ordered(vec![
        ("kind", Some(text_at(&r, "/kind"))),
        ("name", Some(text_at(&r, "/name"))),
        ("apiVersion", opt_at(&r, "/apiVersion").filter(|a| a != "\"\"")),
    ])
}

fn metric_spec_to_v1(m: &Value) -> String {
    let source = |key: &str| m.get(key).filter(|s| s.is_object());
    let object = source("object").map(|s| {
        ordered(vec![
            ("target", Some(reference(s.get("describedObject")))),
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("targetValue", Some(quantity_at(s, "/target/value"))),
            ("selector", selector_at(s, "/metric/selector")),
            ("averageValue", opt_at(s, "/target/averageValue")),
        ])
    });
    let pods = source("pods").map(|s| {
        ordered(vec![
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("targetAverageValue", Some(quantity_at(s, "/target/averageValue"))),
            ("selector", selector_at(s, "/metric/selector")),
        ])
    });
    let resource = |s: &Value, container: bool| {
        ordered(vec![
            ("name", Some(text_at(s, "/name"))),
            ("targetAverageUtilization", opt_at(s, "/target/averageUtilization")),
            ("targetAverageValue", opt_at(s, "/target/averageValue")),
            ("container", container.then(|| text_at(s, "/container"))),
        ])
    };
    let external = source("external").map(|s| {
        ordered(vec![
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("metricSelector", selector_at(s, "/metric/selector")),
            ("targetValue", opt_at(s, "/target/value")),
            ("targetAverageValue", opt_at(s, "/target/averageValue")),
        ])
    });
    ordered(vec![
        ("type", Some(text_at(m, "/type"))),
        ("object", object),
        ("pods", pods),
        ("resource", source("resource").map(|s| resource(s, false))),
        ("containerResource", source("containerResource").map(|s| resource(s, true))),
        ("external", external),
    ])
}

fn metric_status_to_v1(m: &Value) -> String {
    let source = |key: &str| m.get(key).filter(|s| s.is_object());
    let object = source("object").map(|s| {
        ordered(vec![
            ("target", Some(reference(s.get("describedObject")))),
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("currentValue", Some(quantity_at(s, "/current/value"))),
            ("selector", selector_at(s, "/metric/selector")),
            ("averageValue", opt_at(s, "/current/averageValue")),
        ])
    });
    let pods = source("pods").map(|s| {
        ordered(vec![
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("currentAverageValue", Some(quantity_at(s, "/current/averageValue"))),
            ("selector", selector_at(s, "/metric/selector")),
        ])
    });
    let resource = |s: &Value, container: bool| {
        ordered(vec![
            ("name", Some(text_at(s, "/name"))),
            ("currentAverageUtilization", opt_at(s, "/current/averageUtilization")),
            ("currentAverageValue", Some(quantity_at(s, "/current/averageValue"))),
            ("container", container.then(|| text_at(s, "/container"))),
        ])
    };
    let external = source("external").map(|s| {
        ordered(vec![
            ("metricName", Some(text_at(s, "/metric/name"))),
            ("metricSelector", selector_at(s, "/metric/selector")),
            ("currentValue", Some(quantity_at(s, "/current/value"))),
            ("currentAverageValue", opt_at(s, "/current/averageValue")),
        ])
    });
    ordered(vec![
        ("type", Some(text_at(m, "/type"))),
        ("object", object),
        ("pods", pods),
        ("resource", source("resource").map(|s| resource(s, false))),
        ("containerResource", source("containerResource").map(|s| resource(s, true))),
        ("external", external),
    ])
}

fn condition_to_v1(c: &Value) -> String {
    let non_empty = |k: &str| opt_at(c, k).filter(|v| v != "\"\"");
    ordered(vec![
        ("type", Some(text_at(c, "/type"))),
        ("status", Some(text_at(c, "/status"))),
        // A zero time is written as null.
        ("lastTransitionTime", Some(opt_at(c, "/lastTransitionTime").unwrap_or_else(|| "null".into()))),
        ("reason", non_empty("/reason")),
        ("message", non_empty("/message")),
    ])
}

/// `spec.behavior` as kube writes its internal type: Go's field names in struct order, unset
/// pointers as null.
fn behavior_to_go(b: &Value) -> String {
    let rules = |r: Option<&Value>| -> String {
        let Some(r) = r.filter(|r| r.is_object()) else { return "null".into() };
        let policies = r.get("policies").and_then(Value::as_array).map(|list| {
            let items: Vec<String> = list
                .iter()
                .map(|p| {
                    ordered(vec![
                        ("Type", Some(text_at(p, "/type"))),
                        ("Value", Some(opt_at(p, "/value").unwrap_or_else(|| "0".into()))),
                        ("PeriodSeconds", Some(opt_at(p, "/periodSeconds").unwrap_or_else(|| "0".into()))),
                    ])
                })
                .collect();
            format!("[{}]", items.join(","))
        });
        let or_null = |v: Option<String>| Some(v.unwrap_or_else(|| "null".into()));
        ordered(vec![
            ("StabilizationWindowSeconds", or_null(opt_at(r, "/stabilizationWindowSeconds"))),
            ("SelectPolicy", or_null(opt_at(r, "/selectPolicy"))),
            ("Policies", or_null(policies)),
            ("Tolerance", or_null(opt_at(r, "/tolerance"))),
        ])
    };
    ordered(vec![("ScaleUp", Some(rules(b.get("scaleUp")))), ("ScaleDown", Some(rules(b.get("scaleDown"))))])
}

// ---- v1 → v2 ----

/// A member of a JSON object as Go's decoder finds it: the exact key, else one equal ignoring
/// case.
fn member<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let m = v.as_object()?;
    m.get(key).or_else(|| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v)).filter(|v| !v.is_null())
}

fn text(v: &Value, key: &str) -> Value {
    member(v, key).filter(|x| x.is_string()).cloned().unwrap_or_else(|| "".into())
}

fn put(out: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    if let Some(v) = v {
        out.insert(key.into(), v.clone());
    }
}

fn identifier(name: Value, selector: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), name);
    put(&mut m, "selector", selector);
    Value::Object(m)
}

fn described(r: Option<&Value>) -> Value {
    let r = r.cloned().unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("kind".into(), text(&r, "kind"));
    m.insert("name".into(), text(&r, "name"));
    put(&mut m, "apiVersion", member(&r, "apiVersion").filter(|a| a.as_str() != Some("")));
    Value::Object(m)
}

fn target(kind: &str, value: Option<&Value>, average: Option<&Value>, utilization: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), kind.into());
    put(&mut m, "value", value);
    put(&mut m, "averageValue", average);
    put(&mut m, "averageUtilization", utilization);
    Value::Object(m)
}

fn metric_spec_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(m, "type"));
    let zero = Value::from("0");
    if let Some(s) = member(m, "object") {
        let average = member(s, "averageValue");
        let kind = if average.is_some() { "AverageValue" } else { "Value" };
        let value = member(s, "targetValue").unwrap_or(&zero);
        out.insert(
            "object".into(),
            json!({
                "describedObject": described(member(s, "target")),
                "metric": identifier(text(s, "metricName"), member(s, "selector")),
                "target": target(kind, Some(value), average, None),
            }),
        );
    }
    if let Some(s) = member(m, "pods") {
        let average = member(s, "targetAverageValue").unwrap_or(&zero);
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(text(s, "metricName"), member(s, "selector")),
                "target": target("AverageValue", None, Some(average), None),
            }),
        );
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(s) = member(m, key) {
            let utilization = member(s, "targetAverageUtilization");
            let kind = if utilization.is_some() { "Utilization" } else { "AverageValue" };
            let mut r = Map::new();
            r.insert("name".into(), text(s, "name"));
            r.insert("target".into(), target(kind, None, member(s, "targetAverageValue"), utilization));
            if container {
                r.insert("container".into(), text(s, "container"));
            }
            out.insert(key.into(), Value::Object(r));
        }
    }
    if let Some(s) = member(m, "external") {
        let value = member(s, "targetValue");
        let kind = if value.is_some() { "Value" } else { "AverageValue" };
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(text(s, "metricName"), member(s, "metricSelector")),
                "target": target(kind, value, member(s, "targetAverageValue"), None),
            }),
        );
    }
    Value::Object(out)
}

fn current(value: Option<&Value>, average: Option<&Value>, utilization: Option<&Value>) -> Value {
    let mut m = Map::new();
    put(&mut m, "value", value);
    put(&mut m, "averageValue", average);
    put(&mut m, "averageUtilization", utilization);
    Value::Object(m)
}

fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), text(m, "type"));
    let zero = Value::from("0");
    if let Some(s) = member(m, "object") {
        out.insert(
            "object".into(),
            json!({
                "describedObject": described(member(s, "target")),
                "metric": identifier(text(s, "metricName"), member(s, "selector")),
                "current": current(Some(member(s, "currentValue").unwrap_or(&zero)), member(s, "averageValue"), None),
            }),
        );
    }
    if let Some(s) = member(m, "pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(text(s, "metricName"), member(s, "selector")),
                "current": current(None, Some(member(s, "currentAverageValue").unwrap_or(&zero)), None),
            }),
        );
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(s) = member(m, key) {
            let mut r = Map::new();
            r.insert("name".into(), text(s, "name"));
            r.insert(
                "current".into(),
                current(
                    None,
                    Some(member(s, "currentAverageValue").unwrap_or(&zero)),
                    member(s, "currentAverageUtilization"),
                ),
            );
            if container {
                r.insert("container".into(), text(s, "container"));
            }
            out.insert(key.into(), Value::Object(r));
        }
    }
    if let Some(s) = member(m, "external") {
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(text(s, "metricName"), member(s, "metricSelector")),
                "current": current(
                    Some(member(s, "currentValue").unwrap_or(&zero)),
                    member(s, "currentAverageValue"),
                    None,
                ),
            }),
        );
    }
    Value::Object(out)
}

/// The behavior annotation read as kube reads its internal type; None when it says nothing
/// (or does not parse).
fn behavior_from_go(annotation: &str) -> Option<Value> {
    let b: Value = serde_json::from_str(annotation).ok()?;
    if !b.is_object() {
        return None;
    }
    let rules = |r: &Value| -> Option<Value> {
        if !r.is_object() {
            return None;
        }
        let mut out = Map::new();
        put(&mut out, "stabilizationWindowSeconds", member(r, "StabilizationWindowSeconds"));
        put(&mut out, "selectPolicy", member(r, "SelectPolicy"));
        if let Some(list) = member(r, "Policies").and_then(Value::as_array) {
            let policies = list
                .iter()
                .map(|p| {
                    json!({
                        "type": text(p, "Type"),
                        "value": member(p, "Value").cloned().unwrap_or(json!(0)),
                        "periodSeconds": member(p, "PeriodSeconds").cloned().unwrap_or(json!(0)),
                    })
                })
                .collect();
            out.insert("policies".into(), Value::Array(policies));
        }
        put(&mut out, "tolerance", member(r, "Tolerance"));
        Some(Value::Object(out))
    };
    let mut out = Map::new();
    if let Some(up) = member(&b, "ScaleUp").and_then(rules) {
        out.insert("scaleUp".into(), up);
    }
    if let Some(down) = member(&b, "ScaleDown").and_then(rules) {
        out.insert("scaleDown".into(), down);
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn parsed_list(annotations: &Map<String, Value>, key: &str) -> Option<Vec<Value>> {
    let text = annotations.get(key)?.as_str()?;
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Array(items) if items.iter().all(Value::is_object) => Some(items),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

/// An autoscaling/v1 object in its stored (v2) form, with v2's defaults.
pub(crate) fn to_v2(v1: &Map<String, Value>) -> Map<String, Value> {
    let mut out = converted(v1);
    crate::defaults::decode(v2(), &mut out);
    out
}

/// An autoscaling/v1 object in the v2 form, before v2's defaults (the form kube validates).
pub(crate) fn converted(v1: &Map<String, Value>) -> Map<String, Value> {
    let empty = Map::new();
    let spec = v1.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let status = v1.get("status").and_then(Value::as_object).unwrap_or(&empty);
    let mut meta = v1.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let annotations = meta.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default();

    let mut v2_spec = Map::new();
    if let Some(r) = spec.get("scaleTargetRef") {
        v2_spec.insert("scaleTargetRef".into(), r.clone());
    }
    copy(spec, &mut v2_spec, "minReplicas");
    v2_spec.insert("maxReplicas".into(), spec.get("maxReplicas").cloned().unwrap_or(json!(0)));
    let cpu = spec.get("targetCPUUtilizationPercentage").filter(|p| !p.is_null()).map(|p| {
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": p}}})
    });
    let mut metrics: Vec<Value> = match parsed_list(&annotations, METRICS) {
        Some(others) => others.iter().map(metric_spec_to_v2).collect(),
        None => Vec::new(),
    };
    metrics.extend(cpu);
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = annotations.get(BEHAVIOR).and_then(Value::as_str).and_then(behavior_from_go) {
        v2_spec.insert("behavior".into(), behavior);
    }

    let mut v2_status = Map::new();
    copy(status, &mut v2_status, "observedGeneration");
    copy(status, &mut v2_status, "lastScaleTime");
    if let Some(n) = status.get("currentReplicas").filter(|n| n.as_i64() != Some(0) && !n.is_null()) {
        v2_status.insert("currentReplicas".into(), n.clone());
    }
    v2_status.insert("desiredReplicas".into(), status.get("desiredReplicas").cloned().unwrap_or(json!(0)));
    let mut current: Vec<Value> = Vec::new();
    if let Some(u) = status.get("currentCPUUtilizationPercentage").filter(|u| !u.is_null()) {
        current.push(json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}));
    }
    if let Some(list) = parsed_list(&annotations, CURRENT_METRICS) {
        current = list.iter().map(metric_status_to_v2).collect();
    }
    // v2 writes the list even when there is none (`null`), as kube serializes it.
    v2_status.insert("currentMetrics".into(), if current.is_empty() { Value::Null } else { Value::Array(current) });
    if let Some(list) = parsed_list(&annotations, CONDITIONS)
        && !list.is_empty()
    {
        let conditions = list
            .iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("type".into(), text(c, "type"));
                m.insert("status".into(), text(c, "status"));
                for k in ["lastTransitionTime", "reason", "message"] {
                    put(&mut m, k, member(c, k).filter(|v| v.as_str() != Some("")));
                }
                Value::Object(m)
            })
            .collect();
        v2_status.insert("conditions".into(), Value::Array(conditions));
    }

    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        for key in ROUND_TRIP {
            a.remove(key);
        }
        if a.is_empty() {
            meta.remove("annotations");
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), "autoscaling/v2".into());
    out.insert("kind".into(), KIND.into());
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(v2_spec));
    out.insert("status".into(), Value::Object(v2_status));
    out
}

/// The round-trip annotations dropped from an object written as v2, as kube drops them.
pub(crate) fn drop_annotations(obj: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata")
        && let Some(Value::Object(a)) = meta.get_mut("annotations")
    {
        let before = a.len();
        for key in ROUND_TRIP {
            a.remove(key);
        }
        if a.is_empty() && before > 0 {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn v2_with(metrics: Value) -> Map<String, Value> {
        map(json!({"apiVersion": "autoscaling/v2", "kind": KIND, "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 5, "metrics": metrics},
            "status": {"desiredReplicas": 0, "currentMetrics": null}}))
    }

    #[test]
    fn the_cpu_utilization_metric_is_the_v1_target() {
        let v2 = v2_with(json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 55}}}]));
        let v1 = from_v2(&v2);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(
            Value::Object(v1.clone()),
            json!({"apiVersion": "autoscaling/v1", "kind": KIND, "metadata": {"name": "web", "namespace": "default"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 55},
                "status": {"currentReplicas": 0, "desiredReplicas": 0}})
        );
        assert_eq!(to_v2(&v1), v2);
    }

    #[test]
    fn other_metrics_travel_in_an_annotation_in_v1_shape() {
        let metrics = json!([
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": {"matchLabels": {"a": "b"}}},
                "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                "metric": {"name": "hits"}, "target": {"type": "Value", "value": "2k"}}},
            {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
        ]);
        let v2 = v2_with(metrics.clone());
        let v1 = from_v2(&v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(
            v1["metadata"]["annotations"][METRICS],
            concat!(
                r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},"#,
                r#"{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10","selector":{"matchLabels":{"a":"b"}}}},"#,
                r#"{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"hits","targetValue":"2k"}},"#,
                r#"{"type":"External","external":{"metricName":"queue","targetAverageValue":"30"}},"#,
                r#"{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":60,"container":"app"}}]"#
            )
        );
        // Back in v2 the CPU target comes last, and every other metric is as it was.
        let back = to_v2(&v1);
        let list = back["spec"]["metrics"].as_array().unwrap();
        assert_eq!(list.len(), 6);
        assert_eq!(list[5], metrics[5]);
        assert_eq!(list[0], metrics[0]);
        assert_eq!(list[1], metrics[1]);
        assert_eq!(list[3], metrics[3]);
        assert_eq!(list[4], metrics[4]);
        // An object metric keeps its value target (v1 always has one).
        assert_eq!(list[2]["object"]["target"], json!({"type": "Value", "value": "2k"}));
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1_object_without_a_target_scales_on_80_percent_cpu() {
        let v1 = map(json!({"apiVersion": "autoscaling/v1", "kind": KIND, "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}));
        let v2 = to_v2(&v1);
        assert_eq!(v2["spec"]["minReplicas"], 1);
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert_eq!(from_v2(&v2)["spec"]["targetCPUUtilizationPercentage"], 80);
    }

    #[test]
    fn behavior_is_written_with_go_names_and_read_ignoring_case() {
        let mut v2 = v2_with(json!([]));
        v2["spec"]["behavior"] = json!({
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min",
                "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]},
        });
        let v1 = from_v2(&v2);
        assert_eq!(
            v1["metadata"]["annotations"][BEHAVIOR],
            concat!(
                r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}],"Tolerance":null},"#,
                r#""ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Min","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}"#
            )
        );
        assert_eq!(to_v2(&v1)["spec"]["behavior"], v2["spec"]["behavior"]);

        // As users write it (v2's names): read all the same, and completed with v2's defaults.
        let v1 = map(json!({"apiVersion": "autoscaling/v1", "kind": KIND,
            "metadata": {"name": "web", "annotations": {BEHAVIOR: r#"{"scaleUp":{"stabilizationWindowSeconds":30}}"#, "team": "a"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}));
        let v2 = to_v2(&v1);
        assert_eq!(v2["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"], 30);
        assert_eq!(v2["spec"]["behavior"]["scaleUp"]["selectPolicy"], "Max");
        assert_eq!(v2["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
        assert_eq!(v2["metadata"]["annotations"], json!({"team": "a"}));
    }

    #[test]
    fn status_metrics_and_conditions_round_trip() {
        let mut v2 = v2_with(json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}]));
        v2["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3, "observedGeneration": 1,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 64, "averageValue": "128m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "SucceededRescale"}]});
        let v1 = from_v2(&v2);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 64);
        assert_eq!(
            (v1["status"]["currentReplicas"].as_i64(), v1["status"]["desiredReplicas"].as_i64()),
            (Some(2), Some(3))
        );
        assert_eq!(
            v1["metadata"]["annotations"][CURRENT_METRICS],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":64,"currentAverageValue":"128m"}}]"#
        );
        assert_eq!(
            v1["metadata"]["annotations"][CONDITIONS],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"SucceededRescale"}]"#
        );
        assert_eq!(to_v2(&v1), v2);
    }

    #[test]
    fn an_annotation_that_does_not_parse_is_ignored_and_dropped() {
        let v1 = map(json!({"apiVersion": "autoscaling/v1", "kind": KIND,
            "metadata": {"name": "web", "annotations": {METRICS: "not json", CONDITIONS: "{}"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                     "targetCPUUtilizationPercentage": 40}}));
        let v2 = to_v2(&v1);
        assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 1);
        assert!(v2["status"].get("conditions").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
    }
}

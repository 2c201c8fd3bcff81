//! kube-apiserver's LimitRanger admission plugin (on by default) and the defaults and checks kube
//! gives a LimitRange, so a pod created in a namespace with LimitRanges is stored as a cluster
//! stores it and refused where a cluster refuses it:
//! - a LimitRange is judged as kube judges it ([`validate`]), and its `Container` item defaults
//!   `default` from `max` and `defaultRequest` from `default`, then from `min`;
//! - a pod created (or resized, through `pods/resize`) gets, in each container and init container,
//!   the `default` limits and `defaultRequest` requests of the namespace's LimitRanges it does not
//!   set (the first LimitRange, by name, that has one wins), and on a create the annotation
//!   `kubernetes.io/limit-ranger` naming what the last LimitRange that set something set;
//! - a pod created or resized is judged by each LimitRange's `Container` items (each container's
//!   `min`, `max` and `maxLimitRequestRatio`, one fault per resource and rule at most) and `Pod`
//!   items (the pod's sums), a claim created or updated by its `PersistentVolumeClaim` items (its
//!   requests' `min` and `max`); the first LimitRange with faults refuses the write with kube's
//!   403 listing them.
//!
//! Invariants: only pod creates and resizes and claim creates and updates of the main resource
//! are touched (never a plain pod update, a status or another subresource), and nothing of an
//! object already being deleted; a value the pod sets is never replaced; quantities compare as
//! kube compares them (rounded up to thousandths) and are shown in kube's canonical form; faults
//! come in kube's order (items in order, containers then init containers, each resource's `min`,
//! then `max`, then the ratio, resources by name) and repeat once at most; the LimitRanges are
//! the cache's, which has every LimitRange this server wrote before the request (see
//! [`crate::store::Store::admission_view`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::defaults::ensure_obj;
use crate::quantity::{self, Format, Quantity, ResourceList, add_into, list_of, raise_to};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::strategy::Target;
use crate::structural::{Cause, go_quote};
use crate::workload_validation::invalid_value as invalid;

/// The annotation that says what the plugin set.
pub(crate) const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// Whether `info` is core/v1's LimitRanges.
pub(crate) fn is_limit_ranges(info: &ResourceInfo) -> bool {
    info.is_core("limitranges")
}

/// Whether the plugin judges a write of `info` through `target` (`create` for a create).
pub(crate) fn judges(info: &ResourceInfo, target: Target, create: bool) -> bool {
    (info.is_core("pods") && (create && target == Target::Main || target == Target::Resize))
        || (info.is_core("persistentvolumeclaims") && target == Target::Main)
}

/// kube's `SetDefaults_LimitRangeItem` over a LimitRange's items.
pub(crate) fn default_items(obj: &mut Map<String, Value>) {
    let items = obj.get_mut("spec").and_then(|s| s.get_mut("limits")).and_then(Value::as_array_mut);
    for item in items.into_iter().flatten() {
        let Some(item) = item.as_object_mut() else { continue };
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let list = |item: &Map<String, Value>, key: &str| item.get(key).and_then(Value::as_object).cloned();
        let (max, min) = (list(item, "max"), list(item, "min"));
        let mut default = list(item, "default").unwrap_or_default();
        for (k, v) in max.into_iter().flatten() {
            default.entry(k).or_insert(v);
        }
        let mut request = list(item, "defaultRequest").unwrap_or_default();
        for (k, v) in default.iter().chain(min.iter().flatten()) {
            request.entry(k.clone()).or_insert(v.clone());
        }
        for (key, filled) in [("default", default), ("defaultRequest", request)] {
            if !filled.is_empty() {
                item.insert(key.into(), Value::Object(filled));
            }
        }
    }
}

/// The items of the LimitRanges `ranges` (their stored values).
fn items(range: &Value) -> &[Value] {
    range.pointer("/spec/limits").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn resources<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Map<String, Value>> {
    v.and_then(|v| v.get(key)).and_then(Value::as_object)
}

/// Gives the containers and init containers of the pod `obj` the defaults of `ranges` (in name
/// order); `annotate` on a create, where kube records what it set.
pub(crate) fn default_pod(obj: &mut Map<String, Value>, ranges: &[Value], annotate: bool) {
    for range in ranges {
        // (kube gathers every Container item; validation lets a LimitRange have one.)
        let item = items(range).iter().find(|i| i.get("type").and_then(Value::as_str) == Some("Container"));
        let Some(item) = item else { continue };
        let (limits, requests) = (resources(Some(item), "default"), resources(Some(item), "defaultRequest"));
        let mut said = Vec::new();
        for (key, prefix) in [("containers", "container"), ("initContainers", "init container")] {
            let list = obj.get_mut("spec").and_then(|s| s.get_mut(key)).and_then(Value::as_array_mut);
            for c in list.into_iter().flatten() {
                let Some(c) = c.as_object_mut() else { continue };
                let name = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let Some(res) = ensure_obj(c, "resources") else { continue };
                let set_requests = fill(res, "requests", requests);
                let set_limits = fill(res, "limits", limits);
                if !set_requests.is_empty() {
                    said.push(format!("{} request for {prefix} {name}", set_requests.join(", ")));
                }
                if !set_limits.is_empty() {
                    said.push(format!("{} limit for {prefix} {name}", set_limits.join(", ")));
                }
            }
        }
        if annotate
            && !said.is_empty()
            && let Some(a) = ensure_obj(obj, "metadata").and_then(|m| ensure_obj(m, "annotations"))
        {
            a.insert(ANNOTATION.into(), format!("LimitRanger plugin set: {}", said.join("; ")).into());
        }
    }
}

/// Sets in `res[key]` what `defaults` has and it lacks; the names set, sorted.
fn fill(res: &mut Map<String, Value>, key: &str, defaults: Option<&Map<String, Value>>) -> Vec<String> {
    let Some(defaults) = defaults.filter(|d| !d.is_empty()) else { return Vec::new() };
    let Some(list) = ensure_obj(res, key) else { return Vec::new() };
    let mut set = Vec::new();
    for (k, v) in defaults {
        if !list.contains_key(k) {
            list.insert(k.clone(), Value::String(quantity_string(v)));
            set.push(k.clone());
        }
    }
    set.sort();
    set
}

fn quantity_string(v: &Value) -> String {
    let s = quantity::text(v).unwrap_or_default();
    quantity::canonical(&s).unwrap_or(s)
}

/// `n / d` rounded away from zero, as kube's `ScaledValue` rounds.
fn div_away(n: i128, d: i128) -> i128 {
    let whole = n.abs() / d + i128::from(n.abs() % d != 0);
    if n < 0 { -whole } else { whole }
}

const MAX_MILLI: i128 = (i64::MAX / 1000) as i128;

fn units(n: i128) -> i128 {
    div_away(n, quantity::NANO)
}

fn millis(n: i128) -> i128 {
    div_away(n, quantity::NANO / 1000)
}

/// kube's `requestLimitEnforcedValues`: the three compared in thousandths, or in units when one
/// is too large for that.
fn compared(request: i128, limit: i128, enforced: i128) -> (i128, i128, i128) {
    if [request, limit, enforced].iter().all(|n| units(*n) <= MAX_MILLI) {
        (millis(request), millis(limit), millis(enforced))
    } else {
        (units(request), units(limit), units(enforced))
    }
}

/// The rules of one item's `min`, `max` and `maxLimitRequestRatio` over `requests` and `limits`
/// (`max_request`: claims, whose `max` judges requests only).
fn judge(
    kind: &str,
    item: &Value,
    requests: &ResourceList,
    limits: &ResourceList,
    max_request: bool,
    faults: &mut Vec<String>,
) {
    let zero = Quantity { nanos: 0, format: Format::DecimalSI };
    let get = |l: &ResourceList, k: &str| l.get(k).copied();
    for (res, enforced) in list_of(resources(Some(item), "min")) {
        let (req, lim) = (get(requests, &res), get(limits, &res));
        let (r, l, e) = compared(req.unwrap_or(zero).nanos, lim.unwrap_or(zero).nanos, enforced.nanos);
        let at = format!("minimum {res} usage per {kind} is {}", enforced.shown());
        // One fault per resource, the first of kube's checks that fails.
        match (req, lim) {
            (None, _) => faults.push(format!("{at}.  No request is specified")),
            (Some(req), _) if r < e => faults.push(format!("{at}, but request is {}", req.shown())),
            (_, Some(lim)) if l < e => faults.push(format!("{at}, but limit is {}", lim.shown())),
            _ => {}
        }
    }
    for (res, enforced) in list_of(resources(Some(item), "max")) {
        let (req, lim) = (get(requests, &res), get(limits, &res));
        let (r, l, e) = compared(req.unwrap_or(zero).nanos, lim.unwrap_or(zero).nanos, enforced.nanos);
        let at = format!("maximum {res} usage per {kind} is {}", enforced.shown());
        // A claim's `max` judges its request alone; a container's or pod's, its limit first.
        let fault = match (req, lim) {
            (None, _) if max_request => Some(format!("{at}.  No request is specified")),
            (_, None) if !max_request => Some(format!("{at}.  No limit is specified")),
            (_, Some(lim)) if !max_request && l > e => Some(format!("{at}, but limit is {}", lim.shown())),
            (Some(req), _) if r > e => Some(format!("{at}, but request is {}", req.shown())),
            _ => None,
        };
        faults.extend(fault);
    }
    if max_request {
        return;
    }
    for (res, enforced) in list_of(resources(Some(item), "maxLimitRequestRatio")) {
        let (req, lim) = (get(requests, &res), get(limits, &res));
        let (r, l, _) = compared(req.unwrap_or(zero).nanos, lim.unwrap_or(zero).nanos, enforced.nanos);
        let shown = enforced.shown();
        let at = format!("{res} max limit to request ratio per {kind} is {shown}");
        if req.is_none() || r == 0 {
            faults.push(format!("{at}, but no request is specified or request is 0"));
            continue;
        }
        if lim.is_none() || l == 0 {
            faults.push(format!("{at}, but no limit is specified or limit is 0"));
            continue;
        }
        let display = l as f64 / r as f64;
        let (observed, max) = if units(enforced.nanos) <= MAX_MILLI {
            (display * 1000.0, millis(enforced.nanos) as f64)
        } else {
            (display, units(enforced.nanos) as f64)
        };
        if observed > max {
            faults.push(format!("{at}, but provided ratio is {display:.6}"));
        }
    }
}

/// A pod's requests or limits (`key`) as kube's `podRequests` / `podLimits` sum them: its
/// containers', the largest of its init containers' (restartable ones add to both), and its
/// own pod-level cpu and memory when it sets them.
pub(crate) fn pod_sum(spec: &Value, key: &str) -> ResourceList {
    let of = |c: &Value| list_of(resources(c.get("resources"), key));
    let mut sum = ResourceList::new();
    let add = |to: &mut ResourceList, from: &ResourceList| from.iter().for_each(|(k, q)| add_into(to, k, *q));
    for c in spec.get("containers").and_then(Value::as_array).into_iter().flatten() {
        add(&mut sum, &of(c));
    }
    let (mut sidecars, mut init_max) = (ResourceList::new(), ResourceList::new());
    for c in spec.get("initContainers").and_then(Value::as_array).into_iter().flatten() {
        let own = of(c);
        let candidate = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sum, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut c = own;
            add(&mut c, &sidecars);
            c
        };
        candidate.iter().for_each(|(k, q)| raise_to(&mut init_max, k, *q));
    }
    init_max.iter().for_each(|(k, q)| raise_to(&mut sum, k, *q));
    for (k, q) in list_of(resources(spec.get("resources"), key)) {
        if k == "cpu" || k == "memory" {
            sum.insert(k, q);
        }
    }
    sum
}

/// The faults one LimitRange finds in the pod `spec`.
fn pod_faults(range: &Value, spec: &Value) -> Vec<String> {
    let mut faults = Vec::new();
    for item in items(range) {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for key in ["containers", "initContainers"] {
                    for c in spec.get(key).and_then(Value::as_array).into_iter().flatten() {
                        let requests = list_of(resources(c.get("resources"), "requests"));
                        let limits = list_of(resources(c.get("resources"), "limits"));
                        judge("Container", item, &requests, &limits, false, &mut faults);
                    }
                }
            }
            Some("Pod") => {
                judge("Pod", item, &pod_sum(spec, "requests"), &pod_sum(spec, "limits"), false, &mut faults);
            }
            _ => {}
        }
    }
    faults
}

/// The faults one LimitRange finds in the claim `spec`.
fn claim_faults(range: &Value, spec: &Value) -> Vec<String> {
    let mut faults = Vec::new();
    let requests = list_of(resources(spec.get("resources"), "requests"));
    for item in items(range) {
        if item.get("type").and_then(Value::as_str) == Some("PersistentVolumeClaim") {
            judge("PersistentVolumeClaim", item, &requests, &ResourceList::new(), true, &mut faults);
        }
    }
    faults
}

/// kube's LimitRanger validation of the pod or claim `obj` named `name` against `ranges` (in
/// name order): the first LimitRange with faults refuses it.
pub(crate) fn check(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    name: &str,
    ranges: &[Value],
) -> Result<(), ApiError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let pods = info.is_core("pods");
    for range in ranges {
        let mut faults = if pods { pod_faults(range, spec) } else { claim_faults(range, spec) };
        if faults.is_empty() {
            continue;
        }
        let mut seen = std::collections::HashSet::new();
        faults.retain(|f| seen.insert(f.clone()));
        let why = match faults.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        return Err(ApiError::forbidden("", &info.plural, name, &why));
    }
    Ok(())
}

/// The causes for which kube refuses the LimitRange `obj` (kube's `ValidateLimitRange`, its
/// metadata aside): item types kube knows or qualified, each once; resource names a container
/// (for `Container` and `Pod` items) or a quota (others) may name; no defaults on a `Pod` item; a
/// storage bound on a `PersistentVolumeClaim` item; and per resource (by name) `min` ≤
/// `defaultRequest` ≤ `default` ≤ `max`, a ratio of at least 1 and at most `max`/`min`, and a
/// default equal to its request for what cannot be overcommitted.
pub(crate) fn validate(obj: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let items = obj.get("spec").and_then(|s| s.get("limits")).and_then(Value::as_array);
    let mut types = std::collections::HashSet::new();
    for (i, item) in items.into_iter().flatten().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let type_at = format!("{at}.type");
        let faults = crate::cel_format::qualified_name(kind);
        if !faults.is_empty() {
            causes.extend(faults.iter().map(|f| invalid(&type_at, &go_quote(kind), f)));
        } else if !kind.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&kind) {
            causes.push(invalid(&type_at, &go_quote(kind), "must be a standard limit type or fully qualified"));
        }
        if !types.insert(kind) {
            let message = format!("Duplicate value: {}", go_quote(kind));
            causes.push(Cause { reason: "FieldValueDuplicate", message, field: type_at });
        }
        let list = |key: &str| -> BTreeMap<String, String> {
            let entries = item.get(key).and_then(Value::as_object).into_iter().flatten();
            entries.map(|(k, v)| (k.clone(), quantity::text(v).unwrap_or_default())).collect()
        };
        let names = |key: &str, causes: &mut Vec<Cause>| {
            for k in list(key).keys() {
                let field = format!("{at}.{key}[{k}]");
                if matches!(kind, "Pod" | "Container") {
                    crate::container_resources::name_faults(k, &field, causes);
                } else {
                    crate::container_resources::resource_name_faults(k, &field, causes);
                }
            }
        };
        names("max", &mut causes);
        names("min", &mut causes);
        if kind == "Pod" {
            for key in ["default", "defaultRequest"] {
                if !list(key).is_empty() {
                    causes.push(forbidden(&format!("{at}.{key}"), "may not be specified when `type` is 'Pod'"));
                }
            }
        } else {
            names("default", &mut causes);
            names("defaultRequest", &mut causes);
        }
        let (min, max) = (list("min"), list("max"));
        if kind == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
            causes.push(crate::policy_validation::required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        names("maxLimitRequestRatio", &mut causes);
        let (default, request, ratio) = if kind == "Pod" {
            (BTreeMap::new(), BTreeMap::new(), list("maxLimitRequestRatio"))
        } else {
            (list("default"), list("defaultRequest"), list("maxLimitRequestRatio"))
        };
        let keys: std::collections::BTreeSet<&String> =
            min.keys().chain(max.keys()).chain(default.keys()).chain(request.keys()).chain(ratio.keys()).collect();
        for k in keys {
            bounds(&at, k, [min.get(k), max.get(k), default.get(k), request.get(k), ratio.get(k)], &mut causes);
        }
    }
    causes
}

/// A parsed quantity and its canonical form.
fn parsed(s: Option<&String>) -> Option<(i128, String)> {
    let s = s?;
    Some((quantity::parse(s)?, quantity::canonical(s)?))
}

/// The rules between one resource's bounds in an item at `at`.
fn bounds(at: &str, k: &str, [min, max, default, request, ratio]: [Option<&String>; 5], causes: &mut Vec<Cause>) {
    let (min, max, default, request, ratio) =
        (parsed(min), parsed(max), parsed(default), parsed(request), parsed(ratio));
    let field = |key: &str| format!("{at}.{key}[{k}]");
    if let (Some((n, ns)), Some((x, xs))) = (&min, &max)
        && n > x
    {
        causes.push(invalid(&field("min"), &go_quote(ns), &format!("min value {ns} is greater than max value {xs}")));
    }
    if let (Some((r, rs)), Some((n, ns))) = (&request, &min)
        && n > r
    {
        let detail = format!("min value {ns} is greater than default request value {rs}");
        causes.push(invalid(&field("defaultRequest"), &go_quote(rs), &detail));
    }
    if let (Some((r, rs)), Some((x, xs))) = (&request, &max)
        && r > x
    {
        let detail = format!("default request value {rs} is greater than max value {xs}");
        causes.push(invalid(&field("defaultRequest"), &go_quote(rs), &detail));
    }
    if let (Some((r, rs)), Some((d, ds))) = (&request, &default)
        && r > d
    {
        let detail = format!("default request value {rs} is greater than default limit value {ds}");
        causes.push(invalid(&field("defaultRequest"), &go_quote(rs), &detail));
    }
    if let (Some((d, ds)), Some((n, ns))) = (&default, &min)
        && n > d
    {
        causes.push(invalid(
            &field("default"),
            &go_quote(ns),
            &format!("min value {ns} is greater than default value {ds}"),
        ));
    }
    if let (Some((d, ds)), Some((x, xs))) = (&default, &max)
        && d > x
    {
        let detail = format!("default value {ds} is greater than max value {xs}");
        causes.push(invalid(&field("default"), &go_quote(xs), &detail));
    }
    if let Some((q, qs)) = &ratio
        && *q < quantity::NANO
    {
        causes.push(invalid(&field("maxLimitRequestRatio"), &go_quote(qs), &format!("ratio {qs} is less than 1")));
    }
    if let (Some((q, qs)), Some((n, _)), Some((x, _))) = (&ratio, &min, &max) {
        let (mut ratio_value, mut low, mut high) = (units(*q) as f64, units(*n), units(*x));
        if [*q, *n, *x].iter().all(|v| units(*v) < MAX_MILLI) {
            (ratio_value, low, high) = (millis(*q) as f64 / 1000.0, millis(*n), millis(*x));
        }
        let limit = high as f64 / low as f64;
        if ratio_value > limit {
            let detail = format!("ratio {qs} is greater than max/min = {limit:.6}");
            causes.push(invalid(&field("maxLimitRequestRatio"), &go_quote(qs), &detail));
        }
    }
    if let (Some((d, ds)), Some((r, rs))) = (&default, &request)
        && !crate::container_resources::overcommits(k)
        && d != r
    {
        let detail = format!("default value {ds} must equal to defaultRequest value {rs} in {k}");
        causes.push(invalid(&field("defaultRequest"), &go_quote(rs), &detail));
    }
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field: field.into() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn range(limits: Value) -> Value {
        json!({"metadata": {"name": "limits"}, "spec": {"limits": limits}})
    }

    #[test]
    fn a_container_item_defaults_from_max_then_default_then_min() {
        let Value::Object(mut lr) = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m", "memory": "64Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}}]}})
        else {
            unreachable!()
        };
        default_items(&mut lr);
        assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
        assert_eq!(lr["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "2", "memory": "64Mi"}));
        assert!(lr["spec"]["limits"][1].get("default").is_none());
    }

    #[test]
    fn defaults_fill_what_containers_lack_and_say_so() {
        let ranges = [range(json!([{"type": "Container", "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]))];
        let Value::Object(mut pod) = json!({"spec": {
            "containers": [{"name": "app"}, {"name": "own", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "init"}]}})
        else {
            unreachable!()
        };
        default_pod(&mut pod, &ranges, true);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"],
            json!({"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; \
             memory request for container own; memory limit for container own; cpu, memory request for init \
             container init; cpu, memory limit for init container init"
        );
    }

    #[test]
    fn faults_come_in_kubes_words_and_order() {
        let lr = range(json!([
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"cpu": "1"}}]));
        let spec = json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "50m", "memory": "1Gi"}, "limits": {"cpu": "800m", "memory": "2Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "400m"}}}]});
        assert_eq!(
            pod_faults(&lr, &spec),
            [
                "minimum cpu usage per Container is 100m, but request is 50m",
                "maximum memory usage per Container is 1Gi, but limit is 2Gi",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 16.000000",
                "maximum memory usage per Container is 1Gi.  No limit is specified",
                "maximum cpu usage per Pod is 1, but limit is 1200m",
            ]
        );
        let claims =
            range(json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]));
        assert_eq!(
            claim_faults(&claims, &json!({"resources": {"requests": {"storage": "500Mi"}}})),
            ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"]
        );
        assert_eq!(
            claim_faults(&claims, &json!({"resources": {"requests": {"storage": "5Gi"}}})),
            ["maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"]
        );
    }

    #[test]
    fn limit_ranges_are_judged_as_kube_judges_them() {
        let messages = |limits: Value| -> Vec<String> {
            let Value::Object(lr) = json!({"spec": {"limits": limits}}) else { unreachable!() };
            validate(&lr).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
        };
        assert_eq!(
            messages(json!([
                {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "default": {"cpu": "1"},
                    "defaultRequest": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "500m"}},
                {"type": "Container"},
                {"type": "Pod", "default": {"cpu": "1"}},
                {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
                {"type": "Other"}])),
            [
                "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: \"1\": min value 2 is greater than default request value 1",
                "spec.limits[0].default[cpu]: Invalid value: \"2\": min value 2 is greater than default value 1",
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"500m\": ratio 500m is less than 1",
                "spec.limits[1].type: Duplicate value: \"Container\"",
                "spec.limits[2].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but \
                 neither was provided",
                "spec.limits[4].type: Invalid value: \"Other\": must be a standard limit type or fully qualified",
            ]
        );
        assert_eq!(
            messages(json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"},
                "maxLimitRequestRatio": {"cpu": "20"}, "default": {"example.com/gpu": "2"},
                "defaultRequest": {"example.com/gpu": "1"}}])),
            [
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"20\": ratio 20 is greater than max/min = \
                 10.000000",
                "spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: \"1\": default value 2 must equal to \
                 defaultRequest value 1 in example.com/gpu",
            ]
        );
    }

    #[test]
    fn pod_sums_take_the_largest_init_container_and_sidecars() {
        let spec = json!({"containers": [{"resources": {"requests": {"cpu": "100m"}}}, {"resources": {"requests": {"cpu": "200m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "1"}}},
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "50m", "memory": "1Gi"}}}]});
        let sum = pod_sum(&spec, "requests");
        assert_eq!(sum["cpu"].shown(), "1");
        assert_eq!(sum["memory"].shown(), "1Gi");
        let plain = json!({"containers": [{"resources": {"requests": {"memory": "1Gi"}}}, {"resources": {"requests": {"memory": "512Mi"}}}]});
        assert_eq!(pod_sum(&plain, "requests")["memory"].shown(), "1536Mi");
    }
}

//! Validation of built-in types beyond their JSON shape: the rules kube-apiserver enforces on
//! the served types whose violation a client can produce with an ordinary patch, after every
//! object's metadata ([`crate::object_meta`], custom resources' included).
//!
//! Invariants: validation runs on the object as it would be stored (after a patch is applied
//! and the status kept or taken), on creates and updates alike, and never changes it; a
//! violation is kube's 422 Invalid with its field path, cause reason and message.

use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// Checks an object about to be written; `old` is the stored version an update replaces, and
/// `target` the part of it the write changes. `leading` are causes found before (rules that read
/// other objects), which come first in the answer.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&StoredObject>,
    target: crate::strategy::Target,
    leading: Vec<crate::structural::Cause>,
) -> Result<(), ApiError> {
    // The metadata's causes come first in kube's answer; a binding only assigns the node (kube
    // writes it without judging the pod), and core Events and certificate requests have theirs
    // judged only when the rest passes.
    let meta = match target {
        crate::strategy::Target::Binding => Vec::new(),
        _ => crate::object_meta::validate(info, obj, old),
    };
    let meta_last = (info.group.is_empty() && info.plural == "events") || crate::certificate_signing::is_csrs(info);
    let (meta, deferred) = if meta_last { (Vec::new(), meta) } else { (meta, Vec::new()) };
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
    if info.custom.is_some() {
        return crate::custom_resource::validate(info, obj, old, meta, target);
    }
    if crate::crd::is_crds(info) {
        if !meta.is_empty() {
            return Err(crate::custom_resource::invalid(info, name, &meta));
        }
        let status = target == crate::strategy::Target::Status;
        return crate::crd_validation::validate_write(obj, old.map(StoredObject::value).as_ref(), status);
    }
    if info.group == crate::admission_policy::GROUP {
        let causes = match info.plural.as_str() {
            crate::admission_webhook::MUTATING => crate::webhook_configuration::validate(obj, true),
            crate::admission_webhook::VALIDATING => crate::webhook_configuration::validate(obj, false),
            plural => crate::policy_validation::validate(obj, plural == "validatingadmissionpolicybindings"),
        };
        if !causes.is_empty() || !meta.is_empty() {
            let all: Vec<_> = meta.into_iter().chain(causes).collect();
            return Err(crate::custom_resource::invalid(info, name, &all));
        }
        return Ok(());
    }
    let mut causes = leading;
    causes.extend(meta);
    causes.extend(crate::rbac_validation::validate(info, obj, old));
    // (A Service whose spec is as stored is not judged again, as for pods and workloads.)
    if info.is_core("services")
        && target == crate::strategy::Target::Main
        && !old.is_some_and(|o| crate::strategy::spec_as_stored(o, obj, info))
    {
        let old = old.map(|o| as_map(o.value()));
        causes.extend(crate::service_validation::validate(obj, old.as_ref()));
    } else if info.is_core("services")
        && target == crate::strategy::Target::Main
        && let Some(old) = old
    {
        causes.extend(crate::service_fields::annotations(obj, &as_map(old.value())));
    }
    if info.is_core("services")
        && target == crate::strategy::Target::Status
        && let Some(old) = old
    {
        causes.extend(crate::service_fields::status(obj, &as_map(old.value())));
    }
    if crate::namespaces::is_namespaces(info) && target == crate::strategy::Target::Status {
        causes.extend(crate::namespaces::status_causes(obj));
    }
    if crate::limit_ranger::is_limit_ranges(info) {
        causes.extend(crate::limit_ranger::validate(obj));
    }
    if crate::resource_quota::is_quotas(info) {
        use crate::resource_quota::Judged;
        let stored = old.map(StoredObject::value);
        let judged = match (target, &stored) {
            (crate::strategy::Target::Status, _) => Judged::Status,
            (_, Some(stored)) => Judged::Update(stored),
            (_, None) => Judged::Create,
        };
        let quota_causes = crate::resource_quota::validate(obj, judged);
        if quota_causes.is_empty() && old.is_none() && causes.is_empty() {
            // kube warns once the quota is valid.
            crate::resource_quota::create_warnings(obj).into_iter().for_each(crate::warning::record);
        }
        causes.extend(quota_causes);
    }
    if crate::job_status::is_jobs(info)
        && target == crate::strategy::Target::Status
        && let Some(old) = old
    {
        causes.extend(crate::job_status::validate(&Value::Object(obj.clone()), &old.value()));
    }
    if info.is_core("configmaps") || info.is_core("secrets") {
        // (A Secret stored with `stringData` is read as kube would have stored it.)
        let old = old.map(|o| as_map(o.value())).map(|mut o| {
            crate::defaults::string_data(&mut o);
            o
        });
        causes.extend(if info.is_core("configmaps") {
            crate::config_validation::config_map(obj, old.as_ref())
        } else {
            crate::config_validation::secret(obj, old.as_ref())
        });
    }
    causes.extend(crate::certificate_signing::validate(info, obj, old));
    // A pod's own annotations come before its spec in kube's answer; an update's rules on them
    // after it.
    let pod_annotations = (info.is_core("pods")
        && matches!(target, crate::strategy::Target::Main | crate::strategy::Target::Status))
    .then(|| pod_annotation_causes(obj, old, target == crate::strategy::Target::Status));
    if let Some((before, _)) = &pod_annotations {
        causes.extend(before.iter().cloned());
    }
    if matches!(target, crate::strategy::Target::Main | crate::strategy::Target::Resize)
        && !old.is_some_and(|o| spec_unchanged(info, obj, o))
    {
        // Wherever a pod spec is written: the pod's own, or a template. The workloads, Jobs and
        // CronJobs judge theirs among their own rules.
        use crate::pod_spec_validation::Owner;
        let workload = crate::workload_validation::validate(info, obj, old).or_else(|| {
            let old = old.map(|o| crate::workload_validation::stored_with_defaults(info, o));
            crate::job_validation::validate(info, obj, old.as_ref())
        });
        let judged = workload.is_some();
        causes.extend(workload.into_iter().flatten());
        use std::borrow::Cow;
        let (spec, at, owner) = match crate::pod_security::template_path(info) {
            _ if info.is_core("pods") => (obj.get("spec").map(Cow::Borrowed), "spec".to_string(), Owner::Pod),
            _ if judged => (None, String::new(), Owner::Template),
            Some(path) => {
                let template = path.iter().try_fold(obj, |o, k| o.get(*k).and_then(Value::as_object));
                // A template that is not there is Go's zero one.
                let spec = match template.and_then(|t| t.get("spec")) {
                    Some(spec) => Cow::Borrowed(spec),
                    None => Cow::Owned(crate::pod_spec_validation::zero_template_spec()),
                };
                (Some(spec), format!("{}.spec", path.join(".")), Owner::Template)
            }
            None => (None, String::new(), Owner::Template),
        };
        if let Some(spec) = spec {
            // A template's own metadata is judged around its spec; the stored template is read
            // only when its deletion cost can make the write lenient.
            let path = crate::pod_security::template_path(info).filter(|_| owner == Owner::Template);
            let template = path.and_then(|p| p.iter().try_fold(obj, |o, k| o.get(*k).and_then(Value::as_object)));
            let (before, after) = match (path, template) {
                (Some(path), Some(template)) => {
                    let old = old.filter(|o| crate::pod_annotations::may_name_a_cost(o)).map(StoredObject::value);
                    let old_meta = old.as_ref().and_then(|o| o.pointer(&format!("/{}/metadata", path.join("/"))));
                    let at = at.trim_end_matches(".spec");
                    crate::pod_annotations::template(template.get("metadata"), &spec, at, old_meta)
                }
                _ => Default::default(),
            };
            causes.extend(before);
            causes.extend(crate::pod_spec_validation::validate(&spec, &at, owner));
            causes.extend(after);
        }
    }
    if info.is_core("pods") {
        use crate::strategy::Target;
        match (target, old) {
            (Target::Main, None) => {
                causes.extend(crate::pod_ephemeral_containers::validate_create(obj));
                causes.extend(crate::pod_spec_fields::gated_node_name(obj));
                let empty = Value::Object(Map::new());
                let spec = obj.get("spec").unwrap_or(&empty);
                causes.extend(crate::pod_annotations::fields_match(crate::pod_annotations::of(obj), spec, "spec"));
            }
            (Target::EphemeralContainers, Some(old)) => {
                causes.extend(crate::pod_ephemeral_containers::validate_update(obj, &as_map(old.value())))
            }
            (Target::Resize, Some(old)) => causes.extend(crate::pod_resize::validate(obj, &as_map(old.value()))),
            _ => {}
        }
    }
    if let Some((_, after)) = pod_annotations {
        causes.extend(after);
    }
    if info.is_core("pods")
        && target == crate::strategy::Target::Status
        && let Some(old) = old
    {
        causes.extend(crate::pod_status::validate(obj, &old.value()));
    }
    if info.is_core("pods")
        && target == crate::strategy::Target::Main
        && let Some(old) = old
    {
        // Only the stored spec is read.
        let old_spec: Map<String, Value> =
            old.spec_bytes().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default();
        let empty = Map::new();
        causes.extend(crate::pod_validation::validate_update(
            obj.get("spec").and_then(Value::as_object).unwrap_or(&empty),
            &old_spec,
        ));
    }
    if info.is_core("persistentvolumeclaims") && target == crate::strategy::Target::Main {
        let empty = Value::Object(Map::new());
        crate::pvc_validation::validate_spec(obj.get("spec").unwrap_or(&empty), "spec", &mut causes);
        if let Some(old) = old {
            causes.extend(crate::pvc_validation::validate_update(obj, &as_map(old.value())));
        }
    }
    if info.group == "autoscaling" && info.plural == "horizontalpodautoscalers" {
        let old = old.and_then(|o| match o.value() {
            Value::Object(m) if crate::autoscaling_v1::is_v1(info) => Some(crate::autoscaling_v1::to_v2(&m)),
            Value::Object(m) => Some(m),
            _ => None,
        });
        let status = target == crate::strategy::Target::Status;
        causes.extend(if crate::autoscaling_v1::is_v1(info) {
            crate::hpa_validation::validate(&crate::autoscaling_v1::converted(obj), old.as_ref(), status)
        } else {
            crate::hpa_validation::validate(obj, old.as_ref(), status)
        });
    }
    if crate::defaults::is_priority_class(info) {
        causes.extend(priority_class(obj, old));
    }
    if info.group == "coordination.k8s.io" && info.plural == "leases" {
        causes.extend(lease_spec(obj));
    }
    // (The stored object is read only for the kinds whose rules compare with it.)
    let stored = || old.map(|o| as_map(o.value()));
    let mut warnings = Vec::new();
    if crate::runtime_class::is_runtime_classes(info) {
        causes.extend(crate::runtime_class::validate(obj, stored().as_ref()));
        warnings = crate::runtime_class::warnings(obj);
    } else if crate::api_service::is_api_services(info) {
        causes.extend(crate::api_service::validate(obj));
    } else if crate::service_cidr::judges(info) {
        let status = target == crate::strategy::Target::Status;
        causes.extend(crate::service_cidr::validate(info, obj, stored().as_ref(), status));
    } else if crate::flowcontrol::judges(info) {
        causes.extend(crate::flowcontrol_validation::validate(info, obj, target == crate::strategy::Target::Status));
    } else if crate::dra_validation::judges(info) {
        let status = target == crate::strategy::Target::Status;
        causes.extend(crate::dra_validation::validate(info, obj, stored().as_ref(), status));
        warnings = crate::dra_validation::warnings(info, obj);
    } else if crate::endpoints_validation::judges(info) && target == crate::strategy::Target::Main {
        causes.extend(crate::endpoints_validation::validate(info, obj, stored().as_ref()));
        warnings = crate::endpoints_validation::warnings(info, obj, old.is_none());
    } else if crate::csi_validation::judges(info) {
        let stored = stored();
        causes.extend(crate::csi_validation::validate(info, obj, stored.as_ref()));
        warnings = crate::csi_validation::warnings(info, obj, stored.as_ref());
    }
    if !causes.is_empty() {
        return Err(crate::custom_resource::invalid(info, name, &causes));
    }
    warnings.into_iter().for_each(crate::warning::record);
    let events_api = crate::events_api::is_events_api(info);
    if events_api || (info.group.is_empty() && info.plural == "events") {
        // Judged in the core form, named as kube's one Event type.
        let core = if events_api { crate::events_api::to_core(obj) } else { obj.clone() };
        let causes = match old {
            Some(old) if events_api => {
                // The old object comes as the request's API shows it.
                let old = match old.value() {
                    Value::Object(o) if o.get("apiVersion").and_then(Value::as_str) != Some("v1") => {
                        crate::events_api::to_core(&o)
                    }
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                event_update(&core, &old)
            }
            _ => event(&core, events_api && old.is_none(), events_api),
        };
        if !causes.is_empty() {
            let name = core.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
            return Err(crate::custom_resource::invalid(crate::events_api::core(), name, &causes));
        }
    }
    if !deferred.is_empty() {
        return Err(crate::custom_resource::invalid(info, name, &deferred));
    }
    Ok(())
}

/// The causes of a pod's own annotations ([`crate::pod_annotations`]) on a create, update or
/// `/status` write over `old`: those kube gives before the spec, and those after it. A pod's
/// update judges them before its spec, then gives the update's rules on them and judges them
/// again; a `/status` write gives the rules and judges them once (before any rule of its status).
fn pod_annotation_causes(
    obj: &Map<String, Value>,
    old: Option<&StoredObject>,
    status: bool,
) -> (Vec<crate::structural::Cause>, Vec<crate::structural::Cause>) {
    use crate::pod_annotations::{of, updates, validate};
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let annotations = of(obj);
    let Some(old) = old else {
        return (validate(annotations, spec, "metadata.annotations", true), Vec::new());
    };
    let old_annotations = crate::pod_annotations::stored(old);
    let strict = crate::pod_annotations::strict_cost_over(&old_annotations);
    let judged = validate(annotations, spec, "metadata.annotations", strict);
    let mut after = updates(annotations, &old_annotations, "metadata.annotations");
    after.extend(judged.iter().cloned());
    (if status { Vec::new() } else { judged }, after)
}

/// Whether an update leaves the pod spec (a pod's, a PodTemplate's template) or a workload's spec
/// as stored (the comparison that keeps the generation). Such a spec is not judged again: it was
/// judged when it was stored, and an object stored before a rule existed can still lose its
/// finalizers or change its labels.
fn spec_unchanged(info: &ResourceInfo, obj: &Map<String, Value>, old: &StoredObject) -> bool {
    if info.is_core("podtemplates") {
        return crate::strategy::template_as_stored(old, obj, info);
    }
    (info.is_core("pods") || crate::pod_security::template_path(info).is_some())
        && crate::strategy::spec_as_stored(old, obj, info)
}

/// The highest priority a PriorityClass outside kube's system classes may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// kube's checks of a PriorityClass (`ValidatePriorityClass`, and `ValidatePriorityClassUpdate`
/// over `old`): names starting `system-` are kube's own classes, with their values; others are
/// at most [`HIGHEST_USER_PRIORITY`]; the preemption policy is one kube knows; the value and the
/// policy never change.
fn priority_class(obj: &Map<String, Value>, old: Option<&StoredObject>) -> Vec<crate::structural::Cause> {
    use crate::structural::Cause;
    let mut causes = Vec::new();
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    if let Some(old) = old {
        // An update is judged only on what may not change.
        let old = old.value();
        let forbidden = Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: may not be changed in an update.".into(),
            field: "value".into(),
        };
        if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
            causes.push(forbidden);
        }
        let policy = obj.get("preemptionPolicy");
        if old.get("preemptionPolicy") != policy {
            let shown = policy.and_then(Value::as_str).map_or("null".to_string(), |p| format!("{p:?}"));
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {shown}: field is immutable"),
                field: "preemptionPolicy".into(),
            });
        }
        return causes;
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let global_default = obj.get("globalDefault") == Some(&Value::Bool(true));
    let forbidden = |field: &str, message: String| Cause {
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {message}"),
        field: field.into(),
    };
    if name.starts_with("system-") {
        let known = crate::defaults::SYSTEM_PRIORITY_CLASSES.iter().find(|(n, ..)| *n == name);
        let fault = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v, _)) if *v != value => Some(format!("value of {name} PriorityClass must be {v}")),
            Some(_) if global_default => Some(format!("globalDefault of {name} PriorityClass must be false")),
            Some(_) => None,
        };
        if let Some(e) = fault {
            causes.push(forbidden(
                "metadata.name",
                format!("priority class names with 'system-' prefix are reserved for system use only. error: {e}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        causes.push(forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    match obj.get("preemptionPolicy").and_then(Value::as_str) {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => causes.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: "preemptionPolicy".into(),
        }),
        Some(other) => causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(r#"Unsupported value: "{other}": supported values: "PreemptLowerPriority", "Never""#),
            field: "preemptionPolicy".into(),
        }),
    }
    causes
}

/// kube's `ValidateLeaseSpec`, on creates and updates: a positive duration, transitions not
/// below zero, a strategy kube defines or a qualified name (under kube's doubled path
/// `spec.strategy.strategy`), a preferred holder only with a strategy (the last two only reach
/// it on a lease that had them before their feature was left off, see
/// [`crate::strategy::prepare_update`]).
fn lease_spec(obj: &Map<String, Value>) -> Vec<crate::structural::Cause> {
    use crate::structural::Cause;
    let spec = obj.get("spec");
    let number = |f: &str| spec.and_then(|s| s.get(f)).and_then(Value::as_i64);
    let text = |f: &str| spec.and_then(|s| s.get(f)).and_then(Value::as_str);
    let mut causes = Vec::new();
    let mut check = |field: &str, bad: fn(i64) -> bool, detail: &str| {
        if let Some(v) = number(field).filter(|v| bad(*v)) {
            causes.push(crate::structural::Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {v}: {detail}"),
                field: format!("spec.{field}"),
            });
        }
    };
    check("leaseDurationSeconds", |v| v <= 0, "must be greater than 0");
    check("leaseTransitions", |v| v < 0, "must be greater than or equal to 0");
    let strategy = text("strategy");
    match strategy {
        None => {}
        Some("OldestEmulationVersion") => {}
        Some(s) if !s.contains('/') => causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(r#"Unsupported value: "{s}": supported values: "OldestEmulationVersion""#),
            field: "spec.strategy.strategy".into(),
        }),
        Some(s) => causes.extend(crate::cel_format::qualified_name(s).into_iter().map(|m| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: {m}", crate::structural::go_quote(s)),
            field: "spec.strategy.strategy".into(),
        })),
    }
    if text("preferredHolder").is_some_and(|h| !h.is_empty()) && strategy.is_none_or(str::is_empty) {
        causes.push(Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: may only be specified if `strategy` is defined".into(),
            field: "spec.preferredHolder".into(),
        });
    }
    causes
}

/// kube's checks of an Event's `series` (events.k8s.io).
fn event_series(e: &Map<String, Value>) -> Vec<crate::structural::Cause> {
    use crate::structural::Cause;
    let mut causes = Vec::new();
    if let Some(series) = e.get("series").filter(|s| s.is_object()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: "Invalid value: \"\": should be at least 2".into(),
                field: "series.count".into(),
            });
        }
        if series.get("lastObservedTime").is_none_or(|t| t.is_null() || t.as_str() == Some("")) {
            causes.push(Cause {
                reason: "FieldValueRequired",
                message: "Required value".into(),
                field: "series.lastObservedTime".into(),
            });
        }
    }
    causes
}

/// kube's checks of an update through events.k8s.io/v1 (`new` and `old` in the core form): the
/// legacy checks, the series when it changed, and every field but the series and metadata
/// immutable (`eventTime` to the microsecond), named by their core/v1 names.
fn event_update(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<crate::structural::Cause> {
    use crate::structural::{Cause, go_quote};
    let mut causes = event(new, false, true);
    let field = |e: &Map<String, Value>, k: &str| e.get(k).filter(|v| !v.is_null()).cloned();
    if field(new, "series") != field(old, "series") {
        causes.extend(event_series(new));
    }
    let text = |e: &Map<String, Value>, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    // kube's internal types, as its field errors print them: JSON with Go's field names (the
    // internal types have no JSON names of their own); unset, the zero value.
    let go_struct = |v: Option<&Value>, fields: &[(&str, &str)]| -> String {
        let part = |k: &str| go_quote(v.and_then(|v| v.get(k)).and_then(Value::as_str).unwrap_or(""));
        let values: Vec<(&str, String)> = fields.iter().map(|(go, json)| (*go, part(json))).collect();
        crate::structural::go_struct(&values)
    };
    const REFERENCE: [(&str, &str); 7] = [
        ("Kind", "kind"),
        ("Namespace", "namespace"),
        ("Name", "name"),
        ("UID", "uid"),
        ("APIVersion", "apiVersion"),
        ("ResourceVersion", "resourceVersion"),
        ("FieldPath", "fieldPath"),
    ];
    let reference = |v: Option<Value>| go_struct(v.as_ref(), &REFERENCE);
    let source = |e: &Map<String, Value>| go_struct(e.get("source"), &[("Component", "component"), ("Host", "host")]);
    let count = |e: &Map<String, Value>| e.get("count").and_then(Value::as_i64).unwrap_or(0).to_string();
    let time = |e: &Map<String, Value>, k: &str, micro: bool| go_time(e.get(k).and_then(Value::as_str), micro);
    // Timestamps are compared whole (eventTime to the microsecond) and printed as kube prints them.
    let instant = |e: &Map<String, Value>, k: &str| {
        e.get(k).and_then(Value::as_str).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    let quoted = |e: &Map<String, Value>, k: &str| go_quote(&text(e, k));
    // (field, value) in kube's order.
    let rendered = |e: &Map<String, Value>| -> Vec<(&'static str, String)> {
        vec![
            ("involvedObject", reference(field(e, "involvedObject"))),
            ("reason", quoted(e, "reason")),
            ("message", quoted(e, "message")),
            ("source", source(e)),
            ("firstTimestamp", time(e, "firstTimestamp", false)),
            ("lastTimestamp", time(e, "lastTimestamp", false)),
            ("count", count(e)),
            ("reason", quoted(e, "reason")),
            ("type", quoted(e, "type")),
            ("eventTime", time(e, "eventTime", true)),
            ("action", quoted(e, "action")),
            ("related", field(e, "related").map_or_else(|| "null".into(), |r| reference(Some(r)))),
            ("reportingController", quoted(e, "reportingComponent")),
            ("reportingInstance", quoted(e, "reportingInstance")),
        ]
    };
    for ((name, now), (_, before)) in rendered(new).into_iter().zip(rendered(old)) {
        let differs = match name {
            "firstTimestamp" | "lastTimestamp" => instant(new, name) != instant(old, name),
            _ => now != before,
        };
        if differs {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {now}: field is immutable"),
                field: name.into(),
            });
        }
    }
    causes
}

/// A timestamp as kube's field errors print it: JSON, `"2006-01-02T15:04:05Z"` (to the
/// microsecond for `micro`, as MicroTime), `null` when unset.
pub(crate) fn go_time(v: Option<&str>, micro: bool) -> String {
    let Some(t) = v.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok()) else {
        return "null".into();
    };
    let t = t.with_timezone(&chrono::Utc);
    if micro {
        format!("\"{}\"", t.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
    } else {
        format!("\"{}\"", t.format("%Y-%m-%dT%H:%M:%SZ"))
    }
}

/// kube's checks of an Event in its core form (`legacyValidateEvent`, and on a create through
/// events.k8s.io/v1, `strict`, `ValidateEventCreate`'s): an event with an `eventTime` names its
/// reporting controller, instance, action and reason within kube's lengths; its namespace agrees
/// with the involved object's. `events_api` when the request came through events.k8s.io, which
/// names the reporting controller `reportingController` (core/v1: `reportingComponent`).
fn event(e: &Map<String, Value>, strict: bool, events_api: bool) -> Vec<crate::structural::Cause> {
    use crate::structural::Cause;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let set = |k: &str| e.get(k).is_some_and(|v| !v.is_null() && v.as_str() != Some(""));
    let namespace = text(e.get("metadata").and_then(|m| m.get("namespace")));
    let involved_ns = text(e.get("involvedObject").and_then(|o| o.get("namespace")));
    let invalid = |field: &str, value: &str, detail: String| Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {value:?}: {detail}"),
        field: field.into(),
    };
    let required =
        |field: &str| Cause { reason: "FieldValueRequired", message: "Required value".into(), field: field.into() };
    let mut causes = Vec::new();
    let mismatch = || invalid("involvedObject.namespace", &involved_ns, "does not match event.namespace".into());
    let has_time = set("eventTime");
    if !has_time {
        if involved_ns.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                causes.push(mismatch());
            }
        } else if namespace != involved_ns {
            causes.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(e.get("reportingComponent"));
        let controller_field = if events_api { "reportingController" } else { "reportingComponent" };
        if controller.is_empty() {
            causes.push(required(controller_field));
        }
        for f in crate::cel_format::qualified_name(&controller) {
            causes.push(invalid(controller_field, &controller, f));
        }
        for (field, key, limit) in
            [("reportingInstance", "reportingInstance", 128), ("action", "action", 128), ("reason", "reason", 128)]
        {
            let value = text(e.get(key));
            if value.is_empty() {
                causes.push(required(field));
            }
            if value.len() > limit {
                causes.push(invalid(field, "", format!("can have at most {limit} characters")));
            }
        }
        if text(e.get("message")).len() > 1024 {
            causes.push(invalid("message", "", "can have at most 1024 characters".into()));
        }
    }
    for f in crate::cel_format::dns1123_subdomain(&namespace) {
        causes.push(invalid("namespace", &namespace, f));
    }
    if !strict {
        return causes;
    }
    causes.extend(event_series(e));
    if !has_time {
        causes.push(required("eventTime"));
    }
    let kind = text(e.get("type"));
    if kind != "Normal" && kind != "Warning" {
        causes.push(invalid("type", "", format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if set(field) {
            causes.push(invalid(field, "", "needs to be unset".into()));
        }
    }
    if e.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        causes.push(invalid("count", "", "needs to be unset".into()));
    }
    let source = e.get("source");
    if !text(source.and_then(|s| s.get("component"))).is_empty() || !text(source.and_then(|s| s.get("host"))).is_empty()
    {
        causes.push(invalid("source", "", "needs to be unset".into()));
    }
    causes
}

fn as_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::Registry;
    use crate::strategy::Target;

    fn statefulset(container: &str, replicas: i64) -> Map<String, Value> {
        let sts = json!({"metadata": {"name": "db", "namespace": "default"}, "spec": {"replicas": replicas,
            "podManagementPolicy": "OrderedReady", "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": container, "image": "postgres",
                "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}],
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}}});
        as_map(sts)
    }

    #[test]
    fn a_statefulset_stored_with_a_failing_template_may_still_be_updated() {
        let info = Registry::with_defaults().lookup("statefulsets").map(|i| (**i).clone()).unwrap();
        let refused = validate(&info, &statefulset("Bad_Name", 1), None, Target::Main, Vec::new()).unwrap_err();
        assert!(refused.message.contains("spec.template.spec.containers[0].name"), "{}", refused.message);
        // kube ratchets: the template is judged on an update only when the stored one passes.
        let stored = crate::object::build(&info, &statefulset("Bad_Name", 1), 5);
        assert!(validate(&info, &statefulset("Bad_Name", 2), Some(&stored), Target::Main, Vec::new()).is_ok());
        let stored = crate::object::build(&info, &statefulset("good", 1), 5);
        let refused =
            validate(&info, &statefulset("Bad_Name", 2), Some(&stored), Target::Main, Vec::new()).unwrap_err();
        assert!(refused.message.contains("spec.template.spec.containers[0].name"), "{}", refused.message);
    }

    #[test]
    fn an_update_that_leaves_the_spec_as_stored_is_not_judged_on_it() {
        let info = Registry::with_defaults().lookup("pods").map(|i| (**i).clone()).unwrap();
        // A pod stored without containers (as an older server stored it) can still lose its
        // finalizers; one whose spec changes is judged.
        let mut stored = as_map(json!({"metadata": {"name": "p", "namespace": "default", "finalizers": ["x"]},
            "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}));
        crate::defaults::decode(&info, &mut stored);
        crate::defaults::go_stored(&info, &mut stored);
        let stored = crate::object::build(&info, &stored, 5);
        // (An empty list is no change: the server stores none.)
        let mut released = as_map(json!({"metadata": {"name": "p", "namespace": "default"},
            "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "tolerations": []}}));
        crate::defaults::decode(&info, &mut released);
        let judged = validate(&info, &released, Some(&stored), Target::Main, Vec::new());
        assert!(judged.is_ok(), "{judged:?}");
        // (A toleration added is a change pod updates may make.)
        let mut changed = released.clone();
        changed["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
        let refused = validate(&info, &changed, Some(&stored), Target::Main, Vec::new()).unwrap_err();
        assert_eq!(refused.message, "Pod \"p\" is invalid: spec.containers: Required value");
    }
}

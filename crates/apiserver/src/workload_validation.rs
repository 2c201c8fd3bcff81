//! The workloads' own rules, judged as kube-apiserver judges Deployments, ReplicaSets,
//! DaemonSets, StatefulSets (apps/v1) and ReplicationControllers: counts that are not negative, a
//! selector that is valid, not empty and matches the pod template's labels, a template whose pods
//! restart `Always` and have no deadline, rollout strategies kube can follow; on update a selector
//! that does not change (a StatefulSet changes only the fields kube lets it change).
//!
//! The pod template itself is judged here too, in its place among these rules, by
//! [`crate::pod_spec_validation`]; a missing template is judged as the empty one Go would
//! default.
//!
//! Invariants: only the object (and the stored version an update replaces) is read; causes come
//! in kube's order, with its field paths and messages, values rendered as kube's field errors
//! render them (JSON for maps and selectors).

use serde_json::{Map, Value};

use crate::pod_spec_validation::{Owner, int};
use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::{Cause, go_value};

/// The workload kinds judged here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deployment,
    ReplicaSet,
    DaemonSet,
    StatefulSet,
    ReplicationController,
}

impl Kind {
    fn of(info: &crate::registry::ResourceInfo) -> Option<Kind> {
        Some(match (info.group.as_str(), info.plural.as_str()) {
            ("apps", "deployments") => Kind::Deployment,
            ("apps", "replicasets") => Kind::ReplicaSet,
            ("apps", "daemonsets") => Kind::DaemonSet,
            ("apps", "statefulsets") => Kind::StatefulSet,
            ("", "replicationcontrollers") => Kind::ReplicationController,
            _ => return None,
        })
    }

    /// The name kube's messages give the kind.
    fn name(self) -> &'static str {
        match self {
            Kind::Deployment | Kind::ReplicaSet => "ReplicaSet",
            Kind::DaemonSet => "DaemonSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::ReplicationController => "ReplicationController",
        }
    }
}

/// The causes for which kube refuses the workload `obj` (over `old` on an update); None for
/// other resources.
pub(crate) fn validate(
    info: &crate::registry::ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&crate::object::StoredObject>,
) -> Option<Vec<Cause>> {
    let kind = Kind::of(info)?;
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let old = old.map(|o| stored_with_defaults(info, o));
    let old_spec = old.as_ref().map(|o| o.get("spec").unwrap_or(&empty));
    let create = old.is_none();
    // kube ratchets a StatefulSet's template: an update is not judged on it when the stored
    // spec already fails.
    let skip_template =
        kind == Kind::StatefulSet && old_spec.is_some_and(|o| !spec_causes(kind, o, false, false, None).is_empty());
    // A StatefulSet's service name is judged on create only (updates keep names stored before).
    let mut causes = spec_causes(kind, spec, skip_template, create, old_spec);
    if let (Some(old_spec), Kind::StatefulSet) = (old_spec, kind) {
        statefulset_update(spec, old_spec, &mut causes);
    }
    if let (Some(old_spec), Kind::Deployment | Kind::ReplicaSet | Kind::DaemonSet) = (old_spec, kind) {
        let now = spec.get("selector").filter(|s| !s.is_null());
        if !crate::semantic::equal(now, old_spec.get("selector")) {
            causes.push(invalid_value("spec.selector", &shown_selector(now), "field is immutable"));
        }
    }
    Some(causes)
}

/// The stored object as kube reads it back: with today's defaults.
pub(crate) fn stored_with_defaults(info: &crate::registry::ResourceInfo, old: &crate::object::StoredObject) -> Value {
    let mut m = match old.value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    crate::defaults::decode(info, &mut m);
    Value::Object(m)
}

/// The causes of a workload's spec (kube's `Validate<Kind>Spec`) written over `old_spec`;
/// `skip_template` leaves its pod template unjudged, `create` judges what kube judges of a
/// StatefulSet only on create (its service name and volume claim templates).
fn spec_causes(kind: Kind, spec: &Value, skip_template: bool, create: bool, old_spec: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    match kind {
        Kind::Deployment => {
            nonnegative(spec, "replicas", &mut causes);
            if selector(spec, "deployment", true, &mut causes) {
                template(kind, spec, skip_template, old_spec, &mut causes);
            }
            deployment_strategy(spec, &mut causes);
            nonnegative(spec, "minReadySeconds", &mut causes);
            nonnegative(spec, "revisionHistoryLimit", &mut causes);
            if let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
                nonnegative(spec, "progressDeadlineSeconds", &mut causes);
                if deadline <= int(spec, "minReadySeconds") {
                    causes.push(number(
                        "spec.progressDeadlineSeconds",
                        deadline,
                        "must be greater than minReadySeconds",
                    ));
                }
            }
        }
        Kind::ReplicaSet => {
            nonnegative(spec, "replicas", &mut causes);
            nonnegative(spec, "minReadySeconds", &mut causes);
            // kube names Deployments in a ReplicaSet's message too.
            if selector(spec, "deployment", true, &mut causes) {
                template(kind, spec, skip_template, old_spec, &mut causes);
            }
        }
        Kind::DaemonSet => {
            let sel = spec.get("selector").filter(|s| !s.is_null());
            if let Some(sel) = sel {
                crate::webhook_configuration::check_selector(sel, "spec.selector", &mut causes);
            }
            let parsed = causes.is_empty();
            if parsed {
                template_labels_match(spec, &mut causes);
            }
            if sel.is_some_and(is_empty_selector) {
                causes.push(invalid_value(
                    "spec.selector",
                    &shown_selector(sel),
                    "empty selector is invalid for daemonset",
                ));
            }
            template_spec(kind, spec, skip_template, old_spec, &mut causes);
            template_rules(kind, spec, &mut causes);
            nonnegative(spec, "minReadySeconds", &mut causes);
            nonnegative(spec, "templateGeneration", &mut causes);
            daemonset_strategy(spec, &mut causes);
            nonnegative(spec, "revisionHistoryLimit", &mut causes);
        }
        Kind::StatefulSet => {
            match spec.get("podManagementPolicy").and_then(Value::as_str).unwrap_or("") {
                "" => causes.push(required("spec.podManagementPolicy".into(), "")),
                "OrderedReady" | "Parallel" => {}
                other => causes.push(invalid(
                    "spec.podManagementPolicy".into(),
                    other,
                    "must be 'OrderedReady' or 'Parallel'",
                )),
            }
            statefulset_strategy(spec, &mut causes);
            for key in ["whenDeleted", "whenScaled"] {
                let at = format!("spec.persistentVolumeClaimRetentionPolicy.{key}");
                let policy = spec.get("persistentVolumeClaimRetentionPolicy").and_then(|p| p.get(key));
                match policy.and_then(Value::as_str) {
                    None | Some("Retain" | "Delete") => {}
                    Some(other) => causes.push(unsupported(at, other, &["Retain", "Delete"])),
                }
            }
            if create {
                let templates = spec.get("volumeClaimTemplates").and_then(Value::as_array).into_iter().flatten();
                for (i, claim) in templates.enumerate() {
                    let claim_spec = claim.get("spec").unwrap_or(&Value::Null);
                    let at = format!("spec.volumeClaimTemplates[{i}].spec");
                    crate::pvc_validation::validate_spec(claim_spec, &at, &mut causes);
                }
            }
            nonnegative(spec, "replicas", &mut causes);
            nonnegative(spec, "minReadySeconds", &mut causes);
            if let Some(start) = spec.pointer("/ordinals/start").and_then(Value::as_i64).filter(|s| *s < 0) {
                causes.push(number("spec.ordinals.start", start, "must be greater than or equal to 0"));
            }
            let name = spec.get("serviceName").and_then(Value::as_str).unwrap_or("");
            if create && !name.is_empty() {
                for fault in crate::cel_format::dns1123_label(name) {
                    causes.push(invalid("spec.serviceName".into(), name, &fault));
                }
            }
            if selector(spec, "statefulset", true, &mut causes) {
                template_labels_match(spec, &mut causes);
                template_spec(kind, spec, skip_template, old_spec, &mut causes);
            }
            // Whether or not the selector could be read.
            template_rules(kind, spec, &mut causes);
        }
        Kind::ReplicationController => {
            nonnegative(spec, "minReadySeconds", &mut causes);
            let sel = spec.get("selector").and_then(Value::as_object).filter(|s| !s.is_empty());
            if sel.is_none() {
                causes.push(required("spec.selector".into(), ""));
            }
            nonnegative(spec, "replicas", &mut causes);
            if spec.get("template").is_none_or(Value::is_null) {
                causes.push(required("spec.template".into(), ""));
            } else {
                if let Some(sel) = sel {
                    let labels = spec.pointer("/template/metadata/labels");
                    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
                    if sel.iter().any(|(k, v)| label(k) != v.as_str()) {
                        causes.push(mismatch(labels));
                    }
                }
                template_spec(kind, spec, skip_template, old_spec, &mut causes);
                template_rules(kind, spec, &mut causes);
            }
        }
    }
    causes
}

/// kube's checks of a workload's `LabelSelector`: required, valid and not empty. Answers whether
/// it could be read as a selector (when it could not, kube says so and leaves the template).
fn selector(spec: &Value, kind: &str, must_have: bool, causes: &mut Vec<Cause>) -> bool {
    let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) else {
        if must_have {
            causes.push(required("spec.selector".into(), ""));
        }
        return true;
    };
    let before = causes.len();
    crate::webhook_configuration::check_selector(sel, "spec.selector", causes);
    let parsed = causes.len() == before;
    if is_empty_selector(sel) {
        causes.push(invalid_value(
            "spec.selector",
            &shown_selector(Some(sel)),
            &format!("empty selector is invalid for {kind}"),
        ));
    }
    if !parsed {
        let detail = if kind == "statefulset" { "" } else { "invalid label selector" };
        causes.push(invalid_value("spec.selector", &shown_selector(Some(sel)), detail));
    }
    parsed
}

/// The template of a ReplicaSet-like workload (kube's `ValidatePodTemplateSpecForReplicaSet`
/// and its StatefulSet form): labels the selector matches, the pod spec, then the pods' restart
/// policy and deadline.
fn template(kind: Kind, spec: &Value, skip_template: bool, old_spec: Option<&Value>, causes: &mut Vec<Cause>) {
    template_labels_match(spec, causes);
    template_spec(kind, spec, skip_template, old_spec, causes);
    template_rules(kind, spec, causes);
}

/// kube's refusal of template labels the selector does not match. A missing selector matches
/// nothing; an empty one, everything.
pub(crate) fn template_labels_match(spec: &Value, causes: &mut Vec<Cause>) {
    let labels = spec.pointer("/template/metadata/labels");
    let matches = match spec.get("selector").filter(|s| !s.is_null()) {
        None => false,
        Some(sel) => crate::admission_policy::selector_matches(sel, labels.unwrap_or(&Value::Null)),
    };
    if !matches {
        causes.push(mismatch(labels));
    }
}

fn mismatch(labels: Option<&Value>) -> Cause {
    let shown = labels.filter(|l| !l.is_null()).map_or_else(|| "null".to_string(), go_value);
    invalid_value("spec.template.metadata.labels", &shown, "`selector` does not match template `labels`")
}

/// The template's metadata and pod spec, as [`crate::pod_annotations`] and
/// [`crate::pod_spec_validation`] judge them (a StatefulSet's with its claim templates as
/// volumes), unless `skip`; written over the template of `old_spec`.
fn template_spec(kind: Kind, spec: &Value, skip: bool, old_spec: Option<&Value>, causes: &mut Vec<Cause>) {
    if skip {
        return;
    }
    let pod_spec = match kind {
        Kind::StatefulSet => crate::pod_spec_validation::statefulset_pod_spec(spec),
        _ => spec.pointer("/template/spec").cloned(),
    };
    let pod_spec = pod_spec.unwrap_or_else(crate::pod_spec_validation::zero_template_spec);
    let (meta, old_meta) = (spec.pointer("/template/metadata"), old_spec.and_then(|o| o.pointer("/template/metadata")));
    let (before, after) = crate::pod_annotations::template(meta, &pod_spec, "spec.template", old_meta);
    causes.extend(before);
    causes.extend(crate::pod_spec_validation::validate(&pod_spec, "spec.template.spec", Owner::Template));
    causes.extend(after);
}

/// What a workload's pods may not be: restarted other than `Always`, or given a deadline.
fn template_rules(kind: Kind, spec: &Value, causes: &mut Vec<Cause>) {
    let pod_spec = spec.pointer("/template/spec");
    let policy = pod_spec.and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or("Always");
    if policy != "Always" {
        causes.push(unsupported("spec.template.spec.restartPolicy".into(), policy, &["Always"]));
    }
    if pod_spec.and_then(|s| s.get("activeDeadlineSeconds")).is_some_and(|d| !d.is_null()) {
        causes.push(crate::pod_validation::forbidden(
            "spec.template.spec.activeDeadlineSeconds".into(),
            &format!("activeDeadlineSeconds in {} is not Supported", kind.name()),
        ));
    }
}

/// A Deployment's rollout strategy: no rolling parameters for `Recreate`; rolling parameters
/// that are counts or percentages, not both zero, and at most all pods unavailable.
fn deployment_strategy(spec: &Value, causes: &mut Vec<Cause>) {
    let strategy = spec.get("strategy");
    let rolling = strategy.and_then(|s| s.get("rollingUpdate")).filter(|r| !r.is_null());
    match strategy.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("") {
        "Recreate" if rolling.is_some() => causes.push(crate::pod_validation::forbidden(
            "spec.strategy.rollingUpdate".into(),
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        "RollingUpdate" => {
            let Some(rolling) = rolling else {
                causes
                    .push(required("spec.strategy.rollingUpdate".into(), "this should be defaulted and never be nil"));
                return;
            };
            let at = "spec.strategy.rollingUpdate";
            let unavailable = rolling.get("maxUnavailable");
            let surge = rolling.get("maxSurge");
            int_or_percent(unavailable, &format!("{at}.maxUnavailable"), causes);
            int_or_percent(surge, &format!("{at}.maxSurge"), causes);
            if amount(unavailable) == 0 && amount(surge) == 0 {
                let shown = unavailable.map_or_else(|| "null".to_string(), go_value);
                causes.push(invalid_value(
                    &format!("{at}.maxUnavailable"),
                    &shown,
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            at_most_all(unavailable, &format!("{at}.maxUnavailable"), causes);
        }
        "Recreate" => {}
        _ => unknown_strategy("spec.strategy", strategy, &["Recreate", "RollingUpdate"], causes),
    }
}

/// A count or percentage as Go's JSON writes an `IntOrString` (0 when unset).
fn int_or_string(m: &Value, key: &str) -> String {
    m.get(key).filter(|v| !v.is_null()).map_or_else(|| "0".to_string(), go_value)
}

/// kube's refusal of a Deployment's or DaemonSet's strategy type it does not know: the
/// strategy shown as Go's JSON of its internal type (whose rolling parameters both kinds share).
fn unknown_strategy(at: &str, strategy: Option<&Value>, supported: &[&str], causes: &mut Vec<Cause>) {
    let rolling = strategy.and_then(|s| s.get("rollingUpdate")).filter(|r| !r.is_null()).map_or_else(
        || "null".to_string(),
        |r| {
            format!(
                r#"{{"MaxUnavailable":{},"MaxSurge":{}}}"#,
                int_or_string(r, "maxUnavailable"),
                int_or_string(r, "maxSurge")
            )
        },
    );
    let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("");
    let shown = format!(r#"{{"Type":{},"RollingUpdate":{rolling}}}"#, go_value(&Value::String(kind.into())));
    let list: Vec<String> = supported.iter().map(|s| go_value(&Value::String((*s).into()))).collect();
    causes.push(Cause {
        reason: "FieldValueNotSupported",
        message: format!("Unsupported value: {shown}: supported values: {}", list.join(", ")),
        field: at.into(),
    });
}

/// A DaemonSet's update strategy: rolling parameters that are counts or percentages, at most
/// all nodes, and exactly one of them not zero.
fn daemonset_strategy(spec: &Value, causes: &mut Vec<Cause>) {
    let strategy = spec.get("updateStrategy");
    let at = "spec.updateStrategy.rollingUpdate";
    match strategy.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("") {
        "RollingUpdate" => {}
        "OnDelete" => return,
        _ => return unknown_strategy("spec.updateStrategy", strategy, &["RollingUpdate", "OnDelete"], causes),
    }
    let Some(rolling) = strategy.and_then(|s| s.get("rollingUpdate")).filter(|r| !r.is_null()) else {
        causes.push(required(at.into(), ""));
        return;
    };
    let unavailable = rolling.get("maxUnavailable");
    let surge = rolling.get("maxSurge");
    int_or_percent(unavailable, &format!("{at}.maxUnavailable"), causes);
    int_or_percent(surge, &format!("{at}.maxSurge"), causes);
    at_most_all(unavailable, &format!("{at}.maxUnavailable"), causes);
    at_most_all(surge, &format!("{at}.maxSurge"), causes);
    match (amount(unavailable), amount(surge)) {
        (0, 0) => causes.push(required(format!("{at}.maxUnavailable"), "cannot be 0 when maxSurge is 0")),
        (u, s) if u != 0 && s != 0 => {
            let shown = surge.map_or_else(|| "null".to_string(), go_value);
            causes.push(invalid_value(
                &format!("{at}.maxSurge"),
                &shown,
                "may not be set when maxUnavailable is non-zero",
            ));
        }
        _ => {}
    }
}

/// A StatefulSet's update strategy: a type kube knows, rolling parameters only for
/// `RollingUpdate`, a partition not negative, a number or percentage of pods unavailable that
/// is not zero and at most all of them.
fn statefulset_strategy(spec: &Value, causes: &mut Vec<Cause>) {
    let strategy = spec.get("updateStrategy");
    let rolling = strategy.and_then(|s| s.get("rollingUpdate")).filter(|r| !r.is_null());
    let shown_rolling = |r: &Value| {
        let unavailable = r.get("maxUnavailable").filter(|v| !v.is_null()).map_or_else(|| "null".to_string(), go_value);
        format!(r#"{{"Partition":{},"MaxUnavailable":{unavailable}}}"#, int(r, "partition"))
    };
    let at = "spec.updateStrategy";
    match strategy.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(required(at.into(), "")),
        "OnDelete" => {
            if let Some(r) = rolling {
                causes.push(invalid_value(
                    &format!("{at}.rollingUpdate"),
                    &shown_rolling(r),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            let Some(r) = rolling else { return };
            let at = format!("{at}.rollingUpdate");
            let partition = int(r, "partition");
            if partition < 0 {
                causes.push(number(&format!("{at}.partition"), partition, "must be greater than or equal to 0"));
            }
            if let Some(unavailable) = r.get("maxUnavailable").filter(|v| !v.is_null()) {
                let path = format!("{at}.maxUnavailable");
                int_or_percent(Some(unavailable), &path, causes);
                if amount(Some(unavailable)) == 0 {
                    causes.push(invalid_value(&path, &go_value(unavailable), "cannot be 0"));
                }
                at_most_all(Some(unavailable), &path, causes);
            }
        }
        _ => {
            let rolling = rolling.map_or_else(|| "null".to_string(), shown_rolling);
            let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("");
            let shown = format!(r#"{{"Type":{},"RollingUpdate":{rolling}}}"#, go_value(&Value::String(kind.into())));
            causes.push(invalid_value(at, &shown, "must be 'RollingUpdate' or 'OnDelete'"));
        }
    }
}

/// kube's StatefulSet update rule: only some of the spec's fields may change.
fn statefulset_update(spec: &Value, old_spec: &Value, causes: &mut Vec<Cause>) {
    const MUTABLE: [&str; 7] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    // Compared as kube compares them; an empty service name is none (Go always sends it).
    let rest = |s: &Value| -> Value {
        let mut m = s.as_object().cloned().unwrap_or_default();
        m.retain(|k, v| !(MUTABLE.contains(&k.as_str()) || k == "serviceName" && v == ""));
        Value::Object(m)
    };
    if !crate::semantic::equal(Some(&rest(spec)), Some(&rest(old_spec))) {
        causes.push(crate::pod_validation::forbidden(
            "spec".into(),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', \
             'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

/// kube's `ValidatePositiveIntOrPercent`: a count not below zero, or a percentage.
fn int_or_percent(v: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    match v {
        Some(Value::String(s)) if !is_percent(s) => causes.push(invalid(
            at.into(),
            s,
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', \
             regex used for validation is '[0-9]+%')",
        )),
        Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n < 0) => {
            causes.push(number(at, n.as_i64().unwrap_or(0), "must be greater than or equal to 0"))
        }
        _ => {}
    }
}

/// kube's `IsNotMoreThan100Percent`.
fn at_most_all(v: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    if let Some(Value::String(s)) = v
        && is_percent(s)
        && amount(v) > 100
    {
        causes.push(invalid(at.into(), s, "must not be greater than 100%"));
    }
}

fn is_percent(s: &str) -> bool {
    s.strip_suffix('%').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The number in a count or percentage, as kube reads it to compare with zero (0 when it is
/// neither).
fn amount(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.strip_suffix('%').unwrap_or(s).parse().unwrap_or(0),
        _ => 0,
    }
}

/// A selector as kube's field errors render it: Go's JSON of the `LabelSelector` struct (members
/// in its order, empty ones left out).
pub(crate) fn shown_selector(sel: Option<&Value>) -> String {
    let Some(sel) = crate::semantic::normalized(sel) else {
        return if sel.is_some_and(|s| !s.is_null()) { "{}".into() } else { "null".into() };
    };
    let mut parts = Vec::new();
    if let Some(labels) = sel.get("matchLabels") {
        parts.push(format!("\"matchLabels\":{}", go_value(labels)));
    }
    if let Some(Value::Array(expressions)) = sel.get("matchExpressions") {
        let shown: Vec<String> = expressions
            .iter()
            .map(|e| {
                let member = |k: &str| e.get(k).map(|v| format!("\"{k}\":{}", go_value(v)));
                let members: Vec<String> = ["key", "operator", "values"].iter().filter_map(|k| member(k)).collect();
                format!("{{{}}}", members.join(","))
            })
            .collect();
        parts.push(format!("\"matchExpressions\":[{}]", shown.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// Whether a selector selects everything (no labels and no expressions).
fn is_empty_selector(sel: &Value) -> bool {
    let normalized = crate::semantic::normalized(Some(sel));
    normalized.as_ref().is_none_or(|n| n.get("matchLabels").is_none() && n.get("matchExpressions").is_none())
}

fn nonnegative(spec: &Value, key: &str, causes: &mut Vec<Cause>) {
    nonnegative_at(spec, "spec", key, causes);
}

/// kube's `ValidateNonnegativeField` of the member `key` of `v`, at `at`.
pub(crate) fn nonnegative_at(v: &Value, at: &str, key: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n < 0) {
        causes.push(number(&format!("{at}.{key}"), n, "must be greater than or equal to 0"));
    }
}

fn number(at: &str, n: i64, detail: &str) -> Cause {
    crate::pod_validation::number(at.into(), n, detail)
}

/// An `Invalid value` cause whose value is already rendered; no detail leaves the value alone.
pub(crate) fn invalid_value(at: &str, shown: &str, detail: &str) -> Cause {
    let message =
        if detail.is_empty() { format!("Invalid value: {shown}") } else { format!("Invalid value: {shown}: {detail}") };
    Cause { reason: "FieldValueInvalid", message, field: at.into() }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::{Registry, ResourceInfo};

    fn info(plural: &str) -> ResourceInfo {
        Registry::with_defaults().lookup(plural).map(|i| (**i).clone()).unwrap()
    }

    /// A pod template as defaulting leaves it.
    fn template(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx",
            "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}})
    }

    fn judged(plural: &str, spec: Value, old: Option<Value>) -> Vec<String> {
        let info = info(plural);
        // Defaulted, as the server defaults what it is sent.
        let mut obj = json!({"metadata": {"name": "w", "namespace": "default"}, "spec": spec});
        crate::defaults::decode(&info, obj.as_object_mut().unwrap());
        let old = old.map(|spec| {
            let o = json!({"metadata": {"name": "w", "namespace": "default"}, "spec": spec});
            crate::object::build(&info, o.as_object().unwrap(), 5)
        });
        let causes = validate(&info, obj.as_object().unwrap(), old.as_ref()).unwrap();
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({"replicas": 1, "selector": selector, "template": template(labels), "minReadySeconds": 0,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600})
    }

    #[test]
    fn a_sound_deployment_passes() {
        let spec = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web", "tier": "front"}));
        assert_eq!(judged("deployments", spec, None), Vec::<String>::new());
    }

    #[test]
    fn deployments_are_judged_as_kube_judges_them() {
        let mut spec = deployment(Value::Null, json!({"app": "web"}));
        spec["replicas"] = json!(-1);
        spec["template"]["spec"]["restartPolicy"] = json!("Never");
        spec["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        spec["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "110%", "maxSurge": 0});
        spec["minReadySeconds"] = json!(700);
        assert_eq!(
            judged("deployments", spec, None),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"110%\": must not be greater than 100%",
                "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds",
            ]
        );
        let mut spec = deployment(json!({"matchLabels": {}}), json!({}));
        spec["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        assert_eq!(
            judged("deployments", spec, None),
            [
                "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
            ]
        );
        // A selector that cannot be read: its faults, and no judgement of the template.
        let mut spec = deployment(json!({"matchExpressions": [{"key": "app", "operator": "In"}]}), json!({}));
        spec["template"]["spec"]["containers"] = json!([]);
        spec["strategy"]["rollingUpdate"]["maxSurge"] = json!("5x");
        assert_eq!(
            judged("deployments", spec, None),
            [
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\"}]}: invalid label selector",
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"5x\": a valid percent string must be a numeric string \
                 followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            ]
        );
    }

    #[test]
    fn the_template_is_judged_in_its_place() {
        let mut spec = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}));
        spec["template"]["spec"]["containers"][0]["image"] = json!("");
        spec["revisionHistoryLimit"] = json!(-2);
        assert_eq!(
            judged("replicasets", spec.clone(), None),
            ["spec.template.spec.containers[0].image: Required value"]
        );
        assert_eq!(
            judged("deployments", spec, None),
            [
                "spec.template.spec.containers[0].image: Required value",
                "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
            ]
        );
        // A missing template is Go's empty one, defaulted.
        let spec = json!({"replicas": 1, "selector": {"matchLabels": {"app": "web"}}});
        assert_eq!(
            judged("replicasets", spec, None),
            [
                "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
                "spec.template.spec.containers: Required value",
            ]
        );
    }

    #[test]
    fn strategies_are_ones_kube_knows() {
        let mut canary = deployment(json!({"matchLabels": {"a": "b"}}), json!({"a": "b"}));
        canary["strategy"] = json!({"type": "Canary"});
        assert_eq!(
            judged("deployments", canary, None),
            [
                "spec.strategy: Unsupported value: {\"Type\":\"Canary\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""
            ]
        );
        let ds = json!({"selector": {"matchLabels": {"a": "b"}}, "template": template(json!({"a": "b"})),
            "updateStrategy": {"type": "Surge"}});
        assert_eq!(
            judged("daemonsets", ds, None),
            [
                "spec.updateStrategy: Unsupported value: {\"Type\":\"Surge\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""
            ]
        );
        let sts = |strategy: Value| {
            let mut spec = json!({"serviceName": "db", "selector": {"matchLabels": {"a": "b"}},
                "template": template(json!({"a": "b"})), "updateStrategy": strategy});
            // The controller names the pods and their subdomain itself: kube does not judge these.
            spec["template"]["spec"]["hostname"] = json!("db.0");
            spec["template"]["spec"]["subdomain"] = json!("Db");
            spec
        };
        assert_eq!(judged("statefulsets", sts(json!({"type": "RollingUpdate"})), None), Vec::<String>::new());
        assert_eq!(
            judged("statefulsets", sts(json!({"type": "OnDelete", "rollingUpdate": {"partition": 2}})), None),
            [
                "spec.updateStrategy.rollingUpdate: Invalid value: {\"Partition\":2,\"MaxUnavailable\":null}: only allowed for updateStrategy 'RollingUpdate'"
            ]
        );
        assert_eq!(
            judged(
                "statefulsets",
                sts(json!({"type": "RollingUpdate", "rollingUpdate": {"partition": -1, "maxUnavailable": "0%"}})),
                None
            ),
            [
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": cannot be 0",
            ]
        );
        assert_eq!(
            judged("statefulsets", sts(json!({"type": "Blue"})), None),
            [
                "spec.updateStrategy: Invalid value: {\"Type\":\"Blue\",\"RollingUpdate\":null}: must be 'RollingUpdate' or 'OnDelete'"
            ]
        );
    }

    #[test]
    fn daemonsets_and_replication_controllers_have_rules_of_their_own() {
        let spec = json!({"template": template(json!({"app": "agent"})), "updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}});
        assert_eq!(
            judged("daemonsets", spec, None),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`",
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
            ]
        );
        let spec = json!({"selector": {}, "template": template(json!({})), "updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "0%", "maxSurge": 0}}});
        assert_eq!(
            judged("daemonsets", spec, None),
            [
                "spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
            ]
        );
        let spec = json!({"replicas": 1, "selector": {"app": "db"}, "template": template(json!({"app": "web"}))});
        assert_eq!(
            judged("replicationcontrollers", spec, None),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
        assert_eq!(
            judged("replicationcontrollers", json!({"replicas": -1}), None),
            [
                "spec.selector: Required value",
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template: Required value",
            ]
        );
    }

    #[test]
    fn updates_keep_what_kube_keeps() {
        let old = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web", "v": "1"}));
        let mut new = old.clone();
        new["selector"] = json!({"matchLabels": {"app": "web", "v": "1"}, "matchExpressions": []});
        assert_eq!(
            judged("deployments", new, Some(old.clone())),
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"1\"}}: field is immutable"]
        );
        let mut same = old.clone();
        same["selector"]["matchExpressions"] = json!([]);
        assert_eq!(judged("deployments", same, Some(old)), Vec::<String>::new());

        let sts = json!({"replicas": 1, "serviceName": "db", "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "db"}}, "template": template(json!({"app": "db"}))});
        let mut scaled = sts.clone();
        scaled["replicas"] = json!(3);
        scaled["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_eq!(judged("statefulsets", scaled, Some(sts.clone())), Vec::<String>::new());
        let mut renamed = sts.clone();
        renamed["serviceName"] = json!("other");
        assert_eq!(
            judged("statefulsets", renamed, Some(sts)),
            ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
              'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
        );
    }

    #[test]
    fn updates_are_compared_as_kube_compares_them() {
        // Stored as the server stores it (empties left out); sent back as clients send it.
        let stored = json!({"replicas": 1, "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "template": template(json!({"app": "db", "tier": "x"})),
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}]});
        let mut sent = stored.clone();
        sent["serviceName"] = json!("");
        sent["selector"]["matchExpressions"][0]["values"] = json!([]);
        sent["volumeClaimTemplates"][0]["metadata"]["creationTimestamp"] = Value::Null;
        sent["volumeClaimTemplates"][0]["metadata"]["labels"] = json!({});
        sent["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = json!("1Gi");
        assert_eq!(judged("statefulsets", sent, Some(stored.clone())), Vec::<String>::new());
        let mut bigger = stored.clone();
        bigger["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert_eq!(
            judged("statefulsets", bigger, Some(stored)),
            ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
              'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
        );

        // A selector is shown as Go writes the struct: labels, then expressions.
        let old = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web", "tier": "x"}));
        let mut new = old.clone();
        new["selector"]["matchExpressions"] = json!([{"key": "tier", "operator": "In", "values": ["x"]}]);
        assert_eq!(
            judged("deployments", new, Some(old)),
            [
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"x\"]}]}: field is immutable"
            ]
        );
    }

    #[test]
    fn a_statefulsets_own_rules() {
        let mut sts = json!({"replicas": 1, "serviceName": "Bad_Name", "podManagementPolicy": "OrderedReady",
            "ordinals": {"start": -1}, "selector": {"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "a", "operator": "Is"}]},
            "template": template(json!({"app": "db"}))});
        sts["template"]["spec"]["restartPolicy"] = json!("Never");
        let label = crate::crd_validation::LABEL_MSG;
        assert_eq!(
            judged("statefulsets", sts.clone(), None),
            [
                "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0".to_string(),
                format!("spec.serviceName: Invalid value: \"Bad_Name\": {label}"),
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid selector operator".into(),
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"db\"},\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Is\"}]}".into(),
                // Judged whether or not the selector could be read.
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".into(),
            ]
        );
        // An update keeps a service name stored before it was judged.
        let mut stored = sts.clone();
        stored["ordinals"] = json!({"start": 0});
        stored["selector"] = json!({"matchLabels": {"app": "db"}});
        stored["template"]["spec"]["restartPolicy"] = json!("Always");
        let mut scaled = stored.clone();
        scaled["replicas"] = json!(2);
        assert_eq!(judged("statefulsets", scaled, Some(stored)), Vec::<String>::new());
    }
}
